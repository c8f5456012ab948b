"""Hardware specs to and from TOML files.

A hardware file describes one processor (a ``[processor]`` table with a nested ``memory``
table, ``[[processor.memory.caches]]``, for calibrated machines ``[[processor.memory.curve]]``,
and optional ``matrix_flops_per_s`` / ``op_rates_per_core`` / ``interpreted_loop_scale`` tables), one link
(a ``[link]`` table; calibrated, with ``[link.pageable_h2d]`` and ``[link.pageable_d2h]``) or one
cluster (a ``[cluster]`` table naming its GPU, fabric and host by
preset id, with a ``[cluster.network]`` table whose ``nic`` is a NIC preset id or a
``[cluster.network.nic]`` table of figures). An optional ``[meta]`` table records where the
numbers came from (for example the calibration run that measured them). Unknown keys are
refused with the file and the key path, so a typo never silently falls back to a default.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, TypeVar

import attrs
import tomli_w

from parsim.base import safefiles
from parsim.base.errors import ParsimError, ParsimNote
from parsim.base.tomltext import parse_toml
from parsim.hardware.network import ClusterSpec, NetworkSpec, NicSpec
from parsim.hardware.specs import (
    BandwidthPoint,
    CacheLevel,
    LinkSpec,
    MemorySpec,
    PageableCopy,
    ProcessorSpec,
)

MAX_FILE_BYTES = 1_000_000
MAX_BRACKETS = 2_000
_SECTIONS = {"processor", "link", "cluster", "nic", "meta"}
_KINDS = ("processor", "link", "cluster", "nic")


def load_hardware(path: str | Path) -> ProcessorSpec | LinkSpec | ClusterSpec | NicSpec:
    """Read a processor or link spec from ``path``.

    Raises:
        ParsimError: missing/huge/malformed file (with line), unknown section or key, bad value.
    """
    return loads_hardware(read_hardware_text(path), source=str(path))


def read_hardware_text(path: str | Path, option: str = "") -> str:
    """The text of the hardware file at ``path``, read once (a caller that needs more of the file
    than its spec, as ``studies.validate`` its ``[meta]``, parses this text again rather than
    opening the name a second time, which a link could have taken over in between).

    Raises:
        ParsimError: a link, a folder, a missing or huge file, not UTF-8 (naming ``option`` when given).
    """
    # read_text: no link (never followed, as a model's config.json), a regular file (a FIFO does
    # not hang), bounded, UTF-8 (a byte-order mark dropped); a hardware file's own words for three
    said = {
        "folder": f"{path}: is a directory, not a hardware file",
        "missing": f"{path}: no such hardware file",
        "too-big": f"{path}: hardware file is larger than {MAX_FILE_BYTES} bytes",
    }
    return safefiles.read_text(Path(path), MAX_FILE_BYTES, option, said)


def loads_hardware(text: str, source: str = "<toml>") -> ProcessorSpec | LinkSpec | ClusterSpec | NicSpec:
    """Parse hardware TOML text; ``source`` names it in error messages."""
    if len(text) > MAX_FILE_BYTES:
        raise ParsimError(f"{source}: hardware file is larger than {MAX_FILE_BYTES} bytes")
    data = parse_toml(text, source, "hardware", MAX_BRACKETS)
    unknown = set(data) - _SECTIONS
    if unknown:
        raise ParsimError(
            f"{source}: unknown section [{sorted(unknown)[0]}] "
            "(expected [processor], [link], [cluster] or [nic])"
        )
    if sum(kind in data for kind in _KINDS) != 1:
        raise ParsimError(f"{source}: expected exactly one [processor], [link], [cluster] or [nic] table")
    try:
        if "cluster" in data:
            return _cluster(_table(data["cluster"], "cluster"))
        if "nic" in data:
            return _build(NicSpec, _table(data["nic"], "nic"), "nic")
        if "link" in data:
            return _link(_with_link_kind(_table(data["link"], "link"), source))
        table = dict(_table(data["processor"], "processor"))
        memory = dict(_table(table.pop("memory", None), "processor.memory"))
        caches = memory.pop("caches", [])
        curve = memory.pop("curve", [])
        if not isinstance(caches, list) or not isinstance(curve, list):
            raise ParsimError(
                "'processor.memory.caches' and 'processor.memory.curve' must be arrays of tables"
            )
        for key in ("matrix_flops_per_s", "op_rates_per_core", "interpreted_loop_scale"):
            if key in table and not isinstance(table[key], dict):
                raise ParsimError(
                    f"'processor.{key}' must be a table of name = rate, not {_kind(table[key])}"
                )
        levels = tuple(_build(CacheLevel, c, f"processor.memory.caches[{i}]") for i, c in enumerate(caches))
        points = tuple(_build(BandwidthPoint, p, f"processor.memory.curve[{i}]") for i, p in enumerate(curve))
        table["memory"] = _build(
            MemorySpec, {**memory, "caches": levels, "curve": points}, "processor.memory"
        )
        return _build(ProcessorSpec, table, "processor")
    except ParsimError as exc:
        raise ParsimError(f"{source}: {exc}") from None


def _cluster(table: dict[str, Any]) -> ClusterSpec:
    """A ``[cluster]`` table: its network's NIC is a preset id or a table of figures."""
    table = dict(table)
    network = dict(_table(table.pop("network", None), "cluster.network"))
    nic = network.get("nic")
    if isinstance(nic, str):
        from parsim.hardware.presets_cluster import NIC_PRESETS

        if nic not in NIC_PRESETS:
            raise ParsimError(
                f"'cluster.network.nic': unknown NIC preset; known: {', '.join(sorted(NIC_PRESETS))}"
            )
        network["nic"] = NIC_PRESETS[nic]
    else:
        network["nic"] = _build(NicSpec, nic, "cluster.network.nic")
    table["network"] = _build(NetworkSpec, network, "cluster.network")
    return _build(ClusterSpec, table, "cluster")


def _link(table: dict[str, Any]) -> LinkSpec:
    """A ``[link]`` table, with its optional ``[link.pageable_h2d]``/``[link.pageable_d2h]`` tables
    (what calibration measured of pageable copies; files without them load as before)."""
    table = dict(table)
    for name in PAGEABLE_TABLES:
        if name in table:
            table[name] = _build(PageableCopy, table[name], f"link.{name}")
    return _build(LinkSpec, table, "link")


PAGEABLE_TABLES = ("pageable_h2d", "pageable_d2h")


def _with_link_kind(table: dict[str, Any], source: str) -> dict[str, Any]:
    """A link table without ``kind`` (files written before it existed): NVLink if its id or name says so.

    Files whose id starts with ``nvlink`` keep the meaning they had; a file named, say,
    ``dgx-nvlink`` is now also taken for NVLink. A note says so and how to be explicit.
    """
    if "kind" in table:
        return table
    named = f"{table.get('id', '')} {table.get('name', '')}".lower()
    kind = "nvlink" if "nvlink" in named else "pcie"
    warnings.warn(
        ParsimNote(
            f"{source}: [link] has no 'kind'; taken as {kind} from its id and name (add kind = \"{kind}\")"
        ),
        stacklevel=3,
    )
    return {**table, "kind": kind}


def _table(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        raise ParsimError(f"missing table [{where}]")
    if not isinstance(value, dict):
        raise ParsimError(f"'{where}' must be a table, not {_kind(value)}")
    return value


def _kind(value: Any) -> str:
    """What a TOML value is, in words (the value itself is not echoed)."""
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array"}
    return names.get(type(value), "a date or time")


Built = TypeVar(
    "Built",
    ProcessorSpec,
    LinkSpec,
    MemorySpec,
    CacheLevel,
    BandwidthPoint,
    PageableCopy,
    ClusterSpec,
    NetworkSpec,
    NicSpec,
)


def _build(cls: type[Built], table: Any, where: str) -> Built:
    table = _table(table, where)
    fields = {f.name: f for f in attrs.fields(cls)}
    for key in table:
        if key not in fields:
            raise ParsimError(f"unknown key '{where}.{key}' (known: {', '.join(fields)})")
    missing = [name for name, f in fields.items() if f.default is attrs.NOTHING and name not in table]
    if missing:
        raise ParsimError(f"missing key '{where}.{missing[0]}'")
    for key, value in table.items():  # names are printed to terminals: no escape sequences from a file
        if isinstance(value, str) and any(ord(c) < 32 or 127 <= ord(c) < 160 for c in value):
            raise ParsimError(f"'{where}.{key}' must not contain control characters: {value[:40]!r}")
    try:
        return cls(**table)
    except (TypeError, ValueError) as exc:  # a wrong type deep inside a table (a list for a number...)
        if isinstance(exc, ParsimError):
            raise
        raise ParsimError(f"[{where}]: {exc}") from None


def dumps_hardware(
    spec: ProcessorSpec | LinkSpec | ClusterSpec | NicSpec, meta: dict[str, Any] | None = None
) -> str:
    """TOML text for ``spec`` in the table of its kind (round-trips through ``loads_hardware``)."""
    data: dict[str, Any] = _without_none(attrs.asdict(spec, recurse=True))
    if isinstance(spec, ProcessorSpec) and not spec.memory.curve:
        data["memory"].pop("curve", None)
    if isinstance(spec, ProcessorSpec):
        data["matrix_flops_per_s"] = dict(spec.matrix_flops_per_s)
        data["op_rates_per_core"] = dict(spec.op_rates_per_core)
        data["interpreted_loop_scale"] = dict(spec.interpreted_loop_scale)
        document = {"processor": data}
    elif isinstance(spec, ClusterSpec):
        document = {"cluster": data}
    elif isinstance(spec, NicSpec):
        document = {"nic": data}
    else:
        document = {"link": data}
    if meta:
        document["meta"] = meta
    return tomli_w.dumps(document)


def _without_none(value: Any) -> Any:
    """TOML has no null: optional fields that are unset are simply left out."""
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [_without_none(v) for v in value]
    return value


def save_hardware(
    spec: ProcessorSpec | LinkSpec, path: str | Path, meta: dict[str, Any] | None = None
) -> Path:
    """Write ``spec`` to ``path`` as TOML and return the path."""
    return safefiles.write_text(Path(path), dumps_hardware(spec, meta), "--out")
