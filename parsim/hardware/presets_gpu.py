"""GPU presets: NVIDIA data sheets for the ceilings, public microbenchmarks for what is reachable.

A preset is a spec sheet with two columns per number: the *peak* a whitepaper promises and the
*effective* figure a benchmark reaches (a roofline drawn with datasheet bandwidth flatters every
GPU by 10-30 %). Every number carries its source in a comment; a number nobody has measured in
public is marked ``estimate:`` together with how it was derived. The measurements the effective
figures must reproduce are collected in ``data/measurements.csv`` (checked by tests/test_presets.py).

Conventions: ``cores`` are SMs, ``lanes_per_core`` FP32 CUDA cores per SM, ``clock_Hz`` the boost
clock, a tile a 256-thread block and ``tiles_per_core`` max threads per SM / 256. Matrix peaks are
dense (no sparsity) and exclude TF32: a float32 GEMM runs on the vector units unless TF32 is opted in.

Sources, abbreviated in the comments ([X] = github.com/X):

- [PG] CUDA C++ Programming Guide: arithmetic-instruction throughput table (results per clock per
  SM) and technical specifications per compute capability (threads per SM).
- [WP-*] NVIDIA whitepapers / datasheets: GTX 980, GTX 1080, Tesla K80, Tesla T4, Tesla V100, A100,
  H100, H200, Ada Lovelace (AD102).
- [TK] te42kyfo/gpu-benches (RRZE-HPC): gpu-stream, cuda-stream, gpu-roofline, gpu-l2-cache,
  cuda-cache and cuda-latency result files and README.
- [CLP] krrishnarraj/clpeak results/NVIDIA_CUDA/*.log (float4 global-memory bandwidth, kernel launch
  latency) and the clpeak README sample for a Tesla V100-SXM2-16GB (jjkeijser/clpeak).
- [GI] pc2/GPUInspector.jl docs/src/devices/{v100_sxm2,a100_sxm2}.md (memcpy bandwidth, deviceQuery).
- [GMB] ekondis/gpumembench issue #2 (K80 shared-memory and L2 throughput).
- [BWT] CUDA-samples bandwidthTest output in router-gao/cuda-demo cuda-samples/02-cuda-bandwidth.md.
- [CS] chsasank/device-benchmarks README (PyTorch tensor copy and matmul).
- [MLI] mli/transformers-benchmarks issue #4 (PyTorch matmul on an RTX 4090).
- [VP] aigatech/vpbenchmarking README (8x H100 SXM5 node: device-to-device copy).
- [H100-GRID] parsim's own CuPy measurements on an H100 SXM (2026-11-25), shipped as
  parsim/data/measured/h100-sxm-2026-11-25.json.
- [DQ] deviceQuery of a GTX 1080 (Roy-Tuhin/maskrcnn_sophisticate- scripts/lscripts/cuda-log.md)
  and an RTX 4090 (thamada/nvidia-smi gls/RTX4090_deviceQuery.py).

Recurring estimates: ``per_core_bandwidth_Bps = 3 * bandwidth / SMs`` (Little's law: one SM keeps
enough bytes in flight that about a third of the SMs saturate DRAM, consistent with [TK] gpu-stream,
where bandwidth still grows up to ~40 % occupancy); L1 bandwidth 128 B/cycle/SM x SMs x clock ([TK]
gpu-cache README: "close to 128B/cycle/SM" on V100, A100, H100); without an L2 measurement, L2
bandwidth ~3x effective DRAM (the ratio [TK] cuda-cache measures on a V100: 2.54 vs 0.83 TB/s).
- [CUTLASS] NVIDIA CUTLASS, media/docs/efficient_gemm.md: threadblock tiles up to 256x128.
- [CUTLASS3] NVIDIA/cutlass media/docs/efficient_gemm.md, "Warp-Specialized Persistent Cooperative
  kernel design" (Hopper: persistent thread blocks, one per SM, take output tiles from a tile
  scheduler) and include/cutlass/gemm/kernel/sm90_tile_scheduler_stream_k.hpp (the stream-K scheduler:
  the last tiles' K iterations split among the SMs); Osama et al., "Stream-K", PPoPP 2023.
- [ZZC95], [ZZC79] zzc0721/torch-performance-test-data issues #95 ("NVIDIA H100 PCIe", torch 2.9.0
  cu128) and #79 ("NVIDIA H100 80GB HBM3", torch 2.7.0 cu128): test.py's torch.mm TFLOP/s for
  FP32, TF32, FP16 and BF16 at 1024-10240 (square).
"""

from __future__ import annotations

from typing import Any

from parsim.hardware.specs import CacheLevel, MemorySpec, ProcessorSpec

KiB = 1024  # binary prefixes for cache and memory sizes
MiB = 1024 * KiB  # binary prefix
GiB = 1024 * MiB  # binary prefix

_GPU_COMMON: dict[str, Any] = dict(
    kind="gpu",
    warp_size=32,  # [PG] warp size of every NVIDIA architecture
    tile_items=256,  # a 256-thread block, one element per thread (design choice)
    matmul_tile=256,  # [CUTLASS] the largest threadblock tile edge (256x128, 128x256)
    # one H2D and one D2H copy overlap: deviceQuery reports 2 copy engines on GeForce ([DQ] GTX 1080,
    # RTX 4090) and more on Tesla ([GI] V100: 6, A100: 3); assumed alike for GTX 980, K80, T4, H100/H200
    copy_engines=2,
    # [PG] throughput table, cc 7.0 to 10.0: 64 results/clock/SM for 32-bit integer add and multiply-add
    # (Volta to Blackwell keep 64 INT32 lanes per SM beside 64 or 128 FP32 lanes); older chips below
    int_per_core_per_cycle=64,
)


def _gpu(**fields: Any) -> ProcessorSpec:
    return ProcessorSpec(**{**_GPU_COMMON, **fields})


def _l1(sms: int, clock_Hz: float, size_B: float) -> CacheLevel:
    # L1/shared memory per SM; bandwidth estimate: 128 B/cycle/SM (see module docstring, [TK]).
    return CacheLevel(name="L1", size_B=size_B, bandwidth_Bps=128 * sms * clock_Hz, per_core=True)


GTX_980 = _gpu(
    id="gtx-980",
    name="NVIDIA GeForce GTX 980 (GM204, Maxwell)",
    cores=16,  # [WP-GTX980] 16 SMMs
    lanes_per_core=128,  # [WP-GTX980] 128 CUDA cores per SMM (2048 total)
    clock_Hz=1216e6,  # [WP-GTX980] boost clock 1216 MHz
    fp64_ratio=1 / 32,  # [PG] cc 5.2: 4 FP64 vs 128 FP32 results/clock/SM
    fp16_ratio=1.0,  # [PG] cc 5.2 has no FP16 arithmetic; half data is computed in FP32
    matmul_efficiency=0.8,  # estimate: cuBLAS SGEMM on Maxwell reaches ~80 % of boost peak
    special_per_core_per_cycle=32,  # [PG] cc 5.x: 32 SFU results/clock/SM
    int_per_core_per_cycle=None,  # [PG] cc 5.x: integer multiply-add takes several instructions
    dispatch_s=3.7e-6,  # [CLP] GeForce_GTX_980.log: kernel launch latency 3.69 us
    tiles_per_core=8,  # [PG] cc 5.2: 2048 threads/SM = 8 blocks of 256
    default_link="pcie3-x16",  # [WP-GTX980] PCI Express 3.0 x16
    memory=MemorySpec(
        bandwidth_Bps=175e9,  # [CLP] GeForce_GTX_980.log: float4 global memory bandwidth 174.8 GB/s
        peak_bandwidth_Bps=224e9,  # [WP-GTX980] 7 Gbps GDDR5 on 256 bits = 224 GB/s
        latency_s=400e-9,  # estimate: GDDR5 load-to-use ~400 ns (316-407 ns measured on V100/A100, [TK])
        capacity_B=4 * GiB,  # [WP-GTX980] 4 GB GDDR5
        per_core_bandwidth_Bps=3 * 175e9 / 16,  # estimate: 3 x bandwidth / SMs (module docstring)
        caches=(
            _l1(16, 1216e6, 96 * KiB),  # [WP-GTX980] 96 KB shared memory per SMM
            # [WP-GTX980] 2 MB L2; bandwidth estimate: 3x effective DRAM bandwidth
            CacheLevel(name="L2", size_B=2 * MiB, bandwidth_Bps=3 * 175e9),
        ),
    ),
)

GTX_1080 = _gpu(
    id="gtx-1080",
    name="NVIDIA GeForce GTX 1080 (GP104, Pascal)",
    cores=20,  # [WP-GTX1080] 20 SMs
    lanes_per_core=128,  # [WP-GTX1080] 128 CUDA cores per SM (2560 total)
    clock_Hz=1733e6,  # [WP-GTX1080] boost clock 1733 MHz ([DQ] GPU max clock 1734 MHz)
    fp64_ratio=1 / 32,  # [PG] cc 6.1: 4 FP64 vs 128 FP32 results/clock/SM
    fp16_ratio=1 / 64,  # [PG] cc 6.1: 2 FP16 vs 128 FP32 results/clock/SM
    matmul_efficiency=0.8,  # estimate: cuBLAS SGEMM on Pascal reaches ~80 % of boost peak
    special_per_core_per_cycle=32,  # [PG] cc 6.1: 32 SFU results/clock/SM
    int_per_core_per_cycle=None,  # [PG] cc 6.x: integer multiply-add takes several instructions
    dispatch_s=4.4e-6,  # [CLP] GeForce_GTX_1080.log: kernel launch latency 4.35 us
    tiles_per_core=8,  # [PG] cc 6.1: 2048 threads/SM ([DQ] confirms) = 8 blocks of 256
    default_link="pcie3-x16",  # [WP-GTX1080] PCI Express 3.0 x16
    memory=MemorySpec(
        bandwidth_Bps=235e9,  # [CLP] GeForce_GTX_1080.log: float4 global memory bandwidth 236.8 GB/s
        peak_bandwidth_Bps=320e9,  # [WP-GTX1080] 10 Gbps GDDR5X on 256 bits = 320 GB/s
        latency_s=400e-9,  # estimate: GDDR5X load-to-use ~400 ns (316-407 ns measured on V100/A100, [TK])
        capacity_B=8 * GiB,  # [WP-GTX1080] 8 GB GDDR5X
        per_core_bandwidth_Bps=3 * 235e9 / 20,  # estimate: 3 x bandwidth / SMs (module docstring)
        caches=(
            _l1(20, 1733e6, 96 * KiB),  # [WP-GTX1080] 96 KB shared memory per SM
            # [DQ] L2 cache size 2097152 bytes; bandwidth estimate: 3x effective DRAM bandwidth
            CacheLevel(name="L2", size_B=2 * MiB, bandwidth_Bps=3 * 235e9),
        ),
    ),
)

K80 = _gpu(
    id="k80",
    name="NVIDIA Tesla K80, one GK210 die (Kepler)",
    cores=13,  # [WP-K80] 13 SMX per GK210 ([CLP] Tesla_K80.log: 13 compute units)
    lanes_per_core=192,  # [WP-K80] 192 CUDA cores per SMX (2496 per GPU)
    clock_Hz=875e6,  # [WP-K80] boost clock 875 MHz (8.73 TFLOP/s FP32 for the 2-GPU board)
    fp64_ratio=1 / 3,  # [PG] cc 3.7: 64 FP64 vs 192 FP32 results/clock/SM
    fp16_ratio=1.0,  # [PG] cc 3.7 has no FP16 arithmetic; half data is computed in FP32
    matmul_efficiency=0.7,  # estimate: K80 rarely holds boost under SGEMM; ~70 % of boost peak
    special_per_core_per_cycle=32,  # [PG] cc 3.x: 32 SFU results/clock/SM
    int_per_core_per_cycle=None,  # [PG] cc 3.7: 32 integer multiply-adds/clock/SM; not modelled
    dispatch_s=8.2e-6,  # [CLP] Tesla_K80.log: kernel launch latency 8.20 us
    tiles_per_core=8,  # [PG] cc 3.7: 2048 threads/SM = 8 blocks of 256
    default_link="pcie3-x16",  # [WP-K80] PCIe 3.0 x16 board (both dies behind one on-board switch)
    memory=MemorySpec(
        bandwidth_Bps=155e9,  # [CLP] Tesla_K80.log: float4 global memory bandwidth 152.3 GB/s (ECC on)
        peak_bandwidth_Bps=240e9,  # [WP-K80] 480 GB/s per board = 240 GB/s per GK210 (384-bit, 5 Gbps)
        latency_s=450e-9,  # estimate: Kepler GDDR5 load-to-use ~450 ns (slower clock than Volta's 316 ns)
        capacity_B=12 * GiB,  # [WP-K80] 24 GB per board, 12 GB per GPU
        per_core_bandwidth_Bps=3 * 155e9 / 13,  # estimate: 3 x bandwidth / SMs (module docstring)
        caches=(
            # [WP-K80] 128 KB L1/shared per SMX on GK210; [GMB] shared memory 2680 GB/s on one GK210
            CacheLevel(name="L1", size_B=128 * KiB, bandwidth_Bps=2680e9, per_core=True),
            # [WP-K80] 1.5 MB L2 per GK210; [GMB] L2 read 333 GB/s
            CacheLevel(name="L2", size_B=1.5 * MiB, bandwidth_Bps=333e9),
        ),
    ),
)

T4 = _gpu(
    id="t4",
    name="NVIDIA Tesla T4 (TU104, Turing)",
    cores=40,  # [WP-T4] 40 SMs
    lanes_per_core=64,  # [WP-T4] 2560 CUDA cores = 64 per SM
    clock_Hz=1590e6,  # [WP-T4] boost clock 1590 MHz (8.1 TFLOP/s FP32)
    fp64_ratio=1 / 32,  # [PG] cc 7.5: 2 FP64 vs 64 FP32 results/clock/SM
    fp16_ratio=2.0,  # [PG] cc 7.5: 128 FP16 vs 64 FP32 results/clock/SM
    matrix_flops_per_s={
        "float16": 65e12,  # [WP-T4] mixed precision (FP16/FP32) tensor cores 65 TFLOP/s
        "int8": 130e12,  # [WP-T4] INT8 tensor cores 130 TOPS
    },
    # estimate: the 70 W T4 cannot hold its 1590 MHz boost under long GEMMs (Jia et al. 2019, "Dissecting
    # the NVidia Turing T4 GPU via Microbenchmarking", power-capped clocks); ~20 % below boost
    sustained_clock_Hz=1.27e9,
    # [CS] measures 4 TFLOP/s FP32 matmul of the 8.1 peak. 0.75 at the sustained clock is 4.9 TFLOP/s (0.6
    # of boost): right for the T4's tensor-core GEMMs (DeepBench T4 FP16: 37.6-39.9 TFLOP/s on the large
    # shapes) and its FP32 ResNet-50 inference rows; cuBLAS's large SGEMMs on the T4 reach only 3.7-4.2
    # (DeepBench T4 FP32), ~20 % below: a SIMT-GEMM share of 0.6 was tried (issue 26, kernel round 4) and
    # pushed the FP32 inference rows from -9 to -19 %, so cuDNN's FP32 kernels and cuBLAS's SGEMM differ
    # here in a way the model does not split yet
    matmul_efficiency=0.75,
    special_per_core_per_cycle=16,  # [PG] cc 7.5: 16 SFU results/clock/SM
    dispatch_s=6e-6,  # estimate: between the 5.7 us (A100) and 7.9 us (V100) CUDA launches of [CLP]
    tiles_per_core=4,  # [PG] cc 7.5: 1024 threads/SM = 4 blocks of 256
    default_link="pcie3-x16",  # [WP-T4] PCIe Gen3 x16
    memory=MemorySpec(
        bandwidth_Bps=240e9,  # [BWT] T4 device-to-device 239.6 GB/s; [CS] 240 GB/s
        peak_bandwidth_Bps=320e9,  # [WP-T4] 320+ GB/s GDDR6
        latency_s=450e-9,  # estimate: GDDR6 load-to-use ~450 ns (316-407 ns measured on HBM parts, [TK])
        capacity_B=16 * GiB,  # [WP-T4] 16 GB GDDR6
        per_core_bandwidth_Bps=3 * 240e9 / 40,  # estimate: 3 x bandwidth / SMs (module docstring)
        caches=(
            _l1(40, 1590e6, 96 * KiB),  # [WP-T4] Turing: 96 KB unified L1/shared memory per SM
            # [WP-T4] TU104 4 MB L2; bandwidth estimate: 3x effective DRAM bandwidth
            CacheLevel(name="L2", size_B=4 * MiB, bandwidth_Bps=3 * 240e9),
        ),
    ),
)

_V100 = dict(
    cores=80,  # [WP-V100] 80 SMs
    lanes_per_core=64,  # [WP-V100] 64 FP32 cores per SM
    fp16_ratio=2.0,  # [PG] cc 7.0: 128 FP16 vs 64 FP32 results/clock/SM
    matmul_efficiency=0.8,  # estimate: cuBLAS SGEMM/HGEMM on V100 reach ~80 % of peak
    special_per_core_per_cycle=16,  # [PG] cc 7.x: 16 SFU results/clock/SM
    tiles_per_core=8,  # [PG] cc 7.0: 2048 threads/SM = 8 blocks of 256
    fp64_ratio=0.5,  # [PG] cc 7.0: 32 FP64 vs 64 FP32; [WP-V100] 7 vs 14 (PCIe), 7.8 vs 15.7 (SXM2) TFLOP/s
)

V100_PCIE = _gpu(
    **_V100,
    id="v100-pcie",
    name="NVIDIA Tesla V100 PCIe 16 GB (GV100, Volta)",
    clock_Hz=1380e6,  # [WP-V100] PCIe boost 1380 MHz (14 TFLOP/s FP32)
    matrix_flops_per_s={
        "float16": 112e12,  # [WP-V100] datasheet, PCIe: 112 TFLOP/s tensor
    },
    dispatch_s=7.6e-6,  # [CLP] Tesla_V100.log (V100-PCIE-32GB): kernel launch latency 7.88 us
    default_link="pcie3-x16",  # [WP-V100] PCIe Gen3 x16
    memory=MemorySpec(
        bandwidth_Bps=830e9,  # [TK] cuda-stream V100-PCIe-16GB triad 829 GB/s; [CLP] 810 GB/s
        peak_bandwidth_Bps=900e9,  # [WP-V100] 900 GB/s HBM2
        latency_s=316e-9,  # [TK] cuda-latency V100-PCIe: 436 cycles at 1380 MHz
        capacity_B=16 * GiB,  # [WP-V100] 16 GB HBM2 (32 GB variant exists)
        per_core_bandwidth_Bps=3 * 830e9 / 80,  # estimate: 3 x bandwidth / SMs (module docstring)
        caches=(
            # [WP-V100] 128 KB L1/shared per SM; [TK] cuda-cache V100-PCIe L1 13.7 TB/s (64 kB set)
            CacheLevel(name="L1", size_B=128 * KiB, bandwidth_Bps=13.7e12, per_core=True),
            # [WP-V100] 6 MB L2; [TK] cuda-cache V100-PCIe L2 2544 GB/s
            CacheLevel(name="L2", size_B=6 * MiB, bandwidth_Bps=2.54e12),
        ),
    ),
)

V100_SXM2 = _gpu(
    **_V100,
    id="v100-sxm2",
    name="NVIDIA Tesla V100 SXM2 16 GB (GV100, Volta)",
    clock_Hz=1530e6,  # [WP-V100] SXM2 boost 1530 MHz (15.7 TFLOP/s FP32)
    matrix_flops_per_s={
        "float16": 125e12,  # [WP-V100] datasheet, SXM2: 125 TFLOP/s tensor
    },
    dispatch_s=7.4e-6,  # [CLP] README sample, Tesla V100-SXM2-16GB: kernel launch latency 7.22 us
    default_link="pcie3-x16",  # [WP-V100] SXM2 boards reach the host over PCIe Gen3 x16
    peer_link="nvlink2",  # [WP-V100] SXM2: 6 second-generation NVLinks, 300 GB/s
    memory=MemorySpec(
        bandwidth_Bps=800e9,  # [GI] memcpy 776 GB/s, saxpy 810 GB/s; [CLP] 843 GB/s; [BWT] 740 GB/s
        peak_bandwidth_Bps=900e9,  # [WP-V100] 900 GB/s HBM2
        latency_s=316e-9,  # [TK] cuda-latency V100-PCIe (same GV100 + HBM2): 436 cycles at 1380 MHz
        capacity_B=16 * GiB,  # [WP-V100] 16 GB HBM2 (32 GB variant exists)
        per_core_bandwidth_Bps=3 * 800e9 / 80,  # estimate: 3 x bandwidth / SMs (module docstring)
        caches=(
            _l1(80, 1530e6, 128 * KiB),  # [WP-V100] 128 KB L1/shared per SM
            # [WP-V100] 6 MB L2; estimate: [TK] V100-PCIe 2544 GB/s scaled by clock 1530/1380
            CacheLevel(name="L2", size_B=6 * MiB, bandwidth_Bps=2.82e12),
        ),
    ),
)


def _a100(
    id: str, name: str, *, bandwidth_Bps: float, peak_bandwidth_Bps: float, capacity_B: float
) -> ProcessorSpec:
    return _gpu(
        id=id,
        name=name,
        cores=108,  # [WP-A100] 108 SMs
        lanes_per_core=64,  # [WP-A100] 64 FP32 cores per SM
        clock_Hz=1410e6,  # [WP-A100] boost 1410 MHz (19.5 TFLOP/s FP32)
        fp64_ratio=0.5,  # [PG] cc 8.0: 32 FP64 vs 64 FP32; [WP-A100] 9.7 vs 19.5 TFLOP/s
        # [WP-A100] FP16 non-tensor 78 TFLOP/s = 4x FP32 ([PG] cc 8.0: 256 vs 64); BF16 non-tensor is only
        # 39 TFLOP/s (2x) but the spec has a single ratio for both
        fp16_ratio=4.0,
        matrix_flops_per_s={
            "float16": 312e12,  # [WP-A100] dense FP16 tensor 312 TFLOP/s
            "bfloat16": 312e12,  # [WP-A100] dense BF16 tensor 312 TFLOP/s
            "float64": 19.5e12,  # [WP-A100] FP64 tensor 19.5 TFLOP/s
            "tf32": 156e12,  # [WP-A100] TF32 tensor 156 TFLOP/s dense (312 with sparsity)
            "int8": 624e12,  # [WP-A100] INT8 tensor 624 TOPS dense (1248 with sparsity); no FP8
        },
        matmul_efficiency=0.85,  # estimate: cuBLAS HGEMM/DGEMM on A100 reach ~85 % of peak
        special_per_core_per_cycle=16,  # [PG] cc 8.0: 16 SFU results/clock/SM
        dispatch_s=5.7e-6,  # [CLP] NVIDIA_A100-SXM4-40GB.log: kernel launch latency 5.65-5.76 us
        tiles_per_core=8,  # [PG] cc 8.0: 2048 threads/SM = 8 blocks of 256
        default_link="pcie4-x16",  # [WP-A100] host interface PCIe Gen4 x16 (SXM4 too)
        peer_link="nvlink3",  # [WP-A100] SXM4: 12 third-generation NVLinks, 600 GB/s
        memory=MemorySpec(
            latency_s=407e-9,  # [TK] cuda-latency a100_40: 574.6 cycles at 1410 MHz
            per_core_bandwidth_Bps=3 * bandwidth_Bps / 108,  # estimate: 3 x bandwidth / SMs
            caches=(
                _l1(108, 1410e6, 192 * KiB),  # [WP-A100] 192 KB L1/shared per SM
                # [WP-A100] 40 MB L2; [TK] gpu-l2-cache a100_80 (same die and clock): ~5.4 TB/s
                CacheLevel(name="L2", size_B=40 * MiB, bandwidth_Bps=5.4e12),
            ),
            bandwidth_Bps=bandwidth_Bps,
            peak_bandwidth_Bps=peak_bandwidth_Bps,
            capacity_B=capacity_B,
        ),
    )


A100_40GB = _a100(
    "a100-40gb",
    "NVIDIA A100 SXM4 40 GB (GA100, Ampere)",
    bandwidth_Bps=1.37e12,  # [TK] gpu-stream a100_40 triad 1360 GB/s; [CLP] 1419 GB/s; [GI] 1311 GB/s
    peak_bandwidth_Bps=1555e9,  # [WP-A100] 1555 GB/s HBM2
    capacity_B=40 * GiB,  # [WP-A100] 40 GB HBM2
)

A100_80GB = _a100(
    "a100-80gb",
    "NVIDIA A100 SXM4 80 GB (GA100, Ampere)",
    bandwidth_Bps=1.75e12,  # [TK] cuda-stream a100_80 triad 1759 GB/s (gpu-l2-cache DRAM read 1730 GB/s)
    peak_bandwidth_Bps=2039e9,  # [WP-A100] 2039 GB/s HBM2e (80 GB SXM)
    capacity_B=80 * GiB,  # [WP-A100] 80 GB HBM2e
)

# [FA3] Shah et al. 2024, "FlashAttention-3", abstract: FlashAttention-2 "achieves only 35% utilization
# on H100 GPUs"; [FA2] Dao 2023, abstract: "50-73% of the theoretical maximum FLOPs/s on A100". The
# same mma.sync kernels reach 35 / 73 = 0.48 of the share of the tensor peak on GH100 that they reach
# on GA100: Hopper's peak needs its asynchronous warpgroup MMA (wgmma) fed by TMA
GH100_LEGACY_MMA_SHARE = 0.48

# fitted once for GH100 ([H100-GRID]): CuPy's one-element-per-thread kernels over 1e8 and 4e8 float32
# (relu and sigmoid with one load per thread, vector_add and saxpy with two) all take n / (132 SMs x
# 2048 threads) rounds of 1.29-1.31 us after the call's host cost, whatever their bytes: Little's law
# at a latency under full load 3.5x the unloaded 375 ns ([TK]), the queues of a saturated memory system
GH100_LOADED_LATENCY_S = 1.3e-6

H100_PCIE = _gpu(
    id="h100-pcie",
    name="NVIDIA H100 PCIe 80 GB (GH100, Hopper)",
    cores=114,  # [WP-H100] 114 SMs on the PCIe product
    lanes_per_core=128,  # [WP-H100] 128 FP32 cores per SM
    clock_Hz=1755e6,  # [WP-H100] PCIe boost 1755 MHz (51 TFLOP/s FP32); [TK] gpu-latency runs at 1755
    fp64_ratio=0.5,  # [PG] cc 9.0: 64 FP64 vs 128 FP32; [WP-H100] 25.6 vs 51.2 TFLOP/s
    fp16_ratio=2.0,  # [WP-H100] FP16 and BF16 non-tensor 102.4 TFLOP/s = 2x FP32
    matrix_flops_per_s={
        "float16": 756e12,  # [WP-H100] datasheet PCIe: FP16 tensor 1513 TFLOP/s with sparsity, 756 dense
        "bfloat16": 756e12,  # [WP-H100] datasheet PCIe: BF16 tensor 756 TFLOP/s dense
        "float64": 51e12,  # [WP-H100] datasheet PCIe: FP64 tensor core 51 TFLOP/s
        "tf32": 378e12,  # [WP-H100] datasheet PCIe: TF32 tensor 756 TFLOP/s with sparsity, 378 dense
        "float8": 1513e12,  # [WP-H100] datasheet PCIe: FP8 tensor 3026 TFLOP/s with sparsity, 1513 dense
        "int8": 1513e12,  # [WP-H100] datasheet PCIe: INT8 tensor 3026 TOPS with sparsity, 1513 dense
    },
    # fitted once for the 350 W board ([WP-H100]; SXM5: 700 W) on [ZZC95]'s torch.mm on an H100 PCIe at
    # 4096 and 8192: TF32 235-240, FP16 437-457, BF16 493-496 TFLOP/s, 0.58-0.66 of the dense tensor
    # peaks where the SXM5 part reaches 0.75-0.81 ([ZZC79]): the power cap binds under tensor-core
    # load and pulls the clock down (to ~1.45 GHz if cuBLAS's efficiency is the SXM5's)
    matmul_efficiency=0.62,
    # [ZZC95] FP32 (IEEE) torch.mm 8192^3: 36.95 TFLOP/s of 51.2 on the CUDA cores, below the power cap
    vector_matmul_efficiency=0.75,
    # fitted once for GH100 (cuBLAS 12's sm90 tensor-core kernels: persistent, warp-specialised, with a
    # stream-K tile scheduler [CUTLASS3]): [ZZC95]'s 4096^3 products reach the 8192^3 ones' rate on the
    # 114-SM PCIe part (BF16 495.9 vs 492.8, FP16 457.3 vs 437.1, TF32 234.8 vs 240.4 TFLOP/s) though
    # 512 tiles of 256x128 fill 4.49 waves, where a tail wave would cost 10 %: no tail effect
    stream_k=True,
    fp8_block_scaling=True,  # cc 9.0 (TE check_fp8_block_scaling_support: 9.0 and later, CUDA 12.9)
    legacy_mma_share=GH100_LEGACY_MMA_SHARE,
    special_per_core_per_cycle=16,  # [PG] cc 9.0: 16 SFU results/clock/SM
    dispatch_s=5e-6,  # estimate: CUDA launch on Hopper ~5 us, cf. 5.7 us measured on A100 [CLP]
    tiles_per_core=8,  # [PG] cc 9.0: 2048 threads/SM = 8 blocks of 256
    default_link="pcie5-x16",  # [WP-H100] PCIe Gen5 x16
    memory=MemorySpec(
        bandwidth_Bps=1.83e12,  # [TK] README gpu-stream NVIDIA-H100-PCIe triad 1832 GB/s
        peak_bandwidth_Bps=2.0e12,  # [WP-H100] datasheet PCIe: 2 TB/s HBM2e
        latency_s=375e-9,  # [TK] gpu-latency h100_pcie: ~658 cycles at 1755 MHz
        loaded_latency_s=GH100_LOADED_LATENCY_S,
        capacity_B=80 * GiB,  # [WP-H100] 80 GB HBM2e
        per_core_bandwidth_Bps=3 * 1.83e12 / 114,  # estimate: 3 x bandwidth / SMs (module docstring)
        caches=(
            _l1(114, 1755e6, 256 * KiB),  # [WP-H100] 256 KB L1/shared per SM
            # [WP-H100] 50 MB L2; [TK] gpu-l2-cache h100_pcie: ~6.9 TB/s for 10-30 MB data sets
            CacheLevel(name="L2", size_B=50 * MiB, bandwidth_Bps=6.9e12),
        ),
    ),
)


def _gh100_sxm(
    id: str, name: str, *, bandwidth_Bps: float, peak_bandwidth_Bps: float, capacity_B: float
) -> ProcessorSpec:
    return _gpu(
        id=id,
        name=name,
        cores=132,  # [WP-H100] 132 SMs on SXM5 (H200 uses the same GH100 configuration)
        lanes_per_core=128,  # [WP-H100] 128 FP32 cores per SM
        clock_Hz=1980e6,  # [WP-H100] SXM5 boost 1980 MHz (66.9 TFLOP/s FP32); [TK] h200 runs at 1980
        fp64_ratio=0.5,  # [PG] cc 9.0: 64 FP64 vs 128 FP32; [WP-H100] 33.5 vs 66.9 TFLOP/s
        fp16_ratio=2.0,  # [WP-H100] FP16 and BF16 non-tensor 133.8 TFLOP/s = 2x FP32
        matrix_flops_per_s={
            "float16": 989.4e12,  # [WP-H100] SXM5 FP16 tensor 1979 TFLOP/s with sparsity, 989.4 dense
            "bfloat16": 989.4e12,  # [WP-H100] SXM5 BF16 tensor 989.4 TFLOP/s dense
            "float64": 66.9e12,  # [WP-H100] SXM5 FP64 tensor core 66.9 TFLOP/s
            "tf32": 494.7e12,  # [WP-H100] SXM5 TF32 tensor 989.4 TFLOP/s with sparsity, 494.7 dense
            "float8": 1978.9e12,  # [WP-H100] SXM5 FP8 tensor 3958 TFLOP/s with sparsity, 1979 dense
            "int8": 1978.9e12,  # [WP-H100] SXM5 INT8 tensor 3958 TOPS with sparsity, 1979 dense
        },
        matmul_efficiency=0.75,  # estimate: cuBLAS on H100 reaches ~70-80 % of the dense tensor peak
        stream_k=True,  # as the PCIe part's (H100_PCIE): cuBLAS's sm90 kernels share the last wave
        fp8_block_scaling=True,  # cc 9.0, as the PCIe part's
        legacy_mma_share=GH100_LEGACY_MMA_SHARE,
        special_per_core_per_cycle=16,  # [PG] cc 9.0: 16 SFU results/clock/SM
        dispatch_s=5e-6,  # estimate: CUDA launch on Hopper ~5 us, cf. 5.7 us measured on A100 [CLP]
        tiles_per_core=8,  # [PG] cc 9.0: 2048 threads/SM = 8 blocks of 256
        default_link="pcie5-x16",  # [WP-H100] SXM5 boards reach the host over PCIe Gen5 x16
        peer_link="nvlink4",  # [WP-H100] SXM5: 18 fourth-generation NVLinks, 900 GB/s
        memory=MemorySpec(
            latency_s=375e-9,  # estimate: same GH100 memory system as [TK] gpu-latency h100_pcie
            loaded_latency_s=GH100_LOADED_LATENCY_S,
            per_core_bandwidth_Bps=3 * bandwidth_Bps / 132,  # estimate: 3 x bandwidth / SMs
            caches=(
                _l1(132, 1980e6, 256 * KiB),  # [WP-H100] 256 KB L1/shared per SM
                # [WP-H100] 50 MB L2; [TK] gpu-l2-cache h200 (same die and clock): ~9.8 TB/s
                CacheLevel(name="L2", size_B=50 * MiB, bandwidth_Bps=9.8e12),
            ),
            bandwidth_Bps=bandwidth_Bps,
            peak_bandwidth_Bps=peak_bandwidth_Bps,
            capacity_B=capacity_B,
        ),
    )


H100_SXM = _gh100_sxm(
    "h100-sxm",
    "NVIDIA H100 SXM5 80 GB (GH100, Hopper)",
    bandwidth_Bps=2.9e12,  # [VP] device-to-device copy 2903 GB/s on H100 80GB HBM3 SXM5
    peak_bandwidth_Bps=3.35e12,  # [WP-H100] SXM5: 3.35 TB/s HBM3
    capacity_B=80 * GiB,  # [WP-H100] 80 GB HBM3
)

H200 = _gh100_sxm(
    "h200",
    "NVIDIA H200 SXM 141 GB (GH100, Hopper)",
    bandwidth_Bps=3.6e12,  # [TK] gpu-stream h200 triad 3534 GB/s; gpu-roofline h200 read 3760 GB/s
    peak_bandwidth_Bps=4.8e12,  # [WP-H200] 4.8 TB/s HBM3e
    # [WP-H200] "141 GB" HBM3e, binary as the H100's "80 GB" is: nvidia-smi on the lent H200 reads
    # 143,771 MiB (2026-11-28; parsim/data/measured/h200-2026-11-28.json); 141e9 B was 9 GiB short
    capacity_B=143771 * MiB,
)

RTX_4090 = _gpu(
    id="rtx-4090",
    name="NVIDIA GeForce RTX 4090 (AD102, Ada Lovelace)",
    cores=128,  # [WP-Ada] 128 SMs ([DQ] 128 multiprocessors)
    lanes_per_core=128,  # [WP-Ada] 128 CUDA cores per SM (16384 total)
    clock_Hz=2520e6,  # [WP-Ada] boost 2520 MHz (82.6 TFLOP/s FP32)
    fp64_ratio=1 / 64,  # [PG] cc 8.9: 2 FP64 vs 128 FP32 results/clock/SM
    fp16_ratio=1.0,  # [WP-Ada] FP16 non-tensor 82.6 TFLOP/s = FP32 rate
    matrix_flops_per_s={
        "float16": 165.2e12,  # [WP-Ada] FP16 tensor with FP32 accumulate, dense: 165.2 TFLOP/s
        "bfloat16": 165.2e12,  # [WP-Ada] BF16 tensor with FP32 accumulate, dense: 165.2 TFLOP/s
        "tf32": 82.6e12,  # [WP-Ada] TF32 tensor, dense: 82.6 TFLOP/s (165.2 with sparsity)
    },
    # [CS] PyTorch bf16 matmul 168 TFLOP/s, [MLI] fp16 167 TFLOP/s: at or above the datasheet peak because
    # GeForce cards boost beyond 2520 MHz; 0.9 keeps the prediction within 15 % of both
    matmul_efficiency=0.9,
    # [MLI] PyTorch float32 matmul 2048^3 / 8192^3: 51.6 / 50.2 TFLOP/s, and cuBLAS SGEMM 4096^3 at
    # 47.6 TFLOP/s (annanyapr/Fast-CUDA-Kernels README): ~60 % of the 82.6 TFLOP/s FP32 peak,
    # since half of an Ada SM's FP32 lanes share their issue slots with the GEMM's integer work
    vector_matmul_efficiency=0.6,
    special_per_core_per_cycle=16,  # [PG] cc 8.9: 16 SFU results/clock/SM
    dispatch_s=4.5e-6,  # estimate: GeForce CUDA launch ~4-5 us, cf. 4.35 us measured on GTX 1080 [CLP]
    tiles_per_core=6,  # [PG] cc 8.9 and [DQ]: 1536 threads/SM = 6 blocks of 256
    default_link="pcie4-x16",  # [WP-Ada] PCIe Gen4 x16
    memory=MemorySpec(
        bandwidth_Bps=910e9,  # [CS] RTX 4090 tensor copy 912 GB/s
        peak_bandwidth_Bps=1008e9,  # [WP-Ada] 21 Gbps GDDR6X on 384 bits = 1008 GB/s
        latency_s=450e-9,  # estimate: GDDR6X load-to-use ~450 ns (316-407 ns measured on HBM parts, [TK])
        capacity_B=24 * GiB,  # [WP-Ada] 24 GB GDDR6X
        per_core_bandwidth_Bps=3 * 910e9 / 128,  # estimate: 3 x bandwidth / SMs (module docstring)
        caches=(
            _l1(128, 2520e6, 128 * KiB),  # [WP-Ada] 128 KB L1/shared per SM
            # [WP-Ada] 72 MB L2 ([DQ] 75497472 bytes); bandwidth estimate: 3x effective DRAM bandwidth
            CacheLevel(name="L2", size_B=72 * MiB, bandwidth_Bps=3 * 910e9),
        ),
    ),
)

GPU_PRESETS: dict[str, ProcessorSpec] = {
    p.id: p
    for p in (
        GTX_980,
        GTX_1080,
        K80,
        T4,
        V100_PCIE,
        V100_SXM2,
        A100_40GB,
        A100_80GB,
        H100_PCIE,
        H100_SXM,
        H200,
        RTX_4090,
    )
}
"""GPU presets by id."""
