"""The network between nodes: NICs, how many each node has, and the fat tree above them.

A cluster is ``nodes`` identical machines (a ``SystemSpec`` each: host, GPUs, their NVLink or
PCIe fabric) joined by a network. Each node has ``nics_per_node`` network cards of one kind
(``NicSpec``: InfiniBand, RoCE or Ethernet); all of a node's GPUs take part in every collective at
once (the groups of a symmetric parallel step run side by side), so each GPU has an equal share of
its node's NICs: ``nics_per_node x nic bandwidth / gpus_per_node``.

The nodes hang off leaf switches, ``nodes_per_leaf`` each, and the leaves off spine switches. An
``oversubscription`` of 2 means a leaf has half as much bandwidth up to the spine as down to its
nodes, so traffic between leaves gets half of what a NIC could send. A ring all-reduce hardly
feels it (each leaf passes only one node's worth of ring edges up), trees and all-to-all do.
"""

from __future__ import annotations

import attrs

from parsim.base.checks import BANDWIDTH, SECONDS, one_of, preset_id, text, whole_within, within
from parsim.base.errors import field_error


@attrs.frozen(cache_hash=True)
class NicSpec:
    """One network card's port as collectives use it.

    Attributes:
        id: preset id (``ib-hdr``).
        name: human-readable name.
        bandwidth_Bps: effective payload bandwidth per direction (what ``ib_write_bw`` measures).
        peak_bandwidth_Bps: the data rate after line encoding, per direction.
        latency_s: one-way latency of a small message through the NIC, a switch and back out
            (``ib_send_lat``), plus the host-side proxy cost a collective library pays per hop.
    """

    id: str = attrs.field(validator=text)
    name: str = attrs.field(validator=text)
    bandwidth_Bps: float = attrs.field(validator=BANDWIDTH)
    peak_bandwidth_Bps: float = attrs.field(validator=BANDWIDTH)
    latency_s: float = attrs.field(validator=SECONDS)

    def __attrs_post_init__(self) -> None:
        if self.bandwidth_Bps > self.peak_bandwidth_Bps * 1.0001:
            raise field_error(
                "bandwidth_Bps", f"<= peak_bandwidth_Bps ({self.peak_bandwidth_Bps:g})", self.bandwidth_Bps
            )


@attrs.frozen(cache_hash=True)
class NetworkSpec:
    """The inter-node network: a NIC kind, how many per node, and the two-level fat tree.

    Attributes:
        nic: the network card.
        nics_per_node: cards per node (a DGX has one per GPU: "rail-optimised").
        nodes_per_leaf: nodes under one leaf switch (a DGX SuperPOD scalable unit: 20 or 32).
        oversubscription: leaf downlink over uplink bandwidth (1 = non-blocking).
    """

    nic: NicSpec
    nics_per_node: int = attrs.field(validator=whole_within(1, 1024))  # NVL72: 72 per rack
    nodes_per_leaf: int = attrs.field(default=32, validator=whole_within(1, 4096))
    oversubscription: float = attrs.field(default=1.0, validator=within(1.0, 64.0))

    def node_Bps(self) -> float:
        """Everything one node can send at once (all its NICs)."""
        return self.nics_per_node * self.nic.bandwidth_Bps

    def gpu_share_Bps(self, gpus_per_node: int) -> float:
        """One GPU's share of its node's NICs when every GPU of the node communicates at once."""
        return self.node_Bps() / gpus_per_node

    def spine_factor(self, nodes: int) -> float:
        """What crossing leaves leaves of a NIC's bandwidth: 1 within one leaf, else 1/oversubscription."""
        return 1.0 if nodes <= self.nodes_per_leaf else 1.0 / self.oversubscription


_part_id = preset_id("a preset id such as a100-80gb")


@attrs.frozen(cache_hash=True)
class ClusterSpec:
    """A cluster as a buyer describes it: a node (GPUs, their fabric, the host) times ``nodes``.

    Attributes:
        id: preset id (``dgx-a100``) or a free name for a user file.
        name: human-readable name.
        device: the GPU preset of every node.
        gpus_per_node: GPUs in one node.
        fabric: the link preset joining a node's GPUs: an NVLink (through NVSwitch) or a PCIe
            generation (peer-to-peer through the PCIe switches).
        host: the CPU preset of every node.
        host_link: the host<->GPU link preset; None takes the GPU's usual link.
        gpus_per_switch: GPUs sharing one PCIe switch uplink to the host.
        gpus_per_socket: where a node's GPUs hang off two or more CPU sockets' root ports, how
            many each socket holds (0: one socket, or a fabric that does not cross the CPUs).
        cross_socket_Bps: the peer-to-peer rate per direction between GPUs of different sockets
            (half of p2pBandwidthLatencyTest's bidirectional figure); 0: the fabric's own rate.
        staged_Bps: p2pBandwidthLatencyTest's bidirectional figure with peer access off (copies
            staged through host memory, both directions together); 0: not measured.
        network: NICs and switches between nodes.
        nodes: nodes when a prediction does not say (``nodes=`` on the command line).
        torus_dims: 2 or 3 where every chip of every node is joined by the ``fabric`` into one
            torus of that many dimensions (a TPU slice: ICI between hosts too, the NICs only reach
            other slices); 0 for a cluster whose nodes talk over their NICs.
    """

    id: str = attrs.field(validator=text)
    name: str = attrs.field(validator=text)
    device: str = attrs.field(validator=_part_id)
    gpus_per_node: int = attrs.field(validator=whole_within(1, 1024))  # an NVLink rack: 72
    fabric: str = attrs.field(validator=_part_id)
    host: str = attrs.field(validator=_part_id)
    network: NetworkSpec
    host_link: str | None = attrs.field(default=None, validator=attrs.validators.optional(_part_id))
    gpus_per_switch: int = attrs.field(default=4, validator=whole_within(1, 64))
    gpus_per_socket: int = attrs.field(default=0, validator=whole_within(0, 1024))
    cross_socket_Bps: float = attrs.field(default=0.0, validator=within(0.0, 1e15, "B/s"))
    staged_Bps: float = attrs.field(default=0.0, validator=within(0.0, 1e15, "B/s"))
    nodes: int = attrs.field(default=1, validator=whole_within(1, 1_000_000))
    torus_dims: int = attrs.field(default=0, validator=one_of((0, 2, 3)))


def torus_shape(chips: int, dims: int) -> tuple[int, ...]:
    """The most balanced ``dims``-dimensional torus of ``chips`` chips, largest edge first (64 chips in
    3D: 4x4x4; 128: 8x4x4; 256 in 2D: 16x16), as TPU slices are shaped."""
    if dims <= 1:
        return (chips,)
    best: tuple[int, ...] | None = None
    for edge in range(1, chips + 1):
        if chips % edge or edge**dims > chips:
            continue
        shape = tuple(sorted((edge, *torus_shape(chips // edge, dims - 1)), reverse=True))
        if best is None or (max(shape), sum(shape)) < (max(best), sum(best)):
            best = shape
    assert best is not None
    return best
