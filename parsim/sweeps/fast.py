"""The vectorised analytic fast path: a whole sweep of single-op workloads in a few NumPy passes.

For ``method=analytic`` and a workload of one kernel or one copy, every point of a group that
shares everything but its sizes differs only in numbers, so the closed forms of
``parsim.analytic`` are evaluated on arrays: FLOPs, bytes and items (affine in ``n`` for
elementwise ops, reductions and copies, the GEMM formulas for ``matmul``), the memory bandwidth
at each working set, the roofline, the dispatch cost and the back-to-back period. The tests
check it against the scalar analytic model point by point.
"""

from __future__ import annotations

import numpy
import pandas

from parsim.errors import ParsimError
from parsim.hardware import registry
from parsim.hardware.execution import check_mode, execution
from parsim.workloads.base import Kernel, Transfer
from parsim.workloads.registry import make_workload

LINEAR = ("vector_add", "saxpy", "relu", "sigmoid", "reduce_sum", "copy")
FAST = (*LINEAR, "matmul")


def fast_rows(case: str, base: dict, points: list[dict]) -> list[pandas.DataFrame] | None:
    """Rows of ``points`` (one case) as a DataFrame per group; None where the fast path does not apply."""
    if (base.get("method") or "engine") != "analytic" or any(
        not k.startswith("workload.") and k not in ("device", "host", "link", "mode")
        for p in points
        for k in p
    ):
        return None
    groups: dict[tuple, list[int]] = {}
    for index, point in enumerate(points):
        key = tuple(
            sorted((k, v) for k, v in point.items() if k not in ("workload.n", "workload.m", "workload.k"))
        )
        groups.setdefault(key, []).append(index)
    frames = []
    for indices in groups.values():
        frame = _group(case, base, [points[i] for i in indices])
        if frame is None:
            return None
        frames.append(frame)
    return frames


def _group(case: str, base: dict, points: list[dict]) -> pandas.DataFrame | None:
    from parsim.sweeps.grid import point_id
    from parsim.sweeps.points import build_call

    call = build_call(base, points[0])
    name = call["workload"]
    if name not in FAST or call.get("gpus") not in (None, 1) or call.get("overlap") not in (None, "roofline"):
        return None
    try:
        sizes = {
            key: numpy.array(
                [float(p.get(f"workload.{key}", call["params"].get(key, numpy.nan))) for p in points]
            )
            for key in (("m", "n", "k") if name == "matmul" else ("n",))
        }
    except (TypeError, ValueError):
        return None  # a size that is no number: the per-point path reports it
    if any(numpy.isnan(v).any() or (v <= 0).any() or (v != numpy.round(v)).any() for v in sizes.values()):
        return None  # invalid sizes: the per-point path reports each one
    try:
        system = registry.system(call["device"], call.get("host"), call.get("link"))
        mode = check_mode(system.compute, call.get("mode"))
        probe = make_workload(name, {**call["params"], **{k: 1 for k in sizes}})
        make_workload(name, {**call["params"], **{k: int(v.max()) for k, v in sizes.items()}})  # the bounds
        twice = make_workload(name, {**call["params"], **{k: 2 for k in sizes}}) if name in LINEAR else None
    except ParsimError:
        return None
    if len(probe.ops) != 1:
        return None  # unfused passes: several kernels, per-point path
    op = probe.ops[0]
    if isinstance(op, Transfer):
        if system.device is None:
            return None
        quantities = _affine(probe, twice, sizes["n"])
        times = _transfer(system, op, quantities)
    else:
        quantities = _gemm(op, sizes) if name == "matmul" else _affine(probe, twice, sizes["n"])
        times = _kernel(system, mode, op, quantities)
    defaults = {k: v for k, v in probe.params if k not in sizes}
    return _rows(
        case,
        points,
        {**call, "params": {**defaults, **call["params"]}},
        system,
        mode,
        quantities,
        times,
        lambda case_label, point: point_id(case_label, point, base),
    )


def _affine(one, two, n):
    """Quantities that are affine in n, read off the workload built at n = 1 and n = 2."""

    def line(getter):
        a, b = getter(one), getter(two)
        return a + (b - a) * (n - 1)

    kernel = lambda w: w.ops[0]  # noqa: E731
    is_kernel = isinstance(one.ops[0], Kernel)
    return {
        "flops": line(lambda w: w.flops),
        "bytes": line(lambda w: w.bytes),
        "transfer_bytes": line(lambda w: w.transfer_bytes),
        "items": line(lambda w: kernel(w).work_items) if is_kernel else n,
        "special": line(lambda w: kernel(w).special_ops) if is_kernel else 0 * n,
        "footprint": line(lambda w: w.footprint_B),
    }


def _gemm(op: Kernel, sizes: dict):
    m, n, k = sizes["m"], sizes["n"], sizes["k"]
    size = op.bytes_written  # a 1x1x1 product writes one element
    total = size * (m * k + k * n + m * n)
    return {
        "flops": 2.0 * m * n * k,
        "bytes": total,
        "transfer_bytes": 0 * m,
        "items": m * n,
        "special": 0 * m,
        "footprint": total,
        "k": k,
    }


def _bandwidth(spec, cores: int, working_set):
    """Vectorised ``execution._memory_level``: bandwidth with ``cores`` busy at each working set."""
    memory = spec.memory
    if memory.curve:
        xs = numpy.log([p.working_set_B for p in memory.curve])
        every = numpy.exp(
            numpy.interp(numpy.log(working_set), xs, numpy.log([p.all_cores_Bps for p in memory.curve]))
        )
        one = numpy.exp(
            numpy.interp(numpy.log(working_set), xs, numpy.log([p.one_core_Bps for p in memory.curve]))
        )
        return numpy.minimum(every, cores * one)
    level_bw = numpy.full(working_set.shape, memory.bandwidth_Bps)
    core_bw = numpy.full(working_set.shape, memory.per_core_bandwidth_Bps)
    unset = numpy.ones(working_set.shape, dtype=bool)
    for cache in memory.caches:
        if spec.is_gpu and cache.per_core:
            continue
        fits = unset & (working_set <= cache.size_B * (cores if cache.per_core else 1))
        level_bw[fits] = cache.bandwidth_Bps
        core_bw[fits] = cache.per_core_bandwidth_Bps or cache.bandwidth_Bps / spec.cores
        unset &= ~fits
    return numpy.minimum(level_bw, cores * core_bw)


def _kernel(system, mode: str, op: Kernel, q: dict) -> dict:
    spec = system.compute
    ex = execution(spec, mode, op)
    if ex.interpreted:
        per_item = op.python_ops_per_item if op.gemm_mn is None else None
        python_ops = per_item if per_item is not None else _gemm_python_ops(op, q["k"])
        compute = q["items"] * python_ops * ex.interpreted_element_s
    elif ex.core_op_rate:
        compute = q["items"] / (ex.cores * ex.core_op_rate)
    else:
        compute = q["flops"] / (ex.cores * ex.core_flops_per_s) + q["special"] / (
            ex.cores * ex.core_special_per_s
        )
    memory = spec.memory.latency_s + q["bytes"] / _bandwidth(spec, ex.cores, q["bytes"])
    duration = numpy.maximum(compute, memory)
    if not spec.is_gpu and op.gemm_mn is None and ex.cores > 1:
        duration = duration + numpy.where(q["items"] > ex.tile_items, spec.parallel_dispatch_s, 0.0)
    dispatch = spec.dispatch_s
    period = numpy.maximum(dispatch, duration) if system.device is not None else dispatch + duration
    kind = numpy.where(compute >= memory, "compute", "memory")
    return {"duration": duration, "dispatch": dispatch, "period": period, "kind": kind}


def _gemm_python_ops(op: Kernel, k):
    from parsim.workloads.ops import GEMM_PYTHON_OPS, GEMM_PYTHON_SETUP

    return GEMM_PYTHON_OPS * k + GEMM_PYTHON_SETUP


def _transfer(system, op: Transfer, q: dict) -> dict:
    link = system.link
    bandwidth = link.bandwidth_Bps if op.pinned else link.pageable_bandwidth_Bps
    duration = link.latency_s + q["transfer_bytes"] / bandwidth
    dispatch = system.device.dispatch_s
    period = numpy.maximum(dispatch, duration) if op.pinned else dispatch + duration
    return {
        "duration": duration,
        "dispatch": dispatch,
        "period": period,
        "kind": numpy.full(duration.shape, "transfer"),
    }


def _rows(case, points, call, system, mode, q, t, point_id) -> pandas.DataFrame:
    """The group's rows as one DataFrame, built column by column (no per-row dicts)."""
    latency = t["dispatch"] + t["duration"]
    work = numpy.where(t["duration"] > 0, t["duration"], 0.0)
    capacity = system.compute.memory.capacity_B
    too_big = q["footprint"] > capacity
    kind = t["kind"].astype(object)
    columns = {"point_id": [point_id(case, point) for point in points], "case": case}
    for field in points[0]:
        columns[field] = [point[field] for point in points]
    columns["workload"] = call["workload"]
    for key, value in call["params"].items():
        columns.setdefault(f"workload.{key}", value)
    for key in ("workload.n", "workload.m", "workload.k"):
        if key in columns and not isinstance(columns[key], list):
            columns[key] = int(columns[key])
    columns.update(
        {
            "device": system.compute.id,
            "device_used": system.compute.id,
            "host": system.host.id,
            "link": system.link.id if system.link is not None else None,
            "mode": mode,
            "method": "analytic",
            "latency_s": latency,
            "throughput_per_s": 1.0 / t["period"],
            "flops": q["flops"],
            "bytes": q["bytes"],
            "transfer_bytes": q["transfer_bytes"],
            "flops_per_s": q["flops"] / latency,
            "bytes_per_s": q["bytes"] / latency,
            "bottleneck": numpy.where(work >= t["dispatch"], kind, "overhead"),
            "events": 0,
            "compute_s": numpy.where(kind == "compute", work, 0.0),
            "memory_s": numpy.where(kind == "memory", work, 0.0),
            "transfer_s": numpy.where(kind == "transfer", work, 0.0),
            "overhead_s": t["dispatch"],
            "error": "",
        }
    )
    frame = pandas.DataFrame(columns, index=range(len(points)))
    if too_big.any():
        gib = q["footprint"][too_big] / 2**30
        frame.loc[too_big, "error"] = [
            f"{call['workload']} needs {need:.1f} GiB, {system.compute.id} has {capacity / 2**30:.1f} GiB"
            for need in gib
        ]
        numeric = [
            "latency_s",
            "throughput_per_s",
            "flops",
            "bytes",
            "transfer_bytes",
            "flops_per_s",
            "bytes_per_s",
            "compute_s",
            "memory_s",
            "transfer_s",
            "overhead_s",
        ]
        frame.loc[too_big, numeric] = numpy.nan
        frame.loc[too_big, ["device", "host", "link", "mode", "method", "bottleneck"]] = None
    return frame
