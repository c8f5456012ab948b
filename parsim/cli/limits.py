"""The ``--no-limits`` option every command that can be asked for a lot of work shares."""

from __future__ import annotations

from typing import Annotated

import typer

from parsim.base import budget
from parsim.base.budget import Budget

NoLimits = Annotated[
    bool,
    typer.Option("--no-limits", help="Lift the command line's work budget (README: Bounded work)."),
]


def budget_of(no_limits: bool) -> Budget | None:
    """The command line's budget, or none with --no-limits."""
    return None if no_limits else budget.CLI
