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
- **NVLS** (all-reduce inside one node of third-generation NVSwitches): the switch reduces; each
  GPU sends its buffer once and reads the result once (``model.nccl``).
- Each algorithm runs one of NCCL's protocols (LL, LL128, Simple: ``model.nccl``); ``auto`` takes
  the fastest (algorithm, protocol) pair, as NCCL's tuner does from its own cost model, with NCCL's
  own latency constants. A node whose GPUs have no peer access (``transport`` ``host``) stages
  every hop through host memory over PCIe.
- **Torus** (a TPU slice, ``SystemSpec.torus``): no NICs and no NCCL; ring phases along the
  torus' dimensions over the chips' ICI links (``model.torus``), whatever ``algorithm`` says.

``bus_bandwidth_Bps`` converts a time into nccl-tests' "bus bandwidth"
(its PERFORMANCE.md: algorithm bandwidth times ``2(n-1)/n`` for all-reduce, ``(n-1)/n`` for the
others), the figure that is comparable across GPU counts.
"""

from __future__ import annotations

import math

import attrs

from parsim.base.errors import ParsimError
from parsim.hardware.specs import LinkSpec, SystemSpec
from parsim.model import nccl
from parsim.model.torus import group_dims, torus_collective
from parsim.workloads.base import COLLECTIVE_LIBRARIES, AllReduce

ALL_REDUCE = "all_reduce"
SEND = "send"
LIBRARIES = COLLECTIVE_LIBRARIES
NCCL, KERNELS = LIBRARIES
COLLECTIVES = (ALL_REDUCE, "reduce_scatter", "all_gather", "all_to_all")
KINDS = (*COLLECTIVES, SEND)
"""What an ``AllReduce`` op may be: a collective, or a pipeline stage's send to the next (a group
of 2 GPUs: ``per_node`` 1 when they sit in different nodes)."""
ALGORITHMS = nccl.ALGORITHMS
PROTOCOLS = nccl.PROTOCOLS
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


def timing_key(op: AllReduce) -> tuple[object, ...]:
    """What ``op_timing``, ``op_traffic`` and ``group_of`` read of ``op``: ops equal in it take the
    same time and move the same bytes (a pipeline's sends differ only by their names), so callers
    cache per key."""
    return (op.kind, op.nbytes, op.ranks, op.per_node, op.algorithm, op.protocol, op.transport, op.library)


def op_timing(system: SystemSpec, op: AllReduce) -> Timing:
    """The time of a collective op on ``system`` (the engine and the analytic schedule both ask here)."""
    return collective(
        system, op.kind, op.nbytes, group_of(system, op), op.algorithm, op.protocol, op.transport, op.library
    )


@attrs.frozen
class Timing:
    """A collective's time: ``seconds`` = ``latency_s`` + ``bandwidth_s``, and the algorithm and
    NCCL protocol taken (``protocol`` empty where none applies: a send, a torus, one GPU)."""

    seconds: float
    latency_s: float
    bandwidth_s: float
    algorithm: str
    protocol: str = ""


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
    - ``nvls`` (all-reduce): each GPU sends its buffer to the switch once (and reads the result);
    - ``direct`` (all-to-all): each GPU sends ``(n-1)/n`` of its buffer, ``1/n`` to every peer;
    - ``p2p`` (send): one GPU sends the whole buffer.
    """
    if ranks <= 1:
        return Traffic(kind, "none", ranks, nbytes, 0.0, 0)
    senders = 1 if kind == SEND else ranks
    share = 1.0 if algorithm == "nvls" else ring_share(kind, ranks)
    return Traffic(kind, algorithm, ranks, nbytes, share * nbytes, senders)


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

    link: LinkSpec  # what joins the node's GPUs (NCCL's LL cap and LL128 go by it)
    intra_Bps: float
    intra_latency_s: float
    inter_Bps: float  # the group's GPUs of one node together, through their NIC shares
    gpu_inter_Bps: float  # one GPU's NIC share
    inter_latency_s: float
    spine: float  # what crossing leaf switches leaves of the inter-node bandwidth
    hop: str  # NCCL's latency row for a step inside a node: nvlink or pcie
    transport: str
    cross_socket: bool = False  # the group's peer-to-peer ring crosses the CPUs' socket link

    def hop_extra_s(self) -> float:
        """What each step inside a node adds to NCCL's constant when the ring crosses sockets."""
        return nccl.CROSS_SOCKET_HOP_EXTRA_S if self.cross_socket else 0.0

    def slowest_latency_s(self, nodes: int) -> float:
        return max(self.intra_latency_s, self.inter_latency_s) if nodes > 1 else self.intra_latency_s

    def rate_Bps(self, protocol: str, inter_Bps: float, algorithm: str = "ring", nodes: int = 1) -> float:
        """The slower level's rate under ``protocol`` (the LL cap applies to the NVLink level)."""
        inside = nccl.protocol_bandwidth_Bps(self.intra_Bps, protocol, self.link, algorithm, nodes)
        return min(inside, inter_Bps * nccl.share(self.link, algorithm, protocol, nodes))


def _fabric(system: SystemSpec, group: Group, transport: str = "p2p") -> _Fabric:
    ring = system.ring_link
    intra_Bps, hop = ring.bandwidth_Bps, nccl.hop_kind(ring)
    if transport == "host":  # no peer access: every hop goes down to host memory and back up
        ring, hop = system.host_link, "host"
        intra_Bps = nccl.staged_Bps(ring, min(system.gpus_per_switch, group.per_node), system.staged_Bps)
    # a peer-to-peer ring over PCIe through two sockets' root ports: its slowest hop crosses the
    # CPUs' socket link, at the rate measured between GPUs of different sockets
    spans = 0 < system.gpus_per_socket < group.per_node
    crosses = bool(transport == "p2p" and system.cross_socket_Bps and spans)
    if crosses:
        intra_Bps = min(intra_Bps, system.cross_socket_Bps)
    if group.nodes == 1 or system.torus:  # a torus joins every chip of every host by its links
        return _Fabric(ring, intra_Bps, ring.latency_s, math.inf, math.inf, 0.0, 1.0, hop, transport, crosses)
    if system.network is None:
        raise ParsimError(f"a collective over {group.nodes} nodes needs a network (--cluster)")
    share = system.network.gpu_share_Bps(system.gpus)
    return _Fabric(
        ring,
        intra_Bps if group.per_node > 1 else math.inf,
        ring.latency_s,
        group.per_node * share,
        share,
        system.network.nic.latency_s,
        system.network.spine_factor(group.nodes),
        hop,
        transport,
        crosses,
    )


def _ring(fabric: _Fabric, group: Group, kind: str, nbytes: float, protocol: str) -> nccl.Choice:
    """A ring under ``protocol``: NCCL's latency for its steps (those between nodes at the
    network's), each GPU's ring share of the buffer at the slower level's rate."""
    n, nodes = group.ranks, group.nodes
    steps, inter_steps = (2 * (n - 1), 2 * (nodes - 1)) if kind == ALL_REDUCE else (n - 1, nodes - 1)
    latency = nccl.ring_latency_s(protocol, steps, inter_steps, fabric.hop, fabric.link.id)
    latency += (steps - inter_steps) * fabric.hop_extra_s()
    bandwidth = ring_share(kind, n) * nbytes / fabric.rate_Bps(protocol, fabric.inter_Bps, "ring", nodes)
    return nccl.Choice("ring", protocol, latency, bandwidth)


def _tree(fabric: _Fabric, group: Group, nbytes: float, protocol: str) -> nccl.Choice:
    """NCCL's tree all-reduce: a chain inside each node, a double binary tree across nodes; each
    node sends and receives the whole buffer twice (reduce up, broadcast down)."""
    latency = nccl.tree_latency_s(protocol, group.per_node, group.nodes, fabric.hop, fabric.link.id)
    latency += 2 * (group.per_node - 1) * fabric.hop_extra_s()
    rate = fabric.rate_Bps(protocol, fabric.inter_Bps * fabric.spine, "tree", group.nodes)
    bandwidth = 2.0 * nbytes / rate
    return nccl.Choice("tree", protocol, latency, bandwidth)


def _nvls(fabric: _Fabric, nbytes: float) -> nccl.Choice:
    """NVLink SHARP inside one node: one switch round, the buffer up once and the result down once."""
    latency = nccl.nvls_latency_s(1, fabric.link.id)
    return nccl.Choice("nvls", "simple", latency, nbytes / nccl.nvls_bandwidth_Bps(fabric.link))


def _all_to_all(fabric: _Fabric, group: Group, nbytes: float, library: str = NCCL) -> Timing:
    """Each GPU's (n - 1)/n of the buffer to its peers, inside the node at the fabric's rate and
    across nodes at the network's, whichever takes longer; NCCL's own (``library``) pays its fixed
    start and its bus bandwidth over NVLink 5 (``nccl.A2A_START_S``), kernels writing the peers'
    buffers themselves (``KERNELS``: DeepEP, HybridEP) the fabric's."""
    n = group.ranks
    nccl_own = library == NCCL and group.per_node > 1
    start = nccl.all_to_all_start_s(fabric.link, nbytes) if nccl_own else 0.0
    latency = fabric.slowest_latency_s(group.nodes) + start
    rate = fabric.intra_Bps * (nccl.all_to_all_share(fabric.link) if nccl_own else 1.0)
    inside = (group.per_node - 1) / n * nbytes / rate if group.per_node > 1 else 0.0
    across = (
        (n - group.per_node) / n * nbytes / (fabric.gpu_inter_Bps * fabric.spine) if group.nodes > 1 else 0.0
    )
    bandwidth = max(inside, across)
    return Timing(latency + bandwidth, latency, bandwidth, "direct")


def _candidates(
    system: SystemSpec, fabric: _Fabric, group: Group, kind: str, nbytes: float, algorithm: str, protocol: str
) -> list[nccl.Choice]:
    """Every (algorithm, protocol) NCCL could run for this collective that the caller allows."""
    protocols = [p for p in nccl.protocols_on(fabric.link, fabric.transport) if protocol in ("auto", p)]
    if protocol != "auto" and not protocols:
        raise ParsimError(
            f"'protocol' {protocol} does not run on {fabric.link.id} (NCCL enables LL128 on NVLink only)"
        )
    choices = []
    if algorithm in ("auto", "ring"):
        choices += [_ring(fabric, group, kind, nbytes, p) for p in protocols]
    if kind == ALL_REDUCE and algorithm in ("auto", "tree"):
        tree_protocols = [p for p in protocols if nccl.runs(fabric.link, "tree", p, group.nodes)]
        choices += [_tree(fabric, group, nbytes, p) for p in tree_protocols]
    nvls_here = (
        kind == ALL_REDUCE
        and group.nodes == 1
        and fabric.transport == "p2p"
        and nccl.nvls_available(fabric.link, system.gpus, group.per_node)
    )
    if algorithm == "nvls" and not nvls_here:
        raise ParsimError(
            f"'algorithm' nvls needs an all-reduce inside one node of NVLink 4+ NVSwitches "
            f"(>= {nccl.NVLS_MIN_GPUS} GPUs, >= {nccl.NVLS_MIN_RANKS} in the group): "
            f"{fabric.link.id}, {group.per_node} GPUs"
        )
    if nvls_here and algorithm in ("auto", "nvls") and protocol in ("auto", "simple"):
        choices.append(_nvls(fabric, nbytes))
    return choices


def collective(
    system: SystemSpec,
    kind: str,
    nbytes: float,
    group: Group | None = None,
    algorithm: str = "auto",
    protocol: str = "auto",
    transport: str = "p2p",
    library: str = NCCL,
) -> Timing:
    """The time of collective ``kind`` over ``nbytes`` (the whole buffer, as nccl-tests sizes it;
    ``library``: NCCL or ``KERNELS``, which only an all-to-all tells apart).

    Raises:
        ParsimError: an unknown collective, algorithm, protocol or transport, a tree for anything
            but all-reduce, NVLS where no NVSwitch can run it, LL128 off NVLink.
    """
    if kind not in KINDS:
        raise ParsimError(f"'collective' must be one of {', '.join(COLLECTIVES)}: {kind!r}")
    if library not in LIBRARIES:
        raise ParsimError(f"'library' must be one of {', '.join(LIBRARIES)}: {library!r}")
    nccl.check(algorithm, protocol, transport)
    group = group if group is not None else whole_system(system)
    n = group.ranks
    if n == 1:
        return Timing(0.0, 0.0, 0.0, "none")
    if algorithm in ("tree", "nvls") and kind != ALL_REDUCE:
        raise ParsimError(f"'algorithm' {algorithm} applies to all_reduce only (NCCL runs {kind} as a ring)")
    if kind == SEND:
        return _send(system, group, nbytes)
    if system.torus and kind != "all_to_all":  # a TPU slice: rings along the torus' dimensions
        on_torus = torus_collective(kind, nbytes, group_dims(n, system.torus), system.ring_link)
        return Timing(on_torus.seconds, on_torus.latency_s, on_torus.bandwidth_s, TORUS)
    fabric = _fabric(system, group, transport)
    if kind == "all_to_all":
        return _all_to_all(fabric, group, nbytes, library)
    best = nccl.fastest(_candidates(system, fabric, group, kind, nbytes, algorithm, protocol))
    return Timing(best.seconds, best.latency_s, best.bandwidth_s, best.algorithm, best.protocol)


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
