"""Fuzzing the files users hand to parsim: hardware TOML and scenario TOML never raise anything but
a one-line ``ParsimError``.

Documents are generated as TOML from dictionaries whose keys are mostly the real ones (so the
generator reaches deep into the parsers: tables, arrays of tables, numbers at every scale, wrong
types in every place), and as raw text (brackets, quotes, control characters, truncations of a real
file). 10,000 examples per parser; hypothesis is derandomised by the project profile.
"""

from __future__ import annotations

import math

import pytest
import tomli_w
from hypothesis import given, settings
from hypothesis import strategies as st

from parsim.base.errors import ParsimError
from parsim.hardware.presets import PROCESSORS
from parsim.hardware.tomlio import dumps_hardware, loads_hardware
from parsim.studies.scenarios import loads_scenario

pytestmark = pytest.mark.slow

PROCESSOR_KEYS = [
    "id", "name", "kind", "cores", "lanes_per_core", "clock_Hz", "fma", "fp64_ratio", "fp16_ratio",
    "matrix_flops_per_s", "matmul_efficiency", "dispatch_s", "tile_items", "matmul_tile", "default_link",
    "peer_link", "memory", "sustained_clock_Hz", "op_rates_per_core", "copy_engines", "max_gpus",
]  # fmt: skip
MEMORY_KEYS = [
    "bandwidth_Bps",
    "peak_bandwidth_Bps",
    "latency_s",
    "capacity_B",
    "per_core_bandwidth_Bps",
    "caches",
    "curve",
]
SCENARIO_KEYS = [
    "title", "lesson", "plot", "defaults", "cases", "sweep", "workload", "params", "device", "label",
    "param", "values", "mode", "method", "gpus", "host", "link", "n",
]  # fmt: skip

numbers = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, 1, -1, 1e-300, 1e300, 2**31, 0.5, 1e9, 1e12]),
)
scalars = st.one_of(
    numbers,
    st.booleans(),
    st.text(max_size=20),
    st.sampled_from(["t4", "pcie4-x16", "/etc/passwd", "x.toml", "gpu", "cpu"]),
)


def documents(keys: list[str]) -> st.SearchStrategy:
    """Nested TOML-able dictionaries with mostly real keys."""
    key = st.one_of(st.sampled_from(keys), st.text(min_size=1, max_size=8))
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4),
            st.dictionaries(key, inner, max_size=6),
        ),
        max_leaves=25,
    )


def toml_text(data: object) -> str | None:
    if not isinstance(data, dict):
        return None
    try:
        return tomli_w.dumps(data)
    except (TypeError, ValueError, AttributeError):
        return None  # not representable as TOML (a bare scalar, a NaN inside an array...)


def one_line(call, text: str) -> None:
    try:
        call(text)
    except ParsimError as exc:
        assert "\n" not in str(exc) and "Traceback" not in str(exc)


REAL = dumps_hardware(PROCESSORS["a100-80gb"])


@settings(max_examples=10_000, deadline=None)
@given(
    st.one_of(
        documents(PROCESSOR_KEYS + MEMORY_KEYS).map(lambda d: {"processor": d}),
        documents(MEMORY_KEYS).map(
            lambda d: {"processor": {"id": "x", "name": "x", "kind": "gpu", "memory": d}}
        ),
        documents(["id", "name", "bandwidth_Bps", "latency_s", "kind", "duplex"]).map(lambda d: {"link": d}),
        documents(["processor", "link", "meta"]),
    )
)
def test_hardware_toml_from_structures(data):
    text = toml_text(data)
    if text is not None:
        one_line(loads_hardware, text)


@settings(max_examples=10_000, deadline=None)
@given(
    st.one_of(
        st.text(max_size=300),
        st.integers(min_value=0, max_value=len(REAL)).map(lambda cut: REAL[:cut]),  # a truncated real file
        st.tuples(st.integers(min_value=0, max_value=len(REAL)), st.text(max_size=30)).map(
            lambda edit: REAL[: edit[0]] + edit[1] + REAL[edit[0] :]
        ),
        st.integers(min_value=1, max_value=20_000).map(lambda depth: "[processor]\nx = " + "[" * depth),
    )
)
def test_hardware_toml_from_text(text):
    one_line(loads_hardware, text)


@settings(max_examples=10_000, deadline=None)
@given(
    st.one_of(
        documents(SCENARIO_KEYS),
        st.fixed_dictionaries(
            {
                "title": st.text(max_size=5),
                "lesson": st.text(max_size=5),
                "cases": st.lists(documents(SCENARIO_KEYS), max_size=3),
            },
            optional={"sweep": documents(SCENARIO_KEYS), "defaults": documents(SCENARIO_KEYS)},
        ),
    )
)
def test_scenario_toml(data):
    text = toml_text(data)
    if text is not None:
        one_line(loads_scenario, text)


def test_the_fuzzers_reach_the_parsers():
    # a control: the generators do produce documents a parser accepts or refuses for a reason
    assert toml_text({"processor": {"cores": math.pi}}) is not None
    with pytest.raises(ParsimError, match="missing"):
        loads_hardware(toml_text({"processor": {"cores": 2}}))


JSON_KEYS = [
    "schema",
    "rows",
    "median_s",
    "workload",
    "backend",
    "mode",
    "measured_s",
    "predicted_s",
    "class",
]
json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        numbers,
        st.text(max_size=10),
        st.sampled_from(["parsim.validation/1", "parsim.measurement/1", "numpy", "simd"]),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(JSON_KEYS), st.text(max_size=5)), inner, max_size=8),
    ),
    max_leaves=30,
)


@settings(max_examples=10_000, deadline=None)
@given(json_values)
def test_measurement_json_in_the_app(data):
    # the Measure page's loader: anything JSON is either rows the comparison can use, or refused
    from parsim.app.measure_page import _rows_of

    rows = _rows_of(data)
    if rows is not None:
        for row in rows:
            assert row["measured_s"] > 0 and isinstance(row["class"], str)
