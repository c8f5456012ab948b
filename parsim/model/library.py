"""What the kernel library decides: the algorithm of a convolution and the tiling of a GEMM.

cuDNN times every algorithm a convolution shape allows and keeps the fastest (``cudnnFind``):

- **implicit GEMM**: the convolution as one matrix product, ``2 M N K`` FLOPs, on tensor cores
  where the format has them (called ``gemm`` for a 1x1 stride-1 layer, which is a plain GEMM);
- **Winograd** (3x3, stride 1): minimal filtering needs fewer multiplies (2.25x fewer for
  F(2x2, 3x3)); its transformed products run on the vector units, so it wins in float32 on
  CUDA cores and loses to tensor cores;
- **FFT** (filters of 5 or more at stride 1): products in the frequency domain, paid for with
  transforms and complex buffers moved through memory. Its arithmetic (radix-2 transforms and a
  batched complex product per frequency of matrices as small as batch x channels) runs at a share
  of the vector rate (``LibrarySpec.fft_efficiency``), not at a large GEMM's.

Every candidate is timed by the model's own closed form and the fastest is kept
(``model.kernel.choose``, above this module: the closed form needs the rates), so the choice
follows the device: the same float32 3x3 layer runs Winograd on a V100 and TF32 implicit
GEMM on an A100.

cuBLAS picks an output tile and a split of the reduction (split-K) so that small and skinny
products still fill the SMs: ``gemm_tiling`` tries each tile of the library and each split and
keeps the one with the least time, where a tile's time is its multiply-adds at the core's rate or
its operands streamed from the shared cache at the core's share, whichever is longer (small tiles
fill more SMs but move more bytes per FLOP). A smaller tile is taken only when it is clearly
(``CLEARLY_FASTER``) faster: larger tiles also reuse each operand more often from registers and
shared memory, which the closed form does not see, so the heuristic keeps them on near-ties.

[CL] MosaicML Composer, "Channels Last" method card (docs.mosaicml.com, after NVIDIA's diagram): "NVIDIA
GPUs natively perform convolution operations in NHWC format ... the NCHW tensor must be transposed to
NHWC before the convolution and transposed back to NCHW after". huggingface/pytorch-image-models
results/benchmark-infer-amp-{nchw,nhwc}-pt240-cu124-rtx4090.csv time the cost: VGG-16 at 472.9 ms
per 1,024 images in NCHW against 2 x 176.2 ms per 512 in NHWC.

[PT131958] pytorch/pytorch issue #131958 (PyTorch 2.4 CPU inference at batch 1, ``DNNL_VERBOSE``
log): around every convolution of an NCHW model, oneDNN ``reorder`` primitives re-lay the source
(``abcd`` -> ``aBcd8b``) and the weights (``abcd`` -> ``ABcd8b8a``) before the ``convolution``
primitive and the destination back (``aBcd8b`` -> ``abcd``) after it, each timed on its own.

[NSYS-NCHW] instanseg/instanseg pull request #144 (a PyTorch float16 autocast profile on an RTX 5090):
cuDNN prefers NHWC kernels, so around every convolution of an NCHW model it runs ``nchwToNhwc`` on
the feature map and ``nhwcToNchw`` on the result, kernels of their own (~12 % of the CUDA time,
beside ~27 % in the convolutions); channels-last tensors drop them.
"""

from __future__ import annotations

import math

import attrs

from parsim.base.caching import cached
from parsim.base.dtypes import QUANTISED_FORMATS, itemsize
from parsim.base.errors import ParsimError
from parsim.hardware.specs import ProcessorSpec, SystemSpec
from parsim.model import systolic
from parsim.model.fusion import fuse_epilogues
from parsim.model.rates import Execution, matrix_format
from parsim.stack import LibrarySpec, library_of
from parsim.workloads.base import HOST, Kernel, Op, Workload
from parsim.workloads.conv import FFT, GEMM, IMPLICIT_GEMM, WINOGRAD, ConvShape

__all__ = ["FFT", "GEMM", "IMPLICIT_GEMM", "WINOGRAD", "candidates", "gemm_tiling", "lower"]

GEMV_ROWS = 32
"""[CUTLASS] the smallest GEMM threadblock tile's rows: a tile of fewer rows is a matrix-vector
kernel, which the library runs only for a product of fewer rows than that."""

CLEARLY_FASTER = 0.05
"""A smaller GEMM tile must save this share of the time to be chosen over a larger one."""


def candidates(spec: ProcessorSpec, kernel: Kernel) -> list[tuple[str, Kernel]]:
    """The algorithms the library offers for ``kernel`` on ``spec``: ``(name, kernel as it runs)``."""
    kernel = systolic.padded(spec, kernel)  # a TPU's MXU pads the product to its edge
    shape = kernel.library.conv
    if shape is None:
        return [("", kernel)]
    library = library_of(spec, kernel.library.cpu_library)
    plain = shape.kernel == 1 and shape.stride == 1 and shape.pass_ != "wgrad"
    offered = [(GEMM if plain else IMPLICIT_GEMM, _on_tensor_cores(spec, kernel))]
    if shape.winograd_shape and library.winograd_reduction > 1:
        # the transformed products run on the vector units, with the compulsory traffic
        offered.append(
            (WINOGRAD, kernel.but(flops=kernel.work.flops / library.winograd_reduction, matrix=False))
        )
    if library.fft_min_filter and shape.stride == 1 and shape.kernel >= library.fft_min_filter:
        offered.append((FFT, _fft(kernel, shape)))
    if not shape.algorithm:
        return offered
    named = [(IMPLICIT_GEMM if name == GEMM else name, name, k) for name, k in offered]
    pinned = [(name, k) for asked, name, k in named if asked == shape.algorithm]
    if not pinned:
        names = ", ".join(asked for asked, _, _ in named)
        raise ParsimError(
            f"'algorithm' {shape.algorithm} is not offered by {library.name} for a {shape.kernel}x"
            f"{shape.kernel} filter at stride {shape.stride} on {spec.name}: choose auto or one of {names}"
        )
    return pinned


HALF_FORMATS = ("float16", "bfloat16")
"""The tensor-core formats whose NCHW convolutions run as transposes around an NHWC kernel ([CL])."""


def _nchw_on_tensor_cores(spec: ProcessorSpec, kernel: Kernel) -> bool:
    """Whether ``kernel`` is a convolution pass on NCHW activations (``LibraryHints.nchw_B``) in a
    format ``spec``'s tensor cores run (they compute in NHWC)."""
    return bool(
        kernel.library.nchw_B
        and spec.is_accelerator
        and kernel.work.matrix
        and matrix_format(kernel) in dict(spec.matrix_flops_per_s)
    )


def transposes_on_tensor_cores(spec: ProcessorSpec, kernel: Kernel) -> bool:
    """Whether cuDNN runs ``kernel``, a 16-bit convolution pass on NCHW activations, as a transpose of
    the source to NHWC, the NHWC kernel and a transpose of the destination back, each a kernel of its
    own ([CL]; [NSYS-NCHW]'s profile names them ``nchwToNhwcKernel`` and ``nhwcToNchwKernel``;
    ``lower`` makes them passes, not traffic under the convolution's compute). A 1x1
    convolution's forward pass at stride 1 is not transposed: on NCHW activations it is already one
    GEMM per image (the weights times the image's channels x pixels matrix, written as NCHW).
    [CL]'s timm tables: ResNet-50 inference in NCHW runs at 0.83-0.86 of NHWC (RTX 3090 and 4090,
    PyTorch 1.13-2.4), half the cost of transposing every convolution; VGG-16 (all 3x3) pays all of
    it. Training pays more (ResNet-50 0.68 on a 3090, PyTorch 1.12): its backward passes are
    transposed here, and what remains is not modelled."""
    shape = kernel.library.conv
    if shape is None or not _nchw_on_tensor_cores(spec, kernel) or matrix_format(kernel) not in HALF_FORMATS:
        return False
    return not (shape.kernel == 1 and shape.stride == 1 and shape.pass_ == "fwd")


def _on_tensor_cores(spec: ProcessorSpec, kernel: Kernel) -> Kernel:
    """The GEMM-based pass as it runs on NCHW activations in a tensor-core format other than 16-bit
    (TF32): the transposed bytes read and written once more inside the pass, the rule the TF32
    convolution share (``LibrarySpec.matrix_conv_efficiency``) was fitted with (no public NCHW
    against NHWC pair in TF32 to separate them); 16-bit passes get theirs in ``lower``."""
    if not _nchw_on_tensor_cores(spec, kernel) or matrix_format(kernel) in HALF_FORMATS:
        return kernel
    extra = kernel.library.nchw_B
    return kernel.but(
        bytes_read=kernel.work.bytes_read + extra,
        bytes_written=kernel.work.bytes_written + extra,
        cold_bytes=kernel.access.cold_bytes + 2 * extra,
    )


def _fft(kernel: Kernel, shape: ConvShape) -> Kernel:
    """The convolution in the frequency domain: transforms of every input, filter and output plane,
    complex products per frequency, and complex (twice as large) planes written and read back."""
    side = 2 ** math.ceil(math.log2(shape.height + shape.kernel - 1))
    plane = side * side
    planes = shape.batch * shape.channels + shape.filters * shape.channels + shape.batch * shape.filters
    transforms = 5.0 * planes * plane * math.log2(plane)  # radix-2 FFT: 5 n log2 n real FLOPs
    products = 8.0 * shape.batch * shape.filters * shape.channels * plane / 2  # complex MACs, real input
    complex_bytes = 2 * 2 * planes * plane / 2 * itemsize(kernel.work.dtype)  # written once, read once
    return kernel.but(
        flops=transforms + products,
        bytes_read=kernel.work.bytes_read + complex_bytes / 2,
        bytes_written=kernel.work.bytes_written + complex_bytes / 2,
        cold_bytes=min(kernel.access.cold_bytes + complex_bytes, kernel.bytes + complex_bytes),
        matrix=False,
        gemm_mn=None,
        work_items=max(1, shape.batch * shape.filters * plane),
        frequency_domain=True,  # at the library's fft_efficiency
    )


@cached(maxsize=256)
def stream_Bps_per_core(spec: ProcessorSpec) -> float | None:
    """What one core draws from the last shared cache (a GPU's L2) when every core streams GEMM
    operands; None without a shared cache (then operands are the kernel's compulsory traffic)."""
    shared = [cache for cache in spec.memory.caches if not cache.per_core]
    return shared[-1].bandwidth_Bps / spec.cores if shared else None


@attrs.frozen
class Tiling:
    """A GEMM cut into output tiles: ``rows x columns`` each, the reduction split ``split`` ways."""

    rows: int
    columns: int
    split: int
    outputs: int
    # what ``gemm_tiling`` computed for the chosen tile on its way, kept so the engine's
    # decomposition need not compute it again: ``tile_parts`` of the tile (the same expressions,
    # so the same seconds to the bit) and ``stream_k``; not part of the tiling's value (eq=False)
    padded_s: float = attrs.field(default=math.nan, eq=False, repr=False)
    operands_s: float = attrs.field(default=math.nan, eq=False, repr=False)
    shared_tail: bool = attrs.field(default=False, eq=False, repr=False)

    @property
    def tiles(self) -> int:
        return self.outputs * self.split


def tile_parts(
    kernel: Kernel, ex: Execution, rows: int, columns: int, split: int, spec: ProcessorSpec
) -> tuple[float, float]:
    """One core's seconds for one tile's padded multiply-adds, and for its operands from the shared
    cache (0 where a BLAS micro-kernel keeps them in L1)."""
    return _tile_parts(kernel, ex, rows, columns, split, _operand_rate(spec, kernel))


def _operand_rate(spec: ProcessorSpec, kernel: Kernel) -> tuple[float, int] | None:
    """What one core draws from the shared cache, and an operand element's bytes; None where a
    tile's operands cost nothing (a CPU, or no shared cache)."""
    share = stream_Bps_per_core(spec) if spec.is_accelerator else None
    if share is None:
        return None
    element = (
        1 if kernel.library.math in QUANTISED_FORMATS else itemsize(kernel.work.dtype)
    )  # int8/FP8: a byte
    return share, element


def _tile_parts(
    kernel: Kernel, ex: Execution, rows: int, columns: int, split: int, rate: tuple[float, int] | None
) -> tuple[float, float]:
    assert kernel.library.gemm_mn is not None  # only GEMM-shaped kernels are tiled
    m, n = kernel.library.gemm_mn
    depth = kernel.work.flops / (2.0 * m * n) / split  # the reduction each tile does
    compute = 2.0 * rows * columns * depth / ex.core_flops_per_s
    if rate is None:
        return compute, 0.0
    share, element = rate
    return compute, (rows + columns) * depth * element / share


def tile_seconds(
    kernel: Kernel, ex: Execution, rows: int, columns: int, split: int, spec: ProcessorSpec
) -> float:
    """One core's time for one tile: its padded multiply-adds, or its operands from the shared cache."""
    return max(tile_parts(kernel, ex, rows, columns, split, spec))


def stream_k(spec: ProcessorSpec, ex: Execution, kernel: Kernel) -> bool:
    """Whether ``kernel`` runs as a stream-K product, its last wave's work shared by every SM
    (``ProcessorSpec.stream_k``): a library matrix product (not a convolution) on the matrix units."""
    return (
        spec.stream_k
        and kernel.library.gemm_mn is not None
        and kernel.library.conv is None
        and kernel.work.matrix
        and ex.lanes == spec.lanes_per_core
        and matrix_format(kernel) in dict(spec.matrix_flops_per_s)
    )


@cached(maxsize=65536)
def gemm_tiling(spec: ProcessorSpec, ex: Execution, kernel: Kernel) -> Tiling:
    """The tile and split-K the library chooses for ``kernel`` (see the module docstring)."""
    assert kernel.library.gemm_mn is not None  # only GEMM-shaped kernels are tiled
    m, n = kernel.library.gemm_mn
    k = kernel.work.flops / (2.0 * m * n)
    slots = ex.cores * ex.tiles_per_core
    shapes = _tile_shapes(spec, kernel.library.cpu_library, m < GEMV_ROWS) or [
        (min(spec.matmul_tile, m), min(spec.matmul_tile, n))
    ]
    if spec.systolic_array is not None:  # XLA splits the (already padded) rows among the TensorCores
        shapes = [(min(m, systolic.round_up(m / spec.cores, systolic.ROWS)), n)]
    best_s, best, parts = math.inf, (0, 0, 0, 0), (0.0, 0.0)
    rate = _operand_rate(spec, kernel)  # the same for every tile shape
    shared_tail = stream_k(spec, ex, kernel)
    core_flops = ex.core_flops_per_s
    ceil = math.ceil
    # ``_tile_parts`` inlined (a training step tiles ~70 shapes of ~9 tiles): the same expressions
    # in the same order, so the same seconds to the bit; ``depth`` is ``k / split``, the very
    # expression ``_tile_parts`` evaluates, and ``max`` is spelt as a comparison (its first
    # argument where they tie, as ``max`` returns)
    for rows, columns in shapes:  # largest first
        outputs = ceil(m / rows) * ceil(n / columns)
        if outputs < slots:
            edge = columns if columns < rows else rows  # ``min``
            split = max(1, min(slots // outputs, int(k // edge)))
        else:
            split = 1
        waves = outputs * split / slots if shared_tail else ceil(outputs * split / slots)
        depth = k / split  # the reduction each tile does
        compute = 2.0 * rows * columns * depth / core_flops
        operands = 0.0 if rate is None else (rows + columns) * depth * rate[1] / rate[0]
        seconds = waves * (operands if operands > compute else compute)  # tile_seconds
        if best_s is math.inf or seconds < best_s * (1 - CLEARLY_FASTER):
            best_s, best, parts = seconds, (rows, columns, split, outputs), (compute, operands)
    assert best_s is not math.inf
    return Tiling(*best, *parts, shared_tail)


@cached(maxsize=256)
def _tile_shapes(spec: ProcessorSpec, cpu_library: str, gemv: bool) -> tuple[tuple[int, int], ...]:
    """The library's GEMM tiles that fit ``spec``, largest first: a CPU BLAS blocks to the matrix's
    edge (none); a skinny tile (fewer rows than the smallest GEMM tile's 32: cuBLAS's matrix-vector
    kernels) serves only a product thinner than a GEMM tile (``gemv``); one of 32 rows or more runs
    the GEMM tiles, padded to their edge, as a DeepBench 35-row product shows (sgemm at ~0.4 of peak
    on a V100)."""
    if not spec.is_accelerator:
        return ()
    library = library_of(spec, cpu_library)
    return tuple(
        (rows, columns)
        for rows, columns in library.gemm_tiles
        if max(rows, columns) <= spec.matmul_tile and (rows >= GEMV_ROWS or gemv)
    )


def lower(workload: Workload, system: SystemSpec) -> Workload:
    """The program as the library runs it on ``system``'s kernel processor.

    A library that folds drops the foldable ops of a compiled inference graph (a batch norm into
    the convolution before it, a ReLU as its post-op). One that computes on blocked layouts
    (oneDNN) and is handed plain tensors by an eager framework re-lays them out on every call: a
    convolution runs as its own reorder primitives around the convolution primitive, one after
    the other ([PT131958]: ``reorder`` of the source and the weights, ``convolution``, ``reorder``
    of the destination back to NCHW), so the re-layouts are passes of their own (``reorder_passes``),
    not traffic hidden under the convolution's compute. A 16-bit convolution on a GPU's tensor cores
    with NCHW activations runs likewise between two transposes ([CL], ``transposes_on_tensor_cores``).
    Any other op's plain weights (``LibraryHints.reorder_B``) are read and written once more inside
    the op. Host-side kernels are left alone.

    Raises:
        ParsimError: ops would be folded out of a program whose ops wait on each other.
    """
    workload = fuse_epilogues(workload, system)  # XLA: element-wise consumers inside the product
    if not any(k.library.foldable or k.library.reorder_B or k.library.nchw_B for k in workload.kernels):
        return workload
    ops: list[Op] = []
    deps: list[tuple[int, ...]] = []
    moved: dict[int, int] = {}  # an op's index -> the index of the last op it became
    waits = workload.deps or tuple(() for _ in workload.ops)
    changed = False  # an op folded or run as passes: else the program is the one given
    # what the library does with a kernel depends on its work and hints alone: asked once per pair
    # of records (shared by the kernels of a step: alive here, so their ids name them)
    decided: dict[tuple[int, int], tuple[LibrarySpec, bool]] = {}
    for index, op in enumerate(workload.ops):
        after = tuple(moved[wait] for wait in waits[index] if wait in moved) if waits[index] else ()
        if isinstance(op, Kernel) and op.device != HOST:
            records = (id(op.work), id(op.library))
            decision = decided.get(records)
            if decision is None:
                decision = decided[records] = (
                    library_of(system.compute, op.library.cpu_library),
                    transposes_on_tensor_cores(system.compute, op),
                )
            library, transposed = decision
            if library.folds and op.library.foldable:
                if any(workload.deps):
                    raise ParsimError(
                        f"{workload.name}: folding ops out of a program with dependencies is not modelled"
                    )
                changed = True
                continue
            if transposed or (library.blocked_weights and op.library.reorder_B):
                inside = op.library.conv is None
                ints = library.transpose_int_ops if transposed else 0.0
                passes = (_reorder_inside(op),) if inside else reorder_passes(op, not transposed, ints)
                for step, part in enumerate(passes):  # in order, on the op's stream
                    ops.append(part)
                    deps.append(after if step == 0 else ())  # one stream runs them in order
                moved[index] = len(ops) - 1
                changed = True
                continue
        ops.append(op)
        deps.append(after)
        moved[index] = len(ops) - 1
    if not changed:  # NCHW float32 on tensor cores, say: the same ops and waits (no copy to check)
        return workload
    return attrs.evolve(workload, ops=tuple(ops), deps=tuple(deps) if workload.deps else ())


def _reorder_inside(op: Kernel) -> Kernel:
    """An op whose plain weights are re-laid out inside it: read and written once more."""
    extra = op.library.reorder_B
    return op.but(
        bytes_read=op.work.bytes_read + extra,
        bytes_written=op.work.bytes_written + extra,
        cold_bytes=op.access.cold_bytes + 2 * extra,
        reorder_B=0.0,
    )


def reorder_passes(op: Kernel, weights: bool = True, int_ops_per_element: float = 0.0) -> tuple[Kernel, ...]:
    """An eager convolution on a blocked-layout library as it runs ([PT131958]): a reorder of the
    plain weights (read from memory, written blocked), a reorder of the NCHW source activations
    (``LibraryHints.nchw_B``, split by the pass's input and output sizes), the convolution itself,
    then a reorder of the destination back to NCHW: each a pass of its own, one after the other.
    Without ``weights`` (a GPU's tensor cores on NCHW activations, [CL]) only the activations are
    transposed: cuDNN's ``nchwToNhwc`` before the pass and ``nhwcToNchw`` after it, each issuing
    ``int_ops_per_element`` integer instructions per element for its index arithmetic
    (``LibrarySpec.transpose_int_ops``)."""
    shape = op.library.conv
    assert shape is not None
    reordered, activations = (op.library.reorder_B if weights else 0.0), op.library.nchw_B
    size = itemsize(op.work.dtype)
    inputs = shape.batch * shape.channels * shape.height * shape.width
    outputs = shape.batch * shape.filters * shape.out_height * shape.out_width
    source = activations * inputs / (inputs + outputs)

    def reorder(name: str, nbytes: float, cold: float) -> Kernel:
        return Kernel.of(
            f"{op.name} {name}",
            0.0,
            nbytes,
            nbytes,
            max(1, round(nbytes / size)),
            in_library_call=not weights,  # cuDNN launches its transposes inside the convolution's call
            stream=op.stream,
            device=op.device,
            layer=op.layer,
            phase=op.phase,
            part=op.part,
            dtype=op.work.dtype,
            cold_bytes=cold,
            int_ops=int_ops_per_element * nbytes / size,
        )

    to, back = ("reorder source", "reorder back") if weights else ("transpose to NHWC", "transpose back")
    passes = [reorder("reorder weights", reordered, 2 * reordered)] if reordered > 0 else []
    if source > 0:
        passes.append(reorder(to, source, 0.0))
    passes.append(op.but(reorder_B=0.0, nchw_B=0.0))
    if activations - source > 0:
        passes.append(reorder(back, activations - source, 0.0))
    return tuple(passes)
