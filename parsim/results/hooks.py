"""What a workload needs the hardware for, registered once per kind of workload.

A workload definition (``workloads.definition.WorkloadDef``) is below the model and knows no
device; what depends on one — refusing a system it cannot run on, the typed metrics read from a
prediction, notes on what the timeline shows — is registered here, from the module above the model
that computes it (``serving_figures``, ``cluster_figures``), keyed by the definition's ``kind``::

    register(serving.LLM_SERVE.kind, check=check_system, metrics=serve_metrics)

``predict`` asks ``catalog.hooks_for(definition)`` and calls whatever is there, for any workload:
no list of names anywhere. A kind is registered once; a second registration is refused.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from parsim.hardware.specs import SystemSpec
from parsim.results.prediction import Prediction
from parsim.workloads.base import Workload
from parsim.workloads.records import Record

Check = Callable[[Workload, SystemSpec], None]
"""Refuses (``ParsimError``) a system the workload cannot run on; runs before the capacity check."""
Metrics = Callable[[Workload, SystemSpec, Prediction], Record | None]
"""The workload's typed record read from its prediction (None: nothing to report for this one)."""
Notes = Callable[[Workload, SystemSpec], tuple[str, ...]]
"""Plain-language notes added to the prediction's."""


@attrs.frozen
class Hooks:
    """The hardware-dependent parts of one kind of workload (each optional)."""

    check: Check | None = None
    metrics: Metrics | None = None
    notes: Notes | None = None


NONE = Hooks()
_BY_KIND: dict[str, Hooks] = {}


def register(
    kind: str, *, check: Check | None = None, metrics: Metrics | None = None, notes: Notes | None = None
) -> None:
    """Register the hooks of workloads of ``kind`` (``WorkloadDef.kind``), once.

    Raises:
        ValueError: ``kind`` is registered already (two modules claiming one workload).
    """
    if kind in _BY_KIND:
        raise ValueError(f"the hooks of workload kind {kind!r} are registered twice")
    _BY_KIND[kind] = Hooks(check, metrics, notes)


def registered(kind: str) -> Hooks:
    """The hooks of ``kind`` (``NONE`` where nothing is registered)."""
    return _BY_KIND.get(kind, NONE)


def kinds() -> list[str]:
    """The kinds registered so far."""
    return list(_BY_KIND)
