"""The ``parsim`` command line: hardware presets, predictions and scenarios.

Every user mistake becomes one line on stderr and exit code 2 (typer's own usage errors
already exit 2); a traceback means a bug in parsim, never in the input.
"""

from __future__ import annotations

import re
import sys
import warnings
from pathlib import Path
from typing import Annotated

import typer
from typer._click.exceptions import NoArgsIsHelpError

from parsim.base import jsontext, safefiles, units
from parsim.base.choices import Method, Mode, Overlap
from parsim.base.errors import Interrupted, ParsimError, ParsimNote
from parsim.base.paths import output_path
from parsim.cli import capacity as cli_capacity
from parsim.cli import hardware as cli_hardware
from parsim.cli import lessons as cli_lessons
from parsim.cli import measure as cli_measure
from parsim.cli import splits as cli_splits
from parsim.cli import sweep as cli_sweep
from parsim.cli import traces as cli_traces
from parsim.cli.hardware import Json
from parsim.cli.limits import NoLimits, budget_of

_show_warning = warnings.showwarning
app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Predict and explain how fast work runs on parallel hardware.",
)


@app.command()
def predict(
    workload: Annotated[str, typer.Argument(help="workload name, e.g. vector_add, matmul, offload")],
    params: Annotated[
        list[str] | None, typer.Argument(metavar="[KEY=VALUE]...", help="n=1e8 dtype=float16")
    ] = None,
    device: Annotated[
        str | None,
        typer.Option(help="preset id or hardware TOML that runs the kernels [default: laptop-4c-avx2]"),
    ] = None,
    cluster: Annotated[
        str | None,
        typer.Option(help="cluster preset id or TOML (dgx-a100, dgx-h100...): nodes=N in the parameters"),
    ] = None,
    host: Annotated[str | None, typer.Option(help="host CPU for a GPU device")] = None,
    link: Annotated[str | None, typer.Option(help="host<->device link")] = None,
    mode: Annotated[
        Mode | None, typer.Option(help="Flynn mode (default: simt on a GPU, mimd+simd on a CPU)")
    ] = None,
    method: Annotated[Method, typer.Option(help="engine (SimPy) or analytic")] = "engine",
    overlap: Annotated[
        Overlap, typer.Option(help="roofline (max) or serial (sum) of compute and memory")
    ] = "roofline",
    gpus: Annotated[int | None, typer.Option(help="GPUs to spread the work over", min=1)] = None,
    gpus_per_switch: Annotated[int | None, typer.Option(help="GPUs behind one PCIe switch", min=1)] = None,
    as_json: Json = False,
    json_trace: Annotated[
        bool, typer.Option("--json-trace", help="Include the full trace (every busy interval) in --json.")
    ] = False,
    trace: Annotated[Path | None, typer.Option("--trace", metavar="FILE.json", help=cli_traces.HELP)] = None,
    plot: Annotated[Path | None, typer.Option(help="Save the timeline as a PNG.")] = None,
    no_limits: NoLimits = False,
):
    """Predict latency, throughput and the bottleneck of one workload."""
    from parsim.methods.predict import predict as run_predict

    if plot is not None:
        output_path(plot, (".png",), "--plot")
    trace = cli_traces.checked(trace)
    given = units.parse_assignments(params or [])
    device = device if device is not None or cluster is not None else "laptop-4c-avx2"
    result = run_predict(
        workload,
        given,
        device=device,
        cluster=cluster,
        host=host,
        link=link,
        mode=mode,
        method=method,
        overlap=overlap,
        gpus=gpus,
        gpus_per_switch=gpus_per_switch,
        budget=budget_of(no_limits),
    )
    if plot is not None:
        from parsim import plots

        _save(plots.timeline(result), plot)
    if trace is not None:
        cli_traces.write_prediction(
            trace,
            result,
            given,
            device=device,
            host=host,
            link=link,
            method=method,
            budget=budget_of(no_limits),
        )
    if as_json:
        typer.echo(jsontext.dumps(result.to_dict(trace=json_trace)))
        return
    from parsim.report.text import prediction_text

    typer.echo(prediction_text(result))


@app.command()
def run(
    scenario: Annotated[
        Path, typer.Argument(help="a lesson's name (see parsim lessons) or a scenario TOML file")
    ],
    plot: Annotated[Path | None, typer.Option(help="Save the scenario's figure as a PNG.")] = None,
    as_json: Json = False,
    lesson: Annotated[bool, typer.Option("--lesson/--no-lesson", help="Print the lesson text.")] = True,
    trace: Annotated[Path | None, typer.Option("--trace", metavar="FILE.json", help=cli_traces.HELP)] = None,
):
    """Run a scenario: predict every case and compare them."""
    from parsim.studies.scenarios import load_scenario, run_scenario

    if plot is not None:
        output_path(plot, (".png",), "--plot")
    trace = cli_traces.checked(trace)
    loaded = load_scenario(scenario)
    cli_traces.check_scenario(trace, loaded)
    result = run_scenario(loaded)
    if plot is not None:
        from parsim import plots

        _save(plots.scenario(result), plot)
    if trace is not None:
        cli_traces.write_scenario(trace, result, budget_of(False))
    if as_json:
        rows = [{"label": r.label, "value": r.value, **r.prediction.to_dict()} for r in result.results]
        typer.echo(
            jsontext.dumps({"title": result.scenario.title, "cases": rows, "crossovers": result.crossovers()})
        )
        return
    from parsim.report.text import scenario_text

    typer.echo(scenario_text(result, lesson))


def _save(figure, path: Path) -> None:
    safefiles.write_with(path, lambda out: figure.savefig(out, format="png", dpi=120), "--plot")
    typer.echo(f"saved {path}", err=True)


@app.command("app")
def run_app(
    port: Annotated[int, typer.Option(help="port to serve on", min=1, max=65535)] = 8501,
    headless: Annotated[bool, typer.Option("--headless", help="Do not open a browser.")] = False,
    address: Annotated[
        str,
        typer.Option(
            help="address to serve on: 127.0.0.1 (this machine only) or 0.0.0.0 (a classroom network)"
        ),
    ] = "127.0.0.1",
    warm: Annotated[
        bool,
        typer.Option(
            "--warm/--no-warm",
            help="compute the heavy first views (cluster lessons, Scale out's tabs, the split table) "
            "as the server starts",
        ),
    ] = True,
):
    """Start the Streamlit app (explore, compare, scale out, measure, learn).

    It listens on this machine only unless --address says otherwise: the app measures this
    machine and reads uploaded files, so serving it to a network is a choice. Streamlit always runs
    headless (its first-run e-mail prompt would stop a server started without a terminal); parsim
    opens the browser itself unless --headless is given or there is no terminal. As it starts, the
    server computes the heavy first views (the cluster lessons, Scale out's cluster and serving
    tabs, the split table) in the background, so their first visitor finds them computed; --no-warm
    leaves that out.
    """
    import threading

    from streamlit.web import cli as streamlit_cli

    from parsim.app import ENTRY, preload

    threading.Thread(target=preload, name="parsim-preload", daemon=True).start()
    if warm:  # the first visitor of a heavy view then finds it cached (parsim.app.warmup)
        from parsim.app import warmup

        warmup.start()
    if not headless and sys.stdout.isatty():
        threading.Thread(target=_open_browser, args=(port,), name="parsim-browser", daemon=True).start()
    sys.argv = [
        "streamlit",
        "run",
        str(ENTRY),
        "--server.port",
        str(port),
        "--server.address",
        address,
        "--browser.gatherUsageStats",
        "false",
        "--server.headless",
        "true",
    ]
    sys.exit(streamlit_cli.main())


def _open_browser(port: int, wait_s: float = 60.0) -> None:
    """Open this machine's browser on the app once the server answers (quietly gives up)."""
    import time
    import urllib.request
    import webbrowser

    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2):
                webbrowser.open(f"http://localhost:{port}")
                return
        except OSError:
            time.sleep(0.5)


cli_hardware.register(app)
cli_measure.register(app)
cli_lessons.register(app)
cli_sweep.register(app)
cli_splits.register(app)
cli_capacity.register(app)


def _note(message, category, *_args, **_kwargs) -> None:
    """Show a ``ParsimNote`` as one ``note:`` line on stderr (other warnings as Python would)."""
    if issubclass(category, ParsimNote):
        typer.echo(f"note: {message}", err=True)
    else:
        _show_warning(message, category, *_args, **_kwargs)


def _usage_line(exc: typer.TyperException) -> str:
    """A command-line mistake in parsim's own words: ``'--mode' must be one of sisd, ...: 'vliw'``."""
    message = re.sub(r"^Invalid value for '[^']+': ", "", exc.format_message()).removeprefix("Value error, ")
    param = getattr(exc, "param", None)
    name = f"'{param.opts[0]}'" if param is not None and param.opts else ""
    choice = re.fullmatch(r"'(.*)' is not one of (.*)\.", message)
    if choice and name:
        return f"{name} must be one of {choice[2].replace(chr(39), '')}: {choice[1]!r}"
    return f"{name} {message[:1].lower()}{message[1:]}" if name else message


def main() -> None:
    """Console entry point: every user mistake is one line on stderr and exit code 2."""
    warnings.showwarning = _note
    try:
        code = app(standalone_mode=False)
        if code == 130:  # Ctrl-C where a command keeps nothing (those that keep something say what)
            typer.echo("interrupted: nothing was written", err=True)
    except NoArgsIsHelpError as exc:
        typer.echo(exc.ctx.get_help())
        code = 0
    except typer.TyperException as exc:  # option and argument mistakes, as the parser found them
        typer.echo(f"error: {_usage_line(exc)}", err=True)
        code = 2
    except Interrupted as exc:
        typer.echo(f"interrupted: {exc}", err=True)
        code = 130
    except ParsimError as exc:
        typer.echo(f"error: {exc}", err=True)
        code = 2
    except OSError as exc:  # a file name the system refuses (too long, a folder, no permission): one line
        typer.echo(f"error: {_file_error(exc)}", err=True)
        code = 2
    sys.exit(code or 0)


def _file_error(exc: OSError) -> str:
    """``exc`` as ``<file>: <reason>``, a long name cut to its ends."""
    from parsim.base.safefiles import shown_name

    name = shown_name(exc.filename) if exc.filename is not None else ""
    reason = exc.strerror or exc.__class__.__name__
    return f"{name!r}: {reason}" if name else reason
