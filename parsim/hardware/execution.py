"""How a Flynn mode uses a processor: active cores, lanes, FLOP rates and memory ceilings.

The same chip can be driven in very different ways, and Flynn's taxonomy names them:

- ``sisd``: one core, one lane. On a CPU this is the one-element-at-a-time interpreter loop
  of the classroom demo, so each element pays ``interpreted_element_s`` per Python operation.
- ``simd``: one core, all of its vector lanes (NumPy on one thread).
- ``mimd``: every core, one lane each (scalar threads).
- ``mimd+simd``: every core with all its lanes (a real multicore CPU; the CPU default).
- ``simt``: a GPU's SMs running warps of 32 lanes in lockstep (the GPU default).

Both the SimPy engine and the analytic oracle ask this module for rates, so they differ only
in how they compose time (events, sharing, waves), never in what a core can do.
"""

from __future__ import annotations

import math

import attrs

from parsim.errors import ParsimError
from parsim.hardware.specs import ProcessorSpec
from parsim.workloads.base import Kernel

MODES = ("sisd", "simd", "mimd", "mimd+simd", "simt")


def default_mode(spec: ProcessorSpec) -> str:
    """``simt`` on a GPU, ``mimd+simd`` on a CPU."""
    return "simt" if spec.is_gpu else "mimd+simd"


def check_mode(spec: ProcessorSpec, mode: str | None) -> str:
    """Return the mode to use on ``spec``; ``None`` picks the default."""
    if mode is None:
        return default_mode(spec)
    if mode not in MODES:
        raise ParsimError(f"'mode' must be one of {', '.join(MODES)}: {mode!r}")
    if mode == "simt" and not spec.is_gpu:
        raise ParsimError(f"'mode' simt needs a GPU; {spec.id} is a CPU (use sisd, simd, mimd or mimd+simd)")
    return mode


@attrs.frozen
class Execution:
    """What one kernel gets from a processor in one mode.

    Attributes:
        cores: cores (SMs) the mode keeps busy.
        lanes: lanes used on each core.
        core_flops_per_s: FLOP rate of one busy core for this kernel (matrix units and GEMM
            efficiency included).
        core_special_per_s: transcendental results per second of one busy core.
        core_op_rate: measured items per second of one busy core for the kernel's ``op``, or None.
        interpreted_element_s: interpreter cost per element and Python operation (CPU sisd
            only; 0 when the code is compiled).
        level: the memory level serving the kernel (``"DRAM"``, ``"device memory"`` or a cache name).
        level_bandwidth_Bps: bandwidth of that level with every core busy.
        core_bandwidth_Bps: what one busy core can pull from that level.
        main_bandwidth_Bps: main-memory bandwidth (for the kernel's cold bytes).
        main_core_bandwidth_Bps: what one busy core can pull from main memory.
        tile_items: work items per tile.
        tiles_per_core: tiles resident on one core at once.
    """

    cores: int
    lanes: int
    core_flops_per_s: float
    core_special_per_s: float
    core_op_rate: float | None
    interpreted_element_s: float
    level: str
    level_bandwidth_Bps: float
    core_bandwidth_Bps: float
    main_bandwidth_Bps: float
    main_core_bandwidth_Bps: float
    tile_items: int
    tiles_per_core: int

    def bandwidth_Bps(self, active_cores: int) -> float:
        """Memory bandwidth reachable with ``active_cores`` busy (per-core ceiling included)."""
        return min(self.level_bandwidth_Bps, active_cores * self.core_bandwidth_Bps)

    def memory_s(self, nbytes: float, cold_fraction: float, active_cores: int) -> float:
        """Time to move ``nbytes``: the warm part from the kernel's level, the cold part from DRAM."""
        cold = nbytes * cold_fraction
        main = min(self.main_bandwidth_Bps, active_cores * self.main_core_bandwidth_Bps)
        return (nbytes - cold) / self.bandwidth_Bps(active_cores) + cold / main

    @property
    def interpreted(self) -> bool:
        return self.interpreted_element_s > 0

    @property
    def flops_per_s(self) -> float:
        return self.cores * self.core_flops_per_s


def execution(spec: ProcessorSpec, mode: str, kernel: Kernel) -> Execution:
    """Resolve the rates ``kernel`` sees on ``spec`` in ``mode`` (already checked)."""
    cores = 1 if mode in ("sisd", "simd") else spec.cores
    lanes = 1 if mode in ("sisd", "mimd") else spec.lanes_per_core
    per_lane = 2.0 if spec.fma else 1.0
    core_flops = lanes * per_lane * spec.clock_Hz * spec.dtype_ratio(kernel.dtype)
    matrix_rates = dict(spec.matrix_flops_per_s)
    if kernel.matrix and lanes == spec.lanes_per_core and kernel.dtype in matrix_rates:
        core_flops = max(core_flops, matrix_rates[kernel.dtype] / spec.cores)
    if kernel.gemm_mn is not None:
        core_flops *= spec.matmul_efficiency
    special = spec.special_per_core_per_cycle * spec.clock_Hz * (lanes / spec.lanes_per_core)
    level, level_bw, core_bw = _memory_level(spec, cores, kernel.working_set_B)
    gemm = kernel.gemm_mn is not None
    return Execution(
        cores=cores,
        lanes=lanes,
        core_flops_per_s=core_flops,
        core_special_per_s=special,
        core_op_rate=dict(spec.op_rates_per_core).get(kernel.op) if kernel.op and lanes > 1 else None,
        interpreted_element_s=spec.interpreted_element_s if mode == "sisd" and not spec.is_gpu else 0.0,
        level=level,
        level_bandwidth_Bps=level_bw,
        core_bandwidth_Bps=core_bw,
        main_bandwidth_Bps=spec.memory.bandwidth_Bps,
        main_core_bandwidth_Bps=spec.memory.per_core_bandwidth_Bps,
        tile_items=spec.matmul_tile**2 if gemm else spec.tile_items,
        # A GEMM tile fills an SM's registers and shared memory: one per core at a time.
        tiles_per_core=1 if gemm or lanes == 1 else spec.tiles_per_core,
    )


def _memory_level(spec: ProcessorSpec, cores: int, working_set_B: float) -> tuple[str, float, float]:
    """The smallest level holding the working set: (name, bandwidth with all cores, per core).

    Cache bandwidth grows with the cores using it (each core brings its own L1/L2 ports and
    L3 slice): a mode with fewer cores gets what that many cores draw (the level's measured
    per-core figure, or an equal share). Main memory is a socket-wide ceiling, and one core is
    limited by its own bytes in flight. Data is assumed warm, as in a repeated measurement; a
    GPU's per-SM L1 never counts, because it is invalidated at every kernel launch. A
    calibrated machine carries a measured bandwidth curve instead, interpolated at the working set.
    """
    memory = spec.memory
    name = "device memory" if spec.is_gpu else "DRAM"
    level = None
    for cache in memory.caches:
        if spec.is_gpu and cache.per_core:
            continue  # a GPU's L1 is invalidated at every kernel launch: no reuse between kernels
        if working_set_B <= cache.size_B * (cores if cache.per_core else 1):
            level = cache
            name = cache.name
            break
    if memory.curve:
        return name, *_interpolate(memory.curve, working_set_B)
    if level is not None:
        return name, level.bandwidth_Bps, level.per_core_bandwidth_Bps or level.bandwidth_Bps / spec.cores
    return name, memory.bandwidth_Bps, memory.per_core_bandwidth_Bps


def _log_blend(a: float, b: float, t: float) -> float:
    return math.exp(math.log(a) + t * (math.log(b) - math.log(a)))


def _interpolate(curve, working_set_B: float) -> tuple[float, float]:
    """(all cores, one core) bandwidth at ``working_set_B``, log-log between measured points."""
    if working_set_B <= curve[0].working_set_B:
        return curve[0].all_cores_Bps, curve[0].one_core_Bps
    if working_set_B >= curve[-1].working_set_B:
        return curve[-1].all_cores_Bps, curve[-1].one_core_Bps
    for low, high in zip(curve, curve[1:], strict=False):
        if working_set_B <= high.working_set_B:
            t = math.log(working_set_B / low.working_set_B) / math.log(high.working_set_B / low.working_set_B)
            return (
                _log_blend(low.all_cores_Bps, high.all_cores_Bps, t),
                _log_blend(low.one_core_Bps, high.one_core_Bps, t),
            )
    return curve[-1].all_cores_Bps, curve[-1].one_core_Bps
