"""No parameter is keyed on a published row (issue 26).

A prediction may depend on what a user could have typed (the workload, its parameters, the device,
host, link and core count) and on parameters fitted once per device, library, framework or engine;
never on which published row is being scored. Three ways that rule could be broken, each checked:

- a row's id (or its measured value, source or note) reaching the prediction: the same row under
  another id, with another value and source, must predict the same figure;
- a hidden knob in a row's parameters: every parameter a row sets is one of its workload's
  user-facing parameters, and none of those is a model constant (an efficiency, an overhead, a
  fudge factor);
- a constant keyed on a model name or a row id in the model's code: the hardware, stack, model and
  method packages hold no string naming a published row or a workload model (parsim's model
  constants are per device, library or engine; the workloads package is where models live).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import attrs
import pytest

import parsim
from parsim.studies.published import CLASSES, load_rows, predicted
from parsim.workloads.registry import lookup

PACKAGE = Path(parsim.__file__).parent
MODEL_PACKAGES = ("hardware", "stack", "model", "methods")
"""Where fitted constants live; none of them may name a workload model or a row."""

KNOB_WORDS = ("efficien", "overhead", "factor", "fudge", "calib", "fit", "scale_by", "correction")
"""Words that would make a workload parameter a model constant in disguise."""
RUN_SETTINGS = {
    # Megatron-Core's --moe-expert-capacity-factor: how many of the routed tokens an expert keeps
    # (the rest dropped, the rest padded), set by the run (Megatron-Bridge's apply_moe_token_drop: 1.0)
    "capacity_factor",
}
"""Parameters whose names hold a knob word but are a run's own setting, each with its framework flag."""

ROWS = load_rows()


def _model_names() -> set[str]:
    names = set()
    for row in ROWS:
        model = row.params.get("model")
        if isinstance(model, str):
            names.add(model.lower())
    return names


def _code_strings(path: Path) -> list[str]:
    """Every string constant in a module that is not a docstring (comments never reach the AST)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
    strings = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            strings.append(node.value)
    return strings


def _attribute_docstrings(path: Path) -> set[str]:
    """Bare string expressions (attribute docstrings like this one) are documentation, not keys."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.value.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }


def test_no_model_constant_is_keyed_on_a_workload_model_or_a_row():
    models = _model_names()
    ids = {row.id.lower() for row in ROWS}
    assert models and ids  # the check has something to look for
    offenders = []
    for package in MODEL_PACKAGES:
        for path in sorted((PACKAGE / package).rglob("*.py")):
            prose = _attribute_docstrings(path)
            for text in _code_strings(path):
                if text in prose:
                    continue
                words = set(re.findall(r"[a-z0-9][a-z0-9.\-]*[a-z0-9]", text.lower()))
                hits = (words & models) | (words & ids)
                if hits:
                    offenders.append(f"{path.relative_to(PACKAGE)}: {sorted(hits)} in {text!r}")
    assert not offenders, offenders


def test_the_scan_finds_a_model_keyed_constant(tmp_path):
    """The check above can fail: a table keyed on a model name is caught, a comment is not."""
    module = tmp_path / "keyed.py"
    module.write_text(
        '"""A module."""\n# resnet50 in a comment is fine\nEFFICIENCY = {"resnet50": 0.8, "a100": 0.9}\n'
    )
    strings = set(_code_strings(module)) - _attribute_docstrings(module)
    assert "resnet50" in strings and "A module." not in strings
    assert "resnet50" in _model_names()


@pytest.mark.slow
def test_no_row_id_is_written_anywhere_in_the_package_but_the_table():
    ids = [row.id for row in ROWS]
    table = PACKAGE / "data" / "published.csv"
    # the table's own report, as shipped for the Measure page: predictions of the rows, read by nothing
    # that predicts (studies.published_snapshot)
    report = PACKAGE / "data" / "published_snapshot.json"
    offenders = []
    for path in sorted(PACKAGE.rglob("*")):
        skipped = path in (table, report) or path.suffix not in {".py", ".toml", ".json", ".csv"}
        if not path.is_file() or skipped:
            continue
        if path.suffix == ".py":  # a comment may name the rows a constant was fitted on; code may not
            text = "\n".join(set(_code_strings(path)) - _attribute_docstrings(path))
        else:
            text = path.read_text(encoding="utf-8", errors="ignore")
        offenders += [f"{path.relative_to(PACKAGE)}: {i}" for i in ids if i in text]
    assert not offenders, offenders


def test_rows_set_only_user_facing_parameters_and_none_is_a_model_constant():
    for row in ROWS:
        fields = lookup(row.workload).params.model_fields
        for key in row.params:
            assert key in fields, (row.id, key)  # a key users could type on the command line
            knob = any(word in key.lower() for word in KNOB_WORDS)
            assert not knob or key in RUN_SETTINGS, (row.id, key)


def _one_row_per_class():
    chosen = {}
    for row in ROWS:
        if row.klass not in chosen and row.workload != "llm_load":  # serving rows take seconds each
            chosen[row.klass] = row
    return [pytest.param(row, id=klass) for klass, row in chosen.items()]


@pytest.mark.slow
@pytest.mark.parametrize("row", _one_row_per_class())
def test_a_prediction_does_not_depend_on_which_row_is_scored(row):
    disguised = attrs.evolve(
        row, id="someone-elses-run", value=row.value * 3.7, source="elsewhere", detail="", klass=row.klass
    )
    assert predicted(disguised) == predicted(row)
    assert row.klass in CLASSES
