"""Collectives on their own, as ``nccl-tests`` runs them: one operation over every GPU of a system.

``parsim predict allreduce bytes=1e9 --cluster dgx-h100 nodes=16`` times one all-reduce of a
1 GB buffer over the 128 GPUs, by ring or tree (NCCL's choice, or the one named), and reports
the *bus bandwidth* nccl-tests prints, so the prediction can be held against a real
``all_reduce_perf`` run. ``reduce_scatter``, ``allgather`` and ``alltoall`` take the same
parameters; ``bytes`` is the whole buffer as nccl-tests sizes it. Without ``--cluster`` the
collective runs over the GPUs of one machine (``--gpus``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import attrs
from pydantic import Field

from parsim.base import units
from parsim.base.errors import ParsimError
from parsim.workloads.base import AllReduce, Params, Workload
from parsim.workloads.definition import ParamsModel, WorkloadDef
from parsim.workloads.records import Record, figure

KINDS = {
    "allreduce": "all_reduce",
    "reduce_scatter": "reduce_scatter",
    "allgather": "all_gather",
    "alltoall": "all_to_all",
}
"""Workload name -> the collective it runs (``model.collectives.COLLECTIVES``)."""

MAX_NODES = 65_536
KIND = "collective"
"""The kind the four definitions share: their figures are registered once for all (``results.hooks``)."""


@attrs.frozen
class CollectiveMetrics(Record):
    """What nccl-tests prints for the same buffer: the collective's time and its bandwidths.

    Attributes:
        collective_s: the op's own interval (as nccl-tests times it with CUDA events).
        algorithm_bandwidth_Bps: bytes over that time (``algbw``).
        bus_bandwidth_Bps: ``algbw`` times the collective's bus factor (``busbw``).
        ranks: GPUs taking part.
    """

    collective_s: float = figure("collective", units.seconds)
    algorithm_bandwidth_Bps: float = figure("algbw", lambda v: units.si(v, "B/s"))
    bus_bandwidth_Bps: float = figure("busbw", lambda v: units.si(v, "B/s") + " (nccl-tests' bus bandwidth)")
    ranks: float = figure()


class CollectiveParams(ParamsModel):
    """A collective's buffer, algorithm and node count (``dtype``: the elements', as nccl-tests' ``-d``)."""

    bytes: float = Field(gt=0, le=1e13, description="buffer size in bytes (nccl-tests' size)")
    algorithm: Literal["auto", "ring", "tree", "nvls"] = Field(
        "auto", description="auto (NCCL's tuner), ring, tree or nvls (NVLink SHARP; all-reduce only)"
    )
    protocol: Literal["auto", "ll", "ll128", "simple"] = Field(
        "auto", description="NCCL protocol: auto (its tuner), ll, ll128 (NVLink only) or simple"
    )
    p2p: bool = Field(
        True, description="GPUs reach each other peer-to-peer; false: staged through host memory"
    )
    nodes: int = Field(1, gt=0, le=MAX_NODES, description="nodes of the cluster (--cluster)")


def _check(name: str, given: Params, params: Params) -> Params:
    if params["algorithm"] in ("tree", "nvls") and KINDS[name] != "all_reduce":
        raise ParsimError(
            f"{name}: 'algorithm' {params['algorithm']} applies to allreduce only "
            f"(NCCL runs {name} as a ring)"
        )
    if params["algorithm"] == "nvls" and params["protocol"] not in ("auto", "simple"):
        raise ParsimError(
            f"{name}: 'protocol' must be simple or auto with algorithm nvls: {params['protocol']!r}"
        )
    return params


def _builder(name: str) -> Callable[[Params], Workload]:
    def build(params: Params) -> Workload:
        op = AllReduce(
            name,
            float(params["bytes"]),
            kind=KINDS[name],
            algorithm=params["algorithm"],
            protocol=params["protocol"],
            transport="p2p" if params["p2p"] else "host",
            layer=name,
        )
        return Workload(name, tuple(sorted(params.items())), (op,), ((),), layers=((name, "collective"),))

    return build


DEFINITIONS: tuple[WorkloadDef, ...] = tuple(
    WorkloadDef(
        name,
        CollectiveParams,
        _builder(name),
        f"one {kind.replace('_', '-')} over every GPU (nccl-tests' {name.replace('all', 'all_')}_perf)",
        check=_check,
        family="collective",
        kind=KIND,
        record=CollectiveMetrics,
        cluster=(),
        figures=("timeline", "breakdown"),
    )
    for name, kind in KINDS.items()
)
"""The definitions ``registry.WORKLOADS`` registers."""
ALL_REDUCE = next(definition for definition in DEFINITIONS if KINDS[definition.name] == "all_reduce")
"""The all-reduce's definition (the app's bus-bandwidth page)."""
