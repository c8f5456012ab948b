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
    # links (presets_links.py)
    "pcie3-x16": "PCI-SIG Gen3 specification; gpu-benches cuda-memcpy on a V100 PCIe",
    "pcie4-x16": "PCI-SIG Gen4 specification; bandwidthTest on A100 PCIe (della) and RTX 4090",
    "pcie5-x16": "PCI-SIG Gen5 specification; vpbenchmarking H100 SXM5 host copies",
    "nvlink2": "NVIDIA V100 whitepaper (6 NVLink 2.0 links)",
    "nvlink3": "NVIDIA A100 whitepaper (12 links); GPUInspector.jl DGX A100 P2P",
    "nvlink4": "NVIDIA H100 whitepaper (18 links); NVIDIA/nccl issue 1264 P2P test",
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
    "tpu-v4-pod": "Google Cloud TPU v4 page (4 chips per host, 3D torus, 4x4x4 cubes)",
    "tpu-v5p-pod": "Google Cloud TPU v5p page (4 chips per host, 3D torus, DCN per chip)",
    "tpu-v5e-pod": "Google Cloud TPU v5e page (8 chips per host, 16x16 2D torus, 2x 100G NICs)",
    "tpu-v6e-pod": "Google Cloud TPU v6e page (8 chips per host, 16x16 2D torus)",
}
"""One line per preset id: the datasheet behind the peaks and the measurements behind the rest."""


def source_of(preset_id: str) -> str:
    """The line for ``preset_id``; a hardware file the user wrote has none."""
    return SOURCES.get(preset_id, "a hardware file")
