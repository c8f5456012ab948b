"""The named choices users type: Flynn modes, prediction methods, overlap rules, backends, kinds.

Each is a ``Literal`` type, so the command line offers exactly these words (and refuses others
before any work is done) and a type checker knows them; the tuples beside them are for messages
and loops. This module imports nothing, so the CLI can build its options without loading the model.
"""

from __future__ import annotations

from typing import Literal, get_args

Mode = Literal["sisd", "simd", "mimd", "mimd+simd", "simt"]
MODES: tuple[str, ...] = get_args(Mode)

Method = Literal["engine", "analytic"]
METHODS: tuple[str, ...] = get_args(Method)

Overlap = Literal["roofline", "serial"]
OVERLAPS: tuple[str, ...] = get_args(Overlap)

Backend = Literal["numpy", "cupy"]
BACKENDS: tuple[str, ...] = get_args(Backend)

HardwareKind = Literal["cpu", "gpu", "tpu", "link", "nic", "cluster"]
