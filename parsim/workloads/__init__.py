"""Workloads: what a program asks of the hardware (kernels, transfers, their order)."""

from parsim.workloads.base import Kernel, Transfer, Workload
from parsim.workloads.registry import WORKLOADS, make_workload, validate_params, workload_names

__all__ = [
    "Kernel",
    "Transfer",
    "Workload",
    "WORKLOADS",
    "make_workload",
    "validate_params",
    "workload_names",
]
