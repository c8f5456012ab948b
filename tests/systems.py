"""Tiny hand-checkable systems shared by the tests.

Round numbers everywhere so timelines can be computed on paper: a GPU of 2 SMs with 4 lanes
at 1 GHz (16 GFLOP/s with FMA), 1 GB/s memory, 1 us memory latency, 4-item tiles, 2 tiles per
SM; a link of 1 GB/s pinned, 0.5 GB/s pageable and 1 us latency; launches of 1 us.
"""

from __future__ import annotations

import attrs

from parsim.hardware.specs import LinkSpec, MemorySpec, ProcessorSpec, SystemSpec
from parsim.workloads.llm_config import LlmConfig

MEMORY = MemorySpec(
    bandwidth_Bps=1e9, peak_bandwidth_Bps=2e9, latency_s=1e-6, capacity_B=1e12, per_core_bandwidth_Bps=1e9
)
TINY_GPU = ProcessorSpec(
    id="tiny-gpu",
    name="tiny GPU",
    kind="gpu",
    cores=2,
    lanes_per_core=4,
    clock_Hz=1e9,
    memory=MEMORY,
    tile_items=4,
    tiles_per_core=2,
    dispatch_s=1e-6,
    copy_engines=2,
    matmul_tile=2,
    matmul_efficiency=1.0,
)
TINY_CPU = ProcessorSpec(
    id="tiny-cpu",
    name="tiny CPU",
    kind="cpu",
    cores=2,
    lanes_per_core=4,
    clock_Hz=1e9,
    memory=MEMORY,
    tile_items=4,
    dispatch_s=1e-6,
    interpreted_element_s=50e-9,
    matmul_tile=2,
    matmul_efficiency=1.0,
)
TINY_LINK = LinkSpec(
    id="tiny-link",
    name="tiny link",
    bandwidth_Bps=1e9,
    peak_bandwidth_Bps=1e9,
    pageable_bandwidth_Bps=5e8,
    latency_s=1e-6,
)


def evolve_gpu(**changes) -> ProcessorSpec:
    return attrs.evolve(TINY_GPU, **changes)


# Memory so fast that only compute matters: isolates compute effects such as wave quantisation.
FAST_MEMORY = MemorySpec(
    bandwidth_Bps=1e15, peak_bandwidth_Bps=1e15, latency_s=1e-9, capacity_B=1e12, per_core_bandwidth_Bps=1e15
)


def compute_bound_system(**gpu_changes) -> SystemSpec:
    """The tiny system with FAST_MEMORY on the GPU (plus any other GPU changes)."""
    return SystemSpec(host=TINY_CPU, device=evolve_gpu(memory=FAST_MEMORY, **gpu_changes), link=TINY_LINK)


# What a GPU calibration measures, made up: a launch of 6 us and a V100-like device.
GPU_RAW = {
    "launch_s": 6e-6,
    "device_bandwidth_Bps": 800e9,
    "gemm_float32_flops_per_s": 12e12,
    "gemm_float16_flops_per_s": 90e12,
    "gemm_float64_flops_per_s": 6.5e12,
}


# a tiny mixture of experts: 4 layers, hidden 64, 8 experts of inner width 128 (SwiGLU), 2 per token
TINY_MOE = LlmConfig(
    name="tiny-moe",
    layers=4,
    hidden=64,
    heads=4,
    kv_heads=4,
    mlp_hidden=128,
    vocab=256,
    context=256,
    mlp="swiglu",
    norm="rmsnorm",
    position="rotary",
    tied_embeddings=False,
    bias=False,
    published_params=0,
    source="test",
    experts=8,
    experts_per_token=2,
)


STEP_BASE = {"model": "mixtral-8x7b", "train": True, "dtype": "bfloat16", "optimizer": "adam", "seq": 128}
"""The Megatron step's parameters the MoE block tests share (the model's shapes come from the config
passed to ``tiny_step``)."""


def tiny_step(config: LlmConfig = TINY_MOE, **given: object):
    """The 3D-parallel training step of ``config`` (the tiny MoE by default) on 8 GPUs at ep=2, 16
    sequences of 128 tokens, with ``given`` on top."""
    from parsim.workloads import parallel3d
    from parsim.workloads.registry import validate_params
    from parsim.workloads.training import numerics_of

    params = validate_params("network", {**STEP_BASE, "batch": 16, "gpus": 8, "ep": 2, **given})
    return parallel3d.parallel_step(config, params, numerics_of(params), named=False)


def pass_named(workload, name: str):
    """The first block of ``workload`` named ``name`` ("F" or "B")."""
    from parsim.workloads.base import Block

    return next(op for op in workload.ops if isinstance(op, Block) and op.name == name)
