"""Megatron-LM's features in the 3D-parallel step: what published Megatron, NeMo and Megatron-Bridge
configurations turn on, each a rule applied to one stage's kernels, collectives or schedule.

Think of the step as a relay team: tensor parallelism splits each runner's load, the pipeline
hands batons down the line, data parallelism runs whole teams side by side. These features change
how the load is split and how batons move, never what a token costs:

- **sequence parallelism** (Korthikanti et al. 2022, section 4.2.2): outside the tensor-parallel
  regions (the norms, the dropouts, the residual adds) each of the ``tp`` GPUs keeps 1/tp of the
  tokens, so those elementwise kernels and their saved activations shrink by ``tp``; each
  all-reduce becomes a reduce-scatter into the split region and an all-gather out of it (the same
  bytes on a ring; the paper's Table 4 measures the pair slightly slower than one all-reduce).
- **the distributed optimizer** (Megatron-LM ``--use-distributed-optimizer``, ZeRO-1 style): the
  float32 master weights and Adam's moments are sharded over the data-parallel group; the gradient
  all-reduce becomes a reduce-scatter of the float32 gradients, each GPU updates its 1/dp shard,
  and an all-gather of the 16-bit weights brings the replicas back in step. Its precision-aware
  variant (``optimizer_moments=bfloat16``: ``--use-precision-aware-optimizer`` with bf16
  ``--exp-avg-dtype`` and ``--exp-avg-sq-dtype``, Megatron-Core's ``OptimizerConfig`` asserting the
  distributed optimizer) keeps the two moments in 16 bits: a third less optimizer state, and an
  update that reads and writes 2 bytes of each moment instead of 4.
- **context parallelism** (Megatron-Core ``--context-parallel-size``, ring attention): each of the
  ``cp`` GPUs of a group holds 1/cp of every sequence's tokens; every kernel sees seq/cp tokens,
  except attention, whose queries still meet every earlier key: with Megatron's load-balanced
  chunking each rank does 1/cp of the causal square, cp times the square of its own chunk. The
  keys and values travel around the ring (cp - 1 steps forward, and their gradients back),
  overlapped with the attention kernels on a stream of their own. The gradients are reduced over
  ``dp x cp`` GPUs.
- **the interleaved 1F1B schedule** (Narayanan et al. 2021, section 2.2.2, ``virtual_stages``):
  each GPU holds ``v`` chunks of layers (chunk c of stage s is virtual stage ``c p + s``), so a
  micro-batch visits every GPU v times; the bubble shrinks to ``(p - 1) / (v m)`` of the ideal
  step and the pipeline sends v times as many activations.
- **FP8 training** (Transformer Engine on Hopper and later): the transformer blocks' linear
  layers multiply at the FP8 tensor-core rate; their inputs and incoming gradients are cast to FP8
  (read 16-bit, write a byte), how depends on the scaling recipe (``fp8_recipe``, Megatron-LM's
  ``--fp8-recipe``; ``RECIPES``): under delayed scaling the cast takes its scale from the amax
  history and records the amax as it goes, fused into the layer norm and the activation for three
  of the four forward inputs, a pass of its own for the attention output, for every gradient and
  for each expert GEMM's input (per expert, inside the grouped GEMM's call); current (tensorwise)
  scaling needs the tensor's amax before it can cast, so a cast of its own is an amax pass, a scale
  kernel and the cast, and the norm and the activation write 16 bits (with their amax) for a scale
  kernel and a cast after them; block scaling (``blockwise``) and MXFP8 write two copies (row-
  and column-wise blocks of 128 and of 32, for the forward and the weight gradient) with their
  scales, after a 16-bit norm (and, for blockwise, a 16-bit activation). Block-scaled products
  run at the FP8 tensor-core rate like the others, an estimate: on Hopper the scales are applied
  as the partial sums are promoted every 128 of k, and published kernels reach from ~0.75
  (pytorch/FBGEMM pull request #2546, H100: 828-870 against 1,083-1,141 TFLOP/s row-wise) to about
  the same rate (deepseek-ai/DeepGEMM pull request #73, H800: 1,031-1,470 TFLOP/s). The weights are
  cast once a step after the optimizer's update. Attention, norms, the embedding and the LM head
  stay in 16 bits, as Transformer Engine leaves them.
- **per-layer CUDA graphs** (``cuda_graphs``, Megatron-Core's ``--cuda-graph-scope``): the captured
  parts of each layer replay from a graph, one call for the host instead of one per operator
  (``cuda_graphs``).
- **gradient accumulation** is ``microbatches``: the micro-batches of a step run before the
  data-parallel reduction, which happens once per step.
"""

from __future__ import annotations

import attrs

from parsim.base.dtypes import itemsize
from parsim.base.errors import ParsimError
from parsim.workloads import cuda_graphs
from parsim.workloads.base import SYNC_STREAM, AllReduce, Kernel, Params
from parsim.workloads.moe import GROUPED_GEMM
from parsim.workloads.transformer_ops import REPLICATED

FP8_LINEARS = ("qkv", "out", "gate", "up", "down")
"""``Kernel.part`` of the block linear layers Transformer Engine runs in FP8."""
FP8_B = 1  # an FP8 (E4M3/E5M2) element: one byte


@attrs.frozen
class Features:
    """The Megatron features a step turns on (``features_of``)."""

    sequence_parallel: bool = False
    distributed_optimizer: bool = False
    cp: int = 1
    virtual_stages: int = 1
    fp8: bool = False
    fp8_recipe: str = "delayed"
    cuda_graphs: tuple[str, ...] = ()  # the captured per-layer scopes (``cuda_graphs``)
    overlap_grad_reduce: bool = False  # ``dp_overlap``
    overlap_param_gather: bool = False
    optimizer_moments: str = "float32"  # Adam's moments (bfloat16: the precision-aware optimizer)


def features_of(params: Params) -> Features:
    """The features ``params`` name (absent ones off)."""
    return Features(
        bool(params.get("sequence_parallel", False)),
        bool(params.get("distributed_optimizer", False)),
        int(params.get("cp", 1)),
        int(params.get("virtual_stages", 1)),
        bool(params.get("fp8", False)),
        str(params.get("fp8_recipe", "delayed")),
        cuda_graphs.scopes_of(params),
        bool(params.get("overlap_grad_reduce", False)),
        bool(params.get("overlap_param_gather", False)),
        str(params.get("optimizer_moments", "float32")),
    )


def moments_dtype(features: Features) -> str | None:
    """Adam's moments' dtype where the precision-aware optimizer sets one (``optimizer_moments``);
    None: the master weights' dtype, as without it."""
    return None if features.optimizer_moments == "float32" else features.optimizer_moments


@attrs.frozen
class Fp8Recipe:
    """How Transformer Engine quantises one 16-bit tensor to FP8 under a scaling recipe.

    Read in NVIDIA/TransformerEngine@70f53666 (v2.9, the 25.11 NeMo container's; the amax fusions
    below date from v2.7) transformer_engine/pytorch/csrc: ``quantizer.cpp``
    (``Float8CurrentScalingQuantizer``: ``nvte_compute_amax_with_config``, then
    ``nvte_compute_scale_from_amax``, then ``nvte_quantize_v2``), ``extensions/normalization.cpp``
    (the norm writes FP8 itself only for delayed scaling, ``FULLY_FUSED``; current scaling computes
    the norm and its amax in 16 bits then quantises, ``FUSED_NORM_AMAX_FP8``; MXFP8 runs it
    ``UNFUSED`` unless cuDNN's norm is asked for) and ``extensions/activation.cpp`` (delayed and
    MXFP8 activations write FP8 directly; current scaling writes 16 bits with the amax, then
    ``quantize_with_amax``). Block scaling (DeepSeek-V3's recipe, Megatron-LM's ``blockwise``; read in
    v2.14: ``Float8BlockQuantizer`` in ``quantizer.cpp``, ``nvte_quantize_v2`` running
    ``quantize_transpose_vector_blockwise``) casts a tensor in blocks of 1 x 128 (weights 128 x
    128) with an FP32 scale each, finding each block's amax in the cast kernel itself, and writes the
    row-wise copy and the transposed column-wise one in that pass; norms and activations write 16
    bits for it (``UNFUSED`` in ``normalization.cpp`` and ``activation.cpp``)."""

    amax_pass: bool  # a cast of its own reads the tensor once for its amax before casting it
    scale_kernel: bool  # a one-thread kernel turns the amax into the scale before the cast
    layouts: int  # FP8 copies each cast writes: 1, or row- and column-wise blocks (2)
    scale_B: float  # bytes of block scales per element and copy
    fused_norm: bool  # the layer norm writes the FP8 input of qkv and fc1 itself
    fused_activation: bool  # the activation writes the FP8 input of fc2 itself
    weight_scale_B: float | None = None  # the weights' scale bytes per element and copy (None: scale_B)


RECIPES = {
    # scale from the amax history (Megatron-LM's default): one pass, amax recorded as it casts
    "delayed": Fp8Recipe(False, False, 1, 0.0, True, True),
    # current scaling (Megatron-Bridge's FP8-CS): the amax of this very tensor first
    "tensorwise": Fp8Recipe(True, True, 1, 0.0, False, False),
    # 1 x 128 blocks (128 x 128 for weights), an FP32 scale each, both orientations in one pass
    "blockwise": Fp8Recipe(False, False, 2, 4 / 128, False, False, weight_scale_B=4 / (128 * 128)),
    # OCP MX blocks of 32 with an E8M0 scale, both orientations from the 16-bit tensor (Blackwell)
    "mxfp8": Fp8Recipe(False, False, 2, 1 / 32, False, True),
}
"""``fp8_recipe`` -> how its casts run (``Fp8Recipe``)."""


def check(features: Features, params: Params, layers: int, pp: int, microbatches: int) -> None:
    """Refuse feature combinations Megatron-LM refuses.

    Raises:
        ParsimError: virtual stages without a pipeline, more chunks than layers, interleaving with
            micro-batches that are not whole rounds of the pipeline, FP8 outside 16-bit mixed
            precision, a sequence that does not split over ``cp``, the weights' gather
            overlapped without the distributed optimizer and the gradients' overlap, or 16-bit
            moments without the distributed optimizer or without Adam.
    """
    v, name = features.virtual_stages, "network"
    if v > 1 and pp == 1:
        raise ParsimError(f"{name}: 'virtual_stages' {v} needs a pipeline: pp must be > 1 (pp=1)")
    if v > 1 and pp * v > layers:
        raise ParsimError(
            f"{name}: 'virtual_stages' {v} x pp {pp} = {pp * v} chunks is more than the {layers} layers"
        )
    if v > 1 and microbatches % pp:
        raise ParsimError(
            f"{name}: 'microbatches' {microbatches} must be a multiple of pp={pp} for the interleaved "
            "schedule (virtual_stages > 1)"
        )
    if features.fp8 and params.get("dtype") not in ("bfloat16", "float16"):
        raise ParsimError(
            f"{name}: fp8=true runs FP8 GEMMs inside 16-bit mixed precision: 'dtype' must be bfloat16 "
            f"or float16: {params.get('dtype')}"
        )
    if features.overlap_param_gather and not features.distributed_optimizer:
        raise ParsimError(
            f"{name}: overlap_param_gather gathers the distributed optimizer's weights: it needs "
            "distributed_optimizer=true (Megatron-LM asserts it)"
        )
    if features.overlap_param_gather and not features.overlap_grad_reduce:
        raise ParsimError(
            f"{name}: overlap_param_gather needs overlap_grad_reduce=true too (Megatron-LM asserts it)"
        )
    if features.optimizer_moments != "float32" and not features.distributed_optimizer:
        raise ParsimError(
            f"{name}: optimizer_moments={features.optimizer_moments} is Megatron-Core's precision-aware "
            "optimizer, which runs under the distributed optimizer only: set distributed_optimizer=true"
        )
    if features.optimizer_moments != "float32" and params.get("dtype") not in ("bfloat16", "float16"):
        raise ParsimError(
            f"{name}: optimizer_moments={features.optimizer_moments} keeps the moments below the "
            "float32 master weights of 16-bit mixed precision: 'dtype' must be bfloat16 or float16: "
            f"{params.get('dtype')}"
        )
    if features.optimizer_moments != "float32" and params.get("optimizer") != "adam":
        raise ParsimError(
            f"{name}: optimizer_moments={features.optimizer_moments} sets Adam's moments; "
            f"optimizer={params.get('optimizer')} keeps none"
        )
    if features.fp8_recipe != "delayed" and not features.fp8:
        raise ParsimError(f"{name}: 'fp8_recipe' {features.fp8_recipe} scales FP8 casts: it needs fp8=true")
    seq = int(params.get("seq") or 0)
    if features.cp > 1 and params.get("attention", "flash") == "unfused":
        raise ParsimError(
            f"{name}: cp={features.cp} runs ring attention in fused kernels: 'attention' must be flash, "
            "not unfused"
        )
    if seq % (2 * features.cp) and features.cp > 1:
        raise ParsimError(
            f"{name}: 'seq' {seq} must divide by 2 x cp = {2 * features.cp} (context parallelism "
            "cuts each sequence into 2 x cp chunks)"
        )


def _scaled(kernel: Kernel, factor: float) -> Kernel:
    work = kernel.work
    return kernel.but(
        flops=work.flops * factor,
        bytes_read=work.bytes_read * factor,
        bytes_written=work.bytes_written * factor,
        work_items=max(1, int(work.work_items * factor)),
        special_ops=work.special_ops * factor,
        int_ops=work.int_ops * factor,
        cold_bytes=kernel.access.cold_bytes * factor,
    )


def sequence_split(kernels: list[Kernel], tp: int) -> list[Kernel]:
    """Sequence parallelism: the norms and residual adds (dropout fused in them) over 1/tp of the tokens."""
    return [_scaled(k, 1.0 / tp) if k.part == REPLICATED else k for k in kernels]


def context_attention(kernels: list[Kernel], cp: int) -> list[Kernel]:
    """Context parallelism: kernels built for seq/cp tokens; attention does cp x its own chunk's
    causal square (1/cp of the whole sequence's), its backward too."""
    if cp == 1:
        return kernels
    return [_scaled(k, cp) if _attention(k) else k for k in kernels]


def _attention(kernel: Kernel) -> bool:
    return kernel.library.fused_attention != ""


def fp8_linears(
    kernels: list[Kernel], dtype: str, forward: bool, recipe: str = "delayed", sequence_split: int = 1
) -> list[Kernel]:
    """FP8 training: block linears at the FP8 rate, each FP8 input quantised first as ``recipe``
    (``RECIPES``) does it (``forward``: the forward pass's kernels, else the backward pass's).
    ``sequence_split``: the ``tp`` GPUs a norm's tokens are split over under sequence parallelism
    (the norm's output is quantised on its own shard, before the all-gather into qkv and fc1)."""
    how = RECIPES[recipe]
    out: list[Kernel] = []
    for k in kernels:
        if k.part not in FP8_LINEARS or k.library.gemm_mn is None:
            out.append(k)
            continue
        m, n = k.library.gemm_mn
        items = int(k.work.flops / (2.0 * n))  # x [m, k] or dy [m, n_fwd]
        # a forward product or a data gradient streams the weights in (cold beyond what it
        # writes); a weight gradient writes them
        activations = k.access.cold_bytes > k.work.bytes_written
        if activations and (k.part == "out" or not forward or _expert_input(k)):
            # the attention output, each data gradient's dy and each expert's rows (a round of
            # experts' casts: TE's ``split_quantize`` quantises each expert's rows) are cast alone
            passes = quantize(k, items, dtype, recipe)
            inside, launches = k.issue.in_library_call, k.issue.launches
            out += [c.but(in_library_call=inside or c is not passes[-1], launches=launches) for c in passes]
        elif activations and forward and _after_producer(k, how):
            # the norm's or the activation's output, quantised inside the same library call
            shard = items // sequence_split if k.part in ("qkv", "up") else items
            out += [c.but(in_library_call=True) for c in quantize(k, shard, dtype, recipe, amax_known=True)]
        out.append(k.but(math="float8"))
    return out


def _after_producer(kernel: Kernel, how: Fp8Recipe) -> bool:
    """A dense linear whose FP8 input its producer writes in 16 bits under ``how``: qkv's and fc1's
    after the layer norm (fc1's gate half shares up's input), fc2's after the activation."""
    if kernel.part in ("qkv", "up"):
        return not how.fused_norm
    return kernel.part == "down" and not how.fused_activation


def _expert_input(kernel: Kernel) -> bool:
    """An expert GEMM whose input TE's ``GroupedLinear`` quantises itself: the permuted tokens
    into fc1 ("up", whose input the gated "gate" shares) and the activation into fc2 ("down"). No
    layer norm or activation ahead of them casts it (Megatron-Core's ``TEGroupedMLP``: the
    dispatcher's output and ``bias_swiglu``'s go in 16-bit; TransformerEngine@5671fd36
    transformer_engine/pytorch/module/grouped_linear.py: ``tex.split_quantize`` of the input, one
    quantisation per expert (csrc/extensions/cast.cpp ``multi_tensor_quantize_impl``: a fused kernel
    only under delayed scaling))."""
    return kernel.work.op == GROUPED_GEMM and kernel.part in ("up", "down")


def quantize(
    like: Kernel,
    items: int,
    dtype: str,
    recipe: str = "delayed",
    amax_known: bool = False,
    weights: bool = False,
) -> list[Kernel]:
    """The kernels that quantise ``items`` 16-bit elements to FP8 under ``recipe``: an amax pass
    (current scaling, unless the producer computed the amax: ``amax_known``), a scale kernel
    (current scaling) and the cast (``weights``: the weights' cast, in the recipe's weight blocks)."""
    how = RECIPES[recipe]
    read = items * itemsize(dtype)
    made = []
    if how.amax_pass and not amax_known:
        made.append(_pass(like, "fp8 amax", items, read, 4.0, items, dtype))  # one max per element
    if how.scale_kernel:
        made.append(_pass(like, "fp8 scale", 1, 4.0, 4.0, 1, dtype))
    made.append(fp8_cast(like, items, dtype, recipe, weights))
    return made


def fp8_cast(like: Kernel, items: int, dtype: str, recipe: str = "delayed", weights: bool = False) -> Kernel:
    """One cast pass of ``items`` 16-bit elements to FP8 (read 16 bits, write a byte per copy and the
    copies' block scales: the weights' blocks where ``weights``), its amax recorded as it goes."""
    how = RECIPES[recipe]
    scale_B = how.weight_scale_B if weights and how.weight_scale_B is not None else how.scale_B
    written = items * how.layouts * (FP8_B + scale_B)
    return _pass(like, "fp8 cast", 2 * items, items * itemsize(dtype), written, items, dtype)


def _pass(
    like: Kernel, what: str, flops: float, read_B: float, written_B: float, items: int, dtype: str
) -> Kernel:
    return Kernel.of(
        f"{like.layer} {like.part} {what}",
        float(flops),
        float(read_B),
        float(written_B),
        max(1, int(items)),
        dtype=dtype,
        device=like.device,
        layer=like.layer,
        cold_bytes=float(read_B + written_B),
        phase=like.phase,
        part=like.part,  # its layer's part: an expert GEMM's cast is the experts' work
    )


def tp_collectives(
    size_B: float, tp: int, layers: int, name: str, sequence_parallel: bool
) -> tuple[AllReduce, ...]:
    """Megatron's two tensor-parallel exchanges per layer and pass: all-reduces, or under sequence
    parallelism a reduce-scatter and an all-gather each (the same ring bytes, twice the launches)."""
    if tp == 1:
        return ()
    if not sequence_parallel:
        return (AllReduce(f"{name} tp all-reduce", size_B, ranks=tp, per_node=tp),) * (2 * layers)
    gather = AllReduce(f"{name} sp all-gather", size_B, kind="all_gather", ranks=tp, per_node=tp)
    scatter = AllReduce(f"{name} sp reduce-scatter", size_B, kind="reduce_scatter", ranks=tp, per_node=tp)
    return (gather, scatter) * (2 * layers)


def context_exchange_B(kv_heads: int, head_dim: int, tokens: int, dtype: str, tp: int, cp: int) -> float:
    """Bytes one rank sends around the cp ring per layer and forward pass: its keys and values,
    cp - 1 times (the backward sends them and their gradients: twice)."""
    if cp == 1:
        return 0.0
    return 2.0 * kv_heads / tp * head_dim * tokens * itemsize(dtype) * (cp - 1)


def optimizer_sync(
    grads_B: float, weights_B: float, ranks: int, per_node: int, device: int, distributed: bool
) -> tuple[AllReduce, ...]:
    """The step's data-parallel reduction: one all-reduce of the gradients, or (the distributed
    optimizer) a reduce-scatter of them before the update and an all-gather of the weights after."""
    if not distributed:
        return (
            AllReduce(
                "gradient all-reduce",
                grads_B,
                stream=SYNC_STREAM,
                device=device,
                layer="dp sync",
                ranks=ranks,
                per_node=per_node,
            ),
        )
    scatter = AllReduce(
        "gradient reduce-scatter",
        grads_B,
        stream=SYNC_STREAM,
        device=device,
        layer="dp sync",
        kind="reduce_scatter",
        ranks=ranks,
        per_node=per_node,
    )
    gather = AllReduce(
        "weight all-gather",
        weights_B,
        stream=SYNC_STREAM,
        device=device,
        layer="dp sync",
        kind="all_gather",
        ranks=ranks,
        per_node=per_node,
    )
    return scatter, gather
