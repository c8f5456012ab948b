"""What one kernel gets from a processor in one Flynn mode: busy cores, lanes and rates.

The rate of one busy core is its lanes x 2 (FMA) x clock x the dtype's ratio to float32, or the
matrix units' share of the chip for a matrix product in a dtype they support (only when the mode
uses all lanes: tensor cores and AMX are fed by the vector units). GEMM-shaped kernels reach the
library's measured ``matmul_efficiency`` of that. Transcendentals (``exp``) go through the
special-function rate. A processor calibrated with a measured rate for an elementary operation
(``add``, ``maximum``...) uses it instead of its FLOP/s. A CPU in ``sisd`` runs the interpreter
loop: ``interpreted_element_s`` per element and Python operation, scaled for the loop body where
calibration measured it (``interpreted_loop_scale``). A GEMM one BLAS call spreads over several CPU
cores keeps ``blas_thread_efficiency`` of each core's rate. A library whose ReLU is a serial scalar
loop branching on each sign (``LibrarySpec.serial_sign_test_cycles``) runs it on one core, one lane.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple

from parsim.base.caching import cached
from parsim.base.dtypes import QUANTISED_FORMATS
from parsim.hardware.specs import ProcessorSpec
from parsim.model.memory import Level, level
from parsim.model.modes import busy_cores, lanes
from parsim.model.numeric import Number
from parsim.stack import library_of
from parsim.workloads.base import Kernel


def matrix_format(kernel: Kernel) -> str:
    """The format the matrix units are rated for: ``tf32`` for a float32 TF32 kernel, the quantised
    format of a quantised product, else its dtype."""
    if kernel.library.math in QUANTISED_FORMATS:
        return kernel.library.math
    return "tf32" if kernel.library.math == "tf32" and kernel.work.dtype == "float32" else kernel.work.dtype


class Execution(NamedTuple):
    """What one kernel gets from a processor in one mode.

    Attributes:
        cores: cores (SMs) the mode keeps busy.
        lanes: lanes used on each core.
        core_flops_per_s: FLOP rate of one busy core for this kernel (matrix units and GEMM
            efficiency included).
        core_special_per_s: transcendental results per second of one busy core.
        core_int_per_s: 32-bit integer results per second of one busy core (inf: not modelled).
        core_op_rate: measured items per second of one busy core for the kernel's ``op``, or None.
        interpreted_element_s: interpreter cost per element and Python operation (CPU sisd
            only; 0 when the code is compiled).
        tile_items: work items per tile.
        tiles_per_core: tiles resident on one core at once.
        memory: the memory level serving the kernel's working set.
        thread_share: the share of its rate each core keeps while several cores run one product
            together (a CPU BLAS's ``blas_thread_efficiency``; 1 elsewhere). A product of one
            tile runs on one core and keeps all of it.
    """

    cores: int
    lanes: int
    core_flops_per_s: float
    core_special_per_s: float
    core_op_rate: float | None
    interpreted_element_s: float
    tile_items: int
    tiles_per_core: int
    memory: Level
    thread_share: float = 1.0
    core_int_per_s: float = math.inf

    @property
    def interpreted(self) -> bool:
        return self.interpreted_element_s > 0

    @property
    def flops_per_s(self) -> float:
        return self.cores * self.core_flops_per_s


def execution(
    spec: ProcessorSpec, mode: str, kernel: Kernel, working_set_B: Number | None = None
) -> Execution:
    """Resolve the rates ``kernel`` sees on ``spec`` in ``mode`` (a mode already checked).

    ``working_set_B`` defaults to the kernel's own; a vectorised sweep passes an array of them.
    """
    if working_set_B is None:  # one kernel's rates: asked by its algorithm choice, its plan and notes
        return _execution_of(spec, mode, kernel)
    return _execution(spec, mode, kernel, working_set_B)


@cached(maxsize=65536)
def _execution_of(spec: ProcessorSpec, mode: str, kernel: Kernel) -> Execution:
    if _serial_sign_test_rate(spec, kernel):  # one core, one lane: the general path
        return _execution(spec, mode, kernel, None)
    return _fast_execution(spec, mode, kernel)


class _ModeRates(NamedTuple):
    """What ``_execution`` reads of a processor in one mode, whatever the kernel: looked up once per
    spec and mode, not once per kernel (a training step resolves the rates of ~140 kernels)."""

    cores: int
    used: int
    full_lanes: bool  # ``used == spec.lanes_per_core``: the matrix units are fed
    matrix_rates: Mapping[str, float]  # ``dict(spec.matrix_flops_per_s)``, read-only
    op_rates: Mapping[str, float]  # ``dict(spec.op_rates_per_core)``, read-only
    core_special_per_s: float
    core_int_per_s: float
    interpreted_element_s: float  # before the loop's scale; 0 when compiled
    blas_share: float  # ``thread_share`` of a GEMM on these cores


@cached(maxsize=256)
def _mode_rates(spec: ProcessorSpec, mode: str) -> _ModeRates:
    cores, used = busy_cores(spec, mode), lanes(spec, mode)
    # ``_execution``'s expressions, in its order, so the same rates to the bit
    cycles_per_s = spec.compute_clock_Hz * spec.sustained_share * (used / spec.lanes_per_core)
    ints = spec.int_per_core_per_cycle
    return _ModeRates(
        cores=cores,
        used=used,
        full_lanes=used == spec.lanes_per_core,
        matrix_rates=MappingProxyType(dict(spec.matrix_flops_per_s)),
        op_rates=MappingProxyType(dict(spec.op_rates_per_core)),
        core_special_per_s=spec.special_per_core_per_cycle * cycles_per_s,
        core_int_per_s=math.inf if ints is None else ints * cycles_per_s,
        interpreted_element_s=(
            spec.interpreted_element_s if mode == "sisd" and not spec.is_accelerator else 0.0
        ),
        blas_share=spec.blas_thread_efficiency if cores > 1 and not spec.is_accelerator else 1.0,
    )


def _fast_execution(spec: ProcessorSpec, mode: str, kernel: Kernel) -> Execution:
    """``_execution`` of one kernel's own working set on cores that are not the serial loop's, its
    per-mode reads taken from ``_mode_rates``: the same operations in the same order, so the same
    rates (``tests/test_speed_caches.py`` compares the two on a grid)."""
    known = _mode_rates(spec, mode)
    work, hints = kernel.work, kernel.library
    used = known.used
    core_flops = used * spec.lane_flops_per_s(work.dtype)
    matrix_rates = known.matrix_rates
    rated = matrix_format(kernel)
    if rated in QUANTISED_FORMATS and rated not in matrix_rates:
        rated = work.dtype
    on_matrix_units = work.matrix and known.full_lanes and rated in matrix_rates
    if on_matrix_units:
        core_flops = max(core_flops, matrix_rates[rated] / spec.cores)
    gemm = hints.gemm_mn is not None
    if gemm:
        vector = spec.vector_matmul_efficiency
        core_flops *= spec.matmul_efficiency if on_matrix_units or vector is None else vector
    if hints.conv is not None:
        conv = hints.conv
        core_flops *= library_of(spec, hints.cpu_library).conv_share(
            rated if on_matrix_units else None, conv.out_height * conv.out_width, conv.batch, conv.pass_
        )
    if hints.frequency_domain:
        core_flops *= library_of(spec, hints.cpu_library).fft_efficiency
    attention = hints.fused_attention
    if attention:
        library = library_of(spec, hints.cpu_library)
        core_flops *= library.attention_share(attention)
        if attention in library.legacy_attention:
            core_flops *= spec.legacy_mma_share
    core_flops *= spec.sustained_share
    interpreted = known.interpreted_element_s
    return Execution(
        known.cores,
        used,
        core_flops,
        known.core_special_per_s,
        known.op_rates.get(work.op) if work.op and used > 1 else None,
        interpreted * _loop_scale(spec, kernel) if interpreted else 0.0,
        spec.matmul_tile**2 if gemm else spec.tile_items,
        1 if gemm or used == 1 else spec.tiles_per_core,
        level(spec, known.cores, kernel.working_set_B),
        known.blas_share if gemm else 1.0,
        known.core_int_per_s,
    )


def _execution(spec: ProcessorSpec, mode: str, kernel: Kernel, working_set_B: Number | None) -> Execution:
    cores, used = busy_cores(spec, mode), lanes(spec, mode)
    serial_rate = _serial_sign_test_rate(spec, kernel)
    if serial_rate:  # the library's scalar loop on one thread
        cores, used = 1, 1
    core_flops = used * spec.lane_flops_per_s(kernel.work.dtype)
    matrix_rates = dict(spec.matrix_flops_per_s)
    rated = matrix_format(kernel)
    if rated in QUANTISED_FORMATS and rated not in matrix_rates:
        rated = kernel.work.dtype  # no quantised rate listed for this device: the dtype's tensor rate
    on_matrix_units = kernel.work.matrix and used == spec.lanes_per_core and rated in matrix_rates
    if on_matrix_units:
        core_flops = max(core_flops, matrix_rates[rated] / spec.cores)
    gemm = kernel.library.gemm_mn is not None
    if gemm:
        vector = spec.vector_matmul_efficiency
        core_flops *= spec.matmul_efficiency if on_matrix_units or vector is None else vector
    if kernel.library.conv is not None:  # a framework convolution, through the device's kernel library
        conv = kernel.library.conv
        core_flops *= library_of(spec, kernel.library.cpu_library).conv_share(
            rated if on_matrix_units else None, conv.out_height * conv.out_width, conv.batch, conv.pass_
        )
    if kernel.library.frequency_domain:  # an FFT convolution: transforms and small complex products
        core_flops *= library_of(spec, kernel.library.cpu_library).fft_efficiency
    attention = kernel.library.fused_attention
    if attention:  # FlashAttention runs its products below cuBLAS's rate
        library = library_of(spec, kernel.library.cpu_library)
        core_flops *= library.attention_share(attention)
        if attention in library.legacy_attention:  # written for an older generation's instructions
            core_flops *= spec.legacy_mma_share
    core_flops *= spec.sustained_share  # a power-capped chip runs below its boost clock
    # a special-function or integer pipe's results per core per cycle, at the clock held, on the
    # share of the core's lanes the mode uses
    cycles_per_s = spec.compute_clock_Hz * spec.sustained_share * (used / spec.lanes_per_core)
    ints = spec.int_per_core_per_cycle
    return Execution(
        cores=cores,
        lanes=used,
        core_flops_per_s=core_flops,
        core_special_per_s=spec.special_per_core_per_cycle * cycles_per_s,
        core_op_rate=serial_rate
        or (dict(spec.op_rates_per_core).get(kernel.work.op) if kernel.work.op and used > 1 else None),
        interpreted_element_s=(
            spec.interpreted_element_s * _loop_scale(spec, kernel)
            if mode == "sisd" and not spec.is_accelerator
            else 0.0
        ),
        tile_items=spec.matmul_tile**2 if gemm else spec.tile_items,
        # A GEMM tile fills an SM's registers and shared memory: one per core at a time.
        tiles_per_core=1 if gemm or used == 1 else spec.tiles_per_core,
        memory=level(spec, cores, kernel.working_set_B if working_set_B is None else working_set_B),
        thread_share=spec.blas_thread_efficiency if gemm and cores > 1 and not spec.is_accelerator else 1.0,
        core_int_per_s=math.inf if ints is None else ints * cycles_per_s,
    )


def _loop_scale(spec: ProcessorSpec, kernel: Kernel) -> float:
    """This CPU's measured cost of ``kernel``'s pure-Python loop body over the counted one (1 when
    calibration did not measure that loop)."""
    loop = kernel.issue.python_loop
    return dict(spec.interpreted_loop_scale).get(loop, 1.0) if loop else 1.0


def _serial_sign_test_rate(spec: ProcessorSpec, kernel: Kernel) -> float | None:
    """Elements per second of a sign test (a ReLU) run as its CPU library's serial scalar loop, or
    None where the library vectorises and threads it (or on an accelerator)."""
    if not kernel.library.sign_test or spec.is_accelerator:
        return None
    cycles = library_of(spec, kernel.library.cpu_library).serial_sign_test_cycles
    return spec.clock_Hz / cycles if cycles else None
