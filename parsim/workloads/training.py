"""Deep-learning steps: whole networks, serving, and data-parallel training.

These are the situations of the background articles, as programs of kernels and copies (the
2-layer MLP's step is ``workloads.mlp``):

- ``network``: a model's layers, forward only or forward + backward + the optimizer's update
  (SGD or Adam); on a GPU the input batch is copied in first and the loss copied back. A
  language model (``llms.llm``: an id or a config.json) is built by
  ``transformer.transformer_kernels``: its input is ``seq`` int64 token ids per sample, its
  per-layer rows its embedding, each block's attention and MLP, the final norm, the LM head and
  the loss.
- ``serve``: inference on a batch: copy in, forward, copy the outputs back.
- ``data_parallel``: the batch is split over G GPUs (of each of ``nodes`` nodes); each runs
  forward and backward on its shard; then either gradients go to the host, are averaged and
  applied on the CPU, and the new weights go back to every GPU (``sync=host``, as in the
  articles), or NCCL sums them across GPUs in buckets during the backward pass and each GPU
  updates its own copy (``sync=ring``: PyTorch DDP and ZeRO, ``workloads.ddp``).
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from parsim import stack
from parsim.base.dtypes import itemsize
from parsim.base.errors import ParsimError
from parsim.workloads import ddp, expert_parallel, fsdp_tp, megatron, parallel3d, selective_op
from parsim.workloads.base import HOST, Kernel, Op, Params, Transfer, Workload
from parsim.workloads.layers import Numerics, layer_kernels
from parsim.workloads.llms import LlmConfig, is_llm, llm
from parsim.workloads.loss_scaling import scaled_update
from parsim.workloads.models import model_layers
from parsim.workloads.needs import MemoryNeeds
from parsim.workloads.net import Layer
from parsim.workloads.network_needs import folded_layers, network_needs
from parsim.workloads.ops import _items
from parsim.workloads.optimizers import update_kernel
from parsim.workloads.transformer import transformer_kernels, transformer_layers
from parsim.workloads.transformer_memory import transformer_needs
from parsim.workloads.transformer_ops import EMBEDDING, block_layers

TOKEN_ID_B = 8  # a token id is an int64


def numerics_of(params: Params) -> Numerics:
    """The arithmetic a framework does for these parameters.

    float16/bfloat16 under a framework means mixed precision (autocast), as training recipes run
    it. ``math=default`` follows PyTorch's defaults on Ampere and later: convolutions on TF32
    tensor cores (``torch.backends.cudnn.allow_tf32 = True``), matrix products in IEEE float32
    (``torch.backends.cuda.matmul.allow_tf32 = False`` since PyTorch 1.12); ``tf32`` uses TF32
    for both (TensorFlow's default), ``ieee`` for neither.
    """
    dtype, chosen = params["dtype"], params["math"]
    mixed = dtype in ("float16", "bfloat16")
    return Numerics(
        dtype=dtype,
        mixed=mixed,
        casts=mixed and stack.framework(params["framework"]).autocast,
        plain_weights=not stack.framework(params["framework"]).compiles,
        cpu_library=stack.framework(params["framework"]).cpu_library,
        layout=stack.framework(params["framework"]).layout
        if params["layout"] == "default"
        else params["layout"],
        foreach_optimizer=not stack.framework(params["framework"]).fused_optimizer,
        conv_math="tf32" if chosen in ("default", "tf32") else "",
        linear_math="tf32" if chosen == "tf32" else "",
    )


def _refuse_split_only(params: Params) -> None:
    """Refuse, by name, expert-parallel settings that only the 3D-parallel step reads (Megatron-Core's
    token dispatcher, the EP overlap, the experts' tensor split): one GPU's program would ignore them.

    Raises:
        ParsimError: one of them set on a model that has no experts, or off the split step."""
    named = list(expert_parallel.dispatcher_named(params))
    if params.get("ep_overlap", False):
        named.append("ep_overlap=true")
    if int(params.get("expert_tp", 0)) > 1:
        named.append(f"expert_tp={params['expert_tp']}")
    if not named:
        return
    model, names = params["model"], " ".join(named)
    if not is_llm(model) or not llm(model).moe:
        raise ParsimError(f"network: {names}: {model} has no experts to route tokens to")
    raise ParsimError(
        f"network: {names}: Megatron-Core's expert parallelism runs in the 3D-parallel step of a model "
        f"in training (gpus, ep or a Megatron feature such as fp8); {model} "
        f"{'trains' if params['train'] else 'infers'} as one GPU's program here"
    )


def network(params: Params) -> Workload:
    """One step of a model: input copied in, layers (forward, backward, update), loss copied back;
    over several GPUs, a language model's step split by tensor, pipeline and data parallelism."""
    if parallel3d.applies(params):
        if not is_llm(params["model"]) or not params["train"]:
            raise ParsimError(
                f"network: {', '.join(parallel3d.split_fields(params))} need the 3D-parallel step of a "
                f"language model in training; {params['model']} {'trains' if params['train'] else 'infers'} "
                "on one GPU (use data_parallel or serve for several)"
            )
        if params.get("code", "fused") != "fused":
            raise ParsimError(
                f"network: code={params['code']} is modelled for one GPU's step and data_parallel; "
                "the split step runs code=fused"
            )
        return parallel3d.parallel_step(llm(params["model"]), params, numerics_of(params))
    _refuse_split_only(params)
    if is_llm(params["model"]):
        return _language_model(params)
    layers = list(model_layers(params["model"]))
    batch, dtype, train = params["batch"], params["dtype"], params["train"]
    optimizer = params.get("optimizer", "sgd")
    numerics = numerics_of(params)
    size = itemsize(dtype)
    scaled = (
        train and dtype == "float16" and numerics.mixed and stack.framework(params["framework"]).scaler_sync
    )
    passes = [
        layer_kernels(layer, batch, numerics, train, i == 0, optimizer=optimizer, update=not scaled)
        for i, layer in enumerate(layers)
    ]
    if not train and stack.framework(params["framework"]).compiles:
        for index in folded_layers(layers):
            passes[index] = ([k.but(foldable=True) for k in passes[index][0]], [])
    ops: list[Op] = []
    if params.get("input", "copied") == "copied":  # a resident batch was made on the device once
        ops.append(Transfer("h2d input", batch * layers[0].in_size * size, "h2d", layer="data"))
    ops += [k for forward, _ in passes for k in forward]
    if train:
        ops += [k for _, backward in reversed(passes) for k in backward]
        if scaled:
            ops += scaled_update(layers, numerics, optimizer)
        ops.append(Transfer("d2h loss", size, "d2h", layer="loss"))
    else:
        # an inference step hands its result to the host (Session.run, .cpu(), asnumpy()): the host
        # waits for it, so back-to-back steps are one latency apart, as benchmark loops time them
        ops.append(
            Transfer("d2h output", batch * layers[-1].out_size * size, "d2h", layer="data", waits=True)
        )
    return Workload(
        "network",
        _items(params),
        tuple(ops),
        memory=network_needs(layers, batch, numerics, train, optimizer),
        layers=_kinds(layers),
        staging=True,
        framework=params["framework"],
    )


def _language_model(params: Params) -> Workload:
    """One step of a language model over ``batch`` x ``seq`` tokens: ids in, loss (or the next
    token's logits) out."""
    config = llm(params["model"])
    batch, seq, train = params["batch"], params["seq"], params["train"]
    optimizer, attention = params.get("optimizer", "sgd"), params["attention"]
    numerics = numerics_of(params)
    size = itemsize(params["dtype"])
    forward, backward = transformer_kernels(
        config,
        batch,
        seq,
        numerics,
        train,
        attention=attention,
        optimizer=optimizer,
        dropout=params.get("dropout", False),
        code=params.get("code", "fused"),
    )
    ops: list[Op] = []
    if params.get("input", "copied") == "copied":  # resident token ids were made on the device once
        ops.append(Transfer("h2d token ids", batch * seq * TOKEN_ID_B, "h2d", layer="data"))
    ops += forward
    if train:
        ops += [*backward, Transfer("d2h loss", size, "d2h", layer="loss")]
    else:
        ops.append(Transfer("d2h logits", batch * config.vocab * size, "d2h", layer="data"))
    return Workload(
        "network",
        _items(params),
        tuple(ops),
        memory=transformer_needs(
            config,
            batch,
            seq,
            numerics,
            train,
            optimizer,
            attention=attention,
            dropout=params.get("dropout", False),
        ),
        layers=(("data", "copy"), *transformer_layers(config, train)),
        staging=True,
        framework=params["framework"],
    )


def _kinds(layers: list[Layer]) -> tuple[tuple[str, str], ...]:
    return (("data", "copy"), *((layer.name, layer.kind) for layer in layers))


def serve(params: Params) -> Workload:
    """Inference on one batch: the ``network`` step with ``train=false``."""
    step = network({**params, "train": False})
    return attrs.evolve(step, name="serve", params=_items(params))


def data_parallel(params: Params) -> Workload:
    """One data-parallel training step over ``gpus`` GPUs (of each of ``nodes`` nodes) with host or
    NCCL gradient sync (``ddp``: buckets, overlap with the backward pass, ZeRO); with ``tp`` > 1 each
    group of ``tp`` GPUs of a node splits the layers and FSDP runs over the groups (``fsdp_tp``)."""
    gpus, sync, nodes, tp = params["gpus"], params["sync"], params.get("nodes", 1), params.get("tp", 1)
    optimizer = params.get("optimizer", "sgd")
    numerics = numerics_of(params)
    master = itemsize(numerics.master_dtype)  # gradients, their sums and the update (float32 when mixed)
    if tp > 1:
        fsdp_tp.check(llm(params["model"]) if is_llm(params["model"]) else None, params)
    ranks = gpus * nodes // tp  # data-parallel ranks: one per tensor-parallel group
    shard = params["batch"] // ranks if params["scaling"] == "strong" else params["batch"]
    if shard < 1:
        over = "'gpus' x 'nodes'" if tp == 1 else "'gpus' x 'nodes' / 'tp'"
        raise ParsimError(
            f"data_parallel: 'batch' {params['batch']} is smaller than {over} ({ranks}): "
            "each GPU needs at least one sample"
        )
    if sync == "host" and (nodes > 1 or params.get("zero", 0)):
        raise ParsimError("data_parallel: sync=host averages on one host; nodes > 1 and zero need sync=ring")
    microbatches = params.get("microbatches", 1)
    if shard % microbatches:
        raise ParsimError(
            f"data_parallel: 'microbatches' {microbatches} must divide each GPU's {shard} samples "
            "(gradient accumulation runs equal micro-batches)"
        )
    if sync == "host" and microbatches > 1:
        raise ParsimError("data_parallel: 'microbatches' > 1 (gradient accumulation) needs sync=ring")
    step = _shard_step(params, numerics, shard // microbatches)
    layers = step.kinds + (("sync", "sync"),)
    if sync == "ring":
        two_d = fsdp_tp.sync_fields(params, itemsize(numerics.dtype), shard // microbatches) if tp > 1 else {}
        rule = ddp.Sync(
            bucket_B=params.get("bucket_mb", 25.0) * ddp.MB,
            overlap=params.get("overlap", True),
            zero=params.get("zero", 0),
            optimizer=optimizer,
            master_dtype=numerics.master_dtype,
            weight_dtype=numerics.dtype,
            microbatches=microbatches,
            prefetch=params.get("prefetch", 2),
            **two_d,
        )
        shares = [ddp.GpuStep(step.input_B, *step.kernels(g)) for g in range(gpus)]
        ring_ops, ring_deps = ddp.ring_step(shares, step.layer_params, rule, ranks)
        return Workload(
            "data_parallel",
            _items(params),
            tuple(ring_ops),
            tuple(ring_deps),
            memory=step.memory.zero_sharded(rule.zero, ranks),
            gpus=gpus,
            layers=layers,
            framework=params["framework"],
        )
    weights = step.weights
    ops: list[Op] = []
    deps: list[tuple[int, ...]] = []
    last_of_device = {}
    for g in range(gpus):
        ops.append(Transfer("h2d input", step.input_B, "h2d", device=g, layer="data"))
        deps.append(())
        forward, backward = step.kernels(g)
        ops += forward + backward
        deps += [()] * (len(ops) - len(deps))
        ops.append(Transfer("d2h gradients", weights * master, "d2h", device=g, layer="sync"))
        deps.append(())
        last_of_device[g] = len(ops) - 1
    everything_back = tuple(last_of_device.values())
    ops.append(
        Kernel.of(
            "average gradients (host)",
            float(gpus * weights),
            gpus * weights * master,
            weights * master,
            weights,
            dtype=numerics.master_dtype,
            device=HOST,
            python_ops_per_item=gpus,
            layer="sync",
        )
    )
    deps.append(everything_back)
    ops.append(
        update_kernel(
            optimizer, "w -= lr * g (host)", weights, numerics.master_dtype, device=HOST, layer="sync"
        )
    )
    deps.append((len(ops) - 2,))
    update = len(ops) - 1
    for g in range(gpus):
        ops.append(Transfer("h2d weights", weights * master, "h2d", device=g, layer="sync"))
        deps.append((update,))
    return Workload(
        "data_parallel",
        _items(params),
        tuple(ops),
        tuple(deps),
        memory=step.memory,
        gpus=gpus,
        layers=layers,
        framework=params["framework"],
    )


@attrs.frozen
class _ShardStep:
    """One GPU's forward and backward of a data-parallel step, without the update.

    Attributes:
        input_B: bytes of the shard's input copied in.
        weights: parameters (the gradients to sum).
        memory: memory of the shard's step on one GPU, part by part.
        kinds: per-layer rows.
        kernels: GPU index -> that GPU's forward and backward kernels.
        layer_params: ``(layer, parameters)`` in the order the backward pass reaches the layers.
    """

    input_B: float
    weights: int
    memory: MemoryNeeds
    kinds: tuple[tuple[str, str], ...]
    kernels: Callable[[int], tuple[list[Kernel], list[Kernel]]]
    layer_params: tuple[tuple[str, int], ...]


def _shard_step(params: Params, numerics: Numerics, shard: int) -> _ShardStep:
    """The per-GPU step of ``params['model']`` (a CNN, the MLP or a language model) over ``shard`` samples."""
    optimizer = params.get("optimizer", "sgd")
    recompute, tp = params.get("recompute", "none"), params.get("tp", 1)
    if is_llm(params["model"]):
        config, seq, code = llm(params["model"]), params["seq"], params.get("code", "fused")
        if code == "hf":
            raise ParsimError(
                "data_parallel: code=hf (Hugging Face's modules) is modelled for one GPU's step "
                "(network); data_parallel runs code=fused, eager or eager-fused-norm"
            )
        if code != "fused" and tp > 1:
            raise ParsimError(
                f"data_parallel: code={code} is modelled for one GPU per model copy (tp=1); "
                f"tp={tp} runs code=fused"
            )

        def language(device: int) -> tuple[list[Kernel], list[Kernel]]:
            forward, backward = transformer_kernels(
                config,
                shard,
                seq,
                numerics,
                True,
                attention=params["attention"],
                device=device,
                update=False,
                tp=tp,
                code=code,
            )
            if tp > 1:  # torchtitan's plan: the norms sequence-parallel (1/tp of the tokens each)
                forward, backward = (
                    megatron.sequence_split(forward, tp),
                    megatron.sequence_split(backward, tp),
                )
            if recompute == selective_op.MODE:
                again = selective_op.replayed(
                    forward, config, parallel3d.RECOMPUTED, parallel3d.RECOMPUTE_PHASE
                )
            else:
                again = parallel3d.recomputed(forward, recompute)
            return forward, interleaved(again, backward)

        # offload: the checkpoints cross the host link (d2h in the forward pass, h2d in the backward)
        # on the copy engines while the matrix units work, as XLA's host offload schedules them; per
        # step 2 x layers x tokens x hidden x 2 B, a few GB/s at most for MaxText's recipes: hidden
        footprint = transformer_needs(
            config,
            shard,
            seq,
            numerics,
            True,
            optimizer,
            attention=params["attention"],
            recompute=recompute,
            fused_loss=stack.framework(params["framework"]).fused_loss,
            offload=params.get("offload", False),
            tp=tp,
            sequence_parallel=tp > 1,
        )
        kinds = (("data", "copy"), *transformer_layers(config, True))
        split = fsdp_tp.split_layer_params(llm_layer_params(config), config, tp)
        weights = config.params if tp == 1 else sum(p for _, p in split)
        return _ShardStep(shard * seq * TOKEN_ID_B, weights, footprint, kinds, language, split)
    if recompute != "none":
        raise ParsimError(f"data_parallel: 'recompute' {recompute} applies to language models only")
    layers = list(model_layers(params["model"]))

    first: list[tuple[list[Kernel], list[Kernel]]] = []  # GPU 0's kernels, built once

    def network_of(device: int) -> tuple[list[Kernel], list[Kernel]]:
        if not first:
            passes = [
                layer_kernels(layer, shard, numerics, True, i == 0, device=0, update=False)
                for i, layer in enumerate(layers)
            ]
            forward = [k for forward, _ in passes for k in forward]
            first.append((forward, [k for _, backward in reversed(passes) for k in backward]))
        # every GPU runs the same kernels: GPU 0's, placed on ``device`` (their records shared)
        forward, backward = first[0]
        return [k.on_device(device) for k in forward], [k.on_device(device) for k in backward]

    input_B = shard * layers[0].in_size * itemsize(numerics.dtype)
    footprint = network_needs(layers, shard, numerics, True, optimizer)
    weights = sum(layer.params for layer in layers)
    backward_order = tuple((layer.name, layer.params) for layer in reversed(layers))
    return _ShardStep(input_B, weights, footprint, _kinds(layers), network_of, backward_order)


def interleaved(again: list[Kernel], backward: list[Kernel]) -> list[Kernel]:
    """The backward pass with each layer's recomputed forward kernels just before that layer's
    backward, as activation checkpointing runs them (PyTorch's ``checkpoint`` wraps a block and
    replays its forward when the backward pass reaches it); a ZeRO-3 unit then gathers its
    weights once for both."""
    pending: dict[str, list[Kernel]] = {}
    for kernel in again:
        pending.setdefault(kernel.layer, []).append(kernel)
    ordered: list[Kernel] = []
    for kernel in backward:
        ordered += pending.pop(kernel.layer, [])
        ordered.append(kernel)
    return [k for rest in pending.values() for k in rest] + ordered


def llm_layer_params(config: LlmConfig) -> tuple[tuple[str, int], ...]:
    """A language model's ``(layer, parameters)`` in the order the backward pass reaches them."""
    blocks = [
        (layer, config.norm_params + params)
        for i in range(config.layers)
        for layer, params in zip(block_layers(i), (config.attention_params, config.mlp_params), strict=True)
    ]
    order = [(EMBEDDING, config.embedding_params), *blocks, ("ln_f", config.norm_params)]
    order.append(("lm_head", config.head_params))
    return tuple(reversed(order))
