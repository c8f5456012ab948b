"""Bounded work: what one request may cost, known and checked before the work starts.

A discrete-event simulation costs what it simulates: a 3D-parallel training step is as many stage
passes as pipeline stages times micro-batches (each pass a handful of events and the ops behind
them), a split search predicts every split that fits, a sweep every grid point, a scenario every
case. All of these counts follow from the request's parameters alone, so each entry point counts
them first and refuses a request above its budget in one line that names the count, the bound and
how to go beyond it — instead of taking a server's CPU and memory for minutes. The app is served
to a classroom (one URL must not take the server), so its budget is smaller than the command
line's; the command line's is lifted by ``--no-limits`` for a user who means it, and the Python
API's by ``budget=None``.

Bounds measured on a 2-core machine (README, "Bounded work"): 65,536 stage passes (the largest
published row, Megatron's 1T model at pp=64 x 512 micro-batches, is 32,768 and takes ~19 s and
0.4 GB); the app's 4,096 take about 2 s.
"""

from __future__ import annotations

from typing import Any

import attrs

from parsim.base.errors import ParsimError


@attrs.frozen
class Budget:
    """The most one request may cost at one entry point.

    Attributes:
        where: the entry point, as the refusal names it (``"the command line"``, ``"the app"``).
        stage_passes: pipeline stages x micro-batches of one simulated training step.
        split_passes: stage passes summed over the splits a split search predicts.
        kept_rows: points of a sweep whose rows are kept in memory (no output file to write them to).
        workers: worker processes of one sweep.
        requests: requests one simulation of a server under load serves (``llm_load``: the
            simulation costs events per iteration, about 1 s per 1,000 requests on 2 cores).
        trace_events: events of one trace file (``--trace``, the app's trace download): an event
            per busy interval of the timeline, two counter samples per interval of a bandwidth row
            (``report.chrome_trace.event_count``).
        beyond: how to run a larger request, said after the refusal.
    """

    where: str
    stage_passes: int
    split_passes: int
    kept_rows: int
    workers: int
    beyond: str
    requests: int = 100_000
    trace_events: int = 1_000_000

    def check(self, count: float, bound: str, what: str) -> None:
        """Refuse ``count`` (of ``what``) when it is above this budget's ``bound`` field.

        Raises:
            ParsimError: ``<what> is <count>, above <where>'s budget of <bound>; <beyond>``.
        """
        limit = getattr(self, bound)
        if count > limit:
            raise ParsimError(
                f"{what} is {count:,.0f}, above {self.where}'s budget of {limit:,}; {self.beyond}"
            )


CLI = Budget(
    where="the command line",
    stage_passes=65_536,
    split_passes=262_144,
    kept_rows=200_000,
    workers=256,
    beyond="add --no-limits if you mean it",
    requests=100_000,
    trace_events=1_000_000,
)
"""The command line's budget (and the Python API's default)."""

APP = Budget(
    where="the app",
    stage_passes=4_096,
    split_passes=16_384,
    kept_rows=2_000,
    workers=1,
    beyond="run it from the command line instead (parsim predict / splits / sweep / run)",
    requests=5_000,
    trace_events=100_000,
)
"""The app's budget: a classroom shares one server."""


def stage_passes(params: dict[str, Any]) -> int:
    """Pipeline stages x micro-batches of a training step with these (validated) parameters."""
    return int(params.get("pp", 1) or 1) * int(params.get("microbatches", 1) or 1)


def check_params(budget: Budget | None, workload: str, params: dict[str, Any]) -> None:
    """Refuse a prediction of ``workload`` with validated ``params`` above ``budget`` (None: none)."""
    if budget is None:
        return
    passes = stage_passes(params)
    if passes > 1:
        budget.check(
            passes,
            "stage_passes",
            f"{workload}: pp x microbatches = {params.get('pp', 1)} x {params.get('microbatches', 1)}",
        )
