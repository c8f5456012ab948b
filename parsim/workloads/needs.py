"""What a workload holds in one GPU's memory, part by part: the ``MemoryNeeds`` record.

A workload declares its needs per GPU (weights, gradients, optimizer state, activations, KV
cache, workspace; or one undivided ``data_B`` for a kernel's arrays). The transformers' needs come
from ``transformer_memory.transformer_needs``, the parameter state from
``optimizers.parameter_needs``; ``model.footprint`` adds the device's runtime reserve and answers,
once for every caller, whether they fit.
"""

from __future__ import annotations

from typing import Any

import attrs

from parsim.base.dtypes import Number

PARTS = ("weights", "gradients", "optimizer", "activations", "kv_cache", "workspace", "data")
"""The parts of a footprint, in the order a breakdown lists them (``data``: undivided arrays)."""


@attrs.frozen
class MemoryNeeds:
    """Bytes one GPU holds for a workload, part by part.

    Attributes:
        weights_B: the weights (master precision, plus the low-precision copy under mixed precision).
        gradients_B: a gradient per weight (training).
        optimizer_B: the optimizer's state (Adam's two moments).
        activations_B: what the forward pass keeps for the backward (every micro-batch in flight),
            or a forward pass's hidden states (inference).
        kv_cache_B: keys and values of the tokens kept (serving).
        workspace_B: the transient peak on top: the largest gradient in flight, a layer rebuilt
            under full recomputation, an inference step's largest intermediate.
        data_B: a workload's arrays when it declares no parts (may be a NumPy array: a sweep).
    """

    weights_B: float = 0.0
    gradients_B: float = 0.0
    optimizer_B: float = 0.0
    activations_B: float = 0.0
    kv_cache_B: float = 0.0
    workspace_B: float = 0.0
    data_B: Number = 0.0

    @property
    def total_B(self) -> Number:
        """Every part together."""
        return sum((value for _, value in self.parts()[:-1]), self.data_B)

    def parts(self) -> tuple[tuple[str, Any], ...]:
        """``(part, bytes)`` for every part, in ``PARTS`` order."""
        return tuple((part, getattr(self, f"{part}_B")) for part in PARTS)

    def scaled(self, factor: float) -> MemoryNeeds:
        """Every part times ``factor`` (work shared evenly by ``1 / factor`` GPUs)."""
        return MemoryNeeds(*(value * factor for _, value in self.parts()))

    def zero_sharded(self, stage: int, ranks: int) -> MemoryNeeds:
        """ZeRO stage ``stage`` over ``ranks`` data-parallel GPUs: stage 1 shards the optimizer
        state, 2 the gradients too, 3 the weights too (Rajbhandari et al. 2020)."""
        if stage == 0 or ranks == 1:
            return self
        kept = 1.0 / ranks
        return attrs.evolve(
            self,
            optimizer_B=self.optimizer_B * kept,
            gradients_B=self.gradients_B * (kept if stage >= 2 else 1.0),
            weights_B=self.weights_B * (kept if stage >= 3 else 1.0),
        )
