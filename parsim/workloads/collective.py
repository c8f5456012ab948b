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

from pydantic import Field

from parsim.workloads.base import AllReduce, Params, Workload
from parsim.workloads.registry import WorkloadDef, _Params

KINDS = {
    "allreduce": "all_reduce",
    "reduce_scatter": "reduce_scatter",
    "allgather": "all_gather",
    "alltoall": "all_to_all",
}
"""Workload name -> the collective it runs (``model.collectives.COLLECTIVES``)."""

MAX_NODES = 65_536


class CollectiveParams(_Params):
    """A collective's buffer, algorithm and node count (``dtype``: the elements', as nccl-tests' ``-d``)."""

    bytes: float = Field(gt=0, le=1e13, description="buffer size in bytes (nccl-tests' size)")
    algorithm: Literal["auto", "ring", "tree"] = Field(
        "auto", description="auto (NCCL's choice), ring or tree (all-reduce only)"
    )
    nodes: int = Field(1, gt=0, le=MAX_NODES, description="nodes of the cluster (--cluster)")


def _check(name: str, given: Params, params: Params) -> Params:
    from parsim.base.errors import ParsimError

    if params["algorithm"] == "tree" and KINDS[name] != "all_reduce":
        raise ParsimError(f"{name}: 'algorithm' tree applies to allreduce only (NCCL runs {name} as a ring)")
    return params


def _builder(name: str) -> Callable[[Params], Workload]:
    def build(params: Params) -> Workload:
        op = AllReduce(
            name, float(params["bytes"]), kind=KINDS[name], algorithm=params["algorithm"], layer=name
        )
        return Workload(name, tuple(sorted(params.items())), (op,), ((),), layers=((name, "collective"),))

    return build


COLLECTIVE_WORKLOADS: dict[str, WorkloadDef] = {
    name: WorkloadDef(
        name,
        CollectiveParams,
        _builder(name),
        f"one {kind.replace('_', '-')} over every GPU (nccl-tests' {name.replace('all', 'all_')}_perf)",
        check=_check,
        family="collective",
    )
    for name, kind in KINDS.items()
}
"""The definitions ``registry.WORKLOADS`` registers."""
