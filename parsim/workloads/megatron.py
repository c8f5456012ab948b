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
  and an all-gather of the 16-bit weights brings the replicas back in step.
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
  with an amax reduction (read 16-bit, write a byte): fused into the layer norm and the activation
  for three of the four forward inputs, a pass of its own for the attention output, for every
  gradient and for each expert GEMM's input (per expert, inside the grouped GEMM's call); the
  weights are cast once a step after the optimizer's update. Attention, norms, the embedding and
  the LM head stay in 16 bits, as Transformer Engine leaves them.
- **gradient accumulation** is ``microbatches``: the micro-batches of a step run before the
  data-parallel reduction, which happens once per step.
"""

from __future__ import annotations

import attrs

from parsim.base.dtypes import itemsize
from parsim.base.errors import ParsimError
from parsim.workloads.base import AllReduce, Kernel, Params
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


def features_of(params: Params) -> Features:
    """The features ``params`` name (absent ones off)."""
    return Features(
        bool(params.get("sequence_parallel", False)),
        bool(params.get("distributed_optimizer", False)),
        int(params.get("cp", 1)),
        int(params.get("virtual_stages", 1)),
        bool(params.get("fp8", False)),
    )


def check(features: Features, params: Params, layers: int, pp: int, microbatches: int) -> None:
    """Refuse feature combinations Megatron-LM refuses.

    Raises:
        ParsimError: virtual stages without a pipeline, more chunks than layers, interleaving with
            micro-batches that are not whole rounds of the pipeline, FP8 outside 16-bit mixed
            precision, or a sequence that does not split over ``cp``.
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


def fp8_linears(kernels: list[Kernel], dtype: str, forward: bool) -> list[Kernel]:
    """FP8 training: block linears at the FP8 rate, each FP8 input cast to one byte first
    (``forward``: the forward pass's kernels, else the backward pass's)."""
    out: list[Kernel] = []
    for k in kernels:
        if k.part not in FP8_LINEARS or k.library.gemm_mn is None:
            out.append(k)
            continue
        m, n = k.library.gemm_mn
        # Transformer Engine fuses the forward casts of qkv's and fc1's inputs into the layer norm
        # and fc2's into the activation; the attention output's cast runs alone, and each data
        # gradient's dy is cast (and transposed for the weight gradient) by a kernel of its own
        # a forward product or a data gradient streams the weights in (cold beyond what it
        # writes); a weight gradient writes them
        activations = k.access.cold_bytes > k.work.bytes_written
        if activations and (k.part == "out" or not forward or _expert_input(k)):
            cast = fp8_cast(k, int(k.work.flops / (2.0 * n)), dtype)  # x [m, k] or dy [m, n_fwd]
            # a round of experts' casts: TE's ``split_quantize`` quantises each expert's rows
            out.append(cast.but(in_library_call=k.issue.in_library_call, launches=k.issue.launches))
        out.append(k.but(math="float8"))
    return out


def _expert_input(kernel: Kernel) -> bool:
    """An expert GEMM whose input TE's ``GroupedLinear`` quantises itself: the permuted tokens
    into fc1 ("up", whose input the gated "gate" shares) and the activation into fc2 ("down"). No
    layer norm or activation ahead of them casts it (Megatron-Core's ``TEGroupedMLP``: the
    dispatcher's output and ``bias_swiglu``'s go in 16-bit; TransformerEngine@5671fd36
    transformer_engine/pytorch/module/grouped_linear.py: ``tex.split_quantize`` of the input, one
    quantisation per expert (csrc/extensions/cast.cpp ``multi_tensor_quantize_impl``: a fused kernel
    only under delayed scaling))."""
    return kernel.work.op == GROUPED_GEMM and kernel.part in ("up", "down")


def fp8_cast(like: Kernel, items: int, dtype: str) -> Kernel:
    """One cast-with-amax pass of ``items`` 16-bit elements to FP8 (read 16 bits, write a byte)."""
    read, written = items * itemsize(dtype), items * FP8_B
    return Kernel.of(
        f"{like.layer} {like.part} fp8 cast",
        float(2 * items),  # scale and amax (a max per element)
        float(read),
        float(written),
        max(1, items),
        dtype=dtype,
        device=like.device,
        layer=like.layer,
        cold_bytes=float(read + written),
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
                stream=3,
                device=device,
                layer="dp sync",
                ranks=ranks,
                per_node=per_node,
            ),
        )
    scatter = AllReduce(
        "gradient reduce-scatter",
        grads_B,
        stream=3,
        device=device,
        layer="dp sync",
        kind="reduce_scatter",
        ranks=ranks,
        per_node=per_node,
    )
    gather = AllReduce(
        "weight all-gather",
        weights_B,
        stream=3,
        device=device,
        layer="dp sync",
        kind="all_gather",
        ranks=ranks,
        per_node=per_node,
    )
    return scatter, gather
