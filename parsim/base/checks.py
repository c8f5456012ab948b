"""Validators shared by every value a user can build: hardware specs, kernels, copies, workloads.

One rule for what counts as a number (finite, and a bool is not one, whatever Python says) and
one message format, ``'<field>' must be <bound>: <value>`` (``errors.field_error``), so a bad
bandwidth in a hardware file and a negative FLOP count in a hand-built kernel are refused alike.
Each validator has the attrs signature ``(instance, attribute, value)``.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Callable
from typing import Any

from parsim.base.errors import ParsimError, field_error

Validator = Callable[[Any, Any, Any], None]


def is_number(value: Any) -> bool:
    """A finite int or float (a bool is not a number here)."""
    kind = type(value)
    if kind is float or kind is int:
        return math.isfinite(value)
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)


def is_integer(value: Any) -> bool:
    """A Python or NumPy integer (a bool is not one here)."""
    if type(value) is int:  # the common case, without the cost of an abstract-class check
        return True
    return not isinstance(value, bool) and isinstance(value, numbers.Integral)


def bounded(bound: str, accept: Callable[[float], bool]) -> Validator:
    """A validator refusing anything but a number that ``accept`` allows; ``bound`` names the rule."""

    def validate(instance: Any, attribute: Any, value: Any) -> None:
        if not is_number(value) or not accept(value):
            raise field_error(attribute.name, bound, value)

    return validate


def integer(bound: str, accept: Callable[[int], bool]) -> Validator:
    """A validator refusing anything but an integer that ``accept`` allows."""

    def validate(instance: Any, attribute: Any, value: Any) -> None:
        if not is_integer(value) or not accept(value):
            raise field_error(attribute.name, bound, value)

    return validate


positive = bounded("> 0", lambda v: v > 0)
non_negative = bounded(">= 0", lambda v: v >= 0)
fraction = bounded("in (0, 1]", lambda v: 0 < v <= 1)
positive_int = integer("an integer >= 1", lambda v: v >= 1)
non_negative_int = integer("an integer >= 0", lambda v: v >= 0)


def within(low: float, high: float, unit: str = "", low_open: bool = False) -> Validator:
    """A number in a physically meaningful range: ``low <= value <= high`` (``low < value`` when
    ``low_open``); hardware files with 1e-300 B/s or 1e300 Hz are refused, not simulated into 0 s
    or infinite throughput."""
    unit = f" {unit}" if unit else ""
    bound = f"in {'(' if low_open else '['}{low:g}, {high:g}]{unit}"
    return bounded(bound, (lambda v: low < v <= high) if low_open else (lambda v: low <= v <= high))


def whole_within(low: int, high: int) -> Validator:
    """An integer from ``low`` to ``high``."""
    return integer(f"an integer from {low} to {high}", lambda v: low <= v <= high)


BANDWIDTH = within(1e3, 1e15, "B/s")
BYTES = within(1.0, 1e16, "B")
SECONDS = within(0.0, 1.0, "s")
CLOCK = within(1e6, 1e11, "Hz")
RATE = within(1.0, 1e19, "/s")


def one_of(options: tuple[Any, ...]) -> Validator:
    """A validator accepting only one of ``options``."""

    def validate(instance: Any, attribute: Any, value: Any) -> None:
        if value not in options:
            raise field_error(attribute.name, f"one of {', '.join(map(str, options))}", value)

    return validate


def boolean(instance: Any, attribute: Any, value: Any) -> None:
    if not isinstance(value, bool):
        raise field_error(attribute.name, "true or false", value)


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
"""C0 and C1 control characters and DEL (a regular expression: a step builds thousands of names)."""


def text(instance: Any, attribute: Any, value: Any) -> None:
    """A string with no control characters: names and ids are printed to terminals, where an
    escape sequence in a file's ``name`` would rewrite the screen."""
    if not isinstance(value, str):
        raise field_error(attribute.name, "a string", value)
    if _CONTROL.search(value):
        raise ParsimError(f"'{attribute.name}' must not contain control characters: {value!r}")


def explain(instance: Any, rules: dict[str, Validator], what: str) -> None:
    """Run ``rules`` (field -> validator) on ``instance`` and raise the first failure, prefixed by ``what``.

    Values built by the thousand (a training step's kernels) check themselves with one cheap
    expression and call this only when it fails, to name the field to blame.
    """
    import attrs

    fields = attrs.fields_dict(type(instance))
    try:
        for name, validate in rules.items():
            validate(instance, fields[name], getattr(instance, name))
    except ParsimError as exc:
        raise ParsimError(f"{what}: {exc}") from None


_PRESET_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")


def preset_id(what: str) -> Validator:
    """A part a hardware file names (a link, a cluster's GPU) is ``what``, a preset id, never a
    path: a file read from anywhere (an upload to the app) must not make parsim open another file."""

    def validate(instance: Any, attribute: Any, value: Any) -> None:
        text(instance, attribute, value)
        if not _PRESET_ID.fullmatch(value) or value.endswith(".toml"):
            raise ParsimError(f"'{attribute.name}' must be {what}, not a file path")

    return validate
