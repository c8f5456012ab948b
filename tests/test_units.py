"""Parsing what users type and formatting what they read."""

import pytest

from parsim.base.errors import ParsimError
from parsim.base.units import parse_assignments, parse_value, seconds, si


def test_parse_value():
    assert parse_value("1e8") == 1e8
    assert parse_value("4096") == 4096 and isinstance(parse_value("4096"), int)
    assert parse_value("true") is True and parse_value("False") is False
    assert parse_value("float16") == "float16"


def test_parse_assignments():
    assert parse_assignments(["n=1e3", "dtype=float16"]) == {"n": 1000.0, "dtype": "float16"}
    with pytest.raises(ParsimError, match="key=value"):
        parse_assignments(["n"])
    with pytest.raises(ParsimError, match="twice"):
        parse_assignments(["n=1", "n=2"])


def test_formatting():
    assert si(3.35e12, "B/s") == "3.35 TB/s"
    assert seconds(3.57e-4) == "357 us"
    assert seconds(2.5) == "2.5 s"
    assert seconds(4e-9) == "4 ns"
