"""The hardware editor: start from a preset, edit figures, see each error beside its field.

Numbers are typed as text (``3.35e12`` reads better than a spinner) and the whole spec is
rebuilt on every edit; a refused value is reported under the field it concerns, the last
valid spec stays usable, and the result downloads as hardware TOML or becomes the device.
"""

from __future__ import annotations

import re

import attrs
import numpy
import streamlit as st

from parsim.base.errors import ParsimError
from parsim.base.units import parse_value
from parsim.hardware.presets import PROCESSORS
from parsim.hardware.tomlio import dumps_hardware

FIELDS = [
    ("cores", "cores (or SMs)"),
    ("lanes_per_core", "float32 lanes per core"),
    ("clock_Hz", "clock (Hz)"),
    ("dispatch_s", "dispatch / launch cost (s)"),
    ("matmul_efficiency", "GEMM efficiency (0-1]"),
    ("memory.bandwidth_Bps", "memory bandwidth, effective (B/s)"),
    ("memory.peak_bandwidth_Bps", "memory bandwidth, peak (B/s)"),
    ("memory.latency_s", "memory latency (s)"),
    ("memory.capacity_B", "memory capacity (B)"),
    ("memory.per_core_bandwidth_Bps", "one core's bandwidth (B/s)"),
]


def render() -> None:
    base_id = st.selectbox(
        "start from", list(PROCESSORS), index=list(PROCESSORS).index("h100-sxm"), key="editor_base"
    )
    base = PROCESSORS[base_id]
    values, errors, slots = {}, {}, {}
    columns = st.columns(2)
    for index, (path, label) in enumerate(FIELDS):
        current = _get(base, path)
        with columns[index % 2]:
            text = st.text_input(label, value=_shown(current), key=f"editor_{base_id}_{path}")
            value = parse_value(text)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                errors[path] = f"'{path.split('.')[-1]}' must be a number: {text!r}"
            values[path] = value
            slots[path] = st.empty()  # the field's error, if any, appears right under it
    spec = None
    if not errors:
        try:
            spec = _build(base, values)
        except ParsimError as exc:
            field = re.match(r"'([^']+)'", str(exc))
            name = field.group(1) if field else ""
            path = next((p for p, _ in FIELDS if p.split(".")[-1] == name), FIELDS[0][0])
            errors[path] = str(exc)
    for path, message in errors.items():
        slots[path].error(message)
    if spec is None:
        st.warning("fix the fields marked above; the last valid hardware stays in use")
        return
    text = dumps_hardware(attrs.evolve(spec, id=f"{base_id}-edited", name=f"{base.name} (edited)"))
    left, right = st.columns(2)
    left.download_button(
        "Download TOML", text.encode(), file_name=f"{base_id}-edited.toml", key="editor_download"
    )
    if right.button("Use as the Explore device", key="editor_use"):
        st.session_state["explore_device_upload_good"] = text
        st.success("choose 'uploaded hardware file' as the device to use it")


def _shown(value: float) -> str:
    """A field's value as text that reads back exactly (80 GiB stays 85899345920, not 8.58993e+10)."""
    if isinstance(value, int):
        return str(value)
    if value != 0 and not 1e-3 <= abs(value) < 1e6:
        return numpy.format_float_scientific(value, trim="-", exp_digits=1)  # shortest exact: 1.98e+9
    return numpy.format_float_positional(value, trim="-")


def _whole(value, like):
    if isinstance(like, int) and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _get(spec, path: str):
    for part in path.split("."):
        spec = getattr(spec, part)
    return spec


def _build(base, values: dict):
    memory = {path.split(".", 1)[1]: v for path, v in values.items() if path.startswith("memory.")}
    top = {path: v for path, v in values.items() if not path.startswith("memory.")}
    # whole numbers where the preset holds an int (cores, lanes, capacity), as the TOML should say
    for key in ("cores", "lanes_per_core"):
        top[key] = _whole(top[key], getattr(base, key))
    for key in memory:
        memory[key] = _whole(memory[key], getattr(base.memory, key))
    return attrs.evolve(base, memory=attrs.evolve(base.memory, **memory), **top)
