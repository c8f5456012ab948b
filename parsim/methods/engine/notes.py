"""Plain-language remarks collected while simulating, summarised so a long run stays readable.

A ResNet step has hundreds of kernels; listing a wave-quantisation remark for each would bury
the point. Remarks are gathered per topic and summarised: a few are listed by name, many are
counted with the worst example.
"""

from __future__ import annotations

LISTED = 3


class Notes:
    """Collects per-kernel remarks by topic."""

    def __init__(self) -> None:
        self._quantised: dict[str, tuple[float, int, int]] = {}
        self._cached: dict[str, str] = {}

    def quantised(self, name: str, waves: float, slots: int, tail: int) -> None:
        """A compute-bound kernel ends on a partial wave."""
        self._quantised[name] = (waves, slots, tail)

    def cached(self, name: str, level: str) -> None:
        """A kernel's working set fits in a cache level."""
        self._cached[name] = level

    def summary(self) -> tuple[str, ...]:
        notes = []
        quantised = sorted(self._quantised.items(), key=lambda item: item[1][2] / item[1][1] - item[1][0])
        if 0 < len(quantised) <= LISTED:
            for name, (waves, slots, tail) in quantised:
                notes.append(
                    f"{name}: {waves:.2f} waves of {slots} tiles; the tail wave is {tail}/{slots} full "
                    "(wave quantisation)"
                )
        elif quantised:
            name, (waves, slots, tail) = max(quantised, key=lambda item: 1 - item[1][2] / item[1][1])
            notes.append(
                f"wave quantisation in {len(quantised)} compute-bound kernels; emptiest tail: {name}, "
                f"{waves:.2f} waves of {slots} tiles, the last {tail}/{slots} full"
            )
        levels = sorted(set(self._cached.values()))
        for level in levels:
            names = sorted(name for name, at in self._cached.items() if at == level)
            if len(names) <= LISTED:
                notes += [f"{name}: working set fits in {level}, served at its bandwidth" for name in names]
            else:
                notes.append(
                    f"{len(names)} kernels have working sets that fit in {level} and are served at its "
                    f"bandwidth (e.g. {names[0]})"
                )
        return tuple(notes)
