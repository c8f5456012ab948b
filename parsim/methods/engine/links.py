"""Links between host and GPUs: copy engines, shared switch uplinks, and the all-reduce ring.

Each GPU has its own copy engines (DMA units; with only one it cannot copy both ways at
once: ``model.placement`` says which lane a copy takes). Bytes then flow through a fluid server
per direction of a duplex link (one for both ways otherwise), and GPUs behind one PCIe switch
share that switch's uplink to the host: eight GPUs sending gradients at once each get an
eighth of it. A copy costs the link latency, then its bytes at no more than the pinned (or
pageable) bandwidth.

For collectives every GPU has an outgoing port to its ring neighbour (NVLink, or PCIe
peer-to-peer), and in a cluster the node's NICs carry them to the other nodes (the timeline's
network row). A stream's collectives run on one communicator, which NCCL executes in order: they
never overlap one another, so each takes exactly its closed form (``model.collectives``: ring or
tree, inside a node or across nodes) — one timeout, not 2(G-1) x G sends, which keeps a step
with hundreds of tensor-parallel all-reduces, or a bucketed gradient sync, fast.
"""

from __future__ import annotations

import simpy

from parsim.hardware.specs import SystemSpec
from parsim.methods.engine.fluid import FluidServer, Process
from parsim.model.collectives import SEND, group_of, op_timing
from parsim.model.placement import BOTH_WAYS, engine_lane, engines_per_lane, link_lane
from parsim.model.transfer import copy_bandwidth_Bps, copy_latency_s, uplink_bandwidth_Bps
from parsim.results import resources
from parsim.results.timeline import TraceEvent
from parsim.workloads.base import SYNC_STREAM, AllReduce, Transfer


class Links:
    """Copy engines, switch uplinks and ring ports of a system with GPUs.

    Args:
        env: the SimPy environment.
        system: the system (device, link, gpus, gpus_per_switch).
        trace: list to append busy intervals to.
    """

    def __init__(self, env: simpy.Environment, system: SystemSpec, trace: list[TraceEvent]):
        self.env = env
        self.link = system.host_link
        self.gpus = system.gpus
        self.trace = trace
        self.system = system
        # a GPU's copy engines and a switch's uplinks are made at their first copy (a program
        # without copies, or a 16,384-GPU step that copies on a few GPUs, makes none): a resource
        # schedules nothing until it is used, so when it is made does not change the run
        self._engines: dict[int, dict[str, simpy.Resource]] = {}
        self._uplinks: dict[int, dict[str, FluidServer]] = {}
        self._per_switch = system.gpus_per_switch
        self.ring_link = system.ring_link
        self._nics: dict[int, FluidServer] = {}
        self.collective_until = [0.0] * system.gpus
        """Per GPU, when the collective it runs now ends (by its closed form): the SMs its NCCL
        channels hold until then (``model.comm_sms``)."""

    def _copy_engines(self, device: int) -> dict[str, simpy.Resource]:
        """GPU ``device``'s copy engines by direction (one lane both ways with a single engine)."""
        gpu, directions = self.system.gpu, ("h2d", "d2h")
        engines = {
            lane: simpy.Resource(self.env, capacity=engines_per_lane(gpu))
            for lane in dict.fromkeys(engine_lane(gpu, d) for d in directions)
        }
        made = self._engines[device] = {d: engines[engine_lane(gpu, d)] for d in directions}
        return made

    def _switch_uplinks(self, index: int) -> dict[str, FluidServer]:
        """Switch ``index``'s uplink to the host by direction (one both ways on a half-duplex link)."""
        directions = ("h2d", "d2h")
        uplinks = {
            lane: FluidServer(
                self.env,
                f"switch {index} {'h2d' if lane == BOTH_WAYS else lane}",
                uplink_bandwidth_Bps(self.link, "h2d" if lane == BOTH_WAYS else lane),
            )
            for lane in dict.fromkeys(link_lane(self.link, d) for d in directions)
        }
        made = self._uplinks[index] = {d: uplinks[link_lane(self.link, d)] for d in directions}
        return made

    def copy(self, transfer: Transfer) -> Process:
        """Process: take a copy engine, pay the latency, stream through the switch uplink."""
        link = self.link
        bandwidth = copy_bandwidth_Bps(link, transfer.pinned, transfer.direction, transfer.nbytes)
        switch = transfer.device // self._per_switch
        uplinks = self._uplinks.get(switch) or self._switch_uplinks(switch)
        server = uplinks[transfer.direction]
        engines = self._engines.get(transfer.device) or self._copy_engines(transfer.device)
        with engines[transfer.direction].request() as request:
            yield request
            start = self.env.now
            yield self.env.timeout(copy_latency_s(link, transfer.pinned, transfer.direction))
            yield server.transfer(transfer.nbytes, bandwidth)
            self.trace.append(
                TraceEvent(
                    resources.link(self.system, transfer.device, transfer.direction),
                    transfer.name,
                    "transfer",
                    start,
                    self.env.now,
                    layer=transfer.layer,
                    op=transfer,
                )
            )

    def all_reduce(self, op: AllReduce) -> Process:
        """Process: the collective's closed form. NCCL runs one communicator's collectives in
        order; here each GPU stream's collectives are one communicator, and stream order already
        serialises them.

        Between nodes the bandwidth part streams through the GPU's share of its node's NICs, a
        fluid server: a pipeline's sends and a data-parallel all-reduce of the same GPU share it.
        """
        if self.system.total_gpus == 1:
            return
        timing = op_timing(self.system, op)
        group = group_of(self.system, op)
        start = self.env.now
        # a pipeline's point-to-point send runs on the one or two channels NCCL gives a peer
        # (NCCL_NCHANNELS_PER_NET_PEER / p2p channels per peer: 2 SMs of 108-132), too few to
        # count: only collectives hold the SMs of ``model.comm_sms``; a step's data-parallel buckets
        # beside the passes (``dp_overlap``) are left out, as the recurrence leaves them
        holds_sms = op.kind != SEND and op.stream != SYNC_STREAM
        for g in self._ring_rows(op) if holds_sms else ():
            if g < len(self.collective_until):  # a pipeline stage's GPU may stand for others
                self.collective_until[g] = max(self.collective_until[g], start + timing.seconds)
        network = self.system.network
        across = group.nodes > 1 and not self.system.torus  # a TPU slice's torus joins its hosts itself
        if across and network is not None:
            share = network.gpu_share_Bps(self.system.gpus)
            yield self.env.timeout(timing.latency_s)
            yield self._nic(op.device, share).transfer(timing.bandwidth_s * share, share)
        else:
            yield self.env.timeout(timing.seconds)
        rows = [resources.ring(self.system, g) for g in self._ring_rows(op)]
        if self.system.nodes > 1 and across:
            rows.append(resources.network(self.system))  # the node's NICs carry it to the other nodes
        for row in rows:
            self.trace.append(
                TraceEvent(row, op.name, "transfer", start, self.env.now, layer=op.layer, op=op)
            )

    def _ring_rows(self, op: AllReduce) -> range:
        """The GPUs whose ring port shows the op: every simulated GPU, or the op's own GPU."""
        return range(self.gpus) if op.device < 0 else range(op.device, op.device + 1)

    def _nic(self, device: int, share: float) -> FluidServer:
        if device not in self._nics:
            self._nics[device] = FluidServer(self.env, f"GPU{device} NIC", share)
        return self._nics[device]
