"""One entry point: workload + system -> ``Prediction``, by the engine or the analytic model.

``predict("matmul", {"m": 4096, "n": 4096, "k": 4096}, device="h100-sxm")`` resolves the
hardware, validates the workload and the mode, checks that the data fits in memory, runs the
chosen method once for the latency and the timeline, and three back-to-back instances for the
sustained throughput (a pipelined GPU can start the next instance before the last finishes).
"""

from __future__ import annotations

import math
from functools import lru_cache

from parsim import analytic, timeline
from parsim.errors import ParsimError
from parsim.hardware import registry
from parsim.hardware.execution import check_mode
from parsim.hardware.specs import LinkSpec, ProcessorSpec, SystemSpec
from parsim.prediction import Prediction
from parsim.units import gib
from parsim.workloads.base import Workload
from parsim.workloads.registry import make_workload

METHODS = ("engine", "analytic")
OVERLAPS = ("roofline", "serial")
THROUGHPUT_REPEATS = 3


def predict(
    workload: str | Workload,
    params: dict | None = None,
    *,
    device: str | ProcessorSpec,
    host: str | ProcessorSpec | None = None,
    link: str | LinkSpec | None = None,
    mode: str | None = None,
    method: str = "engine",
    overlap: str = "roofline",
    gpus: int = 1,
) -> Prediction:
    """Predict latency, throughput and the reasons for ``workload`` on a system.

    Args:
        workload: a workload name (``"vector_add"``) or a built ``Workload``.
        params: workload parameters when ``workload`` is a name (``{"n": 1e8}``).
        device: processor that runs the kernels: preset id, TOML path or spec.
        host: host CPU for a GPU device (default ``xeon-e5-2630v3``).
        link: host<->device link for a GPU device (default: the GPU's usual link).
        mode: Flynn mode (``sisd``, ``simd``, ``mimd``, ``mimd+simd``, ``simt``); default per device.
        method: ``engine`` (SimPy discrete events) or ``analytic`` (closed forms).
        overlap: ``roofline`` (compute and memory overlap) or ``serial`` (they add up).
        gpus: number of GPUs.

    Returns:
        The ``Prediction``.

    Raises:
        ParsimError: unknown names, invalid parameters, a mode the device lacks, or data that
            does not fit in memory.
    """
    if method not in METHODS:
        raise ParsimError(f"'method' must be one of {', '.join(METHODS)}: {method!r}")
    if overlap not in OVERLAPS:
        raise ParsimError(f"'overlap' must be one of {', '.join(OVERLAPS)}: {overlap!r}")
    if isinstance(workload, str):
        workload = make_workload(workload, params)
    elif params:
        raise ParsimError("'params' only applies when the workload is given by name")
    system = registry.system(device, host, link, gpus)
    mode = check_mode(system.compute, mode)
    check_fits(workload, system)
    return _predict(workload, system, mode, method, overlap)


@lru_cache(maxsize=4096)
def _predict(workload: Workload, system: SystemSpec, mode: str, method: str, overlap: str) -> Prediction:
    if method == "engine":
        from parsim.engine import simulate  # the engine is the only place SimPy is loaded

        once = simulate(workload, system, mode, overlap)
        many = simulate(workload, system, mode, overlap, repeats=THROUGHPUT_REPEATS)
        events, notes = once.events, once.notes
    else:
        once = analytic.schedule(workload, system, mode, overlap)
        many = analytic.schedule(workload, system, mode, overlap, repeats=THROUGHPUT_REPEATS)
        events, notes = 0, ()
    latency = once.instance_ends_s[0]
    ends = many.instance_ends_s
    period = (ends[-1] - ends[0]) / (len(ends) - 1)
    parts = timeline.breakdown(list(once.trace), latency)
    return Prediction(
        workload=workload.name,
        params=dict(workload.params),
        device=system.compute.id,
        host=system.host.id,
        link=system.link.id if system.link is not None else None,
        mode=mode,
        method=method,
        latency_s=latency,
        throughput_per_s=1.0 / period if period > 0 else math.inf,
        flops=workload.flops,
        bytes=workload.bytes,
        transfer_bytes=workload.transfer_bytes,
        bottleneck=timeline.bottleneck(parts),
        breakdown=parts,
        utilization=timeline.utilization(list(once.trace), latency),
        trace=once.trace,
        events=events,
        notes=notes,
    )


def check_fits(workload: Workload, system: SystemSpec) -> None:
    """Refuse a workload whose data does not fit in the executing processor's memory."""
    if workload.needs_device and system.device is None:
        raise ParsimError(
            f"{workload.name} moves data over a link and needs a GPU device; "
            f"{system.host.id} is a CPU (try --device v100-pcie)"
        )
    spec = system.compute
    if workload.footprint_B > spec.memory.capacity_B:
        raise ParsimError(
            f"{workload.name} needs {gib(workload.footprint_B)}, {spec.id} has {gib(spec.memory.capacity_B)}"
        )
    if (
        system.device is not None
        and workload.transfers
        and workload.footprint_B > system.host.memory.capacity_B
    ):
        raise ParsimError(
            f"{workload.name} needs {gib(workload.footprint_B)} of host memory, "
            f"{system.host.id} has {gib(system.host.memory.capacity_B)}"
        )
