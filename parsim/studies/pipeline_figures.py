"""A 3D-parallel step's figures (step, tokens/s, TFLOP/s, MFU, idle share), as a split search needs them.

Issue 28 first tried a fast form here: a long 1F1B pipeline's figures from three short steps (``p``,
``p + 1``, ``p + 2`` micro-batches), extrapolated where their two differences agreed to 1e-9. It is
not sound: the step of megatron-7.5b on 8 DGX A100 nodes (tp 2, pp 8, one sequence per
micro-batch) grows by 33.3 ms per micro-batch from 8 to 10 micro-batches, then by 34.2-35.2 ms, so
the three short steps agree with each other and the extrapolation to 32 micro-batches comes out
2.5 % fast (``tests/test_pipeline_figures.py`` keeps the counter-example).

What replaced it is exact: every pass of the step, timed by the engine's rules as a max-plus
recurrence (``methods.recurrence``) instead of SimPy events. A search asks only for five figures,
so ``step_figures`` builds the step, runs the recurrence without a trace and reads the figures
from its end and busy seconds (``cluster_figures.parallel_record``, what ``predict`` reports),
without the timeline, breakdown and notes a single prediction carries. ``method="analytic"`` or
``pipeline_events=true`` take ``predict``'s full path.
"""

from __future__ import annotations

from typing import Any

from parsim.hardware import registry
from parsim.hardware.network import ClusterSpec
from parsim.methods.predict import device_defaults, predict
from parsim.methods.program import by_recurrence, recurrence_run
from parsim.model.library import lower
from parsim.model.modes import check_mode
from parsim.results.cluster_figures import check_parallel, parallel_record
from parsim.workloads import parallel3d
from parsim.workloads.llms import is_llm, llm
from parsim.workloads.registry import lookup, validate_params
from parsim.workloads.training import numerics_of

FIGURES = ("step_s", "tokens_per_s", "tflops_per_gpu", "mfu", "idle_share")


def _additive(params: dict[str, Any], spec: ClusterSpec | str, method: str) -> tuple[float, ...]:
    """The step and the quantities that add up per micro-batch: tokens, FLOPs (model and run) and
    busy stage-seconds (each a figure times the step)."""
    metrics = predict("network", params, cluster=spec, method=method, budget=None).metrics
    step = float(metrics["step_s"])
    return (
        step,
        float(metrics["tokens_per_s"]) * step,
        float(metrics["tflops_per_gpu"]) * step,
        float(metrics["mfu"]) * step,
        (1.0 - float(metrics["idle_share"])) * step,
    )


def _figures(additive: tuple[float, ...]) -> dict[str, float]:
    step, tokens, tflop, model, busy = additive
    return {
        "step_s": step,
        "tokens_per_s": tokens / step,
        "tflops_per_gpu": tflop / step,
        "mfu": model / step,
        "idle_share": max(0.0, 1.0 - busy / step),
    }


def simulated_passes(params: dict[str, Any]) -> int:
    """Stage passes ``step_figures`` simulates: every micro-batch on every stage."""
    return int(params.get("pp", 1) or 1) * int(params.get("microbatches", 1) or 1)


def step_figures(params: dict[str, Any], spec: ClusterSpec | str, method: str = "engine") -> dict[str, float]:
    """``FIGURES`` of the 3D-parallel step ``params`` (``tp``, ``pp``, ``microbatches`` set) on
    ``nodes`` nodes of cluster ``spec``, a split the caller has found to fit (``splits.split_table``
    checks every split's memory before it asks).

    Raises:
        ParsimError: parameters the network workload refuses.
    """
    if method == "engine" and not params.get("pipeline_events", False):
        figures = _recurrence_figures(params, spec)
        if figures is not None:
            return figures
    return _figures(_additive(params, spec, method))


def _recurrence_figures(params: dict[str, Any], spec: ClusterSpec | str) -> dict[str, float] | None:
    """The figures from the recurrence's run, no trace (None where it does not cover the step)."""
    cluster = registry.cluster(spec)
    given = device_defaults("network", params, None, cluster) or params
    given = lookup("network").on_cluster(given, cluster.nodes, cluster.gpus_per_node)
    values = validate_params("network", given)
    if not (parallel3d.applies(values) and is_llm(values["model"]) and values["train"]):
        return None  # not a 3D-parallel step: predict's path says why
    workload = parallel3d.parallel_step(llm(values["model"]), values, numerics_of(values), named=False)
    system = registry.cluster_system(cluster, int(workload.param("nodes", 1)), int(workload.param("gpus")))
    workload = lower(workload, system)
    if not workload.devices or not by_recurrence(workload, system):
        return None
    check_parallel(workload, system)  # what predict refuses (FP8 without FP8 units), refused alike
    run = recurrence_run(workload, system, check_mode(system.compute, None), "roofline", record=False)
    record = parallel_record(workload, system, run.end_s, run.busy_s)
    return {name: float(getattr(record, name)) for name in FIGURES}
