"""The measuring half of the command line: ``parsim measure``, ``calibrate`` and ``validate``.

They share the CLI's conventions: one-line errors with exit code 2, ``--json`` for scripts, and
files that another machine can load (measurements and reports as versioned JSON, calibrated
hardware as TOML).

Measuring takes seconds to minutes and may first wait for another measurement on this machine,
so everything that can be refused is refused first: the workload and its sizes, the files named
(``validate`` takes only the files ``parsim calibrate`` wrote here) and every output path, before
any lock is taken or any time is measured. A wait for the lock is announced once on stderr,
naming the process that holds it; ``--lock-timeout`` bounds it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from parsim.base import jsontext, safefiles, units
from parsim.base.choices import Backend, Mode
from parsim.base.errors import ParsimError
from parsim.base.paths import gpu_calibration, output_path

SHIPPED = (  # parsim/data/measured (tested)
    "h100-sxm-2026-11-25",
    "h100-sxm-2026-11-25-calibrated",
    "h200-2026-11-28",
    "h200-2026-11-28-calibrated-quick",
)
Json = Annotated[bool, typer.Option("--json", help="Print one JSON object instead of a table.")]
LockTimeout = Annotated[
    float,
    typer.Option(
        "--lock-timeout",
        min=0,
        help="Seconds to wait for another measurement on this machine before giving up.",
    ),
]


def register(app: typer.Typer) -> None:
    app.command()(measure)
    app.command()(calibrate)
    app.command()(validate)


def _writable(path: Path | None, suffix: str, option: str) -> None:
    """Refuse an output path before any work: ``output_path``'s checks, and an existing file that
    this user may not overwrite."""
    if path is None:
        return
    output_path(path, (suffix,), option)
    if path.exists() and not os.access(path, os.W_OK):
        raise ParsimError(f"'{option}': {str(path)!r} exists and is not writable")


def _write(path: Path, write, option: str) -> None:
    """``write(path)``, a failure (disk full, removed folder) in one line naming the option."""
    try:
        write(path)
    except OSError as exc:
        reason = exc.strerror or exc.__class__.__name__
        raise ParsimError(f"'{option}': cannot write {str(path)!r} ({reason})") from None


def _tell_once():
    """A lock-wait callback printing each distinct message once on stderr (a validation measures
    hundreds of points, and would otherwise repeat it for each one that waits)."""
    told: set[str] = set()

    def tell(message: str) -> None:
        if message not in told:
            told.add(message)
            typer.echo(f"note: {message}", err=True)

    return tell


def measure(
    workload: Annotated[str, typer.Argument(help="workload name, e.g. vector_add, matmul, offload")],
    params: Annotated[
        list[str] | None, typer.Argument(metavar="[KEY=VALUE]...", help="n=1e7 dtype=float32")
    ] = None,
    backend: Annotated[Backend, typer.Option(help="numpy (CPU) or cupy (GPU)")] = "numpy",
    mode: Annotated[Mode | None, typer.Option(help="sisd, simd, mimd or mimd+simd on the CPU")] = None,
    budget: Annotated[float, typer.Option(help="seconds spent repeating the timing", min=0.01, max=60)] = 0.5,
    out: Annotated[Path | None, typer.Option(help="Save the measurement as JSON.")] = None,
    lock_timeout: LockTimeout = 600.0,
    as_json: Json = False,
):
    """Time a workload for real on this machine (median and quartiles).

    A GPU measurement (--backend cupy) is printed beside its prediction for the GPU that ran it, and
    says which spec that was: this GPU's calibration (this-machine-gpu.toml here), the preset that
    matches its CUDA name, SM count and memory, or a quick calibration made now.
    """
    from parsim.measure import measure as run_measure

    _writable(out, ".json", "--out")
    result = run_measure(
        workload,
        units.parse_assignments(params or []),
        backend=backend,
        mode=mode,
        budget_s=budget,
        lock_timeout_s=lock_timeout,
        on_wait=_tell_once(),
    )
    document = {**result.to_dict(), **_gpu_prediction(result)}
    if out is not None:
        _write(out, lambda path: safefiles.write_text(path, jsontext.dumps(document), "--out"), "--out")
        typer.echo(f"saved {out}", err=True)
    if as_json:
        typer.echo(jsontext.dumps(document))
        return
    shown = units.assignments(result.params)
    typer.echo(f"{result.workload} {shown}")
    typer.echo(f"  on {result.device_name} ({result.backend}, {result.mode}): {result.implementation}")
    typer.echo(
        f"  median       {units.seconds(result.median_s)}  (p25 {units.seconds(result.p25_s)}, "
        f"p75 {units.seconds(result.p75_s)}, {result.repeats} repeats)"
    )
    for stage, seconds in result.stages.items():
        typer.echo(f"  {stage:<13}{units.seconds(seconds)}")
    if document.get("predicted_s"):
        error = document["predicted_s"] / result.median_s - 1
        typer.echo(
            f"  predicted    {units.seconds(document['predicted_s'])}  ({error:+.0%}), "
            f"{document['predicted_for']}"
        )
    elif "predicted_for" in document:
        typer.echo(f"  not predicted: {document['predicted_for']}")


def _gpu_prediction(result) -> dict:
    """For a CuPy measurement, its prediction for the GPU that ran it and which spec that was
    (``parsim.measure.present``); nothing for a CPU measurement."""
    if result.backend != "cupy":
        return {}
    from parsim.measure.present import present_gpu

    try:
        here = present_gpu(tell=lambda message: typer.echo(f"note: {message}", err=True))
        predicted = here.predict(result.workload, result.params).latency_s
    except ParsimError as exc:
        return {"predicted_s": None, "predicted_for": str(exc)}
    return {"predicted_s": predicted, "predicted_for": here.label}


def calibrate(
    out: Annotated[Path, typer.Option(help="Hardware TOML to write for this machine's CPU.")] = Path(
        "this-machine.toml"
    ),
    quick: Annotated[bool, typer.Option("--quick/--thorough", help="Quick (<= 30 s) or thorough.")] = False,
    gpu: Annotated[
        bool, typer.Option("--gpu/--no-gpu", help="Also calibrate the GPU when CuPy finds one.")
    ] = True,
    lock_timeout: LockTimeout = 600.0,
):
    """Measure this machine and write hardware TOML that --device/--host accept."""
    from parsim.hardware.tomlio import save_hardware
    from parsim.measure.backends import gpu_available
    from parsim.measure.calibrate import calibrate as run_calibrate
    from parsim.measure.calibrate import describe

    _writable(out, ".toml", "--out")
    device_path, link_path = gpu_calibration(out)
    if gpu:  # the GPU's files go beside the CPU's: refused now rather than after the CPU is measured
        _writable(device_path, ".toml", "--out (its -gpu.toml)")
        _writable(link_path, ".toml", "--out (its -link.toml)")
    tell = _tell_once()
    spec, raw = _with_progress(
        "calibrating the CPU",
        lambda progress: run_calibrate(quick, progress, lock_timeout_s=lock_timeout, on_wait=tell),
    )
    _write(out, lambda path: save_hardware(spec, path, describe(raw, quick)), "--out")
    typer.echo(
        f"wrote {out}: {spec.name}, {spec.cores} cores, "
        f"{units.si(spec.memory.bandwidth_Bps, 'B/s')} DRAM, dispatch {units.seconds(spec.dispatch_s)}"
    )
    for note in raw.get("notes", []):  # timings dropped as implausible (also in the file's [meta])
        typer.echo(f"note: {note}", err=True)
    available, why = gpu_available()
    if gpu and available:
        from parsim.measure.gpu_calibrate import calibrate_gpu

        device, link, raw_gpu = _with_progress(
            "calibrating the GPU", lambda progress: calibrate_gpu(quick, progress)
        )
        meta = describe(raw_gpu, quick, kind="gpu")
        _write(device_path, lambda path: save_hardware(device, path, meta), "--out")
        _write(link_path, lambda path: save_hardware(link, path, meta), "--out")
        typer.echo(
            f"wrote {device_path} and {link_path}: use --device {device_path} --host {out} --link {link_path}"
        )
    elif gpu:
        typer.echo(f"no GPU calibration: {why}", err=True)


def _with_progress(label: str, work):
    with typer.progressbar(length=100, label=label, file=sys.stderr) as bar:  # stdout stays clean for --json
        state = {"done": 0}

        def progress(step: int, steps: int, _what: str) -> None:
            target = int(100 * step / max(steps, 1))
            bar.update(target - state["done"])
            state["done"] = target

        return work(progress)


def validate(
    device: Annotated[
        Path | None, typer.Option(help="Calibrated hardware TOML of this machine's CPU.")
    ] = None,
    gpu_device: Annotated[Path | None, typer.Option("--gpu-device", help="Calibrated GPU TOML.")] = None,
    gpu_link: Annotated[Path | None, typer.Option("--gpu-link", help="Calibrated link TOML.")] = None,
    quick: Annotated[bool, typer.Option("--quick/--full", help="The small grid or the full one.")] = True,
    budget: Annotated[float, typer.Option(help="seconds of timing per point", min=0.01, max=10)] = 0.2,
    out: Annotated[Path | None, typer.Option(help="Save the report as JSON.")] = None,
    load: Annotated[
        str | None,
        typer.Option(
            help="Show a saved report instead of measuring: a JSON file, or the name of a measurement "
            f"shipped with parsim ({', '.join(SHIPPED)}). A file that names its GPU preset is predicted "
            "again with the installed model.",
        ),
    ] = None,
    record: Annotated[
        Path | None,
        typer.Option(
            help="Measure the grid recorded on the H100 (elementwise, reduce, matmul, conv2d, copies, "
            "offloads, MLP steps) on this machine's GPU, predict it for that GPU, and write the report "
            "to this new .json file (never over an existing file or through a link). Needs a GPU.",
        ),
    ] = None,
    published: Annotated[
        bool,
        typer.Option(
            "--published",
            help="Compare predictions with the published GPU/CPU measurements shipped with parsim "
            "(no measuring; works without a GPU).",
        ),
    ] = False,
    summary_only: Annotated[
        bool, typer.Option("--summary", help="With --published: only the per-class table.")
    ] = False,
    only_class: Annotated[
        list[str] | None,
        typer.Option(
            "--class",
            help="With --published: only the rows of this class (repeat for several), e.g. "
            "--class llm-decode --class serving.",
        ),
    ] = None,
    plot: Annotated[
        Path | None,
        typer.Option(
            help="With --published: save the predicted-vs-published figure (a panel per class) as a PNG."
        ),
    ] = None,
    lock_timeout: LockTimeout = 600.0,
    as_json: Json = False,
):
    """Measure a grid of workloads, predict them with the calibrated spec, report the errors.

    With --published, predict every published measurement instead and report the error per class.
    With --load NAME, show a measurement shipped with parsim (e.g. h100-sxm-2026-11-25: an H100 SXM
    measured by parsim) beside today's prediction. With --record OUT.json, measure that same grid on
    this machine's GPU and write a new file of the same kind.
    """
    from parsim.studies import measured
    from parsim.studies import validate as validation

    _writable(out, ".json", "--out")
    _writable(plot, ".png", "--plot")
    if only_class and not published:
        raise ParsimError("'--class' goes with --published")
    if plot is not None and not published:
        raise ParsimError("'--plot' goes with --published")
    if record is not None:
        others = (load, device, gpu_device, gpu_link, out)
        if published or summary_only or any(other is not None for other in others):
            raise ParsimError(
                "'--record' measures this machine's GPU and writes the report to the file it names; it "
                "takes no --load, --published, --summary, --device, --gpu-device, --gpu-link or --out"
            )
        _record(record, budget, lock_timeout, as_json)
        return
    if published:
        if device is not None or gpu_device is not None or gpu_link is not None or load is not None:
            raise ParsimError(
                "'--published' compares with shipped measurements; it takes no --device, --gpu-device, "
                "--gpu-link or --load"
            )
        _published(out, plot, summary_only, as_json, tuple(only_class or ()))
        return
    if summary_only:
        raise ParsimError("'--summary' goes with --published")
    if load is not None:
        data = measured.load(load)
    else:
        if device is None:
            raise ParsimError(
                "'--device' is required: the calibrated TOML of this machine (parsim calibrate)"
            )
        if gpu_device is not None or gpu_link is not None:
            if gpu_device is None or gpu_link is None:
                raise ParsimError(
                    "'--gpu-device' and '--gpu-link' go together (both written by parsim calibrate)"
                )
            from parsim.measure.backends import gpu_available

            available, why = gpu_available()
            if not available:
                raise ParsimError(
                    f"'--gpu-device': validating the GPU needs one here, and {why[0].lower()}{why[1:]}"
                )
        # Validation compares this machine with its own calibrated files: anything else (a preset,
        # a GPU, another machine's file) is refused here, before a minute of measuring.
        cpu_spec = validation.calibrated_spec(device, "cpu", "--device")
        gpu_specs = None
        if gpu_device is not None and gpu_link is not None:
            gpu_specs = {
                "device": validation.calibrated_spec(gpu_device, "gpu", "--gpu-device"),
                "host": cpu_spec,
                "link": validation.calibrated_spec(gpu_link, "link", "--gpu-link"),
            }
        backends = None if gpu_specs else ["numpy"]
        tell = _tell_once()
        data = _with_progress(
            "validating",
            lambda progress: validation.validate(
                cpu_spec,
                gpu_specs,
                quick=quick,
                backends=backends,
                budget_s=budget,
                progress=progress,
                lock_timeout_s=lock_timeout,
                on_wait=tell,
            ),
        )
    from parsim.report.text import validation_text

    _emit(data, out, as_json, validation.save_report, validation_text)


def _record(out: Path, budget: float, lock_timeout: float, as_json: bool) -> None:
    """``--record``: the grid measured on this GPU, written to a new file ``out``."""
    from parsim.report.text import validation_text
    from parsim.studies import measured

    measured.check_recordable(out)  # no GPU, or a file or link already there
    output_path(out, (".json",), "--record")
    data = _with_progress(
        "measuring the grid on this GPU",
        lambda progress: measured.record(
            out, budget_s=min(budget, 1.0), progress=progress, lock_timeout_s=lock_timeout
        ),
    )
    typer.echo(f"wrote {out}: {measured.headline(data)}", err=True)
    typer.echo(jsontext.dumps(data) if as_json else validation_text(data))


def _published(
    out: Path | None, plot: Path | None, summary_only: bool, as_json: bool, classes: tuple[str, ...]
) -> None:
    from parsim import plots
    from parsim.report.text import published_text
    from parsim.studies import published

    rows = published.rows_of(classes)
    data = published.report(
        _with_progress("predicting", lambda progress: published.compare(rows, progress=progress))
    )
    if plot is not None:
        png = plots.published_png(data)
        _write(plot, lambda path: safefiles.write_with(path, lambda out: out.write(png), "--plot"), "--plot")
        typer.echo(f"saved {plot}", err=True)
    _emit(data, out, as_json, published.save, lambda d: published_text(d, rows=not summary_only))


def _emit(data: dict, out: Path | None, as_json: bool, save, text) -> None:
    """A report saved to ``out`` (when given), then printed as JSON or as ``text(data)``."""
    if out is not None:
        _write(out, lambda path: save(data, path), "--out")
        typer.echo(f"saved {out}", err=True)
    typer.echo(jsontext.dumps(data) if as_json else text(data))
