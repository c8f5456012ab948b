"""Network cards and whole clusters: the NICs' figures and the nodes of common GPU systems.

A NIC's peak is its data rate after line encoding (InfiniBand 4x links, 64b/66b since FDR); its
effective bandwidth is what ``ib_write_bw`` (perftest) reaches with large messages; its latency
is a small message's one-way time plus the cost NCCL's network proxy adds per hop.

Sources, abbreviated in the comments:

- [IBTA] InfiniBand Architecture Specification vol. 2: EDR 25.78125 Gb/s, HDR 53.125 Gb/s (PAM4),
  NDR 106.25 Gb/s (PAM4) per lane, 4 lanes, 64b/66b: 100 / 200 / 400 Gb/s of data per direction.
- [ETH] IEEE 802.3by (25GBASE-R) and 802.3bj/cd (100GBASE-R): 25 and 100 Gb/s of data, 64b/66b.
- [DGXA100] NVIDIA DGX A100 User Guide, "Hardware overview": 8x A100 SXM4 80GB, 6 NVSwitches,
  8 single-port ConnectX-6 VPI HDR 200 Gb/s for the compute fabric, 2x AMD EPYC 7742.
- [DGXH100] NVIDIA DGX H100 User Guide, "Hardware overview": 8x H100 SXM5 80GB, 4 NVSwitches,
  8 single-port ConnectX-7 NDR 400 Gb/s (in 4 OSFP ports) for the compute fabric, 2x Xeon 8480C.
- [SPOD] NVIDIA DGX SuperPOD reference architectures (DGX A100: scalable unit of 20 nodes; DGX
  H100: 32 nodes), rail-optimised, non-blocking fat trees.
- [OCI] oracle-japan/ocitutorials@40114268892c1cbd63aec7c636818fe320ddf1c9
  content/hpc/benchmark/run-nccltests-ubuntu/index.md: BM.GPU4.8 nodes, 8x A100-SXM4-40GB, "cluster
  network (100Gbps x 16 / node)", RoCE v2.
- [DLPERF] Oneflow-Inc/DLPerf@c89430bac64f64caabb0445ff7eb80175641454c
  reports/dlperf_benchmark_test_report_v1.md: "4 Nodes with 8x Tesla V100-SXM2-16GB GPUs",
  "InfiniBand 100 Gb/sec (4X EDR)", one NIC (mlx5_0) per node.
- [AWSP3] aws-samples/deep-learning-models issue #2 and the EC2 instance-type page: p3.16xlarge =
  8x V100-SXM2-16GB joined by NVLink, 25 Gbps Ethernet (TCP, no RDMA).
- [V4] / [V5P] / [V5E] / [V6E] cloud.google.com/tpu/docs/v4, v5p, v5e, v6e: chips per host, torus
  dimensions, pod and cube sizes, the v5e hosts' 2 x 100 Gbps NICs, v5p's 50 Gbps of data center
  network per chip.
- [J23] Jouppi et al., ISCA 2023: six ICI links per TPU v4 chip.
- [PERFTEST] ib_write_bw results as cluster vendors publish them; see ``NIC_MEASURED`` in
  ``parsim/data/published.csv`` rows of class ``collective`` for how collectives reach them.
"""

from __future__ import annotations

from parsim.hardware.network import ClusterSpec, NetworkSpec, NicSpec

IB_EDR = NicSpec(
    id="ib-edr",
    name="InfiniBand EDR 100 Gb/s (ConnectX-5)",
    peak_bandwidth_Bps=12.5e9,  # [IBTA] 100 Gb/s of data per direction
    bandwidth_Bps=12.0e9,  # [PERFTEST] ib_write_bw ~96 % of the data rate
    latency_s=5e-6,  # NIC + one switch ~1 us; NCCL's network proxy per hop dominates
)

IB_HDR = NicSpec(
    id="ib-hdr",
    name="InfiniBand HDR 200 Gb/s (ConnectX-6)",
    peak_bandwidth_Bps=25e9,  # [IBTA] 200 Gb/s of data per direction
    bandwidth_Bps=24.0e9,  # [PERFTEST] ib_write_bw ~96 % of the data rate
    latency_s=5e-6,  # as EDR: the proxy, not the wire, sets a collective's per-hop cost
)

IB_NDR = NicSpec(
    id="ib-ndr",
    name="InfiniBand NDR 400 Gb/s (ConnectX-7)",
    peak_bandwidth_Bps=50e9,  # [IBTA] 400 Gb/s of data per direction
    bandwidth_Bps=48.0e9,  # [PERFTEST] ib_write_bw ~96 % of the data rate
    latency_s=5e-6,  # as EDR
)

ROCE_100G = NicSpec(
    id="roce-100g",
    name="RoCE v2 100 Gb/s Ethernet",
    peak_bandwidth_Bps=12.5e9,  # [ETH] 100 Gb/s of data per direction
    bandwidth_Bps=11.5e9,  # [PERFTEST] RDMA over Ethernet: ~92 % (larger headers than InfiniBand)
    latency_s=7e-6,  # Ethernet switches add a little more than InfiniBand's
)

ETH_25G = NicSpec(
    id="eth-25g",
    name="25 Gb/s Ethernet (TCP sockets)",
    peak_bandwidth_Bps=3.125e9,  # [ETH] 25 Gb/s of data per direction
    bandwidth_Bps=2.8e9,  # TCP/IP through the kernel reaches ~90 % of the line rate
    latency_s=25e-6,  # kernel sockets: tens of microseconds per message
)

NIC_PRESETS: dict[str, NicSpec] = {nic.id: nic for nic in (IB_EDR, IB_HDR, IB_NDR, ROCE_100G, ETH_25G)}
"""NIC presets by id."""

DGX_A100 = ClusterSpec(
    id="dgx-a100",
    name="NVIDIA DGX A100 nodes (8x A100 80GB, NVSwitch, 8x HDR InfiniBand)",
    device="a100-80gb",  # [DGXA100]
    gpus_per_node=8,
    fabric="nvlink3",  # [DGXA100] 6 NVSwitches: every GPU reaches every other at full NVLink speed
    # the presets have no EPYC 7742; the host only issues work here (as in the single-node rows)
    host="xeon-e5-2630v3",
    network=NetworkSpec(IB_HDR, nics_per_node=8, nodes_per_leaf=20),  # [DGXA100] [SPOD]
)

DGX_H100 = ClusterSpec(
    id="dgx-h100",
    name="NVIDIA DGX H100 nodes (8x H100 SXM, NVSwitch, 8x NDR InfiniBand)",
    device="h100-sxm",  # [DGXH100]
    gpus_per_node=8,
    fabric="nvlink4",  # [DGXH100] 4 NVSwitches
    host="xeon-8480",  # [DGXH100] 2x Xeon Platinum 8480C
    network=NetworkSpec(IB_NDR, nics_per_node=8, nodes_per_leaf=32),  # [DGXH100] [SPOD]
)

PCIE_H100_2NIC = ClusterSpec(
    id="pcie-h100-2nic",
    name="PCIe servers (8x H100 PCIe behind 2 PCIe switches, 2x NDR InfiniBand)",
    device="h100-pcie",
    gpus_per_node=8,
    fabric="pcie5-x16",  # GPUs talk peer-to-peer through their PCIe switches
    host="xeon-8480",
    network=NetworkSpec(IB_NDR, nics_per_node=2, nodes_per_leaf=32),
    gpus_per_switch=4,
)

OCI_A100_ROCE = ClusterSpec(
    id="oci-a100-roce",
    name="OCI BM.GPU4.8 nodes (8x A100 40GB, NVSwitch, 16x 100G RoCE)",
    device="a100-40gb",  # [OCI]
    gpus_per_node=8,
    fabric="nvlink3",
    host="xeon-e5-2630v3",  # only issues work here
    network=NetworkSpec(ROCE_100G, nics_per_node=16),  # [OCI]
)

V100_1EDR = ClusterSpec(
    id="v100-1edr",
    name="V100 SXM2 nodes (8x V100, NVLink 2, one EDR InfiniBand NIC)",
    device="v100-sxm2",  # [DLPERF]
    gpus_per_node=8,
    fabric="nvlink2",
    host="xeon-e5-2630v3",
    network=NetworkSpec(IB_EDR, nics_per_node=1),  # [DLPERF]
)

AWS_P3_25G = ClusterSpec(
    id="aws-p3-25g",
    name="AWS p3.16xlarge nodes (8x V100 SXM2 16GB, NVLink 2, 25 Gb/s Ethernet)",
    device="v100-sxm2",  # [AWSP3]
    gpus_per_node=8,
    fabric="nvlink2",
    host="xeon-e5-2630v3",
    network=NetworkSpec(ETH_25G, nics_per_node=1),  # [AWSP3]
)

# TPU pods: every chip of the slice is on the ICI torus (``torus_dims``), the NICs (Google's data
# center network) only join slices; ``nodes`` are hosts. The hosts' CPUs are not documented: the
# EPYC 9654 preset stands in (estimate), it only issues the jitted step.
TPU_V4_POD = ClusterSpec(
    id="tpu-v4-pod",
    name="Cloud TPU v4 slice (4 chips per host, 3D torus of ICI; 64 chips = one 4x4x4 cube)",
    device="tpu-v4",
    gpus_per_node=4,  # [V4] a v4 host drives 4 chips (2x2x1)
    fabric="ici-v4",  # [J23] six ICI links per chip
    host="epyc-9654",  # estimate: stand-in host
    # estimate: two 100 Gb/s NICs per host, as the v5e page documents for its hosts
    network=NetworkSpec(ROCE_100G, nics_per_node=2),
    nodes=16,  # [V4] a 4x4x4 cube, the unit the optical switches join into slices
    torus_dims=3,  # [V4] 3D torus
)

TPU_V5P_POD = ClusterSpec(
    id="tpu-v5p-pod",
    name="Cloud TPU v5p slice (4 chips per host, 3D torus of ICI; 64 chips = one 4x4x4 cube)",
    device="tpu-v5p",
    gpus_per_node=4,  # [V5P] 2x2x1: 4 chips per host
    fabric="ici-v5p",
    host="epyc-9654",  # estimate: stand-in host
    # [V5P] data center network 50 Gbps per chip: 200 Gb/s per host, taken as two 100 Gb/s NICs
    network=NetworkSpec(ROCE_100G, nics_per_node=2),
    nodes=16,  # [V5P] 4x4x4: 64 chips on 16 hosts
    torus_dims=3,  # [V5P] 3D torus
)

TPU_V5E_POD = ClusterSpec(
    id="tpu-v5e-pod",
    name="Cloud TPU v5e pod (8 chips per host, 16x16 2D torus of ICI)",
    device="tpu-v5e",
    gpus_per_node=8,  # [V5E] 8 chips per host
    fabric="ici-v5e",
    host="epyc-9654",  # estimate: stand-in host
    network=NetworkSpec(ROCE_100G, nics_per_node=2),  # [V5E] per-host NICs: 2 x 100 Gbps
    nodes=32,  # [V5E] 256 chips per pod
    torus_dims=2,  # [V5E] 2D torus
)

TPU_V6E_POD = ClusterSpec(
    id="tpu-v6e-pod",
    name="Cloud TPU v6e (Trillium) pod (8 chips per host, 16x16 2D torus of ICI)",
    device="tpu-v6e",
    gpus_per_node=8,  # [V6E] 8 chips per host
    fabric="ici-v6e",
    host="epyc-9654",  # estimate: stand-in host
    network=NetworkSpec(ROCE_100G, nics_per_node=2),  # estimate: as v5e's hosts (not documented)
    nodes=32,  # [V6E] 256 chips per pod
    torus_dims=2,  # [V6E] 2D torus
)

CLUSTER_PRESETS: dict[str, ClusterSpec] = {
    c.id: c
    for c in (
        DGX_A100,
        DGX_H100,
        PCIE_H100_2NIC,
        OCI_A100_ROCE,
        V100_1EDR,
        AWS_P3_25G,
        TPU_V4_POD,
        TPU_V5P_POD,
        TPU_V5E_POD,
        TPU_V6E_POD,
    )
}
"""Cluster presets by id."""
