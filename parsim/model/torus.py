"""Collectives on a torus: a TPU slice's chips joined by direct ICI links, no NICs, no switches.

A TPU slice is a 2D (v5e, v6e) or 3D (v4, v5p) torus: every chip has a link to each of its two
neighbours along every dimension, and the last chip of a row wraps around to the first. An
all-reduce runs as one *bidirectional ring* per dimension, one dimension after another
(reduce-scatter along x, then y, then z; the all-gathers in reverse): along a dimension of ``d``
chips, half of the data goes each way round the ring, so a chip sends over two links at once, and
after the reduce-scatter phase each chip holds ``1/d`` of what it started the phase with, so the
next dimension moves ``d`` times less. For an all-reduce of ``S`` bytes on dimensions
``d1, d2, ...`` and links of ``B`` per direction::

    bandwidth = sum_i 2 (d_i - 1)/d_i * S/(d_1 ... d_{i-1}) / (2 B)  =  S (n - 1)/n / B
    latency   = sum_i 2 (d_i - 1) * the link's latency

(the sum telescopes: ``n`` chips in all). A reduce-scatter or an all-gather is half of that. No
schedule beats the injection bound, ``2 (n-1)/n * S`` sent through the ``2k`` links of a chip of a
``k``-dimensional torus; running the dimensions one after another, as here, uses two of them at a
time, so it is ``k`` times above that bound (tests check it is never below).

A group smaller than the slice (the chips of one tensor-parallel group) runs on a sub-torus of the
same number of dimensions, shaped as ``hardware.network.torus_shape`` shapes a slice. All-to-all
and point-to-point sends go over one link per chip, as on any other fabric.
"""

from __future__ import annotations

import attrs

from parsim.hardware.network import torus_shape
from parsim.hardware.specs import LinkSpec

ALL_REDUCE = "all_reduce"


@attrs.frozen
class TorusTiming:
    """A collective's time on a torus, and the ring phases it ran (one per dimension longer than 1)."""

    latency_s: float
    bandwidth_s: float
    dims: tuple[int, ...]

    @property
    def seconds(self) -> float:
        return self.latency_s + self.bandwidth_s


def group_dims(ranks: int, torus: tuple[int, ...]) -> tuple[int, ...]:
    """The sub-torus a group of ``ranks`` chips runs on in a slice shaped ``torus``."""
    if ranks == 1:
        return (1,) * len(torus)
    return torus_shape(ranks, len(torus))


def torus_collective(kind: str, nbytes: float, dims: tuple[int, ...], link: LinkSpec) -> TorusTiming:
    """All-reduce, reduce-scatter or all-gather of ``nbytes`` on a torus of ``dims`` over ``link``."""
    passes = 2 if kind == ALL_REDUCE else 1  # a reduce-scatter phase, then an all-gather phase
    share, latency, bandwidth = float(nbytes), 0.0, 0.0
    for d in dims:
        if d == 1:
            continue
        steps = d - 1  # each half of the data travels d-1 hops round its direction of the ring
        latency += passes * steps * link.latency_s
        bandwidth += passes * steps / d * share / (2.0 * link.bandwidth_Bps)  # two links at once
        share /= d
    return TorusTiming(latency, bandwidth, tuple(d for d in dims if d > 1))


def injection_bound_s(kind: str, nbytes: float, dims: tuple[int, ...], link: LinkSpec) -> float:
    """The least time any schedule needs: the ring's share of the buffer through all ``2k`` links."""
    n = 1
    for d in dims:
        n *= d
    if n == 1:
        return 0.0
    share = (2.0 if kind == ALL_REDUCE else 1.0) * (n - 1) / n
    return share * nbytes / (2 * len(dims) * link.bandwidth_Bps)
