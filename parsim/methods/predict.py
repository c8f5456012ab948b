"""One entry point: workload + system -> ``Prediction``, by the engine or the analytic model.

``predict("matmul", {"m": 4096, "n": 4096, "k": 4096}, device="h100-sxm")`` resolves the
hardware, validates the workload and the mode, checks that the data fits in memory, runs the
chosen method once for the latency and the timeline, and three back-to-back instances for the
sustained throughput (a pipelined GPU can start the next instance before the last finishes).
Layered workloads get a per-layer breakdown; a workload whose definition names a one-GPU baseline
(data-parallel training) is also predicted on one GPU to report speed-up, scaling efficiency and the
serial fraction Amdahl's law implies. A workload whose definition counts ``requests`` (a server
under load) is no one program: it goes to the request-level simulation (``serving.load``), whose
steps are priced by the program path (``program``) without coming back here.

Nothing here names a workload: what is particular to one comes from its definition
(``WorkloadDef``: how it splits, where it runs on a cluster, its samples and baseline) and from
the hooks registered for its kind (``results.catalog``: refusals, its typed metrics record, notes).
"""

from __future__ import annotations

from typing import Any

import attrs

from parsim import stack
from parsim.base import caching, collector
from parsim.base.budget import CLI, Budget, check_params
from parsim.base.choices import METHODS, OVERLAPS
from parsim.base.errors import ParsimError
from parsim.base.units import gib
from parsim.hardware import registry
from parsim.hardware.network import ClusterSpec
from parsim.hardware.specs import LinkSpec, ProcessorSpec, SystemSpec
from parsim.methods import program
from parsim.methods.serving import load
from parsim.model import capacity, footprint
from parsim.model.library import lower
from parsim.model.modes import check_mode
from parsim.results.catalog import hooks_for
from parsim.results.prediction import Prediction
from parsim.workloads.base import AllReduce, Workload
from parsim.workloads.definition import WorkloadDef
from parsim.workloads.multi import on_cpu, split_over_gpus
from parsim.workloads.records import Record, Scaling, Throughput
from parsim.workloads.registry import capabilities, cluster_names, lookup, make_workload, validate_params

# what runs one built program lives beside this module (``program``: no circle through serving);
# the names stay importable from here, where they have always been
_timing, _predict, _layer_rows = program.timing, program.predict_program, program.layer_rows
throughput_repeats, samples_per_step = program.throughput_repeats, program.samples_per_step
THROUGHPUT_REPEATS, LONG_PROGRAM_OPS = program.THROUGHPUT_REPEATS, program.LONG_PROGRAM_OPS


def device_defaults(
    workload: str,
    params: dict[str, Any] | None,
    device: str | ProcessorSpec | None,
    cluster: str | ClusterSpec | None = None,
) -> dict[str, Any] | None:
    """``params`` with the framework a device of its kind runs by default (XLA on a TPU), where the
    workload takes a framework and the user named none."""
    if params is not None and "framework" in params:
        return params
    if device is None and cluster is not None:
        try:
            device = registry.cluster(cluster).device
        except ParsimError:
            return params  # the cluster's own error comes later, with its field
    chosen = stack.DEVICE_FRAMEWORKS.get(registry.kind_of(device) or "")
    definition = lookup(workload)
    if chosen is None or "framework" not in definition.params.model_fields:
        return params
    return {**(params or {}), "framework": chosen}


def predict(
    workload: str | Workload,
    params: dict[str, Any] | None = None,
    *,
    device: str | ProcessorSpec | None = None,
    cluster: str | ClusterSpec | None = None,
    host: str | ProcessorSpec | None = None,
    link: str | LinkSpec | None = None,
    mode: str | None = None,
    method: str = "engine",
    overlap: str = "roofline",
    gpus: int | None = None,
    gpus_per_switch: int | None = None,
    budget: Budget | None = CLI,
    detail: bool = True,
) -> Prediction:
    """Predict latency, throughput and the reasons for ``workload`` on a system.

    Args:
        workload: a workload name (``"vector_add"``) or a built ``Workload``.
        params: workload parameters when ``workload`` is a name (``{"n": 1e8}``).
        device: processor that runs the kernels: preset id, TOML path or spec.
        cluster: instead of a device, a cluster (preset id, TOML path or spec): ``nodes`` nodes
            (the workload's ``nodes=``) of its GPUs, fabric and network.
        host: host CPU for a GPU device (default ``xeon-e5-2630v3``).
        link: host<->device PCIe link, or an NVLink between GPUs (default: the GPU's usual link).
        mode: Flynn mode (``sisd``, ``simd``, ``mimd``, ``mimd+simd``, ``simt``); default per device.
        method: ``engine`` (SimPy discrete events) or ``analytic`` (closed forms).
        overlap: ``roofline`` (compute and memory overlap) or ``serial`` (they add up).
        gpus: GPUs to spread the work over (``data_parallel`` takes it as a parameter).
        gpus_per_switch: GPUs sharing one PCIe switch uplink (default up to 4).
        budget: the most the request may cost (``parsim.base.budget``: the command line's by default,
            the app's in the app); None lifts it.
        detail: False leaves out what only a reader of this one prediction needs: the per-layer
            rows, the utilisation, the notes, the executed FLOPs and the trace (a sweep's rows
            read none of them); every figure is the same.

    Returns:
        The ``Prediction``.

    Raises:
        ParsimError: unknown names, invalid parameters, a mode the device lacks, too many
            GPUs, data that does not fit in memory, or a request above ``budget``.
    """
    key = request_key(workload, params, device, cluster, host, link, mode, method, overlap, gpus, detail)
    # One prediction is one burst of small objects that reference counting frees or the caches and
    # the prediction keep (the program's kernels and records, plans, the trace, the rows): the
    # cyclic collector, triggered every 700 of them, would walk them again and again and free
    # nothing, and its passes over the middle generation add up to full passes over every object
    # of the process. Paused for the prediction (``collector.paused``; the simulations inside
    # already pause it), it collects once after: a thirtieth of a cold training-step prediction.
    with collector.paused():
        if key is None:  # a built workload, a hardware file, or values that do not hash: no cache
            request = (device, cluster, host, link, mode, method, overlap, gpus)
            return _predict_request(workload, params, *request, gpus_per_switch, budget, detail)
        return _predict_cached(key, gpus_per_switch, budget)


def request_key(workload: object, params: dict[str, Any] | None, *rest: object) -> tuple[Any, ...] | None:
    """What names a prediction request: the workload's name, its parameters as sorted pairs and the
    other arguments, a small tuple that hashes in microseconds (not the built workload, whose hash
    walks every op and kernel). None where the request cannot be keyed: a ``Workload`` value, a
    hardware TOML path (the file may change), or a parameter value that does not hash."""
    if not isinstance(workload, str):
        return None
    for value in rest[:4]:  # device, cluster, host, link (a loop, not any(...): a hit costs microseconds)
        if isinstance(value, str) and value.endswith(".toml"):
            return None
    key = (workload, tuple(sorted(params.items())) if params else (), *rest)
    try:
        hash(key)
    except TypeError:  # a list-valued parameter, say
        return None
    return key


@caching.cached(maxsize=512)  # predictions keep their traces: a bounded cache bounds the memory
def _predict_cached(key: tuple[Any, ...], gpus_per_switch: int | None, budget: Budget | None) -> Prediction:
    workload, pairs, device, cluster, host, link, mode, method, overlap, gpus, detail = key
    request = (device, cluster, host, link, mode, method, overlap, gpus, gpus_per_switch, budget, detail)
    return _predict_request(workload, dict(pairs), *request)


def _predict_request(
    workload: str | Workload,
    params: dict[str, Any] | None,
    device: str | ProcessorSpec | None,
    cluster: str | ClusterSpec | None,
    host: str | ProcessorSpec | None,
    link: str | LinkSpec | None,
    mode: str | None,
    method: str,
    overlap: str,
    gpus: int | None,
    gpus_per_switch: int | None,
    budget: Budget | None,
    detail: bool = True,
) -> Prediction:
    if method not in METHODS:
        raise ParsimError(f"'method' must be one of {', '.join(METHODS)}: {method!r}")
    if overlap not in OVERLAPS:
        raise ParsimError(f"'overlap' must be one of {', '.join(OVERLAPS)}: {overlap!r}")
    if gpus is not None and (isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1):
        raise ParsimError(f"'gpus' must be an integer >= 1: {gpus!r}")
    if isinstance(workload, str):
        params = device_defaults(workload, params, device, cluster)
    requested = lookup(workload) if isinstance(workload, str) else capabilities(workload)
    if requested is not None and requested.requests is not None:
        return _under_load(requested, workload, params, device, cluster, host, link, method, gpus, budget)
    if cluster is not None:
        workload, system = _on_cluster(
            workload, params, cluster, device, host, link, gpus, gpus_per_switch, budget
        )
        gpus = system.gpus
    else:
        if isinstance(workload, str):
            values = validate_params(workload, dict(params or {}))
            check_params(budget, workload, values)  # before building it
            workload = _built(workload, values)  # ``make_workload`` without validating twice
        elif params:
            raise ParsimError("'params' only applies when the workload is given by name")
        if int(workload.param("nodes", 1)) > 1:
            raise ParsimError(
                f"'nodes' {workload.param('nodes')} needs a cluster (--cluster dgx-a100, or a cluster file)"
            )
        if device is None:
            raise ParsimError("give a device (--device) or a cluster (--cluster)")
    definition = capabilities(workload)
    if cluster is None:
        if workload.gpus > 1 or (definition is not None and definition.owns_gpus):
            if gpus is not None and gpus != workload.gpus:
                hint = definition.instead if definition is not None else ""
                raise ParsimError(f"'gpus' {gpus} contradicts the workload's gpus={workload.gpus}{hint}")
            gpus = workload.gpus
        gpus = gpus or 1
        assert device is not None  # checked above
        system = registry.system(device, host, link, gpus, gpus_per_switch)
    assert gpus is not None
    if workload.gpus != gpus:
        how, instead = (definition.split, definition.instead) if definition is not None else (None, "")
        workload = split_over_gpus(workload, gpus, how, instead)
    if system.device is None:
        workload = on_cpu(workload)
    workload = lower(workload, system)
    mode = check_mode(system.compute, mode)
    hooks = hooks_for(definition)
    if hooks.check is not None:
        hooks.check(workload, system)
    memory = check_fits(workload, system)
    prediction = _predict(workload, system, mode, method, overlap, detail).but(memory=memory)
    if hooks.metrics is not None:
        own = hooks.metrics(workload, system, prediction)
        if own is not None:
            assert definition is not None and isinstance(own, definition.record or Record)
            prediction = prediction.but(records=(*prediction.records, own))
    if hooks.notes is not None and detail:
        prediction = prediction.but(notes=prediction.notes + hooks.notes(workload, system))
    if definition is not None and definition.baseline is not None:
        prediction = _with_scaling(prediction, workload, definition, system, mode, method, overlap)
    if not detail:  # the hooks have read the trace: a figures-only prediction keeps none (``detail``)
        prediction = prediction.but(trace=())
    return prediction


def _built(name: str, values: dict[str, Any]) -> Workload:
    """Workload ``name`` built from its validated ``values``: one build per distinct values, shared
    by the requests that differ only in their system (a sweep predicts each ResNet-50 step on
    every device of its grid; a step's build is a sixth of its prediction). Values that do not
    hash, or that name a file (which may change), are built each time."""
    pairs = tuple(sorted(values.items()))
    try:
        hash(pairs)
    except TypeError:  # a list-valued parameter, say
        return lookup(name).build(values)
    if any(isinstance(value, str) and value.endswith(_FILES) for _, value in pairs):
        return lookup(name).build(values)
    return _build_cached(name, pairs)


_FILES = (".json", ".toml", ".yaml", ".yml", ".csv")
"""Endings of parameter values that name a file: read again by each build, never cached."""


@caching.cached(maxsize=32)  # built programs are frozen: requests share them
def _build_cached(name: str, pairs: tuple[tuple[str, Any], ...]) -> Workload:
    return lookup(name).build(dict(pairs))


def _under_load(
    definition: WorkloadDef,
    workload: str | Workload,
    params: dict[str, Any] | None,
    device: str | ProcessorSpec | None,
    cluster: object,
    host: str | ProcessorSpec | None,
    link: str | LinkSpec | None,
    method: str,
    gpus: int | None,
    budget: Budget | None,
) -> Prediction:
    """A workload predicted request by request (its definition counts ``requests``): the
    simulation of a server under load (``methods.serving.load``), its requests within ``budget``.

    Raises:
        ParsimError: a cluster, no device, a ``gpus`` other than the workload's, invalid parameters.
    """
    if cluster is not None:
        raise ParsimError(f"{definition.name} runs on --device (replicas= sets the copies), not --cluster")
    if device is None:
        raise ParsimError("give a device (--device)")
    if isinstance(workload, str):
        values = validate_params(definition.name, params or {})
    elif params:
        raise ParsimError("'params' only applies when the workload is given by name")
    else:
        values = dict(workload.params)
    if gpus is not None and gpus != values.get("gpus", 1):
        raise ParsimError(f"'gpus' {gpus} contradicts the workload's gpus={values.get('gpus', 1)}")
    return load.predict_requests(
        definition, values, device, host=host, link=link, method=method, budget=budget
    )


def _on_cluster(
    workload: str | Workload,
    params: dict[str, Any] | None,
    cluster: str | ClusterSpec,
    device: object,
    host: object,
    link: object,
    gpus: int | None,
    gpus_per_switch: int | None,
    budget: Budget | None,
) -> tuple[Workload, SystemSpec]:
    """The workload and the system of ``nodes`` nodes of ``cluster`` (``gpus`` of each node's GPUs:
    all of them unless the workload names fewer).

    Raises:
        ParsimError: a device, host, link or switch layout given besides the cluster (the cluster
            names them), more GPUs than a node has, or a workload that does not run on one.
    """
    for value, flag in (
        (device, "device"),
        (host, "host"),
        (link, "link"),
        (gpus_per_switch, "gpus_per_switch"),
    ):
        if value is not None:
            raise ParsimError(f"'{flag}' does not apply with --cluster: the cluster names its own")
    spec = registry.cluster(cluster)
    name = workload if isinstance(workload, str) else workload.name
    definition = capabilities(workload) if not isinstance(workload, str) else lookup(name)
    if definition is None or definition.cluster is None:
        raise ParsimError(f"--cluster applies to {', '.join(cluster_names())}, not {name}")
    if isinstance(workload, str):
        given = definition.on_cluster(params or {}, spec.nodes, spec.gpus_per_node)
        values = validate_params(name, dict(given))
        check_params(budget, name, values)  # before building it
        workload = definition.build(values)  # ``make_workload`` without validating twice
    elif params:
        raise ParsimError("'params' only applies when the workload is given by name")
    per_node = workload.param("gpus", gpus or spec.gpus_per_node)
    return workload, registry.cluster_system(spec, int(workload.param("nodes", 1)), per_node)


def _with_scaling(
    prediction: Prediction,
    workload: Workload,
    definition: WorkloadDef,
    system: SystemSpec,
    mode: str,
    method: str,
    overlap: str,
) -> Prediction:
    """Attach speed-up, efficiency and Amdahl's serial fraction against the same step on one GPU.

    Under ZeRO the reference is the faster of two one-GPU programs: the step run on one GPU, and
    GPU 0's own share of the G-GPU step with its collectives left out (it updates only 1/G of the
    weights). The G-GPU step runs that share plus communication and shared links, so it can never
    be faster: its efficiency cannot exceed 1 by construction, and what it loses is what
    communication costs. Without ZeRO a weak-scaling step is the one-GPU step plus collectives,
    bounded the same way; a strong-scaling shard that fits a cache the whole batch did not may
    still scale super-linearly, as it does on real GPUs.
    """
    gpus = system.total_gpus
    assert definition.baseline is not None and definition.samples is not None  # the caller checked
    one_gpu = attrs.evolve(system, gpus=1, gpus_per_switch=1, nodes=1, torus=())
    # lowered as the G-GPU step was (its library's own passes: layout transposes, reorders, folds)
    single = lower(make_workload(workload.name, definition.baseline(dict(workload.params))), one_gpu)
    one_latency, one_period = _timing(single, one_gpu, mode, method, overlap)
    reference = definition.samples(dict(single.params)) / one_period  # samples/s of one GPU
    if gpus > 1 and workload.param("zero", 0):
        _, share_period = _timing(own_share(workload), one_gpu, mode, method, overlap)
        reference = max(reference, definition.samples(dict(workload.params)) / gpus / share_period)
    # samples/s compares strong scaling (same global batch) and weak scaling (G times the batch) alike
    speedup = prediction.record(Throughput).samples_per_s / reference
    scaling = Scaling(
        speedup=speedup,
        efficiency=speedup / gpus,
        # Karp-Flatt: the serial fraction f for which Amdahl's law 1 / (f + (1 - f) / G) gives this speed-up
        serial_fraction=(gpus / speedup - 1) / (gpus - 1) if gpus > 1 else 0.0,
        single_gpu_latency_s=one_latency,
    )
    notes = prediction.notes
    alone = footprint.of_workload(single, one_gpu)
    if not alone.fits:
        need, has = gib(alone.need_B), gib(alone.capacity_B)
        notes += (f"the 1-GPU baseline would need {need} on a {has} GPU: a hypothetical reference",)
    return prediction.but(records=(*prediction.records, scaling), notes=notes)


def own_share(workload: Workload) -> Workload:
    """GPU 0's part of a multi-GPU step, alone: its kernels and copies and the host's work, without
    the collectives and the other GPUs' ops (a dependency on a dropped op is dropped with it)."""
    keep = [i for i, op in enumerate(workload.ops) if not isinstance(op, AllReduce) and op.device <= 0]
    position = {old: new for new, old in enumerate(keep)}
    deps = tuple(tuple(position[d] for d in workload.deps[i] if d in position) for i in keep)
    ops = tuple(workload.ops[i] for i in keep)
    return attrs.evolve(workload, ops=ops, deps=deps, gpus=1)


def clear_caches() -> None:
    """Forget every cached prediction and kernel plan (benchmarks measure cold predictions)."""
    caching.clear_caches()


def check_fits(workload: Workload, system: SystemSpec) -> footprint.MemoryBreakdown:
    """Refuse a workload that needs a device it lacks, or whose data does not fit in memory;
    return what fills each executing processor's memory."""
    if workload.needs_device and system.device is None:
        raise ParsimError(
            f"{workload.name} moves data over a link and needs a GPU device; "
            f"{system.host.id} is a CPU (try --device v100-pcie)"
        )
    memory = footprint.of_workload(workload, system)
    if not memory.fits:
        raise ParsimError(memory.refusal(workload.name))
    if capacity.host_too_big(system, workload.host_buffer_B):
        raise ParsimError(capacity.host_message(workload.name, system, workload.host_buffer_B))
    return memory
