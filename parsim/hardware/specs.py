"""Hardware specifications: small frozen records with SI units in every field name.

Think of a spec as the data sheet pinned above the simulator: a ``ProcessorSpec`` (a CPU socket
or a GPU) owns a ``MemorySpec`` (DRAM/HBM plus its cache levels); a ``LinkSpec`` is one PCIe or
NVLink connection; a ``SystemSpec`` wires a host, an optional accelerator and the link between
them. Specs never change after construction, so they can be shared, hashed and cached freely;
``attrs.evolve`` makes a modified copy. The memory records live in ``hardware.memory_spec``, the
link records in ``hardware.link_spec``; this module holds the processor and the system and
re-exports the others.

Every field is validated on construction and an invalid value raises ``ParsimError`` naming the
field, the bound and the value. Numbers are *effective* figures where the two differ (what a
STREAM-like benchmark or a bandwidth test measures); datasheet peaks are kept beside them in the
``peak_*`` fields for the roofline drawing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import attrs

from parsim.base.checks import (
    CLOCK,
    SECONDS,
    boolean,
    fraction,
    is_number,
    one_of,
    positive_int,
    preset_id,
    whole_within,
    within,
)
from parsim.base.dtypes import MATRIX_FORMATS
from parsim.base.errors import ParsimError, field_error
from parsim.hardware.link_spec import (
    LINK_FAMILIES,
    PACKET_SIZES_B,
    PEER_KINDS,
    LinkSpec,
    PageableCopy,
)
from parsim.hardware.memory_spec import BandwidthPoint, CacheLevel, MemorySpec
from parsim.hardware.network import NetworkSpec

__all__ = [  # the link and memory records live in their own modules; callers import them from here too
    "ACCELERATOR_KINDS",
    "GPU_PLATFORMS",
    "LINK_FAMILIES",
    "PACKET_SIZES_B",
    "PEER_KINDS",
    "PROCESSOR_KINDS",
    "BandwidthPoint",
    "CacheLevel",
    "LinkSpec",
    "MemorySpec",
    "PageableCopy",
    "ProcessorSpec",
    "SystemSpec",
]


GPU_PLATFORMS = ("cuda", "rocm")
"""The GPU software platforms a device's frameworks call: NVIDIA's CUDA libraries or AMD's ROCm."""
PROCESSOR_KINDS = ("cpu", "gpu", "tpu")
ACCELERATOR_KINDS = ("gpu", "tpu")
"""Processors that sit beside a host CPU and run its kernels."""
MIN_DTYPE_RATIO = 1e-4
"""The slowest a dtype's arithmetic may run against float32's. NumPy has no BLAS kernel for
float16: its matmul is a scalar loop converting each element, measured at 1/350 of one core's sgemm
on a 2-core Xeon and 1/1060 on CI's faster one, so the bound sits well below both."""


def _positive_rates(attribute: Any, pairs: tuple[tuple[str, float], ...]) -> None:
    for key, rate in pairs:
        if not is_number(rate) or not 1.0 <= rate <= 1e19:
            raise field_error(f"{attribute.name}.{key}", "in [1, 1e+19] /s", rate)


_link_id = preset_id("a link preset id such as pcie4-x16")


def _rate_table(instance: Any, attribute: Any, value: tuple[tuple[str, float], ...]) -> None:
    for dtype, _rate in value:
        if dtype not in MATRIX_FORMATS:
            raise field_error(f"{attribute.name}.{dtype}", f"one of {sorted(MATRIX_FORMATS)}", dtype)
    _positive_rates(attribute, value)


def _op_table(instance: Any, attribute: Any, value: tuple[tuple[str, float], ...]) -> None:
    _positive_rates(attribute, value)


def _loop_scales(instance: Any, attribute: Any, value: tuple[tuple[str, float], ...]) -> None:
    for loop, scale in value:
        if not is_number(scale) or not 0.01 <= scale <= 100.0:
            raise field_error(f"{attribute.name}.{loop}", "in [0.01, 100]", scale)


def _rate_items(
    value: Mapping[str, float] | Iterable[tuple[str, float]] | None,
) -> tuple[tuple[str, float], ...]:
    """Store a ``{dtype: rate}`` table as sorted pairs so the spec stays hashable."""
    return tuple(sorted(dict(value or {}).items()))


@attrs.frozen(cache_hash=True)
class ProcessorSpec:
    """A CPU socket or a GPU: cores with SIMD lanes, a clock, special units and memory.

    Attributes:
        id: preset id (``"h100-sxm"``) or a free name for a user file.
        name: human-readable model name.
        kind: ``"cpu"``, ``"gpu"`` or ``"tpu"`` (an accelerator whose matrix units are systolic
            arrays: ``cores`` are its TensorCores, the lanes its vector unit's).
        cores: CPU cores, GPU streaming multiprocessors (SMs), or a TPU's TensorCores.
        lanes_per_core: float32 SIMD lanes per core (AVX2 with two FMA ports: 16; an Ampere
            SM: 64 or 128 FP32 CUDA cores).
        clock_Hz: clock under load (all-core turbo / boost), what datasheet peaks are quoted at.
        sustained_clock_Hz: the clock a power-capped chip holds through long compute-bound work,
            where it is lower than ``clock_Hz`` (a 70 W T4); None when it holds ``clock_Hz``.
        vector_clock_Hz: the clock a CPU's vector units run at under an all-core vector load with
            turbo on, where a preset's ``clock_Hz`` is its base clock (the rate its host work was
            fitted at); it sets the vector FLOP rates only. None: ``clock_Hz``.
        fma: one fused multiply-add counts two FLOPs per lane per cycle.
        fp64_ratio: float64 vector rate relative to float32 (1/2 on V100, 1/32 on GTX 1080).
        fp16_ratio: float16/bfloat16 vector rate relative to float32 (2 on V100+, 1 on CPUs).
        matrix_flops_per_s: dense matrix-unit (tensor core, AMX) peak per dtype, whole chip;
            given as a ``{dtype: FLOP/s}`` mapping, stored as sorted pairs.
        matmul_efficiency: fraction of the peak a large GEMM reaches (cuBLAS, MKL/OpenBLAS).
        vector_matmul_efficiency: the same for a GEMM on the vector lanes (CUDA cores) of a chip
            whose matrix units reach a different share; None when ``matmul_efficiency`` holds
            for both (an Ada GeForce reaches ~60 % of its FP32 peak in SGEMM: half its FP32
            lanes share their issue slots with the integer work a GEMM also needs).
        stream_k: the platform library's matrix-unit GEMMs on this chip share the last wave's work
            among every SM (persistent kernels with a stream-K tile scheduler: cuBLAS on Hopper),
            so a product of 4.5 waves takes 4.5 waves' time, not 5 (no tail effect).
        fp8_block_scaling: Transformer Engine runs FP8 products with per-block scales on this chip
            (``fp8_recipe=blockwise``): compute capability 9.0 and later, Hopper through cuBLASLt's
            128-element scale modes (CUDA 12.9), Blackwell through its MXFP8 tensor cores
            (TransformerEngine v2.14 transformer_engine/pytorch/quantization.py
            ``check_fp8_block_scaling_support``; pull request #2157). Not Ada's FP8 tensor cores.
        special_per_core_per_cycle: transcendental results (exp, ...) per core per cycle.
        legacy_mma_share: the share of the matrix units' rate that kernels written with the previous
            generation's matrix instructions reach (on Hopper, warp-level ``mma.sync`` without its
            asynchronous warpgroup ``wgmma`` and TMA loads: FlashAttention 1 and 2); 1 where a
            generation has no such split.
        int_per_core_per_cycle: 32-bit integer results (add, multiply-add) per core per cycle: the
            rate of the index arithmetic a layout transpose issues (``Work.int_ops``); None where it
            is not modelled (the work then costs nothing beside the kernel's other legs).
        op_rates_per_core: measured items per second of one core for elementary operations run
            as single passes (``{"add": 6.5e9, "maximum": 2.2e9, "exp": 1.2e9, ...}``); where an
            op has a rate it replaces the FLOP/s model. Calibration fills it; presets leave it empty.
        dispatch_s: host-side cost to start one op (NumPy call ~1 us, CUDA launch ~5-25 us).
        framework_cycles_scale: cycles a deep-learning framework's per-operator host work (Python,
            PyTorch's dispatcher, Transformer Engine's module code: ``FrameworkSpec`` cycles) takes
            on this CPU over the x86 servers those cycles were fitted on (1): branchy interpreter
            code runs at a core's own instructions per cycle, not at its clock alone
            (``framework_clock_Hz``).
        parallel_dispatch_s: fork/join cost when a CPU op is spread over several cores (waking
            worker threads and waiting for them; a multithreaded BLAS call wakes and joins its
            own); measured by calibration, 0 in the presets.
        blas_thread_efficiency: share of one core's GEMM rate each core keeps when the BLAS splits
            one product over several cores (they share the last-level cache and the memory the
            packed panels stream from, and wait for the slowest at each panel); measured by
            calibration, 1 in the presets (their ``matmul_efficiency`` is the whole chip's).
        interpreted_element_s: interpreted Python cost per element and op (SISD demo; CPUs).
        interpreted_loop_scale: per pure-Python loop body (``relu``, ``reduce_sum``, ``matmul``...,
            named as ``Issue.python_loop``), its measured time over ``interpreted_element_s`` x
            the operations ``workloads.ops`` counts for it: the bytecodes of a branch on a random
            sign or of a generator per output cost this interpreter on this core more or less than
            the reference counts say. Calibration fills it; loops not listed keep 1.
        warp_size: lanes in lockstep (32 on NVIDIA GPUs, 1 on CPUs).
        tile_items: work items per tile (a GPU thread block; a CPU chunk).
        tiles_per_core: tiles resident on one core at once (GPU blocks per SM; 1 on CPUs).
        matmul_tile: largest output-tile edge one core holds in a GEMM (registers and shared
            memory); a GPU's library chooses among its tiles up to this edge, a CPU's BLAS uses
            this square tile.
        copy_engines: DMA copy engines in total (GPUs); with two or more, a host-to-device and a
            device-to-host copy run at once, with one they take turns.
        max_gpus: GPUs this CPU can host in one machine (PCIe lanes and slots; hosts only).
        memory: the processor's main memory and caches.
        default_link: id of the link preset this device usually sits on (GPUs).
        peer_link: id of the GPU-to-GPU link preset the board has (an SXM board's NVLink, an
            Instinct board's Infinity Fabric, a TPU's ICI), or None where peers talk over PCIe.
        platform: the GPU software platform whose libraries frameworks call on it: ``cuda``
            (cuBLAS, cuDNN, NCCL) or ``rocm`` (rocBLAS/hipBLASLt, MIOpen, RCCL); ignored on CPUs
            and TPUs.
        systolic_array: edge of the matrix units' systolic arrays (a TPU's MXU: 128, or 256 on
            v6e); None where the matrix units are not systolic arrays (tensor cores, AMX). A matrix
            product's reduction and output-column dimensions are padded up to this edge
            (``model.systolic``).
        matrix_units_per_core: systolic arrays (MXUs) per core; the matrix peak is shared by them.
        onchip_memory_B: software-managed on-chip memory of the whole chip (a TPU's VMEM and CMEM),
            recorded from the data sheet; 0 where none is documented. Not a cache level: XLA stages
            tiles through it, the model streams operands from HBM.
    """

    id: str
    name: str
    kind: Literal["cpu", "gpu", "tpu"] = attrs.field(validator=one_of(PROCESSOR_KINDS))
    cores: int = attrs.field(validator=whole_within(1, 10**6))
    lanes_per_core: int = attrs.field(validator=whole_within(1, 4096))
    clock_Hz: float = attrs.field(validator=CLOCK)
    memory: MemorySpec
    fma: bool = attrs.field(default=True, validator=boolean)
    fp64_ratio: float = attrs.field(default=0.5, validator=within(MIN_DTYPE_RATIO, 64.0))
    fp16_ratio: float = attrs.field(default=1.0, validator=within(MIN_DTYPE_RATIO, 64.0))
    matrix_flops_per_s: tuple[tuple[str, float], ...] = attrs.field(
        factory=tuple, converter=_rate_items, validator=_rate_table
    )
    matmul_efficiency: float = attrs.field(default=0.8, validator=fraction)
    special_per_core_per_cycle: float = attrs.field(default=1.0, validator=within(1e-3, 1e4))
    legacy_mma_share: float = attrs.field(default=1.0, validator=within(0.0, 1.0, low_open=True))
    int_per_core_per_cycle: float | None = attrs.field(
        default=None, validator=attrs.validators.optional(within(1e-3, 1e5))
    )
    op_rates_per_core: tuple[tuple[str, float], ...] = attrs.field(
        factory=tuple, converter=_rate_items, validator=_op_table
    )
    dispatch_s: float = attrs.field(default=1e-6, validator=SECONDS)
    framework_cycles_scale: float = attrs.field(default=1.0, validator=within(0.1, 100.0))
    parallel_dispatch_s: float = attrs.field(default=0.0, validator=SECONDS)
    interpreted_element_s: float = attrs.field(default=50e-9, validator=within(1e-12, 1e-3, "s"))
    interpreted_loop_scale: tuple[tuple[str, float], ...] = attrs.field(
        factory=tuple, converter=_rate_items, validator=_loop_scales
    )
    blas_thread_efficiency: float = attrs.field(default=1.0, validator=fraction)
    warp_size: int = attrs.field(default=1, validator=whole_within(1, 1024))
    tile_items: int = attrs.field(default=16384, validator=whole_within(1, 2**31))
    tiles_per_core: int = attrs.field(default=1, validator=whole_within(1, 1024))
    matmul_tile: int = attrs.field(default=128, validator=whole_within(1, 65536))
    copy_engines: int = attrs.field(default=1, validator=whole_within(1, 64))
    max_gpus: int = attrs.field(default=8, validator=whole_within(1, 1024))
    default_link: str | None = attrs.field(default=None, validator=attrs.validators.optional(_link_id))
    peer_link: str | None = attrs.field(default=None, validator=attrs.validators.optional(_link_id))
    sustained_clock_Hz: float | None = attrs.field(default=None, validator=attrs.validators.optional(CLOCK))
    vector_clock_Hz: float | None = attrs.field(default=None, validator=attrs.validators.optional(CLOCK))
    vector_matmul_efficiency: float | None = attrs.field(
        default=None, validator=attrs.validators.optional(fraction)
    )
    stream_k: bool = attrs.field(default=False, validator=boolean)
    fp8_block_scaling: bool = attrs.field(default=False, validator=boolean)
    platform: Literal["cuda", "rocm"] = attrs.field(default="cuda", validator=one_of(GPU_PLATFORMS))
    systolic_array: int | None = attrs.field(
        default=None, validator=attrs.validators.optional(whole_within(2, 4096))
    )
    matrix_units_per_core: int = attrs.field(default=1, validator=whole_within(1, 1024))
    onchip_memory_B: float = attrs.field(default=0.0, validator=within(0.0, 1e12, "B"))

    def __attrs_post_init__(self) -> None:
        if (self.kind == "tpu") != (self.systolic_array is not None):
            raise field_error("systolic_array", "given exactly when kind is tpu", self.systolic_array)

    @property
    def sustained_share(self) -> float:
        """The share of its datasheet rates a chip sustains through long compute (clock ratio)."""
        if self.sustained_clock_Hz is None:
            return 1.0
        return min(1.0, self.sustained_clock_Hz / self.clock_Hz)

    @property
    def framework_clock_Hz(self) -> float:
        """The clock a framework's host work runs at on this CPU as the x86 servers its cycles were
        fitted on would (``clock_Hz / framework_cycles_scale``)."""
        return self.clock_Hz / self.framework_cycles_scale

    @property
    def is_gpu(self) -> bool:
        return self.kind == "gpu"

    @property
    def core_unit(self) -> str:
        """What timelines call one core: ``SM`` on a CUDA GPU, ``CU`` on a ROCm one, ``TensorCore``
        on a TPU, else ``core``."""
        if self.kind == "gpu" and self.platform == "rocm":
            return "CU"
        return {"gpu": "SM", "tpu": "TensorCore"}.get(self.kind, "core")

    @property
    def is_accelerator(self) -> bool:
        """A device beside a host CPU (a GPU or a TPU): device memory, a host link, launches."""
        return self.kind in ACCELERATOR_KINDS

    def lane_flops_per_s(self, dtype: str = "float32") -> float:
        """Peak FLOP/s of one vector lane for ``dtype``: an FMA counts two FLOPs per cycle."""
        return (2.0 if self.fma else 1.0) * self.compute_clock_Hz * self.dtype_ratio(dtype)

    @property
    def compute_clock_Hz(self) -> float:
        """The clock the vector units compute at (``vector_clock_Hz``, else ``clock_Hz``)."""
        return self.clock_Hz if self.vector_clock_Hz is None else self.vector_clock_Hz

    def vector_flops_per_s(self, dtype: str = "float32") -> float:
        """Peak vector FLOP/s of the whole chip for ``dtype`` (no matrix units)."""
        return self.cores * self.lanes_per_core * self.lane_flops_per_s(dtype)

    def dtype_ratio(self, dtype: str) -> float:
        """Vector throughput of ``dtype`` relative to float32."""
        if dtype == "float64":
            return self.fp64_ratio
        if dtype in ("float16", "bfloat16"):
            return self.fp16_ratio
        return 1.0

    def peak_flops_per_s(self, dtype: str = "float32", matrix: bool = False) -> float:
        """Best peak for ``dtype``: the matrix units when allowed and present, else the vectors."""
        vector = self.vector_flops_per_s(dtype)
        rates = dict(self.matrix_flops_per_s)
        if matrix and dtype in rates:
            return max(vector, float(rates[dtype]))
        return vector


def _int_tuple(value: Any) -> tuple[int, ...]:
    """A torus shape as a tuple (a list from a file or a caller is accepted)."""
    return tuple(value)


@attrs.frozen(cache_hash=True)
class SystemSpec:
    """What a prediction runs on: a host CPU, optionally accelerators and their link.

    Attributes:
        host: the CPU that runs the program (and the ops when there is no device).
        device: the accelerator, or None for a CPU-only system.
        link: how host and device talk; required when a device is present.
        gpus: number of identical devices (data-parallel training).
        gpus_per_switch: devices sharing one PCIe switch uplink to the host.
        gpus_per_socket: devices on each CPU socket's root ports where they span sockets (0: one).
        cross_socket_Bps: peer-to-peer rate per direction between devices of different sockets
            (0: the peer link's own rate).
        staged_Bps: bidirectional GPU-to-GPU copy rate through host memory with peer access off
            (p2pBandwidthLatencyTest; 0: not measured).
        peer_link: the GPU-to-GPU link (NVLink) used by all-reduce; None means GPUs talk
            peer-to-peer over ``link``.
        nodes: identical machines of ``gpus`` GPUs each (a cluster); more than one needs a network.
        network: the NICs and switches between nodes (``hardware.network``).
        torus: the shape of the torus the ``peer_link`` joins every chip of every node into (a TPU
            slice: ``(4, 4, 4)``); empty where the nodes talk over the network.
    """

    host: ProcessorSpec
    device: ProcessorSpec | None = None
    link: LinkSpec | None = None
    gpus: int = attrs.field(default=1, validator=positive_int)
    gpus_per_switch: int = attrs.field(default=1, validator=positive_int)
    peer_link: LinkSpec | None = None
    gpus_per_socket: int = attrs.field(default=0, validator=whole_within(0, 1024))
    cross_socket_Bps: float = attrs.field(default=0.0, validator=within(0.0, 1e15, "B/s"))
    staged_Bps: float = attrs.field(default=0.0, validator=within(0.0, 1e15, "B/s"))
    nodes: int = attrs.field(default=1, validator=whole_within(1, 1_000_000))
    network: NetworkSpec | None = None
    torus: tuple[int, ...] = attrs.field(default=(), converter=_int_tuple)

    def __attrs_post_init__(self) -> None:
        if self.torus and math.prod(self.torus) != self.gpus * self.nodes:
            raise field_error("torus", f"a shape of {self.gpus * self.nodes} chips", self.torus)
        if self.nodes > 1 and (self.network is None or self.device is None):
            raise field_error("nodes", "1 unless the system has GPUs and a network (--cluster)", self.nodes)
        if self.host.kind != "cpu":
            raise field_error("host", "a CPU spec", self.host.id)
        if self.device is not None and self.link is None:
            raise field_error("link", "given when a device is present", None)
        if self.gpus > self.host.max_gpus:
            raise field_error(
                "gpus", f"<= {self.host.max_gpus} (the most {self.host.id} can host)", self.gpus
            )

    @property
    def total_gpus(self) -> int:
        """GPUs in all nodes together."""
        return self.gpus * self.nodes

    @property
    def gpu(self) -> ProcessorSpec:
        """The accelerator, for code that only runs on a system with one (copies, launches)."""
        if self.device is None:
            raise ParsimError(f"this system has no GPU, only the CPU {self.host.id}")
        return self.device

    @property
    def host_link(self) -> LinkSpec:
        """The host<->GPU link, for code that only runs on a system with a GPU."""
        if self.link is None:
            raise ParsimError(f"this system has no link, only the CPU {self.host.id}")
        return self.link

    @property
    def ring_link(self) -> LinkSpec:
        """The link all-reduce traffic takes: NVLink when present, else the host link."""
        return self.peer_link if self.peer_link is not None else self.host_link

    @property
    def compute(self) -> ProcessorSpec:
        """The processor that executes kernels: the device when present, else the host."""
        return self.device if self.device is not None else self.host
