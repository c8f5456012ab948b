"""The software stack (frameworks and kernel libraries): specs, cited presets and lookup by id."""

from parsim.stack.presets import DEVICE_FRAMEWORKS, FRAMEWORKS, LIBRARIES, framework, library_for, library_of
from parsim.stack.specs import FrameworkSpec, LibrarySpec

__all__ = [
    "DEVICE_FRAMEWORKS",
    "FRAMEWORKS",
    "LIBRARIES",
    "FrameworkSpec",
    "LibrarySpec",
    "framework",
    "library_for",
    "library_of",
]
