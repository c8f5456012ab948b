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
from typing import NamedTuple

from parsim.hardware.specs import ProcessorSpec
from parsim.model import library
from parsim.model.kernel import compute_s
from parsim.model.library import Tiling, gemm_tiling
from parsim.model.rates import Execution
from parsim.workloads.base import Kernel


class Phase(NamedTuple):
    """Identical tiles running together on a group of cores (a named tuple, not an attrs class: a
    training step plans ~200 phases per prediction, and a tuple is made at half the cost).

    Attributes:
        label: ``"waves 1-9"`` or ``"tail wave"``.
        tiles: tiles in the phase.
        waves: waves it spans.
        active_cores: cores busy during it.
        compute_s: time the busiest core computes (a GEMM tile: or waits on its operands).
        bytes: memory traffic of all its tiles.
        arithmetic_s: the tiles' own multiply-adds without padding (the smooth roofline's compute).
    """

    label: str
    tiles: int
    waves: int
    active_cores: int
    compute_s: float
    bytes: float
    arithmetic_s: float


class Decomposition(NamedTuple):
    """How a kernel was cut: tile count, slots per wave and the resulting phases (``shared_tail``: a
    stream-K product's last wave shared by every core, no tail effect); a named tuple, as ``Phase``."""

    tiles: int
    slots: int
    phases: tuple[Phase, ...]
    shared_tail: bool = False

    @property
    def waves(self) -> float:
        """Fractional wave count (9.48 waves means the tail wave is 48 % full)."""
        return self.tiles / self.slots


def tile_seconds(
    kernel: Kernel, ex: Execution, tiles: int, spec: ProcessorSpec, tiling: Tiling | None = None
) -> tuple[int, float, float]:
    """The tile count, one core's seconds per tile, and of them its multiply-adds alone.

    A GEMM is cut as the library chooses (``model.library.gemm_tiling``; ``tiling`` where the
    caller has it already): edge tiles are padded, their warps run the full tile's multiply-adds
    (tile quantisation), and a tile may wait on its operands from the shared cache. Other kernels
    share their work evenly among ``tiles`` chunks.
    """
    if kernel.library.gemm_mn is not None and not ex.interpreted:
        tiling = tiling or gemm_tiling(spec, ex, kernel)
        if math.isnan(tiling.padded_s):  # a tiling made by hand: its parts were never computed
            padded, operands = library.tile_parts(kernel, ex, tiling.rows, tiling.columns, tiling.split, spec)
        else:  # ``gemm_tiling``'s own, computed for this kernel and these rates on its way
            padded, operands = tiling.padded_s, tiling.operands_s
        # the smooth roofline weighs the product's own multiply-adds (as the closed form does); the
        # padding of edge tiles stays in the tile's hard floor. No product carries transcendental or
        # integer work (special_ops, int_ops: an activation's, a transpose's), so its tiles have none
        return tiling.tiles, max(padded, operands), kernel.work.flops / tiling.tiles / ex.core_flops_per_s
    seconds = compute_s(
        ex,
        kernel.work.flops / tiles,
        kernel.work.special_ops / tiles,
        kernel.work.work_items / tiles,
        kernel.issue.python_ops_per_item,
        1,
        kernel.work.int_ops / tiles,
    )
    return tiles, float(seconds), float(seconds)


def decompose(kernel: Kernel, ex: Execution, spec: ProcessorSpec) -> Decomposition:
    """Split ``kernel`` into at most two phases: the full waves and the tail wave.

    A GEMM's tiles are the library's output tiles (``gemm_tiling``, also when it runs in the
    interpreter); any other kernel is cut into chunks of ``tile_items``.
    """
    tiling = gemm_tiling(spec, ex, kernel) if kernel.library.gemm_mn is not None else None
    chunks = tiling.tiles if tiling is not None else math.ceil(kernel.work.work_items / ex.tile_items)
    tiles, per_tile_s, arithmetic_s = tile_seconds(kernel, ex, chunks, spec, tiling)
    if ex.thread_share != 1.0 and tiles > 1:  # cores running one product together (a CPU BLAS)
        per_tile_s, arithmetic_s = per_tile_s / ex.thread_share, arithmetic_s / ex.thread_share
    slots = ex.cores * ex.tiles_per_core
    per_tile_B = kernel.bytes / tiles
    full_waves, tail_tiles = divmod(tiles, slots)
    if tail_tiles and tiling is not None and tiling.shared_tail:  # ``stream_k``, as ``gemm_tiling`` found
        # stream-K: the last wave's multiply-adds are shared by every SM, one phase of fractional waves
        share = tiles / ex.cores
        label = f"waves 1-{full_waves + 1} (stream-K, {tiles / slots:.2f} waves)"
        busy, arithmetic = share * per_tile_s, share * arithmetic_s
        phase = Phase(label, tiles, full_waves + 1, ex.cores, busy, kernel.bytes, arithmetic)
        return Decomposition(tiles, slots, (phase,), shared_tail=True)
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
                full_waves * ex.tiles_per_core * arithmetic_s,
            )
        )
    if tail_tiles:
        active = min(tail_tiles, ex.cores)
        busiest = math.ceil(tail_tiles / ex.cores)
        label = "tail wave" if full_waves else "wave 1"
        phases.append(
            Phase(
                label,
                tail_tiles,
                1,
                active,
                busiest * per_tile_s,
                tail_tiles * per_tile_B,
                busiest * arithmetic_s,
            )
        )
    return Decomposition(tiles, slots, tuple(phases))
