"""parsim: predict, explain and measure how fast work runs on parallel hardware.

    >>> import parsim
    >>> p = parsim.predict("vector_add", {"n": 1e8}, device="h100-sxm")
    >>> p.bottleneck
    'memory'

``parsim.predict``, ``parsim.sweep`` (parameter sweeps) and ``parsim.plots`` load on first use,
so that ``import parsim`` and the CLI stay quick.
"""

from importlib import metadata

from parsim.base.errors import ParsimError

__all__ = ["ParsimError", "Prediction", "plots", "predict", "sweep"]
try:
    __version__ = metadata.version("parsim")
except metadata.PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"


def __getattr__(name: str):
    if name == "predict":
        from parsim.methods.predict import predict

        return predict
    if name == "Prediction":
        from parsim.results.prediction import Prediction

        return Prediction
    if name == "sweep":
        from parsim.studies.sweeps.api import sweep

        return sweep
    if name == "plots":
        import parsim.plots as plots

        return plots
    raise AttributeError(f"module 'parsim' has no attribute {name!r}")
