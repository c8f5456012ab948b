"""JSON that is JSON: what the CLI prints and files parsim writes hold no NaN or Infinity.

Python's ``json`` writes ``NaN`` and ``Infinity`` by default, which no JSON parser accepts. A
figure that is not finite (a throughput of a program that takes no time, a ratio against zero)
is written as ``null``; ``dumps`` refuses to write anything else non-standard.
"""

from __future__ import annotations

import json
import math
from typing import Any


def finite(value: Any) -> Any:
    """``value`` with every non-finite float replaced by None, through dicts, lists and tuples."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(item) for item in value]
    return value


def dumps(value: Any, indent: int | None = 2) -> str:
    """Standard JSON text of ``value`` (non-finite numbers become null; unknown objects their str)."""
    return json.dumps(finite(value), indent=indent, allow_nan=False, default=str)
