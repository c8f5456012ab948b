"""``measure``: time a workload for real on this machine, the way ``predict`` models it.

Everything that can refuse a measurement is checked first — the workload's parameters exactly
as for a prediction, the backend and mode, the limits of the interpreted loop, and that the data
fits in half of the free memory — and only then is the machine-wide lock taken: a mistake is
answered at once, never after waiting minutes for someone else's measurement. The operation is
then timed (median and quartiles); copies and offloads on the GPU end to end and stage by stage
(H2D, kernel, D2H).

A measurement saved as JSON may come back from anywhere (another machine, an upload, an edited
file), so reading one is checked as strictly as any input: ``read_json``/``parse_json`` turn
unreadable, non-UTF-8, malformed or absurdly nested files into one line naming the file, and
``check_measurement`` names the first field that is missing or out of range.
"""

from __future__ import annotations

import datetime
import math
import platform
from collections.abc import Callable
from pathlib import Path

import attrs

from parsim.base.choices import MODES
from parsim.base.errors import ParsimError
from parsim.base.units import gib
from parsim.measure import cpu, gpu, kernels, programs, torch_conv
from parsim.measure.backends import backend as get_backend
from parsim.measure.backends import gpu_errors, host_free_memory_B
from parsim.measure.jsonfiles import choice, field, finite, json_kind, number, read_json, short, text
from parsim.measure.lock import check_timeout, measurement_lock
from parsim.measure.timing import time_callable
from parsim.workloads.registry import make_workload, validate_params

SCHEMA = "parsim.measurement/1"
GPU_ONLY = ("copy", "offload")
NOT_MEASURED = ("network", "serve", "data_parallel")
SISD_WORKLOADS = ("vector_add", "saxpy", "relu", "sigmoid", "reduce_sum", "matmul")  # cpu.sisd_operation's


@attrs.frozen
class Measurement:
    """A real timing of one workload on this machine.

    Attributes:
        workload: workload id.
        params: validated parameters (as measured: NumPy runs elementwise ops unfused).
        backend: ``numpy`` or ``cupy``.
        mode: Flynn mode of the implementation.
        device_name: what ran it.
        median_s: median time of one run.
        p25_s: 25th percentile.
        p75_s: 75th percentile.
        repeats: timed samples.
        stages: for GPU copies and offloads, the median of each stage timed alone.
        implementation: what code ran, in one sentence.
        measured_at: ISO time stamp.
        host: machine name.
    """

    workload: str
    params: dict
    backend: str
    mode: str
    device_name: str
    median_s: float
    p25_s: float
    p75_s: float
    repeats: int
    stages: dict = attrs.field(factory=dict)
    implementation: str = ""
    measured_at: str = ""
    host: str = ""

    def to_dict(self) -> dict:
        return {"schema": SCHEMA, **attrs.asdict(self)}

    @classmethod
    def from_dict(cls, data: object, source: str = "measurement") -> Measurement:
        """A measurement from its JSON form, once ``check_measurement`` accepts it."""
        data = check_measurement(data, source)
        fields = {f.name for f in attrs.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in fields})


CPU_PROGRAMS = ("vector_add", "saxpy", "relu", "sigmoid", "reduce_sum", "matmul", "conv2d", "mlp_train_step")
"""The workloads with a NumPy program (``cpu.cpu_operation``, ``kernels.mlp_train_step``)."""
GPU_PROGRAMS = (*CPU_PROGRAMS, *GPU_ONLY)
"""The workloads with a CuPy program (``_time_gpu``): the CPU's and the copies."""


def measurable(workload: str, backend: str = "numpy") -> bool:
    """Whether ``measure`` has a program for ``workload`` on ``backend`` (copies need a GPU; networks,
    language models and collectives are predicted only)."""
    return workload in (GPU_PROGRAMS if backend == "cupy" else CPU_PROGRAMS)


def check_measurable(
    workload: str, params: dict | None = None, backend: str = "numpy", mode: str | None = None
):
    """Everything ``measure`` checks before it runs anything, without running it: the workload has a
    program on ``backend``, its parameters and mode are valid, it fits in free memory.

    Returns:
        ``(backend, params, mode)`` as the measurement would run them.

    Raises:
        ParsimError: why ``measure`` would refuse, in one line.
    """
    if workload in NOT_MEASURED:
        raise ParsimError(
            f"{workload} is predicted but not measured: it needs a deep-learning framework "
            "(data_parallel also several GPUs); measure its kernels, e.g. matmul or conv2d, or mlp_train_step"
        )
    params = validate_params(workload, dict(params or {}))
    if backend == "numpy" and params.get("dtype") == "bfloat16":
        raise ParsimError(
            "NumPy has no bfloat16 type: measure float16 or float32 on the CPU, or bfloat16 on a GPU "
            "(--backend cupy, with pip install 'parsim[gpu]')"
        )
    with gpu_errors(f"measuring {workload}"):
        chosen = get_backend(backend)
        mode = _check_mode(chosen.name, workload, mode)
        if not measurable(workload, chosen.name):
            programs_here = ", ".join(GPU_PROGRAMS if chosen.name == "cupy" else CPU_PROGRAMS)
            raise ParsimError(f"{workload} is predicted but not measured: parsim measures {programs_here}")
        if chosen.name == "numpy" and "fused" in params:
            params["fused"] = False  # NumPy evaluates one operation at a time
        if chosen.name == "cupy":
            if "dtype" in params:
                chosen.dtype(params["dtype"])  # refuses bfloat16 where it cannot work, in one line
            _check_memory(
                workload, gpu.device_bytes(workload, params), chosen.free_memory_B(), chosen.device_name
            )
            _check_memory(workload, gpu.host_bytes(workload, params), host_free_memory_B(), "the host")
        else:
            _check_cpu(workload, params, mode)
            _check_memory(
                workload,
                make_workload(workload, params).footprint_B,
                chosen.free_memory_B(),
                chosen.device_name,
            )
        programs.check(chosen.name, workload, params)
    return chosen, params, mode


def measure(
    workload: str,
    params: dict | None = None,
    backend: str = "numpy",
    mode: str | None = None,
    budget_s: float = 0.2,
    lock_timeout_s: float = 600.0,
    on_wait: Callable[[str], None] | None = None,
) -> Measurement:
    """Time ``workload`` on this machine.

    Every input is checked before the machine's measurement lock is taken.

    Args:
        workload: a workload name known to ``predict``.
        params: its parameters (``{"n": 1e7}``).
        backend: ``numpy`` (CPU) or ``cupy`` (GPU).
        mode: Flynn mode on the CPU (default ``mimd+simd``); ``simt`` on the GPU.
        budget_s: time spent repeating the measurement (at least 5 repeats).
        lock_timeout_s: how long to wait for another measurement on this machine.
        on_wait: told once, in one line, when another measurement holds the machine (default: a
            ``ParsimNote`` warning, which the CLI prints on stderr).

    Raises:
        ParsimError: unknown or unmeasurable workload, bad mode, no GPU, data too large, or the
            machine busy for longer than ``lock_timeout_s``.
    """
    if isinstance(budget_s, bool) or not isinstance(budget_s, int | float) or not 0 < budget_s < math.inf:
        raise ParsimError(f"'budget_s' must be a finite number of seconds > 0: {budget_s!r}")
    check_timeout(lock_timeout_s)
    chosen, params, mode = check_measurable(workload, params, backend, mode)
    with gpu_errors(f"measuring {workload}"), measurement_lock(lock_timeout_s, on_wait=on_wait):
        if chosen.name == "numpy":
            timing, stages, how = _measure_cpu(chosen, workload, params, mode, budget_s)
        else:
            timing, stages, how, params = _measure_gpu(chosen, workload, params, budget_s)
    params = programs.as_ran(chosen.name, workload, params)
    return Measurement(
        workload=workload,
        params=params,
        backend=chosen.name,
        mode=mode,
        device_name=chosen.device_name,
        median_s=timing.median_s,
        p25_s=timing.p25_s,
        p75_s=timing.p75_s,
        repeats=timing.repeats,
        stages=stages,
        implementation=how,
        measured_at=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        host=platform.node(),
    )


def _check_memory(workload: str, need: float, free: float, where: str) -> None:
    """Refuse a measurement that would take more than half of the free memory ``where``."""
    if need > free / 2:
        raise ParsimError(
            f"{workload} needs {gib(need)}, more than half of the {gib(free)} free on {where}; "
            "choose a smaller size"
        )


def _check_mode(backend: str, workload: str, mode: str | None) -> str:
    if backend == "cupy":
        if mode not in (None, "simt"):
            raise ParsimError(f"'mode' on the cupy backend is simt (the GPU's own): {mode!r}")
        return "simt"
    if workload in GPU_ONLY:
        raise ParsimError(f"{workload} measures host<->device transfers and needs the cupy backend (a GPU)")
    mode = mode or "mimd+simd"
    if mode not in MODES or mode == "simt":
        raise ParsimError(f"'mode' on the numpy backend must be sisd, simd, mimd or mimd+simd: {mode!r}")
    return mode


def _check_cpu(workload: str, params: dict, mode: str) -> None:
    """What the CPU implementations would refuse, refused before the lock is taken."""
    if workload == "mlp_train_step" and mode in ("sisd", "mimd"):
        raise ParsimError("mlp_train_step is measured with NumPy and its BLAS: mode simd or mimd+simd")
    if mode != "sisd":
        return
    if workload not in SISD_WORKLOADS:
        raise ParsimError(
            f"sisd (a Python loop) is implemented for {', '.join(SISD_WORKLOADS)}: not {workload}"
        )
    steps = params["m"] * params["n"] * params["k"] if workload == "matmul" else params["n"]
    if steps > cpu.SISD_MAX_STEPS:
        raise ParsimError(
            f"sisd runs a Python loop: {workload} with {steps:.3g} steps takes too long to repeat; "
            f"use at most {cpu.SISD_MAX_STEPS:.0e} (e.g. n=1e5)"
        )


IMPLEMENTATIONS = {
    "sisd": "a pure-Python loop over Python floats",
    "simd": "NumPy on one thread (BLAS limited to one thread)",
    "mimd": "one thread per core over contiguous chunks, one BLAS thread each",
    "mimd+simd": "all cores: chunked threads for elementwise ops, multithreaded BLAS for matrix products",
}


def _measure_cpu(backend, workload: str, params: dict, mode: str, budget_s: float):
    if workload == "mlp_train_step":
        limit = cpu._blas_one_thread() if mode == "simd" else None
        try:
            return (
                time_callable(kernels.mlp_train_step(backend, params), budget_s=budget_s),
                {},
                ("NumPy forward, backward and SGD update (the weights stay in memory: no copies on a CPU)"),
            )
        finally:
            if limit is not None:
                limit.close()
    operation, resource = cpu.cpu_operation(backend, workload, params, mode)
    try:
        timing = time_callable(operation, budget_s=budget_s)
    finally:
        if resource is not None:
            resource.close()
    taps = ""
    if workload == "conv2d":
        taps = "; the convolution as one BLAS product per filter tap (tensordot)"
        taps += ", as NumPy has no convolution library (oneDNN)" if params["algorithm"] == "auto" else ""
    return timing, {}, IMPLEMENTATIONS[mode] + taps


def _measure_gpu(backend, workload: str, params: dict, budget_s: float):
    """Time ``workload`` on the GPU: ``(timing, stages, implementation, params as they ran)``."""
    if workload == "conv2d" and params["algorithm"] == "auto":
        return torch_conv.measure(backend, params, budget_s)
    return programs.in_math_asked(backend, params, lambda: _time_gpu(backend, workload, params, budget_s))


def _time_gpu(backend, workload: str, params: dict, budget_s: float):
    cupy = backend.xp
    params = {**params, "dtype": backend.dtype(params["dtype"])} if "dtype" in params else params
    if workload == "copy":
        operation = gpu.copy_operation(
            backend, params["n"], params["dtype"], params["direction"], params["pinned"]
        )
        timing = time_callable(operation, sync=backend.sync, budget_s=budget_s)
        kind = "pinned (cupyx.empty_pinned)" if params["pinned"] else "pageable (numpy.empty)"
        return timing, {}, f"ndarray.set/get on a stream from a {kind} host buffer"
    if workload == "offload":
        parts = gpu.offload_operations(
            backend,
            params["op"],
            params["n"],
            params["dtype"],
            params["streams"],
            params["pinned"],
            fused=True,
        )
        stages = {
            name: time_callable(op, sync=backend.sync, budget_s=budget_s / 4).median_s
            for name, op in parts.items()
            if name != "end_to_end"
        }
        timing = time_callable(parts["end_to_end"], sync=backend.sync, budget_s=budget_s)
        return timing, stages, f"H2D, fused kernel, D2H per chunk on {params['streams']} stream(s)"
    if workload == "mlp_train_step":
        staging = gpu.HostStaging(backend, pinned=params["pinned"])
        operation = kernels.mlp_train_step(backend, params, staging=staging)
        timing = time_callable(operation, sync=backend.sync, budget_s=budget_s)
        where = "on the host" if params["weights"] == "copied" else "on the GPU"
        kind = "page-locked (cupyx.empty_pinned)" if params["pinned"] else "pageable (numpy.empty)"
        return (
            timing,
            {},
            (
                f"CuPy forward, backward and SGD update {where} (weights {params['weights']}), "
                f"copies from {kind} host buffers"
            ),
        )
    operation = _device_operation(backend, cupy, workload, params)
    how = "CuPy kernels timed with CUDA events"
    if workload == "conv2d":
        how += "; the convolution as one cuBLAS product per filter tap (tensordot), added into the output"
    return backend.time(operation, budget_s=budget_s), {}, how


def _device_operation(backend, cupy, workload: str, params: dict) -> kernels.Operation:
    dtype = params["dtype"]
    if workload in ("vector_add", "saxpy", "relu", "sigmoid"):
        names = gpu.arrays_for(workload, fused=params["fused"] and workload in gpu.FUSED)
        arrays = kernels.elementwise_arrays(backend, params["n"], dtype, names)
        fused = gpu.fused_operation(cupy, workload, arrays) if params["fused"] else None
        passes = [fused] if fused else kernels.elementwise_passes(cupy, workload, arrays)
        return passes[0] if len(passes) == 1 else (lambda: [step() for step in passes])
    if workload == "reduce_sum":
        return kernels.reduce_sum(backend, params["n"], dtype)
    if workload == "matmul":
        return kernels.matmul(backend, params["m"], params["n"], params["k"], dtype)
    keys = ("batch", "channels", "height", "width", "filters", "kernel", "dtype")
    return kernels.conv2d(backend, *(params[key] for key in keys))


# --- reading measurement files ----------------------------------------------------------------


def load_measurement(path: str | Path) -> Measurement:
    """A measurement file written by ``parsim measure --out`` (on this or another machine)."""
    return Measurement.from_dict(read_json(path, "measurement"), str(path))


def check_measurement(data: object, source: str = "measurement") -> dict:
    """``data`` once it is a whole parsim measurement (the JSON form of ``Measurement``).

    Fields beyond a measurement's are left alone, except ``predicted_s`` (which the app adds),
    which must then be a time or null.

    Raises:
        ParsimError: ``<source>: not a parsim measurement (...)`` for another kind of document,
            ``<source>: not a valid parsim measurement: <field> ...`` for the first bad field.
    """
    if not isinstance(data, dict):
        raise ParsimError(
            f"{source}: not a parsim measurement (a JSON {json_kind(data)}, expected an object)"
        )
    if data.get("schema") != SCHEMA:
        raise ParsimError(
            f"{source}: not a parsim measurement (schema {short(data.get('schema'))}, expected {SCHEMA!r})"
        )
    try:
        text(data, "workload")
        text(data, "device_name", empty=True)
        params = field(data, "params", dict)
        for key, value in params.items():
            if not (value is None or isinstance(value, str | bool) or finite(value)):
                raise ParsimError(
                    f"'params.{key}' must be a number, text, true/false or null: {short(value)}"
                )
        choice(data, "backend", ("numpy", "cupy"))
        choice(data, "mode", MODES)
        number(data, "median_s", positive=True)
        number(data, "p25_s")
        number(data, "p75_s")
        repeats = field(data, "repeats", int)
        if isinstance(repeats, bool) or repeats < 1:
            raise ParsimError(f"'repeats' must be a whole number >= 1: {short(repeats)}")
        for key in ("implementation", "measured_at", "host"):
            if key in data:
                text(data, key, empty=True)
        stages = field(data, "stages", dict) if "stages" in data else {}
        for key in stages:
            number(stages, key, where="stages")
        if data.get("predicted_s") is not None:
            number(data, "predicted_s", positive=True)
    except ParsimError as exc:
        raise ParsimError(f"{source}: not a valid parsim measurement: {exc}") from None
    return data


# Small checks shared with the validation report (parsim.studies.validate): each names the field, the
# bound and the value, and never prints more than a few dozen characters of what it found.
