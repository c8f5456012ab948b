"""The shipped lessons: scenario files that are package data, found by name wherever parsim is installed.

The lessons live in ``parsim/lessons/`` (hardware files they name by a relative path in
``parsim/lessons/hardware/``), so a wheel or ``pip install .`` carries them like the code: the
Learn page and ``parsim run flynn_vector_add`` work without the source tree. That folder is the
one copy; a teacher who wants to change a lesson copies it out (``parsim lessons NAME
--copy-to FILE``) and runs the copy by its path. ``PARSIM_LESSONS=FOLDER`` points the app and the
lesson names at a folder of one's own instead (a course's edited lessons).

A name is a lesson's file name without ``.toml``; a misspelt one is refused in one line with the
closest names, because a path that does not exist is always a mistake, never a new lesson.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any

from parsim.base import safefiles
from parsim.base.errors import ParsimError
from parsim.base.tomltext import MAX_SCENARIO_BRACKETS, MAX_SCENARIO_BYTES, parse_toml

SHIPPED = Path(__file__).resolve().parents[1] / "lessons"
"""The lessons installed with parsim (package data)."""

FOLDER_VARIABLE = "PARSIM_LESSONS"
"""Environment variable naming a folder of lessons read instead of the shipped ones."""

HARDWARE_FIELDS = ("device", "host", "link", "cluster")


def folder() -> Path:
    """Where the lessons are read: ``$PARSIM_LESSONS`` when set, else the shipped folder."""
    chosen = os.environ.get(FOLDER_VARIABLE, "").strip()
    return Path(chosen) if chosen else SHIPPED


def lesson_paths(where: str | Path | None = None) -> list[Path]:
    """The lesson files of ``where`` (default: ``folder()``), sorted by name."""
    return sorted(Path(where if where is not None else folder()).glob("*.toml"))


def names() -> list[str]:
    """Every lesson's name (its file name without ``.toml``), sorted."""
    return [path.stem for path in lesson_paths()]


def lesson_path(name: str) -> Path:
    """The file of lesson ``name`` (which may be missing: the caller says so in its own words)."""
    return folder() / f"{name}.toml"


def is_name(text: str | Path) -> bool:
    """Whether ``text`` reads as a lesson's name rather than a path (no folder, no suffix)."""
    text = str(text)
    return bool(text) and "/" not in text and os.sep not in text and not Path(text).suffix


def find(spec: str | Path) -> Path:
    """The scenario file ``spec`` names: an existing path as it is, else a lesson by its name.

    Raises:
        ParsimError: ``spec`` reads as a name and no lesson has it (with the closest names).
    """
    if Path(spec).is_file() or not is_name(spec):
        return Path(spec)  # a path, present or not: reading it says what is wrong
    return named(str(spec))


def named(name: str) -> Path:
    """The lesson called ``name`` in the lessons folder (``folder()``), never a file of that name in
    the working folder: ``parsim lessons NAME`` prints and copies lessons, not the user's files.

    Raises:
        ParsimError: no lesson has that name (with the closest names).
    """
    path = lesson_path(name)
    if path.exists() or path.is_symlink():  # whatever stands there: reading it says what is wrong
        return path
    known = names()
    near = [n for n in known if name.lower() in n] or difflib.get_close_matches(name, known, n=3)
    hint = f"did you mean {', '.join(near[:3])}? " if near else ""
    raise ParsimError(
        f"unknown lesson {name!r}: {hint}(`parsim lessons` lists them; a scenario file is given by its path)"
    )


def lesson_text(path: Path) -> str:
    """The text of a lesson or of a hardware file beside it, read by its name alone: a
    ``PARSIM_LESSONS`` folder is the user's, so never through a link, never a FIFO, bounded.

    Raises:
        ParsimError: a link, not a regular file, too large, not UTF-8.
    """
    return safefiles.read_text(path, MAX_SCENARIO_BYTES)


def lesson_data(path: Path) -> dict[str, Any]:
    """A lesson's tables, unvalidated (``lesson_text`` parsed, malformed TOML refused in one line).

    Raises:
        ParsimError: as ``lesson_text``, or malformed TOML.
    """
    return parse_toml(lesson_text(path), str(path), "scenario", MAX_SCENARIO_BRACKETS)


def _refuse_linked_folders(base: Path, there: Path, option: str) -> None:
    """Refuse a copy whose hardware file would be written through a linked folder between ``base``
    (the copy's folder) and ``there`` (``hardware/`` a link to somewhere else)."""
    step = base
    for part in there.relative_to(base).parent.parts:
        step = step / part
        if step.is_symlink():
            raise ParsimError(
                f"'{option}': {str(step)!r} is a symbolic link; parsim does not write through links"
            )


def hardware_files(path: Path) -> list[str]:
    """The hardware files lesson ``path`` names by a relative path (``hardware/x.toml``)."""
    data = lesson_data(path)
    found = []
    for case in [data.get("defaults", {}), *data.get("cases", [])]:
        for field in HARDWARE_FIELDS:
            value = case.get(field)
            if isinstance(value, str) and value.endswith(".toml") and not Path(value).is_absolute():
                found.append(value)
    return sorted(set(found))


def copy(name: str, target: str | Path, option: str = "--copy-to") -> list[Path]:
    """Copy lesson ``name`` to ``target`` with the hardware files it names, beside it as in the
    lessons folder, so the copy runs as it is. Nothing that exists is overwritten (an edited
    lesson is the user's); a hardware file already there with the same text is kept.

    Returns:
        The files written, the lesson first.
    Raises:
        ParsimError: unknown lesson, ``target`` exists or is not a ``.toml`` file name, or a
            hardware file beside it holds other text.
    """
    from parsim.base.paths import output_path

    source = named(str(name)) if is_name(name) else None
    if source is None:
        raise ParsimError(f"'{option}' copies a lesson given by its name, not a path: {str(name)!r}")
    target = output_path(target, (".toml",), option)
    if target.exists():
        raise ParsimError(f"'{option}': {str(target)!r} exists; parsim does not overwrite a lesson")
    pending = [(source, target)]
    for relative in hardware_files(source):
        there = target.parent / relative
        _refuse_linked_folders(target.parent, there, option)
        text = lesson_text(source.parent / relative)
        if not there.exists() and not there.is_symlink():
            pending.append((source.parent / relative, there))
        elif _own_text(there, len(text.encode("utf-8"))) != text:
            raise ParsimError(f"'{option}': {str(there)!r} exists with other text; the lesson needs its own")
    for origin, there in pending:
        there.parent.mkdir(parents=True, exist_ok=True)
        safefiles.write_text(there, lesson_text(origin), option)
    return [there for _, there in pending]


def _own_text(path: Path, size_B: int) -> str | None:
    """The text of the file at ``path`` itself if it could be ``size_B`` bytes of UTF-8 (read by its
    name alone: never through a link, never a FIFO); None for anything else."""
    try:
        return safefiles.read_text(path, size_B)
    except ParsimError:
        return None


def titles() -> dict[str, str]:
    """Each lesson's title by name, read without validating the rest (``parsim lessons``)."""
    found = {}
    for path in lesson_paths():
        try:
            title = lesson_data(path).get("title")
        except ParsimError:
            title = None
        found[path.stem] = title if isinstance(title, str) else "(not a readable lesson)"
    return found


def using(workload: str) -> list[tuple[str, str]]:
    """``(name, title)`` of the shipped lessons that run ``workload`` in a case or their defaults:
    a workload's lessons are found from the lessons themselves, never listed by hand. Read without
    validating the rest, like ``titles``; an unreadable lesson is skipped."""
    found = []
    for path in lesson_paths():
        try:
            data = lesson_data(path)
        except ParsimError:
            continue
        parts = [data.get("defaults"), *(data.get("cases") or [])]
        if any(isinstance(part, dict) and part.get("workload") == workload for part in parts):
            title = data.get("title")
            found.append((path.stem, title if isinstance(title, str) else path.stem))
    return found
