"""Published measurements: parsim's predictions against what people really measured on real GPUs.

A machine without a GPU cannot measure one, but others have: NVIDIA's DeepLearningExamples
tables, DeepBench, bandwidthTest logs, framework benchmarks. ``parsim/data/published.csv`` keeps
such measurements, one row each, with where it was published (repository + path + commit, or
paper + table) and the quoted figures. Each row says how parsim runs it (workload, parameters,
device, link) and which figure it compares:

- ``samples_per_s``: the prediction's steady-state samples per second;
- ``latency_s``: its latency;
- ``efficiency``: data-parallel scaling efficiency against one GPU;
- ``seconds``: the device time of one kernel (the latency less the host's launch, as CUDA events
  time it);
- ``bytes_per_s``: a copy's bytes over its device time (as bandwidthTest reports it).

A CPU row published in throughput mode names ``instances`` processes of ``cores`` cores each:
each instance is predicted on that slice of the CPU (``hardware.slices``) and the rates combined.

The comparison reports per class (single-GPU training, inference, kernels, copies, multi-GPU
scaling, CPU) the mean absolute percentage error, the worst row and the Spearman rank correlation,
against the targets of issue 10. A row that parsim refuses (out of memory, say) is a failure: it
was really run. Nothing here is fitted per row; see ``parsim.stack`` and the hardware presets for
every parameter and its source.
"""

from __future__ import annotations

import csv
import datetime
import io
import json
from collections.abc import Callable
from importlib import resources
from pathlib import Path

import attrs
import numpy

from parsim.base import safefiles
from parsim.base.errors import ParsimError
from parsim.base.units import parse_assignments
from parsim.hardware import registry
from parsim.hardware.slices import slice_of, throughput_mode
from parsim.hardware.specs import ProcessorSpec
from parsim.methods.predict import predict
from parsim.studies.published_flops import mcore_flops, megatron_flops

SCHEMA = "parsim.studies.published/1"

CLASSES: dict[str, tuple[str, float]] = {
    # issue 26: every class <= 10 % (multi-GPU scaling keeps its stricter 5 %; multi-node scaling is
    # in points of efficiency)
    "training": ("single-GPU training throughput", 0.10),
    "inference": ("inference throughput, batch 1 to 256", 0.10),
    "kernel": ("GEMM / convolution kernels", 0.10),
    "copy": ("host<->device and device copies", 0.10),
    "scaling": ("multi-GPU scaling efficiency", 0.05),
    "cpu": ("CPU training/inference", 0.10),
    "transformer-training": ("transformer training throughput", 0.10),
    "llm-decode": ("LLM decode tokens/s", 0.10),
    "llm-ttft": ("LLM time to first token", 0.10),
    "collective": ("nccl-tests all-reduce and all-to-all bus bandwidth", 0.10),
    "collective-small": ("nccl-tests small all-reduce (8 B to 1 MB)", 0.10),
    "tp-pcie": ("all-reduce over PCIe without NVLink (P2P on/off)", 0.10),
    "cluster-scaling": ("multi-node scaling efficiency (points)", 0.10),
    "megatron": ("Megatron-LM / NeMo GPT training (TFLOP/s, tokens/s, step time per GPU)", 0.10),
    "serving": ("LLM serving under load (P50/P99 latency, output tokens/s)", 0.10),
    "tpu-training": ("TPU slice training throughput (MaxText recipes)", 0.10),
    "fsdp": ("FSDP / ZeRO-3 LLM training throughput", 0.10),
    "moe-training": ("Mixture-of-experts training, expert parallel (tokens/s, TFLOP/s per GPU)", 0.10),
}
"""Each class: what it holds and its MAPE target (for a ``POINTS`` class: mean absolute error in
percentage points of efficiency)."""
POINTS = frozenset({"cluster-scaling"})
"""Classes scored in percentage points (an efficiency of 0.85 against 0.90 is 5 points off)."""

# the last four are ``llm_serve``'s own metrics (``Prediction.metrics``)
SERVING_METRICS = (
    "tokens_per_s",
    "tokens_per_s_per_user",
    "time_to_first_token_s",
    "time_per_output_token_s",
)
CLUSTER_METRICS = (
    "bus_bandwidth_Bps",
    "collective_s",
    "megatron_tflops_per_gpu",
    "mcore_tflops_per_gpu",
    "mcore_causal_tflops_per_gpu",
    "tokens_per_s_per_gpu",
    "step_s",
)
MCORE_METRICS = ("mcore_tflops_per_gpu", "mcore_causal_tflops_per_gpu")
"""Megatron-Core's logged TFLOP/s: the count of ``mcore_flops``, its core attention whole or causal."""
LOAD_METRICS = tuple(
    f"{what}_{percentile}_s" for what in ("ttft", "tpot", "e2e") for percentile in ("p50", "p90", "p99")
) + ("itl_p50_s", "itl_p99_s")
"""``llm_load``'s percentiles (``LoadRecord``): a serving run under load at its published rate."""
METRICS = (
    "samples_per_s",
    "latency_s",
    "efficiency",
    "seconds",
    "bytes_per_s",
    *SERVING_METRICS,
    *CLUSTER_METRICS,
    *LOAD_METRICS,
)
COLUMNS = ("id", "class", "workload", "params", "device", "host", "link", "gpus", "metric", "value", "source")


@attrs.frozen
class Row:
    """One published measurement and how parsim runs it."""

    id: str
    klass: str
    workload: str
    params: dict
    device: str
    host: str | None
    link: str | None
    metric: str
    value: float
    source: str
    detail: str = ""
    instances: int = 1
    cores: int | None = None


def default_path() -> Path:
    """The measurement set shipped in the package."""
    return Path(str(resources.files("parsim") / "data" / "published.csv"))


def load_rows(path: str | Path | None = None) -> tuple[Row, ...]:
    """Read and check a published-measurement CSV; a bad row names its line, field and value.

    Raises:
        ParsimError: unreadable file, missing column, unknown class or metric, a value that is not a
            positive number, a row without a source, a duplicate id.
    """
    path = Path(path) if path is not None else default_path()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ParsimError(f"{path}: cannot read the published measurements ({exc})") from None
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise ParsimError(f"{path}: missing column(s) {', '.join(missing)}")
    rows, seen = [], set()
    for line, record in enumerate(reader, start=2):
        rows.append(_row(record, f"{path.name} line {line}"))
        if rows[-1].id in seen:
            raise ParsimError(f"{path.name} line {line}: duplicate id {rows[-1].id!r}")
        seen.add(rows[-1].id)
    return tuple(rows)


def _row(record: dict, where: str) -> Row:
    def field(name: str) -> str:
        return (record.get(name) or "").strip()

    if field("class") not in CLASSES:
        raise ParsimError(f"{where}: 'class' must be one of {', '.join(CLASSES)}: {field('class')!r}")
    if field("metric") not in METRICS:
        raise ParsimError(f"{where}: 'metric' must be one of {', '.join(METRICS)}: {field('metric')!r}")
    try:
        value = float(field("value"))
    except ValueError:
        raise ParsimError(f"{where}: 'value' must be a number: {field('value')!r}") from None
    if not value > 0:
        raise ParsimError(f"{where}: 'value' must be > 0: {value}")
    for name in ("id", "workload", "device", "source"):
        if not field(name):
            raise ParsimError(f"{where}: '{name}' is empty")
    try:
        params = parse_assignments(field("params").split())
    except ParsimError as exc:
        raise ParsimError(f"{where}: 'params': {exc}") from None
    instances, cores = _whole(field("instances") or "1", "instances", where), None
    if field("cores"):
        cores = _whole(field("cores"), "cores", where)
    return Row(
        instances=instances,
        cores=cores,
        id=field("id"),
        klass=field("class"),
        workload=field("workload"),
        params=params,
        device=field("device"),
        host=field("host") or None,
        link=field("link") or None,
        metric=field("metric"),
        value=value,
        source=field("source"),
        detail=field("detail"),
    )


def _whole(text: str, name: str, where: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ParsimError(f"{where}: '{name}' must be a whole number: {text!r}") from None
    if value < 1:
        raise ParsimError(f"{where}: '{name}' must be >= 1: {value}")
    return value


def predicted(row: Row) -> float:
    """The figure parsim predicts for ``row``'s metric.

    Raises:
        ParsimError: parsim refuses the configuration (which, for a published row, is a failure).
    """
    if row.device in registry.cluster_ids():  # a row measured on nodes of a cluster
        if row.workload == "network" and row.metric in STEP_METRICS:
            return _step_metric(row)
        p = predict(row.workload, row.params, cluster=row.device)
        if row.metric == "megatron_tflops_per_gpu":
            return megatron_flops(row.params) / p.latency_s / p.gpus / 1e12
        if row.metric in MCORE_METRICS:
            flops = mcore_flops(row.params, row.metric == "mcore_causal_tflops_per_gpu")
            return flops / p.latency_s / p.gpus / 1e12
        if row.metric == "tokens_per_s_per_gpu":  # NeMo's and Megatron-Bridge's tables
            return float(p.metrics["tokens_per_s"]) / p.gpus
        if row.metric == "step_s":  # a training step's seconds (Korthikanti et al.'s iteration time)
            return p.latency_s
        return float(p.metrics[row.metric])
    device: str | ProcessorSpec = row.device
    if row.cores is not None:
        device = slice_of(registry.processor(row.device), row.cores)
    p = predict(row.workload, row.params, device=device, host=row.host, link=row.link)
    if row.metric == "samples_per_s":
        per_instance = float(p.metrics["samples_per_s"])
        if row.instances == 1:
            return per_instance
        samples = per_instance / p.throughput_per_s
        socket = registry.processor(row.device).memory.bandwidth_Bps
        return throughput_mode(per_instance, row.instances, p.bytes / samples, socket)
    if row.metric == "efficiency" or row.metric in SERVING_METRICS or row.metric in LOAD_METRICS:
        return float(p.metrics[row.metric])
    device_s = p.latency_s - p.breakdown["overhead"]  # what CUDA events around the op measure
    if row.metric == "seconds":
        return device_s
    if row.metric == "bytes_per_s":
        return p.transfer_bytes / device_s
    return p.latency_s


STEP_METRICS = ("megatron_tflops_per_gpu", *MCORE_METRICS, "tokens_per_s_per_gpu", "step_s")
"""What a 3D-parallel step's published rows measure: read from the step's figures alone."""


def _step_metric(row: Row) -> float:
    """A 3D-parallel row's figure from the step's time and tokens (``pipeline_figures``: the
    recurrence's exact timeline without the trace a full prediction carries), as ``predict``'s."""
    from parsim.studies import pipeline_figures

    figures = pipeline_figures.step_figures(dict(row.params), row.device)
    cluster = registry.cluster(row.device)
    gpus = int(row.params.get("gpus", cluster.gpus_per_node)) * int(row.params.get("nodes", cluster.nodes))
    if row.metric == "megatron_tflops_per_gpu":
        return megatron_flops(row.params) / figures["step_s"] / gpus / 1e12
    if row.metric in MCORE_METRICS:
        flops = mcore_flops(row.params, row.metric == "mcore_causal_tflops_per_gpu")
        return flops / figures["step_s"] / gpus / 1e12
    if row.metric == "tokens_per_s_per_gpu":
        return figures["tokens_per_s"] / gpus
    return figures["step_s"]


@attrs.frozen
class Compared:
    """A row with parsim's figure and the relative error, or why parsim refused it."""

    row: Row
    predicted: float | None
    refused: str = ""

    @property
    def error(self) -> float | None:
        """(predicted - published) / published; predicted - published for a ``POINTS`` class."""
        if self.predicted is None:
            return None
        if self.row.klass in POINTS:
            return self.predicted - self.row.value
        return (self.predicted - self.row.value) / self.row.value


def rows_of(classes: tuple[str, ...] = ()) -> tuple[Row, ...]:
    """The shipped rows of these classes (all rows when none is named).

    Raises:
        ParsimError: a class that is not one of ``CLASSES``.
    """
    unknown = [name for name in classes if name not in CLASSES]
    if unknown:
        raise ParsimError(
            f"'--class' {unknown[0]!r} is not a published class; choose from {', '.join(CLASSES)}"
        )
    rows = load_rows()
    return rows if not classes else tuple(row for row in rows if row.klass in classes)


def compare(
    rows: tuple[Row, ...] | None = None, progress: Callable[[int, int, str], None] | None = None
) -> list[Compared]:
    """Predict every row (``progress(done, total, row id)`` as they go)."""
    rows = load_rows() if rows is None else rows
    compared = []
    for done, row in enumerate(rows):
        if progress is not None:
            progress(done, len(rows), row.id)
        try:
            compared.append(Compared(row, predicted(row)))
        except ParsimError as exc:
            compared.append(Compared(row, None, str(exc)))
    return compared


def _spearman(a: list[float], b: list[float]) -> float | None:
    from parsim.studies.validate import spearman  # one rank correlation for every report

    return spearman(a, b) if len(a) >= 3 else None


def summary(compared: list[Compared]) -> dict:
    """Per class: rows, MAPE, its target and whether it is met, the worst row, Spearman, refusals."""
    classes = {}
    for name, (what, target) in CLASSES.items():
        members = [c for c in compared if c.row.klass == name]
        if not members:
            continue
        scored = [c for c in members if c.error is not None]
        errors = [abs(c.error) for c in scored if c.error is not None]
        worst = max(scored, key=lambda c: abs(c.error or 0.0), default=None)
        mape = float(numpy.mean(errors)) if errors else None
        classes[name] = {
            "what": what,
            "unit": "points" if name in POINTS else "relative",
            "rows": len(members),
            "mape": mape,
            "target": target,
            "met": mape is not None and mape <= target and len(scored) == len(members),
            "worst": None if worst is None else {"id": worst.row.id, "error": worst.error},
            "spearman": _spearman([c.row.value for c in scored], [c.predicted or 0.0 for c in scored]),
            "refused": [{"id": c.row.id, "why": c.refused} for c in members if c.refused],
            "by_percentile": _by_percentile(scored),
            "by_engine": _by_engine(scored) if name in BY_ENGINE else {},
        }
    return classes


def _by_percentile(scored: list[Compared]) -> dict[str, float]:
    """MAPE per percentile (``{"P50": ..., "P99": ...}``) of a class whose rows are latency
    percentiles; empty for every other class."""
    errors: dict[str, list[float]] = {}
    for c in scored:
        tag = next((part for part in c.row.metric.split("_") if part in ("p50", "p90", "p99")), None)
        if tag is not None and c.error is not None:
            errors.setdefault(tag.upper(), []).append(abs(c.error))
    return {tag: float(numpy.mean(errors[tag])) for tag in sorted(errors)}


BY_ENGINE = frozenset({"llm-decode"})
"""Classes whose MAPE is also reported per serving engine (the row's ``framework``: the engine's
decode kernels are a mechanism of their own, ``stack.engines``)."""


def _by_engine(scored: list[Compared]) -> dict[str, dict[str, float]]:
    """MAPE and row count per engine (``{"llama.cpp": {"mape": ..., "rows": ...}}``), the engine
    being the row's ``framework`` parameter."""
    errors: dict[str, list[float]] = {}
    for c in scored:
        if c.error is not None:
            errors.setdefault(str(c.row.params.get("framework", "")), []).append(abs(c.error))
    return {
        engine: {"mape": float(numpy.mean(found)), "rows": len(found)}
        for engine, found in sorted(errors.items())
    }


def report(compared: list[Compared]) -> dict:
    """The JSON report: every row with both figures, and the per-class summary."""
    return {
        "schema": SCHEMA,
        "created_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "rows": [
            {
                "id": c.row.id,
                "class": c.row.klass,
                "workload": c.row.workload,
                "params": c.row.params,
                "device": c.row.device,
                "instances": c.row.instances,
                "cores": c.row.cores,
                "link": c.row.link,
                "metric": c.row.metric,
                "published": c.row.value,
                "predicted": c.predicted,
                "error": c.error,
                "refused": c.refused,
                "source": c.row.source,
            }
            for c in compared
        ],
        "classes": summary(compared),
    }


def save(data: dict, path: str | Path) -> Path:
    return safefiles.write_text(Path(path), json.dumps(data, indent=2), "--save")
