"""parsim: predict, explain and measure how fast work runs on parallel hardware.

    >>> import parsim
    >>> p = parsim.predict("vector_add", {"n": 1e8}, device="h100-sxm")
    >>> p.bottleneck
    'memory'

``parsim.predict``, ``parsim.sweep`` (parameter sweeps) and ``parsim.plots`` load on first use,
so that ``import parsim`` and the CLI stay quick.
"""

import sys
import types
from importlib import metadata

from parsim.errors import ParsimError

__all__ = ["ParsimError", "Prediction", "plots", "predict", "sweep"]
try:
    __version__ = metadata.version("parsim")
except metadata.PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"


class _Package(types.ModuleType):
    """``parsim.predict`` is the function, loaded on first use (``import parsim.cli`` for
    ``parsim --help`` imports no NumPy or model). Importing the submodule of the same name makes
    Python set the attribute to the module; that assignment is ignored, the module stays
    reachable as ``sys.modules["parsim.predict"]``."""

    @property
    def predict(self):  # type: ignore[no-untyped-def]
        from parsim.predict import predict

        return predict

    @predict.setter
    def predict(self, _value: object) -> None:
        pass


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str):
    if name == "Prediction":
        from parsim.prediction import Prediction

        return Prediction
    if name == "sweep":
        from parsim.sweeps.api import sweep

        return sweep
    if name == "plots":
        import parsim.plots as plots

        return plots
    raise AttributeError(f"module 'parsim' has no attribute {name!r}")
