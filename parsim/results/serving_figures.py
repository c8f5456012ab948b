"""LLM serving's figures that need the hardware: refusals and the request-level metrics.

``workloads.serving`` builds the program (prefill, one representative decode step, tensor-parallel
all-reduces) from the parameters alone; what depends on the device — whether it has the unit for
quantised weights, whether the KV cache fits and the largest batch that does, and the request's
time to first token, time per output token, end-to-end latency and tokens/s read from the
prediction's timeline — lives here, above the model, registered once for the definition's kind
(``hooks.register``) so that ``predict`` finds it without naming the workload. The phases are
found by their ops' ``phase`` field (``TraceEvent.op``), never by reading a label.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from parsim import stack
from parsim.base.errors import ParsimError
from parsim.base.units import gib
from parsim.hardware.specs import SystemSpec
from parsim.model import footprint
from parsim.results import hooks
from parsim.results.prediction import Prediction
from parsim.results.timeline import TraceEvent
from parsim.workloads.base import Workload
from parsim.workloads.llms import kv_cache_bytes, llm
from parsim.workloads.quantised import UNITS
from parsim.workloads.serving import LLM_SERVE, NAME, ServingMetrics, kv_type, memory_needs


def check_system(workload: Workload, system: SystemSpec) -> None:
    """Refuse quantised weights a device has no unit for, and a KV cache that does not fit."""
    params: dict[str, Any] = dict(workload.params)
    device = system.device
    weights = params["weights"]
    if weights in UNITS:
        unit, devices, family = UNITS[weights]
        where = device.id if device is not None else system.host.id
        if device is None or device.id not in devices:
            raise ParsimError(f"{NAME}: weights={weights} needs {unit}; {where} has none ({family})")
    if device is None:
        return
    memory = footprint.of_workload(workload, system)
    if not memory.fits:
        most = max_batch(workload, system)
        fits = f"; batch {most} fits" if most else "; not even the weights fit"
        per = f" per GPU over {system.gpus}" if system.gpus > 1 else ""
        cache, weights = gib(memory.needs.kv_cache_B), gib(memory.needs.weights_B)
        raise ParsimError(
            f"{NAME}: needs {cache} for the KV cache at batch {params['batch']} beside {weights} of "
            f"weights{per}, {device.id} has {gib(device.memory.capacity_B)}{fits} "
            f"(in all {gib(memory.need_B)}: {memory.summary()})"
        )


def max_batch(workload: Workload, system: SystemSpec) -> int:
    """The largest batch whose weights, KV cache and activations fit on each GPU (0: none).

    Cache and activations grow linearly with the batch, so the answer is one division.
    """
    if system.device is None:
        return 0
    params: dict[str, Any] = dict(workload.params)
    one = footprint.breakdown(memory_needs(llm(params["model"]), params, 1), system, True)
    weights = one.needs.weights_B
    return max(0, int((one.room_B - weights) // (one.needs.total_B - weights)))


def phase_ends(prediction: Prediction) -> dict[str, float]:
    """When each simulated phase's tokens reach the host: the end of the last interval of an op of
    that phase (its sampling, then the copy back, end it)."""
    return trace_phase_ends(prediction.trace)


def trace_phase_ends(trace: Iterable[TraceEvent]) -> dict[str, float]:
    """``phase_ends`` of a trace alone (a serving step priced without a whole prediction)."""
    ends: dict[str, float] = {}
    for event in trace:
        phase = getattr(event.op, "phase", "")
        if phase:
            ends[phase] = max(ends.get(phase, 0.0), event.end_s)
    return ends


class PhaseBound(NamedTuple):
    """What bounds one phase of a prediction: its processors' busy time, and the kind that dominates it."""

    phase: str
    busy_s: float
    kind: str
    """``compute`` or ``memory``: the leg most of the phase's kernel time is spent on."""
    share: float
    """That kind's share of the phase's busy time."""


def phase_bounds(prediction: Prediction) -> list[PhaseBound]:
    """Each phase's bound, in order of first appearance, from the processors' rows of the trace
    (their intervals are labelled by the leg that dominates them: ``TraceEvent.kind``).

    A prediction whose kernels fall into fewer than two phases gets none: its one bottleneck says it
    all. An LLM request's prefill (compute-bound) and decode step (memory-bound) are summed into
    one breakdown otherwise, where the longer prefill hides that the decode waits on memory.
    """
    busy: dict[str, dict[str, float]] = {}
    for event in prediction.trace:
        phase = getattr(event.op, "phase", "")
        if phase and event.resource.kind == "cores" and event.kind in ("compute", "memory"):
            kinds = busy.setdefault(phase, {"compute": 0.0, "memory": 0.0})
            kinds[event.kind] += event.end_s - event.start_s
    if len(busy) < 2:
        return []
    bounds = []
    for phase, kinds in busy.items():
        total = kinds["compute"] + kinds["memory"]
        kind = max(kinds, key=lambda k: kinds[k])
        bounds.append(PhaseBound(phase, total, kind, kinds[kind] / total if total else 0.0))
    return bounds


def serve_metrics(workload: Workload, system: SystemSpec, prediction: Prediction) -> ServingMetrics:
    """Time to first token, time per output token, end-to-end latency, tokens/s, KV cache, max batch.

    The decode total is ``output - 1`` times the simulated mean step: exact while the step time is
    affine in the step number (see the module docstring).
    """
    params: dict[str, Any] = dict(workload.params)
    batch, output = params["batch"], params["output"]
    ends = phase_ends(prediction)
    per_token = ends.get("decode", ends["prefill"]) - ends["prefill"]
    # the engine's offline runtime sets each generate() call up and syncs its first token back
    call_s = stack.framework(str(params.get("framework", "cuda-graph"))).call_s(
        system.host.framework_clock_Hz
    )
    first_token = ends["prefill"] + call_s
    e2e = first_token + (output - 1) * per_token
    config = llm(params["model"])
    return ServingMetrics(
        time_to_first_token_s=first_token,
        time_per_output_token_s=per_token,
        e2e_latency_s=e2e,
        tokens_per_s=batch * output / e2e,
        tokens_per_s_per_user=output / e2e,
        kv_cache_bytes=kv_cache_bytes(config, batch, params["prompt"] + output, kv_type(params)),
        max_batch=max_batch(workload, system),
    )


hooks.register(LLM_SERVE.kind, check=check_system, metrics=serve_metrics)
