"""Three primitives that work on Python numbers and on NumPy arrays alike.

The closed forms of the model are written once and evaluated either for one prediction (floats:
must stay cheap, a NumPy call on a scalar costs microseconds) or for a whole sweep (arrays). Only
selection and extrema differ between the two worlds; arithmetic operators already agree.
"""

from __future__ import annotations

from typing import Any

import numpy

from parsim.base.dtypes import Number

__all__ = ["Number", "maximum", "minimum", "where"]


def where(condition: Any, if_true: Number, if_false: Number) -> Number:
    """``if_true`` where ``condition`` holds, else ``if_false`` (element-wise for arrays)."""
    if isinstance(condition, numpy.ndarray):
        return numpy.where(condition, if_true, if_false)
    return if_true if condition else if_false


def maximum(a: Number, b: Number) -> Number:
    """The larger of ``a`` and ``b`` (element-wise for arrays)."""
    if isinstance(a, numpy.ndarray) or isinstance(b, numpy.ndarray):
        return numpy.maximum(a, b)
    return a if a >= b else b


def minimum(a: Number, b: Number) -> Number:
    """The smaller of ``a`` and ``b`` (element-wise for arrays)."""
    if isinstance(a, numpy.ndarray) or isinstance(b, numpy.ndarray):
        return numpy.minimum(a, b)
    return a if a <= b else b
