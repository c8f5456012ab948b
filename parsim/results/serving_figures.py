"""LLM serving's figures that need the hardware: refusals and the request-level metrics.

``workloads.serving`` builds the program (prefill, one representative decode step, tensor-parallel
all-reduces) from the parameters alone; what depends on the device — whether it has the unit for
quantised weights, whether the KV cache fits and the largest batch that does, and the request's
time to first token, time per output token, end-to-end latency and tokens/s read from the
prediction's timeline — lives here, above the model, and ``predict`` asks for it by workload name
(``SYSTEM_CHECKS``, ``METRICS``).
"""

from __future__ import annotations

from typing import Any

from parsim.base.errors import ParsimError
from parsim.base.units import gib
from parsim.hardware.specs import SystemSpec
from parsim.model import footprint
from parsim.results.prediction import Prediction
from parsim.workloads.base import Workload
from parsim.workloads.llms import LLMS, kv_cache_bytes
from parsim.workloads.serving import NAME, PHASES, UNITS, kv_type, memory_needs


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
    one = footprint.breakdown(memory_needs(LLMS[params["model"]], params, 1), system, True)
    weights = one.needs.weights_B
    return max(0, int((one.room_B - weights) // (one.needs.total_B - weights)))


def phase_ends(prediction: Prediction) -> dict[str, float]:
    """When each simulated phase's tokens reach the host (sampling, then the copy back)."""
    ends: dict[str, float] = {}
    for event in prediction.trace:
        for phase in PHASES:
            if event.label.startswith((f"sample tokens ({phase})", f"d2h tokens ({phase})")):
                ends[phase] = max(ends.get(phase, 0.0), event.end_s)
    return ends


def serve_metrics(workload: Workload, system: SystemSpec, prediction: Prediction) -> dict[str, Any]:
    """Time to first token, time per output token, end-to-end latency, tokens/s, KV cache, max batch.

    The decode total is ``output - 1`` times the simulated mean step: exact while the step time is
    affine in the step number (see the module docstring).
    """
    params: dict[str, Any] = dict(workload.params)
    batch, output = params["batch"], params["output"]
    ends = phase_ends(prediction)
    first_token = ends["prefill"]
    per_token = ends.get("decode", first_token) - first_token
    e2e = first_token + (output - 1) * per_token
    config = LLMS[params["model"]]
    return {
        "time_to_first_token_s": first_token,
        "time_per_output_token_s": per_token,
        "e2e_latency_s": e2e,
        "tokens_per_s": batch * output / e2e,
        "tokens_per_s_per_user": output / e2e,
        "kv_cache_bytes": kv_cache_bytes(config, batch, params["prompt"] + output, kv_type(params)),
        "max_batch": max_batch(workload, system),
    }


SYSTEM_CHECKS = {NAME: check_system}
"""Workload name -> ``(workload, system) -> None``, run by ``predict`` before the capacity check."""
METRICS = {NAME: serve_metrics}
"""Workload name -> ``(workload, system, prediction) -> dict`` added to ``Prediction.metrics``."""
