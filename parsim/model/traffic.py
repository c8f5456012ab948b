"""The bytes a program sends over links: its copies, and what its collectives move.

A copy moves its bytes once. A collective moves what its algorithm sends (``collectives.traffic``,
the rule the collective's time uses too): on a ring an all-reduce of a buffer sends ``2(n-1)/n`` of
it from each of its ``n`` GPUs, an all-gather or a reduce-scatter ``(n-1)/n``, half as much. The
collectives inside a pipeline's passes (``Block``) count too, each shape of pass worked out once.
So ZeRO's reduce-scatters and all-gather move exactly DDP's all-reduce bytes, while averaging on
the host (``data_parallel sync=host``: copies) moves ``2G`` buffers where a ring moves ``2(G-1)``.

The ops are counted as the workload lists them: a 3D-parallel step lists one representative GPU
per pipeline stage, so its figure is that of the representatives' groups, not of every GPU.
``traffic_notes`` says, per kind of collective, what each GPU sends, for the report.
"""

from __future__ import annotations

from collections.abc import Iterator

from parsim.base import units
from parsim.hardware.specs import SystemSpec
from parsim.model.collectives import ALL_REDUCE, SEND, Traffic, op_traffic, timing_key
from parsim.workloads.base import AllReduce, Block, Transfer, Workload


def collective_traffic(workload: Workload, system: SystemSpec) -> Iterator[Traffic]:
    """The traffic of every collective of ``workload`` on ``system``, in program order (a block's
    collectives each time the block runs)."""
    per_op: dict[tuple[object, ...], Traffic] = {}
    per_block: dict[int, tuple[Traffic, ...]] = {}  # thousands of passes share a few tuples

    def of(op: AllReduce) -> Traffic:
        shape = timing_key(op)
        found = per_op.get(shape)
        if found is None:
            found = per_op[shape] = op_traffic(system, op)
        return found

    for op in workload.ops:
        if isinstance(op, AllReduce):
            yield of(op)
        elif isinstance(op, Block) and op.collectives:
            key = id(op.collectives)  # the workload keeps the tuples alive: ids stay unique
            if key not in per_block:
                per_block[key] = tuple(of(collective) for collective in op.collectives)
            yield from per_block[key]


def link_bytes(workload: Workload, system: SystemSpec) -> float:
    """Bytes crossing links: every copy's, plus every collective's total (``Traffic.total_B``)."""
    copies = sum(op.nbytes for op in workload.ops if isinstance(op, Transfer))
    return copies + sum(t.total_B for t in collective_traffic(workload, system))


_SHARE = {ALL_REDUCE: "2(n-1)/n", SEND: "all"}
"""What each GPU sends of a buffer, in words (``(n-1)/n`` for the other collectives)."""


def traffic_notes(workload: Workload, system: SystemSpec) -> tuple[str, ...]:
    """One line per kind of collective, algorithm and group size: the buffers, and what each GPU
    sends of them (``"all-gather by ring over 8 GPUs (2 ops, 2 GB of buffers): each GPU sends 1.75
    GB, (n-1)/n of each buffer; 14 GB in all"``)."""
    groups: dict[tuple[str, str, int], list[Traffic]] = {}
    for t in collective_traffic(workload, system):
        if t.senders:
            groups.setdefault((t.kind, t.algorithm, t.ranks), []).append(t)
    lines = []
    for (kind, algorithm, ranks), items in groups.items():
        name = kind.replace("_", "-")
        ops = f"{len(items):,} op{'s' if len(items) > 1 else ''}"
        buffers = units.si(sum(t.buffer_B for t in items), "B")
        total = units.si(sum(t.total_B for t in items), "B")
        if kind == SEND:
            lines.append(f"{name} by {algorithm} ({ops}): {buffers}, each sent whole by one GPU to the next")
            continue
        each = units.si(sum(t.per_gpu_B for t in items), "B")
        share = _SHARE.get(kind, "(n-1)/n")
        lines.append(
            f"{name} by {algorithm} over {ranks} GPUs ({ops}, {buffers} of buffers): each GPU sends "
            f"{each}, {share} of each buffer; {total} in all"
        )
    return tuple(lines)
