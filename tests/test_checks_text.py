"""``checks.text``: names with control characters are refused, every other character is kept.

The rule is a regular expression (a 3D-parallel step names hundreds of thousands of ops); it must
refuse exactly what the character-by-character rule it replaced refused: C0, DEL and C1.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from parsim.base.errors import ParsimError
from parsim.workloads.base import AllReduce


def _control(c: str) -> bool:
    return ord(c) < 32 or 127 <= ord(c) < 160


@given(st.text(max_size=12))
def test_a_name_is_refused_exactly_when_it_holds_a_control_character(name: str) -> None:
    if any(_control(c) for c in name):
        with pytest.raises(ParsimError, match="'name' must not contain control characters"):
            AllReduce(name, 1.0)
    else:
        assert AllReduce(name, 1.0).name == name


@pytest.mark.parametrize("code", [0, 9, 27, 31, 127, 128, 159])
def test_each_control_block_is_refused(code: int) -> None:
    with pytest.raises(ParsimError, match="control characters"):
        AllReduce(f"send{chr(code)}F0", 1.0)


@pytest.mark.parametrize("code", [32, 126, 160, 0x2028, 0x1F600])
def test_printable_and_other_characters_pass(code: int) -> None:
    assert AllReduce(f"a{chr(code)}b", 1.0).name == f"a{chr(code)}b"
