"""The package's layers, checked on the source: the tree is the architecture diagram.

parsim's folders are its layers, bottom up (README, "Layout"): ``base`` (units, errors, checks),
``hardware`` (specs and presets), ``stack`` (libraries, frameworks), ``workloads`` (definitions),
``model`` (the rules), ``results`` (prediction, timeline, metrics), ``methods`` (engine, analytic),
``measure`` (backends, calibration), ``studies`` (sweeps, splits, validation, scenarios), and the
faces: ``plots`` and ``report``, the ``app``, the ``cli``. A layer imports only the layers below it,
and no module imports itself back through others: no import circle, between packages or inside
one. Imports inside functions count too: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

import parsim

PACKAGE = Path(parsim.__file__).parent

LAYERS: list[set[str]] = [
    {"base"},
    {"hardware"},
    {"stack"},
    {"workloads"},
    {"model"},
    {"results"},
    {"methods"},
    {"measure"},
    {"studies"},
    {"plots", "report"},
    {"app"},
    {"cli"},
]
RANK = {unit: rank for rank, layer in enumerate(LAYERS) for unit in layer}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _resolve(name: str) -> str | None:
    """The parsim module ``name`` refers to (a module, or the module that defines a name)."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


@functools.cache  # the source is read once per test run, not once per test (~20 tests ask)
def _imports() -> tuple[tuple[str, str, str, bool], ...]:
    """``(module, imported module, imported name, inside a function)`` for every parsim import."""
    found = []
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text())
        functions = (f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef))
        lazy = {id(n) for f in functions for n in ast.walk(f) if isinstance(n, ast.Import | ast.ImportFrom)}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    target = full if full in MODULES else node.module
                    found.append((module, target, alias.name, id(node) in lazy))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    found.append((module, alias.name, alias.name, id(node) in lazy))
    return tuple(found)


def _unit(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "parsim" and len(parts) > 1 else None


def test_every_module_lives_in_a_layer():
    loose = sorted(p.name for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert loose == [], f"modules outside the layers' folders: {loose}"
    assert {_unit(m) for m in MODULES} - {None, "__main__"} == set(RANK)


def test_no_import_circle_anywhere():
    """Between modules of different packages and of one package alike (``__init__`` excepted:
    a package's own ``__init__`` imports nothing of its modules)."""
    graph: dict[str, set[str]] = {}
    for module, target, _, _ in _imports():
        resolved = _resolve(target)
        if resolved and resolved != module and resolved != "parsim":
            graph.setdefault(module, set()).add(resolved)
    state: dict[str, str] = {}

    def visit(module: str, path: list[str]) -> None:
        state[module] = "open"
        for nxt in sorted(graph.get(module, ())):
            if state.get(nxt) == "open":
                pytest.fail("import circle: " + " -> ".join([*path[path.index(nxt) :], nxt]))
            if nxt not in state:
                visit(nxt, [*path, nxt])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])


@pytest.mark.parametrize("unit", sorted(RANK))
def test_a_layer_imports_only_the_layers_below_it(unit):
    used = {_unit(t) for m, t, _, _ in _imports() if _unit(m) == unit and t.startswith("parsim.")}
    above = sorted(u for u in used if u in RANK and u != unit and RANK[u] >= RANK[unit])
    assert above == [], f"{unit} reaches up (or sideways) to {above}"


def test_no_package_imports_another_packages_private_name():
    private = [
        (m, t, n)
        for m, t, n, _ in _imports()
        if t.startswith("parsim.") and _unit(t) != _unit(m) and n.startswith("_")
    ]
    assert private == []


@pytest.mark.parametrize(
    ("library", "allowed", "lazily"),
    [("simpy", {"methods"}, False), ("streamlit", {"app", "cli"}, False), ("cupy", {"measure"}, True)],
)
def test_heavy_libraries_stay_in_their_layer(library, allowed, lazily):
    users = {(_unit(m), lazy) for m, t, _, lazy in _imports() if t.split(".")[0] in (library, f"{library}x")}
    assert {u for u, _ in users} <= allowed
    if lazily:  # CuPy is imported inside functions only, so parsim imports on a machine without it
        assert all(lazy for _, lazy in users)
