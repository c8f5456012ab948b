"""Link presets: PCIe and NVLink, theory from the specifications, effective rates from bandwidthTests.

A link is a pipe per direction: a transfer pays ``latency_s`` once and then streams at
``bandwidth_Bps`` from pinned host memory, or at ``pageable_bandwidth_Bps`` when the driver has to
stage pageable memory through a pinned bounce buffer. The theoretical figure is the signalling
rate after line encoding; the effective one is what CUDA's copy engines reach on real boards
(packet headers and flow control cost 15-25 %). NVLink figures are GPU-to-GPU per direction; their
pageable figure only matters for host<->device traffic and is set with the same fraction as PCIe.

The PCIe presets' ``bandwidth_Bps`` is the host-to-device rate; device-to-host runs faster because
the GPU writes host memory in 256-byte packets where it reads it back in 128-byte completions
(``model.transfer.pinned_bandwidth_Bps``). The completion size is the one fitted value: [NEUG]
allows 64 or 128 B, and 128 B gives the ratio the published Gen4 hosts measure (D2H / H2D 1.064;
[OXIDE] 26.6 / 23.9 = 1.11 at 16 MiB, [NVBW15] 26.8 / 25.5 = 1.05, [DELLA] 1.00, [GI] 1.00).

Sources, abbreviated in the comments:

- [PCIE] PCI-SIG base specifications: 8 / 16 / 32 GT/s per lane for Gen3 / Gen4 / Gen5, 128b/130b
  encoding, so x16 carries 15.75 / 31.5 / 63.0 GB/s per direction.
- [TK] github.com/te42kyfo/gpu-benches README, cuda-memcpy on a Tesla V100 PCIe (cudaMallocHost
  buffer): 12.35 GB/s host-to-device for large transfers.
- [GI] github.com/pc2/GPUInspector.jl docs/src/devices: V100-SXM2 host pinned 12.14 GiB/s and
  pageable 4.46 GiB/s; DGX-A100 host pinned 24.33 GiB/s, pageable 11.84 GiB/s, NVLink P2P average
  229.6 GiB/s (8x A100-SXM4-40GB).
- [DELLA] github.com/jdh4/della-gpu-A100 README, bandwidthTest on an A100-PCIE-40GB: pinned
  host-to-device 25.8-26.2 GB/s.
- [VP] github.com/aigatech/vpbenchmarking README, 8x H100 SXM5 node: host-to-device 54.8 GB/s.
- [OXIDE] cuda-oxide pull request #976 (bandwidth benchmark on an RTX 4090, PCIe 4.0 x16): pinned
  copies of 1, 4, 16 MiB at 22.5 / 23.6 / 23.9 GB/s host-to-device, 25.4 / 26.6 / 26.6 device-to-host.
- [NEUG] Neugebauer, Antichi, Zazo, Audzevich, Lopez-Buedo, Moore, "Understanding PCIe
  performance for end host networking", SIGCOMM 2018, section 3: the packet model of PCIe (max
  payload size of 128-256 B on servers, read completions on 64 or 128 B boundaries, 20-26 bytes
  of header, sequence number, LCRC and framing per packet).
- [NVBW15] github.com/NVIDIA/nvbandwidth issue #15: 8x RTX 4090, pinned host-to-device 25.5 GB/s,
  device-to-host 26.8 GB/s on GPU 0.
- [NCCL] github.com/NVIDIA/nccl issue #1264, p2pBandwidthLatencyTest on HGX H100 SXM: 380 GB/s
  unidirectional P2P.
- [WP-V100] NVIDIA Tesla V100 GPU architecture whitepaper (2017): six NVLink 2.0 links of 25 GB/s per
  direction, 300 GB/s total, on SXM2 boards (DGX-1's hybrid cube mesh, DGX-2's NVSwitch).
- [WP-A100] / [WP-H100] NVIDIA Ampere and Hopper whitepapers (NVLink3: 12 links, 600 GB/s total;
  NVLink4: 18 links, 900 GB/s total).
- [AZ-GB200] Azure/AI-benchmarking-guide@2a370be6de9586d365feed77e014a73f25198f4d
  Azure_Results/ND_GB200_v6_results.md, "NV Bandwidth": host to device 201 GB/s, device to host
  193 GB/s on a GB200 (nvbandwidth, copy engines); "NCCL Bandwidth" (Ring, 4 GPUs): '| 8G | 679.6 |'.
- [WP-GB200] NVIDIA GB200 NVL72 datasheet / Grace Blackwell superchip: NVLink-C2C, 900 GB/s
  between a Grace CPU and its GPUs (450 GB/s per direction).
- [WP-B200] NVIDIA HGX B200 / GB200 NVL72 datasheets: fifth-generation NVLink, 18 links, 1.8 TB/s
  total per GPU (900 GB/s per direction).
"""

from __future__ import annotations

from parsim.hardware.specs import LinkSpec

PCIE3_X16 = LinkSpec(
    id="pcie3-x16",
    name="PCI Express 3.0 x16",
    bandwidth_Bps=12.3e9,  # [TK] V100 PCIe cudaMemcpy 12.35 GB/s; [GI] V100-SXM2 pinned 13.0 GB/s
    peak_bandwidth_Bps=15.75e9,  # [PCIE] 8 GT/s x 16 lanes x 128/130 / 8 bit = 15.75 GB/s
    pageable_bandwidth_Bps=5.0e9,  # [GI] V100-SXM2 host pageable 4.46 GiB/s = 4.8 GB/s (~40 % of pinned)
    # as PCIe 4.0 ([OXIDE]): the copy engine's fixed cost per copy, device side (the host's call is
    # the GPU's dispatch_s, paid on top); [TK]'s 1 kB copies take ~30 us with a sync and a host timer
    latency_s=2.5e-6,
    duplex=True,  # PCIe is full duplex: one stream per direction
    kind="pcie",
    write_payload_B=256,  # [NEUG] servers configure a 256 B max payload size
    read_completion_B=128,  # [NEUG] 64 or 128 B; 128 B fits the Gen4 H2D/D2H ratio (module docstring)
)

PCIE4_X16 = LinkSpec(
    id="pcie4-x16",
    name="PCI Express 4.0 x16",
    bandwidth_Bps=25e9,  # [DELLA] A100-PCIE-40GB pinned 25.8-26.2 GB/s; [GI] DGX-A100 pinned 26.1 GB/s
    peak_bandwidth_Bps=31.5e9,  # [PCIE] 16 GT/s x 16 lanes x 128/130 / 8 bit = 31.5 GB/s
    pageable_bandwidth_Bps=11.5e9,  # [GI] DGX-A100 host pageable 11.84 GiB/s = 12.7 GB/s
    # [OXIDE] RTX 4090 pinned copies of 1, 4 and 16 MiB timed with CUDA events: time = latency +
    # bytes / bandwidth fits with a 2.8 us (host-to-device) and 1.9 us (device-to-host) intercept
    latency_s=2.5e-6,
    duplex=True,  # PCIe is full duplex: one stream per direction
    kind="pcie",
    write_payload_B=256,  # [NEUG] servers configure a 256 B max payload size
    read_completion_B=128,  # [NEUG] 64 or 128 B; 128 B fits the Gen4 H2D/D2H ratio (module docstring)
)

PCIE5_X16 = LinkSpec(
    id="pcie5-x16",
    name="PCI Express 5.0 x16",
    bandwidth_Bps=53e9,  # [VP] H100 SXM5 node host-to-device 54.8 GB/s
    peak_bandwidth_Bps=63.0e9,  # [PCIE] 32 GT/s x 16 lanes x 128/130 / 8 bit = 63.0 GB/s
    # estimate: 45 % of pinned, between the measured Gen3 (37 %) and Gen4 (49 %) ratios of [GI]
    pageable_bandwidth_Bps=24e9,
    latency_s=2.5e-6,  # as PCIe 4.0 ([OXIDE]): the fixed cost is the copy engine's, not the lanes
    duplex=True,  # PCIe is full duplex: one stream per direction
    kind="pcie",
    write_payload_B=256,  # [NEUG] servers configure a 256 B max payload size
    read_completion_B=128,  # [NEUG] 64 or 128 B; 128 B fits the Gen4 H2D/D2H ratio (module docstring)
)

NVLINK2 = LinkSpec(
    id="nvlink2",
    name="NVLink 2 (V100 SXM2, 6 links)",
    # estimate: 82 % of the 150 GB/s peak, the share [GI] measures for NVLink 3 (246.6 of 300 GB/s)
    bandwidth_Bps=123e9,
    peak_bandwidth_Bps=150e9,  # [WP-V100] 6 links x 25 GB/s per direction (300 GB/s both ways)
    pageable_bandwidth_Bps=55e9,  # estimate: 45 % of pinned as for PCIe (host<->device use only)
    latency_s=3e-6,  # estimate: as NVLink 3; a small P2P copy is driver-dominated
    duplex=True,  # NVLink sub-links are unidirectional pairs: both directions at full speed
    kind="nvlink",
)

NVLINK3 = LinkSpec(
    id="nvlink3",
    name="NVLink 3 (A100 SXM4, 12 links)",
    bandwidth_Bps=240e9,  # [GI] DGX-A100 NVLink P2P average 229.6 GiB/s = 246.6 GB/s per direction
    peak_bandwidth_Bps=300e9,  # [WP-A100] 12 links x 25 GB/s per direction (600 GB/s both ways)
    pageable_bandwidth_Bps=108e9,  # estimate: 45 % of pinned as for PCIe (host<->device use only)
    latency_s=3e-6,  # estimate: ~2-3 us for a small P2P cudaMemcpy over NVLink (driver-dominated)
    duplex=True,  # NVLink sub-links are unidirectional pairs: both directions at full speed
    kind="nvlink",
)

NVLINK4 = LinkSpec(
    id="nvlink4",
    name="NVLink 4 (H100 SXM5, 18 links)",
    bandwidth_Bps=375e9,  # [NCCL] HGX H100 p2pBandwidthLatencyTest: 380 GB/s unidirectional
    peak_bandwidth_Bps=450e9,  # [WP-H100] 18 links x 25 GB/s per direction (900 GB/s both ways)
    pageable_bandwidth_Bps=170e9,  # estimate: 45 % of pinned as for PCIe (host<->device use only)
    latency_s=3e-6,  # estimate: ~2-3 us for a small P2P cudaMemcpy over NVLink (driver-dominated)
    duplex=True,  # NVLink sub-links are unidirectional pairs: both directions at full speed
    kind="nvlink",
)

NVLINK5 = LinkSpec(
    id="nvlink5",
    name="NVLink 5 (B200, 18 links)",
    # [AZ-GB200] nccl-tests all_reduce_perf -g 4 with NCCL_ALGO=Ring on 4 GB200, NCCL 2.25.1: the
    # ring's bus bandwidth plateaus at 679.6 GB/s (8 GiB; 646.9 at 1 GiB), 76 % of the 900 GB/s
    # peak (it replaces an estimate of 750 GB/s: 83 %, NVLink 4's share)
    bandwidth_Bps=680e9,
    peak_bandwidth_Bps=900e9,  # [WP-B200] 18 links x 50 GB/s per direction (1.8 TB/s both ways)
    pageable_bandwidth_Bps=340e9,  # estimate: 45 % of pinned as for PCIe (host<->device use only)
    latency_s=3e-6,  # estimate: as NVLink 4; a small P2P copy is driver-dominated
    duplex=True,  # NVLink sub-links are unidirectional pairs: both directions at full speed
    kind="nvlink",
)

# The host<->GPU link of a Grace Blackwell superchip: NVLink physically, but in parsim's terms a host
# link (kind "pcie": copies to and from the host take it; GPUs talk over their own NVLink 5)
NVLINK_C2C = LinkSpec(
    id="nvlink-c2c",
    name="NVLink-C2C (Grace to Blackwell, host link of a GB200 superchip)",
    bandwidth_Bps=200e9,  # [AZ-GB200] nvbandwidth host to device 201 GB/s, device to host 193 GB/s
    peak_bandwidth_Bps=450e9,  # [WP-GB200] 900 GB/s both ways = 450 GB/s per direction
    pageable_bandwidth_Bps=90e9,  # estimate: 45 % of pinned as for PCIe
    latency_s=2.5e-6,  # estimate: as PCIe: the copy engine's fixed cost, not the wire's
    duplex=True,  # [WP-GB200] both directions at once
    kind="pcie",
)

LINK_PRESETS: dict[str, LinkSpec] = {
    link.id: link
    for link in (PCIE3_X16, PCIE4_X16, PCIE5_X16, NVLINK2, NVLINK3, NVLINK4, NVLINK5, NVLINK_C2C)
}
"""Link presets by id."""
