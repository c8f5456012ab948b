"""Where results go: one check for every output path, made before any work is done.

A sweep that runs for an hour and then cannot write its file, or a calibration that throws away
its measurements because ``--out`` names a folder, wastes the user's time. Every output path
(``--out``, ``--plot``, a sweep's file) is checked here first: its suffix, its folder, that it is
not itself a folder, and that a file can really be created there (a probe file is written and
removed, which catches read-only folders and pseudo file systems such as ``/proc``).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from parsim.errors import ParsimError
from parsim.safefiles import refuse_link


def output_path(path: str | Path, suffixes: tuple[str, ...], option: str) -> Path:
    """``path`` as a ``Path`` once it is a writable file name ending in one of ``suffixes``.

    Raises:
        ParsimError: naming ``option`` and the problem, in one line.
    """
    path = Path(path)
    if path.suffix.lower() not in suffixes:
        raise ParsimError(f"'{option}' must end in {', '.join(suffixes)}: {str(path)!r}")
    folder = path.parent
    if not folder.is_dir():
        raise ParsimError(f"'{option}': folder {str(folder)!r} does not exist")
    if path.is_dir():
        raise ParsimError(f"'{option}': {str(path)!r} is a folder, not a file")
    refuse_link(path, option)
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".parsim-probe-"):
            pass
    except OSError as exc:
        raise ParsimError(f"'{option}': cannot write in {str(folder)!r} ({exc.strerror or exc})") from None
    return path
