"""Measuring this machine: NumPy and CuPy backends, honest timing, calibration, files."""

from parsim.measure.run import Measurement, measure

__all__ = ["Measurement", "measure"]
