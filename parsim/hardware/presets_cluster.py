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
- [DGXH200] NVIDIA DGX H200 datasheet: 8x H200 141 GB, 4 NVSwitches, 8 single-port ConnectX-7
  400 Gb/s InfiniBand/Ethernet for the compute fabric, 2x Xeon Platinum 8480C.
- [DGXB200] NVIDIA DGX B200 datasheet: 8x B200 (1,440 GB), 2 NVSwitch chips, NVLink 5 1.8 TB/s per
  GPU (14.4 TB/s aggregate), 8 single-port ConnectX-7 400 Gb/s (4 OSFP ports), 2x Xeon Platinum 8570.
- [NVL72] NVIDIA GB200 NVL72 / DGX GB200 datasheets: 72 Blackwell GPUs and 36 Grace CPUs in one
  NVLink domain (130 TB/s, 1.8 TB/s per GPU through 9 NVLink switch trays); 72 single-port
  ConnectX-7 400 Gb/s InfiniBand for the compute fabric (one per GPU).
- [AZGB200] Microsoft Learn, ND GB200 v6 series: 4 Blackwell GPUs and 2 Grace CPUs per VM (one
  GB200 NVL72 compute tray), NVLink 5 between the GPUs, 4x 400 Gb/s NDR InfiniBand per VM.
- [AWSP4D] AWS EC2 P4 instance page: p4d.24xlarge = 8x A100 40GB, NVSwitch (600 GB/s), 4x 100 Gbps
  Elastic Fabric Adapter (400 Gbps), 2x Xeon 8275CL.
- [AWSP5] AWS EC2 P5 instance page: p5.48xlarge = 8x H100 80GB SXM, NVSwitch (900 GB/s), 3,200 Gbps
  of EFA (32 x 100 Gbps, second-generation EFA), 2x AMD EPYC 7R13.
- [EFA] AWS Elastic Fabric Adapter documentation: SRD transport (reliable, out-of-order, multipath)
  through libfabric; NCCL uses it through the aws-ofi-nccl plugin.
- [GCPA3] Google Cloud GPU machine types: A3 Mega (a3-megagpu-8g) = 8x H100 80GB, NVLink/NVSwitch,
  8x 200 Gbps GPU NICs (1,600 Gbps, GPUDirect-TCPXO) plus one host NIC; 2x Xeon Sapphire Rapids.
- [AZND] Microsoft Learn, ND H100 v5 series: 8x H100 SXM 80GB (NVLink 4), 8x 400 Gb/s NDR
  InfiniBand (one ConnectX-7 per GPU, 3.2 Tb/s per VM), 2x Xeon Platinum 8480C.
- [NDMI300X] Microsoft Azure documentation, "ND MI300X v5 sizes series": 8x AMD Instinct MI300X joined
  by Infinity Fabric (fully connected), 2x Xeon Platinum 8480C, 8x 400 Gb/s NDR InfiniBand (one per GPU).
- [V4] / [V5P] / [V5E] / [V6E] cloud.google.com/tpu/docs/v4, v5p, v5e, v6e: chips per host, torus
  dimensions, pod and cube sizes, the v5e hosts' 2 x 100 Gbps NICs, v5p's 50 Gbps of data center
  network per chip.
- [TINY] tinygrad/open-gpu-kernel-modules@1f40371d287b0e7079e972e7468c09e0a29e2768 README.md: a
  tinybox of 6x RTX 4090 on PCIe 4.0 (bus ids 0x01, 0x42, 0x81, 0x82, 0xc1, 0xc2), peer access
  through the patched driver's BAR1 P2P.
- [KALAVAI] kalavai-net/kalavai-client@24922d47bf823d763b4edb1e7ee032d119463864 scripts/README.md:
  2 and 4 RTX 4090 in one machine (docker and Kubernetes), nccl-tests with the stock driver (no
  peer access on GeForce: NCCL stages through host memory).
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

EFA_100G = NicSpec(
    id="efa-100g",
    name="AWS Elastic Fabric Adapter, 100 Gb/s (SRD)",
    peak_bandwidth_Bps=12.5e9,  # [ETH] 100 Gb/s of data per direction ([AWSP4D] [AWSP5] 100 Gbps adapters)
    # estimate: ~90 % of the line rate, as RoCE (roce-100g: 92 %) less SRD's larger headers
    bandwidth_Bps=11.25e9,
    # estimate: libfabric + SRD add ~10 us to a small message ([EFA]: no kernel bypass of the switch
    # hops' ordering, a user-space provider) on top of NCCL's proxy
    latency_s=15e-6,
)

ETH_200G_TCPXO = NicSpec(
    id="eth-200g-tcpxo",
    name="200 Gb/s Ethernet GPU NIC with GPUDirect-TCPXO (GCP A3 Mega)",
    peak_bandwidth_Bps=25e9,  # [ETH] 200 Gb/s of data per direction ([GCPA3] 200 Gbps per GPU NIC)
    # estimate: ~85 % of the line rate: TCP offloaded to the NIC, below RDMA's ~92-96 %
    bandwidth_Bps=21.25e9,
    latency_s=15e-6,  # estimate: as EFA; an offloaded TCP stack costs more per message than RDMA
)

NIC_PRESETS: dict[str, NicSpec] = {
    nic.id: nic for nic in (IB_EDR, IB_HDR, IB_NDR, ROCE_100G, ETH_25G, EFA_100G, ETH_200G_TCPXO)
}
"""NIC presets by id."""

DGX_A100 = ClusterSpec(
    id="dgx-a100",
    name="NVIDIA DGX A100 nodes (8x A100 80GB, NVSwitch, 8x HDR InfiniBand)",
    device="a100-80gb",  # [DGXA100]
    gpus_per_node=8,
    fabric="nvlink3",  # [DGXA100] 6 NVSwitches: every GPU reaches every other at full NVLink speed
    host="dual-epyc-7742",  # [DGXA100] 2x AMD EPYC 7742
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

# Current systems and rented clusters: the node and its NICs from each vendor's page; hosts only issue
# work, so a host the presets lack is stood in for by the nearest preset (said per cluster).

DGX_H200 = ClusterSpec(
    id="dgx-h200",
    name="NVIDIA DGX H200 nodes (8x H200, NVSwitch, 8x NDR InfiniBand)",
    device="h200",  # [DGXH200]
    gpus_per_node=8,
    fabric="nvlink4",  # [DGXH200] 4 NVSwitches, 900 GB/s per GPU
    host="xeon-8480",  # [DGXH200] 2x Xeon Platinum 8480C
    network=NetworkSpec(IB_NDR, nics_per_node=8, nodes_per_leaf=32),  # [DGXH200] [SPOD]
)

DGX_B200 = ClusterSpec(
    id="dgx-b200",
    name="NVIDIA DGX B200 nodes (8x B200, NVLink 5 NVSwitch, 8x NDR InfiniBand)",
    device="b200",  # [DGXB200]
    gpus_per_node=8,
    fabric="nvlink5",  # [DGXB200] NVLink 5 through 2 NVSwitch chips, 1.8 TB/s per GPU
    host="xeon-8480",  # [DGXB200] 2x Xeon Platinum 8570 (Emerald Rapids); stand-in: Sapphire Rapids
    network=NetworkSpec(IB_NDR, nics_per_node=8, nodes_per_leaf=32),  # [DGXB200] [SPOD]
)

GB200_NVL72 = ClusterSpec(
    id="gb200-nvl72",
    name="NVIDIA GB200 NVL72 racks (72 Blackwell GPUs in one NVLink 5 domain, 72x NDR InfiniBand)",
    device="gb200",  # [NVL72] 72 Blackwell GPUs of 36 GB200 superchips
    gpus_per_node=72,  # [NVL72] one NVLink domain of 72 GPUs: the rack is the node
    fabric="nvlink5",  # [NVL72] 1.8 TB/s per GPU to every other GPU of the rack through the switch trays
    host="grace-nvl72",  # [NVL72] the rack's 36 Grace CPUs as one host, over NVLink-C2C (gb200's link)
    gpus_per_switch=2,  # [NVL72] each Grace hosts 2 GPUs: no uplink shared wider than a superchip
    network=NetworkSpec(IB_NDR, nics_per_node=72, nodes_per_leaf=8),  # [NVL72] one 400G NIC per GPU
)

AZURE_ND_GB200_V6 = ClusterSpec(
    id="azure-nd-gb200-v6",
    name="Azure ND GB200 v6 VMs (4 GB200 GPUs, NVLink 5, 4x NDR InfiniBand)",
    device="gb200",  # [AZGB200]
    gpus_per_node=4,  # [AZGB200] one compute tray of an NVL72 rack per VM
    fabric="nvlink5",  # [AZGB200] NVLink 5 between the VM's GPUs
    host="grace-x2",  # [AZGB200] 2 Grace CPUs per VM
    network=NetworkSpec(IB_NDR, nics_per_node=4),  # [AZGB200] one 400 Gb/s NIC per GPU
)

AWS_P4D = ClusterSpec(
    id="aws-p4d",
    name="AWS p4d.24xlarge nodes (8x A100 40GB, NVSwitch, 4x 100 Gb/s EFA)",
    device="a100-40gb",  # [AWSP4D]
    gpus_per_node=8,
    fabric="nvlink3",  # [AWSP4D] NVSwitch, 600 GB/s per GPU
    host="xeon-e5-2630v3",  # [AWSP4D] 2x Xeon 8275CL; only issues work here (as dgx-a100)
    network=NetworkSpec(EFA_100G, nics_per_node=4),  # [AWSP4D] 400 Gbps of EFA
)

AWS_P5 = ClusterSpec(
    id="aws-p5",
    name="AWS p5.48xlarge nodes (8x H100 SXM, NVSwitch, 32x 100 Gb/s EFA)",
    device="h100-sxm",  # [AWSP5]
    gpus_per_node=8,
    fabric="nvlink4",  # [AWSP5] NVSwitch, 900 GB/s per GPU
    host="epyc-9654",  # [AWSP5] 2x AMD EPYC 7R13 (Milan); stand-in: the Genoa preset
    network=NetworkSpec(EFA_100G, nics_per_node=32),  # [AWSP5] 3,200 Gbps of EFA
)

GCP_A3 = ClusterSpec(
    id="gcp-a3",
    name="Google Cloud A3 Mega nodes (8x H100 SXM, NVSwitch, 8x 200 Gb/s GPUDirect-TCPXO)",
    device="h100-sxm",  # [GCPA3]
    gpus_per_node=8,
    fabric="nvlink4",  # [GCPA3] NVLink / NVSwitch
    host="xeon-8480",  # [GCPA3] 2x Sapphire Rapids
    network=NetworkSpec(ETH_200G_TCPXO, nics_per_node=8),  # [GCPA3] one 200 Gbps NIC per GPU
)

AZURE_ND_H100_V5 = ClusterSpec(
    id="azure-nd-h100-v5",
    name="Azure ND H100 v5 nodes (8x H100 SXM, NVSwitch, 8x NDR InfiniBand)",
    device="h100-sxm",  # [AZND]
    gpus_per_node=8,
    fabric="nvlink4",  # [AZND] NVLink 4
    host="xeon-8480",  # [AZND] 2x Xeon Platinum 8480C
    network=NetworkSpec(IB_NDR, nics_per_node=8),  # [AZND] one 400 Gb/s ConnectX-7 per GPU
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


# Consumer PCIe boxes (no NVLink): the GPUs reach each other through the CPU's root ports, or,
# with peer access off (GeForce drivers), through host memory (``p2p=false`` on a collective).
# Single machines: the network is a stand-in the collectives of one node never use.
def _rtx4090_box(
    gpus: int,
    per_switch: int,
    source: str,
    suffix: str = "",
    per_socket: int = 0,
    cross_Bps: float = 0.0,
    staged_Bps: float = 0.0,
) -> ClusterSpec:
    where = "each on its own root port" if per_switch == 1 else f"{per_switch} behind each PCIe switch"
    if per_socket:
        where += f" of {gpus // per_socket} sockets"
    return ClusterSpec(
        id=f"rtx4090-pcie-{gpus}x{suffix}",
        name=f"{gpus}x GeForce RTX 4090 on PCIe 4.0 x16, {where}, no NVLink ({source})",
        device="rtx-4090",
        gpus_per_node=gpus,
        fabric="pcie4-x16",  # [TINY] [KALAVAI] PCIe 4.0 x16 per GPU, no NVLink on AD102
        host="epyc-9654",  # estimate: stand-in host (it only issues work here)
        network=NetworkSpec(ETH_25G, nics_per_node=1),  # stand-in: one node only
        gpus_per_switch=per_switch,
        gpus_per_socket=per_socket,
        cross_socket_Bps=cross_Bps,
        staged_Bps=staged_Bps,
    )


# [KALAVAI]'s bus ids: 0x1a and 0xb2 (two root ports); 0x1a, 0x1b | 0x3d, 0x3e (pairs of adjacent
# buses: two GPUs behind each switch); [TINY]: 0x01, 0x42, 0x81, 0x82, 0xc1, 0xc2 on an EPYC's ports
RTX4090_PCIE = (
    _rtx4090_box(2, 1, "KALAVAI"),
    _rtx4090_box(2, 2, "KALAVAI", "-switch"),
    _rtx4090_box(4, 2, "KALAVAI"),
    _rtx4090_box(6, 1, "TINY"),
    # [CHLC]: 2x EPYC 7542, the GPUs on the root ports of NUMA nodes 0-3 and 4-7 (every pair SYS);
    # p2pBandwidthLatencyTest with peer access, bidirectional: 49.9-50.7 GB/s inside a socket (the
    # pcie4-x16 preset's 25 GB/s a direction), 38.9-41.9 between sockets, 41.1 on average: 20.55;
    # with the stock driver (peer access off), bidirectional 20.0-21.7 GB/s, 21.0 on average
    _rtx4090_box(8, 1, "CHLC", "-2socket", per_socket=4, cross_Bps=20.55e9, staged_Bps=21.0e9),
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
        DGX_H200,
        DGX_B200,
        GB200_NVL72,
        AZURE_ND_GB200_V6,
        AWS_P4D,
        AWS_P5,
        GCP_A3,
        AZURE_ND_H100_V5,
        MI300X_NODE,
        *RTX4090_PCIE,
        TPU_V4_POD,
        TPU_V5P_POD,
        TPU_V5E_POD,
        TPU_V6E_POD,
    )
}
"""Cluster presets by id."""
