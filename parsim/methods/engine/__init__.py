"""The discrete-event engine (SimPy): the only package that imports simpy."""

from parsim.methods.engine.program import SimResult, simulate

__all__ = ["SimResult", "simulate"]
