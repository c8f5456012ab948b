"""Evaluating one sweep point: build the predict call, run it, flatten the answer into a row.

``evaluate`` is a plain top-level function of plain data, so process pools and Dask workers
can run it. A point that cannot be predicted (a size that does not fit, an invalid mode)
becomes a row with an ``error`` column holding the one-line message, never a crashed sweep.
"""

from __future__ import annotations

import attrs

from parsim.base import collector
from parsim.base.errors import ParsimError
from parsim.hardware import registry
from parsim.hardware.specs import LinkSpec, ProcessorSpec
from parsim.model.outcome import CATEGORIES
from parsim.results.prediction import Prediction
from parsim.studies.sweeps.grid import SPEC_FIELDS, point_id

# The columns of a row besides the grid fields and workload parameters (what --x/--y/--hue may name)
INPUTS = ("point_id", "case", "workload", "device", "device_used", "host", "link", "mode", "method")
INPUTS += ("bottleneck", "error")
FIGURES = ("latency_s", "throughput_per_s", "flops", "bytes", "transfer_bytes", "flops_per_s", "bytes_per_s")
FIGURES += ("events", *(f"{kind}_s" for kind in CATEGORIES))
PER_SAMPLE = ("samples_per_s",)  # workloads that count samples
SCALING = ("speedup", "efficiency", "serial_fraction", "single_gpu_latency_s")  # multi-GPU workloads
MEASURED = ("measured_s", "measured_p25_s", "measured_p75_s", "relative_error")


def build_call(base: dict, point: dict) -> dict:
    """The predict call for ``point``: plain fields first, then fields inside the hardware."""
    call = {**base, "params": dict(base.get("params") or {})}
    nested = []
    for field, value in point.items():
        head, _, rest = field.partition(".")
        if head == "workload" and rest:
            call["params"][rest] = value
        elif head in SPEC_FIELDS and rest:
            nested.append((head, rest, value))
        elif field in ("device", "host") and value is not None and call.get(field) is not None:
            call[field] = _same_kind(field, call[field], value)
        else:
            call[field] = value
    for required in ("workload", "device"):
        if not call.get(required):
            raise ParsimError(f"'{required}' is not set: give it in the scenario, with --set or in the grid")
    for head, path, value in nested:
        call[head] = set_field(_resolve(head, call), path, value)
    return call


def _same_kind(field: str, own, value):
    """A grid's device replaces a case's own only when both are GPUs or both CPUs.

    Sweeping ``device`` over GPUs in a scenario that also has a CPU baseline keeps the baseline
    on its CPU (the row's ``device_used`` column tells which device ran it).
    """
    mine, theirs = registry.kind_of(own), registry.kind_of(value)
    if mine is None or theirs is None:
        return value  # an unknown name: let the prediction report it
    return value if mine == theirs else own


def _resolve(head: str, call: dict) -> ProcessorSpec | LinkSpec:
    if head == "link":
        if call.get("link") is None:
            device = registry.processor(call["device"], "device")
            if device.default_link is None:
                raise ParsimError("'link.*' needs a link: give 'link' too")
            return registry.link(device.default_link)
        return registry.link(call["link"])
    if head == "host" and call.get("host") is None:
        return registry.processor(registry.DEFAULT_HOST, "host")
    return registry.processor(call[head], head)


def set_field(spec, path: str, value):
    """A copy of ``spec`` with the dotted ``path`` set (a bandwidth above its peak lifts the peak)."""
    head, _, rest = path.partition(".")
    if rest:
        return attrs.evolve(spec, **{head: set_field(getattr(spec, head), rest, value)})
    changes = {head: value}
    peak = "peak_bandwidth_Bps"
    if head == "bandwidth_Bps" and hasattr(spec, peak) and isinstance(value, (int, float)):
        changes[peak] = max(getattr(spec, peak), value)
    return attrs.evolve(spec, **changes)


def prediction_row(prediction: Prediction) -> dict:
    """Every scalar field of a prediction, breakdown and metrics as their own columns."""
    row = {
        "device": prediction.device,
        "device_used": prediction.device,
        "host": prediction.host,
        "link": prediction.link,
        "mode": prediction.mode,
        "method": prediction.method,
        "latency_s": prediction.latency_s,
        "throughput_per_s": prediction.throughput_per_s,
        "flops": prediction.flops,
        "bytes": prediction.bytes,
        "transfer_bytes": prediction.transfer_bytes,
        "flops_per_s": prediction.flops_per_s,
        "bytes_per_s": prediction.bytes_per_s,
        "bottleneck": prediction.bottleneck,
        "events": prediction.events,
    }
    row.update({f"{kind}_s": seconds for kind, seconds in prediction.breakdown.items()})
    row.update(prediction.metrics)
    return row


def case_label(template: str, label: str, call: dict) -> str:
    """The case's label for one point: ``template`` (the label as the scenario writes it, such as
    ``"GPU: H2D + {op} + D2H ({device})"``) filled in with the hardware and parameters of ``call``,
    so a sweep over devices names each point's own device; ``label`` where nothing is to be filled."""
    from parsim.studies.scenarios import Case, fill_label

    if "{" not in template:
        return label
    try:
        fields = {k: call.get(k) for k in ("workload", "device", "host", "link", "cluster")}
        return fill_label(template, Case(**fields, params=call.get("params") or {}))
    except (ParsimError, ValueError):  # hardware the label cannot name: the case's own label
        return label


def evaluate(task: tuple) -> dict:
    """Predict one point: ``task = (case label, grid point, base call[, label template])``; never
    raises for bad input."""
    from parsim.methods.predict import predict

    case, point, base, *template = task
    row = {
        "point_id": point_id(case, point, base),
        "case": case,
        **{field: _plain(v) for field, v in point.items()},
    }
    try:
        call = build_call(base, point)
        row["case"] = case_label(template[0], case, call) if template else case
        row["workload"] = call["workload"]
        row.update(
            {f"workload.{k}": _plain(v) for k, v in call["params"].items() if f"workload.{k}" not in row}
        )
        prediction = predict(
            call["workload"],
            call["params"],
            device=call["device"],
            host=call.get("host"),
            link=call.get("link"),
            mode=call.get("mode"),
            method=call.get("method") or "engine",
            overlap=call.get("overlap") or "roofline",
            gpus=call.get("gpus"),
            gpus_per_switch=call.get("gpus_per_switch"),
            detail=False,  # a row reads the figures alone (``prediction_row``)
        )
        row.update({k: v for k, v in prediction_row(prediction).items() if k not in point})
        row.update(
            {f"workload.{k}": _plain(v) for k, v in prediction.params.items() if f"workload.{k}" not in point}
        )
        row["error"] = ""
    except ParsimError as exc:
        row["error"] = str(exc)
    except (
        TypeError,
        ValueError,
        AttributeError,
    ) as exc:  # e.g. a grid value of the wrong type for a spec field
        row["error"] = f"{type(exc).__name__}: {exc}"
    return row


def evaluate_many(tasks: list[tuple[str, dict, dict]]) -> list[dict]:
    """A batch of points (one task for a worker, so per-task overhead is paid once per batch), the
    worker's collector spaced as the sweep's own process spaces it (``collector.spaced``)."""
    with collector.spaced():
        return [evaluate(task) for task in tasks]


def _plain(value):
    """Spec objects in a row are shown by id; everything else is kept as is."""
    if isinstance(value, (ProcessorSpec, LinkSpec)):
        return value.id
    return value
