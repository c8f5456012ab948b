"""Where each preset's numbers come from, in one line per preset id (``parsim hardware list``).

The preset modules cite a source next to every number; this table is their summary for people
choosing a preset: the datasheet or whitepaper behind the peaks and the public measurement behind
the effective figures (the abbreviations are expanded in each module's docstring). A test checks
that every preset id has a line here.
"""

from __future__ import annotations

_NV_MEASURED = "te42kyfo/gpu-benches and clpeak measurements"

SOURCES: dict[str, str] = {
    # CPUs (presets_cpu.py)
    "laptop-4c-avx2": "Intel ARK Core i7-8550U; estimates for a generic 15 W laptop",
    "i7-3820": "Intel ARK; Sandy Bridge-E per-cycle widths (Intel optimization manual)",
    "xeon-e5-2630v3": "Intel ARK; STREAM triad of Puget Systems and ReFrame CSCS (Haswell-EP)",
    "dual-xeon-e5-2630v3": "Intel ARK; STREAM triad of Puget Systems (2-socket Haswell-EP)",
    "xeon-8480": "Intel ARK and AMX overview; likwid-bench triad (RRZE-HPC/likwid issue 664)",
    "epyc-9654": "AMD EPYC 9654 product page; Azure HBv4 STREAM page",
    "dual-epyc-7742": "AMD EPYC 7742 product page; NVIDIA DGX A100 User Guide; STREAM efficiency estimate",
    # GPUs (presets_gpu.py)
    "gtx-980": f"NVIDIA GTX 980 whitepaper; {_NV_MEASURED}",
    "gtx-1080": "NVIDIA GTX 1080 whitepaper; clpeak log and deviceQuery",
    "k80": "NVIDIA Tesla K80 datasheet; gpumembench issue 2",
    "t4": f"NVIDIA T4 datasheet; {_NV_MEASURED}",
    "v100-pcie": f"NVIDIA V100 whitepaper; {_NV_MEASURED}",
    "v100-sxm2": "NVIDIA V100 whitepaper; GPUInspector.jl and clpeak measurements",
    "a100-40gb": "NVIDIA A100 whitepaper; GPUInspector.jl and gpu-benches measurements",
    "a100-80gb": "NVIDIA A100 80GB datasheet; gpu-benches and bandwidthTest measurements",
    "h100-pcie": f"NVIDIA H100 whitepaper; {_NV_MEASURED}",
    "h100-sxm": "NVIDIA H100 whitepaper; vpbenchmarking copy and parsim's own H100 measurements",
    "h200": "NVIDIA H200 datasheet; gpu-benches h200 stream and roofline",
    "rtx-4090": "NVIDIA Ada (AD102) whitepaper; device-benchmarks and mli matmul measurements",
    "grace-x2": "Grace datasheet; Azure ND GB200 v6 CPU STREAM triad",
    "grace-nvl72": "GB200 NVL72 datasheet (36 Grace, 18.4 TB/s LPDDR5X); Azure ND GB200 v6 STREAM",
    # current NVIDIA GPUs (presets_gpu_current.py)
    "b200": "HGX/DGX B200 datasheet; 148 SMs, 1965 MHz from nvidia-smi; bandwidth estimate",
    "gb200": "GB200 NVL72 datasheet; B200 die as b200; Azure ND GB200 v6 host link",
    "h100-nvl": "H100 datasheet (NVL column); bandwidth estimate",
    "a100-pcie-40gb": "A100 datasheet (PCIe); gpu-benches A100 40GB triad; cutlass issue 956 (250 W clock)",
    "a100-pcie-80gb": "A100 datasheet (PCIe); bandwidth estimate from A100 80GB SXM",
    "l40s": "L40S datasheet; gpu-benches L40 stream and latency",
    "a10g": "GA102 whitepaper rates (estimate); Baseten A10 vs A10G; A10 copy",
    "l4": "L4 datasheet; bandwidth and held clock estimates",
    "rtx-3090": "GA102 whitepaper; device-benchmarks copy and FP32 matmul",
    "rtx-a6000": "RTX A6000 datasheet, GA102 whitepaper; bandwidth estimate",
    # links (presets_links.py)
    "pcie3-x16": "PCI-SIG Gen3 specification; gpu-benches cuda-memcpy on a V100 PCIe",
    "pcie4-x16": "PCI-SIG Gen4 specification; bandwidthTest on A100 PCIe (della) and RTX 4090",
    "pcie5-x16": "PCI-SIG Gen5 specification; vpbenchmarking H100 SXM5 host copies",
    "nvlink2": "NVIDIA V100 whitepaper (6 NVLink 2.0 links)",
    "nvlink3": "NVIDIA A100 whitepaper (12 links); GPUInspector.jl DGX A100 P2P",
    "nvlink4": "NVIDIA H100 whitepaper (18 links); NVIDIA/nccl issue 1264 P2P test",
    "nvlink5": "B200 datasheet (1.8 TB/s per GPU); effective estimate as NVLink 4",
    "nvlink-c2c": "GB200 datasheet (900 GB/s); Azure ND GB200 v6 nvbandwidth",
    # TPUs and their ICI links (presets_tpu.py)
    "tpu-v4": "Google Cloud TPU v4 system architecture page; Jouppi et al., ISCA 2023",
    "tpu-v5e": "Google Cloud TPU v5e system architecture page",
    "tpu-v5p": "Google Cloud TPU v5p system architecture page",
    "tpu-v6e": "Google Cloud TPU v6e (Trillium) system architecture page",
    "ici-v4": "Jouppi et al., ISCA 2023 (six ICI links of 50 GB/s per direction)",
    "ici-v5e": "Google Cloud TPU v5e page (400 GBps bidirectional ICI over 4 ports)",
    "ici-v5p": "Google Cloud TPU v5p page (1200 GBps bidirectional ICI, 3D torus)",
    "ici-v6e": "Google Cloud TPU v6e page (800 GBps bidirectional ICI over 4 ports)",
    # NICs and clusters (presets_cluster.py)
    "ib-edr": "InfiniBand specification (EDR 4x); ib_write_bw results",
    "ib-hdr": "InfiniBand specification (HDR 4x); ib_write_bw results",
    "ib-ndr": "InfiniBand specification (NDR 4x); ib_write_bw results",
    "roce-100g": "IEEE 802.3 100GBASE-R; RoCE v2 ib_write_bw results",
    "eth-25g": "IEEE 802.3by 25GBASE-R; TCP at ~90 % of line rate",
    "dgx-a100": "NVIDIA DGX A100 User Guide; DGX SuperPOD reference architecture",
    "dgx-h100": "NVIDIA DGX H100 User Guide; DGX SuperPOD reference architecture",
    "pcie-h100-2nic": "estimate: a common 8x H100 PCIe server with two NDR NICs",
    "oci-a100-roce": "OCI BM.GPU4.8 (oracle-japan/ocitutorials nccl-tests page)",
    "v100-1edr": "Oneflow-Inc/DLPerf report (4 nodes of 8x V100, one EDR NIC each)",
    "aws-p3-25g": "AWS p3.16xlarge instance page; aws-samples/deep-learning-models issue 2",
    # AMD Instinct (presets_amd.py)
    "mi300x": "AMD MI300X data sheet, CDNA 3 white paper; Azure ND MI300X v5 benchmarks (STREAM, hipBLASLt)",
    "mi250x": "AMD MI250X data sheet, CDNA 2 white paper (per GCD); hipBLAS #584 (DGEMM); HBM estimate",
    "mi250x-module": "AMD MI250X data sheet, CDNA 2 white paper (both GCDs); hipBLAS #584; HBM estimate",
    "infinity-fabric-mi300x": "CDNA 3 white paper (7 x 64 GB/s); Azure ND MI300X v5 rccl-tests busbw",
    "xgmi-mi250x": "CDNA 2 white paper (4 x 50 GB/s); effective share estimated from MI300X's RCCL",
    "rtx4090-pcie-2x": "kalavai-net/kalavai-client scripts/README.md (2x RTX 4090, PCIe 4.0, no P2P)",
    "rtx4090-pcie-2x-switch": "kalavai-net/kalavai-client scripts/README.md (2x RTX 4090 behind one switch)",
    "rtx4090-pcie-4x": "kalavai-net/kalavai-client scripts/README.md (4x RTX 4090, PCIe 4.0, no P2P)",
    "rtx4090-pcie-8x-2socket": "blog.chlc.cc RTX4090 GPUDirect P2P Unlocked (8x RTX 4090, 2x EPYC 7542)",
    "rtx4090-pcie-6x": "tinygrad/open-gpu-kernel-modules README.md (tinybox: 6x RTX 4090, PCIe 4.0, P2P)",
    "mi300x-node": "Azure ND MI300X v5 documentation (8x MI300X, Xeon 8480C, 8x NDR InfiniBand)",
    "efa-100g": "AWS EFA documentation (100 Gb/s); effective and latency estimates",
    "eth-200g-tcpxo": "Google Cloud A3 Mega page (200 Gb/s per GPU NIC); estimates",
    "dgx-h200": "NVIDIA DGX H200 datasheet",
    "dgx-b200": "NVIDIA DGX B200 datasheet",
    "gb200-nvl72": "NVIDIA GB200 NVL72 / DGX GB200 datasheets",
    "azure-nd-gb200-v6": "Microsoft Learn, ND GB200 v6 series",
    "aws-p4d": "AWS EC2 P4 instance page (p4d.24xlarge)",
    "aws-p5": "AWS EC2 P5 instance page (p5.48xlarge)",
    "gcp-a3": "Google Cloud GPU machine types (A3 Mega)",
    "azure-nd-h100-v5": "Microsoft Learn, ND H100 v5 series",
    "tpu-v4-pod": "Google Cloud TPU v4 page (4 chips per host, 3D torus, 4x4x4 cubes)",
    "tpu-v5p-pod": "Google Cloud TPU v5p page (4 chips per host, 3D torus, DCN per chip)",
    "tpu-v5e-pod": "Google Cloud TPU v5e page (8 chips per host, 16x16 2D torus, 2x 100G NICs)",
    "tpu-v6e-pod": "Google Cloud TPU v6e page (8 chips per host, 16x16 2D torus)",
}
"""One line per preset id: the datasheet behind the peaks and the measurements behind the rest."""


def source_of(preset_id: str) -> str:
    """The line for ``preset_id``; a hardware file the user wrote has none."""
    return SOURCES.get(preset_id, "a hardware file")
