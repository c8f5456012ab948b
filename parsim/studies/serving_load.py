"""Serving under load as a study: one load's figures and timeline, and the capacity for an SLO.

``run_load(params, device)`` simulates one ``llm_load`` (``workloads.load``'s parameters, validated
here) and returns its typed record and its timeline (queue, batch and KV cache over time) — what
the app's serving view and the figures draw. ``capacity_search`` answers the operator's question:
the highest request rate whose P90 time to first token and P90 time per output token meet the
SLOs, per replica and in total, and, for a target rate, the fewest replicas (GPUs) that meet it.

The search walks the rate on a fixed stream shape (the same ``seed`` and ``requests`` at every
probe, so two probes differ only by the rate): it doubles (or halves) from a start until one probe
meets the SLOs and the next does not, then bisects the rate on a log scale until the two are
within ``RESOLUTION`` of each other, at most ``MAX_PROBES`` probes in all. Latency rises with the
rate (more queueing, bigger batches), so the rates that meet form an interval from zero and the
bisection's bracket holds its end. Every probe reuses one ``ModelSteps``: each step shape is
priced once, and the probes cost only their simulations.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from parsim.base.budget import CLI, Budget
from parsim.base.errors import ParsimError
from parsim.methods.serving import load
from parsim.methods.serving.metrics import LoadTimeline
from parsim.workloads.load import LLM_LOAD, LoadRecord
from parsim.workloads.registry import validate_params

MAX_PROBES = 16
"""Simulations one rate search runs, at most (doubling, then bisection)."""
RESOLUTION = 1.1
"""The search stops when the failing rate is within 10 % above the meeting one."""
START_RATE_PER_S = 1.0
MAX_REPLICA_CHECKS = 4
"""Replica counts a target-rate answer simulates beyond its first estimate, at most."""


def validated(params: dict[str, Any]) -> dict[str, Any]:
    """``llm_load`` parameters, validated (defaults filled, one-line errors)."""
    return validate_params(LLM_LOAD.name, params)


def run_load(
    params: dict[str, Any],
    device: Any,
    *,
    host: Any = None,
    link: Any = None,
    method: str = "engine",
    budget: Budget | None = CLI,
) -> tuple[LoadRecord, LoadTimeline]:
    """One simulated load of ``llm_load`` ``params`` on ``device``: its figures and its timeline.

    Raises:
        ParsimError: invalid parameters, requests above ``budget``, a bad trace, no room for a cache.
    """
    values = validated(params)
    done = load.run(values, device, host=host, link=link, method=method, budget=budget)
    return LoadRecord(**done.metrics.as_dict()), done.timeline


@attrs.frozen
class Probe:
    """One rate the search simulated, its figures, and whether they met the SLOs."""

    rate_per_s: float
    replicas: int
    record: LoadRecord
    meets: bool


@attrs.frozen
class Capacity:
    """What a capacity search found.

    Attributes:
        rate_per_s: the highest total rate that met the SLOs (on ``replicas`` replicas); 0 when
            not even the lowest probe met them.
        per_replica_per_s: the same per replica.
        failing_rate_per_s: the lowest rate probed that did not meet them (inf: none failed).
        replicas: the replicas the rate was searched on (``replicas=``).
        gpus_per_replica: tensor-parallel GPUs of one replica.
        probes: every simulation, in the order run (the curve the search walked).
        target_per_s: the target rate (``rate=``), or None.
        replicas_needed: the fewest replicas that met the SLOs at the target rate (None: no target,
            or none within the checks).
    """

    rate_per_s: float
    per_replica_per_s: float
    failing_rate_per_s: float
    replicas: int
    gpus_per_replica: int
    probes: tuple[Probe, ...]
    target_per_s: float | None = None
    replicas_needed: int | None = None

    @property
    def gpus_needed(self) -> int | None:
        """GPUs of the replicas the target needs."""
        return None if self.replicas_needed is None else self.replicas_needed * self.gpus_per_replica

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready figures: the answer, then every probe's rate, replicas, meets and metrics."""
        return {
            "rate_per_s": self.rate_per_s,
            "per_replica_per_s": self.per_replica_per_s,
            "failing_rate_per_s": None if math.isinf(self.failing_rate_per_s) else self.failing_rate_per_s,
            "replicas": self.replicas,
            "gpus_per_replica": self.gpus_per_replica,
            "target_per_s": self.target_per_s,
            "replicas_needed": self.replicas_needed,
            "gpus_needed": self.gpus_needed,
            "probes": [
                {
                    "rate_per_s": p.rate_per_s,
                    "replicas": p.replicas,
                    "meets": p.meets,
                    "metrics": p.record.as_dict(),
                }
                for p in self.probes
            ],
        }


def meets(record: LoadRecord, slo_ttft_s: float | None, slo_tpot_s: float | None) -> bool:
    """P90 TTFT and P90 TPOT within the SLOs given (no TPOT: every output was one token)."""
    if record.requests_completed == 0:
        return False
    if slo_ttft_s is not None and not record.ttft_p90_s <= slo_ttft_s:
        return False
    return slo_tpot_s is None or math.isnan(record.tpot_p90_s) or record.tpot_p90_s <= slo_tpot_s


def capacity_search(
    params: dict[str, Any],
    device: Any,
    *,
    target_per_s: float | None = None,
    host: Any = None,
    link: Any = None,
    method: str = "engine",
    budget: Budget | None = CLI,
    max_probes: int = MAX_PROBES,
) -> Capacity:
    """The highest rate meeting ``params``' SLOs (``slo_ttft``, ``slo_tpot``), and the replicas a
    target rate needs (see the module docstring). ``params`` are ``llm_load``'s but ``rate`` (the
    search sets it) and ``trace`` (it generates its own arrivals).

    Raises:
        ParsimError: no SLO, a trace, a bad target, or what ``run_load`` refuses.
    """
    if params.get("trace") is not None:
        raise ParsimError("capacity: 'trace' does not apply: the search generates its own arrivals")
    if "rate" in params:
        raise ParsimError("capacity: the search sets 'rate'; give a target rate as target_per_s (rate=)")
    if target_per_s is not None and not (isinstance(target_per_s, (int, float)) and 0 < target_per_s < 1e6):
        raise ParsimError(f"capacity: the target 'rate' must be > 0 and < 1e6 requests/s: {target_per_s!r}")
    values = validated(params)
    slo_ttft, slo_tpot = values.get("slo_ttft"), values.get("slo_tpot")
    if slo_ttft is None and slo_tpot is None:
        raise ParsimError("capacity: give an SLO, slo_ttft= and/or slo_tpot= (seconds, at P90)")
    steps = load.model_steps(values, device, host, link, method)
    probes: list[Probe] = []

    def probe(rate: float, replicas: int) -> bool:
        given = {**values, "rate": rate, "replicas": replicas}
        done = load.run(given, device, host=host, link=link, method=method, budget=budget, steps=steps)
        record = LoadRecord(**done.metrics.as_dict())
        ok = meets(record, slo_ttft, slo_tpot)
        probes.append(Probe(rate, replicas, record, ok))
        return ok

    replicas = int(values["replicas"])
    low, high = 0.0, math.inf
    rate = START_RATE_PER_S * replicas
    while len(probes) < max_probes and high / max(low, 1e-300) > RESOLUTION:
        if probe(rate, replicas):
            low = rate
        else:
            high = rate
        if math.isinf(high):
            rate = low * 2
        elif low == 0.0:
            rate = high / 2
            if rate < 1e-3:
                break  # not even a thousandth of a request per second meets the SLOs
        else:
            rate = math.sqrt(low * high)
    needed = None
    if target_per_s is not None and low > 0:
        needed = _replicas_for(float(target_per_s), low / replicas, probe)
    return Capacity(
        rate_per_s=low,
        per_replica_per_s=low / replicas,
        failing_rate_per_s=high,
        replicas=replicas,
        gpus_per_replica=int(values["gpus"]),
        probes=tuple(probes),
        target_per_s=target_per_s,
        replicas_needed=needed,
    )


def _replicas_for(target: float, per_replica: float, probe: Any) -> int | None:
    """The fewest replicas meeting the SLOs at ``target``: from target / per-replica capacity, up
    while the estimate fails, or one down while it meets (a router smooths the arrivals)."""
    count = max(1, math.ceil(target / per_replica - 1e-9))
    if probe(target, count):
        while count > 1 and probe(target, count - 1):
            count -= 1
        return count
    for more in range(count + 1, count + 1 + MAX_REPLICA_CHECKS):
        if probe(target, more):
            return more
    return None
