"""The simulated system: the host CPU, its GPUs and the links between them.

``Machine`` owns one ``Processor`` for the host and one per GPU (a CPU-only system runs its
kernels on the host processor) and the ``Links``; it routes each op to the resource that runs
it: a kernel to its GPU (or to the host CPU for ``device = HOST``), a copy to the links, an
all-reduce to the ring. State is passed in, never global.
"""

from __future__ import annotations

from collections.abc import Callable

import simpy

from parsim.base.caching import cached
from parsim.hardware.specs import SystemSpec
from parsim.methods.engine.fluid import Process
from parsim.methods.engine.links import Links
from parsim.methods.engine.notes import Notes
from parsim.methods.engine.processor import KernelTimes, Processor, kernel_s
from parsim.model.blocks import block_parts
from parsim.model.comm_sms import beside_collective_s
from parsim.model.kernel import shape
from parsim.model.placement import host_mode
from parsim.results import resources
from parsim.results.resources import Resource
from parsim.results.timeline import TraceEvent
from parsim.stack import FrameworkSpec
from parsim.workloads.base import HOST, AllReduce, Block, Kernel, Op


class Machine:
    """Resources of one simulated system, and the processes that use them.

    Args:
        env: the SimPy environment.
        system: host, devices and link specs.
        mode: Flynn mode of the processor that runs the kernels (already checked).
        overlap: ``roofline`` or ``serial``.
        trace: list the machine appends ``TraceEvent`` records to.
        record: build kernel trace records at all (off for throughput runs).
        framework: the framework the program runs in (a block's kernels pay its cost to issue).
    """

    def __init__(
        self,
        env: simpy.Environment,
        system: SystemSpec,
        mode: str,
        overlap: str,
        trace: list[TraceEvent],
        record: bool = True,
        framework: FrameworkSpec | None = None,
    ):
        self.env = env
        self.notes = Notes()
        self.system, self.mode, self.overlap, self.framework = system, mode, overlap, framework
        self.trace = trace
        self._block_times: dict[tuple[int, int], tuple[Block, tuple[float, float]]] = {}
        self._kernel_trace = kernel_trace = trace if record else None
        cpu_only = system.device is None
        self._host: Processor | None = None
        if cpu_only:
            self.devices = [self.host]
            self.links: Links | None = None
        else:
            shared = KernelTimes()  # the GPUs are alike
            self.devices = [
                Processor(
                    env,
                    system.gpu,
                    mode,
                    overlap,
                    kernel_trace,
                    system,
                    g,
                    self.notes,
                    framework,
                    shared,
                )
                for g in range(system.gpus)
            ]
            self.links = Links(env, system, trace)

    @property
    def host(self) -> Processor:
        """The host CPU's processor, made at its first kernel: beside GPUs most programs give it
        none (a resource schedules nothing until it is used, so when it is made changes no run)."""
        if self._host is None:
            system = self.system
            self._host = Processor(
                self.env,
                system.host,
                host_mode(system, self.mode),
                self.overlap,
                self._kernel_trace,
                system,
                HOST,
                self.notes,
            )
        return self._host

    def processor(self, kernel: Kernel) -> Processor:
        return self.host if kernel.device == HOST else self.devices[kernel.device]

    def run(self, op: Op, waits: list[simpy.Event], finish: Callable[[], None]) -> Process:
        """Process: wait for ``waits`` (stream order, dependencies), execute ``op``, call ``finish``."""
        yield from self._wait(waits)
        if isinstance(op, Kernel):
            yield from self.processor(op).run_chain([op], [self.env.now])
        elif isinstance(op, AllReduce):
            yield from self._links().all_reduce(op)
        elif isinstance(op, Block):
            yield from self._block(op)
        else:
            yield from self._links().copy(op)
        finish()

    def run_chain(
        self,
        kernels: list[Kernel],
        issue_s: list[float],
        waits: list[simpy.Event],
        finish: Callable[[], None],
        dispatch_s: float = 0.0,
        host_row: Resource | None = None,
    ) -> Process:
        """Process: after ``waits``, run a chain of kernels of one stream, then call ``finish``."""
        yield from self._wait(waits)
        yield from self.processor(kernels[0]).run_chain(kernels, issue_s, dispatch_s, host_row)
        finish()

    def _block(self, op: Block) -> Process:
        """A block holds its GPU for its kernels, then for its collectives (``model.blocks``)."""
        # a step's passes share a few kernel tuples: look each up once per simulation, by identity
        # (the entry keeps the op, so the tuples it names stay alive and their ids unique)
        key = (id(op.kernels), id(op.collectives))
        if key not in self._block_times:
            self._block_times[key] = (
                op,
                engine_block_parts(
                    self.system, self.mode, self.overlap, self.framework, op.kernels, op.collectives
                ),
            )
        compute, communication = self._block_times[key][1]
        start = self.env.now
        links = self.links
        if links is not None and not self.system.torus and 0 <= op.device < len(links.collective_until):
            overlap = links.collective_until[op.device] - start  # NCCL's channels hold some SMs
            compute = beside_collective_s(compute, overlap, self.system.gpu.cores)
        yield self.env.timeout(compute + communication)
        cores = resources.cores(self.system, op.device, self.system.gpu.cores)
        self.trace.append(
            TraceEvent(cores, op.name, "compute", start, start + compute, layer=op.layer, op=op)
        )
        if communication > 0:
            ring = resources.ring(self.system, op.device)
            self.trace.append(
                TraceEvent(
                    ring, f"{op.name} tp", "transfer", start + compute, self.env.now, layer=op.layer, op=op
                )
            )

    def _links(self) -> Links:
        if self.links is None:  # only copies and all-reduces get here, and they need a GPU
            raise RuntimeError("parsim engine: a copy was routed to a system without links")
        return self.links

    def _wait(self, waits: list[simpy.Event]) -> Process:
        pending = [event for event in waits if not event.processed]
        if len(pending) == 1:  # one event needs no condition around it (a pipeline's passes)
            yield pending[0]
        elif pending:
            yield self.env.all_of(pending)


@cached(maxsize=4096)
def engine_block_parts(
    system: SystemSpec,
    mode: str,
    overlap: str,
    framework: FrameworkSpec | None,
    kernels: tuple[Kernel, ...],
    collectives: tuple[AllReduce, ...],
) -> tuple[float, float]:
    """A block shape's compute and communication seconds with the engine's kernel times (waves)."""
    spec = system.gpu
    return block_parts(
        system, framework, kernels, collectives, lambda kernel: kernel_s(spec, mode, overlap, shape(kernel))
    )
