"""parsim: predict, explain and measure how fast work runs on parallel hardware.

>>> import parsim
>>> p = parsim.predict("vector_add", {"n": 1e8}, device="h100-sxm")
>>> p.bottleneck
'memory'
"""

from parsim.errors import ParsimError
from parsim.predict import predict
from parsim.prediction import Prediction

__all__ = ["ParsimError", "Prediction", "predict"]
__version__ = "0.1.0"
