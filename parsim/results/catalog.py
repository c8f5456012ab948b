"""Finds every workload's hardware-dependent hooks: the modules of ``parsim.results`` that register them.

A module that registers hooks (``hooks.register``) is named ``*_figures``; the first question for
any workload imports them all, so a new one is found without a list to update. The registry
(``hooks``) imports none of them: they import it, and this module imports both.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from parsim.results import hooks
from parsim.workloads.definition import WorkloadDef

SUFFIX = "_figures"
_loaded: list[str] = []


def figure_modules() -> list[str]:
    """The modules that register hooks, imported once (sorted by name)."""
    if not _loaded:
        package = __name__.rpartition(".")[0]
        modules = sorted(info.name for info in pkgutil.iter_modules([str(Path(__file__).parent)]))
        found = [module for module in modules if module.endswith(SUFFIX)]  # file names, not labels
        for name in found:
            importlib.import_module(f"{package}.{name}")
        _loaded.extend(found)
    return list(_loaded)


def hooks_for(definition: WorkloadDef | None) -> hooks.Hooks:
    """The hooks registered for ``definition``'s kind (none for a workload built by hand)."""
    figure_modules()
    return hooks.NONE if definition is None else hooks.registered(definition.kind)
