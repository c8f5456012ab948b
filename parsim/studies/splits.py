"""Which (tp, pp, dp) split of a cluster trains a language model fastest: every split, predicted.

A fixed number of GPUs can be cut into tensor-parallel groups inside nodes, pipeline stages and
data-parallel replicas in a few dozen ways. ``split_table`` tries each (``parallel3d.splits``:
tp dividing a node's GPUs and the model's heads, pp up to the layers, the micro-batch size kept),
refuses those whose fullest GPU would not fit (from the memory model alone, without simulating),
predicts the others (on every core), and marks the fastest. A pp that does not divide the layers
is kept and said: its stages hold unequal layers ("2 or 1"), and the fuller stages set the pace.
Front ends (``parsim splits``, the Scale out page) render these rows; they do not re-derive any of it.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import attrs

from parsim.base.budget import CLI, Budget
from parsim.base.caching import cached
from parsim.base.errors import ParsimError
from parsim.hardware import registry
from parsim.hardware.network import ClusterSpec
from parsim.model import footprint
from parsim.studies import pipeline_figures
from parsim.studies.sweeps.workers import watch_parent
from parsim.workloads import parallel3d
from parsim.workloads.llms import is_llm, llm
from parsim.workloads.registry import validate_params
from parsim.workloads.training import numerics_of
from parsim.workloads.transformer_memory import layers_per_stage


@attrs.frozen
class SplitRow:
    """One split: its shape, whether it fits, and (when it does) its predicted step."""

    tp: int
    pp: int
    dp: int
    microbatches: int
    memory_per_gpu_B: float
    fits: bool
    layers_per_stage: str = ""  # "12", or "2 or 1" where pp does not divide the layers (unequal stages)
    step_s: float | None = None
    tokens_per_s: float | None = None
    tflops_per_gpu: float | None = None
    mfu: float | None = None
    idle_share: float | None = None
    fastest: bool = False

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


def split_table(
    params: dict[str, Any],
    cluster: str | ClusterSpec,
    micro_batch: int = 1,
    method: str = "engine",
    budget: Budget | None = CLI,
) -> tuple[SplitRow, ...]:
    """Every split of ``nodes`` nodes of ``cluster`` for ``network`` with ``params`` (``model``,
    ``batch``, ``seq``, ``recompute``...), each replica's share of the batch cut into micro-batches
    of ``micro_batch`` sequences. The stage passes of the fitting splits are counted against
    ``budget`` (None: none) before any is predicted.

    Raises:
        ParsimError: not a language model, bad parameters, an unknown cluster, or a search above
            ``budget``.
    """
    if isinstance(micro_batch, bool) or not isinstance(micro_batch, int) or micro_batch < 1:
        raise ParsimError(f"'micro_batch' must be an integer >= 1: {micro_batch!r}")
    for fixed in ("tp", "pp", "microbatches", "gpus"):
        if fixed in params:
            raise ParsimError(f"splits: '{fixed}' is what the splits vary; leave it out")
    spec = registry.cluster(cluster)
    given = {**params, "gpus": spec.gpus_per_node, "train": True}
    return _table(tuple(sorted(given.items())), spec, micro_batch, method, budget)


@cached(maxsize=64)
def _table(
    items: tuple[tuple[str, Any], ...], spec: ClusterSpec, micro: int, method: str, budget: Budget | None
) -> tuple[SplitRow, ...]:
    validated = validate_params("network", dict(items))
    model = validated["model"]
    if not is_llm(model):
        raise ParsimError(f"splits: {model} is not a language model; tp and pp split transformers")
    config = llm(model)
    system = registry.cluster_system(spec, validated["nodes"])
    numerics = numerics_of(validated)
    rows = []
    found = parallel3d.splits(config, {**validated, "microbatches": 1}, micro)
    if not found:
        raise ParsimError(
            f"splits: no split of {system.total_gpus} GPUs cuts a batch of {validated['batch']} into "
            f"micro-batches of {micro}"
        )
    rows: list[SplitRow] = []
    for split in found:
        lay = parallel3d.layout(config, split)
        memory = footprint.breakdown(parallel3d.memory_needs(config, lay, split, numerics), system, True)
        rows.append(
            SplitRow(
                lay.tp,
                lay.pp,
                lay.dp,
                lay.microbatches,
                memory.needs.total_B,
                bool(memory.fits),
                layers_per_stage(config, lay.pp),
            )
        )
    fitting = [split for split, row in zip(found, rows, strict=True) if row.fits]
    if budget is not None:
        passes = sum(pipeline_figures.simulated_passes(split) for split in fitting)
        what = f"splits: pp x microbatches summed over the {len(fitting)} fitting splits"
        budget.check(passes, "split_passes", what)
    figures = iter(_predict_all(fitting, spec, method))
    rows = [attrs.evolve(row, **next(figures)) if row.fits else row for row in rows]
    timed = [row for row in rows if row.step_s is not None]
    if timed:
        best = min(timed, key=lambda row: row.step_s or 0.0)
        rows = [attrs.evolve(row, fastest=True) if row is best else row for row in rows]
    return tuple(rows)


def mfu_peak(params: dict[str, Any], cluster: str | ClusterSpec) -> tuple[str, str, float]:
    """What a split's MFU is measured against: the cluster's GPU, the step's dtype and that GPU's
    peak for it in FLOP/s (its matrix units where it has them for the dtype)."""
    dtype = str(validate_params("network", {**params, "train": True})["dtype"])
    gpu = registry.cluster_system(registry.cluster(cluster), 1).gpu
    return gpu.id, dtype, gpu.peak_flops_per_s(dtype, matrix=True)


FIGURES = pipeline_figures.FIGURES


def _figures(split: dict[str, Any], spec: ClusterSpec, method: str) -> dict[str, float]:
    """A split's figures (counted against the budget above): its event simulation's."""
    return pipeline_figures.step_figures(split, spec, method)


def _predict_all(splits: list[dict[str, Any]], spec: ClusterSpec, method: str) -> list[dict[str, float]]:
    """Each split's figures, on every core the machine has (deep pipelines take a second or more)."""
    workers = min(len(splits), os.cpu_count() or 1)
    if workers < 2:
        return [_figures(split, spec, method) for split in splits]
    # the longest first, so no core is left with the slowest at the end
    order = sorted(range(len(splits)), key=lambda i: -splits[i]["pp"] * splits[i]["microbatches"])
    context = multiprocessing.get_context("spawn")
    # the sweeps' initializer: a worker exits as soon as this process is gone (kill -9 included)
    with ProcessPoolExecutor(
        workers, mp_context=context, initializer=watch_parent, initargs=(os.getpid(),)
    ) as pool:
        done = pool.map(_figures, [splits[i] for i in order], [spec] * len(order), [method] * len(order))
        by_index = dict(zip(order, done, strict=True))
    return [by_index[i] for i in range(len(splits))]
