"""How a 3D-parallel training step's GPUs are laid out, what the fullest one holds, and every split.

``layout`` turns a step's parameters (``gpus`` per node x ``nodes``, ``tp``, ``pp``, ``cp``,
``virtual_stages``, ``microbatches``) into a ``Layout`` in Megatron-LM's rank order (tensor
parallel first, then context, data and pipeline), refusing in one line a split that does not
factor the GPUs, tensor parallelism wider than a node, a pipeline deeper than the layers or a
batch that is not whole micro-batches. ``memory_needs`` is the fullest GPU's memory under that
layout (``transformer_memory`` with Megatron's features and expert parallelism applied), and
``splits`` enumerates every ``(tp, pp)`` a cluster admits, which ``studies.splits`` prices. The
step itself is ``parallel3d``'s.
"""

from __future__ import annotations

import math

import attrs

from parsim.base.dtypes import itemsize
from parsim.base.errors import ParsimError
from parsim.workloads import cuda_graphs, expert_parallel, megatron
from parsim.workloads.base import Params
from parsim.workloads.layers import Numerics
from parsim.workloads.llms import LlmConfig
from parsim.workloads.needs import MemoryNeeds
from parsim.workloads.transformer_memory import stage_layers, transformer_needs

SPLIT_KEYS = ("gpus", "nodes", "tp", "pp", "microbatches", "cp", "ep")
"""The parameters that split a network's step over GPUs when above 1."""


def applies(params: Params) -> bool:
    """The step is split over GPUs, recomputes activations or turns a Megatron feature on (FP8, CUDA
    graphs...): the 3D path, not one GPU's program."""
    return bool(split_fields(params))


def split_fields(params: Params) -> list[str]:
    """The parameters that take ``params`` to the 3D path (``applies``), as ``key=value``."""
    named = [f"{key}={params[key]}" for key in SPLIT_KEYS if params.get(key, 1) > 1]
    if params.get("recompute", "none") != "none":
        named.append(f"recompute={params['recompute']}")
    defaults = attrs.asdict(megatron.Features())
    for name, value in attrs.asdict(megatron.features_of(params)).items():
        if value != defaults[name]:
            shown = ",".join(value) if isinstance(value, list | tuple) else value
            named.append(f"{name}={str(shown).lower() if isinstance(value, bool) else shown}")
    return named


@attrs.frozen
class Layout:
    """How ``tp x pp x dp`` GPUs of ``gpus_per_node`` per node share a step."""

    tp: int
    pp: int
    dp: int
    gpus_per_node: int
    microbatches: int
    micro_batch: int
    cp: int = 1
    virtual_stages: int = 1

    @property
    def gpus(self) -> int:
        return self.tp * self.cp * self.pp * self.dp

    def dp_per_node(self) -> int:
        """Gradient-reduction peers (data x context parallel) of a GPU in its own node (``tp`` apart)."""
        return math.gcd(self.dp * self.cp, max(1, self.gpus_per_node // self.tp))

    def cp_per_node(self) -> int:
        """Context-parallel peers of a GPU in its own node (``tp`` apart, Megatron's tp-cp-dp-pp order)."""
        return math.gcd(self.cp, max(1, self.gpus_per_node // self.tp))

    def crosses_nodes(self, stage: int) -> bool:
        """Stage ``stage`` sends to the next one through the NICs (they sit in different nodes)."""
        span = self.tp * self.cp * self.dp
        return span >= self.gpus_per_node or (stage + 1) * span % self.gpus_per_node == 0


def layout(config: LlmConfig, params: Params) -> Layout:
    """The split of ``params`` (``gpus`` per node x ``nodes``; ``tp``, ``pp``; dp is what remains).

    Raises:
        ParsimError: a split that does not factor the GPUs, tensor parallelism wider than a node,
            a pipeline deeper than the layers, or a batch that is not whole micro-batches.
    """
    per_node, nodes, tp, pp = params["gpus"], params["nodes"], params["tp"], params["pp"]
    cp, chunks = int(params.get("cp", 1)), int(params.get("virtual_stages", 1))
    gpus = per_node * nodes
    name = "network"
    if tp > per_node:
        raise ParsimError(
            f"{name}: tp={tp} is larger than a node's {per_node} GPUs: tensor parallelism stays inside a node"
        )
    if gpus % (tp * pp * cp):
        split = "tp x pp" if cp == 1 else "tp x cp x pp"
        raise ParsimError(
            f"{name}: {split} = {tp * cp * pp} does not divide the {gpus} GPUs ({nodes} nodes x "
            f"{per_node}): {split} x dp must equal them"
        )
    if pp > config.layers:
        raise ParsimError(f"{name}: pp={pp} is deeper than {config.name}'s {config.layers} layers")
    dp, microbatches = gpus // (tp * pp * cp), params["microbatches"]
    if params["batch"] % (dp * microbatches):
        raise ParsimError(
            f"{name}: 'batch' {params['batch']} is not a whole number of micro-batches: it must divide by "
            f"dp x microbatches = {dp} x {microbatches}"
        )
    megatron.check(megatron.features_of(params), params, config.layers, pp, microbatches)
    expert_parallel.check(config, params, tp, dp, cp)
    cuda_graphs.check(config, params)
    return Layout(tp, pp, dp, per_node, microbatches, params["batch"] // (dp * microbatches), cp, chunks)


def memory_needs(config: LlmConfig, lay: Layout, params: Params, numerics: Numerics) -> MemoryNeeds:
    """The fullest GPU's memory, part by part (``transformer_memory.transformer_needs``): its
    stage's weights, gradients and optimizer state over ``tp``, and the activations of the
    micro-batches it holds at once under 1F1B (stage s: ``pp - s``).

    Megatron's features (``megatron``): context parallelism keeps seq/cp tokens per GPU; sequence
    parallelism splits the replicated activations over tp; the interleaved schedule holds
    ``1 + (p - 1) / (p v)`` times the activations (Korthikanti et al. 2022, section 4.2.3); the
    distributed optimizer keeps 1/(dp cp) of the float32 master weights and of Adam's moments and
    its gradient buffer in 16 bits (Megatron-Core's ``DistributedDataParallelConfig`` default
    ``grad_reduce_in_fp32=False``), the moments in ``optimizer_moments``; FP8 adds Transformer
    Engine's one-byte copy of each weight."""
    features = megatron.features_of(params)
    needs = transformer_needs(
        config,
        lay.micro_batch,
        params["seq"] // lay.cp,
        numerics,
        True,
        params["optimizer"],
        tp=lay.tp,
        pp=lay.pp,
        microbatches=lay.microbatches,
        recompute=params["recompute"],
        attention=params["attention"],
        dropout=params["dropout"],
        sequence_parallel=features.sequence_parallel,
        fp8=features.fp8,
    )
    activations = needs.activations_B
    if lay.virtual_stages > 1:
        activations *= 1 + (lay.pp - 1) / (lay.pp * lay.virtual_stages)
    weights, gradients, optimizer = needs.weights_B, needs.gradients_B, needs.optimizer_B
    master = itemsize(numerics.master_dtype)
    held = weights / (master + itemsize(numerics.dtype)) if numerics.mixed else weights / master
    kept = expert_parallel.kept_share(config, stage_layers(config, lay.pp), params)  # 1/ep of the experts
    weights, gradients, optimizer = weights * kept, gradients * kept, optimizer * kept
    if features.distributed_optimizer and numerics.mixed:
        shards = lay.dp * lay.cp  # every parameter's master copy and state: 1/(dp cp) of it, ep or not
        weights = held * (itemsize(numerics.dtype) * kept + master / shards)
        gradients = held * itemsize(numerics.dtype) * kept  # reduced in 16 bits (grad_reduce_in_fp32=False)
        # Adam's moments in the master dtype unless the precision-aware optimizer keeps them in 16 bits
        moments = megatron.moments_dtype(features)
        optimizer = needs.optimizer_B / shards * (itemsize(moments) / master if moments else 1.0)
    if features.fp8:
        weights += held * kept * megatron.FP8_B
    return attrs.evolve(
        needs, activations_B=activations, weights_B=weights, gradients_B=gradients, optimizer_B=optimizer
    )


def splits(config: LlmConfig, params: Params, micro: int | None = None) -> list[Params]:
    """Every ``(tp, pp)`` of the GPUs ``params`` name (dp what remains) with micro-batches of
    ``micro`` sequences (default: the size ``params`` give): tp dividing a node's GPUs and the
    heads, pp at most the layers, the batch a whole number of micro-batches per replica."""
    cp = int(params.get("cp", 1))
    gpus = params["gpus"] * params["nodes"] // cp
    micro = micro or layout(config, params).micro_batch
    found = []
    for tp in range(1, params["gpus"] + 1):
        if params["gpus"] % tp or config.heads % tp or config.kv_heads % tp or config.mlp_hidden % tp:
            continue
        for pp in range(1, min(config.layers, gpus // tp) + 1):
            if (gpus // tp) % pp:
                continue
            dp = gpus // (tp * pp)
            if params["batch"] % (dp * micro):
                continue
            split = {**params, "tp": tp, "pp": pp, "microbatches": params["batch"] // (dp * micro)}
            try:  # a split the features refuse (interleaving needs whole rounds of micro-batches)
                layout(config, split)
            except ParsimError:
                continue
            found.append(split)
    return found
