"""Interactive teaching visuals shown beside a lesson (filled in by the teaching-visuals work)."""

from __future__ import annotations


def panel(stem: str) -> None:
    """Draw the interactive visual that belongs to lesson ``stem``, if it has one."""
    return None
