"""Cluster figures that need the system: a collective's bandwidths as nccl-tests prints them.

``workloads.collective`` builds one collective from its parameters; its time comes from the model
(``model.collectives``), and here, above the model, the prediction gets the figures a user holds
against an ``all_reduce_perf`` run: the *algorithm bandwidth* (bytes over time) and the *bus
bandwidth* (algorithm bandwidth times ``2(n-1)/n`` for all-reduce, ``(n-1)/n`` for the others).
``predict`` asks for them by workload name (``METRICS``), as it does for LLM serving.
"""

from __future__ import annotations

from parsim.hardware.specs import SystemSpec
from parsim.model.collectives import bus_factor, op_timing
from parsim.prediction import Prediction
from parsim.workloads.base import AllReduce, Workload
from parsim.workloads.collective import KINDS


def collective_metrics(workload: Workload, system: SystemSpec, prediction: Prediction) -> dict[str, float]:
    """Algorithm and bus bandwidth of the collective, from its device time (the op's own interval,
    as nccl-tests times it with CUDA events: no launch on the host)."""
    op = workload.ops[0]
    assert isinstance(op, AllReduce)  # a collective workload is one collective
    seconds = op_timing(system, op).seconds
    ranks = system.total_gpus
    algorithm_Bps = op.nbytes / seconds if seconds > 0 else 0.0
    return {
        "collective_s": seconds,
        "algorithm_bandwidth_Bps": algorithm_Bps,
        "bus_bandwidth_Bps": algorithm_Bps * bus_factor(op.kind, ranks),
        "ranks": float(ranks),
    }


def collective_notes(workload: Workload, system: SystemSpec) -> tuple[str, ...]:
    """Which algorithm the collective took, and why, in one line."""
    op = workload.ops[0]
    assert isinstance(op, AllReduce)
    timing = op_timing(system, op)
    if system.total_gpus == 1:
        return ("one GPU: nothing to exchange",)
    share = timing.latency_s / timing.seconds if timing.seconds else 0.0
    return (
        f"{op.kind.replace('_', '-')} by {timing.algorithm} over {system.total_gpus} GPUs "
        f"({system.nodes} node{'s' if system.nodes > 1 else ''}): latency terms are {share:.0%} of its time",
    )


METRICS = {name: collective_metrics for name in KINDS}
"""Workload name -> ``(workload, system, prediction) -> dict`` added to ``Prediction.metrics``."""
