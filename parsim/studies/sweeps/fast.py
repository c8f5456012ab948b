"""The vectorised analytic fast path: a whole sweep of single-op workloads in a few NumPy passes.

For ``method=analytic`` and a workload of one kernel or one copy, the points of a group that
shares everything but its sizes differ only in numbers. The workload definition gives its
quantities over arrays of sizes (``WorkloadDef.vectorised``) and the model core's closed forms
(``parsim.model``) take those arrays as they take numbers: the rates, the memory level at each
working set, the roofline, the copy time, the period, the breakdown, the bottleneck and the
memory limits are the very rules of a scalar prediction. The tests check the two point by point.
"""

from __future__ import annotations

import numpy
import pandas

from parsim.base.errors import ParsimError
from parsim.hardware import registry
from parsim.hardware.specs import SystemSpec
from parsim.model import capacity, footprint, outcome, transfer
from parsim.model.issue import issue_s
from parsim.model.kernel import kernel_time, overlap_norm
from parsim.model.modes import check_mode
from parsim.model.placement import blocks_host, kernel_processor, on_host
from parsim.model.rates import execution
from parsim.workloads.base import Kernel, Vectorised
from parsim.workloads.needs import MemoryNeeds
from parsim.workloads.registry import lookup, make_workload, validate_params

PLAIN_FIELDS = ("device", "host", "link", "mode", "overlap")


def fast_rows(
    case: str, base: dict, points: list[dict], ids: list[str] | None = None, template: str = ""
) -> list[pandas.DataFrame] | None:
    """Rows of ``points`` (one case) as a DataFrame per group; None where the fast path does not apply.

    ``ids``: the points' ``point_id`` when the caller has them already (else they are computed).
    ``template``: the case's label as written, filled in per group (``points.case_label``).
    """
    if (base.get("method") or "engine") != "analytic" or any(
        not k.startswith("workload.") and k not in (*PLAIN_FIELDS, "workload") for p in points for k in p
    ):
        return None
    groups: dict[tuple, list[int]] = {}
    for index, point in enumerate(points):
        sizes = _sizes_of(point.get("workload", base.get("workload")))
        if sizes is None:
            return None
        key = tuple(
            sorted((k, repr(v)) for k, v in point.items() if k.removeprefix("workload.") not in sizes)
        )
        groups.setdefault(key, []).append(index)
    frames = []
    for indices in groups.values():
        frame = _group(case, base, [points[i] for i in indices], ids and [ids[i] for i in indices])
        if frame is None:
            return None
        if "{" in template:  # a group shares all but its sizes: one label, unless it names a size
            from parsim.studies.sweeps.points import build_call, case_label

            sizes = _sizes_of(points[indices[0]].get("workload", base.get("workload"))) or ()
            each = indices if any(f"{{{size}}}" in template for size in sizes) else indices[:1]
            labels = [case_label(template, case, build_call(base, points[i])) for i in each]
            frame["case"] = labels if len(labels) == len(frame) else labels[0]
        frames.append(frame)
    return frames


def _sizes_of(name) -> tuple[str, ...] | None:
    try:
        definition = lookup(str(name))
    except ParsimError:
        return None
    return definition.sizes if definition.vectorised is not None else None


def _group(case: str, base: dict, points: list[dict], ids: list[str] | None) -> pandas.DataFrame | None:
    from parsim.studies.sweeps.grid import point_ids
    from parsim.studies.sweeps.points import build_call

    call = build_call(base, points[0])
    name = call["workload"]
    definition = lookup(name)
    if call.get("gpus") not in (None, 1):
        return None
    try:
        sizes = {
            key: numpy.array(
                [float(p.get(f"workload.{key}", call["params"].get(key, numpy.nan))) for p in points]
            )
            for key in definition.sizes
        }
    except (TypeError, ValueError):
        return None  # a size that is no number: the per-point path reports it
    if any(numpy.isnan(v).any() or (v <= 0).any() or (v != numpy.round(v)).any() for v in sizes.values()):
        return None  # invalid sizes: the per-point path reports each one
    from parsim.methods.predict import check_fits

    overlap = call.get("overlap") or "roofline"
    try:
        system = registry.system(call["device"], call.get("host"), call.get("link"))
        mode = check_mode(system.compute, call.get("mode"))
        probe = make_workload(name, {**call["params"], **dict.fromkeys(sizes, 1)})
        make_workload(name, {**call["params"], **{k: int(v.max()) for k, v in sizes.items()}})  # the bounds
        check_fits(probe, system)  # a CPU asked to copy: the per-point path reports it
        params = validate_params(name, {**call["params"], **dict.fromkeys(sizes, 1)})
    except ParsimError:
        return None
    if overlap not in ("roofline", "serial") or len(probe.ops) != 1:
        return None
    quantities = definition.vectorised({**params, **sizes})
    if quantities is None:
        return None  # NumPy-style passes: several kernels, per-point path
    times = _times(system, mode, probe.ops[0], quantities, overlap)
    return _rows(
        case,
        points,
        {**call, "params": {**params, **call["params"]}},
        system,
        mode,
        quantities,
        times,
        probe.transfers != [],
        ids or point_ids(case, points, base),
    )


def _times(system: SystemSpec, mode: str, op, q: Vectorised, overlap: str) -> dict:
    """Duration, dispatch, latency, period, breakdown and bottleneck of every point."""
    if isinstance(op, Kernel):
        spec, mode = kernel_processor(system, op, mode)
        k = q.kernel
        nbytes = k["bytes_read"] + k["bytes_written"]
        ex = execution(spec, mode, op, working_set_B=nbytes)
        duration, kind = kernel_time(
            spec,
            ex,
            flops=k["flops"],
            nbytes=nbytes,
            cold_bytes=0.0,
            items=k["work_items"],
            special=k.get("special_ops", 0.0),
            ints=k.get("int_ops", 0.0),
            python_ops=k["python_ops_per_item"],
            overlap=overlap,
            norm=overlap_norm(spec, op),
            thread_loads_B=k.get("thread_loads_B", 0.0),
        )
        dispatch, host_waits = issue_s(system, None, on_host(system, op), op), blocks_host(system, op)
        flops, moved, crossing = k["flops"], nbytes, 0.0 * nbytes
    else:
        duration = transfer.transfer_s(system.host_link, q.transfer_B, op.pinned, op.direction)
        kind = numpy.full(duration.shape, "transfer")
        dispatch, host_waits = issue_s(system, None, on_host(system, op), op), blocks_host(system, op)
        flops, moved, crossing = 0.0 * q.transfer_B, 0.0 * q.transfer_B, q.transfer_B
    breakdown = outcome.single_op_breakdown(kind, duration, dispatch)
    return {
        "latency_s": outcome.single_op_latency(dispatch, duration),
        "period_s": outcome.single_op_period(dispatch, duration, host_waits),
        "breakdown": breakdown,
        "bottleneck": outcome.bottleneck(breakdown),
        "flops": flops,
        "bytes": moved,
        "transfer_bytes": crossing,
    }


def _rows(case, points, call, system, mode, q, t, crosses_link, ids) -> pandas.DataFrame:
    """The group's rows as one DataFrame, built column by column (no per-row dicts)."""
    latency = t["latency_s"]
    columns = {"point_id": ids, "case": case}
    for field in points[0]:
        columns[field] = [point[field] for point in points]
    columns["workload"] = call["workload"]
    for key, value in call["params"].items():
        columns.setdefault(f"workload.{key}", value)
    for key in lookup(call["workload"]).sizes:
        if not isinstance(columns[f"workload.{key}"], list):
            columns[f"workload.{key}"] = int(columns[f"workload.{key}"])
    columns.update(
        {
            "device": system.compute.id,
            "device_used": system.compute.id,
            "host": system.host.id,
            "link": system.link.id if system.link is not None else None,
            "mode": mode,
            "method": "analytic",
            "latency_s": latency,
            "throughput_per_s": 1.0 / t["period_s"],
            "flops": t["flops"],
            "bytes": t["bytes"],
            "transfer_bytes": t["transfer_bytes"],
            "flops_per_s": t["flops"] / latency,
            "bytes_per_s": t["bytes"] / latency,
            "bottleneck": t["bottleneck"],
            "events": 0,
            **{f"{kind}_s": seconds for kind, seconds in t["breakdown"].items()},
            "error": "",
        }
    )
    frame = pandas.DataFrame(columns, index=range(len(points)))
    numeric = [
        "latency_s",
        "throughput_per_s",
        "flops",
        "bytes",
        "transfer_bytes",
        "flops_per_s",
        "bytes_per_s",
    ]
    numeric += [f"{kind}_s" for kind in outcome.CATEGORIES]
    refused = numpy.zeros(len(points), dtype=bool)
    host_buffers = q.transfer_B if crosses_link else 0.0 * q.footprint_B
    data = numpy.broadcast_to(numpy.asarray(q.footprint_B, dtype=float), (len(points),))
    memory = footprint.breakdown(MemoryNeeds(data_B=data), system, in_framework=False)
    too_big = ~numpy.broadcast_to(numpy.asarray(memory.fits, dtype=bool), (len(points),))
    if too_big.any():
        frame.loc[too_big, "error"] = [
            footprint.breakdown(MemoryNeeds(data_B=float(value)), system, False).refusal(call["workload"])
            for value in data[too_big]
        ]
        refused |= too_big
    too_big = numpy.broadcast_to(capacity.host_too_big(system, host_buffers), (len(points),)) & ~refused
    if too_big.any():
        frame.loc[too_big, "error"] = [
            capacity.host_message(call["workload"], system, value)
            for value in numpy.broadcast_to(host_buffers, (len(points),))[too_big]
        ]
        refused |= too_big
    if refused.any():
        frame.loc[refused, numeric] = numpy.nan
        frame.loc[refused, ["device", "host", "link", "mode", "method", "bottleneck"]] = None
    return frame
