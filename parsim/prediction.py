"""The answer parsim gives: a ``Prediction`` of how long a workload takes and why.

It is the one value every front end consumes (CLI ``--json``, the app, sweeps, validation),
so it is plain data: numbers with units in their names, a breakdown that adds up to the
latency, per-resource utilisation and the full trace the timeline plot draws.
"""

from __future__ import annotations

from typing import Any

import attrs

from parsim.timeline import TraceEvent


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
        transfer_bytes: bytes crossing the link.
        bottleneck: ``compute``, ``memory``, ``transfer`` or ``overhead``.
        breakdown: seconds per category, adding up to ``latency_s``.
        utilization: fraction of the latency each resource row was busy.
        trace: every busy interval, for the timeline.
        events: simulation events processed (0 for analytic).
        notes: plain-language remarks (wave quantisation, cache level, interpreter...).
        layers: per-layer rows for layered networks (name, kind, latency_s, flops, bytes).
        gpus: GPUs used.
        metrics: workload-specific figures (``samples_per_s``; for ``data_parallel`` also
            ``speedup``, ``efficiency`` and Amdahl's ``serial_fraction`` against one GPU).
    """

    workload: str
    params: dict
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
    breakdown: dict
    utilization: dict
    trace: tuple[TraceEvent, ...] = ()
    events: int = 0
    notes: tuple[str, ...] = ()
    layers: tuple[dict, ...] = ()
    gpus: int = 1
    metrics: dict = attrs.field(factory=dict)
    peer_link: str | None = None

    @property
    def flops_per_s(self) -> float:
        """Achieved FLOP/s over the whole latency."""
        return self.flops / self.latency_s if self.latency_s > 0 else 0.0

    @property
    def bytes_per_s(self) -> float:
        """Achieved memory bandwidth over the whole latency."""
        return self.bytes / self.latency_s if self.latency_s > 0 else 0.0

    def to_dict(self, trace: bool = False) -> dict[str, Any]:
        """Plain JSON-ready dict; the trace only when asked (it can be long)."""
        data = attrs.asdict(self, recurse=True, filter=lambda a, v: a.name != "trace")
        data["flops_per_s"] = self.flops_per_s
        data["bytes_per_s"] = self.bytes_per_s
        data["notes"] = list(self.notes)
        data["layers"] = list(self.layers)
        if trace:
            data["trace"] = [event._asdict() for event in self.trace]
        return data
