"""``parsim sweep``: a parameter sweep from the command line, with a progress bar and a plot."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from parsim.choices import Method
from parsim.errors import ParsimError
from parsim.paths import output_path


def register(app: typer.Typer) -> None:
    app.command()(sweep)


def sweep(
    scenario: Annotated[
        Path | None, typer.Argument(help="scenario TOML whose cases are swept (optional)")
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
    y: Annotated[str, typer.Option(help="column plotted against the first grid field")] = "latency_s",
):
    """Predict every combination of the grid; rows to a table, a file and a plot."""
    from parsim import plots
    from parsim.sweeps.api import dask_map
    from parsim.sweeps.api import sweep as run_sweep
    from parsim.sweeps.grid import parse_grid_options
    from parsim.sweeps.store import check_output
    from parsim.units import parse_assignments

    fields = parse_grid_options(grid or [])
    check_output(out)
    if plot is not None:
        output_path(plot, (".png",), "--plot")
    source = _base(scenario, parse_assignments(base or []))
    mapper, close = dask_map(dask, workers if workers > 1 else 2, dask_timeout) if dask else (None, None)
    try:
        with typer.progressbar(length=1, label="sweeping") as bar:
            state = {"done": 0}

            def progress(done: int, total: int) -> None:
                if done - state["done"] < max(1, total // 200) and done != total:
                    return  # redraw at most ~200 times however long the sweep
                bar.length = max(total, 1)
                bar.update(done - state["done"])
                state["done"] = done

            frame = run_sweep(
                source,
                fields,
                zip=zip_,
                workers=mapper or workers,
                measure=measure,
                out=out,
                progress=progress,
                method=method,
            )
    finally:
        if close is not None:
            close()
    errors = int((frame["error"].fillna("") != "").sum()) if "error" in frame else 0
    typer.echo(f"{len(frame)} points ({errors} with errors){f', saved {out}' if out else ''}")
    if out is None:
        shown = [
            c
            for c in [*frame.attrs.get("grid", []), "case", "latency_s", "bottleneck", "error"]
            if c in frame.columns
        ]
        typer.echo(frame[shown].to_string(max_rows=40))
    if plot is not None:
        plots.sweep(frame, x=frame.attrs["grid"][0], y=y).savefig(plot, dpi=120)
        typer.echo(f"saved {plot}", err=True)


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
