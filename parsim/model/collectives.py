"""Collectives as NCCL performs them, in closed form: ring and tree, inside a node and across nodes.

A collective runs over a *group* of GPUs: ``ranks`` in all, ``per_node`` of them in each node
(tensor-parallel peers share a node; a data-parallel group of a 3D-parallel run has one or a few
GPUs per node). Inside a node the GPUs talk over the node's GPU fabric (NVLink through NVSwitch,
or PCIe peer-to-peer); between nodes over their NICs, each GPU owning an equal share of its node's
cards (``NetworkSpec.gpu_share_Bps``).

- **Ring** (all-reduce, reduce-scatter, all-gather): every GPU sends ``2(n-1)/n`` of the buffer
  for an all-reduce, ``(n-1)/n`` for the others (``ring_share``: the time's bandwidth term and
  ``traffic``, the bytes each algorithm moves, use the same share). NCCL runs one ring per
  channel and spreads the channels over the NICs, so a node's inter-node edges carry its GPUs'
  share of the NICs and the NVLink edges the rest; the chunks are pipelined, so the slower of the
  two sets the pace. Each of the ``2(n-1)`` steps waits for the slowest hop's latency: across
  thousands of GPUs the ring's latency term is milliseconds.
- **Tree** (all-reduce only): NCCL chains the GPUs of a node and joins the nodes in a double
  binary tree. Each node sends and receives the whole buffer twice (reduce up, broadcast down),
  as the ring does, but the latency grows with ``log2(nodes)``, not with the GPU count; the tree's
  edges cross leaf switches, so an oversubscribed spine slows it (``NetworkSpec.spine_factor``).
- **All-to-all**: each GPU sends ``1/n`` of its buffer to every other GPU; what goes to another
  node goes through its NIC share (and the spine).
- ``auto`` takes the faster of ring and tree, as NCCL's tuner does from its own cost model.
- **Torus** (a TPU slice, ``SystemSpec.torus``): no NICs and no NCCL; ring phases along the
  torus' dimensions over the chips' ICI links (``model.torus``), whatever ``algorithm`` says.

Inside one node the ring is exactly ``transfer.ring_all_reduce_s``: ``2(G-1)`` steps of the link's
latency plus one chunk. ``bus_bandwidth_Bps`` converts a time into nccl-tests' "bus bandwidth"
(its PERFORMANCE.md: algorithm bandwidth times ``2(n-1)/n`` for all-reduce, ``(n-1)/n`` for the
others), the figure that is comparable across GPU counts.
"""

from __future__ import annotations

import math

import attrs

from parsim.base.errors import ParsimError
from parsim.hardware.specs import SystemSpec
from parsim.model.torus import group_dims, torus_collective
from parsim.model.transfer import ring_all_reduce_s
from parsim.workloads.base import AllReduce

ALL_REDUCE = "all_reduce"
SEND = "send"
COLLECTIVES = (ALL_REDUCE, "reduce_scatter", "all_gather", "all_to_all")
KINDS = (*COLLECTIVES, SEND)
"""What an ``AllReduce`` op may be: a collective, or a pipeline stage's send to the next (a group
of 2 GPUs: ``per_node`` 1 when they sit in different nodes)."""
ALGORITHMS = ("auto", "ring", "tree")
TORUS = "torus"
"""What a collective on a TPU slice's torus reports as its algorithm."""


@attrs.frozen
class Group:
    """The GPUs of one collective: ``ranks`` in all, ``per_node`` in each node they span."""

    ranks: int
    per_node: int

    def __attrs_post_init__(self) -> None:
        if self.ranks < 1 or self.per_node < 1 or self.ranks % self.per_node:
            raise ParsimError(
                f"a collective group needs per_node ({self.per_node}) dividing ranks ({self.ranks})"
            )

    @property
    def nodes(self) -> int:
        return self.ranks // self.per_node


def whole_system(system: SystemSpec) -> Group:
    """Every GPU of every node (what ``nccl-tests`` runs over)."""
    return Group(system.total_gpus, system.gpus)


def group_of(system: SystemSpec, op: AllReduce) -> Group:
    """The group an op names (its ``ranks`` and ``per_node``), every GPU of the system by default."""
    ranks = op.ranks or system.total_gpus
    per_node = op.per_node or min(ranks, system.gpus)
    return Group(ranks, per_node)


def op_timing(system: SystemSpec, op: AllReduce) -> Timing:
    """The time of a collective op on ``system`` (the engine and the analytic schedule both ask here)."""
    return collective(system, op.kind, op.nbytes, group_of(system, op), op.algorithm)


@attrs.frozen
class Timing:
    """A collective's time: ``seconds`` = ``latency_s`` + ``bandwidth_s``, and the algorithm taken."""

    seconds: float
    latency_s: float
    bandwidth_s: float
    algorithm: str


@attrs.frozen
class Traffic:
    """The bytes a collective moves: ``per_gpu_B`` from each of its ``senders``, ``total_B`` over
    all its links (``buffer_B``: the buffer as nccl-tests sizes it; ``algorithm``: the one taken)."""

    kind: str
    algorithm: str
    ranks: int
    buffer_B: float
    per_gpu_B: float
    senders: int

    @property
    def total_B(self) -> float:
        return self.per_gpu_B * self.senders


def traffic(kind: str, nbytes: float, ranks: int, algorithm: str = "ring") -> Traffic:
    """The bytes collective ``kind`` of an ``nbytes`` buffer over ``ranks`` GPUs moves by ``algorithm``.

    - ``ring``: each GPU sends its ring share (``ring_share``): an all-gather or a reduce-scatter
      moves half what an all-reduce of the same buffer does;
    - ``tree`` (all-reduce): the buffer goes up the tree (reduce) and down (broadcast), once over
      each of its ``n-1`` edges each way: ``2(n-1)`` buffers in all, the ring's total, carried over
      ``log2`` steps instead of ``2(n-1)`` (its busiest GPU sends ``2 x`` the buffer, which the
      time's bandwidth term prices);
    - ``direct`` (all-to-all): each GPU sends ``(n-1)/n`` of its buffer, ``1/n`` to every peer;
    - ``p2p`` (send): one GPU sends the whole buffer.
    """
    if ranks <= 1:
        return Traffic(kind, "none", ranks, nbytes, 0.0, 0)
    senders = 1 if kind == SEND else ranks
    return Traffic(kind, algorithm, ranks, nbytes, ring_share(kind, ranks) * nbytes, senders)


def op_traffic(system: SystemSpec, op: AllReduce) -> Traffic:
    """The bytes collective ``op`` moves on ``system``, by the algorithm its timing takes."""
    group = group_of(system, op)
    algorithm = op_timing(system, op).algorithm if group.ranks > 1 else "none"
    return traffic(op.kind, op.nbytes, group.ranks, algorithm)


def ring_share(kind: str, ranks: int) -> float:
    """Of a buffer, what each GPU of ``ranks`` sends on a ring: ``2(n-1)/n`` for an all-reduce (a
    reduce-scatter, then an all-gather), ``(n-1)/n`` for a reduce-scatter, an all-gather or an
    all-to-all, the whole buffer for a send; nothing on one GPU."""
    if ranks <= 1:
        return 0.0
    if kind == SEND:
        return 1.0
    return 2.0 * (ranks - 1) / ranks if kind == ALL_REDUCE else (ranks - 1) / ranks


def bus_factor(kind: str, ranks: int) -> float:
    """nccl-tests' factor from algorithm bandwidth to bus bandwidth (its PERFORMANCE.md): the
    ring's share of the buffer each GPU sends, whatever algorithm ran, so that bus bandwidth
    compares with the hardware's link speed across GPU counts (sendrecv: 1)."""
    return ring_share(kind, ranks)


def algorithm_bandwidth_Bps(nbytes: float, seconds: float) -> float:
    """nccl-tests' algorithm bandwidth: the buffer over the collective's time (0 when it took none)."""
    return nbytes / seconds if seconds > 0 else 0.0


def bus_bandwidth_Bps(kind: str, nbytes: float, seconds: float, ranks: int) -> float:
    """nccl-tests' bus bandwidth of a collective of ``nbytes`` that took ``seconds``."""
    return algorithm_bandwidth_Bps(nbytes, seconds) * bus_factor(kind, ranks)


@attrs.frozen
class _Fabric:
    """The two levels a group's traffic crosses: inside a node and between nodes."""

    intra_Bps: float
    intra_latency_s: float
    inter_Bps: float  # the group's GPUs of one node together, through their NIC shares
    gpu_inter_Bps: float  # one GPU's NIC share
    inter_latency_s: float
    spine: float  # what crossing leaf switches leaves of the inter-node bandwidth

    def slowest_latency_s(self, nodes: int) -> float:
        return max(self.intra_latency_s, self.inter_latency_s) if nodes > 1 else self.intra_latency_s


def _fabric(system: SystemSpec, group: Group) -> _Fabric:
    ring = system.ring_link
    if group.nodes == 1 or system.torus:  # a torus joins every chip of every host by its links
        return _Fabric(ring.bandwidth_Bps, ring.latency_s, math.inf, math.inf, 0.0, 1.0)
    if system.network is None:
        raise ParsimError(f"a collective over {group.nodes} nodes needs a network (--cluster)")
    share = system.network.gpu_share_Bps(system.gpus)
    return _Fabric(
        ring.bandwidth_Bps if group.per_node > 1 else math.inf,
        ring.latency_s,
        group.per_node * share,
        share,
        system.network.nic.latency_s,
        system.network.spine_factor(group.nodes),
    )


def _ring(fabric: _Fabric, group: Group, steps: int, sent_B: float) -> Timing:
    """``steps`` ring steps, each GPU sending ``sent_B`` in all, paced by the slower level."""
    latency = steps * fabric.slowest_latency_s(group.nodes)
    bandwidth = sent_B / min(fabric.intra_Bps, fabric.inter_Bps)
    return Timing(latency + bandwidth, latency, bandwidth, "ring")


def _tree(fabric: _Fabric, group: Group, nbytes: float) -> Timing:
    """NCCL's tree all-reduce: a chain inside each node, a double binary tree across nodes."""
    depth = math.ceil(math.log2(group.nodes)) if group.nodes > 1 else 0
    latency = 2.0 * (depth * fabric.inter_latency_s + (group.per_node - 1) * fabric.intra_latency_s)
    bandwidth = 2.0 * nbytes / min(fabric.intra_Bps, fabric.inter_Bps * fabric.spine)
    return Timing(latency + bandwidth, latency, bandwidth, "tree")


def _all_to_all(fabric: _Fabric, group: Group, nbytes: float) -> Timing:
    n = group.ranks
    latency = fabric.slowest_latency_s(group.nodes)
    inside = (group.per_node - 1) / n * nbytes / fabric.intra_Bps if group.per_node > 1 else 0.0
    across = (
        (n - group.per_node) / n * nbytes / (fabric.gpu_inter_Bps * fabric.spine) if group.nodes > 1 else 0.0
    )
    bandwidth = max(inside, across)
    return Timing(latency + bandwidth, latency, bandwidth, "direct")


def collective(
    system: SystemSpec, kind: str, nbytes: float, group: Group | None = None, algorithm: str = "auto"
) -> Timing:
    """The time of collective ``kind`` over ``nbytes`` (the whole buffer, as nccl-tests sizes it).

    Raises:
        ParsimError: an unknown collective or algorithm, or a tree for anything but all-reduce.
    """
    if kind not in KINDS:
        raise ParsimError(f"'collective' must be one of {', '.join(COLLECTIVES)}: {kind!r}")
    if algorithm not in ALGORITHMS:
        raise ParsimError(f"'algorithm' must be one of {', '.join(ALGORITHMS)}: {algorithm!r}")
    group = group if group is not None else whole_system(system)
    n = group.ranks
    if n == 1:
        return Timing(0.0, 0.0, 0.0, "none")
    if algorithm == "tree" and kind != ALL_REDUCE:
        raise ParsimError(f"'algorithm' tree applies to all_reduce only (NCCL runs {kind} as a ring)")
    if kind == SEND:
        return _send(system, group, nbytes)
    if system.torus and kind != "all_to_all":  # a TPU slice: rings along the torus' dimensions
        on_torus = torus_collective(kind, nbytes, group_dims(n, system.torus), system.ring_link)
        return Timing(on_torus.seconds, on_torus.latency_s, on_torus.bandwidth_s, TORUS)
    fabric = _fabric(system, group)
    if kind == "all_to_all":
        return _all_to_all(fabric, group, nbytes)
    if kind != ALL_REDUCE:
        return _ring(fabric, group, n - 1, ring_share(kind, n) * nbytes)
    if group.nodes == 1 and algorithm != "tree":
        seconds = float(ring_all_reduce_s(system.ring_link, nbytes, n))  # one rule for a node's ring
        latency = 2 * (n - 1) * system.ring_link.latency_s
        return Timing(seconds, latency, seconds - latency, "ring")
    ring = _ring(fabric, group, 2 * (n - 1), ring_share(kind, n) * nbytes)
    if algorithm == "ring":
        return ring
    tree = _tree(fabric, group, nbytes)
    return tree if algorithm == "tree" or tree.seconds < ring.seconds else ring


def _send(system: SystemSpec, group: Group, nbytes: float) -> Timing:
    """One GPU sending ``nbytes`` to a GPU of the next pipeline stage: through its NIC share
    between nodes, over the node's GPU fabric inside one."""
    if group.nodes > 1 and not system.torus:
        if system.network is None:
            raise ParsimError("a send between nodes needs a network (--cluster)")
        latency, rate = system.network.nic.latency_s, system.network.gpu_share_Bps(system.gpus)
    else:
        latency, rate = system.ring_link.latency_s, system.ring_link.bandwidth_Bps
    return Timing(latency + nbytes / rate, latency, nbytes / rate, "p2p")
