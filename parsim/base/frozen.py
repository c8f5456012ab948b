"""A mapping nobody can change: what cached answers hand out so that callers cannot corrupt the cache.

A prediction is cached and the same object is returned to every caller; if its breakdown were a
dict, ``p.breakdown["compute"] = 123`` would change the answer every later caller gets.
``FrozenMap`` reads like a dict (and compares equal to one) but refuses item assignment, hashes,
pickles (Streamlit's cache and process pools copy predictions) and turns back into plain data
with ``plain`` for JSON.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, NoReturn


class FrozenMap(Mapping[Any, Any]):
    """A read-only dict."""

    __slots__ = ("_data",)
    _data: dict[Any, Any]

    def __init__(self, data: Mapping[Any, Any] | Any = (), /) -> None:
        object.__setattr__(self, "_data", dict(data))

    @classmethod
    def _owning(cls, data: dict[Any, Any]) -> FrozenMap:
        """A FrozenMap around a dict nobody else holds (no copy)."""
        frozen = cls.__new__(cls)
        object.__setattr__(frozen, "_data", data)
        return frozen

    def __getitem__(self, key: Any) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return repr(self._data)

    def __hash__(self) -> int:
        return hash(tuple(self._data.items()))

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        raise AttributeError("FrozenMap is read-only")

    def __reduce__(self) -> tuple[type[FrozenMap], tuple[dict[Any, Any]]]:
        return FrozenMap, (self._data,)


_ATOMS = (str, int, float, bool, type(None), FrozenMap)


def freeze(value: Any) -> Any:
    """Mappings become ``FrozenMap`` and lists tuples, all the way down."""
    kind = type(value)
    if kind in _ATOMS:  # the common case, without the cost of abstract-class checks
        return value
    if kind is dict or isinstance(value, Mapping):
        return FrozenMap._owning(
            {key: item if type(item) in _ATOMS else freeze(item) for key, item in value.items()}
        )
    if isinstance(value, (list, tuple)):
        return tuple(item if type(item) in _ATOMS else freeze(item) for item in value)
    return value


def plain(value: Any) -> Any:
    """The reverse, for JSON: mappings become dicts and tuples lists, all the way down."""
    if isinstance(value, Mapping):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    return value
