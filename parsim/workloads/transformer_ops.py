"""The kernels of one GPU's share of a transformer step, as a framework launches them.

``Ops`` is the builder ``transformer_kernels`` (and ``transformer_eager``) fill: every kernel is
named ``"{layer} {step}"`` and carries the step's numerics; a streaming op's forward kernel goes to
``forward`` now and its backward kernel is returned, so the caller can order each layer group's
backward pass (reversed) with its optimizer update.
"""

from __future__ import annotations

from typing import Any

from parsim.base.dtypes import itemsize
from parsim.workloads.base import Kernel
from parsim.workloads.layers import Numerics
from parsim.workloads.optimizers import update_kernel

CAST_WEIGHTS = "cast weights"
"""``Kernel.part`` of the cast of float32 master weights to the step's type (autocast)."""
ATTENTION_CORE = "attention core"
"""``Kernel.part`` of the attention core's forward kernels, what selective recomputation runs again."""
REPLICATED = "replicated"
"""``Kernel.part`` of the elementwise ops on the whole ``[s, b, h]`` tensor outside the tensor-parallel
regions (the norms, the residual adds with their fused dropout): every tensor-parallel GPU runs them
in full, unless sequence parallelism splits them (``megatron.sequence_split``)."""
EMBEDDING = "embed"
"""The layer of the token (and learned position) embedding."""


def block_layers(index: int) -> tuple[str, str]:
    """The layers of transformer block ``index``: its attention and its MLP (``h.3.attn``, ``h.3.mlp``)."""
    return f"h.{index}.attn", f"h.{index}.mlp"


class Ops:
    """Builds the kernels of one GPU's share of a step, in the layer_kernels conventions."""

    def __init__(
        self, numerics: Numerics, device: int, optimizer: str, train: bool, update: bool, phase: str = ""
    ):
        self.numerics, self.device, self.optimizer, self.phase = numerics, device, optimizer, phase
        self.train, self.update = train, update and train
        self.size = itemsize(numerics.dtype)
        self.forward: list[Kernel] = []
        self.backward: list[Kernel] = []

    def kernel(
        self, layer: str, step: str, flops: float, read: float, written: float, items: int, **extra: Any
    ) -> Kernel:
        # What a kernel writes, and the weights (streamed once per step), is cold traffic: ``cold``.
        cold = extra.pop("cold", 0.0)
        return Kernel.of(
            f"{layer} {step}",
            float(flops),
            float(read),
            float(written),
            max(1, int(items)),
            dtype=self.numerics.dtype,
            device=self.device,
            layer=layer,
            cold_bytes=float(cold + written),
            cpu_library=self.numerics.cpu_library,
            phase=self.phase,
            **extra,
        )

    def stream(
        self, layer: str, what: str, n: int, flops: float, reads: int, writes: int = 1, **extra: Any
    ) -> Kernel:
        """A streaming kernel over ``n`` elements: ``reads`` arrays in, ``writes`` out."""
        return self.kernel(layer, what, flops * n, reads * n * self.size, writes * n * self.size, n, **extra)

    def pointwise(
        self,
        layer: str,
        what: str,
        n: int,
        fwd: tuple[float, int, float],
        bwd: tuple[float, int, int],
        part: str = "",
    ) -> list[Kernel]:
        """A streaming op: its forward kernel now; returns its backward kernel when training.

        ``fwd``: FLOPs per element, arrays read, transcendentals per element; ``bwd``: FLOPs per
        element, arrays read, arrays written.
        """
        flops, reads, special = fwd
        self.forward.append(
            self.stream(layer, f"{what} fwd", n, flops, reads, special_ops=special * n, part=part)
        )
        if not self.train:
            return []
        b_flops, b_reads, b_writes = bwd
        return [
            self.stream(
                layer, f"{what} bwd", n, b_flops, b_reads, b_writes, special_ops=special * n, part=part
            )
        ]

    def gemm(
        self, layer: str, what: str, m: int, n: int, k: int, read: float, written: float, **extra: Any
    ) -> Kernel:
        return self.kernel(
            layer,
            what,
            2.0 * m * n * k,
            read,
            written,
            m * n,
            matrix=True,
            gemm_mn=(max(1, m), max(1, n)),
            python_ops_per_item=k,
            math=self.numerics.linear_math,
            **extra,
        )

    def linear(self, layer: str, what: str, m: int, n: int, k: int, bias: bool, train: bool) -> list[Kernel]:
        """y[m, n] = x[m, k] @ W[k, n]: the forward GEMM now; returns its backward kernels."""
        s, weights = self.size, (k * n + (n if bias else 0)) * self.size
        reorder = {"reorder_B": float(weights)} if self.numerics.plain_weights else {}
        if self.numerics.casts:
            self.forward.append(
                self._cast(
                    layer, f"{what} cast weights", weights / s, "float32", self.numerics.dtype, CAST_WEIGHTS
                )
            )
        self.forward.append(
            self.gemm(
                layer,
                f"{what} fwd",
                m,
                n,
                k,
                (m * k) * s + weights,
                m * n * s,
                cold=weights,
                part=what,
                **reorder,
            )
        )
        if not train:
            return []
        backward = [
            self.gemm(
                layer,
                f"{what} bwd-data",
                m,
                k,
                n,
                m * n * s + weights,
                m * k * s,
                cold=weights,
                part=what,
                **reorder,
            ),
            self.gemm(layer, f"{what} bwd-weight", k, n, m, (m * k + m * n) * s, weights, part=what),
        ]
        if self.numerics.casts:
            backward.append(
                self._cast(layer, f"{what} cast gradient", weights / s, self.numerics.dtype, "float32")
            )
        return backward

    def _cast(self, layer: str, what: str, items: float, source: str, target: str, part: str = "") -> Kernel:
        count = int(items)
        read, written = count * itemsize(source), count * itemsize(target)
        return Kernel.of(
            f"{layer} {what}",
            float(count),
            read,
            written,
            count,
            dtype=target,
            device=self.device,
            layer=layer,
            cold_bytes=float(read + written),
            phase=self.phase,
            part=part,
        )

    def update_of(self, layer: str, params: int) -> list[Kernel]:
        if not (self.update and params):
            return []
        master = self.numerics.master_dtype
        return [
            update_kernel(
                self.optimizer,
                f"{layer} update",
                params,
                master,
                self.device,
                layer,
                cold=True,
                foreach=self.numerics.foreach_optimizer,
                multi_tensor=True,  # torch.optim steps over every layer's weights at once
            )
        ]
