"""Caches that register themselves, so that clearing them all cannot miss one.

Predictions, kernel plans and phase times are memoised (a training step repeats the same kernel
shapes hundreds of times). Benchmarks measure cold predictions and tests compare methods, so
every cache must be clearable: ``cached`` is ``functools.lru_cache`` that also enrols the cache,
and ``clear_caches`` empties every enrolled one. A cached function must return values its callers
cannot change (frozen attrs classes, tuples, ``FrozenMap``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])
_CACHES: list[Any] = []


def cached(maxsize: int = 1024) -> Callable[[F], F]:
    """``functools.lru_cache(maxsize)``, enrolled for ``clear_caches``."""

    def wrap(function: F) -> F:
        cache = functools.lru_cache(maxsize=maxsize)(function)
        _CACHES.append(cache)
        return cache  # type: ignore[return-value]

    return wrap


def clear_caches() -> None:
    """Empty every cache made with ``cached`` (in every module imported so far)."""
    for cache in _CACHES:
        cache.cache_clear()


def registered() -> list[Any]:
    """The enrolled caches (tests check that each one is cleared)."""
    return list(_CACHES)
