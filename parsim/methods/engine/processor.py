"""One simulated processor: a compute slot, and how a chain of kernels runs on it.

A kernel takes the whole processor (the next one waits, FIFO) and runs phase by phase (see
``waves``): compute on the busy cores and the phase's memory traffic proceed together and the
phase ends when both are done (overlap ``roofline``), or one after the other (``serial``).
The memory leg is the level's latency plus the bytes at the bandwidth the busy cores can
draw: ``min(level bandwidth, active cores x per-core ceiling)`` (Little's law caps one core), or
what the phase's threads keep in flight allows (``memory.Level.stream_s``).
Because a kernel holds its processor alone, nothing else draws on that memory meanwhile, so
the phase time is exact in closed form; bandwidth that *is* shared (copies from several GPUs
meeting in a switch uplink, ring traffic) goes through fluid servers in ``links``.

The host issues a stream's kernels one after another; as long as nothing outside the stream
depends on the kernels in between, the whole run is one *chain*: each kernel starts at
``max(its issue time, the previous kernel's end)``, computed in one step. A ResNet step is
then a handful of events per GPU, while the trace still shows every kernel and phase.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import simpy

from parsim.base.caching import cached
from parsim.hardware.specs import ProcessorSpec, SystemSpec
from parsim.methods.engine.fluid import Process
from parsim.methods.engine.notes import Notes
from parsim.methods.engine.waves import Decomposition, decompose
from parsim.model.kernel import choose, fork_join_s, overlap_norm, shape
from parsim.model.memory import MAIN_MEMORY, main_memory_name
from parsim.model.rates import Execution, execution
from parsim.model.roofline import combine
from parsim.results import resources
from parsim.results.resources import Resource
from parsim.results.timeline import TraceEvent
from parsim.stack import FrameworkSpec
from parsim.workloads.base import Kernel

_event = functools.partial(tuple.__new__, TraceEvent)  # a TraceEvent from its nine fields in order


class Plan(NamedTuple):
    """How a kernel runs: the library's algorithm, the kernel it then is, its rates and its phases
    (a named tuple, as ``waves.Phase``: one per shape of every prediction)."""

    algorithm: str
    kernel: Kernel
    ex: Execution
    decomposition: Decomposition
    fork_join_s: float  # the model's cost of spreading it over the cores (``model.kernel.fork_join_s``)


def plan(spec: ProcessorSpec, mode: str, overlap: str, kernel: Kernel) -> Plan:
    """How ``kernel`` runs (cached by shape: training steps repeat the same kernels)."""
    return _plan(spec, mode, overlap, shape(kernel))


@cached(maxsize=16384)
def _plan(spec: ProcessorSpec, mode: str, overlap: str, kernel: Kernel) -> Plan:
    algorithm, runs = choose(spec, mode, overlap, kernel)
    ex = execution(spec, mode, runs)
    fork_join = float(fork_join_s(spec, ex, runs.work.work_items))
    return Plan(algorithm, runs, ex, decompose(runs, ex, spec), fork_join)


# The timings below are cached by shape and take the kernel as its shape (``model.kernel.shape``:
# what the processors pass): they ask ``_plan`` with it directly, not through ``plan``, which would
# derive the shape of a shape again (a training step has ~125 shapes, each asked several times).
# A named kernel given to them gets the same figures (a plan depends on the costs alone).


@cached(maxsize=16384)
def phase_times(
    spec: ProcessorSpec, mode: str, overlap: str, kernel: Kernel
) -> tuple[tuple[float, float, float], ...]:
    """``(compute_s, memory_s, duration_s)`` of each phase; the first phase that moves bytes pays
    the latency. The duration is the model's one roofline rule (``model.roofline.combine``): a GEMM
    library's smooth roofline (``LibrarySpec.gemm_overlap_norm``) joins the phase's own
    multiply-adds and main memory; its padded tiles, or a tile waiting on its operands from the
    shared cache, stay a hard floor."""
    how = _plan(spec, mode, overlap, kernel)
    runs, ex = how.kernel, how.ex
    norm = overlap_norm(spec, runs)
    # a phase's numbers are plain numbers (never a sweep's arrays): ``Level.stream_s``'s scalar
    # path called at once, and ``combine``'s max or sum spelt out (the same operations, so the
    # same seconds); a library's smooth roofline still goes through ``combine``
    stream = ex.memory._scalar_stream_s
    access = runs.access
    plain = overlap != "serial" and norm == math.inf
    times, latency_paid = [], False
    for phase in how.decomposition.phases:
        memory_s = 0.0
        if phase.bytes > 0:
            memory_s = stream(
                spec,
                phase.bytes,
                access.cold_bytes / runs.bytes,
                phase.active_cores,
                runs.work.work_items * phase.bytes / runs.bytes,  # the phase's share of the elements
                access.thread_loads_B,
                access.bandwidth_share,
                access.core_in_flight_B,
            )
            if not latency_paid:
                memory_s += spec.memory.latency_s
                latency_paid = True
        compute_s = phase.compute_s
        if plain:  # ``maximum``: the first where they tie
            duration = float(compute_s if compute_s >= memory_s else memory_s)
        else:
            duration = float(combine(compute_s, memory_s, overlap, norm, phase.arithmetic_s))
        times.append((compute_s, memory_s, duration))
    return tuple(times)


def kernel_fork_join_s(spec: ProcessorSpec, mode: str, overlap: str, kernel: Kernel) -> float:
    """The model's fork/join cost of spreading this kernel over the cores."""
    return plan(spec, mode, overlap, kernel).fork_join_s


@cached(maxsize=16384)
def kernel_s(spec: ProcessorSpec, mode: str, overlap: str, kernel: Kernel) -> float:
    """Duration of the whole kernel (fork/join and all phases)."""
    phases = sum(duration for _, _, duration in phase_times(spec, mode, overlap, kernel))
    return _plan(spec, mode, overlap, kernel).fork_join_s + phases


RecordIds = tuple[int, int, int, int]
"""A kernel's four records by identity: they are alive while the program that holds the kernel
runs, so the ids name them; equal records that are not one object only miss a table."""


class KernelTimes:
    """Kernel durations (a throughput run) and layouts (a traced run) by ``RecordIds``, shared by the
    processors of one spec, mode, overlap and framework: the GPUs of a data-parallel step run the
    same kernels, each GPU its own copy of them with the same records."""

    __slots__ = ("durations", "layouts")

    def __init__(self) -> None:
        self.durations: dict[RecordIds, float] = {}
        self.layouts: dict[RecordIds, _Layout] = {}


class Processor:
    """A CPU socket or a GPU as a SimPy resource.

    Args:
        env: the SimPy environment.
        spec: what the processor is.
        mode: Flynn mode its kernels run in.
        overlap: ``roofline`` or ``serial``.
        trace: list to append busy intervals to, or None to record nothing (a throughput run).
        system: the system it belongs to (names its timeline rows).
        device: the GPU index it is, or ``HOST`` for the host CPU.
        notes: collector of plain-language remarks.
        framework: the framework whose kernels it runs: each holds the processor at least its
            floor (``FrameworkSpec.floor``); None: the roofline alone.
        shared: kernel times shared with the processors of the same spec, mode, overlap and
            framework (``KernelTimes``); None: its own.
    """

    def __init__(
        self,
        env: simpy.Environment,
        spec: ProcessorSpec,
        mode: str,
        overlap: str,
        trace: list[TraceEvent] | None,
        system: SystemSpec,
        device: int,
        notes: Notes,
        framework: FrameworkSpec | None = None,
        shared: KernelTimes | None = None,
    ):
        self.env = env
        self.framework = framework
        self.spec = spec
        self.mode = mode
        self.overlap = overlap
        self.trace = trace
        self.system = system
        self.device = device
        self.notes = notes
        self._rows: dict[int | str, Resource] = {}  # busy-core count or memory level -> its row
        self.slot = simpy.Resource(env, capacity=1)
        self._durations: dict[int, float] = {}  # by id: the same kernel objects recur in every instance
        shared = shared or KernelTimes()
        self._by_records, self._layouts = shared.durations, shared.layouts

    def run_chain(
        self,
        kernels: list[Kernel],
        issue_s: list[float],
        dispatch_s: float = 0.0,
        host_row: Resource | None = None,
    ) -> Process:
        """Process: hold the processor and run ``kernels`` back to back.

        Args:
            kernels: the chain, in stream order.
            issue_s: when the host finished issuing each kernel (asynchronous launches); empty
                for a synchronous host, which issues each kernel after the previous one ends.
            dispatch_s: the synchronous host's cost per kernel.
            host_row: timeline row of the synchronous host's issue intervals.
        """
        with self.slot.request() as slot:
            yield slot
            clock = self.env.now
            if self.trace is None and issue_s:  # a throughput run: durations alone, no trace
                durations = self._durations
                for kernel, issued in zip(kernels, issue_s, strict=True):
                    duration = durations.get(id(kernel))
                    if duration is None:
                        duration = self._duration(kernel)
                    clock = max(clock, issued) + duration
                yield self.env.timeout(clock - self.env.now)
                return
            for index, kernel in enumerate(kernels):
                if issue_s:
                    clock = max(clock, issue_s[index])
                else:
                    if self.trace is not None and host_row is not None:
                        self.trace.append(
                            TraceEvent(
                                host_row, f"issue {kernel.name}", "overhead", clock, clock + dispatch_s
                            )
                        )
                    clock += dispatch_s
                clock = self._place(kernel, clock)
            yield self.env.timeout(clock - self.env.now)

    def _place(self, kernel: Kernel, start: float) -> float:
        """Append the kernel's phases to the trace from ``start``; return its end."""
        if self.trace is None:
            duration = self._durations.get(id(kernel))
            if duration is None:
                duration = self._duration(kernel)
            return start + duration
        records = (id(kernel.work), id(kernel.access), id(kernel.library), id(kernel.issue))
        layout = self._layouts.get(records)  # ``RecordIds``: the kernel's cost
        if layout is None:
            layout = self._layouts[records] = _layout(self.spec, self.mode, self.overlap, shape(kernel))
        if layout.quantised or layout.level not in MAIN_MEMORY:
            note = kernel.name.split("[")[0]  # one note for all chunks of an offload
            if layout.level not in MAIN_MEMORY:
                self.notes.cached(note, layout.level)
            if layout.quantised:
                self.notes.quantised(note, *layout.quantised)
        append, rows, layer, name = self.trace.append, self._rows, kernel.layer, kernel.name
        for cores, label, kind, begin, end, weight, memory in layout.phases:
            # TraceEvent's fields in order, made as the tuple it is (a traced step makes thousands)
            row = rows.get(cores) or self._row(cores)
            append(
                _event(
                    (row, f"{name} {label}", kind, start + begin, start + end, False, layer, weight, kernel)
                )
            )
            if memory is not None:
                row = rows.get(layout.level) or self._row(layout.level)
                append(
                    _event((row, name, "memory", start + memory[0], start + memory[1], True, "", 1.0, kernel))
                )
        framework = self.framework  # ``_floor``, inlined: a traced step places ~500 kernels
        if framework is None:
            return start + layout.duration_s
        return start + framework.floor(layout.duration_s, kernel.issue.multi_tensor)

    def _duration(self, kernel: Kernel) -> float:
        """The kernel's time held with its floor, kept by identity: the same kernel recurs in every
        instance of a throughput run."""
        records = (id(kernel.work), id(kernel.access), id(kernel.library), id(kernel.issue))
        duration = self._by_records.get(records)
        if duration is None:
            duration = self._by_records[records] = self._floor(
                kernel, kernel_s(self.spec, self.mode, self.overlap, shape(kernel))
            )
        self._durations[id(kernel)] = duration
        return duration

    def _floor(self, kernel: Kernel, seconds: float) -> float:
        return self.framework.floor(seconds, kernel.issue.multi_tensor) if self.framework else seconds

    def _row(self, what: int | str) -> Resource:
        """The row of ``what`` busy cores, or of a memory level, made once per processor."""
        if isinstance(what, int):
            row = resources.cores(self.system, self.device, what)
        else:
            row = resources.memory(self.system, self.device, what)
        self._rows[what] = row
        return row


# busy cores, label, kind, start, end, share of cores busy, the memory leg's (start, end) or None
_Phase = tuple[int, str, str, float, float, float, tuple[float, float] | None]


class _Layout(NamedTuple):
    """A kernel's phases relative to its start: busy cores, labels, kinds and times (cached by shape;
    a named tuple, as ``Plan``)."""

    level: str
    duration_s: float
    phases: tuple[_Phase, ...]
    quantised: tuple[float, int, int] | None


@cached(maxsize=16384)
def _layout(spec: ProcessorSpec, mode: str, overlap: str, kernel: Kernel) -> _Layout:
    how = _plan(spec, mode, overlap, kernel)
    ex, decomposition = how.ex, how.decomposition
    clock = how.fork_join_s
    phases: list[_Phase] = []
    quantised: tuple[float, int, int] | None = None
    if clock:
        busy = max(p.active_cores for p in decomposition.phases)
        phases.append((busy, "fork/join", "overhead", 0.0, clock, busy / spec.cores, None))
    for index, (phase, (compute_s, memory_s, duration)) in enumerate(
        zip(decomposition.phases, phase_times(spec, mode, overlap, kernel), strict=True)
    ):
        kind = "compute" if compute_s >= memory_s else "memory"  # ``leg`` of two numbers
        tail = 0 if decomposition.shared_tail else decomposition.tiles % decomposition.slots
        if kind == "compute" and index == 0 and tail and decomposition.waves > 1:
            quantised = (decomposition.waves, decomposition.slots, tail)
        memory = None
        if phase.bytes > 0:
            memory_start = clock + compute_s if overlap == "serial" else clock
            memory = (memory_start, memory_start + memory_s)
        phases.append(
            (
                phase.active_cores,
                phase.label,
                kind,
                clock,
                clock + duration,
                phase.active_cores / spec.cores,
                memory,
            )
        )
        clock += duration
    return _Layout(_row_level(spec, kernel, ex.memory.name or ""), clock, tuple(phases), quantised)


def _row_level(spec: ProcessorSpec, kernel: Kernel, level: str) -> str:
    """The memory row a kernel's memory leg is drawn on: the level that serves most of its bytes.

    ``level`` serves the warm bytes; the cold ones (a decode GEMM's weights, read once) always come
    from main memory, so a kernel whose bytes are mostly cold is drawn on the device-memory row,
    not on the cache that holds its few warm bytes.
    """
    if level in MAIN_MEMORY or kernel.access.cold_bytes * 2 <= kernel.bytes:
        return level
    return main_memory_name(spec)
