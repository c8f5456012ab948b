"""The answer parsim gives: a ``Prediction`` of how long a workload takes and why.

It is the one value every front end consumes (CLI ``--json``, the app, sweeps, validation),
so it is plain data: numbers with units in their names, a breakdown that adds up to the
latency, per-resource utilisation and the full trace the timeline plot draws. It is immutable
all the way down (mappings are ``FrozenMap``, sequences tuples): predictions are cached and
shared, so no caller may change what the next one gets.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

import attrs

from parsim.base.frozen import FrozenMap, freeze, plain
from parsim.model.footprint import MemoryBreakdown
from parsim.results.resources import Resource
from parsim.results.timeline import TraceEvent
from parsim.workloads.records import Record

R = TypeVar("R", bound=Record)


def _events(value: Iterable[TraceEvent]) -> tuple[TraceEvent, ...]:
    return tuple(value)


def _notes(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


def _records(value: Iterable[Record]) -> tuple[Record, ...]:
    return tuple(value)


@attrs.frozen
class Prediction:
    """Predicted performance of one workload on one system.

    Attributes:
        workload: workload id.
        params: its validated parameters.
        device: id of the processor that ran the kernels.
        host: id of the host CPU.
        link: id of the host<->device link, or None.
        peer_link: id of the GPU-to-GPU link (NVLink) when there is one.
        mode: Flynn mode used.
        method: ``engine`` (SimPy) or ``analytic`` (closed forms).
        latency_s: time of one instance, issue to completion.
        throughput_per_s: instances per second when issued back to back.
        flops: floating-point operations of one instance.
        bytes: memory traffic of the kernels (bytes read + written).
        transfer_bytes: bytes crossing links: copies, and what the collectives send by their
            algorithm (``model.traffic.link_bytes``).
        bottleneck: ``compute``, ``memory``, ``transfer`` or ``overhead``.
        breakdown: seconds per category, adding up to ``latency_s``.
        busy: fraction of the latency each resource was busy (``utilization`` names them).
        trace: every busy interval, for the timeline.
        events: simulation events processed (0 for analytic).
        notes: plain-language remarks (wave quantisation, cache level, interpreter...).
        layers: per-layer rows for layered networks (name, kind, latency_s, flops, bytes).
        gpus: GPUs used (in all nodes).
        nodes: nodes of a cluster (1 for one machine).
        metrics: the workload's own figures by name, flattened from ``records``
            (``samples_per_s``, ``speedup``, ``time_to_first_token_s``...): what JSON carries.
        peer_link: id of the GPU-to-GPU link, or None.
        memory: what fills each executing processor's memory, part by part, against its capacity
            (``model.footprint``); None when the prediction was not checked against one.
        records: the workload's own figures as typed records (``workloads.records``: samples/s,
            scaling against one GPU, and the record its definition declares), in that order.
        executed_flops: what the chosen algorithms execute when it is fewer than ``flops``: a
            Winograd or FFT convolution does fewer multiplications than the direct convolution
            ``flops`` counts (the *effective* FLOPs frameworks report); None when they agree.
    """

    workload: str
    params: Mapping[str, Any] = attrs.field(converter=freeze)
    device: str
    host: str
    link: str | None
    mode: str
    method: str
    latency_s: float
    throughput_per_s: float
    flops: float
    bytes: float
    transfer_bytes: float
    bottleneck: str
    breakdown: Mapping[str, float] = attrs.field(converter=freeze)
    busy: Mapping[Resource, float] = attrs.field(converter=freeze)
    trace: tuple[TraceEvent, ...] = attrs.field(default=(), converter=_events)
    events: int = 0
    notes: tuple[str, ...] = attrs.field(default=(), converter=_notes)
    layers: tuple[Mapping[str, Any], ...] = attrs.field(default=(), converter=freeze)
    gpus: int = 1
    nodes: int = 1
    metrics: Mapping[str, float] = attrs.field(init=False)
    peer_link: str | None = None
    memory: MemoryBreakdown | None = None
    records: tuple[Record, ...] = attrs.field(default=(), converter=_records)
    executed_flops: float | None = None

    def __attrs_post_init__(self) -> None:
        flat: dict[str, float] = {}
        for record in self.records:
            flat.update(record.as_dict())
        object.__setattr__(self, "metrics", FrozenMap(flat))

    def but(self, **changes: Any) -> Prediction:
        """This prediction with ``changes`` (``attrs.evolve``'s result): a copy of its slots, only
        the changed fields converted as the constructor converts them (``evolve`` converts every
        field again, a training step's per-layer rows among them; ``predict`` changes two or
        three fields of each prediction), its metrics made again where its records change."""
        new = _new(Prediction)
        for field in _FIELDS:
            name = field.name
            if name == "metrics":  # derived from the records, below
                continue
            if name in changes:
                value = changes.pop(name)
                converter: Any = field.converter  # attrs types it as a Converter; ours are plain callables
                _set(new, name, value if converter is None else converter(value))
            else:
                _set(new, name, getattr(self, name))
        if changes:  # ``metrics`` is derived, and anything else is no field
            raise TypeError(f"Prediction.but() got unexpected fields: {', '.join(changes)}")
        if new.records is self.records:
            _set(new, "metrics", self.metrics)
        else:
            new.__attrs_post_init__()
        return new

    def record(self, kind: type[R]) -> R:
        """The record of type ``kind`` (``prediction.record(ServingMetrics).time_to_first_token_s``).

        Raises:
            KeyError: the prediction carries none (another workload's figure was asked for).
        """
        for record in self.records:
            if isinstance(record, kind):
                return record
        raise KeyError(f"{self.workload} reports no {kind.__name__}")

    @property
    def utilization(self) -> Mapping[str, float]:
        """Fraction of the latency each resource row was busy, by row label (``"SM"``, ``"host"``)."""
        return FrozenMap({resource.label: share for resource, share in self.busy.items()})

    @property
    def flops_per_s(self) -> float:
        """Achieved FLOP/s over the whole latency."""
        return self.flops / self.latency_s if self.latency_s > 0 else 0.0

    @property
    def executed_flops_per_s(self) -> float:
        """FLOP/s the hardware executed: below ``flops_per_s`` when an algorithm such as Winograd
        does fewer multiplications than the effective count (which may then exceed the peak)."""
        executed = self.flops if self.executed_flops is None else self.executed_flops
        return executed / self.latency_s if self.latency_s > 0 else 0.0

    @property
    def bytes_per_s(self) -> float:
        """Achieved memory bandwidth over the whole latency."""
        return self.bytes / self.latency_s if self.latency_s > 0 else 0.0

    def to_dict(self, trace: bool = False) -> dict[str, Any]:
        """Plain JSON-ready dict; the trace only when asked (it can be long)."""
        data: dict[str, Any] = {}
        for field in attrs.fields(Prediction):
            if field.name == "busy":
                data["utilization"] = dict(self.utilization)
            elif field.name == "memory":
                data["memory"] = self.memory.to_dict() if self.memory is not None else None
            elif field.name not in ("trace", "records"):  # records: flattened into ``metrics``
                data[field.name] = plain(getattr(self, field.name))
        data["flops_per_s"] = self.flops_per_s
        data["bytes_per_s"] = self.bytes_per_s
        if trace:
            data["trace"] = [event.to_dict() for event in self.trace]
        return data


_FIELDS = attrs.fields(Prediction)
_new, _set = object.__new__, object.__setattr__
