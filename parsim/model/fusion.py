"""A compiler's fusion: an element-wise op on a product's output runs inside the product.

XLA (the TPU's only stack) fuses element-wise consumers into the operation that produces their
input: the bias, the activation (GELU) or the residual add applied to a matrix product's output are
computed while the product's tiles are still on chip, so the intermediate is never written to HBM
and read back. An eager framework runs them as separate kernels, each a full pass over memory.

The rule, structural (no op names): on a library that ``fuses_elementwise``, a device kernel that
directly follows a matrix product on the same device in a program without dependencies, is not a
product itself, and has one work item per element of the product's output (``m x n``), folds into
that product; one consumer per product (the layer norm after a fused residual add is a row
reduction and stays a pass of its own). The fused kernel reads the product's inputs plus whatever
else the element-wise op
read besides the product's output (the residual), and writes the element-wise op's output instead
of the product's; the element-wise arithmetic runs on the vector unit while the matrix units work
on the next tile, hidden under the product, so the product's FLOPs (and its padding to the
systolic array, ``model.systolic``) stay as they were. The softmax of a cross-entropy
loss after the logits passes the test too; its row reduction would need a second pass, which the
rule does not charge.
"""

from __future__ import annotations

import attrs

from parsim.hardware.specs import SystemSpec
from parsim.stack import library_for
from parsim.workloads.base import HOST, Kernel, Op, Workload


def _consumes(product: Kernel, op: Op) -> bool:
    """Is ``op`` an element-wise op over ``product``'s output, issued right after it?"""
    if not isinstance(op, Kernel) or op.device != product.device or op.library.gemm_mn is not None:
        return False
    if op.work.matrix or op.library.conv is not None or op.library.fused_attention:
        return False
    assert product.library.gemm_mn is not None
    m, n = product.library.gemm_mn
    return op.work.work_items == m * n and op.work.special_ops <= op.work.work_items


def _fused(product: Kernel, op: Kernel) -> Kernel:
    extra_read = max(0.0, op.work.bytes_read - product.work.bytes_written)
    read = product.work.bytes_read + extra_read
    written = op.work.bytes_written
    return product.but(
        bytes_read=read,
        bytes_written=written,
        cold_bytes=min(product.access.cold_bytes + extra_read, read + written),
    )


def fuse_epilogues(workload: Workload, system: SystemSpec) -> Workload:
    """``workload`` with every element-wise consumer of a product fused into it, where the device's
    library fuses (XLA); unchanged elsewhere, and for programs whose ops wait on each other."""
    compute = system.compute
    if not compute.is_accelerator or not library_for(compute.kind).fuses_elementwise or any(workload.deps):
        return workload
    ops: list[Op] = []
    absorbed = False  # a product takes one consumer: what follows reads the fused op's output
    for op in workload.ops:
        last = ops[-1] if ops else None
        if (
            not absorbed
            and isinstance(last, Kernel)
            and last.device != HOST
            and last.library.gemm_mn is not None
            and _consumes(last, op)
        ):
            assert isinstance(op, Kernel)
            ops[-1], absorbed = _fused(last, op), True
            continue
        ops.append(op)
        absorbed = False
    if len(ops) == len(workload.ops):
        return workload
    return attrs.evolve(workload, ops=tuple(ops), deps=tuple(() for _ in ops) if workload.deps else ())
