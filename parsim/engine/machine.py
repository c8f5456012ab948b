"""The simulated hardware: a processor that runs one kernel at a time, memory and links.

Resources are SimPy objects owned by one ``Machine`` (state is passed, never global):

- the *compute slot*: a kernel takes the whole processor; the next waits (FIFO);
- one fluid *memory server* per level (DRAM/HBM or the cache that holds the working set),
  shared max-min fairly by whatever streams bytes at the same time;
- per link direction, the *copy engines* (DMA units; a GPU with one engine cannot copy both
  ways at once) and a fluid *link server* (one for both directions on a half-duplex link).

A kernel runs phase by phase (see ``waves``): compute on the busy cores and its memory
traffic proceed together and the phase ends when both are done (overlap ``roofline``), or one
after the other (overlap ``serial``).
"""

from __future__ import annotations

import simpy

from parsim.engine.fluid import FluidServer
from parsim.engine.waves import decompose
from parsim.hardware.execution import execution
from parsim.hardware.specs import SystemSpec
from parsim.timeline import TraceEvent
from parsim.workloads.base import Kernel, Transfer


class Machine:
    """Resources of one simulated system, and the processes that use them.

    Args:
        env: the SimPy environment.
        system: host, device and link specs.
        mode: Flynn mode (already checked against the processor).
        overlap: ``roofline`` (compute and memory overlap) or ``serial`` (they add).
        trace: list the machine appends ``TraceEvent`` records to.
    """

    def __init__(
        self, env: simpy.Environment, system: SystemSpec, mode: str, overlap: str, trace: list[TraceEvent]
    ):
        self.env = env
        self.system = system
        self.spec = system.compute
        self.mode = mode
        self.overlap = overlap
        self.trace = trace
        self.notes: set[str] = set()
        self.compute_slot = simpy.Resource(env, capacity=1)
        self._memory: dict[str, FluidServer] = {}
        self._ports = self._build_ports() if system.link is not None else {}

    def _build_ports(self) -> dict[str, tuple[simpy.Resource, FluidServer, str]]:
        link = self.system.link
        engines = self.spec.copy_engines
        h2d_engine = simpy.Resource(self.env, capacity=max(1, engines // 2))
        d2h_engine = h2d_engine if engines < 2 else simpy.Resource(self.env, capacity=max(1, engines // 2))
        h2d_server = FluidServer(self.env, "h2d", link.bandwidth_Bps)
        d2h_server = h2d_server if not link.duplex else FluidServer(self.env, "d2h", link.bandwidth_Bps)
        family = "NVLink" if link.id.startswith("nvlink") else "PCIe"
        return {
            "h2d": (h2d_engine, h2d_server, f"{family} h2d"),
            "d2h": (d2h_engine, d2h_server, f"{family} d2h"),
        }

    def memory_server(self, level: str, capacity_Bps: float) -> FluidServer:
        """The fluid server of one memory level, created on first use."""
        if level not in self._memory:
            self._memory[level] = FluidServer(self.env, level, capacity_Bps)
        return self._memory[level]

    def run(self, op: Kernel | Transfer, waits: list[simpy.Event]):
        """Process: wait for ``waits`` (stream order, dependencies), then execute ``op``."""
        pending = [event for event in waits if event is not None and not event.processed]
        if pending:
            yield self.env.all_of(pending)
        if isinstance(op, Kernel):
            yield from self.run_kernel(op)
        else:
            yield from self.run_transfer(op)

    def run_kernel(self, kernel: Kernel):
        """Process: hold the processor and run the kernel's phases."""
        env, spec = self.env, self.spec
        ex = execution(spec, self.mode, kernel)
        plan = decompose(kernel, ex)
        name = kernel.name.split("[")[0]  # one note for all chunks of an offload
        if ex.level not in ("DRAM", "device memory"):
            self.notes.add(f"{name}: working set fits in {ex.level}, served at its bandwidth")
        level_capacity = (
            ex.level_bandwidth_Bps * spec.cores / ex.cores
            if ex.level not in ("DRAM", "device memory")
            else ex.level_bandwidth_Bps
        )
        server = self.memory_server(ex.level, level_capacity)
        unit = "SM" if spec.is_gpu else "core"
        with self.compute_slot.request() as slot:
            yield slot
            for index, phase in enumerate(plan.phases):
                start = env.now
                latency = spec.memory.latency_s if index == 0 and phase.bytes > 0 else 0.0
                cap = ex.bandwidth_Bps(phase.active_cores)
                if self.overlap == "serial":
                    yield env.timeout(phase.compute_s)
                    memory_start = env.now
                    yield env.process(self._memory_leg(server, phase.bytes, cap, latency))
                    memory_s = env.now - memory_start
                else:
                    memory_start = env.now
                    memory = env.process(self._memory_leg(server, phase.bytes, cap, latency))
                    compute = env.timeout(phase.compute_s)
                    yield env.all_of([memory, compute])
                    memory_s = memory.value
                kind = "compute" if phase.compute_s >= memory_s else "memory"
                if kind == "compute" and index == 0 and plan.tiles % plan.slots and plan.waves > 1:
                    self.notes.add(
                        f"{name}: {plan.waves:.2f} waves of {plan.slots} tiles; the tail wave is "
                        f"{plan.tiles % plan.slots}/{plan.slots} full (wave quantisation)"
                    )
                group = f"{unit} 0" if phase.active_cores == 1 else f"{unit} 0-{phase.active_cores - 1}"
                self.trace.append(TraceEvent(group, f"{kernel.name} {phase.label}", kind, start, env.now))
                if phase.bytes > 0:
                    self.trace.append(
                        TraceEvent(
                            f"memory ({ex.level})",
                            kernel.name,
                            "memory",
                            memory_start,
                            memory_start + memory_s,
                            detail=True,
                        )
                    )

    def _memory_leg(self, server: FluidServer, nbytes: float, cap_Bps: float, latency_s: float):
        start = self.env.now
        if latency_s:
            yield self.env.timeout(latency_s)
        yield server.transfer(nbytes, cap_Bps)
        return self.env.now - start

    def run_transfer(self, transfer: Transfer):
        """Process: take a copy engine, pay the link latency, stream the bytes."""
        link = self.system.link
        engine, server, row = self._ports[transfer.direction]
        bandwidth = link.bandwidth_Bps if transfer.pinned else link.pageable_bandwidth_Bps
        with engine.request() as request:
            yield request
            start = self.env.now
            yield self.env.timeout(link.latency_s)
            yield server.transfer(transfer.nbytes, bandwidth)
            self.trace.append(TraceEvent(row, transfer.name, "transfer", start, self.env.now))
