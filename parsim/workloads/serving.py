"""Serving a language model: prefill the prompt, then decode one token per step (``llm_serve``).

A request batch is ``batch`` prompts of ``prompt`` tokens that each get ``output`` new tokens.
The *prefill* runs every prompt token at once (GEMMs of batch x prompt rows: compute-bound) and
its LM head yields the first output token; each of the ``output - 1`` *decode* steps then runs
one token per sequence attending over everything cached so far (GEMMs of ``batch`` rows: every
step reads all the weights and the whole KV cache, so it is memory-bound). After each phase the
sampled token ids are copied to the host (the server streams them and checks for stop tokens).

Events grow with layers, not with tokens: the program holds the prefill and one real decode
step, the mean one. Decode step t (t = 1 .. output - 1) attends over ``prompt + t - 1`` cached
tokens plus its own; its kernels are the same every step except attention, whose FLOPs and bytes
grow linearly with the cached tokens, so the step time is affine in t and the step over the mean
context, ``prompt + (output - 2) / 2`` cached tokens (rounded down: half a token at most), times
``output - 1`` is the decode total (``serve_metrics``; the tests compare it with the sum of every
step predicted alone; an eager framework's KV-cache concatenation grows linearly too). The host
reads each phase's tokens before it issues the next phase (a generation loop checks them for stop
tokens and feeds them back: ``.item()`` in Hugging Face's ``generate``, the scheduler's output in
vLLM), so a step's host work never runs ahead under the previous step's kernels: a framework's
cost to issue a step is paid at every batch and prompt. Time to first token is the prefill with the
copies in and out (the prefill's LM head yields the first token, as vLLM and TensorRT-LLM count
it); time per output token the mean decode step.

``weights=int8|float8|int8-weight-only|int4|q4_0|q8_0`` quantises the blocks' linear layers (the
embeddings and the LM head stay in ``dtype``, as AWQ, GPTQ and TensorRT-LLM leave them): 1, 1, 1, 0.5,
18/32 and 34/32 bytes per weight (GGUF's blocks carry a float16 scale per 32 weights). int8 and
float8 are W8A8 products on the integer / FP8 tensor cores (at their rate where the device lists
one); the others are weight-only (W8A16, W4A16: dequantised to ``dtype`` in the kernel, as
gpt-fast's, AWQ's and llama.cpp's do; a decode step's products are then CUDA-core GEMVs:
``workloads.quantised``); ``serving_figures.check_system`` refuses a device without the unit.

``gpus=G`` is tensor parallelism (Megatron-LM): each GPU holds 1/G of the heads, KV heads, MLP
columns and vocabulary, and two ring all-reduces per layer (after the attention output projection
and after the MLP down projection) sum the partial activations, batch x new tokens x hidden, over
the board's NVLink or else PCIe.

A mixture of experts (``moe``: routing, the union of the experts a step reads) takes ``imbalance``
and ``capacity_factor``, and ``ep=P`` shards its experts over P of the ``gpus``: the ``gpus / P``
tensor-parallel GPUs of each of P attention replicas serve ``ceil(batch / P)`` sequences, and every
MoE block adds an all-to-all dispatch (after the top-k) and combine (after the experts' down
projection) over the P GPUs of the EP group, each GPU's buffer its tokens' k hidden states.
"""

from __future__ import annotations

from typing import Literal

import attrs
from pydantic import Field

from parsim import stack
from parsim.base import units
from parsim.base.dtypes import itemsize
from parsim.base.errors import ParsimError
from parsim.stack.engines import ServeFramework
from parsim.workloads.base import HOST, AllReduce, Kernel, Op, Params, Transfer, Workload
from parsim.workloads.definition import ParamsModel, WorkloadDef
from parsim.workloads.layers import Numerics
from parsim.workloads.llms import LlmConfig, kv_cache_bytes, llm
from parsim.workloads.moe import (
    CAPACITY_FACTOR_FIELD,
    IMBALANCE_FIELD,
    ROUTE,
    Routing,
    check_routing,
    dispatch_B,
)
from parsim.workloads.needs import MemoryNeeds
from parsim.workloads.quantised import GEMV_ROWS, WEIGHT_B, WeightFormat, quantised
from parsim.workloads.records import Record, figure
from parsim.workloads.transformer import transformer_kernels, transformer_layers
from parsim.workloads.transformer_memory import transformer_needs
from parsim.workloads.transformer_ops import ATTENTION_CORE

NAME = "llm_serve"
TOKEN_ID_B = 8  # int64 token ids
_LINEARS = ("qkv", "out", "gate", "up", "down")  # the blocks' linear layers (``Kernel.part``): quantised
_EXPERTS = ("gate", "up", "down")  # a mixture of experts' MLP linears are its experts
_REDUCED_AFTER = ("out", "down")  # row-parallel layers: partial sums to all-reduce (forward only here)
PHASES = ("prefill", "decode")
ENGINE_STEP = "engine step"
"""``Kernel.part`` of the host op between two phases, where a serving engine's per-step host work
(``FrameworkSpec.serve_step_cycles``) is paid."""


@attrs.frozen
class ServingMetrics(Record):
    """A request batch as a serving benchmark reports it (``results.serving_figures`` fills it in).

    The latency of the prediction is the prefill and one decode step; these are the request's.

    Attributes:
        time_to_first_token_s: the prefill with the copies in and out (TTFT).
        time_per_output_token_s: the mean decode step (TPOT).
        e2e_latency_s: TTFT + (output - 1) x TPOT.
        tokens_per_s: generated tokens of the whole batch per second.
        tokens_per_s_per_user: one sequence's.
        kv_cache_bytes: the KV cache at the last token (all GPUs).
        max_batch: the largest batch whose weights, cache and activations fit on each GPU.
    """

    time_to_first_token_s: float = figure("first token", units.seconds)
    time_per_output_token_s: float = figure("per output token", units.seconds)
    e2e_latency_s: float = figure("end to end", units.seconds)
    tokens_per_s: float = figure("tokens/s, all", units.si)
    tokens_per_s_per_user: float = figure("per user", lambda v: f"{v:.3g} tokens/s")
    kv_cache_bytes: float = figure("KV cache", lambda v: units.si(v, "B"))
    max_batch: int = figure("max batch", str)


class LlmServeParams(ParamsModel):
    """``llm_serve``'s parameters (``dtype``: the activations' and, by default, the weights' type)."""

    dtype: Literal["float16", "bfloat16", "float32"] = "float16"
    model: str = Field("llama-2-7b", description="language model (gpt2 ... llama-2-70b)")
    batch: int = Field(1, gt=0, le=4096, description="sequences served together")
    prompt: int = Field(512, gt=0, le=10**6, description="prompt tokens per sequence (prefill)")
    output: int = Field(128, gt=0, le=10**6, description="tokens generated per sequence (decode)")
    weights: WeightFormat = Field(
        "dtype",
        description="weight type: as dtype, or quantised int8 / float8 (W8A8: products on int8/FP8 "
        "tensor cores), int8-weight-only, int4, q4_0 or q8_0 (weight-only: dequantised to dtype)",
    )
    kv_dtype: Literal["dtype", "float16", "bfloat16", "float32", "int8", "float8"] = Field(
        "dtype", description="element type of the KV cache (dtype: as the activations)"
    )
    gpus: int = Field(1, gt=0, le=64, description="tensor-parallel GPUs in one node")
    attention: Literal["flash", "flash-v1", "unfused"] = Field(
        "flash",
        description="fused FlashAttention-2 (flash), FlashAttention v1 or QK^T, softmax, xV (unfused)",
    )
    framework: ServeFramework = Field(
        "cuda-graph",
        description="cuda-graph, graph, eager PyTorch, xla (JetStream-like; the default on a TPU), or "
        "a serving engine: hf, vllm, vllm-v0, tensorrt-llm, llama.cpp, exllamav2, gpt-fast, sglang, "
        "sglang-0.3 (+compile: SGLang with --enable-torch-compile)",
    )
    ep: int = Field(1, gt=0, le=64, description="expert-parallel GPUs of the gpus (mixture of experts)")
    imbalance: float = IMBALANCE_FIELD
    capacity_factor: float = CAPACITY_FACTOR_FIELD


def check_llm_serve(name: str, given: Params, params: Params) -> Params:
    """Rules between fields: a known model, prompt + output within its context, G dividing the heads."""
    try:
        config = llm(params["model"])
    except ParsimError as error:
        raise ParsimError(f"{name}: {error}") from None
    tokens = params["prompt"] + params["output"]
    if tokens > config.context:
        raise ParsimError(
            f"{name}: prompt {params['prompt']} + output {params['output']} = {tokens} tokens are above "
            f"{config.name}'s context of {config.context} tokens"
        )
    check_routing(config, routing(params), params["gpus"], name)
    gpus = tensor_parallel(params)
    if config.heads % gpus or config.kv_heads % gpus or config.mlp_hidden % gpus:
        raise ParsimError(
            f"{name}: gpus={gpus} does not divide {config.name}'s {config.heads} heads / "
            f"{config.kv_heads} KV heads (MLP width {config.mlp_hidden})"
        )
    return params


def routing(params: Params, tokens: int = 0) -> Routing:
    """A mixture of experts' routing under ``params`` (``tokens``: routed over the EP group per step)."""
    return Routing(
        float(params.get("imbalance", 1.0)),
        float(params.get("capacity_factor", 0.0)),
        int(params.get("ep", 1)),
        tokens,
    )


def tensor_parallel(params: Params) -> int:
    """GPUs each layer's heads and columns are split over: ``gpus / ep``."""
    return int(params["gpus"]) // int(params.get("ep", 1))


def replica_batch(params: Params, batch: int | None = None) -> int:
    """Sequences one attention replica serves: ``ceil(batch / ep)`` (the busiest replica's)."""
    ep = int(params.get("ep", 1))
    return -(-int(params["batch"] if batch is None else batch) // ep)


def _numerics(params: Params) -> Numerics:
    # Inference servers keep the weights in ``dtype`` (no float32 master copy, no autocast casts)
    # and in their own layouts (nothing re-laid out per call); an eager framework runs the
    # layers as the primitive ops they are written in.
    return Numerics(
        dtype=params["dtype"], primitive_layers=stack.framework(params["framework"]).primitive_layers
    )


def kv_type(params: Params) -> str:
    chosen: str = params["dtype"] if params["kv_dtype"] == "dtype" else params["kv_dtype"]
    return chosen


def weight_B(config: LlmConfig, params: Params) -> float:
    """Bytes of the weights on one GPU: quantised blocks' linears, the rest in ``dtype``; a mixture
    of experts' experts sharded over ``ep`` GPUs as well."""
    size, tp, ep = itemsize(params["dtype"]), tensor_parallel(params), int(params.get("ep", 1))
    linear = config.layers * (config.attention_params + config.mlp_params)
    per = WEIGHT_B.get(params["weights"], float(size))
    experts = config.expert_params
    held = (linear - experts) * per + experts * per / ep + (config.params - linear) * size
    return float(held) / tp


def memory_needs(config: LlmConfig, params: Params, batch: int) -> MemoryNeeds:
    """Per-GPU needs at ``batch`` sequences: the weights (quantised blocks' linears at their
    format's bytes), the KV cache at the end of the output (in ``kv_dtype``), and the prefill's
    hidden states and largest intermediate (``transformer_needs``, the one transformer formula)."""
    tp, local = tensor_parallel(params), replica_batch(params, batch)
    prefill = transformer_needs(
        config,
        local,
        params["prompt"],
        _numerics(params),
        False,
        tp=tp,
        attention=params["attention"],
    )
    cache = kv_cache_bytes(config, local, params["prompt"] + params["output"], kv_type(params))
    return attrs.evolve(prefill, weights_B=weight_B(config, params), kv_cache_B=cache / tp)


def _phase_kernels(
    config: LlmConfig, params: Params, past: int, new: int, device: int, phase: str = ""
) -> list[Kernel]:
    """One GPU's kernels of ``phase`` (``Kernel.phase`` says which: the figures find them by it)."""
    forward, _ = transformer_kernels(
        config,
        replica_batch(params),
        past + new,
        _numerics(params),
        False,
        attention=params["attention"],
        past=past,
        new_tokens=new,
        device=device,
        tp=tensor_parallel(params),
        kv_dtype=kv_type(params),
        kv_concat=stack.framework(params["framework"]).kv_cache_concat,
        phase=phase,
        routing=routing(params, params["batch"] * new),
    )
    if params["weights"] != "dtype":
        size, gemv = itemsize(params["dtype"]), replica_batch(params) * new <= GEMV_ROWS
        forward = [quantised(k, params["weights"], size, gemv) if k.part in _LINEARS else k for k in forward]
    engine = stack.framework(params["framework"])
    if phase != "decode" or not engine.shapes_decode:
        return forward
    # the engine's decode matrix kernels (GEMVs: linears, experts, LM head, attention over the cache)
    shares = {expert: engine.decode_bandwidth_share(expert, params["weights"]) for expert in (False, True)}
    in_flight = engine.decode_in_flight_B

    def share(k: Kernel) -> float:
        attention = engine.decode_attention_share if k.part == ATTENTION_CORE else 1.0
        return shares[config.moe and k.part in _EXPERTS] * attention

    return [
        k.but(bandwidth_share=share(k), core_in_flight_B=in_flight)
        if k.library.gemm_mn is not None or k.part in _LINEARS
        else k
        for k in forward
    ]


def _segments(kernels: list[Kernel]) -> list[list[Kernel]]:
    """Cut one GPU's phase after each row-parallel layer (where the all-reduces go) and after a
    mixture of experts' top-k (where its dispatch goes)."""
    segments: list[list[Kernel]] = [[]]
    for kernel in kernels:
        segments[-1].append(kernel)
        if kernel.part in _REDUCED_AFTER or kernel.part == ROUTE:
            segments.append([])
    return segments


def _collectives(config: LlmConfig, params: Params, after: Kernel, new: int, phase: str) -> list[AllReduce]:
    """The collectives after ``after``, the last kernel of a segment: the tensor-parallel all-reduce
    after a row-parallel layer, and a mixture of experts' all-to-all dispatch after its top-k and
    combine after its experts' down projection (each GPU's buffer: its tokens' k hidden states)."""
    tp, ep, layer = tensor_parallel(params), int(params.get("ep", 1)), after.layer
    size = itemsize(params["dtype"])
    tokens = replica_batch(params) * new
    moving = dispatch_B(tokens, config, size)
    found: list[AllReduce] = []
    if ep > 1 and after.part == ROUTE:
        found.append(
            AllReduce(
                f"all-to-all dispatch {layer} ({phase})", moving, layer=layer, kind="all_to_all", ranks=ep
            )
        )
    if ep > 1 and after.part == "down":
        found.append(
            AllReduce(
                f"all-to-all combine {layer} ({phase})", moving, layer=layer, kind="all_to_all", ranks=ep
            )
        )
    if tp > 1 and after.part in _REDUCED_AFTER:
        ranks = tp if ep > 1 else 0  # the whole system when it is one tensor-parallel group
        found.append(
            AllReduce(
                f"all-reduce {layer} ({phase})",
                float(tokens * config.hidden * size),
                layer=layer,
                ranks=ranks,
            )
        )
    return found


def llm_serve(params: Params) -> Workload:
    """Prompt ids in, prefill, the mean decode step (tensor-parallel over ``gpus``), tokens out.

    Tensor-parallel GPUs run identical kernels on their slices and meet at every all-reduce, so
    one of them (GPU 0) is simulated as the representative of all: the ops grow with the layers,
    not with ``gpus``, and each all-reduce still spans every GPU's ring port.
    """
    config = llm(params["model"])
    batch, prompt, output = params["batch"], params["prompt"], params["output"]
    size = itemsize(params["dtype"])

    ops: list[Op] = [Transfer("h2d prompt ids", batch * prompt * TOKEN_ID_B, "h2d", layer="data")]
    deps: list[tuple[int, ...]] = [()]
    if stack.framework(params["framework"]).serves:  # the engine schedules the prefill's step first
        ops.insert(0, _stop_check(batch, "prefill", "schedule"))
        deps = [(), (0,)]
    steps = [("prefill", 0, prompt)] + ([("decode", prompt + (output - 2) // 2, 1)] if output >= 2 else [])
    barrier: tuple[int, ...] = (len(ops) - 1,)  # what the next segment waits for
    for step, (phase, past, new) in enumerate(steps, start=1):
        per_gpu = [_segments(_phase_kernels(config, params, past, new, 0, phase))]  # the representative GPU
        for index in range(len(per_gpu[0])):
            ends = []
            for g in range(len(per_gpu)):
                segment = per_gpu[g][index]
                if not segment:
                    continue
                ops += segment
                deps += [barrier] + [()] * (len(segment) - 1)
                ends.append(len(ops) - 1)
            last = per_gpu[0][index]
            found = _collectives(config, params, last[-1], new, phase) if index < len(per_gpu[0]) - 1 else []
            barrier = tuple(ends)
            for collective in found:  # on the ring (all-reduce) or every pair of the EP group
                ops.append(collective)
                deps.append(barrier)
                barrier = (len(ops) - 1,)
        ops.append(_sample(config, batch, size, phase))
        deps.append(barrier)
        ops.append(Transfer(f"d2h tokens ({phase})", batch * TOKEN_ID_B, "d2h", layer="sample", phase=phase))
        deps.append(())
        if step < len(steps):  # the host reads the tokens before it issues the next phase
            ops.append(_stop_check(batch, phase))
            deps.append((len(ops) - 2,))
        barrier = (len(ops) - 1,)
    return Workload(
        NAME,
        tuple(sorted(params.items())),
        tuple(ops),
        tuple(deps),
        memory=memory_needs(config, params, batch),
        gpus=params["gpus"],
        layers=(("data", "copy"), *transformer_layers(config, False), ("sample", "sampling")),
        staging=True,
        framework=params["framework"],
    )


def _stop_check(batch: int, phase: str, what: str = "stop check") -> Kernel:
    """The host reads the sampled tokens (a compare per sequence) before it issues the next phase:
    where a serving engine does its work between two steps (``ENGINE_STEP``)."""
    return Kernel.of(
        f"{what} ({phase})",
        float(batch),
        float(batch * TOKEN_ID_B),
        0.0,
        batch,
        dtype="float32",
        device=HOST,
        layer="sample",
        part=ENGINE_STEP,
    )


def _sample(config: LlmConfig, batch: int, size: int, phase: str) -> Kernel:
    """Greedy sampling on GPU 0: the argmax of each sequence's gathered logits."""
    logits = batch * config.vocab
    return Kernel.of(
        f"sample tokens ({phase})",
        float(logits),
        float(logits * size),
        float(batch * TOKEN_ID_B),
        logits,
        dtype="float32" if size == 4 else "float16",
        layer="sample",
        cold_bytes=float(logits * size + batch * TOKEN_ID_B),
        phase=phase,
    )


LLM_SERVE = WorkloadDef(
    NAME,
    LlmServeParams,
    llm_serve,
    "LLM serving: prefill the prompt, decode token by token (KV cache, tensor parallel)",
    check=check_llm_serve,
    record=ServingMetrics,
)
"""Its definition (``owns_gpus``: ``gpus=`` is its own parameter)."""
DEFINITIONS = (LLM_SERVE,)
"""What ``registry.WORKLOADS`` registers from this module."""
