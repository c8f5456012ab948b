"""What a server under load is judged by: latency percentiles, throughput, occupancy, SLO goodput.

Per request: time to first token (TTFT: arrival to the first token out), time per output token
(TPOT: the rest of the request's time over its other tokens; requests of one output token have
none), end-to-end latency (arrival to the last token) and queueing delay (arrival to first
admission). Users feel the tail, so each comes as P50/P90/P99 (NumPy's linear interpolation).

The window is the busy period the simulation covers, from the first arrival to the last finish:
it starts and ends empty, so Little's law, L = lambda W, holds exactly on it — the time-average
number of requests in the system (``mean_in_system``, integrated from the arrivals and finishes)
equals the completion rate times the mean latency. The tests use it as an oracle of the
bookkeeping (no request lost, none counted twice, the window the same for both), as M/D/1's mean
wait rho D / (2 (1 - rho)) is one of the scheduler's queue.

With SLOs (``slo_ttft_s``, ``slo_tpot_s``), goodput counts the requests per second that met both
(DistServe's definition), and attainment the fraction that did.
"""

from __future__ import annotations

import attrs
import numpy as np

from parsim.methods.serving.simulate import SAMPLE_FIELDS, Outcome
from parsim.workloads.requests import Floats


@attrs.frozen
class LoadMetrics:
    """The figures of one simulated load (seconds ``_s``; counts of requests; rates per second)."""

    ttft_p50_s: float
    ttft_p90_s: float
    ttft_p99_s: float
    tpot_p50_s: float
    tpot_p90_s: float
    tpot_p99_s: float
    e2e_mean_s: float
    e2e_p50_s: float
    e2e_p90_s: float
    e2e_p99_s: float
    queue_mean_s: float
    queue_p99_s: float
    requests_arrived: int
    requests_completed: int
    requests_refused: int
    """Longer than a replica's whole KV cache: refused at arrival, never served."""
    requests_preempted: int
    """Requests preempted at least once (``preemptions`` counts every preemption)."""
    preemptions: int
    requests_per_s: float
    tokens_per_s: float
    """Output tokens per second."""
    mean_in_system: float
    """Time-average number of requests waiting or running."""
    batch_mean: float
    """Mean number of requests in an iteration (per step, over every replica's steps)."""
    kv_cache_peak_fraction: float
    duration_s: float
    goodput_requests_per_s: float | None = None
    slo_attainment: float | None = None
    kv_transfer_mean_s: float | None = None
    """Disaggregated serving: the mean seconds of a KV cache's copy, prefill to decode instance."""
    itl_p50_s: float | None = None
    itl_p99_s: float | None = None
    """Inter-token latency: percentiles of every gap between two streamed tokens of a request
    (vLLM's and SGLang's ITL), where TPOT averages each request's gaps first; None where the
    scheduler does not record them (static, disaggregated)."""

    def as_dict(self) -> dict[str, float | int | None]:
        """The figures by name (``Prediction.metrics``, JSON, sweeps)."""
        return attrs.asdict(self)


@attrs.frozen(eq=False)
class LoadTimeline:
    """Every replica's state over time, summed over replicas: requests waiting, requests running,
    and the fraction of all KV-cache blocks in use — a step function, each value holding until the
    next time."""

    time_s: Floats
    waiting: Floats
    running: Floats
    kv_fraction: Floats


def _percentiles(values: Floats) -> tuple[float, float, float]:
    if values.size == 0:
        return (float("nan"),) * 3
    p50, p90, p99 = np.percentile(values, (50, 90, 99))
    return float(p50), float(p90), float(p99)


def weighted_percentiles(gaps: Floats | None, qs: tuple[float, ...]) -> tuple[float | None, ...]:
    """Percentiles (0-100) of values given as (value, count) rows: the smallest value at or below
    which ``q`` % of the counts fall; None without rows, NaN with no counts."""
    if gaps is None:
        return (None,) * len(qs)
    if gaps.size == 0 or gaps[:, 1].sum() <= 0:
        return (float("nan"),) * len(qs)
    order = np.argsort(gaps[:, 0], kind="stable")
    values, cumulative = gaps[order, 0], np.cumsum(gaps[order, 1])
    total = cumulative[-1]
    return tuple(float(values[np.searchsorted(cumulative, q / 100 * total)]) for q in qs)


def in_system_area(arrival_s: Floats, finish_s: Floats) -> float:
    """The integral over time of the number of requests in the system (arrived, not finished)."""
    times = np.concatenate([arrival_s, finish_s])
    steps = np.concatenate([np.ones(arrival_s.size), -np.ones(finish_s.size)])
    order = np.argsort(times, kind="stable")
    times, count = times[order], np.cumsum(steps[order])
    return float(np.sum(count[:-1] * np.diff(times)))


def summarize(outcome: Outcome, transfer_s: Floats | None = None) -> LoadMetrics:
    """The ``LoadMetrics`` of a simulated ``Outcome`` (``transfer_s``: each request's KV copy, NaN
    where none was made, from a disaggregated server)."""
    stream, config = outcome.stream, outcome.config
    served = ~outcome.refused
    arrival = stream.arrival_s[served]
    first, finish = outcome.first_token_s[served], outcome.finish_s[served]
    output = stream.output_tokens[served]
    ttft, e2e = first - arrival, finish - arrival
    several = output > 1
    tpot = (finish[several] - first[several]) / (output[several] - 1)
    queue = outcome.admitted_s[served] - arrival
    completed = int(served.sum())
    start = float(stream.arrival_s[0]) if len(stream) else 0.0
    duration = (float(finish.max()) - start) if completed else 0.0
    rate = completed / duration if duration > 0 else 0.0
    samples = outcome.samples
    peak = float(_replica_peak(samples, config.instances) if samples.size else 0.0)
    goodput = attainment = None
    itl = weighted_percentiles(outcome.gaps, (50, 99))
    if config.slo_ttft_s is not None or config.slo_tpot_s is not None:
        met = np.ones(completed, dtype=bool)
        if config.slo_ttft_s is not None:
            met &= ttft <= config.slo_ttft_s
        if config.slo_tpot_s is not None:
            per_token = np.zeros(completed)
            per_token[several] = tpot
            met &= per_token <= config.slo_tpot_s
        goodput = int(met.sum()) / duration if duration > 0 else 0.0
        attainment = float(met.mean()) if completed else 0.0
    return LoadMetrics(
        *_percentiles(ttft),
        *_percentiles(tpot),
        float(e2e.mean()) if completed else float("nan"),
        *_percentiles(e2e),
        float(queue.mean()) if completed else float("nan"),
        _percentiles(queue)[2],
        requests_arrived=len(stream),
        requests_completed=completed,
        requests_refused=int(outcome.refused.sum()),
        requests_preempted=int((outcome.preemptions > 0).sum()),
        preemptions=int(outcome.preemptions.sum()),
        requests_per_s=rate,
        tokens_per_s=float(output.sum()) / duration if duration > 0 else 0.0,
        mean_in_system=in_system_area(arrival, finish) / duration if duration > 0 else 0.0,
        batch_mean=float(np.average(outcome.steps[:, 0], weights=outcome.steps[:, 2]))
        if outcome.steps.size
        else 0.0,
        kv_cache_peak_fraction=peak / config.kv_blocks,
        duration_s=duration,
        goodput_requests_per_s=goodput,
        slo_attainment=attainment,
        kv_transfer_mean_s=_mean_transfer(transfer_s),
        itl_p50_s=itl[0],
        itl_p99_s=itl[1],
    )


def _mean_transfer(transfer_s: Floats | None) -> float | None:
    if transfer_s is None:
        return None
    made = transfer_s[~np.isnan(transfer_s)]
    return float(made.mean()) if made.size else 0.0


def _replica_peak(samples: Floats, replicas: int) -> float:
    """The most KV blocks any one replica held at once."""
    column = samples[:, SAMPLE_FIELDS.index("kv_blocks")]
    owner = samples[:, SAMPLE_FIELDS.index("replica")].astype(np.int64)
    return max(float(column[owner == r].max(initial=0.0)) for r in range(replicas))


def timeline(outcome: Outcome) -> LoadTimeline:
    """The replicas' samples merged into one step function of the totals over time."""
    samples = outcome.samples
    replicas = outcome.config.instances
    if samples.size == 0:
        empty = np.zeros(0)
        return LoadTimeline(empty, empty, empty, empty)
    order = np.argsort(samples[:, 0], kind="stable")
    rows = samples[order]
    owner = rows[:, SAMPLE_FIELDS.index("replica")].astype(np.int64)
    # each replica's latest sample holds until its next: carry every replica's last value forward
    state = np.zeros((replicas, 3))
    totals = np.empty((len(rows), 3))
    for k, (row, r) in enumerate(zip(rows, owner, strict=True)):
        state[r] = row[1:4]
        totals[k] = state.sum(axis=0)
    return LoadTimeline(
        rows[:, 0].copy(),
        totals[:, 0],
        totals[:, 1],
        totals[:, 2] / (outcome.config.kv_blocks * replicas),
    )
