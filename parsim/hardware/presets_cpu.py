"""CPU presets: vendor data sheets for the ceilings, public STREAM runs for what is reachable.

A CPU socket is modelled as ``cores`` x ``lanes_per_core`` float32 lanes, where the lanes count
the SIMD width times the number of FMA (or add + multiply) ports: AVX2 with two FMA ports is
8 lanes x 2 = 16, AVX-512 with two ports 32. ``clock_Hz`` is the all-core clock under vector load
where the vendor documents one. Memory carries the datasheet peak (channels x MT/s x 8 B) beside
the effective STREAM-triad bandwidth, and ``per_core_bandwidth_Bps`` is what a single thread (one
NumPy call) can pull: Little's law caps one core at its outstanding misses / latency, which is why
one thread gets a fraction of the socket.

Every number carries its source in a comment; numbers nobody published are marked ``estimate:``
with their derivation. Cache bandwidths are estimates from per-cycle widths (bytes per cycle per
core x cores x clock) in the spirit of the Intel 64 and IA-32 Architectures Optimization Reference
Manual and AMD's Software Optimization Guides, derated to sustained values.

Sources, abbreviated in the comments:

- [ARK] Intel ARK product pages (cores, clocks, caches, memory channels and speed).
- [AMD] AMD EPYC 9654 product page (cores, all-core boost, L3, memory channels).
- [AMD7742] AMD EPYC 7742 product page (Rome, Zen 2): 64 cores / 128 threads, base 2.25 GHz, max
  boost 3.4 GHz, 256 MB L3, 8 channels DDR4-3200 (204.8 GB/s per socket), 128 PCIe 4.0 lanes.
  [DGXA100-UG] NVIDIA DGX A100 User Guide, "Hardware overview": 2x AMD EPYC 7742 (128 cores),
  2 TB of system memory in the 640 GB (8x A100 80GB) system.
- [PUGET] Puget Systems, "Memory Performance for Intel Xeon Haswell-EP DDR4" (STREAM triad with
  ICC, 2x Xeon E5-2697 v3: 102 GB/s, 1 core 20 GB/s),
  https://www.pugetsystems.com/labs/hpc/memory-performance-for-intel-xeon-haswell-ep-ddr4-596/
- [CSCS] ReFrame CSCS STREAM check references, github.com/reframe-hpc/reframe
  cscs-checks/microbenchmarks/stream/stream.py: Piz Daint GPU node (1x Xeon E5-2690 v3), triad
  59.5 GB/s with the Intel compiler.
- [LIKWID] github.com/RRZE-HPC/likwid issue #664: likwid-bench triad_mem_avx512_fma on one Sapphire
  Rapids socket, 233 GB/s (LIKWID maintainer's test node).
- [AMX] Intel, "Accelerate AI workloads with Intel AMX" / Intel AMX overview: 1024 BF16 FLOP per
  cycle per core.
- [GB200] NVIDIA GB200 NVL72 datasheet: 36 Grace CPUs and 72 Blackwell GPUs per rack; 2,592 Arm
  Neoverse V2 cores; up to 17 TB LPDDR5X at up to 18.4 TB/s. [GRACE] NVIDIA Grace CPU datasheet /
  tuning guide: 72 Neoverse V2 cores per CPU, 4x 128-bit SVE2 pipes per core, 64 KB L1d + 1 MB L2
  per core, 114 MB L3 per CPU, up to 3.1 GHz.
- [AZ-GB200] Azure/AI-benchmarking-guide@2a370be6de9586d365feed77e014a73f25198f4d
  Azure_Results/ND_GB200_v6_results.md, "CPU STREAM": triad 763 GB/s on an ND GB200 v6 VM (2 Grace).
- [TE2053] NVIDIA/TransformerEngine issue #2053 "[PyTorch] High CPU overhead on Grace systems"
  (2025-08-11): host time per Linear forward (BF16, hidden 2048, 8192 tokens), PyTorch's 37.08 us
  on GB200 and 33.17 us on GH200 against 13.48 us on an H100 DGX (Xeon Platinum 8480C); Transformer
  Engine's 99.66 us on GB200.
- [HBV4] Microsoft Learn, Azure HPC STREAM benchmark page: HBv4 (2x 96-core Genoa-X, 12 channels
  DDR5-4800 each) STREAM triad ~650-780 GB/s.
"""

from __future__ import annotations

from typing import Any

from parsim.hardware.specs import CacheLevel, MemorySpec, ProcessorSpec

KiB = 1024  # binary prefixes for cache and memory sizes
MiB = 1024 * KiB  # binary prefix
GiB = 1024 * MiB  # binary prefix

_CPU_COMMON: dict[str, Any] = dict(
    kind="cpu",
    warp_size=1,  # a CPU core has no lockstep warp
    tiles_per_core=1,  # one chunk in flight per core
    tile_items=16384,  # design choice: 64 KiB of float32 per chunk, L2-resident on all presets
    matmul_tile=64,  # design choice: 64x64 output block, the order of MKL/OpenBLAS micro-kernel blocking
    dispatch_s=1e-6,  # estimate: NumPy ufunc call overhead on a small array is ~1 us in CPython
    interpreted_element_s=50e-9,  # estimate: ~50 ns per element per op in a CPython loop
)


def _cpu(**fields: Any) -> ProcessorSpec:
    return ProcessorSpec(**_CPU_COMMON, **fields)


def _caches(
    cores: int,
    clock_Hz: float,
    l1_B: float,
    l2_B: float,
    l3_B: float,
    l1_Bpc: float,
    l2_Bpc: float,
    l3_Bpc: float,
) -> tuple[CacheLevel, ...]:
    """L1/L2 private and L3 shared; bandwidths = bytes/cycle/core x cores x clock (estimates)."""
    return (
        CacheLevel(name="L1", size_B=l1_B, bandwidth_Bps=l1_Bpc * cores * clock_Hz, per_core=True),
        CacheLevel(name="L2", size_B=l2_B, bandwidth_Bps=l2_Bpc * cores * clock_Hz, per_core=True),
        CacheLevel(name="L3", size_B=l3_B, bandwidth_Bps=l3_Bpc * cores * clock_Hz),
    )


LAPTOP_4C_AVX2 = _cpu(
    id="laptop-4c-avx2",
    name="Generic 4-core AVX2 laptop (modelled on Core i7-8550U, Kaby Lake R, 15 W)",
    cores=4,  # [ARK] i7-8550U: 4 cores / 8 threads
    max_gpus=1,  # a laptop drives at most one (external) GPU: [ARK] 4 PCIe 3.0 lanes
    lanes_per_core=16,  # [ARK] AVX2 + FMA: 8 float32 lanes x 2 FMA ports
    # estimate: [ARK] lists 1.8 GHz base / 4.0 GHz single-core turbo; at 15-25 W an all-core AVX2 load
    # settles around 2.7 GHz (Intel publishes no AVX frequency for mobile parts)
    clock_Hz=2.7e9,
    fma=True,  # [ARK] FMA3
    fp64_ratio=0.5,  # 4 float64 lanes per 256-bit register vs 8 float32
    fp16_ratio=1.0,  # no FP16 vector arithmetic on Kaby Lake (F16C converts only)
    matmul_efficiency=0.7,  # estimate: MKL SGEMM ~85 % of peak, less on a power-limited 15 W part
    special_per_core_per_cycle=1.0,  # estimate: vectorised exp/log (SVML-class) ~1 result/cycle/core
    memory=MemorySpec(
        bandwidth_Bps=28e9,  # estimate: ~73 % of peak, the STREAM efficiency of dual-channel DDR4 clients
        peak_bandwidth_Bps=2 * 2400e6 * 8,  # [ARK] 2 channels DDR4-2400 x 8 B = 38.4 GB/s
        latency_s=90e-9,  # estimate: client DDR4 load-to-use ~80-100 ns
        capacity_B=16 * GiB,  # typical configuration
        per_core_bandwidth_Bps=15e9,  # estimate: one Skylake-class client core streams ~12-18 GB/s
        # [ARK] 32 KB L1d + 256 KB L2 per core, 8 MB L3; estimate: 64/32/16 B/cycle/core
        caches=_caches(4, 2.7e9, 32 * KiB, 256 * KiB, 8 * MiB, 64, 32, 16),
    ),
)

I7_3820 = _cpu(
    id="i7-3820",
    name="Intel Core i7-3820 (Sandy Bridge-E, AVX without FMA)",
    cores=4,  # [ARK] 4 cores / 8 threads
    lanes_per_core=16,  # AVX: 8 float32 lanes x 2 ports (one add + one multiply per cycle, no FMA)
    clock_Hz=3.7e9,  # [ARK] base 3.6 GHz, turbo 3.7 GHz with 3-4 cores active (3.8 GHz with 1-2)
    fma=False,  # Sandy Bridge has AVX but no FMA: the two ports give one add and one multiply
    fp64_ratio=0.5,  # 4 float64 lanes per 256-bit register vs 8 float32
    fp16_ratio=1.0,  # no FP16 vector arithmetic (F16C converts only)
    matmul_efficiency=0.85,  # estimate: MKL/OpenBLAS SGEMM ~85 % of AVX peak
    special_per_core_per_cycle=1.0,  # estimate: vectorised exp/log ~1 result/cycle/core
    memory=MemorySpec(
        bandwidth_Bps=38e9,  # estimate: ~74 % of the quad-channel peak, typical STREAM efficiency of SNB-E
        peak_bandwidth_Bps=4 * 1600e6 * 8,  # [ARK] 4 channels DDR3-1600 x 8 B = 51.2 GB/s
        latency_s=80e-9,  # estimate: DDR3 load-to-use ~75-85 ns on Sandy Bridge-E
        capacity_B=16 * GiB,  # typical configuration (4 x 4 GB)
        per_core_bandwidth_Bps=12e9,  # estimate: one Sandy Bridge core streams ~10-14 GB/s
        # [ARK] 32 KB L1d + 256 KB L2 per core, 10 MB L3; estimate: 32/16/12 B/cycle/core
        caches=_caches(4, 3.7e9, 32 * KiB, 256 * KiB, 10 * MiB, 32, 16, 12),
    ),
)

_E5_2630V3 = dict(
    lanes_per_core=16,  # [ARK] AVX2 + FMA: 8 float32 lanes x 2 FMA ports
    # estimate: [ARK] 2.4 GHz base / 3.2 GHz max turbo; the all-core turbo is 2.6 GHz (Intel turbo table,
    # 2 bins) and heavy AVX2 may drop toward the 2.1 GHz AVX base
    clock_Hz=2.6e9,
    fma=True,  # [ARK] FMA3 (Haswell)
    fp64_ratio=0.5,  # 4 float64 lanes per 256-bit register vs 8 float32
    fp16_ratio=1.0,  # no FP16 vector arithmetic on Haswell (F16C converts only)
    matmul_efficiency=0.85,  # estimate: MKL SGEMM on Haswell-EP ~85-90 % of AVX2 peak
    special_per_core_per_cycle=1.0,  # estimate: vectorised exp/log ~1 result/cycle/core
)

XEON_E5_2630V3 = _cpu(
    id="xeon-e5-2630v3",
    name="Intel Xeon E5-2630 v3 (Haswell-EP, 8 cores)",
    cores=8,  # [ARK] 8 cores / 16 threads
    memory=MemorySpec(
        # [CSCS] Haswell-EP socket (E5-2690 v3, DDR4-2133): triad 59.5 GB/s = 87 % of its 68 GB/s peak;
        # the same 87 % of this part's DDR4-1866 peak
        bandwidth_Bps=52e9,
        peak_bandwidth_Bps=4 * 1866.67e6 * 8,  # [ARK] 4 channels DDR4-1866 x 8 B = 59.7 GB/s
        latency_s=90e-9,  # estimate: DDR4 load-to-use ~85-95 ns on Haswell-EP
        capacity_B=64 * GiB,  # typical configuration (8 x 8 GB)
        per_core_bandwidth_Bps=20e9,  # [PUGET] Haswell-EP (E5-2697 v3) STREAM triad with 1 core: 20 GB/s
        # [ARK] 32 KB L1d + 256 KB L2 per core, 20 MB L3; estimate: 64/32/14 B/cycle/core
        caches=_caches(8, 2.6e9, 32 * KiB, 256 * KiB, 20 * MiB, 64, 32, 14),
    ),
    **_E5_2630V3,
)

DUAL_XEON_E5_2630V3 = _cpu(
    id="dual-xeon-e5-2630v3",
    name="2x Intel Xeon E5-2630 v3 (Haswell-EP, 2 sockets, 16 cores)",
    cores=16,  # [ARK] 2 sockets x 8 cores
    memory=MemorySpec(
        # [PUGET] 2x Xeon E5-2697 v3 STREAM triad 102 GB/s (DDR4-2133); estimate: 2 x 52 GB/s per socket
        bandwidth_Bps=104e9,
        peak_bandwidth_Bps=2 * 4 * 1866.67e6 * 8,  # [ARK] 2 sockets x 4 channels DDR4-1866 x 8 B
        latency_s=100e-9,  # estimate: local ~90 ns, remote-socket accesses add ~40 ns (NUMA average)
        capacity_B=128 * GiB,  # typical configuration (16 x 8 GB)
        per_core_bandwidth_Bps=20e9,  # [PUGET] Haswell-EP STREAM triad with 1 core: 20 GB/s
        # [ARK] 32 KB L1d + 256 KB L2 per core, 2 x 20 MB L3 (one per socket, modelled as one level);
        # estimate: 64/32/14 B/cycle/core
        caches=_caches(16, 2.6e9, 32 * KiB, 256 * KiB, 40 * MiB, 64, 32, 14),
    ),
    # [ARK] 2 x 40 PCIe 3.0 lanes; behind PCIe switches two sockets host 16 GPUs, as in a DGX-2
    max_gpus=16,
    **_E5_2630V3,
)

XEON_8480 = _cpu(
    id="xeon-8480",
    name="Intel Xeon Platinum 8480+ (Sapphire Rapids, 56 cores, AMX)",
    cores=56,  # [ARK] 56 cores / 112 threads
    lanes_per_core=32,  # [ARK] AVX-512 with 2 FMA units: 16 float32 lanes x 2 ports
    # [ARK] base 2.0 GHz (all-core turbo 3.0 GHz); the host work of the DGX presets was fitted at 2.0
    clock_Hz=2.0e9,
    # [ARK] all-core turbo. Intel's published 8480+ FP32 rows (intel/neural-compressor
    # validated_model_list.md, 14 instances x 4 cores, batch 1, turbo on) put VGG-16 at 203-239 img/s,
    # 59-69 ms an image for its 31 GFLOP of convolutions plus 494 MB of classifier weights: >= 2.3 GHz
    # even at 100 % of the AVX-512 peak. Intel publishes no AVX-512 licence clock for the part, so the
    # all-core turbo is taken (fitted with oneDNN's batch-1 share, stack.presets.ONEDNN)
    vector_clock_Hz=3.0e9,
    fma=True,  # [ARK] AVX-512 FMA
    fp64_ratio=0.5,  # 8 float64 lanes per 512-bit register vs 16 float32
    fp16_ratio=2.0,  # AVX512-FP16 (new in Sapphire Rapids): 32 half lanes per 512-bit register
    matrix_flops_per_s={
        # [AMX] 1024 BF16 FLOP/cycle/core x 56 cores x 2.0 GHz (base: tile work sustains no turbo)
        "bfloat16": 56 * 1024 * 2.0e9,
    },
    matmul_efficiency=0.8,  # estimate: oneDNN/MKL reach ~80 % of the AVX-512 or AMX peak on large GEMMs
    special_per_core_per_cycle=2.0,  # estimate: AVX-512 SVML exp/log ~2 results/cycle/core
    memory=MemorySpec(
        bandwidth_Bps=240e9,  # [LIKWID] one Sapphire Rapids socket, triad_mem_avx512_fma: 233 GB/s
        peak_bandwidth_Bps=8 * 4800e6 * 8,  # [ARK] 8 channels DDR5-4800 x 8 B = 307.2 GB/s
        latency_s=110e-9,  # estimate: mesh + DDR5 load-to-use ~100-120 ns on Sapphire Rapids
        capacity_B=256 * GiB,  # typical configuration (8 x 32 GB, one DIMM per channel)
        per_core_bandwidth_Bps=12e9,  # estimate: one Sapphire Rapids core streams ~10-15 GB/s (mesh latency)
        # [ARK] 48 KB L1d + 2 MB L2 per core, 105 MB L3; estimate: 128/48/8 B/cycle/core
        caches=_caches(56, 2.0e9, 48 * KiB, 2 * MiB, 105 * MiB, 128, 48, 8),
    ),
)

EPYC_9654 = _cpu(
    id="epyc-9654",
    name="AMD EPYC 9654 (Genoa, Zen 4, 96 cores)",
    cores=96,  # [AMD] 96 cores / 192 threads
    lanes_per_core=16,  # AVX-512 executed on 256-bit datapaths: 8 float32 lanes x 2 FMA pipes
    clock_Hz=3.55e9,  # [AMD] all-core boost 3.55 GHz (base 2.4 GHz, max 3.7 GHz)
    fma=True,  # [AMD] AVX-512 FMA (Zen 4)
    fp64_ratio=0.5,  # 4 float64 lanes per 256-bit datapath vs 8 float32
    fp16_ratio=1.0,  # Zen 4 has AVX512-BF16 dot products but no FP16 vector arithmetic
    matmul_efficiency=0.85,  # estimate: AOCL/OpenBLAS SGEMM ~85 % of peak on Zen 4
    special_per_core_per_cycle=1.0,  # estimate: vectorised exp/log ~1 result/cycle/core on 256-bit pipes
    memory=MemorySpec(
        # estimate: ~78 % of peak; consistent with [HBV4] 650-780 GB/s for two Genoa-X sockets of the same
        # 12-channel DDR5-4800 memory system (325-390 GB/s per socket)
        bandwidth_Bps=360e9,
        peak_bandwidth_Bps=12 * 4800e6 * 8,  # [AMD] 12 channels DDR5-4800 x 8 B = 460.8 GB/s
        latency_s=110e-9,  # estimate: Infinity Fabric + DDR5 load-to-use ~100-120 ns on Genoa
        capacity_B=384 * GiB,  # typical configuration (12 x 32 GB)
        per_core_bandwidth_Bps=25e9,  # estimate: one Zen 4 core streams ~20-30 GB/s (many misses in flight)
        # [AMD] 32 KB L1d + 1 MB L2 per core, 384 MB L3 (12 CCDs x 32 MB, modelled as one shared level);
        # estimate: 64/32/16 B/cycle/core
        caches=_caches(96, 3.55e9, 32 * KiB, 1 * MiB, 384 * MiB, 64, 32, 16),
    ),
)

DUAL_EPYC_7742 = _cpu(
    id="dual-epyc-7742",
    name="2x AMD EPYC 7742 (Rome, Zen 2, 2 sockets, 128 cores): the host of a DGX A100",
    cores=128,  # [AMD7742] 2 sockets x 64 cores ([DGXA100-UG] 128 cores)
    lanes_per_core=16,  # Zen 2: two 256-bit FMA pipes, 8 float32 lanes x 2
    # estimate: [AMD7742] base 2.25 GHz / max boost 3.4 GHz; AMD publishes no all-core clock, but its
    # frequency-vs-active-cores chart for the 7742 has no AVX offset (Rome lowers no clock for vector
    # code; ascii.jp/elem/000/001/914/1914626/4): ~3.0 GHz all-core, between base and max boost
    clock_Hz=3.0e9,
    fma=True,  # [AMD7742] AVX2 + FMA3
    fp64_ratio=0.5,  # 4 float64 lanes per 256-bit register vs 8 float32
    fp16_ratio=1.0,  # no FP16 vector arithmetic on Zen 2 (F16C converts only)
    matmul_efficiency=0.85,  # estimate: AOCL/OpenBLAS SGEMM ~85 % of peak, as the Genoa preset
    special_per_core_per_cycle=1.0,  # estimate: vectorised exp/log ~1 result/cycle/core on 256-bit pipes
    memory=MemorySpec(
        # estimate: ~75 % of peak, the STREAM triad efficiency of 8-channel DDR4 server sockets ([CSCS]
        # Haswell-EP reaches 87 % with the Intel compiler, GCC builds ~65 %); 2 x 153.6 GB/s
        bandwidth_Bps=2 * 153.6e9,
        peak_bandwidth_Bps=2 * 8 * 3200e6 * 8,  # [AMD7742] 2 x 8 channels DDR4-3200 x 8 B = 409.6 GB/s
        latency_s=120e-9,  # estimate: Rome's I/O die adds ~20-30 ns to DDR4 load-to-use (NUMA average)
        capacity_B=2048 * GiB,  # [DGXA100-UG] 2 TB in the DGX A100 640 GB
        per_core_bandwidth_Bps=20e9,  # estimate: one Zen 2 core streams ~18-25 GB/s
        # [AMD7742] 32 KB L1d + 512 KB L2 per core, 2 x 256 MB L3 (16 MB per 4-core CCX, modelled as one
        # shared level); estimate: 64/32/16 B/cycle/core
        caches=_caches(128, 3.0e9, 32 * KiB, 512 * KiB, 512 * MiB, 64, 32, 16),
    ),
    max_gpus=8,  # [DGXA100-UG] 8 A100s behind PCIe 4.0 switches
)


# Grace hosts of Blackwell GPUs, ``cpus`` Grace CPUs as one host (as dual-xeon-e5-2630v3 joins two
# sockets; in a cluster the host only issues work and copies): two per Azure ND GB200 v6 VM, 36 per
# GB200 NVL72 rack. Each Grace hosts two Blackwell GPUs ([GB200]).
def _grace(id: str, name: str, cpus: int) -> ProcessorSpec:
    cores = 72 * cpus  # [GRACE] 72 Neoverse V2 cores per Grace ([GB200]: 2,592 in 36)
    return _cpu(
        id=id,
        name=name,
        cores=cores,
        lanes_per_core=16,  # [GRACE] 4 SVE2 pipes x 128 bits = 16 float32 lanes with FMA
        clock_Hz=3.0e9,  # estimate: [GRACE] up to 3.1 GHz; ~3.0 GHz all-core under vector load
        # fitted once against the published GB200 training steps that issue every operator from
        # Python (Megatron-LM's Qwen3-30B-A3B BF16 recipe, Megatron-Bridge's Llama 3 70B MXFP8 at
        # 26.04.01: no CUDA graphs): PyTorch's and Transformer Engine's per-operator host work takes
        # 2x the cycles it takes on the x86 hosts it was fitted on, 1.33x an 8480's time per
        # operator at parsim's clocks. [TE2053] measures more on one operator: a torch Linear
        # forward costs the host 37.08 us on GB200 against 13.48 us on an H100 DGX (8480C)
        framework_cycles_scale=2.0,
        fma=True,  # [GRACE] SVE2 / NEON fused multiply-add
        fp64_ratio=0.5,  # 2 float64 lanes per 128-bit pipe vs 4 float32
        fp16_ratio=2.0,  # [GRACE] Armv9 FP16 arithmetic: 8 half lanes per 128-bit pipe
        matmul_efficiency=0.8,  # estimate: NVPL/OpenBLAS reach ~80 % of the SVE2 peak on large GEMMs
        special_per_core_per_cycle=1.0,  # estimate: vectorised exp/log ~1 result/cycle/core, 128-bit pipes
        memory=MemorySpec(
            bandwidth_Bps=cpus * 381.5e9,  # [AZ-GB200] CPU STREAM triad 763 GB/s on a VM's 2 Grace
            peak_bandwidth_Bps=cpus * 512e9,  # [GB200] 18.4 TB/s LPDDR5X per 36 Grace: ~512 GB/s each
            latency_s=120e-9,  # estimate: mesh + LPDDR5X load-to-use ~110-130 ns
            capacity_B=cpus * 480e9,  # [GB200] up to 17 TB LPDDR5X per 36 Grace: 480 GB each
            per_core_bandwidth_Bps=20e9,  # estimate: one Neoverse V2 core streams ~15-25 GB/s
            # [GRACE] 64 KB L1d + 1 MB L2 per core, 114 MB L3 per Grace (one level); estimate: 64/32/8 B/cycle
            caches=_caches(cores, 3.0e9, 64 * KiB, 1 * MiB, cpus * 114 * MiB, 64, 32, 8),
        ),
        max_gpus=2 * cpus,  # [GB200] two Blackwell GPUs per Grace
    )


GRACE_X2 = _grace("grace-x2", "2x NVIDIA Grace (144 Neoverse V2 cores): the host of a 4-GPU GB200 board", 2)
GRACE_NVL72 = _grace(
    "grace-nvl72", "36x NVIDIA Grace (2,592 Neoverse V2 cores): the hosts of one GB200 NVL72 rack, as one", 36
)

CPU_PRESETS: dict[str, ProcessorSpec] = {
    p.id: p
    for p in (
        LAPTOP_4C_AVX2,
        I7_3820,
        XEON_E5_2630V3,
        DUAL_XEON_E5_2630V3,
        XEON_8480,
        EPYC_9654,
        DUAL_EPYC_7742,
        GRACE_X2,
        GRACE_NVL72,
    )
}
"""CPU presets by id."""
