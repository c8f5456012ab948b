"""Text reports: a prediction or a scenario run as a short table a person reads in a terminal.

The CLI prints these; the app shows the same facts as widgets. Numbers carry SI prefixes and
units (``357 us``, ``3.35 TB/s``); long lists are condensed (equally busy GPUs shown once, the
slowest layers first).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from parsim.base import units
from parsim.results.algorithms import describe
from parsim.results.prediction import Prediction
from parsim.results.resources import Resource
from parsim.results.serving_figures import phase_bounds
from parsim.studies.scenarios import ScenarioResult, lesson_text
from parsim.workloads.llms import is_llm, llm
from parsim.workloads.records import Record


def prediction_text(p: Prediction) -> str:
    """A short readable table of one prediction."""
    params = units.assignments(p.params)
    devices = p.device if p.gpus == 1 else f"{p.gpus} x {p.device}"
    where = devices if p.link is None else f"{devices} + {p.host} over {p.link}"
    if p.peer_link:
        where += f", GPUs joined by {p.peer_link}"
    share = p.breakdown[p.bottleneck] / p.latency_s if p.latency_s else 0
    lines = [
        f"{p.workload} {params}",
        f"  on {where} ({p.mode}, {p.method})",
        *([f"  model        {llm(model).summary()}"] if is_llm(model := p.params.get("model")) else []),
        f"  latency      {units.seconds(p.latency_s)}",
        f"  throughput   {units.si(p.throughput_per_s, '/s')}",
    ]
    if p.busy:  # a program's run (a load's requests use no resource rows)
        lines.append(
            f"  achieved     {units.si(p.flops_per_s, 'FLOP/s')}{_executed(p)}, "
            f"{units.si(p.bytes_per_s, 'B/s')} memory"
        )
    lines += [
        *_format_links(p),
        f"  bottleneck   {p.bottleneck} ({share:.0%} of the time)",
        *([f"  phases       {_phases_text(p)}"] if phase_bounds(p) else []),
        "  breakdown    " + ", ".join(f"{k} {units.seconds(v)}" for k, v in p.breakdown.items() if v > 0),
    ]
    if p.busy:
        lines.append("  utilization  " + _format_utilization(p.busy))
    if p.method == "engine":
        lines.append(f"  events       {p.events}")
    if p.memory is not None and p.memory.itemised:
        lines.append(f"  memory       {p.memory.line()}")
    lines += _format_metrics(p.records)
    if p.layers:
        lines.append(_format_layers(p.layers))
    lines += [f"  note: {note}" for note in p.notes]
    return "\n".join(lines)


def _format_links(p: Prediction) -> list[str]:
    """The bytes that crossed links, when any did (each collective's share is in the notes)."""
    if not p.transfer_bytes:
        return []
    return [f"  over links   {units.si(p.transfer_bytes, 'B')} (copies, and what collectives send)"]


def _format_utilization(busy: Mapping[Resource, float]) -> str:
    """Resources in order; GPUs (or extra host threads) that are all equally busy are shown once."""
    groups: dict[Resource, list[tuple[int, float]]] = {}
    for resource, value in busy.items():
        if resource.kind == "thread" and resource.first > 0:
            groups.setdefault(resource._replace(first=1), []).append((resource.first, value))
        elif resource.on_gpu and resource.tagged:
            groups.setdefault(resource._replace(device=0), []).append((resource.device, value))
        else:
            groups.setdefault(resource, []).append((-1, value))
    parts = []
    for template, members in groups.items():
        values = [value for _, value in members]
        if len(members) > 1 and max(values) - min(values) < 0.01:
            parts.append(f"{template.label_for(f'{members[0][0]}-{members[-1][0]}')} {values[0]:.0%} each")
        else:
            parts += [
                f"{template.label if number < 0 else template.label_for(str(number))} {value:.0%}"
                for number, value in members
            ]
    return ", ".join(parts)


def _format_metrics(records: Iterable[Record]) -> list[str]:
    records = list(records)
    lines = []
    for record in records:
        grid = record.table()
        if grid is not None:
            headers, rows = grid
            columns = [(headers[0], "left"), *((header, "right") for header in headers[1:])]
            lines += ["  " + line for line in table(columns, rows).splitlines() if line.strip()]
    texts = metric_texts(records)
    width = max([13, *(len(label) + 1 for label, _ in texts)])
    return lines + [f"  {label:<{width}}{text}" for label, text in texts]


def metric_texts(records: Iterable[Record]) -> list[tuple[str, str]]:
    """A workload's own figures as (label, text) for people (the CLI and the app): each record's
    labelled fields, in its order (``workloads.records.figure``): any workload, no table of names."""
    return [text for record in records for text in record.texts()]


def _format_layers(layers, top: int = 8) -> str:
    """The layers that take the longest, with their share of the summed layer time."""
    total = sum(layer["latency_s"] for layer in layers) or 1.0
    heaviest = sorted(layers, key=lambda layer: layer["latency_s"], reverse=True)[:top]
    lines = [f"  slowest layers ({len(layers)} in all; --json lists every one):"]
    for layer in heaviest:
        chosen = f"  {describe(layer['algorithms'])}" if "algorithms" in layer else ""
        lines.append(
            f"    {layer['name']:<24}{layer['kind']:<9}{units.seconds(layer['latency_s']):>10}"
            f"{layer['latency_s'] / total:>6.0%}{units.si(layer['flops'], 'FLOP'):>14}{chosen}"
        )
    return "\n".join(lines)


def table(columns: list[tuple[str, str]], rows: list[list[str]]) -> str:
    """A plain-text table (``rich``): ``columns`` are ``(header, "left" | "right")``; never wrapped or cut."""
    import io

    from rich import box
    from rich.console import Console
    from rich.table import Table

    grid = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for header, justify in columns:
        grid.add_column(header, justify=justify, no_wrap=True)
    for row in rows:
        grid.add_row(*row)
    console = Console(file=io.StringIO(), width=100_000, color_system=None, highlight=False)
    console.print(grid)
    return "\n".join(line.rstrip() for line in console.file.getvalue().splitlines() if line.strip())


def _executed(p: Prediction) -> str:
    """After the effective FLOP/s, what was executed when an algorithm did fewer multiplications."""
    if p.executed_flops is None:
        return ""
    return f" effective ({units.si(p.executed_flops_per_s, 'FLOP/s')} executed)"


def scenario_text(result: ScenarioResult, lesson: bool = True) -> str:
    """The comparison table of a scenario run, with speed-ups against the first case."""
    spec = result.scenario
    lines = [spec.title, "=" * len(spec.title)]
    if lesson:
        lines += [lesson_text(spec).strip(), ""]
    sweep = spec.sweep is not None
    samples = all("samples_per_s" in r.prediction.metrics for r in result.results)
    scaling = all("efficiency" in r.prediction.metrics for r in result.results)
    columns = [("case", "left"), *([(spec.sweep.label, "right")] if sweep else [])]
    columns += [("latency", "right"), ("throughput", "right"), ("bottleneck", "right"), ("speed-up", "right")]
    columns += [("samples/s", "right")] if samples else []
    columns += [("vs 1 GPU", "right"), ("efficiency", "right")] if scaling else []
    # requests under load (llm_load): the tail a user feels, beside the median request's latency
    load = all("ttft_p50_s" in r.prediction.metrics for r in result.results)
    columns += [(name, "right") for name in LOAD_COLUMNS.values()] if load else []
    baseline = {r.value: r.prediction.latency_s for r in result.series(result.labels[0])}
    rows = []
    for r in result.results:
        p, metrics = r.prediction, r.prediction.metrics
        row = [r.label, *([_value(r.value)] if sweep else [])]
        row += [units.seconds(p.latency_s), units.si(p.throughput_per_s, "/s"), p.bottleneck]
        row.append(f"{baseline[r.value] / p.latency_s:.3g}x")
        row += [units.si(metrics["samples_per_s"])] if samples else []
        row += [f"{metrics['speedup']:.2f}x", f"{metrics['efficiency']:.0%}"] if scaling else []
        row += [_load_figure(name, metrics[name]) for name in LOAD_COLUMNS] if load else []
        rows.append(row)
    lines.append(table(columns, rows))
    for value, winner, loser in result.crossovers():
        lines.append(f"crossover: {winner} beats {loser} from {spec.sweep.label} = {_value(value)}")
    if spec.sweep is not None:
        lines += [f"never faster than {result.labels[0]}: {label}" for label in result.never_faster()]
    return "\n".join(lines)


LOAD_COLUMNS = {
    "ttft_p50_s": "P50 TTFT",
    "ttft_p99_s": "P99 TTFT",
    "tpot_p50_s": "P50 TPOT",
    "tpot_p99_s": "P99 TPOT",
    "e2e_p99_s": "P99 e2e",
    "queue_mean_s": "mean wait",
    "tokens_per_s": "tokens/s",
}
"""A load's figures a scenario table shows (``LoadMetrics`` names -> column headers)."""


def _load_figure(name: str, value: float) -> str:
    if value is None or value != value:  # NaN: no request had a second token
        return "-"
    return units.si(value, "/s") if name.endswith("_per_s") else units.seconds(value)


def _value(value) -> str:
    return units.si(float(value)) if isinstance(value, (int, float)) else str(value)


def validation_text(data: dict) -> str:
    """Predicted against measured, point by point, then the error figures per workload class."""
    lines = [f"validation on {data['device']} ({data['host']}, {data['created_at']})"]
    header = (data.get(k) for k in ("machine", "software", "predicted_with"))
    for name, value in zip(("machine", "software", "predicted with"), header, strict=True):
        if isinstance(value, dict):
            value = "; ".join(f"{k} {v}" for k, v in value.items())
        lines += [f"{name}: {value}"] if value else []
    lines.append("")
    points = []
    for row in data["rows"]:
        points.append(
            [
                row["class"],
                _params_shown(row["params"]),
                units.seconds(row["measured_s"]),
                units.seconds(row["predicted_s"]),
                f"{row['error']:+.0%}",
            ]
        )
    right = "right"
    headers = [
        ("workload", "left"),
        ("params", "left"),
        ("measured", right),
        ("predicted", right),
        ("error", right),
    ]
    lines += [table(headers, points), ""]
    summaries = [
        [
            name,
            _percent(summary["mape_large"]),
            _percent(summary["max_error"]),
            _percent(summary["small_within"]),
            f"{summary['spearman']:.3f}",
        ]
        for name, summary in [*data["classes"].items(), ("overall", data["overall"])]
    ]
    headers = [("class", "left"), ("MAPE >=100us", right), ("max error", right), ("small ok", right)]
    lines.append(table([*headers, ("Spearman", right)], summaries))
    targets = data["targets"]
    lines.append(
        f"targets: MAPE <= {targets['mape_large']:.0%} for points >= {units.seconds(targets['large_s'])}, "
        f"smaller ones within {units.seconds(targets['small_abs_s'])} or {targets['small_rel']:.0%}, "
        f"Spearman >= {targets['spearman']}"
    )
    for key, what in (("not_measured", "not measured"), ("not_predicted", "not predicted by this parsim")):
        for row in data.get(key) or []:
            lines.append(
                f"{what}: {row.get('workload')} {_params_shown(row.get('params') or {})}: {row.get('why')}"
            )
    return "\n".join(lines)


def _params_shown(params: dict) -> str:
    """A row's parameters: its matrix edges as ``m x n x k`` (or ``n``), then the others as key=value."""
    edges = ("m", "n", "k") if "m" in params else ("n",)
    size = "x".join(f"{params[k]:g}" for k in edges if isinstance(params.get(k), int | float))
    rest = {
        k: (f"{v:g}" if isinstance(v, float) else v) for k, v in params.items() if k not in edges or not size
    }
    return " ".join([size] * bool(size) + [units.assignments(rest)] * bool(rest))


def _percent(value) -> str:
    return "-" if value is None else f"{value:.1%}"


def bottleneck_sentence(p: Prediction, device=None, link=None) -> str:
    """One sentence a student reads first: what bounds the time, how much of it, and at what rate.

    The rate is the one the prediction's Flynn mode gets (``parsim.model.rates.execution`` for
    the workload's heaviest kernel): one lane of one core in ``sisd``, where a CPU runs the
    interpreter loop, one core's lanes in ``simd``, and so on; never the chip's peak when the mode
    uses a part of it. Example: ``memory-bound: 92% of the time waiting on 3.0 TB/s device memory``.
    """
    if phase_bounds(p):
        return f"by phase: {_phases_text(p)}"
    share = p.breakdown[p.bottleneck] / p.latency_s if p.latency_s else 0.0
    ex = _execution(p, device) if device is not None and p.bottleneck in ("compute", "memory") else None
    if p.bottleneck == "memory":
        if ex is None:
            return f"memory-bound: {share:.0%} of the time waiting on memory"
        drawn = units.si(float(ex.memory.reachable_Bps(ex.cores)), "B/s")
        return (
            f"memory-bound: {share:.0%} of the time waiting on {ex.memory.name}, which"
            f" {_who(device, ex, p.mode)} draw at up to {drawn}"
        )
    if p.bottleneck == "compute":
        if ex is None:
            return f"compute-bound: {share:.0%} of the time computing"
        if ex.interpreted:
            rate = units.si(1 / ex.interpreted_element_s, " operations/s")
            return (
                f"interpreter-bound: {share:.0%} of the time in the Python interpreter, one element at a"
                f" time on one lane of one core: about {rate} ({units.seconds(ex.interpreted_element_s)}"
                " per element and operation), whatever the chip's peak"
            )
        if ex.core_op_rate:
            rate = units.si(ex.cores * ex.core_op_rate, " elements/s")
            who = _who(device, ex, p.mode)
            return f"compute-bound: {share:.0%} of the time computing at up to {rate} (measured) on {who}"
        rate = units.si(ex.flops_per_s, "FLOP/s")
        dtype, who = p.params.get("dtype", "float32"), _who(device, ex, p.mode)
        return f"compute-bound: {share:.0%} of the time computing at up to {rate} {dtype} on {who}" + _padded(
            p, device
        )
    if p.bottleneck == "transfer":
        over = f" over {link.name} ({units.si(link.bandwidth_Bps, 'B/s')} per direction)" if link else ""
        return f"transfer-bound: {share:.0%} of the time moving data{over}"
    return f"overhead-bound: {share:.0%} of the time launching work or waiting on the host, not computing"


def _phases_text(p: Prediction) -> str:
    """``prefill compute-bound (96% of its 33.6 ms computing), decode memory-bound (...)``: each
    phase judged on its own (``results.serving_figures.phase_bounds``), not the sum of both."""
    doing = {"compute": "computing", "memory": "waiting on memory"}
    return ", ".join(
        f"{b.phase} {b.kind}-bound ({b.share:.0%} of its {units.seconds(b.busy_s)} {doing[b.kind]})"
        for b in phase_bounds(p)
    )


def _execution(p: Prediction, device):
    """The model's rates for the heaviest kernel of ``p`` on ``device`` in ``p.mode`` (None: no kernel)."""
    from parsim.model.rates import execution
    from parsim.workloads.registry import make_workload

    kernels = make_workload(p.workload, dict(p.params)).kernels
    if not kernels:
        return None
    return execution(device, p.mode, max(kernels, key=lambda k: (k.work.flops, k.bytes)))


def _padded(p: Prediction, device) -> str:
    """``; MXU 128x128: k=129 padded to 256, ...`` where the heaviest product runs on a systolic array."""
    from parsim.model.systolic import padding
    from parsim.workloads.registry import make_workload

    gemms = [k for k in make_workload(p.workload, dict(p.params)).kernels if k.library.gemm_mn is not None]
    pad = padding(device, max(gemms, key=lambda k: k.work.flops)) if gemms else None
    return f"; {pad.sentence()}" if pad is not None else ""


def _who(device, ex, mode: str) -> str:
    """``1 core x 16 lanes (simd)``: the part of the chip the mode keeps busy."""
    cores = f"{ex.cores} {device.core_unit}{'s' if ex.cores > 1 else ''}"
    lanes = f"{ex.lanes} lanes" if ex.lanes > 1 else "one lane"
    return f"{cores} x {lanes} ({mode})"


def _figure(metric: str, value: float | None) -> str:
    if value is None:
        return "-"
    if metric == "seconds" or (metric.endswith("_s") and not metric.endswith("per_s")):
        return units.seconds(value)  # latency_s, time_to_first_token_s, ttft_p99_s ...
    if metric == "efficiency":
        return f"{value:.1%}"
    if metric in ("bytes_per_s", "bus_bandwidth_Bps"):
        return units.si(value, "B/s")
    if metric.endswith("tflops_per_gpu"):  # Megatron's and Megatron-Core's counts
        return f"{value:.0f} TFLOP/s"
    return units.si(value, "/s")


def _error(row: dict) -> str:
    """A row's error: relative, or in percentage points for an efficiency class scored in points."""
    from parsim.studies.published import POINTS

    return f"{row['error'] * 100:+.1f} pp" if row["class"] in POINTS else f"{row['error']:+.0%}"


def published_text(data: dict, rows: bool = True) -> str:
    """Predicted against published, row by row, then MAPE, worst row and Spearman per class."""
    right = "right"
    lines = []
    if rows:
        body = [
            [
                row["class"],
                row["id"],
                _figure(row["metric"], row["published"]),
                _figure(row["metric"], row["predicted"]),
                "refused" if row["refused"] else _error(row),
            ]
            for row in data["rows"]
        ]
        headers = [("class", "left"), ("row", "left"), ("published", right), ("predicted", right)]
        lines += [table([*headers, ("error", right)], body), ""]
    summaries = []
    for s in data["classes"].values():
        points = s.get("unit") == "points"
        shown = (lambda v: f"{v * 100:+.1f} pp") if points else (lambda v: f"{v:+.0%}")
        worst = "-" if s["worst"] is None else f"{s['worst']['id']} ({shown(s['worst']['error'])})"
        spearman = "-" if s["spearman"] is None else f"{s['spearman']:.2f}"
        status = "met" if s["met"] else "NOT met"
        mean = (
            (f"{s['mape'] * 100:.1f} pp" if s["mape"] is not None else "-") if points else _percent(s["mape"])
        )
        target = f"<= {s['target'] * 100:.0f} pp" if points else f"<= {s['target']:.0%}"
        summaries.append(
            [
                s["what"],
                str(s["rows"]),
                mean,
                f"{target} {status}",
                spearman,
                worst,
            ]
        )
    headers = [("class", "left"), ("rows", right), ("MAPE", right), ("target", right), ("Spearman", right)]
    lines.append(table([*headers, ("worst row", "left")], summaries))
    for s in data["classes"].values():
        if s.get("by_percentile"):
            parts = ", ".join(f"{tag} {_percent(mape)}" for tag, mape in s["by_percentile"].items())
            lines.append(f"{s['what']}: MAPE by percentile: {parts}")
        if s.get("by_engine"):
            engines = s["by_engine"].items()
            parts = ", ".join(f"{name} {_percent(e['mape'])} ({e['rows']} rows)" for name, e in engines)
            lines.append(f"{s['what']}: MAPE by engine: {parts}")
    for s in data["classes"].values():
        lines += [f"refused: {r['id']}: {r['why']}" for r in s["refused"]]
    return "\n".join(lines)
