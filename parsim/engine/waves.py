"""Work decomposition: work items -> tiles -> waves over the cores, with the tail effect.

A kernel's items are cut into tiles (a GPU thread block, a CPU chunk, a GEMM output tile).
The processor runs ``cores x tiles_per_core`` tiles at once, a *wave*; a kernel of 1.1 waves
takes as long as two on compute-bound work, because the last wave leaves most cores idle
(the tail effect, or wave quantisation).

Simulating each tile would make a 1e9-element op cost millions of events. Identical tiles
make identical waves, so all full waves are coarsened into one *phase* and the partial last
wave into a second: a kernel is at most two phases whatever its size, and the event count
depends on the phase structure, never on the element count.
"""

from __future__ import annotations

import math

import attrs

from parsim.model.kernel import compute_s
from parsim.model.rates import Execution
from parsim.workloads.base import Kernel


@attrs.frozen
class Phase:
    """Identical tiles running together on a group of cores.

    Attributes:
        label: ``"waves 1-9"`` or ``"tail wave"``.
        tiles: tiles in the phase.
        waves: waves it spans.
        active_cores: cores busy during it.
        compute_s: time the busiest core computes.
        bytes: memory traffic of all its tiles.
    """

    label: str
    tiles: int
    waves: int
    active_cores: int
    compute_s: float
    bytes: float


@attrs.frozen
class Decomposition:
    """How a kernel was cut: tile count, slots per wave and the resulting phases."""

    tiles: int
    slots: int
    phases: tuple[Phase, ...]

    @property
    def waves(self) -> float:
        """Fractional wave count (9.48 waves means the tail wave is 48 % full)."""
        return self.tiles / self.slots


def tile_count(kernel: Kernel, ex: Execution) -> int:
    """Tiles of the kernel: a 2-D grid of output tiles for a GEMM (times its split-K), else chunks."""
    if kernel.gemm_mn is not None:
        outputs, split = gemm_tiles(kernel, ex)
        return outputs * split
    return math.ceil(kernel.work_items / ex.tile_items)


def gemm_tiles(kernel: Kernel, ex: Execution) -> tuple[int, int]:
    """Output tiles of a GEMM and how many ways its reduction (K) is split.

    A GEMM with fewer output tiles than cores (a weight gradient of shape 64 x 147 reduced
    over a million pixels, say) would leave most cores idle; cuBLAS and cuDNN then split K
    across cores and add the partial sums ("split-K"), which this reproduces.
    """
    assert kernel.gemm_mn is not None  # only GEMM-shaped kernels are cut into output tiles
    edge = math.isqrt(ex.tile_items)
    m, n = kernel.gemm_mn
    outputs = math.ceil(m / edge) * math.ceil(n / edge)
    slots = ex.cores * ex.tiles_per_core
    k = kernel.flops / (2.0 * m * n)
    split = max(1, min(slots // outputs, int(k // edge))) if outputs < slots else 1
    return outputs, split


def tile_compute_s(kernel: Kernel, ex: Execution, tiles: int) -> float:
    """Seconds one core spends computing one tile (the model's compute rule for a tile's share).

    A GEMM edge tile is padded: its warps run the full tile's multiply-adds (tile
    quantisation). Elementwise tiles share the work evenly.
    """
    if kernel.gemm_mn is not None:
        m, n = kernel.gemm_mn
        flops = kernel.flops / (m * n) * ex.tile_items / gemm_tiles(kernel, ex)[1]
    else:
        flops = kernel.flops / tiles
    return float(
        compute_s(
            ex, flops, kernel.special_ops / tiles, kernel.work_items / tiles, kernel.python_ops_per_item, 1
        )
    )


def decompose(kernel: Kernel, ex: Execution) -> Decomposition:
    """Split ``kernel`` into at most two phases: the full waves and the tail wave."""
    tiles = tile_count(kernel, ex)
    slots = ex.cores * ex.tiles_per_core
    per_tile_s = tile_compute_s(kernel, ex, tiles)
    per_tile_B = kernel.bytes / tiles
    full_waves, tail_tiles = divmod(tiles, slots)
    phases = []
    if full_waves:
        label = "wave 1" if full_waves == 1 else f"waves 1-{full_waves}"
        phases.append(
            Phase(
                label,
                full_waves * slots,
                full_waves,
                ex.cores,
                full_waves * ex.tiles_per_core * per_tile_s,
                full_waves * slots * per_tile_B,
            )
        )
    if tail_tiles:
        active = min(tail_tiles, ex.cores)
        busiest = math.ceil(tail_tiles / ex.cores)
        label = "tail wave" if full_waves else "wave 1"
        phases.append(Phase(label, tail_tiles, 1, active, busiest * per_tile_s, tail_tiles * per_tile_B))
    return Decomposition(tiles, slots, tuple(phases))
