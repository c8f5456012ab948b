"""TPU presets: Google Cloud's system-architecture pages per version, a paper for v4.

A TPU chip is one or two *TensorCores*; each has a few matrix-multiply units (MXUs), a vector unit
(VPU: 8 sublanes x 128 lanes) and a scalar unit. An MXU is a systolic array (128x128, 256x256 on
v6e): weights sit in the array, activations stream through it, so a product's reduction and output
dimensions are padded up to the array's edge (``ProcessorSpec.systolic_array``, priced once in
``model.systolic``). Chips talk over the inter-chip interconnect (ICI), a 2D torus (v5e, v6e) or
3D torus (v4, v5p) of direct links, not over NICs; the ICI link presets are here too.

In parsim a TPU is a ``ProcessorSpec`` of ``kind="tpu"``: ``cores`` are TensorCores,
``lanes_per_core`` the VPU's 1,024 lanes (its non-matrix path: element-wise ops, reductions),
``matrix_flops_per_s`` the MXUs' peaks (dense, per chip).

Sources, abbreviated in the comments:

- [V4] cloud.google.com/tpu/docs/v4 "System architecture": two TensorCores per chip, four MXUs,
  a vector unit and a scalar unit per TensorCore; 275 TFLOP/s per chip (bf16 or int8); HBM2
  32 GiB, 1200 GBps; 3D mesh/torus; 4096 chips per Pod.
- [V5E] cloud.google.com/tpu/docs/v5e: one TensorCore per chip with four MXUs; 197 TFLOP/s bf16,
  393 TOP/s int8; HBM2 16 GB, 819 GBps; bidirectional ICI 400 GBps per chip over 4 ports;
  8 chips per host; 256 chips per Pod, 2D torus.
- [V5P] cloud.google.com/tpu/docs/v5p: two TensorCores per chip, four MXUs each; 459 TFLOP/s bf16
  (and FP8); HBM2e 95 GiB, 2765 GBps; bidirectional ICI 1200 GBps per chip; 3D torus; 4 chips per
  VM (2x2x1 per host); 8960 chips per Pod.
- [V6E] cloud.google.com/tpu/docs/v6e: one TensorCore per chip with two 256x256 MXUs, a VPU of 128
  lanes x 8 sublanes; 918 TFLOP/s bf16, 1836 TOP/s int8; HBM 32 GB, 1638 GBps; bidirectional ICI
  800 GBps per chip over 4 ports; host over PCIe Gen5; 8 chips per host; 256 chips, 2D torus.
- [ARCH] cloud.google.com/tpu/docs/system-architecture-tpu-vm: "The MXU is composed of 128 x 128
  multiply-accumulators in a systolic array"; bf16 multiplies, float32 accumulation.
- [JAXPREC] JAX API docs, ``jax.lax.Precision``: on TPU, DEFAULT multiplies in one bfloat16 pass,
  HIGH in three (bf16_3x), HIGHEST in six (float32 accuracy).
- [J23] N. Jouppi et al., "TPU v4: An Optically Reconfigurable Supercomputer for Machine Learning
  with Hardware Support for Embeddings", ISCA 2023: 1050 MHz clock, 128 MiB CMEM per chip, six ICI
  links per chip (3D torus), 50 GB/s per link and direction, host over PCIe Gen3 x16.

- [GEMM-V6E] yangwhale/gpu-tpu-pedia@1a4ed2a88da968f657ea1845ed1dde34e7ddfe19 tpu/v7_perf/README.md,
  "TPU v6e (Trillium)": bfloat16 GEMM benchmark in JAX, highest measured 689 of 918 TFLOP/s (75.0 %
  MFU, host-timed); the repository's later README gives ~79 % from profiler device time.

Derived, not quoted: the clock (peak / (MXUs x edge^2 x 2 FLOPs per multiply-add)), which for v4
gives [J23]'s 1050 MHz within 0.1 %; the bandwidth of one ICI link per direction (the chip's
bidirectional figure / 2 directions / its ports).
"""

from __future__ import annotations

from typing import Any

from parsim.hardware.specs import LinkSpec, MemorySpec, ProcessorSpec

GiB = 1024**3  # binary prefix
MiB = 1024**2  # binary prefix
GB = 1e9  # decimal prefix, as the data sheets quote bandwidth

_TPU_COMMON: dict[str, Any] = dict(
    kind="tpu",
    # [V6E] a VPU of 128 lanes x 8 sublanes; estimate: the same 8x128 vector registers on v4/v5 (the
    # layout Pallas' TPU guide gives for every generation)
    lanes_per_core=1024,
    warp_size=1024,  # the VPU runs one instruction on all 8x128 lanes under a mask: no divergence cost
    fp16_ratio=1.0,  # estimate: the VPU computes bfloat16 element-wise work at the float32 rate
    fp64_ratio=1 / 16,  # estimate: no float64 hardware; XLA emulates it in float32 pairs
    # estimate: XLA tiles a large product to fill the MXUs; no public GEMM benchmark per chip
    matmul_efficiency=0.85,
    # estimate: the transcendental unit takes one 8x128 vector register per cycle, as the VPU issues
    # one per cycle (no public figure); 1/8 of that would make a softmax's exponentials, not its
    # products, the cost of a fused attention kernel
    special_per_core_per_cycle=1024.0,
    # estimate: ops of one compiled XLA program follow each other on the chip's scalar unit, without
    # a host launch; ~1 us each
    dispatch_s=1e-6,
    tile_items=1024,  # one 8x128 vector register of work per tile
    tiles_per_core=1,
    copy_engines=2,  # estimate: host-to-device and device-to-host DMAs run at once
)


def _tpu(
    edge: int, mxus: int, cores: int, peak_bf16: float, quantised: dict[str, float], **fields: Any
) -> ProcessorSpec:
    clock = peak_bf16 / (cores * mxus * edge * edge * 2)  # derived (module docstring)
    rates = {
        "bfloat16": peak_bf16,
        # estimate: XLA runs a float16 product through the MXU's bfloat16 path (no float16 MXU mode)
        "float16": peak_bf16,
        # [JAXPREC] precision HIGH: three bfloat16 passes (bf16_3x), what parsim calls math=tf32
        "tf32": peak_bf16 / 3,
        # [JAXPREC] precision HIGHEST: six bfloat16 passes for a float32 product (math=ieee)
        "float32": peak_bf16 / 6,
        **quantised,
    }
    return ProcessorSpec(
        **{**_TPU_COMMON, **fields},  # a generation's own measured figure replaces the common estimate
        matrix_flops_per_s=rates,
        cores=cores,
        clock_Hz=clock,
        systolic_array=edge,
        matrix_units_per_core=mxus,
        matmul_tile=edge,
    )


def _hbm(peak_Bps: float, capacity_B: float, cores: int) -> MemorySpec:
    return MemorySpec(
        bandwidth_Bps=0.9 * peak_Bps,  # estimate: 90 % of the data sheet, as HBM on GPUs reaches
        peak_bandwidth_Bps=peak_Bps,
        latency_s=500e-9,  # estimate: HBM load-to-use ~0.5 us as on GPUs
        capacity_B=capacity_B,
        # estimate: one TensorCore's DMA engines can saturate HBM (XLA streams tiles by DMA)
        per_core_bandwidth_Bps=0.9 * peak_Bps,
    )


TPU_V4 = _tpu(
    128,  # [ARCH] 128x128 MXU
    4,  # [V4] four MXUs per TensorCore
    2,  # [V4] two TensorCores per chip
    275e12,  # [V4] 275 TFLOP/s per chip (bf16 or int8)
    id="tpu-v4",
    name="Google Cloud TPU v4 (2 TensorCores, 8 MXUs of 128x128)",
    quantised={"int8": 275e12},  # [V4] 275 TFLOP/s bf16 or int8
    memory=_hbm(1200 * GB, 32 * GiB, 2),  # [V4] HBM2 32 GiB, 1200 GBps
    onchip_memory_B=128 * MiB,  # [J23] 128 MiB CMEM per chip (VMEM not counted)
    default_link="pcie3-x16",  # [J23] host over PCIe Gen3 x16
    peer_link="ici-v4",
)

TPU_V5E = _tpu(
    128,  # [ARCH] 128x128 MXU
    4,  # [V5E] four MXUs per TensorCore
    1,  # [V5E] one TensorCore per chip
    197e12,  # [V5E] 197 TFLOP/s bf16
    id="tpu-v5e",
    name="Google Cloud TPU v5e (1 TensorCore, 4 MXUs of 128x128)",
    quantised={"int8": 393e12},  # [V5E] 393 TOP/s int8
    memory=_hbm(819 * GB, 16 * GB, 1),  # [V5E] HBM2 16 GB, 819 GBps
    default_link="pcie4-x16",  # estimate: PCIe Gen4 x16 (not documented)
    peer_link="ici-v5e",
)

TPU_V5P = _tpu(
    128,  # [ARCH] 128x128 MXU
    4,  # [V5P] four MXUs per TensorCore
    2,  # [V5P] two TensorCores per chip
    459e12,  # [V5P] 459 TFLOP/s bf16
    id="tpu-v5p",
    name="Google Cloud TPU v5p (2 TensorCores, 8 MXUs of 128x128)",
    # [V5P] FP8 at 459 TFLOP/s; int8 estimate: twice bf16, as on v5e and v6e
    quantised={"float8": 459e12, "int8": 918e12},
    memory=_hbm(2765 * GB, 95 * GiB, 2),  # [V5P] HBM2e 95 GiB, 2765 GBps
    default_link="pcie4-x16",  # estimate: PCIe Gen4 x16 (not documented)
    peer_link="ici-v5p",
)

TPU_V6E = _tpu(
    256,  # [V6E] two 256x256 MXUs
    2,  # [V6E] two MXUs per TensorCore
    1,  # [V6E] one TensorCore per chip
    # [V6E] 918 TFLOP/s bf16; with the page's two 256x256 MXUs this derives a 3.5 GHz clock, above any
    # published TPU clock: the peak is what the matrix path uses, the clock only sets the VPU's rate
    918e12,
    id="tpu-v6e",
    name="Google Cloud TPU v6e Trillium (1 TensorCore, 2 MXUs of 256x256)",
    quantised={"int8": 1836e12},  # [V6E] 1836 TOP/s int8
    memory=_hbm(1638 * GB, 32 * GB, 1),  # [V6E] HBM 32 GB, 1638 GBps
    default_link="pcie5-x16",  # [V6E] the host over PCIe Gen5
    peer_link="ici-v6e",
    # [GEMM-V6E] a jitted bfloat16 GEMM (8192-class shapes) reaches 689 of the 918 TFLOP/s (75 %)
    # timed end to end, ~79 % in device time from the profiler trace: 0.77, XLA's MXU efficiency on v6e
    matmul_efficiency=0.77,
)

TPU_PRESETS: dict[str, ProcessorSpec] = {spec.id: spec for spec in (TPU_V4, TPU_V5E, TPU_V5P, TPU_V6E)}
"""TPU presets by id."""


def _ici(id_: str, name: str, per_direction_Bps: float) -> LinkSpec:
    return LinkSpec(
        id=id_,
        name=name,
        bandwidth_Bps=per_direction_Bps,  # estimate: collectives reach the link rate (no public bus test)
        peak_bandwidth_Bps=per_direction_Bps,
        pageable_bandwidth_Bps=per_direction_Bps,  # never used for host copies (a peer link)
        latency_s=2e-6,  # estimate: ~1-2 us per hop of a small ICI transfer, as an NVLink copy
        duplex=True,  # a link carries both directions at full speed
        kind="ici",
    )


ICI_PRESETS: dict[str, LinkSpec] = {
    link.id: link
    for link in (
        _ici("ici-v4", "TPU v4 ICI (one of 6 links, 3D torus)", 50 * GB),  # [J23] 50 GB/s per link each way
        # [V5E] 400 GBps bidirectional over 4 ports: 50 GBps per port and direction
        _ici("ici-v5e", "TPU v5e ICI (one of 4 links, 2D torus)", 400 * GB / 2 / 4),
        # [V5P] 1200 GBps bidirectional over the 6 links of a 3D torus: 100 GBps per link and direction
        _ici("ici-v5p", "TPU v5p ICI (one of 6 links, 3D torus)", 1200 * GB / 2 / 6),
        # [V6E] 800 GBps bidirectional over 4 ports: 100 GBps per port and direction
        _ici("ici-v6e", "TPU v6e ICI (one of 4 links, 2D torus)", 800 * GB / 2 / 4),
    )
}
"""One ICI link per direction, by id: a torus collective uses two per dimension (``model.torus``)."""
