"""``parsim sweep``: a parameter sweep from the command line, with a progress bar and a plot.

Mistakes are refused before any work, in one line: the grid, its values and size, the output,
and the columns ``--x``/``--y``/``--hue`` name. With ``--out`` the rows stream to the file and
are not kept in memory (a ten-million-point sweep stays small); a resumed sweep says what it kept.
A sweep whose every measurement failed exits with code 2 after saving its rows.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Annotated

import typer

from parsim.base import safefiles
from parsim.base.choices import Method
from parsim.base.errors import Interrupted, ParsimError
from parsim.base.paths import output_path
from parsim.cli.limits import NoLimits, budget_of

USUAL = ("latency_s", "throughput_per_s", "flops_per_s", "bytes_per_s", "device", "case")  # hints first


# llm_serve's request figures, shown beside the program's latency when a sweep has them
SERVING_COLUMNS = ("time_to_first_token_s", "time_per_output_token_s", "tokens_per_s")


def register(app: typer.Typer) -> None:
    app.command()(sweep)


def sweep(
    scenario: Annotated[
        Path | None,
        typer.Argument(help="a lesson's name or a scenario TOML whose cases are swept (optional)"),
    ] = None,
    grid: Annotated[
        list[str] | None,
        typer.Option(
            "--grid", help="FIELD=VALUES, e.g. workload.n=logspace:1e3:1e9:25; repeat for more fields"
        ),
    ] = None,
    zip_: Annotated[
        bool, typer.Option("--zip", help="Pair the i-th values of the fields instead of all combinations.")
    ] = False,
    base: Annotated[
        list[str] | None, typer.Option("--set", help="FIELD=VALUE fixed for every point (no scenario)")
    ] = None,
    method: Annotated[Method | None, typer.Option(help="engine or analytic for every point")] = None,
    workers: Annotated[int, typer.Option(help="worker processes", min=1)] = 1,
    dask: Annotated[
        str | None, typer.Option(help="'local' or a scheduler address such as tcp://host:8786")
    ] = None,
    dask_timeout: Annotated[
        float, typer.Option(help="seconds to wait for the Dask scheduler", min=0.1)
    ] = 10.0,
    measure: Annotated[
        bool, typer.Option("--measure", help="Also measure every point on this machine.")
    ] = False,
    out: Annotated[
        Path | None,
        typer.Option(help="Output .csv, .parquet or .jsonl (written as rows finish; rerun to resume)."),
    ] = None,
    plot: Annotated[Path | None, typer.Option(help="Save a PNG of the sweep.")] = None,
    x: Annotated[
        str | None, typer.Option(help="column along the plot's x axis (default: the first grid field)")
    ] = None,
    y: Annotated[str, typer.Option(help="column plotted against --x")] = "latency_s",
    hue: Annotated[
        str | None, typer.Option(help="column(s), comma-separated, telling the plotted lines apart")
    ] = None,
    no_limits: NoLimits = False,
):
    """Predict every combination of the grid; rows to a table, a file and a plot."""
    # Everything that can be wrong is refused here, before a cluster starts or a point is computed.
    checked, x, hues = _checked(scenario, grid, zip_, base, method, measure, out, plot, x, y, hue)
    _check_limits(budget_of(no_limits), workers, out, checked)
    store = _open(checked, out, measure)
    _execute(checked, store, out, workers, dask, dask_timeout)
    rows, errors = store.counts()
    typer.echo(f"{rows} points ({errors} with errors){f', saved {out}' if out else ''}")
    frame = store.frame() if store.keep else None
    if out is None:
        _print_rows(frame, checked)
    if plot is not None:
        data = frame if frame is not None else _plotted(out, checked, [x, y, *(hues or [])])
        _save_plot(plot, data, checked, x, y, hues)
    from parsim.studies.sweeps.api import measure_failure

    failure = measure_failure(store)
    if failure:
        raise ParsimError(failure)  # every row is saved; the exit code says the measuring failed


def _checked(scenario, grid, zip_, base, method, measure, out, plot, x, y, hue):
    """The planned sweep, the plot's x column and its hue columns, once every option is checked."""
    from parsim.base.units import parse_assignments
    from parsim.studies.sweeps.api import plan
    from parsim.studies.sweeps.grid import parse_grid_options

    fields = parse_grid_options(grid or [])
    if plot is not None:
        output_path(plot, (".png",), "--plot")
    checked = plan(
        _base(scenario, parse_assignments(base or [])),
        fields,
        zip=zip_,
        measure=measure,
        out=out,
        method=method,
    )
    hues = [h.strip() for h in hue.split(",") if h.strip()] if hue else None
    if plot is not None or x is not None:
        default = "" if x else " (the first grid field; choose another with --x)"
        x = x or checked.grid.fields[0]
        _check_column("--x", x, checked.numeric, default)
    _check_column("--y", y, checked.numeric)
    for name in hues or []:
        _check_column("--hue", name, checked.columns)
    return checked, x, hues


def _check_limits(limits, workers: int, out: Path | None, checked) -> None:
    """The user's budget: worker processes, and the rows a sweep without ``--out`` keeps in memory."""
    if limits is None:
        return
    limits.check(workers, "workers", "--workers")
    if out is None:
        what = "points of a sweep without --out (its rows are kept in memory; --out writes them)"
        limits.check(checked.total, "kept_rows", what)


def _open(checked, out: Path | None, measure: bool):
    """The sweep's store (rows kept in memory without ``--out``), saying what a resumed one kept."""
    from parsim.studies.sweeps.api import open_store

    store = open_store(checked, keep=out is None or measure)
    if store.resumed:
        retried = f" ({store.resumed_failed} with errors, computed again)" if store.resumed_failed else ""
        typer.echo(f"resumed {out}: kept {store.resumed} rows from an earlier run{retried}", err=True)
    return store


def _execute(checked, store, out: Path | None, workers: int, dask: str | None, dask_timeout: float) -> None:
    """Compute every point into ``store`` with a progress bar; Ctrl-C says what was kept."""
    from parsim.studies.sweeps.api import dask_map, execute_plan

    try:
        mapper, close = dask_map(dask, workers if workers > 1 else 2, dask_timeout) if dask else (None, None)
    except BaseException:
        store.close(False)
        raise
    try:
        with typer.progressbar(length=1, label="sweeping") as bar:
            execute_plan(checked, store, mapper or workers, _progress(bar))
    except KeyboardInterrupt:
        if out is None:
            raise Interrupted("no rows were kept (give --out to keep them)") from None
        kept = f"{store.counts()[0]} finished rows are kept in {out}; run the same command again to resume"
        raise Interrupted(kept) from None
    finally:
        if close is not None:
            close()


def _progress(bar):
    """A progress callback that redraws ``bar`` at most ~200 times however long the sweep."""
    state = {"done": 0}

    def progress(done: int, total: int) -> None:
        if done - state["done"] < max(1, total // 200) and done != total:
            return
        bar.length = max(total, 1)
        bar.update(done - state["done"])
        state["done"] = done

    return progress


def _print_rows(frame, checked) -> None:
    """The kept rows as a table: the grid, the case, the latency (and serving figures), the errors."""
    shown = [
        c
        for c in [*checked.grid.fields, "case", "latency_s", *SERVING_COLUMNS, "bottleneck", "error"]
        if c in frame.columns
    ]
    typer.echo(frame[shown].to_string(max_rows=40))


def _save_plot(plot: Path, data, checked, x: str, y: str, hues: list[str] | None) -> None:
    """Draw the sweep to ``plot``; refused when every point has an error (nothing to draw)."""
    from parsim import plots

    data.attrs.update({"grid": list(checked.grid.fields), "log": sorted(checked.grid.log_fields)})
    errors = data["error"].fillna("").astype(str) if "error" in data else None
    if errors is not None and (errors != "").all():
        first = errors.iloc[0]
        raise ParsimError(f"'--plot': nothing to draw, every point has an error (the first: {first})")
    figure = plots.sweep(data, x=x, y=y, hue=hues)
    safefiles.write_with(plot, lambda out: figure.savefig(out, format="png", dpi=120), "--plot")
    typer.echo(f"saved {plot}", err=True)


def _check_column(option: str, name: str, known: frozenset[str], why: str = "") -> None:
    """Refuse a plot column the sweep will not have (or that holds no numbers), before the sweep."""
    if name in known:
        return
    close = difflib.get_close_matches(name, sorted(known), n=3, cutoff=0.5)
    first = sorted(known, key=lambda c: (c not in USUAL, USUAL.index(c) if c in USUAL else 0, c))
    hint = f"closest: {', '.join(close)}" if close else f"e.g. {', '.join(first[:5])}"
    what = "a column of this sweep" if option == "--hue" else "a column of this sweep holding numbers"
    raise ParsimError(f"'{option}' must be {what}: {name!r}{why}; {hint}")


def _plotted(out: Path, checked, wanted: list[str]):
    """The columns a plot needs, read back from the saved sweep (its rows were not kept in memory)."""
    import pandas

    from parsim.studies.sweeps.tables import header, read_chunks

    present = set(header(out))
    columns = [c for c in dict.fromkeys([*wanted, "case", "error", *checked.grid.fields]) if c in present]
    chunks = list(read_chunks(out, columns))
    return pandas.concat(chunks, ignore_index=True) if chunks else pandas.DataFrame(columns=columns)


def _base(scenario: Path | None, fixed: dict):
    if scenario is not None:
        if fixed:
            raise ParsimError("--set applies without a scenario; with one, sweep its fields with --grid")
        return scenario
    base: dict = {"params": {}}
    for field, value in fixed.items():
        if field.startswith("workload."):
            base["params"][field.split(".", 1)[1]] = value
        else:
            base[field] = value
    return base
