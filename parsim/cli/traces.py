"""``--trace FILE.json`` of ``parsim predict`` and ``parsim run``: the timeline for Perfetto.

The file's name is checked before any work (a ``.json`` file that can be created, not a folder,
not a link), the trace's size against the command line's event budget before it is built, and the
file is written atomically, never through a link (``report.chrome_trace``, ``base.safefiles``).
A served load (``llm_load``) has no op timeline: its trace is the load's own timeline (queue,
batch, KV cache), from a second simulation of the same seeded requests (its steps, the costly
part, are priced once and kept).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from parsim.base.budget import Budget
from parsim.base.errors import ParsimError, printable
from parsim.base.paths import output_path

if TYPE_CHECKING:  # imported when a trace is written: the command line starts without them
    from parsim.results.prediction import Prediction
    from parsim.studies.scenarios import Scenario, ScenarioResult

OPTION = "--trace"
HELP = "Write the timeline to this .json file in the Chrome Trace Event format (Perfetto, chrome://tracing)."


def checked(path: Path | None) -> Path | None:
    """``path`` once it is a writable ``.json`` file name (None: no trace asked for)."""
    if path is None:
        return None
    from parsim.report.chrome_trace import SUFFIXES

    return output_path(path, SUFFIXES, OPTION)


def write_prediction(
    path: Path,
    result: Prediction,
    params: dict[str, Any],
    *,
    device: Any,
    host: Any,
    link: Any,
    method: str,
    budget: Budget | None,
) -> None:
    """Write ``result``'s timeline to ``path`` (a served load's: see the module's docstring)."""
    from parsim.report import chrome_trace
    from parsim.workloads.registry import WORKLOADS

    definition = WORKLOADS.get(result.workload)
    if definition is not None and definition.requests is not None:
        from parsim.studies.serving_load import run_load

        _, timeline = run_load(params, device, host=host, link=link, method=method, budget=budget)
        document = chrome_trace.load_trace(timeline, f"{result.workload} on {result.device}", budget)
    else:
        document = chrome_trace.prediction_trace(result, budget)
    _write(path, document)


def check_scenario(path: Path | None, scenario: Scenario) -> None:
    """Refuse a trace of a scenario with a served load among its cases, before running it: a load
    has no op timeline (its trace is ``parsim predict llm_load --trace``'s), so its processes would
    be empty (a load-only lesson's file held no event at all)."""
    if path is None:
        return
    from parsim.studies.scenarios import case_labels, resolve
    from parsim.workloads.registry import lookup

    for label, raw in zip(case_labels(scenario), scenario.cases, strict=True):
        workload = resolve(scenario, raw).workload
        definition = lookup(workload) if workload is not None else None
        if definition is not None and definition.requests is not None:
            raise ParsimError(
                f"'{OPTION}': case {label!r} is a served load ({workload}), which has no op timeline; "
                f"trace it with parsim predict {workload} ... --trace"
            )


def write_scenario(path: Path, result: ScenarioResult, budget: Budget | None) -> None:
    """Write every case's timeline of a scenario run to ``path``, each case in its own processes."""
    from parsim.report import chrome_trace

    cases = [(r.label if r.value is None else f"{r.label} @ {r.value}", r.prediction) for r in result.results]
    _write(path, chrome_trace.cases_trace(cases, result.scenario.title, budget))


def _write(path: Path, document: dict[str, Any]) -> None:
    from parsim.report import chrome_trace

    chrome_trace.write(path, document, OPTION)
    typer.echo(f"saved {printable(path)} (open it in https://ui.perfetto.dev or chrome://tracing)", err=True)
