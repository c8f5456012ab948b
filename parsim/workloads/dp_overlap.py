"""Megatron-Core's data-parallel overlap: the gradients reduced bucket by bucket while the last
backward pass still runs (``--overlap-grad-reduce``), the distributed optimizer's weights gathered
bucket by bucket ahead of the passes that need them (``--overlap-param-gather``).

Without them a step's data-parallel reduction (``megatron.optimizer_sync``, and the experts' own,
``expert_parallel.expert_sync``) waits for the last backward pass and the update, and the weights'
all-gather follows the update: all of it exposed. With them, Megatron-Core's
``DistributedDataParallel`` (NVIDIA/Megatron-LM@core_v0.16.0 megatron/core/distributed/
distributed_data_parallel.py, param_and_grad_buffer.py) cuts each gradient buffer into buckets of
``bucket_size`` elements (``max(40M, 1M x dp)`` unless given; one bucket without the overlap),
filled in reverse layer order, and reduces each on a stream of its own as soon as the last
micro-batch's backward has finished its gradients: only the last bucket (the first layers',
finished last) waits for the pass to end. The weights come back the same way: each bucket's
all-gather runs ahead of the layers that use it, so the first pass waits for the first bucket only.
Like passing buckets of water down a line while the fire still burns: only the last bucket arrives
after the last flame.

Megatron-Core buckets only the first pipeline stage's first chunk of layers; every other chunk,
and every later stage's buffer, is one bucket, reduced as a whole after its backward (a later
stage's then runs while the stages before it drain the pipeline, as without the overlap).

parsim runs a stage's collectives on its data-parallel stream (``base.SYNC_STREAM``): all of each
reduction but its waiting share (``waiting_share``: the first stage's last bucket) from the moment
its last backward pass may start, that share after the pass; every bucket of each gather from the
start of the step, its first forward pass waiting for the first bucket (a later stage's whole
buffer) and the pass after it for the rest. The first stage's other chunks are reduced from its
last backward's start too (Megatron-Core starts each after the chunk's own last backward, sooner),
and NCCL's channels hold none of the passes' SMs here (``engine.links``): both left out.
"""

from __future__ import annotations

import math

import attrs

from parsim.workloads import expert_parallel, megatron
from parsim.workloads.base import AllReduce, Params
from parsim.workloads.parallel3d_layout import Layout

MCORE_MIN_BUCKET = 40_000_000
"""Megatron-Core's smallest default bucket, in elements (``max(40000000, 1000000 * dp)``)."""
MCORE_BUCKET_PER_RANK = 1_000_000
"""Its default bucket's growth per data-parallel rank, in elements."""


def bucket_elements(given: int, dp: int) -> int:
    """Elements per bucket: ``given`` (``bucket_params``), or Megatron-Core's default for ``dp``
    data-parallel ranks (0 given)."""
    return given or max(MCORE_MIN_BUCKET, MCORE_BUCKET_PER_RANK * dp)


def buckets(elements: float, bucket: int) -> int:
    """Buckets of ``bucket`` elements that ``elements`` parameters fill (at least one)."""
    return max(1, math.ceil(elements / bucket))


def split(op: AllReduce, share: float) -> tuple[AllReduce, AllReduce]:
    """``op`` cut into ``(share of its bytes, the rest)``."""
    one = op.nbytes * share
    return attrs.evolve(op, nbytes=one), attrs.evolve(op, nbytes=op.nbytes - one)


Buffer = tuple[AllReduce, tuple[AllReduce, ...], float]
"""A gradient buffer's reduction, its weights' gathers and the share of it that waits
(``waiting_share``)."""


@attrs.frozen
class Plan:
    """A stage's data-parallel collectives by when they run (``plan``); each tuple in stream order."""

    reductions: tuple[AllReduce, ...]  # after the last backward pass (the last buckets, or all)
    gathers: tuple[AllReduce, ...] = ()  # after the update (without the weights' overlap)
    early: tuple[AllReduce, ...] = ()  # from the step's start: the first bucket of each gather
    ahead: tuple[AllReduce, ...] = ()  # then the other buckets, before the pass after the first forward
    during: tuple[AllReduce, ...] = ()  # from the last backward pass's start: all buckets but the last


def waiting_share(elements: float, bucket: int, first_stage: bool, chunks: int) -> float:
    """The share of a stage's buffer that waits: the last bucket of its reduction, the first of its
    gather. Megatron-Core buckets only the first pipeline stage's first chunk of layers
    (distributed_data_parallel.py: ``if disable_bucketing or pp_rank > 0: bucket_size = None``, and
    ``disable_bucketing`` for every model chunk but the first): that chunk (1/``chunks`` of the
    buffer) in buckets, every other chunk, and every later stage, one bucket of its own."""
    if not first_stage:
        return 1.0
    return 1.0 / (chunks * buckets(elements / chunks, bucket))


def plan(buffers: list[Buffer], grads: bool, weights: bool) -> Plan:
    """When ``buffers``' collectives run, with the gradients' overlap (``grads``) and the weights'
    (``weights``) or without (``Plan``)."""
    reductions, gathers, early, ahead, during = [], [], [], [], []
    for reduction, gathered, waits in buffers:
        if grads and waits < 1 and reduction.ranks > 1:  # one rank reduces nothing: nothing to overlap
            last, rest = split(reduction, waits)
            reductions.append(last)
            during.append(rest)
        else:
            reductions.append(reduction)
        for gather in gathered:
            if weights and gather.ranks > 1:
                first, rest = split(gather, waits)
                early.append(first)
                ahead += [rest] if rest.nbytes > 0 else []
            else:
                gathers.append(gather)
    return Plan(tuple(reductions), tuple(gathers), tuple(early), tuple(ahead), tuple(during))


def stage_plan(
    sizes: tuple[float, float, float, float], lay: Layout, params: Params, s: int, size: int
) -> Plan:
    """Stage ``s``'s data-parallel collectives and when they run: ``sizes`` are its dense gradients'
    and weights' bytes and its local experts' (0 without expert parallelism), ``size`` a weight's
    bytes; the dense buffer reduced over ``dp x cp`` (``megatron.optimizer_sync``), the experts' over
    their own group (``expert_parallel.expert_sync``)."""
    grads_B, weights_B, expert_grads_B, expert_weights_B = sizes
    features = megatron.features_of(params)
    distributed = features.distributed_optimizer
    dense = megatron.optimizer_sync(grads_B, weights_B, lay.dp * lay.cp, lay.dp_per_node(), s, distributed)
    bucket = bucket_elements(int(params.get("bucket_params", 0)), lay.dp * lay.cp)

    def waits(weights: float) -> float:  # a buffer's waiting share, from its weights' bytes
        return waiting_share(weights / size, bucket, s == 0, lay.virtual_stages)

    buffers: list[Buffer] = [(dense[0], dense[1:], waits(weights_B))]
    if expert_grads_B:
        experts = expert_parallel.expert_sync(
            expert_grads_B, expert_weights_B, params, lay.dp, lay.cp, lay.gpus_per_node, s, distributed
        )
        buffers.append((experts[0], tuple(experts[1:]), waits(expert_weights_B)))
    return plan(buffers, features.overlap_grad_reduce, features.overlap_param_gather)
