"""All hardware presets in two tables: processors (CPUs, GPUs and TPUs) and links.

The preset modules keep one spec sheet per device with a cited source next to every number;
``data/measurements.csv`` holds the public measurements the effective figures must reproduce
(within 15 %, see tests/test_presets.py). Its columns are ``preset_id, quantity, value, unit,
source, dtype``: ``quantity`` is one of ``memory_bandwidth_Bps``, ``link_bandwidth_Bps`` (pinned,
host to device), ``link_pageable_bandwidth_Bps``, ``dispatch_s`` (kernel launch latency) or
``matmul_flops_per_s``; the last column, ``dtype``, names the element type of a
``matmul_flops_per_s`` row and is empty otherwise.
"""

from __future__ import annotations

from parsim.hardware.presets_amd import AMD_GPU_PRESETS, AMD_LINK_PRESETS
from parsim.hardware.presets_cpu import CPU_PRESETS
from parsim.hardware.presets_gpu import GPU_PRESETS
from parsim.hardware.presets_gpu_current import CURRENT_GPU_PRESETS
from parsim.hardware.presets_links import LINK_PRESETS
from parsim.hardware.presets_tpu import ICI_PRESETS, TPU_PRESETS

PROCESSORS = {**CPU_PRESETS, **GPU_PRESETS, **CURRENT_GPU_PRESETS, **AMD_GPU_PRESETS, **TPU_PRESETS}
LINKS = {**LINK_PRESETS, **AMD_LINK_PRESETS, **ICI_PRESETS}
