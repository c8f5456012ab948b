"""Workloads that cross the PCIe link: a plain copy, and an offloaded op pipelined over streams.

``offload`` is the classic CUDA overlap pattern: the input is cut into ``streams`` chunks; each
chunk is copied host-to-device, processed and copied back on its own stream, so chunk i's
kernel runs while chunk i+1 is still crossing the link. With one stream nothing overlaps.
"""

from __future__ import annotations

from parsim.base.dtypes import itemsize
from parsim.workloads.base import Op, Params, Transfer, Vectorised, Workload
from parsim.workloads.ops import ELEMENTWISE, _items, elementwise_kernel


def copy(params: Params) -> Workload:
    """One host<->device copy of ``n`` elements."""
    n, dtype, direction, pinned = params["n"], params["dtype"], params["direction"], params["pinned"]
    nbytes = n * itemsize(dtype)
    kind = "pinned" if pinned else "pageable"
    op = Transfer(name=f"{direction} {kind}", nbytes=nbytes, direction=direction, pinned=pinned)
    return Workload(name="copy", params=_items(params), ops=(op,), footprint_B=nbytes)


def vectorised_copy(params: Params) -> Vectorised:
    """The copy's bytes over an array of sizes."""
    nbytes = params["n"] * itemsize(params["dtype"])
    return Vectorised(footprint_B=nbytes, transfer_B=nbytes)


def chunk_sizes(n: int, streams: int) -> list[int]:
    """How ``n`` items are cut over ``streams`` streams: as evenly as whole items allow, the first
    chunks one larger, and no empty chunk (fewer items than streams use fewer streams)."""
    return [n // streams + (1 if s < n % streams else 0) for s in range(min(streams, n))]


def offload(params: Params) -> Workload:
    """Inputs to the device, the op, the output back: chunked over ``streams`` streams."""
    op, n, dtype = params["op"], params["n"], params["dtype"]
    streams, pinned = params["streams"], params["pinned"]
    size = itemsize(dtype)
    inputs = ELEMENTWISE[op].inputs
    ops: list[Op] = []
    for s, chunk in enumerate(chunk_sizes(n, streams)):
        tag = f"[{s}]" if streams > 1 else ""
        ops.append(
            Transfer(name=f"h2d{tag}", nbytes=inputs * chunk * size, direction="h2d", pinned=pinned, stream=s)
        )
        ops.append(elementwise_kernel(op, chunk, dtype, stream=s, label=f"{op}{tag}"))
        ops.append(Transfer(name=f"d2h{tag}", nbytes=chunk * size, direction="d2h", pinned=pinned, stream=s))
    return Workload(
        name="offload", params=_items(params), ops=tuple(ops), footprint_B=(inputs + 1) * n * size
    )
