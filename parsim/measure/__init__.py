"""Measuring this machine: NumPy and CuPy backends, honest timing, calibration, files."""

from parsim.measure.run import Measurement, measurable, measure

__all__ = ["Measurement", "measurable", "measure"]
