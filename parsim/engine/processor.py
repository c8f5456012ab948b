"""One simulated processor: a compute slot, its memory levels, and how a kernel runs on it.

A kernel takes the whole processor (the next one waits, FIFO) and runs phase by phase (see
``waves``): compute on the busy cores and its memory traffic proceed together and the phase
ends when both are done (overlap ``roofline``), or one after the other (overlap ``serial``).
Each memory level (DRAM/HBM, or the cache that holds the working set) is a fluid server, so
anything else streaming from the same level at the same time shares its bandwidth.
"""

from __future__ import annotations

import functools

import simpy

from parsim.engine.fluid import FluidServer
from parsim.engine.waves import Decomposition, decompose
from parsim.hardware.execution import Execution, execution
from parsim.hardware.specs import ProcessorSpec
from parsim.timeline import TraceEvent
from parsim.workloads.base import Kernel

MAIN_MEMORY = ("DRAM", "device memory")


@functools.lru_cache(maxsize=8192)
def plan(spec: ProcessorSpec, mode: str, kernel: Kernel) -> tuple[Execution, Decomposition]:
    """Rates and phases of ``kernel`` (cached: training steps repeat the same kernels)."""
    ex = execution(spec, mode, kernel)
    return ex, decompose(kernel, ex)


class Processor:
    """A CPU socket or a GPU as SimPy resources.

    Args:
        env: the SimPy environment.
        spec: what the processor is.
        mode: Flynn mode its kernels run in.
        overlap: ``roofline`` or ``serial``.
        trace: list to append busy intervals to.
        prefix: row prefix that tells several GPUs apart (``"GPU3 "``), empty for one.
        notes: set collecting plain-language remarks.
    """

    def __init__(
        self,
        env: simpy.Environment,
        spec: ProcessorSpec,
        mode: str,
        overlap: str,
        trace: list[TraceEvent],
        prefix: str,
        notes: set[str],
    ):
        self.env = env
        self.spec = spec
        self.mode = mode
        self.overlap = overlap
        self.trace = trace
        self.prefix = prefix
        self.notes = notes
        self.slot = simpy.Resource(env, capacity=1)
        self._memory: dict[str, FluidServer] = {}

    def memory_server(self, ex: Execution) -> FluidServer:
        """The fluid server of the level serving ``ex``, created on first use."""
        if ex.level not in self._memory:
            capacity = ex.level_bandwidth_Bps
            if ex.level not in MAIN_MEMORY:  # cache bandwidth was scaled to the active cores
                capacity = ex.level_bandwidth_Bps * self.spec.cores / ex.cores
            self._memory[ex.level] = FluidServer(self.env, ex.level, capacity)
        return self._memory[ex.level]

    def run_kernel(self, kernel: Kernel):
        """Process: hold the processor and run the kernel's phases."""
        env, spec = self.env, self.spec
        ex, decomposition = plan(spec, self.mode, kernel)
        name = kernel.name.split("[")[0]  # one note for all chunks of an offload
        if ex.level not in MAIN_MEMORY:
            self.notes.add(f"{name}: working set fits in {ex.level}, served at its bandwidth")
        server = self.memory_server(ex)
        unit = "SM" if spec.is_gpu else "core"
        with self.slot.request() as slot:
            yield slot
            for index, phase in enumerate(decomposition.phases):
                start = env.now
                latency = spec.memory.latency_s if index == 0 and phase.bytes > 0 else 0.0
                cap = ex.bandwidth_Bps(phase.active_cores)
                if self.overlap == "serial":
                    yield env.timeout(phase.compute_s)
                    memory_start = env.now
                    memory_s = yield env.process(self._memory_leg(server, phase.bytes, cap, latency))
                else:
                    memory_start = env.now
                    memory = env.process(self._memory_leg(server, phase.bytes, cap, latency))
                    yield env.all_of([memory, env.timeout(phase.compute_s)])
                    memory_s = memory.value
                kind = "compute" if phase.compute_s >= memory_s else "memory"
                if kind == "compute" and index == 0:
                    self._note_quantisation(name, decomposition)
                cores = f"{unit} 0" if phase.active_cores == 1 else f"{unit} 0-{phase.active_cores - 1}"
                self.trace.append(
                    TraceEvent(
                        f"{self.prefix}{cores}",
                        f"{kernel.name} {phase.label}",
                        kind,
                        start,
                        env.now,
                        layer=kernel.layer,
                    )
                )
                if phase.bytes > 0:
                    self.trace.append(
                        TraceEvent(
                            f"{self.prefix}memory ({ex.level})",
                            kernel.name,
                            "memory",
                            memory_start,
                            memory_start + memory_s,
                            detail=True,
                        )
                    )

    def _note_quantisation(self, name: str, plan: Decomposition) -> None:
        tail = plan.tiles % plan.slots
        if tail and plan.waves > 1:
            self.notes.add(
                f"{name}: {plan.waves:.2f} waves of {plan.slots} tiles; "
                f"the tail wave is {tail}/{plan.slots} full (wave quantisation)"
            )

    def _memory_leg(self, server: FluidServer, nbytes: float, cap_Bps: float, latency_s: float):
        start = self.env.now
        if latency_s:
            yield self.env.timeout(latency_s)
        yield server.transfer(nbytes, cap_Bps)
        return self.env.now - start
