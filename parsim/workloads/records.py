"""Typed metrics records: what a workload reports beside its latency and throughput.

A record is a frozen class of named figures with units in their names (``time_to_first_token_s``,
``bus_bandwidth_Bps``). Each field may say how people read it (``figure(label, show)``): the
report and the app print every labelled field of whatever records a prediction carries, in the
record's own order, without knowing the workload. ``as_dict`` flattens a record into the
``Prediction.metrics`` mapping that ``predict --json`` and the sweeps' tables have always had.

The records every workload may carry live here (``Throughput``, ``Scaling``); the others beside
the workload they describe (``serving.ServingMetrics``, ``collective.CollectiveMetrics``,
``parallel3d.ParallelMetrics``), each declared on its definition (``WorkloadDef.record``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from parsim.base import units

LABEL, SHOW = "label", "show"


def figure(label: str = "", show: Callable[[Any], str] = str) -> Any:
    """A record field read by people as ``label``: ``show(value)`` (no label: kept, not printed)."""
    return attrs.field(metadata={LABEL: label, SHOW: show})


@attrs.frozen
class Record:
    """The base of every metrics record."""

    def as_dict(self) -> dict[str, Any]:
        """The figures by name, as ``Prediction.metrics`` holds them."""
        return attrs.asdict(self, recurse=False)

    def texts(self) -> list[tuple[str, str]]:
        """``(label, text)`` of each labelled figure, in the record's order."""
        return [
            (field.metadata[LABEL], field.metadata[SHOW](getattr(self, field.name)))
            for field in attrs.fields(type(self))
            if field.metadata.get(LABEL)
        ]

    def table(self) -> tuple[list[str], list[list[str]]] | None:
        """Figures read as a table (headers, rows of texts) before the labelled ones, or None.

        A record of many related figures (a load's latency percentiles) prints them so; the
        report and the app draw whatever table a record gives, without knowing the workload.
        """
        return None


@attrs.frozen
class Throughput(Record):
    """Samples one second processes (the workloads that count samples: ``WorkloadDef.samples``)."""

    samples_per_s: float = figure("samples/s", lambda v: units.si(v, "/s"))


@attrs.frozen
class Scaling(Record):
    """A multi-GPU step against the same step on one GPU (``WorkloadDef.baseline``)."""

    speedup: float = figure("speed-up", lambda v: f"{v:.2f}x vs 1 GPU")
    efficiency: float = figure("efficiency", lambda v: f"{v:.0%}")
    serial_fraction: float = figure("serial part", lambda v: f"{v:.1%} (Amdahl, implied)")
    """Karp-Flatt: the serial fraction f for which Amdahl's 1 / (f + (1 - f) / G) gives the speed-up."""
    single_gpu_latency_s: float = figure()
