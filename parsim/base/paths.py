"""Where results go: one check for every output path, made before any work is done.

A sweep that runs for an hour and then cannot write its file, or a calibration that throws away
its measurements because ``--out`` names a folder, wastes the user's time. Every output path
(``--out``, ``--plot``, a sweep's file) is checked here first: its suffix, its folder, that it is
not itself a folder, and that a file can really be created there (a probe file is written and
removed, which catches read-only folders and pseudo file systems such as ``/proc``).
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from parsim.base.errors import ParsimError
from parsim.base.safefiles import refuse_link, shown_name


def output_path(path: str | Path, suffixes: tuple[str, ...], option: str) -> Path:
    """``path`` as a ``Path`` once it is a writable file name ending in one of ``suffixes``.

    Raises:
        ParsimError: naming ``option`` and the problem, in one line.
    """
    path = Path(path)
    if path.suffix.lower() not in suffixes:
        raise ParsimError(f"'{option}' must end in {', '.join(suffixes)}: {str(path)!r}")
    folder = path.parent
    try:  # a name too long to look up raises ENAMETOOLONG from is_dir (Python 3.11)
        if not folder.is_dir():
            raise ParsimError(f"'{option}': folder {str(folder)!r} does not exist")
        if path.is_dir():
            raise ParsimError(f"'{option}': {str(path)!r} is a folder, not a file")
    except OSError as exc:
        raise ParsimError(f"'{option}': cannot write {shown_name(path)} ({exc.strerror or exc})") from None
    refuse_link(path, option)
    try:  # an existing output is read back (a sweep resumes from it): a FIFO or a device would hang it
        kept = os.lstat(path)
    except FileNotFoundError:
        kept = None
    except OSError as exc:
        raise ParsimError(f"'{option}': cannot write {shown_name(path)} ({exc.strerror or exc})") from None
    if kept is not None and not stat.S_ISREG(kept.st_mode):
        raise ParsimError(f"'{option}': {str(path)!r} exists and is not a regular file")
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".parsim-probe-"):
            pass
    except OSError as exc:
        raise ParsimError(f"'{option}': cannot write in {str(folder)!r} ({exc.strerror or exc})") from None
    return path


# --- this machine's calibration: where parsim calibrate writes it and every front end reads it ---

CALIBRATION = Path("this-machine.toml")
"""The CPU's calibrated spec, in the working directory (``parsim calibrate``'s default ``--out``;
the app saves it beside itself)."""


def gpu_calibration(cpu_file: str | Path = CALIBRATION) -> tuple[Path, Path]:
    """The GPU's and the host link's calibrated files that ``parsim calibrate`` writes beside the CPU's
    ``cpu_file``: ``this-machine-gpu.toml`` and ``this-machine-link.toml`` for the default."""
    cpu_file = Path(cpu_file)
    return cpu_file.with_name(f"{cpu_file.stem}-gpu.toml"), cpu_file.with_name(f"{cpu_file.stem}-link.toml")
