"""The order a pipeline stage runs its passes in, and one issue order for all stages.

A pipeline is a bucket brigade: each stage passes a micro-batch's activations on and, later,
their gradients back. ``one_f_one_b`` is PipeDream-Flush's 1F1B (Narayanan et al. 2021): warm up
with ``p - s - 1`` forwards, alternate one forward and one backward, drain. ``interleaved`` is
Megatron-LM's schedule for ``v`` chunks of layers per stage (virtual stages): a micro-batch
visits each GPU ``v`` times, so the fill and drain shrink to 1/v. ``waits`` and ``sends`` say
which pass waits for which hand-over; ``topological`` merges the stages' programs into one issue
order that respects them.

Megatron-Core's combined 1F1B (``overlap_moe_expert_parallel_comm``, expert parallelism's
``ep_overlap``) runs each steady-state forward and the backward after it as one step, layer by
layer side by side, and runs one forward more before the steady state (``ahead``) so that the two
are independent (``get_pp_rank_microbatches`` in NVIDIA/Megatron-LM@92c8482e (the 25.11 NeMo
container's pin) and d98e8a64 megatron/core/pipeline_parallel/schedules.py: ``num_warmup_microbatches
+ 1``; ``combined_1f1b_schedule_for_no_pipelining`` runs the first forward alone likewise).
"""

from __future__ import annotations

from parsim.workloads.base import Op

Key = tuple[str, int, int]
Step = tuple[Op, list[Key], Key | None]
"""An op of a stage's program, the keys of the ops it waits for, and the key others wait on it by
(``("F", stage, chunk x microbatches + micro-batch)``, ``("sendB", stage, ...)``, ``("sync", stage, 0)``)."""


def one_f_one_b(stage: int, stages: int, microbatches: int, ahead: int = 0) -> list[tuple[str, int]]:
    """The order stage ``stage`` runs its passes in: warm-up forwards (``ahead`` more), one forward
    one backward, drain."""
    warmup = warmup_passes(stage, stages, 1, microbatches, ahead)
    order = [("F", i) for i in range(warmup)]
    for i in range(microbatches - warmup):
        order += [("F", warmup + i), ("B", i)]
    return order + [("B", i) for i in range(microbatches - warmup, microbatches)]


def warmup_passes(stage: int, stages: int, chunks: int, microbatches: int, ahead: int = 0) -> int:
    """The forwards ``stage`` runs before its first backward: ``p - s - 1`` (1F1B) or ``2 (p - s - 1) +
    (v - 1) p`` (interleaved), ``ahead`` more, at most all of them."""
    if chunks == 1:
        return min(stages - stage - 1 + ahead, microbatches)
    return min(2 * (stages - stage - 1) + (chunks - 1) * stages + ahead, microbatches * chunks)


def steady(n: int, warmup: int, passes: int) -> bool:
    """Whether the ``n``-th of a stage's ``passes`` (forwards and backwards, ``warmup`` of them warm-up
    forwards) is in the steady state, a forward paired with the backward after it: the warm-up's
    forwards and the drain's backwards are not, even where the last of the one meets the first of the
    other (every forward a warm-up one)."""
    return warmup <= n < passes - warmup


def order(
    stage: int, stages: int, chunks: int, microbatches: int, ahead: int = 0
) -> list[tuple[str, int, int]]:
    """``(pass, chunk, micro-batch)`` in the order ``stage`` runs them: 1F1B, or interleaved; ``ahead``
    forwards more before the steady state."""
    if chunks == 1:
        return [(kind, 0, i) for kind, i in one_f_one_b(stage, stages, microbatches, ahead)]
    return interleaved(stage, stages, chunks, microbatches, ahead)


def waits(kind: str, s: int, c: int, i: int, stages: int, chunks: int, microbatches: int) -> list[Key]:
    """What pass ``kind`` of chunk c, micro-batch i on stage s waits for: the previous virtual
    stage's send (forward) or the next one's (backward)."""
    p, m, last = stages, microbatches, chunks - 1
    if kind == "F":
        if s > 0:
            return [("sendF", s - 1, c * m + i)]
        return [("sendF", p - 1, (c - 1) * m + i)] if c > 0 else []
    if s < p - 1:
        return [("sendB", s + 1, c * m + i)]
    return [("sendB", 0, (c + 1) * m + i)] if c < last else []


def combined_waits(
    backward: tuple[str, int, int], s: int, stages: int, chunks: int, microbatches: int
) -> list[Key]:
    """What a forward paired with ``backward`` (``(pass, chunk, micro-batch)``, the pass after it) in
    Megatron-Core's combined 1F1B waits for besides its own input: the backward's gradient, since the
    step runs their layers side by side (``combined_1f1b_schedule_for_interleaved_pipelining`` calls
    ``pre_forward`` and ``pre_backward``, each waiting for its receive, before either pass's first
    layer; NVIDIA/Megatron-LM@92c8482e and d98e8a64 megatron/core/models/common/model_chunk_schedule_plan.py
    ``TransformerModelChunkSchedulePlan.run``). The forward's output leaves only after the step's
    layers (``post_forward`` follows both layer loops), so the caller sends it after the backward."""
    _, c, i = backward
    return waits("B", s, c, i, stages, chunks, microbatches)


def sends(kind: str, s: int, c: int, stages: int, chunks: int) -> bool:
    """The pass hands its activations (forward) or their gradient (backward) to another virtual stage."""
    if kind == "F":
        return not (s == stages - 1 and c == chunks - 1)
    return not (s == 0 and c == 0)


def interleaved(
    stage: int, stages: int, chunks: int, microbatches: int, ahead: int = 0
) -> list[tuple[str, int, int]]:
    """Megatron-LM's interleaved 1F1B order for ``stage``: ``(pass, chunk, micro-batch)``.

    Forward k runs chunk ``(k // p) % v`` of micro-batch ``(k // (p v)) p + k % p``; the backward
    passes take the chunks in reverse. Stage s warms up with ``2 (p - s - 1) + (v - 1) p``
    forwards (``ahead`` more), then alternates, then drains
    (``forward_backward_pipelining_with_interleaving``).
    """
    total = microbatches * chunks
    warmup = warmup_passes(stage, stages, chunks, microbatches, ahead)

    def pick(k: int, backward: bool) -> tuple[int, int]:
        group, within = divmod(k, stages * chunks)
        chunk = within // stages
        return (chunks - 1 - chunk if backward else chunk), group * stages + within % stages

    order = [("F", *pick(k, False)) for k in range(warmup)]
    for k in range(total - warmup):
        order += [("F", *pick(warmup + k, False)), ("B", *pick(k, True))]
    return order + [("B", *pick(k, True)) for k in range(total - warmup, total)]


def topological(sequences: list[list[Step]]) -> tuple[list[Op], list[tuple[int, ...]]]:
    """Merge the stages' programs into one issue order in which every op comes after what it waits for."""
    placed: dict[Key, int] = {}
    ordered: list[Op] = []
    deps: list[tuple[int, ...]] = []
    cursor = [0] * len(sequences)
    total = sum(len(seq) for seq in sequences)
    while len(ordered) < total:
        progressed = False
        for s, sequence in enumerate(sequences):
            at, end = cursor[s], len(sequence)
            while at < end:  # a loop per op of a step of 100,000 passes: no generators in it
                op, needs, provides = sequence[at]
                found = [placed.get(key) for key in needs]
                if None in found:
                    break
                deps.append(tuple(found))  # type: ignore[arg-type]
                ordered.append(op)
                if provides is not None:
                    placed[provides] = len(ordered) - 1
                at += 1
                progressed = True
            cursor[s] = at
        if not progressed:  # a schedule bug, not a user mistake: say so
            raise RuntimeError("parsim: the pipeline schedule waits on itself")
    return ordered, deps
