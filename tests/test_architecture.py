"""The layers of DESIGN.md, checked on the source: who may import whom, and nothing private across packages.

A unit is a subpackage of ``parsim`` (``hardware``, ``engine``...) or a top-level module
(``predict``, ``timeline``...). Imports inside functions count too: a lazy import is still a
dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import parsim

PACKAGE = Path(parsim.__file__).parent

# The core: each unit and every unit it may use (everything not listed is above it).
BELOW = {
    "errors": set(),
    "dtypes": set(),
    "choices": set(),
    "checks": {"errors"},
    "units": {"errors"},
    "safefiles": {"errors"},  # every file parsim writes: never through a link
    "frozen": set(),
    "caching": set(),
    "hardware": {"caching", "checks", "dtypes", "errors", "safefiles", "units"},
    "workloads": {"checks", "dtypes", "errors", "stack"},
    "stack": {"checks", "errors"},
    "model": {"caching", "choices", "errors", "dtypes", "checks", "hardware", "stack", "units", "workloads"},
    "resources": {"hardware", "workloads"},
    "timeline": {"model", "resources"},
    "prediction": {"frozen", "resources", "timeline"},
    "engine": {"caching", "errors", "hardware", "model", "resources", "stack", "timeline", "workloads"},
    "analytic": {"caching", "hardware", "model", "resources", "stack", "timeline", "workloads"},
}


def _unit(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "parsim" and len(parts) > 1 else None


def _imports() -> list[tuple[str, str, str, bool]]:
    """``(unit, imported unit, imported name, inside a function)`` for every parsim import."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        unit = _unit(".".join(parts))
        if unit in (None, "__init__", "__main__"):
            continue
        tree = ast.parse(path.read_text())
        lazy = {id(n) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) for n in ast.walk(f)}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                target = _unit(node.module) if node.module.split(".")[0] == "parsim" else node.module
                for alias in node.names:
                    found.append((unit, target or alias.name, alias.name, id(node) in lazy))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    found.append((unit, _unit(alias.name) or alias.name, alias.name, id(node) in lazy))
    return found


UNITS = {p.stem for p in PACKAGE.glob("*.py")} | {
    p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()
}


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for unit, target, _, _ in _imports():
        if target in UNITS and target != unit:
            graph.setdefault(unit, set()).add(target)
    return graph


def test_no_import_cycle_between_units():
    graph = _graph()
    state: dict[str, str] = {}

    def visit(unit: str, path: list[str]) -> None:
        state[unit] = "open"
        for nxt in sorted(graph.get(unit, ())):
            if state.get(nxt) == "open":
                pytest.fail("import cycle: " + " -> ".join([*path[path.index(nxt) :], nxt]))
            if nxt not in state:
                visit(nxt, [*path, nxt])
        state[unit] = "done"

    for unit in sorted(graph):
        if unit not in state:
            visit(unit, [unit])


@pytest.mark.parametrize("unit", sorted(BELOW))
def test_the_core_imports_only_what_lies_below_it(unit):
    used = _graph().get(unit, set())
    assert used <= BELOW[unit], f"{unit} reaches up to {sorted(used - BELOW[unit])}"


def test_no_unit_imports_another_units_private_name():
    private = [(u, t, n) for u, t, n, _ in _imports() if t in UNITS and t != u and n.startswith("_")]
    assert private == []


@pytest.mark.parametrize(
    ("library", "allowed", "lazily"),
    [("simpy", {"engine"}, False), ("streamlit", {"app", "cli"}, False), ("cupy", {"measure"}, True)],
)
def test_heavy_libraries_stay_in_their_layer(library, allowed, lazily):
    users = {(u, lazy) for u, t, _, lazy in _imports() if t.split(".")[0] in (library, f"{library}x")}
    assert {u for u, _ in users} <= allowed
    if lazily:  # CuPy is imported inside functions only, so parsim imports on a machine without it
        assert all(lazy for _, lazy in users)
