"""A kernel's time in closed form: compute, memory, their roofline, and the fork/join of a CPU op.

- compute = FLOPs / (cores x a core's FLOP rate) + transcendentals / (cores x the special rate)
  + integer instructions (a transpose's index arithmetic) / (cores x the integer rate);
  a measured per-item rate for the kernel's elementary operation replaces both; on an
  interpreted CPU core, items x Python operations per item x the interpreter's cost per element;
- memory = the level's latency + bytes at what the busy cores can draw (``memory.Level``), or
  longer where the kernel's threads keep too few bytes in flight (Little's law,
  ``memory.latency_bound_s``);
- the two legs make the time by the one roofline rule (``model.roofline``: the max, a GEMM
  library's smooth roofline, or for ``serial`` their sum);
- a CPU op spread over several cores pays the fork/join cost of waking and joining the worker
  threads; a GEMM too, when its output spans more than one tile: the BLAS wakes and joins its
  own threads (calibration measures the cost once, ``parallel_dispatch_s``; 0 in the presets).

The engine uses the same ``compute_s`` per tile, ``memory.Level`` per phase and roofline rule per
phase; it differs only in cutting the kernel into waves. Inputs may be numbers or NumPy arrays
(a vectorised sweep).
"""

from __future__ import annotations

import math
from typing import Any

from parsim.base.caching import cached
from parsim.hardware.specs import ProcessorSpec
from parsim.model.library import candidates
from parsim.model.numeric import Number, where
from parsim.model.rates import Execution, execution
from parsim.model.roofline import combine, leg
from parsim.stack import library_of
from parsim.workloads.base import Kernel
from parsim.workloads.conv import DIRECT_LOOP


def compute_s(
    ex: Execution,
    flops: Number,
    special: Number,
    items: Number,
    python_ops: Number,
    cores: Number,
    ints: Number = 0.0,
) -> Number:
    """Seconds ``cores`` busy cores need for this much work, shared evenly among them."""
    if ex.interpreted:
        return items * python_ops * ex.interpreted_element_s / cores
    if ex.core_op_rate:  # a measured rate for this elementary operation
        return items / (cores * ex.core_op_rate)
    seconds = flops / (cores * ex.core_flops_per_s) + special / (cores * ex.core_special_per_s)
    seconds = seconds + ints / (cores * ex.core_int_per_s)
    if ex.thread_share != 1.0:  # a product of more than one tile shares the cores' caches and memory
        seconds = seconds / where(items > ex.tile_items, ex.thread_share, 1.0)
    return seconds


def memory_s(
    spec: ProcessorSpec,
    ex: Execution,
    nbytes: Number,
    cold_bytes: Number,
    cores: Number,
    items: Number = 1,
    thread_loads_B: Number = 0.0,
    bandwidth_share: Number = 1.0,
    core_in_flight_B: Number = 0.0,
) -> Number:
    """The level's latency plus ``nbytes`` (``cold_bytes`` of them from main memory) at
    ``bandwidth_share`` of its bandwidth, or the time Little's law allows ``items`` elements of
    ``thread_loads_B`` per thread, or cores of ``core_in_flight_B`` each; 0 without bytes."""
    moved = spec.memory.latency_s + ex.memory.stream_s(
        spec,
        nbytes,
        cold_bytes / where(nbytes > 0, nbytes, 1),
        cores,
        items,
        thread_loads_B,
        bandwidth_share,
        core_in_flight_B,
    )
    return where(nbytes > 0, moved, 0.0)


def overlap_norm(spec: ProcessorSpec, kernel: Kernel) -> float:
    """The smooth-roofline norm of ``kernel`` as it runs: its library's for a matrix product (not a
    convolution lowered to one), else the max."""
    if (
        kernel.library.gemm_mn is None or kernel.library.conv is not None
    ):  # measured on cuBLAS products, not cuDNN's
        return math.inf
    norm = library_of(spec, kernel.library.cpu_library).gemm_overlap_norm
    return math.inf if norm is None else norm


def fork_join_s(spec: ProcessorSpec, ex: Execution, items: Number) -> Number:
    """Fork/join cost when a CPU op spreads over more than one core: 0 on GPUs and for one tile (a
    GEMM's tiles are its output's: a BLAS call threads alike)."""
    if spec.is_accelerator or ex.cores == 1:
        return 0.0
    return where(items > ex.tile_items, spec.parallel_dispatch_s, 0.0)


def kernel_time(
    spec: ProcessorSpec,
    ex: Execution,
    *,
    flops: Number,
    nbytes: Number,
    cold_bytes: Number,
    items: Number,
    special: Number,
    python_ops: Number,
    overlap: str = "roofline",
    norm: float = math.inf,
    thread_loads_B: Number = 0.0,
    bandwidth_share: Number = 1.0,
    core_in_flight_B: Number = 0.0,
    ints: Number = 0.0,
) -> tuple[Number, Number]:
    """Closed-form duration of a kernel (no tiles, no waves) and the leg that bounds it."""
    compute = compute_s(ex, flops, special, items, python_ops, ex.cores, ints)
    memory = memory_s(
        spec, ex, nbytes, cold_bytes, ex.cores, items, thread_loads_B, bandwidth_share, core_in_flight_B
    )
    total = combine(compute, memory, overlap, norm) + fork_join_s(spec, ex, items)
    return total, leg(compute, memory)


def kernel_time_s(
    kernel: Kernel, spec: ProcessorSpec, mode: str, overlap: str = "roofline"
) -> tuple[float, str]:
    """Roofline time of one kernel on ``spec`` in ``mode`` as the library runs it (its algorithm),
    and which leg (compute or memory) bounds it.

    Computed once per distinct cost (``shape``): the GPUs of a data-parallel step share it.
    """
    return _anonymous_kernel_time_s(shape(kernel), spec, mode, overlap)


@cached(maxsize=65536)
def _anonymous_kernel_time_s(
    kernel: Kernel, spec: ProcessorSpec, mode: str, overlap: str
) -> tuple[float, str]:
    return closed_form(choose(spec, mode, overlap, kernel)[1], spec, mode, overlap)


@cached(maxsize=65536)
def choose(spec: ProcessorSpec, mode: str, overlap: str, kernel: Kernel) -> tuple[str, Kernel]:
    """The fastest algorithm the library offers for ``kernel`` (an anonymous kernel shape), timed by
    the closed form below: ``(its name, the kernel as it then runs)``.

    A SISD convolution is one scalar loop over every output and every filter tap — the direct
    convolution, ``2 M N K`` FLOPs as the workload states them: no library runs it, so it is
    neither a GEMM nor Winograd (unless the user pinned an algorithm to loop over)."""
    conv = kernel.library.conv
    if mode == "sisd" and conv is not None and not conv.algorithm:
        return DIRECT_LOOP, kernel
    offered = candidates(spec, kernel)
    if len(offered) == 1:
        return offered[0]
    return min(offered, key=lambda item: closed_form_s(item[1], spec, mode, overlap))


def closed_form_s(kernel: Kernel, spec: ProcessorSpec, mode: str, overlap: str) -> float:
    """The closed-form seconds of ``kernel`` exactly as given (no algorithm choice)."""
    return closed_form(kernel, spec, mode, overlap)[0]


def closed_form(kernel: Kernel, spec: ProcessorSpec, mode: str, overlap: str) -> tuple[float, str]:
    """The roofline of ``kernel`` exactly as given, and its bounding leg."""
    seconds, bound = kernel_time(
        spec,
        execution(spec, mode, kernel),
        flops=kernel.work.flops,
        nbytes=kernel.bytes,
        cold_bytes=kernel.access.cold_bytes,
        items=kernel.work.work_items,
        special=kernel.work.special_ops,
        ints=kernel.work.int_ops,
        python_ops=kernel.issue.python_ops_per_item,
        overlap=overlap,
        norm=overlap_norm(spec, kernel),
        thread_loads_B=kernel.access.thread_loads_B,
        bandwidth_share=kernel.access.bandwidth_share,
        core_in_flight_B=kernel.access.core_in_flight_B,
    )
    return float(seconds), str(bound)


def shape(kernel: Kernel) -> Kernel:
    """The kernel's anonymous twin, one per distinct cost (every GPU of a data-parallel step and
    every repeated layer share it): the key of every timing cache below."""
    return _shape_of(kernel.cost_key())


@cached(maxsize=65536)
def _shape_of(cost_key: tuple[Any, ...]) -> Kernel:
    return Kernel.anonymous(cost_key)
