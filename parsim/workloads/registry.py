"""Every workload by name, found in its definition, and validation of what users type.

The registry keeps no list of names: each module of ``parsim.workloads`` that defines workloads
lists them in ``DEFINITIONS`` (``definition.WorkloadDef``), and ``WORKLOADS`` is what those lists
hold, the standard ones first (``standard``), then each other module's in the order of their names.
A new workload is a module with its definitions; nothing here changes.

``make_workload("matmul", {"m": "4096", ...})`` validates, fills defaults and builds; any mistake
becomes a one-line ``ParsimError`` naming the workload, the field and the value. Numbers may be
written ``1e8``: whole floats are accepted for integer fields.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from pydantic import ValidationError

from parsim.base.errors import ParsimError, closest
from parsim.workloads import standard
from parsim.workloads.base import Params, Workload
from parsim.workloads.definition import ParamsModel, WorkloadDef
from parsim.workloads.llms import LLMS, is_llm
from parsim.workloads.models import MODELS


def _discover() -> dict[str, WorkloadDef]:
    """Every module's ``DEFINITIONS``, the standard ones first; a name defined twice is refused."""
    package, own = __name__.rpartition(".")[::2]
    modules = [standard] + [
        importlib.import_module(f"{package}.{info.name}")
        for info in sorted(pkgutil.iter_modules([str(Path(__file__).parent)]), key=lambda info: info.name)
        if info.name not in (own, standard.__name__.rpartition(".")[2])
    ]
    found: dict[str, WorkloadDef] = {}
    for module in modules:
        for definition in getattr(module, "DEFINITIONS", ()):
            if definition.name in found:
                raise RuntimeError(f"workload {definition.name!r} is defined twice ({module.__name__})")
            found[definition.name] = definition
    return found


WORKLOADS: dict[str, WorkloadDef] = _discover()
"""Workload name -> its definition, as the workload modules declare them."""


def capabilities(workload: Workload) -> WorkloadDef | None:
    """The definition of a built workload (None for one built by hand under a name of its own)."""
    return WORKLOADS.get(workload.name)


def workload_names(family: str | None = None) -> list[str]:
    """Every workload id, or those of one ``family``, in registration order for a family."""
    if family is None:
        return sorted(WORKLOADS)
    return [name for name, definition in WORKLOADS.items() if definition.family == family]


def model_names() -> list[str]:
    """The networks the workloads with a ``model`` know: CNNs and MLP, then language models."""
    return list(MODELS) + llm_names()


def llm_names() -> list[str]:
    """The language models (``llms.LLMS``)."""
    return list(LLMS)


def cluster_names() -> list[str]:
    """The workloads that run on a cluster (``--cluster``), as their definitions say."""
    return [name for name, definition in WORKLOADS.items() if definition.cluster is not None]


def lookup(name: str) -> WorkloadDef:
    """The registered workload ``name``, or a ParsimError suggesting the closest names."""
    if name not in WORKLOADS:
        raise ParsimError(f"unknown workload {name!r}; {closest(name, workload_names())}")
    return WORKLOADS[name]


def validate_params(name: str, params: Params) -> Params:
    """Validate ``params`` for workload ``name``; return them with defaults filled in."""
    definition = lookup(name)
    _check_numbers(name, definition.params, params)
    _check_model_name(name, definition.params, params)
    try:
        validated = definition.params(**params).model_dump()
    except ValidationError as exc:
        raise ParsimError(_one_line(name, definition.params, exc)) from None
    return definition.check(name, params, validated) if definition.check else validated


def _check_model_name(name: str, model: type[ParamsModel], params: Params) -> None:
    """An unknown ``model`` is refused with the closest names (there are dozens to choose from); a
    language model's ``config.json`` path (or a registered upload) passes, read when resolved."""
    value = params.get("model")
    if "model" not in model.model_fields or not isinstance(value, str) or value in model_names():
        return
    if is_llm(value):
        return
    raise ParsimError(
        f"{name}: unknown 'model' {value!r}; {closest(value, model_names())} (or a path to a config.json)"
    )


def _check_numbers(name: str, model: type[ParamsModel], params: Params) -> None:
    """What pydantic's lax mode lets through or words poorly: ``n=true`` taken as 1, and a number
    far out of range reported as unparseable instead of against its bound."""
    for field, value in params.items():
        info = model.model_fields.get(field)
        if info is None or info.annotation not in (int, float):
            continue
        if isinstance(value, bool):
            raise ParsimError(f"{name}: {field!r} must be a number, not {str(value).lower()}")
        high = next((m.le for m in info.metadata if getattr(m, "le", None) is not None), None)
        if isinstance(value, (int, float)) and high is not None and value > high:
            raise ParsimError(f"{name}: {field!r} must be <= {high:g}: {value:g}")


def make_workload(name: str, params: Params | None = None) -> Workload:
    """Build workload ``name`` from user parameters (strings, numbers or booleans)."""
    return lookup(name).build(validate_params(name, dict(params or {})))


def _one_line(name: str, model: type[ParamsModel], exc: ValidationError) -> str:
    error = exc.errors()[0]
    field = ".".join(str(part) for part in error["loc"]) or "?"
    if error["type"] == "extra_forbidden":
        known = ", ".join(model.model_fields)
        return f"{name}: unknown parameter {field!r} (known: {known})"
    if error["type"] == "missing":
        return f"{name}: missing parameter {field!r} (give it as {field}=VALUE)"
    message = error["msg"][0].lower() + error["msg"][1:]
    return f"{name}: {field!r} {message}: {error['input']!r}"
