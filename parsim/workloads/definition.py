"""What a workload definition is: its parameters, its builder, and what is particular to it.

A ``WorkloadDef`` is registered once (a module of ``parsim.workloads`` lists its definitions in
``DEFINITIONS``; ``registry`` finds them) and carries everything the faces need to render the
workload without naming it: its validated parameters (a pydantic model), its builder, how it
spreads over GPUs, where it runs on a cluster, the typed metrics record it reports
(``records.Record``), the starting values a form shows, and its ``kind``: the key under which the
layers above register what needs the hardware (``results.hooks``: refusals, metrics, notes).

This module imports no workload: the workload modules import it, so the registry can import them
without a circle.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import attrs
from pydantic import BaseModel, ConfigDict, field_validator

from parsim.workloads.base import Params, Vectorised, Workload
from parsim.workloads.records import Record

Dtype = Literal["float16", "bfloat16", "float32", "float64"]
Figure = Literal["timeline", "roofline", "breakdown"]
"""The figures a prediction can be explained by (``parsim.plots``; the app's Explore tabs)."""
FIGURES: tuple[Figure, ...] = ("timeline", "roofline", "breakdown")
MAX_ELEMENTS = 10**15  # far beyond any memory: keeps typos like n=1e30 out of float overflow


class ParamsModel(BaseModel):
    """The base of every workload's parameter model: no unknown field, whole floats as integers."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    dtype: Dtype = "float32"

    @field_validator("*", mode="before")
    @classmethod
    def _whole_floats(cls, value: Any) -> Any:
        # "1e8" arrives as the float 1e8; integer fields accept it when it is whole.
        if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
            return int(value)
        return value


def _own_name(definition: WorkloadDef) -> str:
    return definition.name


@attrs.frozen
class WorkloadDef:
    """A registered workload: its parameters, its builder, and what it can do.

    Attributes:
        name: the id users type.
        params: the pydantic model of its parameters (bounds included).
        build: validated parameters -> ``Workload``.
        summary: one line for help texts.
        sizes: parameters a vectorised sweep may vary as arrays (``("n",)``, ``("m", "n", "k")``).
        vectorised: validated parameters (sizes as arrays) -> the quantities of its single op,
            for the vectorised analytic sweep; None where the workload is not one op.
        split: how ``--gpus G`` spreads it: ``items`` (independent items, 1/G each), ``batch``
            (the batch, which needs at least G samples), or None (it cannot be split).
        instead: what to use when it cannot be split (shown with the refusal).
        samples: validated parameters -> samples one instance processes (for ``samples_per_s``).
        baseline: validated parameters -> those of the one-GPU reference that speed-up,
            efficiency and Amdahl's serial fraction are measured against (multi-GPU workloads).
        family: workloads that stand in for one another in a lesson (``elementwise``).
        check: ``(name, given, validated) -> validated``: rules between fields that pydantic's
            per-field bounds cannot say (a sequence longer than the model's context), defaults
            that depend on other fields, and the removal of fields that do not apply.
        kind: the key the hardware-dependent parts are registered under (``results.hooks``);
            its name unless several definitions share them (the four collectives).
        record: the typed metrics record it reports beside latency and throughput, or None.
        cluster: parameters it takes by default on a cluster (``--cluster``) besides ``nodes``
            (and ``gpus``, where it owns them), or None: it does not run on a cluster.
        example: the values a form starts from (the app's Explore page), besides the defaults.
        figures: the figures that explain it, in the order the app shows them: a copy or a
            collective does no arithmetic, so a roofline says nothing about it.
        requests: validated parameters -> requests one prediction simulates, for a workload whose
            prediction is a request-level simulation of a server under load
            (``methods.serving.load``) rather than one program's run; None for a program.
            ``predict`` hands such a workload to that simulation, and counts its requests against
            the budget first (0: the count comes from a trace file, checked as it is read).
    """

    name: str
    params: type[ParamsModel]
    build: Callable[[Params], Workload]
    summary: str
    sizes: tuple[str, ...] = ()
    vectorised: Callable[[Params], Vectorised | None] | None = None
    split: Literal["items", "batch"] | None = None
    instead: str = ""
    samples: Callable[[Params], int] | None = None
    baseline: Callable[[Params], Params] | None = None
    family: str = ""
    check: Callable[[str, Params, Params], Params] | None = None
    kind: str = attrs.field(default=attrs.Factory(_own_name, takes_self=True))
    record: type[Record] | None = None
    cluster: tuple[tuple[str, object], ...] | None = None
    example: tuple[tuple[str, object], ...] = ()
    requests: Callable[[Params], int] | None = None
    figures: tuple[Figure, ...] = FIGURES

    @property
    def owns_gpus(self) -> bool:
        """The GPU count is one of its own parameters (``data_parallel gpus=G``)."""
        return "gpus" in self.params.model_fields

    def on_cluster(self, params: Params, nodes: int, gpus_per_node: int) -> Params:
        """``params`` with the cluster's defaults filled in: its ``nodes``, every GPU of a node
        where the workload owns its GPU count, then the definition's own (``cluster``).

        Raises:
            ValueError: the workload does not run on a cluster (the caller words the refusal).
        """
        if self.cluster is None:
            raise ValueError(f"{self.name} does not run on a cluster")
        given = dict(params)
        given.setdefault("nodes", nodes)  # the cluster's own size unless nodes= says otherwise
        if self.owns_gpus:
            given.setdefault("gpus", gpus_per_node)
        for key, value in self.cluster:
            given.setdefault(key, value)
        return given
