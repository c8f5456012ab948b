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
- [NDMI300X] Microsoft Azure documentation, "ND MI300X v5 sizes series": 8x AMD Instinct MI300X joined
  by Infinity Fabric (fully connected), 2x Xeon Platinum 8480C, 8x 400 Gb/s NDR InfiniBand (one per GPU).
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

MI300X_NODE = ClusterSpec(
    id="mi300x-node",
    name="AMD MI300X nodes (8x MI300X, Infinity Fabric mesh, 8x NDR InfiniBand)",
    device="mi300x",  # [NDMI300X]
    gpus_per_node=8,
    fabric="infinity-fabric-mi300x",  # [NDMI300X] every GPU has a link to each of its 7 peers
    host="xeon-8480",  # [NDMI300X] 2x Xeon Platinum 8480C
    network=NetworkSpec(IB_NDR, nics_per_node=8),  # [NDMI300X] 8x 400 Gb/s InfiniBand
)

CLUSTER_PRESETS: dict[str, ClusterSpec] = {
    c.id: c for c in (DGX_A100, DGX_H100, PCIE_H100_2NIC, OCI_A100_ROCE, V100_1EDR, AWS_P3_25G, MI300X_NODE)
}
"""Cluster presets by id."""

CLUSTER_SOURCES: dict[str, str] = {
    "mi300x-node": "Azure ND MI300X v5 documentation (8x MI300X, Xeon 8480C, 8x NDR InfiniBand)",
}
"""Where a cluster preset's parts come from, in one line (others: this module's citations)."""
