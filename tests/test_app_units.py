"""Every number the Scale out tabs and Compare's LLM tables show carries its unit (issue 27, defect 4).

A table's float column must have a ``st.column_config`` format naming a unit or a percentage
(not a bare ``%.4g``, which prints ``1.111e+05``, nor bytes/s without a prefix); no cell is empty
(``None``); a count is said with its noun ("1 split does not fit", not "1 do not fit").
"""

import json
import re

import pytest

from parsim.app import compare_llm
from parsim.app.scale import TABS
from tests.apptest import app

pytestmark = pytest.mark.slow  # every test starts the app in AppTest

BARE = re.compile(r"^%[-+ #0,]*\d*(\.\d+)?[gGeEfd]$")  # a number without its unit
UNPREFIXED = re.compile(r"[fgd] B/s$")  # "%.4g B/s": 1.6e+06 B/s where MB/s or GB/s is meant
COUNT_WITHOUT_NOUN = re.compile(r"\b\d+ do not\b")


def raw_units(at) -> list[str]:
    """Every shown table's float columns without a unit, empty cells, and counts without nouns."""
    found = []
    for table in at.dataframe:
        frame = table.value
        config = json.loads(table.proto.columns or "{}")
        for column in frame.columns:
            shown = config.get(column, {})
            if shown.get("hidden"):
                continue
            if frame[column].isna().any():
                found.append(f"{column}: empty cells")
            if frame[column].dtype.kind != "f":
                continue
            fmt = shown.get("type_config", {}).get("format")
            if fmt is None:
                found.append(f"{column}: no format")
            elif BARE.match(fmt) and not re.search(r"/s|GiB|ms|%|x", shown.get("label", "")):
                found.append(f"{column}: {fmt!r} has no unit")
            elif UNPREFIXED.search(fmt):
                found.append(f"{column}: {fmt!r} in bytes/s")
    texts = [c.value for c in at.caption] + [m.value for m in at.markdown]
    found += [f"count without its noun: {t}" for t in texts if COUNT_WITHOUT_NOUN.search(t)]
    return found


def test_the_checker_catches_what_the_tabs_used_to_show():
    class Table:
        def __init__(self, frame, columns):
            self.value, self.proto = frame, type("P", (), {"columns": json.dumps(columns)})

    import pandas

    frame = pandas.DataFrame({"busbw": [1.6e6], "step_s": [float("nan")], "n": [3]})
    config = {"busbw": {"type_config": {"format": "%.4g B/s"}}, "step_s": {"type_config": {"format": "%.4g"}}}
    at = type("At", (), {"dataframe": [Table(frame, config)], "caption": [], "markdown": []})
    at.caption = [type("C", (), {"value": "21 splits of 64 GPUs; 1 do not fit"})()]
    assert sorted(raw_units(at)) == sorted(
        [
            "busbw: '%.4g B/s' in bytes/s",
            "step_s: empty cells",
            "step_s: '%.4g' has no unit",
            "count without its noun: 21 splits of 64 GPUs; 1 do not fit",
        ]
    )


@pytest.mark.parametrize("tab", TABS)
def test_every_scale_out_tab_shows_its_numbers_with_units(tab):
    at = app("scale", {"scale_tab": tab})
    if tab == "(tp, pp, dp) explorer":
        at.button(key="split_find").click().run()
    assert not at.exception
    assert at.dataframe, tab
    assert raw_units(at) == [], tab


@pytest.mark.parametrize("kind", list(compare_llm.COMPARISONS))
def test_compare_llm_tables_show_their_numbers_with_units(kind):
    at = app("compare", {"compare_kind": kind})
    assert not at.exception and at.dataframe
    assert raw_units(at) == [], kind
