"""AMD Instinct presets: CDNA 2 (MI250X) and CDNA 3 (MI300X) GPUs and their Infinity Fabric links.

An Instinct GPU is read with the same spec sheet as an NVIDIA one: a ``core`` is a compute unit
(CU: four SIMD16 units, 64 FP32 lanes, plus matrix cores), a ``warp`` is a 64-lane wavefront, a
tile a 256-thread workgroup. The matrix cores (MFMA instructions) are the tensor cores' counterpart
and carry the dense matrix rates per format; unlike NVIDIA's, they also run FP32 and FP64
products, so a float32 GEMM reaches the ``float32`` matrix rate without any TF32 opt-in.

An MI250X is two dies (GCDs) in one package, and ROCm shows each GCD as a GPU of its own with 110
CUs and 64 GB: ``mi250x`` is **one GCD**, what a program sees and what ``hipGetDeviceProperties``
reports; ``mi250x-module`` is **the whole package** (both GCDs as one device, the datasheet's
figures), an optimistic upper bound, since a real program on it runs on two GPUs with separate
memories. An MI300X is one GPU of 8 compute dies (XCDs) behind one memory.

GPUs of an 8-GPU MI300X node are fully connected: each has 7 Infinity Fabric links, one to each
peer. RCCL drives all of them at once, so the node's ring all-reduce sees the 7 links together; the
``infinity-fabric-mi300x`` link is that aggregate per GPU and direction, as ``nvlink4`` is the 18
NVLinks of an H100 together.

Sources, abbreviated in the comments:

- [DS-MI300X] AMD Instinct MI300X accelerator data sheet (2023): 304 CUs, 2100 MHz peak engine clock,
  peak FP64 vector 81.7, FP32 vector 163.4, FP64 matrix 163.4, FP32 matrix 163.4, TF32 653.7, FP16 and
  BF16 1307.4, FP8 2614.9 TFLOP/s, INT8 2614.9 TOPS (dense; twice with sparsity), 192 GB HBM3 at 5.3
  TB/s, 256 MB AMD Infinity Cache, 7 Infinity Fabric links of 128 GB/s peak, PCIe Gen5 x16.
- [WP-CDNA3] AMD CDNA 3 architecture white paper (2023): 8 XCDs of 38 active CUs, 4 MB L2 per XCD
  (2 KB per clock), 64 KB LDS per CU, Infinity Cache with 17.2 TB/s peak; fourth-generation
  Infinity Fabric links of 16 lanes at 32 Gb/s: 64 GB/s per direction (the datasheet's 128 GB/s
  counts both directions).
- [DS-MI250X] AMD Instinct MI250X accelerator data sheet (2021): 220 CUs, 1700 MHz peak engine clock,
  peak FP64 and FP32 vector 47.9, FP64 and FP32 matrix 95.7, FP16 and BF16 383 TFLOP/s, INT8 383 TOPS,
  128 GB HBM2e at 3.2768 TB/s, up to 8 Infinity Fabric links (800 GB/s peak), PCIe Gen4 x16.
- [WP-CDNA2] AMD CDNA 2 architecture white paper (2021): two GCDs of 110 CUs, 8 MB L2 per GCD (32
  channels of 128 B per clock), 64 KB LDS per CU; the GCDs are joined by 4 Infinity Fabric links of
  16 lanes at 25 Gb/s: 50 GB/s per link and direction, 200 GB/s between the two dies.
- [AZ-MI300X] samuel-bohman/AI-benchmarking-guide@3de0c294fd1059a91a2c158712c4a078619d73e8
  Azure_Results/ND_MI300X_v5_results.md (Azure ND MI300X v5, 8x MI300X, ROCm 6.2, RCCL 2.22.3):
  hipBLASLt FP8 GEMM 1159.23 TFLOP/s at 8192^3 and 1159.54 at 6144x12288x12288; BabelStream copy
  4.11, triad 4.09 TB/s; TransferBench host-to-device 55, device-to-host 56 GB/s; rccl-tests
  all-reduce bus bandwidth 313.92 (1 GiB) to 316.82 GB/s (8 GiB).
- [HIPBLAS] ROCm/hipBLAS issue #584: DGEMM on one MI250X GCD with ROCm 5.4 reaches 38 TFLOP/s and
  never 40, of the 47.9 TFLOP/s FP64 matrix peak.
- [HIP] HIP programming guide, hardware implementation: wavefronts of 64 threads on CDNA; at most
  2048 threads resident per CU (``maxThreadsPerMultiProcessor``).
- [TENSILE] ROCm/Tensile macro tiles up to 256x256 (see parsim/stack/presets.py).

Recurring estimates, as for the NVIDIA presets (parsim/hardware/presets_gpu.py): one CU pulls
``3 x bandwidth / CUs``; caches without a measurement run at the datasheet's peak times the share of
its peak the measured HBM reaches (4.1 of 5.3 TB/s: 0.77).
"""

from __future__ import annotations

from typing import Any

from parsim.hardware.presets_gpu import GiB, KiB, MiB, _l1
from parsim.hardware.specs import CacheLevel, LinkSpec, MemorySpec, ProcessorSpec

HBM_SHARE = 4.1 / 5.3
"""[AZ-MI300X] BabelStream on an MI300X reaches 0.77 of its HBM peak: applied to caches and to the
MI250X, whose own STREAM figures are not published in a citable form."""

_INSTINCT_COMMON: dict[str, Any] = dict(
    kind="gpu",
    platform="rocm",  # HIP, rocBLAS/hipBLASLt, MIOpen, RCCL (parsim/stack/presets.py: ROCM)
    warp_size=64,  # [HIP] a CDNA wavefront is 64 threads
    tile_items=256,  # a 256-thread workgroup (4 wavefronts), one element per thread, as on NVIDIA
    tiles_per_core=8,  # [HIP] 2048 threads resident per CU = 8 workgroups of 256
    matmul_tile=256,  # [TENSILE] the largest macro tile edge (MT256x256)
    # estimate: four SIMD16 units per CU issue transcendentals at a quarter of the FMA rate
    special_per_core_per_cycle=16,
    # estimate: a hipLaunchKernel from PyTorch or CuPy costs as a CUDA launch on an A100 ([CLP] 5.7 us)
    dispatch_s=6e-6,
    copy_engines=2,  # estimate: the SDMA engines run a host-to-device and a device-to-host copy at once
)


def _instinct(**fields: Any) -> ProcessorSpec:
    return ProcessorSpec(**_INSTINCT_COMMON, **fields)


MI300X = _instinct(
    id="mi300x",
    name="AMD Instinct MI300X (CDNA 3, 8 XCDs, 192 GB HBM3)",
    cores=304,  # [DS-MI300X] 304 CUs
    # [DS-MI300X] FP32 vector 163.4 TFLOP/s = 304 CUs x 128 x 2 (FMA) x 2.1 GHz: 64 lanes per CU issuing
    # packed (dual) FP32, counted as 128 lanes as an Ampere SM's 128 FP32 lanes are
    lanes_per_core=128,
    clock_Hz=2100e6,  # [DS-MI300X] peak engine clock 2100 MHz
    fp64_ratio=0.5,  # [DS-MI300X] FP64 vector 81.7 vs FP32 vector 163.4 TFLOP/s
    fp16_ratio=1.0,  # estimate: packed FP16 vector math, two per lane as packed FP32: the FP32 rate
    matrix_flops_per_s={
        "float64": 163.4e12,  # [DS-MI300X] FP64 matrix 163.4 TFLOP/s
        "float32": 163.4e12,  # [DS-MI300X] FP32 matrix 163.4 TFLOP/s
        "tf32": 653.7e12,  # [DS-MI300X] TF32 matrix 653.7 TFLOP/s dense (1307.4 with sparsity)
        "float16": 1307.4e12,  # [DS-MI300X] FP16 matrix 1307.4 TFLOP/s dense
        "bfloat16": 1307.4e12,  # [DS-MI300X] BF16 matrix 1307.4 TFLOP/s dense
        "float8": 2614.9e12,  # [DS-MI300X] FP8 matrix 2614.9 TFLOP/s dense
        "int8": 2614.9e12,  # [DS-MI300X] INT8 2614.9 TOPS dense
    },
    # [AZ-MI300X] hipBLASLt FP8 GEMMs of 8192^3 and 6144x12288x12288: 1159.2-1159.5 TFLOP/s of 2614.9:
    # 0.44 (the chip's power limit holds the clock well below 2.1 GHz under dense MFMA work)
    matmul_efficiency=0.44,
    # [DS-MI300X] host interface PCIe Gen5 x16; [AZ-MI300X] TransferBench 55 / 56 GB/s, pcie5-x16's 53
    default_link="pcie5-x16",
    peer_link="infinity-fabric-mi300x",  # [DS-MI300X] 7 links, one to each peer of an 8-GPU node
    memory=MemorySpec(
        bandwidth_Bps=4.1e12,  # [AZ-MI300X] BabelStream copy 4.11, triad 4.09 TB/s
        peak_bandwidth_Bps=5.3e12,  # [DS-MI300X] 5.3 TB/s HBM3
        # estimate: HBM3 behind the Infinity Fabric and the Infinity Cache: ~700 ns, the A100's 407 ns
        # ([TK]) plus two more fabric hops of the chiplet design
        latency_s=700e-9,
        capacity_B=192 * GiB,  # [DS-MI300X] 192 GB HBM3: 8 stacks of 24 GiB (HIP reports 191.98 GiB)
        per_core_bandwidth_Bps=3 * 4.1e12 / 304,  # estimate: 3 x bandwidth / CUs (module docstring)
        caches=(
            # [WP-CDNA3] 64 KB LDS per CU; bandwidth estimate 128 B/cycle/CU as presets_gpu's L1
            _l1(304, 2100e6, 64 * KiB),
            # [WP-CDNA3] 4 MB L2 per XCD, 8 XCDs; 2 KB/clock per XCD x 8 x 2.1 GHz = 34.4 TB/s peak x 0.77
            CacheLevel(name="L2", size_B=32 * MiB, bandwidth_Bps=34.4e12 * HBM_SHARE),
            # [DS-MI300X] 256 MB Infinity Cache; [WP-CDNA3] 17.2 TB/s peak x 0.77 (module docstring)
            CacheLevel(name="Infinity Cache", size_B=256 * MiB, bandwidth_Bps=17.2e12 * HBM_SHARE),
        ),
    ),
)


def _mi250x(id: str, name: str, *, dies: int, peer_link: str | None) -> ProcessorSpec:
    """``dies`` GCDs of an MI250X as one device: 1 as ROCm shows it, 2 for the whole package."""
    bandwidth = 1.6384e12 * HBM_SHARE * dies  # estimate: the GCD's 1.6384 TB/s peak x 0.77
    return _instinct(
        id=id,
        name=name,
        cores=110 * dies,  # [WP-CDNA2] 110 CUs per GCD; [DS-MI250X] 220 per package
        lanes_per_core=64,  # [DS-MI250X] FP32 vector 47.9 TFLOP/s = 220 x 64 x 2 x 1.7 GHz
        clock_Hz=1700e6,  # [DS-MI250X] peak engine clock 1700 MHz
        fp64_ratio=1.0,  # [DS-MI250X] FP64 vector 47.9 = FP32 vector 47.9 TFLOP/s
        fp16_ratio=2.0,  # estimate: packed FP16 (two results per lane and cycle); not in the datasheet
        matrix_flops_per_s={  # [DS-MI250X] package figures, half per GCD
            "float64": 47.85e12 * dies,  # FP64 matrix 95.7 TFLOP/s
            "float32": 47.85e12 * dies,  # FP32 matrix 95.7 TFLOP/s
            "float16": 191.5e12 * dies,  # FP16 matrix 383 TFLOP/s
            "bfloat16": 191.5e12 * dies,  # BF16 matrix 383 TFLOP/s
            "int8": 191.5e12 * dies,  # INT8 383 TOPS; CDNA 2 has no FP8
        },
        matmul_efficiency=0.79,  # [HIPBLAS] DGEMM 38 of 47.9 TFLOP/s on one GCD
        default_link="pcie4-x16",  # [DS-MI250X] PCIe Gen4 x16
        peer_link=peer_link,
        memory=MemorySpec(
            bandwidth_Bps=bandwidth,
            peak_bandwidth_Bps=1.6384e12 * dies,  # [DS-MI250X] 3.2768 TB/s per package, half per GCD
            latency_s=600e-9,  # estimate: HBM2e on CDNA 2, between the A100's 407 ns ([TK]) and MI300X's
            capacity_B=64 * GiB * dies,  # [DS-MI250X] 128 GB HBM2e, 64 GB per GCD
            per_core_bandwidth_Bps=3 * bandwidth / (110 * dies),  # estimate: 3 x bandwidth / CUs
            caches=(
                _l1(110 * dies, 1700e6, 64 * KiB),  # [WP-CDNA2] 64 KB LDS per CU
                # [WP-CDNA2] 8 MB L2 per GCD: 32 channels x 128 B x 1.7 GHz = 6.96 TB/s peak x 0.77
                CacheLevel(name="L2", size_B=8 * MiB * dies, bandwidth_Bps=6.96e12 * HBM_SHARE * dies),
            ),
        ),
    )


MI250X = _mi250x(
    "mi250x",
    "AMD Instinct MI250X, one GCD as ROCm shows it (CDNA 2, 110 CUs, 64 GB HBM2e)",
    dies=1,
    peer_link="xgmi-mi250x",  # [WP-CDNA2] the other GCD of the package: 4 Infinity Fabric links
)

MI250X_MODULE = _mi250x(
    "mi250x-module",
    "AMD Instinct MI250X, the whole package: both GCDs as one device (CDNA 2, 220 CUs, 128 GB)",
    dies=2,
    peer_link=None,  # packages of a node are joined by 1 or 2 links each, depending on the server
)

AMD_GPU_PRESETS: dict[str, ProcessorSpec] = {p.id: p for p in (MI250X, MI250X_MODULE, MI300X)}
"""AMD Instinct GPU presets by id."""

INFINITY_FABRIC_MI300X = LinkSpec(
    id="infinity-fabric-mi300x",
    name="Infinity Fabric (MI300X: 7 links, one to each peer of an 8-GPU node)",
    # [AZ-MI300X] rccl-tests all-reduce on 8x MI300X: bus bandwidth 313.9-316.8 GB/s from 1 to 8 GiB,
    # what RCCL's rings reach over the 7 links at once (as nvlink4's figure is what NCCL/P2P reach):
    # 0.71 of the peak
    bandwidth_Bps=316e9,
    peak_bandwidth_Bps=448e9,  # [WP-CDNA3] 7 links x 16 lanes x 32 Gb/s = 7 x 64 GB/s per direction
    pageable_bandwidth_Bps=142e9,  # estimate: 45 % of pinned as for PCIe (host<->device use only)
    latency_s=3e-6,  # estimate: as NVLink's, a small peer copy is driver-dominated
    duplex=True,  # each link has its own lanes per direction
    kind="xgmi",
)

XGMI_MI250X = LinkSpec(
    id="xgmi-mi250x",
    name="Infinity Fabric between the two GCDs of an MI250X (4 links)",
    # estimate: RCCL's share of the fabric's peak on MI300X (0.71, [AZ-MI300X]) of these 4 links
    bandwidth_Bps=141e9,
    peak_bandwidth_Bps=200e9,  # [WP-CDNA2] 4 links x 16 lanes x 25 Gb/s = 4 x 50 GB/s per direction
    pageable_bandwidth_Bps=63e9,  # estimate: 45 % of pinned as for PCIe (host<->device use only)
    latency_s=3e-6,  # estimate: as NVLink's
    duplex=True,
    kind="xgmi",
)

AMD_LINK_PRESETS: dict[str, LinkSpec] = {link.id: link for link in (INFINITY_FABRIC_MI300X, XGMI_MI250X)}
"""AMD Infinity Fabric link presets by id."""
