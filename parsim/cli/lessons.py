"""``parsim lessons``: the shipped lessons listed, one printed, or one copied out to edit.

The lessons are package data (``parsim.studies.lessons``); a copy is the user's to change and
run by its path (``parsim run my.toml``), so it is never written over.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from parsim.base import jsontext
from parsim.base.errors import ParsimError


def register(app: typer.Typer) -> None:
    app.command()(lessons)


def lessons(
    name: Annotated[str | None, typer.Argument(help="a lesson's name: print its TOML")] = None,
    copy_to: Annotated[
        Path | None, typer.Option(help="Copy the lesson (and hardware files it names) to this .toml file.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
):
    """List the shipped lessons, print one, or copy one out to edit (run it with parsim run FILE)."""
    from parsim.studies import lessons as shipped

    if name is None:
        if copy_to is not None:
            raise ParsimError("'--copy-to' needs a lesson's name: parsim lessons NAME --copy-to FILE")
        titles = shipped.titles()
        if as_json:
            typer.echo(jsontext.dumps([{"name": n, "title": t} for n, t in titles.items()]))
            return
        width = max((len(n) for n in titles), default=0)
        for lesson_name, title in titles.items():
            typer.echo(f"{lesson_name:<{width}}  {title}")
        return
    if not shipped.is_name(name):
        raise ParsimError(f"'NAME' must be a lesson's name (no folder, no .toml): {name!r}")
    if copy_to is None:
        typer.echo(shipped.lesson_text(shipped.named(name)), nl=False)
        return
    for written in shipped.copy(name, copy_to):
        typer.echo(f"wrote {written}", err=True)
