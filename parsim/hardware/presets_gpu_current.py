"""Current NVIDIA GPUs: Blackwell, the PCIe and NVL boards, Ada and Ampere inference and workstation cards.

The same two columns as ``presets_gpu`` (and its helpers, imported, not copied): the datasheet
*peak* and the *effective* figure a public benchmark reaches; where nobody has published a
measurement of a board the effective figure is an ``estimate:`` with its derivation, and
``data/measurements.csv`` holds the measurements cited here (tests/test_presets.py checks them).
Matrix peaks are dense: datasheets quote sparse (2:4) rates with an asterisk, halved here. FP4 is
kept as the rated-only format ``float4`` (``parsim.base.dtypes.RATED_ONLY_FORMATS``).

Sources, abbreviated in the comments ([X] = github.com/X); [PG], [TK], [CS], [CUTLASS] as in
``presets_gpu``:

- [WP-B200] NVIDIA HGX B200 / DGX B200 datasheets (1,000 W B200, per GPU: FP4 9 / FP8 4.5 / FP16
  2.25 / TF32 1.1 PFLOP/s dense, FP64 40 TFLOP/s, FP32 80 TFLOP/s, 180 GB HBM3e, 8 TB/s, NVLink 5
  1.8 TB/s), tabulated per GPU with dense and sparse columns at glennklockwood.com/garden/processors/B200.
- [WP-GB200] NVIDIA GB200 NVL72 datasheet, per GPU at up to 1,200 W (tabulated beside [WP-B200] on
  the same page): FP4 10 / FP8 5 / FP16 2.5 / TF32 1.25 PFLOP/s dense, FP64 45 TFLOP/s; 13.4 TB
  HBM3e and 576 TB/s per 72 GPUs (186 GB, 8 TB/s each); NVLink-C2C to its Grace CPU.
- [AZ-GB200] Azure/AI-benchmarking-guide@2a370be6de9586d365feed77e014a73f25198f4d
  Azure_Results/ND_GB200_v6_results.md: an ND GB200 v6 VM (4 GB200 "185GB"), nvbandwidth host to
  device 201 GB/s, cuBLASLt FP8 GEMM (8192^3: 2876.6 TFLOP/s; 6144x12288x12288: 2895.6), nccl-tests
  all-reduce.
- [AZ-H200] Azure/AI-benchmarking-guide@7f20e5fa3b2f9a46d8404af1f6fb14b049d6d5cc
  Azure_Results/ND_H200_v5_results.md: the same cuBLASLt FP8 GEMM benchmark on an ND H200 v5 VM
  (8192^3: 1300.6 TFLOP/s; 6144x12288x12288: 1318.0).
- [B200-DQ] public notes of B200 runs quoting ``nvidia-smi``/deviceQuery: 148 SMs, 1965 MHz maximum SM
  clock, L2 129536 KiB (e.g. a BF16 GEMM study on a 1,000 W B200 with driver 580.126.09).
- [WP-H100NVL] NVIDIA H100 datasheet, H100 NVL column (per GPU: FP16/BF16 1671, FP8 3341, TF32 835
  TFLOP/s with sparsity; FP64 tensor 60, FP32 60 TFLOP/s; 94 GB HBM3, 3.9 TB/s; NVLink bridge 600 GB/s).
- [WP-A100] NVIDIA A100 datasheet, PCIe columns (40 GB HBM2 1,555 GB/s, 250 W; 80 GB HBM2e 1,935 GB/s,
  300 W; the SXM4 rates; NVLink bridge for two GPUs).
- [CUT956] NVIDIA/cutlass issue 956 (2023-05-22): cutlass_profiler's FP16 tensor-op GEMM
  3456x4096x8192 (cutlass_tensorop_s16816gemm_f16_256x128_32x3_nn_align8) on an A100-PCIE-40GB:
  '~158T'; the same kernel and size reach 235138 GFLOP/s in
  NVIDIA/cutlass@6fbc0d33800008d3180d3fefed4e1a653e5f72a0 media/docs/profiler.md (an A100 at its
  1410 MHz boost): 158/235 = 0.67 of the boost rate.
- [WP-L40S] NVIDIA L40S datasheet (FP32 91.6, TF32 183/366, FP16/BF16 362.05/733, FP8 733/1466,
  INT8 733/1466 TFLOP/s dense/sparse; 48 GB GDDR6 864 GB/s; PCIe Gen4 x16; no NVLink).
- [WP-L4] NVIDIA L4 datasheet (FP32 30.3, TF32 120*, FP16/BF16 242*, FP8 485*, INT8 485* with
  sparsity; 24 GB GDDR6 300 GB/s; 72 W; PCIe Gen4 x16).
- [WP-GA102] NVIDIA Ampere GA102 GPU architecture whitepaper, appendix table for the RTX 3090 (82 SMs,
  1695 MHz, FP16 tensor with FP32 accumulate 71 TFLOP/s dense, TF32 35.6, INT8 284 TOPS; 24 GB GDDR6X
  936 GB/s; 6 MB L2) and the RTX A6000 datasheet (84 SMs, 38.7 TFLOP/s FP32, tensor 309.7 TFLOP/s
  with sparsity, 48 GB GDDR6 768 GB/s).
- [WP-Ada] NVIDIA Ada Lovelace architecture whitepaper (AD102/AD104: 128 KB L1 per SM, L2 sizes).
- [A10G] Baseten, "NVIDIA A10 vs A10G for ML model inference": the AWS A10G has the A10's 24 GB
  GDDR6 at 600 GB/s, more CUDA-core and less tensor throughput than the A10 (80 SMs).
- [TK-L40] te42kyfo/gpu-benches@1c36d509ee717dca9215c27135fa1e611bb03ed1 gpu-stream/l40.txt,
  gpu-latency/l40.txt, gpu-l2-cache/l40.txt: an L40 (the L40S's AD102 board and memory).

Threads per SM per compute capability ([PG]): 2048 on 8.0, 9.0 and 10.0; 1536 on 8.6 and 8.9.
"""

from __future__ import annotations

import attrs

from parsim.hardware.presets_gpu import GH100_LEGACY_MMA_SHARE, H100_SXM, GiB, KiB, MiB, _a100, _gpu, _l1
from parsim.hardware.specs import CacheLevel, MemorySpec, ProcessorSpec

GB = 1e9  # datasheets quote HBM3e capacity in decimal gigabytes


def _fp8_gemm_share(tflops: tuple[float, ...], peak_tflops: float) -> float:
    """The mean share of its dense FP8 peak a GPU's large cuBLASLt FP8 GEMMs reach."""
    return sum(tflops) / len(tflops) / peak_tflops


BLACKWELL_MATMUL_EFFICIENCY = (
    H100_SXM.matmul_efficiency
    * _fp8_gemm_share((2876.6, 2895.6), 5000.0)  # [AZ-GB200] of [WP-GB200]'s 5 PFLOP/s: 0.577
    / _fp8_gemm_share((1300.6, 1318.0), 1978.9)  # [AZ-H200] of [WP-H100]'s 1979 TFLOP/s: 0.662
)
"""The share of their dense peak Blackwell's GEMMs reach (0.654): Hopper's 0.75 (borne out by parsim's
published Hopper rows) times the ratio of the shares one cuBLASLt FP8 GEMM benchmark measures on a
GB200 and an H200 ([AZ-GB200], [AZ-H200]): Blackwell holds 13 % less of its datasheet rate than
Hopper. The B200 takes the GB200's share (same die and library)."""

B200 = _gpu(
    id="b200",
    name="NVIDIA B200 180 GB (Blackwell, HGX/DGX B200, 1000 W)",
    cores=148,  # [B200-DQ] 148 SMs
    lanes_per_core=128,  # [WP-B200] 128 FP32 cores per SM (Blackwell keeps Hopper's SM width)
    # [B200-DQ] 1965 MHz maximum SM clock: 148 x 128 x 2 x 1965 MHz = 74.4 TFLOP/s FP32, 7 % under the
    # datasheet's 80 (quoted at a boost above the clock nvidia-smi reports)
    clock_Hz=1965e6,
    fp64_ratio=0.5,  # [WP-B200] FP64 40 vs FP32 80 TFLOP/s
    fp16_ratio=2.0,  # estimate: FP16/BF16 non-tensor at 2x FP32 as on Hopper ([WP-H100]); not in [WP-B200]
    matrix_flops_per_s={
        "float16": 2250e12,  # [WP-B200] FP16 tensor 4.5 PFLOP/s with sparsity, 2.25 dense
        "bfloat16": 2250e12,  # [WP-B200] BF16 tensor 2.25 PFLOP/s dense
        "tf32": 1100e12,  # [WP-B200] TF32 tensor 2.2 PFLOP/s with sparsity, 1.1 dense
        "float64": 40e12,  # [WP-B200] FP64 / FP64 tensor 40 TFLOP/s
        "float8": 4500e12,  # [WP-B200] FP8 tensor 9 PFLOP/s with sparsity, 4.5 dense
        "int8": 4500e12,  # [WP-B200] INT8 tensor 9 POPS with sparsity, 4.5 dense
        "float4": 9000e12,  # [WP-B200] FP4 tensor 18 PFLOP/s with sparsity, 9 dense
    },
    # one share for every dtype, as every preset's; [B200-DQ]'s hand-written BF16 GEMM at 16384^3
    # (1819 TFLOP/s = 0.81) is one kernel at one shape, the library benchmark the rate libraries reach
    matmul_efficiency=BLACKWELL_MATMUL_EFFICIENCY,
    fp8_block_scaling=True,  # cc 10.0: TE runs the 128-element scales on the MXFP8 tensor cores (PR #2157)
    special_per_core_per_cycle=16,  # [PG] cc 10.0: 16 SFU results/clock/SM
    dispatch_s=5e-6,  # estimate: CUDA launch ~5 us as on Hopper (cf. 5.7 us measured on A100, [CLP])
    tiles_per_core=8,  # [PG] cc 10.0: 2048 threads/SM = 8 blocks of 256
    default_link="pcie5-x16",  # [WP-B200] HGX B200 boards reach their hosts over PCIe Gen5 x16
    peer_link="nvlink5",  # [WP-B200] 18 fifth-generation NVLinks, 1.8 TB/s per GPU
    memory=MemorySpec(
        # estimate: 82 % of the 8 TB/s datasheet, between the shares measured on H200 ([TK] triad 3534 of
        # 4800 GB/s: 74 %) and H100 SXM ([VP] copy 2903 of 3350 GB/s: 87 %)
        bandwidth_Bps=6.6e12,
        peak_bandwidth_Bps=8.0e12,  # [WP-B200] 8 TB/s HBM3e
        latency_s=400e-9,  # estimate: HBM3e load-to-use ~400 ns (375 ns on H100, [TK]; a two-die package)
        capacity_B=180 * GB,  # [WP-B200] 1,440 GB in 8 GPUs = 180 GB each
        per_core_bandwidth_Bps=3 * 6.6e12 / 148,  # estimate: 3 x bandwidth / SMs (presets_gpu docstring)
        caches=(
            _l1(148, 1965e6, 256 * KiB),  # estimate: 256 KB L1/shared per SM as on Hopper ([WP-H100])
            # [B200-DQ] L2 129536 KiB; bandwidth estimate: 3x effective DRAM bandwidth
            CacheLevel(name="L2", size_B=129536 * KiB, bandwidth_Bps=3 * 6.6e12),
        ),
    ),
)

# The Blackwell GPU of a GB200 superchip: the B200's die at the NVL72's higher power, its Grace CPU over
# NVLink-C2C instead of PCIe
GB200 = attrs.evolve(
    B200,
    id="gb200",
    name="NVIDIA Blackwell GPU of a GB200 superchip, 186 GB (GB200 NVL72, 1200 W)",
    matrix_flops_per_s=(
        ("bfloat16", 2500e12),  # [WP-GB200] BF16 tensor 5 PFLOP/s with sparsity, 2.5 dense
        ("float16", 2500e12),  # [WP-GB200] FP16 tensor 2.5 PFLOP/s dense
        ("float4", 10000e12),  # [WP-GB200] FP4 tensor 20 PFLOP/s with sparsity, 10 dense
        ("float64", 45e12),  # [WP-GB200] FP64 / FP64 tensor 45 TFLOP/s
        ("float8", 5000e12),  # [WP-GB200] FP8 tensor 10 PFLOP/s with sparsity, 5 dense
        ("int8", 5000e12),  # [WP-GB200] INT8 tensor 5 POPS dense
        ("tf32", 1250e12),  # [WP-GB200] TF32 tensor 2.5 PFLOP/s with sparsity, 1.25 dense
    ),
    default_link="nvlink-c2c",  # [WP-GB200] the GPU reaches its Grace CPU over NVLink-C2C
    memory=attrs.evolve(
        B200.memory,
        capacity_B=186 * GB,  # [WP-GB200] 13.4 TB HBM3e in 72 GPUs = 186 GB ([AZ-GB200] "185GB")
    ),
)

H100_NVL = _gpu(
    id="h100-nvl",
    name="NVIDIA H100 NVL 94 GB (GH100, Hopper, PCIe)",
    cores=132,  # [WP-H100NVL] the NVL board enables the SXM5 configuration: 132 SMs
    lanes_per_core=128,  # [WP-H100] 128 FP32 cores per SM
    clock_Hz=1785e6,  # [WP-H100NVL] boost 1785 MHz: 132 x 128 x 2 x 1785 MHz = 60.3 TFLOP/s (datasheet 60)
    fp64_ratio=0.5,  # [WP-H100NVL] FP64 30 vs FP32 60 TFLOP/s
    fp16_ratio=2.0,  # [WP-H100] FP16 and BF16 non-tensor at 2x FP32 on GH100
    matrix_flops_per_s={
        "float16": 835.5e12,  # [WP-H100NVL] FP16 tensor 1671 TFLOP/s with sparsity, 835.5 dense
        "bfloat16": 835.5e12,  # [WP-H100NVL] BF16 tensor 1671 TFLOP/s with sparsity, 835.5 dense
        "tf32": 417.5e12,  # [WP-H100NVL] TF32 tensor 835 TFLOP/s with sparsity, 417.5 dense
        "float64": 60e12,  # [WP-H100NVL] FP64 tensor core 60 TFLOP/s
        "float8": 1670.5e12,  # [WP-H100NVL] FP8 tensor 3341 TFLOP/s with sparsity, 1670.5 dense
        "int8": 1670.5e12,  # [WP-H100NVL] INT8 tensor 3341 TOPS with sparsity, 1670.5 dense
    },
    matmul_efficiency=0.75,  # estimate: cuBLAS on H100 reaches ~70-80 % of the dense tensor peak
    legacy_mma_share=GH100_LEGACY_MMA_SHARE,  # GH100's, as the other H100s
    fp8_block_scaling=True,  # cc 9.0, as the other H100s
    special_per_core_per_cycle=16,  # [PG] cc 9.0: 16 SFU results/clock/SM
    dispatch_s=5e-6,  # estimate: CUDA launch on Hopper ~5 us, cf. 5.7 us measured on A100 [CLP]
    tiles_per_core=8,  # [PG] cc 9.0: 2048 threads/SM = 8 blocks of 256
    default_link="pcie5-x16",  # [WP-H100NVL] PCIe Gen5 x16
    # no peer_link: [WP-H100NVL] NVLink bridges join pairs of boards only, not the GPUs of a server
    memory=MemorySpec(
        # estimate: 82 % of the 3.9 TB/s datasheet, between [TK] H200 (74 %) and [VP] H100 SXM (87 %)
        bandwidth_Bps=3.2e12,
        peak_bandwidth_Bps=3.9e12,  # [WP-H100NVL] 3.9 TB/s HBM3
        latency_s=375e-9,  # estimate: same GH100 memory system as [TK] gpu-latency h100_pcie
        capacity_B=94 * GB,  # [WP-H100NVL] 94 GB HBM3
        per_core_bandwidth_Bps=3 * 3.2e12 / 132,  # estimate: 3 x bandwidth / SMs
        caches=(
            _l1(132, 1785e6, 256 * KiB),  # [WP-H100] 256 KB L1/shared per SM
            # [WP-H100] 50 MB L2; estimate: [TK] gpu-l2-cache h200 9.8 TB/s scaled by clock 1785/1980
            CacheLevel(name="L2", size_B=50 * MiB, bandwidth_Bps=8.8e12),
        ),
    ),
)

# The PCIe A100s are the SXM4 die and rates ([WP-A100]: same 312 TFLOP/s dense FP16, same 1410 MHz
# boost) without the NVSwitch board: an NVLink bridge joins two boards at most, so no peer_link.
A100_PCIE_40GB = attrs.evolve(
    _a100(
        "a100-pcie-40gb",
        "NVIDIA A100 PCIe 40 GB (GA100, Ampere, 250 W)",
        bandwidth_Bps=1.37e12,  # [TK] gpu-stream a100_40 triad 1360 GB/s: the same 1555 GB/s HBM2 on SXM4
        peak_bandwidth_Bps=1555e9,  # [WP-A100] 1,555 GB/s HBM2
        capacity_B=40 * GiB,  # [WP-A100] 40 GB HBM2
    ),
    peer_link=None,  # [WP-A100] the NVLink bridge joins pairs of PCIe boards only
    # The 250 W board ([WP-A100]; SXM4: 400 W) cannot hold 1410 MHz through long tensor-core work:
    # [CUT956] measures the same CUTLASS FP16 GEMM at 0.67 of the boost-clock figure; as a clock,
    # 1410 MHz x 158/235 = 948 MHz. HBM2 bandwidth is unaffected (its clock is not power-scaled).
    sustained_clock_Hz=948e6,
)

A100_PCIE_80GB = attrs.evolve(
    _a100(
        "a100-pcie-80gb",
        "NVIDIA A100 PCIe 80 GB (GA100, Ampere, 300 W)",
        # estimate: [TK] a100_80 SXM triad 1759 GB/s scaled by the datasheet ratio 1935/2039
        bandwidth_Bps=1.67e12,
        peak_bandwidth_Bps=1935e9,  # [WP-A100] 1,935 GB/s HBM2e on the PCIe 80 GB board
        capacity_B=80 * GiB,  # [WP-A100] 80 GB HBM2e
    ),
    peer_link=None,  # [WP-A100] the NVLink bridge joins pairs of PCIe boards only
)

L40S = _gpu(
    id="l40s",
    name="NVIDIA L40S 48 GB (AD102, Ada Lovelace)",
    cores=142,  # [WP-L40S] 18,176 CUDA cores = 142 SMs x 128
    lanes_per_core=128,  # [WP-Ada] 128 CUDA cores per SM
    clock_Hz=2520e6,  # [WP-L40S] boost 2520 MHz: 142 x 128 x 2 x 2520 MHz = 91.6 TFLOP/s FP32
    fp64_ratio=1 / 64,  # [PG] cc 8.9: 2 FP64 vs 128 FP32 results/clock/SM
    fp16_ratio=1.0,  # [WP-Ada] FP16 non-tensor at the FP32 rate
    matrix_flops_per_s={
        "float16": 362.05e12,  # [WP-L40S] FP16 tensor 362.05 TFLOP/s dense (733 with sparsity)
        "bfloat16": 362.05e12,  # [WP-L40S] BF16 tensor 362.05 TFLOP/s dense
        "tf32": 183e12,  # [WP-L40S] TF32 tensor 183 TFLOP/s dense (366 with sparsity)
        "float8": 733e12,  # [WP-L40S] FP8 tensor 733 TFLOP/s dense (1466 with sparsity)
        "int8": 733e12,  # [WP-L40S] INT8 tensor 733 TOPS dense (1466 with sparsity)
    },
    matmul_efficiency=0.75,  # estimate: cuBLAS reaches ~70-80 % of the dense tensor peak (as on Hopper)
    # estimate: as the RTX 4090 ([MLI] SGEMM ~60 % of the FP32 peak): half of an Ada SM's FP32 lanes share
    # their issue slots with the GEMM's integer work
    vector_matmul_efficiency=0.6,
    special_per_core_per_cycle=16,  # [PG] cc 8.9: 16 SFU results/clock/SM
    dispatch_s=4.5e-6,  # estimate: as the RTX 4090 (Ada; 4.35 us measured on GTX 1080 [CLP])
    tiles_per_core=6,  # [PG] cc 8.9: 1536 threads/SM = 6 blocks of 256
    default_link="pcie4-x16",  # [WP-L40S] PCIe Gen4 x16, no NVLink
    memory=MemorySpec(
        bandwidth_Bps=800e9,  # [TK-L40] gpu-stream l40 at 100 % occupancy: triad 768, read 844 GB/s
        peak_bandwidth_Bps=864e9,  # [WP-L40S] 864 GB/s GDDR6
        latency_s=254e-9,  # [TK-L40] gpu-latency l40: ~632 cycles at 2490 MHz for data sets past the L2
        capacity_B=48 * GiB,  # [WP-L40S] 48 GB GDDR6 with ECC
        per_core_bandwidth_Bps=3 * 800e9 / 142,  # estimate: 3 x bandwidth / SMs
        caches=(
            _l1(142, 2520e6, 128 * KiB),  # [WP-Ada] 128 KB L1/shared per SM
            # [WP-Ada] 96 MB L2 on the L40 family; [TK-L40] gpu-l2-cache l40: ~5.2 TB/s
            CacheLevel(name="L2", size_B=96 * MiB, bandwidth_Bps=5.2e12),
        ),
    ),
)

A10G = _gpu(
    id="a10g",
    name="NVIDIA A10G 24 GB (GA102, Ampere; AWS G5)",
    # estimate: 80 SMs (10,240 CUDA cores) as deviceQuery on AWS G5 reports; [A10G]: more CUDA-core throughput
    # than the A10 (72 SMs at 1695 MHz, 31.2 TFLOP/s)
    cores=80,
    lanes_per_core=128,  # [WP-GA102] 128 FP32 cores per GA102 SM
    clock_Hz=1710e6,  # estimate: the boost AWS G5 reports (80 x 128 x 2 x 1710 MHz = 35 TFLOP/s FP32)
    fp64_ratio=1 / 64,  # [PG] cc 8.6: 2 FP64 vs 128 FP32 results/clock/SM
    fp16_ratio=1.0,  # [WP-GA102] FP16 non-tensor at the FP32 rate on GA102
    matrix_flops_per_s={
        # estimate: [A10G] says the A10G has less tensor throughput than the A10 (125 TFLOP/s); the GeForce
        # GA102 rate of [WP-GA102] (RTX 3090: 71 TFLOP/s FP16 with FP32 accumulate at 82 SMs x 1695 MHz,
        # 512 FLOP/clock/SM) at 80 SMs x 1710 MHz gives 70 TFLOP/s
        "float16": 70e12,
        "bfloat16": 70e12,  # estimate: BF16 at the FP16 rate, as on every GA102 ([WP-GA102])
        "tf32": 35e12,  # estimate: half the FP16 rate, as on every GA102 ([WP-GA102])
    },
    matmul_efficiency=0.8,  # estimate: cuBLAS HGEMM on GA102 reaches ~80 % of its tensor peak
    vector_matmul_efficiency=0.75,  # [CS] PyTorch FP32 matmul on an RTX 3090 (same GA102 SM): 27 of 35.6
    special_per_core_per_cycle=16,  # [PG] cc 8.6: 16 SFU results/clock/SM
    dispatch_s=5e-6,  # estimate: CUDA launch ~5 us (5.7 us measured on A100 [CLP])
    tiles_per_core=6,  # [PG] cc 8.6: 1536 threads/SM = 6 blocks of 256
    default_link="pcie4-x16",  # [A10G] PCIe Gen4 x16 board
    memory=MemorySpec(
        bandwidth_Bps=470e9,  # [CS] tensor copy on an A10 24GB 469 GB/s: the same 600 GB/s GDDR6 [A10G]
        peak_bandwidth_Bps=600e9,  # [A10G] 600 GB/s GDDR6
        latency_s=450e-9,  # estimate: GDDR6 load-to-use ~450 ns, as the T4 and RTX 4090 presets
        capacity_B=24 * GiB,  # [A10G] 24 GB GDDR6
        per_core_bandwidth_Bps=3 * 470e9 / 80,  # estimate: 3 x bandwidth / SMs
        caches=(
            _l1(80, 1710e6, 128 * KiB),  # [WP-GA102] 128 KB L1/shared per SM
            # [WP-GA102] 6 MB L2; bandwidth estimate: 3x effective DRAM bandwidth
            CacheLevel(name="L2", size_B=6 * MiB, bandwidth_Bps=3 * 470e9),
        ),
    ),
)

L4 = _gpu(
    id="l4",
    name="NVIDIA L4 24 GB (AD104, Ada Lovelace, 72 W)",
    cores=58,  # [WP-L4] 7,424 CUDA cores = 58 SMs x 128
    lanes_per_core=128,  # [WP-Ada] 128 CUDA cores per SM
    clock_Hz=2040e6,  # [WP-L4] boost 2040 MHz: 58 x 128 x 2 x 2040 MHz = 30.3 TFLOP/s FP32
    fp64_ratio=1 / 64,  # [PG] cc 8.9: 2 FP64 vs 128 FP32 results/clock/SM
    fp16_ratio=1.0,  # [WP-Ada] FP16 non-tensor at the FP32 rate
    matrix_flops_per_s={
        "float16": 121e12,  # [WP-L4] FP16 tensor 242 TFLOP/s with sparsity, 121 dense
        "bfloat16": 121e12,  # [WP-L4] BF16 tensor 242 TFLOP/s with sparsity, 121 dense
        "tf32": 60e12,  # [WP-L4] TF32 tensor 120 TFLOP/s with sparsity, 60 dense
        "float8": 242.5e12,  # [WP-L4] FP8 tensor 485 TFLOP/s with sparsity, 242.5 dense
        "int8": 242.5e12,  # [WP-L4] INT8 tensor 485 TOPS with sparsity, 242.5 dense
    },
    # estimate: the 72 W L4 cannot hold 2040 MHz under long GEMMs, as the 70 W T4 cannot hold its boost
    # (that preset: ~20 % below); the same share is assumed
    sustained_clock_Hz=1.63e9,
    matmul_efficiency=0.75,  # estimate: cuBLAS reaches ~70-80 % of the dense tensor peak at the held clock
    vector_matmul_efficiency=0.6,  # estimate: as the RTX 4090 (Ada, [MLI] SGEMM ~60 % of FP32 peak)
    special_per_core_per_cycle=16,  # [PG] cc 8.9: 16 SFU results/clock/SM
    dispatch_s=4.5e-6,  # estimate: as the RTX 4090 (Ada)
    tiles_per_core=6,  # [PG] cc 8.9: 1536 threads/SM = 6 blocks of 256
    default_link="pcie4-x16",  # [WP-L4] PCIe Gen4 x16
    memory=MemorySpec(
        # estimate: 80 % of the 300 GB/s datasheet, the share the T4 preset's GDDR6 reaches ([BWT] 240 of 320)
        bandwidth_Bps=240e9,
        peak_bandwidth_Bps=300e9,  # [WP-L4] 300 GB/s GDDR6
        latency_s=300e-9,  # estimate: as the L40's ~254 ns ([TK-L40]) plus a smaller, slower memory system
        capacity_B=24 * GiB,  # [WP-L4] 24 GB GDDR6
        per_core_bandwidth_Bps=3 * 240e9 / 58,  # estimate: 3 x bandwidth / SMs
        caches=(
            _l1(58, 2040e6, 128 * KiB),  # [WP-Ada] 128 KB L1/shared per SM
            # [WP-Ada] AD104 48 MB L2; bandwidth estimate: 3x effective DRAM bandwidth
            CacheLevel(name="L2", size_B=48 * MiB, bandwidth_Bps=3 * 240e9),
        ),
    ),
)

RTX_3090 = _gpu(
    id="rtx-3090",
    name="NVIDIA GeForce RTX 3090 (GA102, Ampere)",
    cores=82,  # [WP-GA102] 82 SMs (10,496 CUDA cores)
    lanes_per_core=128,  # [WP-GA102] 128 FP32 cores per SM
    clock_Hz=1695e6,  # [WP-GA102] boost 1695 MHz (35.6 TFLOP/s FP32)
    fp64_ratio=1 / 64,  # [PG] cc 8.6: 2 FP64 vs 128 FP32 results/clock/SM
    fp16_ratio=1.0,  # [WP-GA102] FP16 non-tensor at the FP32 rate
    matrix_flops_per_s={
        "float16": 71e12,  # [WP-GA102] FP16 tensor, FP32 accumulate: 71 TFLOP/s dense (142 FP16 acc.)
        "bfloat16": 71e12,  # [WP-GA102] BF16 tensor 71 TFLOP/s dense
        "tf32": 35.6e12,  # [WP-GA102] TF32 tensor 35.6 TFLOP/s dense
        "int8": 284e12,  # [WP-GA102] INT8 tensor 284 TOPS dense (568 with sparsity)
    },
    matmul_efficiency=0.8,  # estimate: cuBLAS HGEMM on GA102 reaches ~80 % of its tensor peak
    vector_matmul_efficiency=0.75,  # [CS] PyTorch FP32 matmul on an RTX 3090: 27 of the 35.6 TFLOP/s peak
    special_per_core_per_cycle=16,  # [PG] cc 8.6: 16 SFU results/clock/SM
    dispatch_s=4.5e-6,  # estimate: GeForce CUDA launch ~4-5 us, cf. 4.35 us measured on GTX 1080 [CLP]
    tiles_per_core=6,  # [PG] cc 8.6: 1536 threads/SM = 6 blocks of 256
    default_link="pcie4-x16",  # [WP-GA102] PCIe Gen4 x16
    memory=MemorySpec(
        bandwidth_Bps=831e9,  # [CS] PyTorch large-tensor copy on an RTX 3090: 831 GB/s
        peak_bandwidth_Bps=936e9,  # [WP-GA102] 19.5 Gbps GDDR6X on 384 bits = 936 GB/s
        latency_s=450e-9,  # estimate: GDDR6X load-to-use ~450 ns, as the RTX 4090 preset
        capacity_B=24 * GiB,  # [WP-GA102] 24 GB GDDR6X
        per_core_bandwidth_Bps=3 * 831e9 / 82,  # estimate: 3 x bandwidth / SMs
        caches=(
            _l1(82, 1695e6, 128 * KiB),  # [WP-GA102] 128 KB L1/shared per SM
            # [WP-GA102] 6 MB L2; bandwidth estimate: 3x effective DRAM bandwidth
            CacheLevel(name="L2", size_B=6 * MiB, bandwidth_Bps=3 * 831e9),
        ),
    ),
)

RTX_A6000 = _gpu(
    id="rtx-a6000",
    name="NVIDIA RTX A6000 48 GB (GA102, Ampere)",
    cores=84,  # [WP-GA102] RTX A6000: 10,752 CUDA cores = 84 SMs
    lanes_per_core=128,  # [WP-GA102] 128 FP32 cores per SM
    clock_Hz=1800e6,  # [WP-GA102] boost 1800 MHz: 84 x 128 x 2 x 1800 MHz = 38.7 TFLOP/s FP32
    fp64_ratio=1 / 64,  # [PG] cc 8.6: 2 FP64 vs 128 FP32 results/clock/SM
    fp16_ratio=1.0,  # [WP-GA102] FP16 non-tensor at the FP32 rate
    matrix_flops_per_s={
        # [WP-GA102] tensor 309.7 TFLOP/s with sparsity, 154.8 dense: the professional board keeps FP32
        # accumulate at the full rate (84 SMs x 1024 FLOP/clock x 1800 MHz)
        "float16": 154.8e12,
        "bfloat16": 154.8e12,  # [WP-GA102] BF16 at the FP16 rate
        "tf32": 77.4e12,  # [WP-GA102] TF32 at half the FP16 rate
        "int8": 309.7e12,  # [WP-GA102] INT8 at twice the FP16 rate, dense
    },
    matmul_efficiency=0.8,  # estimate: cuBLAS HGEMM on GA102 reaches ~80 % of its tensor peak
    vector_matmul_efficiency=0.75,  # [CS] PyTorch FP32 matmul on an RTX 3090 (same GA102 SM): 27 of 35.6
    special_per_core_per_cycle=16,  # [PG] cc 8.6: 16 SFU results/clock/SM
    dispatch_s=5e-6,  # estimate: CUDA launch ~5 us (5.7 us measured on A100 [CLP])
    tiles_per_core=6,  # [PG] cc 8.6: 1536 threads/SM = 6 blocks of 256
    default_link="pcie4-x16",  # [WP-GA102] PCIe Gen4 x16; the NVLink bridge joins two boards only
    memory=MemorySpec(
        # estimate: 89 % of the 768 GB/s datasheet, the share [CS] measures on the RTX 3090 (831 of 936)
        bandwidth_Bps=680e9,
        peak_bandwidth_Bps=768e9,  # [WP-GA102] 16 Gbps GDDR6 on 384 bits = 768 GB/s
        latency_s=450e-9,  # estimate: GDDR6 load-to-use ~450 ns, as the T4 preset
        capacity_B=48 * GiB,  # [WP-GA102] 48 GB GDDR6 with ECC
        per_core_bandwidth_Bps=3 * 680e9 / 84,  # estimate: 3 x bandwidth / SMs
        caches=(
            _l1(84, 1800e6, 128 * KiB),  # [WP-GA102] 128 KB L1/shared per SM
            # [WP-GA102] 6 MB L2; bandwidth estimate: 3x effective DRAM bandwidth
            CacheLevel(name="L2", size_B=6 * MiB, bandwidth_Bps=3 * 680e9),
        ),
    ),
)

CURRENT_GPU_PRESETS: dict[str, ProcessorSpec] = {
    p.id: p
    for p in (B200, GB200, H100_NVL, A100_PCIE_40GB, A100_PCIE_80GB, L40S, A10G, L4, RTX_3090, RTX_A6000)
}
"""Current NVIDIA GPU presets by id."""
