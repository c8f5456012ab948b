"""NCCL's protocols and algorithms, and the choice its tuner makes between them.

A collective's time is a fixed start-up cost plus the bytes over a rate, and NCCL has three ways
(protocols) of moving the bytes, each trading one for the other, like a courier choosing between a
motorbike (quick to leave, carries little), a van and a lorry (slow to load, carries everything):

- **LL** (low latency): 8-byte stores, 4 bytes of data beside a 4-byte flag the receiver polls, so
  no separate synchronisation: the lowest start-up cost, half the link's bandwidth (and no more than
  what NCCL's tuner allows one GPU generation to reach with it, ``LL_MAX_BUSBW_BPS``);
- **LL128**: 128-byte lines of which 120 bytes are data (NCCL models 92 % of the link): nearly
  full bandwidth at a low start-up cost, but only over NVLink (NCCL enables it by default only
  where it has been validated);
- **Simple**: plain stores and a memory fence per chunk: the whole bandwidth, the highest
  per-step cost.

Algorithms: a **ring** (``2(n-1)`` steps for an all-reduce), a **tree** (a chain inside each node,
a double binary tree across nodes: ``log2(nodes)`` steps across), and **NVLS** (NVLink SHARP: the
third-generation NVSwitch of H100/H200/B200 systems reduces in the switch, so each GPU sends its
buffer once and receives the result once; Simple protocol only).

``tuned`` prices every (algorithm, protocol) pair that can run and takes the fastest, as NCCL's
tuner does from its own cost model (``ncclTopoTuneModel`` and ``ncclTopoGetAlgoTime``). The
latency constants are NCCL's own; the bandwidths are the link's effective rate in parsim's
hardware presets times each protocol's share.

Sources:

- [TUNE] NVIDIA/nccl@5067397c2676d5aed50042fc39e5c8ee96eb0027 src/graph/tuning.cc,
  ``ncclTunerConstantsDefaults``: base latencies (us) Ring LL/LL128/Simple 6.6/14.0/8.4, Tree
  6.8/14.0/8.4, NVLS 0; per-hop latencies (us) NVLink Ring 0.6/1.9/3.4, Tree 0.6/1.25/4.0, NVLS
  Simple 25; PCI Ring 1.0/2.5/5.7, Tree 1.0/1.9/4.0; network Ring 2.7/4.0/14.0, Tree 5.0/8.5/14,
  NVLS 18; ``llMaxBws`` one node Volta 39, Ampere 87.7, Hopper 141, Blackwell 282 GB/s; Ring LL
  ``busBw * .5``, LL128 ``busBw * 0.92``; NVLS only with the Simple protocol; ``nvlsEfficiency``
  Hopper 0.85, Blackwell 0.74.
- [NVLS-H] NVIDIA/exemplar-performance@b4ac983a38b181164a8c0f3a8ed6400817699726
  microbenchmarks/nccl/README.md (8x H100 DGX, NCCL's own choice) and
  Azure/AI-benchmarking-guide@7f20e5fa3b2f9a46d8404af1f6fb14b049d6d5cc
  Azure_Results/ND_H200_v5_results.md (8x H200, NVLS): both plateau at 480 GB/s bus bandwidth,
  an algorithm bandwidth of 274 GB/s = 0.61 of NVLink 4's 450 GB/s per direction.
- [NVLS-N] NVIDIA/nccl issue #1455 (8x H100 SXM, NCCL_ALGO=NVLS ./all_reduce_perf -b 2G -e 4G):
  "Busbw remains about 365-370 GBps when gpus from 2 to 4 ... increase from 370 to 420, 440, 460,
  and 480 GBps when gpus increase from 4 to 5, 6, 7, and 8".
- [ND-A100] Azure/AI-benchmarking-guide@3bb66cacc25632d8ece36bc1d5128c5ea886a60b
  Azure_Results/ND_A100_v4_results.md: 8x A100-SXM4-80GB (NVSwitch), NCCL 2.18.5, all-reduce
  '| 1M | 36.22 |' GB/s bus bandwidth.
- [NT-123] NVIDIA/nccl-tests issue #123 ("Understanding the latency of NCCL", DGX-A100,
  NCCL_ALGO=Ring NCCL_MAX_NCHANNELS=1 all_reduce_perf -b 8 -e 128): actual time 10, 13.76, 16.88,
  20.8, 25.2, 29.5, 33.7 us for 2 to 8 GPUs.
- [SB] microsoft/superbenchmark@ae2ccdf5fd9484cb7ba5f7a11f7000481f9b6123
  tests/benchmarks/micro_benchmarks/test_cuda_nccl_bw_performance.py: all_reduce_perf -g 8 on 8x
  A100-SXM4-40GB, '8 2 float sum 34.66 ... 34.84' (in-place time, us).
- [P2P-OFF] Anthony-Hoo/Anthony-Hoo.github.io@37e805e8e56f839f6557756d76503d45af6ab47e
  posts/AutoDL_Multi-GPU_Interconnection_Test.md: two RTX 2080 Ti without peer access,
  p2pBandwidthLatencyTest "Bidirectional P2P=Disabled" 6.10 GB/s in all against 12.2 / 13.2 GB/s
  pinned host copies: a copy staged through host memory crosses PCIe twice, so both directions at
  once share half the link; nccl-tests all_reduce_perf -g 2 reaches 4.00 GB/s bus bandwidth from
  4 MiB to 1 GiB ('1073741824 ... 268461 4.00 4.00').
- [KALAVAI] kalavai-net/kalavai-client@24922d47bf823d763b4edb1e7ee032d119463864 scripts/README.md:
  2 and 4 RTX 4090 without peer access, all_reduce_perf 2.5-3.9 GB/s bus bandwidth.
- [ND-MI300X] samuel-bohman/AI-benchmarking-guide@3de0c294fd1059a91a2c158712c4a078619d73e8
  Azure_Results/ND_MI300X_v5_results.md (a fork of Azure/AI-benchmarking-guide): 8x MI300X, RCCL
  2.22.3, rccl-tests all-reduce in-place bus bandwidth '| 16K | 0.59 |', '| 32K | 1.13 |',
  '| 65K | 2.22 |', '| 2M | 43.41 |', '| 4M | 82.53 |' (GB/s).
- [CHLC] blog post "RTX4090 GPUDirect P2P Unlocked!" (https://blog.chlc.cc/p/rtx4090-gpudirect-p2p-unlocked,
  2025-02-07): 8x RTX 4090 on the root ports of 2x EPYC 7542 (every pair SYS), nccl-tests
  all_reduce_perf -g 8 before and after tinygrad's peer-access driver; p2pBandwidthLatencyTest with
  peer access: bidirectional 49.9-50.7 GB/s between GPUs of one socket, 38.9-41.9 between sockets;
  with the stock driver (no peer access): bidirectional 20.0-21.7 GB/s, all_reduce_perf 14.47-14.98
  GB/s bus bandwidth from 32 to 128 MiB.
- [RCCL] ROCm/rccl@0cbce2a7571c907554199fad7e905f16ec0a565c (RCCL 2.21.5 develop, the version of
  ROCm 6.2/6.3's rccl-tests runs): src/graph/tuning.cc ``baseLat`` Ring/Tree LL/LL128/Simple
  12/12/17 us; ``tuning_model_5`` (src/graph/rome_models.cc ``rome_model_79``: 8 GPUs with 7
  Infinity Fabric links each, every GPU to every other: an MI300X node, ``tuning=5``) per-hop
  latencies over the fabric Tree 0.9/-/2.3, Ring 0.8/-/2.1 us, and ``bwRatio`` for one or two nodes
  Tree 0.06/0/0.11, Ring 0.08/0/1.00 (more nodes: Tree Simple 0.59); LL128 runs on gfx90a only
  (``ll128Enabled``), and Tree Simple is skipped inside one gfx94x node.
- [OCI-A2A] oracle-quickstart/oci-gpu-quickstarts@2631bee55a3a373b013bd62a0e56ce70d921ff3e
  nvidia/GB300/README-GB300.md, NCCL 2.28.7, alltoall_perf out-of-place times over NVLink 5 from 64
  MiB to 16 GiB: one tray (4 GPUs) 121.3, 218.9, 410.1, 787.1, 1454.3, 2622.9, 5183.9, 10308, 20527
  us and two trays of a rack (8 GPUs) 130.1, 227.7, 418.2, 796.3, 1490.4, 2989.6, 5612.2, 11059,
  21943 us.
"""

from __future__ import annotations

import math

import attrs

from parsim.base.errors import ParsimError
from parsim.hardware.specs import LinkSpec

PROTOCOLS = ("auto", "ll", "ll128", "simple")
"""What ``protocol=`` may say (``auto``: NCCL's tuner chooses)."""
ALGORITHMS = ("auto", "ring", "tree", "nvls")
"""What ``algorithm=`` may say (``auto``: NCCL's tuner chooses)."""
TRANSPORTS = ("p2p", "host")
"""How a node's GPUs reach each other: peer-to-peer (NVLink, or PCIe through a switch), or staged
through host memory when peer access is off (consumer GPUs, some virtual machines)."""

US = 1e-6
BASE_LATENCY_S = {  # [TUNE] baseLatencies
    ("ring", "ll"): 6.6 * US,
    ("ring", "ll128"): 14.0 * US,
    ("ring", "simple"): 8.4 * US,
    ("tree", "ll"): 6.8 * US,
    ("tree", "ll128"): 14.0 * US,
    ("tree", "simple"): 8.4 * US,
    ("nvls", "simple"): 0.0,
}
HOP_LATENCY_S = {  # [TUNE] hwLatencies: per step, by what the step crosses
    "nvlink": {
        ("ring", "ll"): 0.6 * US,
        ("ring", "ll128"): 1.9 * US,
        ("ring", "simple"): 3.4 * US,
        ("tree", "ll"): 0.6 * US,
        ("tree", "ll128"): 1.25 * US,
        ("tree", "simple"): 4.0 * US,
        ("nvls", "simple"): 25.0 * US,
    },
    "pcie": {
        ("ring", "ll"): 1.0 * US,
        ("ring", "ll128"): 2.5 * US,
        ("ring", "simple"): 5.7 * US,
        ("tree", "ll"): 1.0 * US,
        ("tree", "ll128"): 1.9 * US,
        ("tree", "simple"): 4.0 * US,
    },
    "net": {
        ("ring", "ll"): 2.7 * US,
        ("ring", "ll128"): 4.0 * US,
        ("ring", "simple"): 14.0 * US,
        ("tree", "ll"): 5.0 * US,
        ("tree", "ll128"): 8.5 * US,
        ("tree", "simple"): 14.0 * US,
        ("nvls", "simple"): 18.0 * US,
    },
}
HOP_LATENCY_S["host"] = {key: 2.0 * value for key, value in HOP_LATENCY_S["pcie"].items()}
"""A step staged through host memory (peer access off) crosses PCIe twice, down to the host and up to
the peer: twice NCCL's PCIe step ([KALAVAI]: 10.36 us for 8 bytes on 2 RTX 4090, 6.6 + 2 x 1.9;
19.54 us on 4, 6.6 + 6 x 2.2)."""
PROTOCOL_SHARE = {"ll": 0.5, "ll128": 0.92, "simple": 1.0}
"""Of the link's bandwidth, what each protocol carries ([TUNE]: Ring LL ``.5``, LL128 ``0.92``)."""
LL_MAX_BUSBW_BPS = {"nvlink2": 39e9, "nvlink3": 87.7e9, "nvlink4": 141e9, "nvlink5": 282e9}
"""[TUNE] ``llMaxBws`` for one node, by the NVLink generation (Volta, Ampere, Hopper, Blackwell)."""
NVLS_EFFICIENCY = {"nvlink4": 0.61, "nvlink5": 0.61 * 0.74 / 0.85}
"""NVLS algorithm bandwidth over the NVLink's peak per direction: Hopper fitted once on [NVLS-H]'s
plateau (274 / 450 GB/s); Blackwell an estimate: Hopper's times the ratio of NCCL's own
``nvlsEfficiency`` (0.74 / 0.85), no public NVLS measurement on B200 being at hand."""
NVLINK_HOP_EXTRA_S = {"nvlink3": 1.375 * US}
"""A step over NVLink on an A100 board (NVLink 3, second-generation NVSwitch) takes 1.375 us more
than NCCL's constant, whatever the protocol (the switch's longer round trip), fitted once for the
Ampere generation on [NT-123]: one channel, Ring, 8-128 bytes on a DGX A100 from 2 to 8 GPUs takes
10.0, 13.76, 16.88, 20.8, 25.2, 29.5, 33.7 us, 1.975 us per step (slope over 2 to 14 steps) on a
6.05 us base, against NCCL's 0.6 us (LL) and 6.6 us. The other A100 runs agree: SuperBench's
8 bytes on 8 GPUs, 34.84 us ([SB]: 2.02 us per step), Azure's 1 MiB ([ND-A100]: 1.65 us per step
once LL's 87.7 GB/s is paid). NCCL's constants hold on Hopper ([NVLS-H]'s 8 H100: 13.0 us for
8 bytes, 15.0 priced) and are kept for the other generations."""
NVLS_START_S = {"nvlink4": 30.5 * US}
"""NVLS' fixed cost on Hopper's third-generation NVSwitch, fitted once on [NVLS-H]'s forced-NVLS
H200 table below its bandwidth regime: 64 KiB, 256 KiB and 1 MiB take 30.8, 31.1 and 34.7 us, a
fixed 30.6, 30.2 and 30.8 us once the bytes are paid (NCCL's tuner constant says 25 us: the
multicast barrier and the switch's reduction round trip cost more than the tuner assumes). Other
generations keep NCCL's 25 us (no small forced-NVLS measurement at hand)."""
A2A_START_S = {"nvlink5": 38.0 * US}
A2A_BUSBW_SHARE = {"nvlink5": 627.5e9 / 680e9}
A2A_FITTED_FROM_B = 64 * 2**20
"""NCCL's all-to-all (a grouped send and receive to every peer, p2p channels rather than a ring)
over NVLink 5: a fixed start and a bus bandwidth below the ring's, fitted once on [OCI-A2A]'s 18
times (4 and 8 GPUs, 64 MiB to 16 GiB): 41 us in all (38 beyond the link's 3 us latency) and
627.5 GB/s, 0.923 of the ring's 680 GB/s (mean error 4.5 %, at most 13 % at 512 MiB on 4 GPUs),
where a transfer at the ring's rate alone has 128 MiB 29 % fast. Below the fitted range
(``A2A_FITTED_FROM_B``) the start shrinks in proportion to the buffer, to nothing: [OCI-A2A]'s
512 KiB to 32 MiB take 14.5 to 78 us, a cost of their own this does not price (a decode step's
exchanges of a few KiB keep the link's latency, as before). Other links keep the ring's rate and
the link's latency (no all-to-all table at hand); kernels that write their peers' buffers
themselves (DeepEP, HybridEP) pay neither."""
NVLS_MIN_GPUS = 4
"""NVLS needs an NVSwitch: HGX/DGX boards (8 GPUs) and NVL racks; a bridged pair has none."""
NVLS_MIN_RANKS = 5
"""[NVLS-N] on 8 H100 with NVLS forced: bus bandwidth stays at the ring's 365-370 GB/s for 2 to 4
GPUs and rises to 420, 440, 460, 480 GB/s for 5 to 8: NVLS pays off from 5 GPUs of a group."""


@attrs.frozen
class Choice:
    """One (algorithm, protocol) priced: ``seconds`` = ``latency_s`` + ``bandwidth_s``."""

    algorithm: str
    protocol: str
    latency_s: float
    bandwidth_s: float

    @property
    def seconds(self) -> float:
        return self.latency_s + self.bandwidth_s


def check(algorithm: str, protocol: str, transport: str = "p2p") -> None:
    """Refuse an unknown algorithm, protocol or transport, and NVLS with another protocol.

    Raises:
        ParsimError: naming the field, what it may be and the value.
    """
    for field, value, allowed in (
        ("algorithm", algorithm, ALGORITHMS),
        ("protocol", protocol, PROTOCOLS),
        ("transport", transport, TRANSPORTS),
    ):
        if value not in allowed:
            raise ParsimError(f"'{field}' must be one of {', '.join(allowed)}: {value!r}")
    if algorithm == "nvls" and protocol not in ("auto", "simple"):
        raise ParsimError(
            f"'protocol' must be simple or auto with algorithm nvls (NCCL runs NVLS on Simple): {protocol!r}"
        )


RCCL = "rccl"
"""The hop kind of AMD's Infinity Fabric: RCCL's tuner has its own constants ([RCCL])."""
RCCL_BASE_LATENCY_S = {  # [RCCL] baseLat
    ("ring", "ll"): 12.0 * US,
    ("ring", "simple"): 17.0 * US,
    ("tree", "ll"): 12.0 * US,
    ("tree", "simple"): 17.0 * US,
}
RCCL_HOP_LATENCY_S = {  # [RCCL] tuning_model_5 hwLat over the Infinity Fabric (RCCL's NVLINK row)
    ("ring", "ll"): 0.8 * US,
    ("ring", "simple"): 2.1 * US,
    ("tree", "ll"): 0.9 * US,
    ("tree", "simple"): 2.3 * US,
}
RCCL_HOP_EXTRA_S: dict[str, float] = {}
"""What a step over an Infinity Fabric generation adds to RCCL's tuner constant, where measured
and safe to apply: nothing yet. [ND-MI300X]'s small rccl-tests all-reduces (16, 32, 64 KiB on 8
GPUs: 48.6, 50.8, 51.7 us; 2-4 MiB: 84.5, 88.9 us) imply 1.75 us more per step than RCCL's table
(47.7 us for 8 bytes, not 23.2), which takes the MI300X nccl-tests rows from +57 / +20 % to +7 / -5 %
at 1 and 8 MiB; but the TP-8 decode rows of vLLM on ROCm (llm-decode) price their per-layer
all-reduces with the same rule and would go from ~6 % to -32 %: vLLM runs its own custom
all-reduce for small messages, not RCCL. Apply it once the engine's all-reduce is its own
mechanism (issue 26, item 1)."""
RCCL_SHARE = {  # [RCCL] tuning_model_5 bwRatio: one or two nodes, then more
    ("ring", "ll"): (0.08, 0.08),
    ("ring", "simple"): (1.0, 1.0),
    ("tree", "ll"): (0.06, 0.06),
    ("tree", "simple"): (0.11, 0.59),
}
"""What RCCL's tuner allows each (algorithm, protocol) of the fabric's bandwidth: LL moves 8 % of
it on MI300X (RCCL does not cap LL at a rate as NCCL does). The steps between nodes keep NCCL's
network latencies: RCCL's own for this model (e.g. 320 us per ring Simple step) steer its tuner
toward the tree rather than time a step."""


def share(link: LinkSpec, algorithm: str, protocol: str, nodes: int = 1) -> float:
    """Of a level's bandwidth, what ``protocol`` carries on ``algorithm``: NCCL's
    ``PROTOCOL_SHARE``, or RCCL's ``bwRatio`` over Infinity Fabric."""
    if link.kind == "xgmi":
        return RCCL_SHARE[(algorithm, protocol)][0 if nodes <= 2 else 1]
    return PROTOCOL_SHARE[protocol]


def runs(link: LinkSpec, algorithm: str, protocol: str, nodes: int) -> bool:
    """Whether the library runs ``algorithm`` on ``protocol`` here: RCCL skips the tree on Simple
    inside one MI300X node ([RCCL])."""
    return not (link.kind == "xgmi" and algorithm == "tree" and protocol == "simple" and nodes == 1)


def hop_kind(link: LinkSpec) -> str:
    """Which of NCCL's latency rows a step inside a node pays: NVLink-class peer links, PCIe, or
    ``RCCL`` for Infinity Fabric."""
    if link.kind == "xgmi":
        return RCCL
    return "nvlink" if link.is_peer else "pcie"


def protocols_on(link: LinkSpec, transport: str = "p2p") -> tuple[str, ...]:
    """The protocols NCCL enables by default on ``link``: LL128 over NVLink only ([TUNE]); RCCL
    over Infinity Fabric runs LL and Simple (LL128 on gfx90a only, [RCCL])."""
    if link.kind == "xgmi":
        return ("ll", "simple")
    return ("ll", "ll128", "simple") if link.kind == "nvlink" and transport == "p2p" else ("ll", "simple")


def protocol_bandwidth_Bps(
    link_Bps: float, protocol: str, link: LinkSpec, algorithm: str = "ring", nodes: int = 1
) -> float:
    """What ``protocol`` carries of a level whose bandwidth is ``link_Bps`` (``share``), LL capped
    as NCCL caps it for the GPU generation the NVLink belongs to."""
    rate = link_Bps * share(link, algorithm, protocol, nodes)
    if protocol == "ll" and link.id in LL_MAX_BUSBW_BPS:
        rate = min(rate, LL_MAX_BUSBW_BPS[link.id])
    return rate


CROSS_SOCKET_HOP_EXTRA_S = 1.4 * US
"""A ring step between GPUs on PCIe peer-to-peer takes 1.4 us more than NCCL's PCIe constant when
the ring crosses the CPUs' socket link (every step waits for its slowest hop), fitted once for a
two-socket EPYC platform on [CHLC]'s eight RTX 4090 with peer access on: 8 bytes to 4 KiB take
38.1-42.5 us, 40.3 in the middle of that range, where NCCL's Ring/LL says 6.6 + 14 x 1.0 = 20.6;
the same box's p2pBandwidthLatencyTest times a write to a GPU of the other socket at 1.6-1.7 us,
to one of the same socket at 1.2."""
SHM_TRANSPORT_BPS = 4.0e9
"""What NCCL's SHM transport carries per GPU when peer access is off on a box whose staged copy rate
has not been measured, fitted once on [P2P-OFF]'s two RTX 2080 Ti on PCIe 3.0 (all-reduce bus
bandwidth 4.00 GB/s from 4 MiB to 1 GiB); two RTX 4090 on PCIe 4.0 in containers reach 3.5-3.9
GB/s ([KALAVAI])."""
SHM_SHARE_OF_STAGED = 0.68
"""Where the box's own p2pBandwidthLatencyTest with peer access off has been run, NCCL's SHM
transport moves 0.68 of its bidirectional figure per GPU and direction: the driver's staged copy
bounces both directions through host buffers, NCCL's ring pipelines each GPU's writes to host
memory (up its link) and its neighbour's reads (down the neighbour's link). Fitted once on two
boxes: [P2P-OFF]'s 2080 Ti pair, 4.00 of 6.10 GB/s (0.66), and [CHLC]'s eight RTX 4090 on two
EPYC sockets with the stock driver, 14.5-15.0 of 21.0 GB/s (0.69-0.71)."""


def staged_Bps(link: LinkSpec, sharing: int = 1, measured_Bps: float = 0.0) -> float:
    """A GPU's rate to its ring neighbour through host memory when peer access is off: NCCL's SHM
    share of the box's measured staged copy rate (``measured_Bps``, bidirectional), else
    ``SHM_TRANSPORT_BPS``, and never more than the GPU's link carries one way (each GPU writes its
    sends up its own link and reads its receives down it); the ``sharing`` GPUs of the group behind
    one PCIe switch share its upstream port, which all their host traffic crosses ([KALAVAI]: two
    RTX 4090 behind one switch reach 2.24 GB/s, on two root ports 3.87)."""
    rate = SHM_SHARE_OF_STAGED * measured_Bps if measured_Bps > 0 else SHM_TRANSPORT_BPS
    return min(link.bandwidth_Bps, rate) / max(sharing, 1)


def all_to_all_start_s(link: LinkSpec, nbytes: float) -> float:
    """NCCL's fixed cost of an all-to-all of ``nbytes`` over ``link`` beyond its latency
    (``A2A_START_S``; in proportion below ``A2A_FITTED_FROM_B``)."""
    return A2A_START_S.get(link.id, 0.0) * min(1.0, nbytes / A2A_FITTED_FROM_B)


def all_to_all_share(link: LinkSpec) -> float:
    """NCCL's all-to-all bus bandwidth over ``link`` as a share of the ring's (``A2A_BUSBW_SHARE``)."""
    return A2A_BUSBW_SHARE.get(link.id, 1.0)


def nvls_available(link: LinkSpec, gpus_per_node: int, ranks_per_node: int) -> bool:
    """NVLS runs where the node's GPUs hang off third-generation NVSwitches (NVLink 4 and later,
    ``NVLS_MIN_GPUS`` or more on the board) and the group has ``NVLS_MIN_RANKS`` of them or more."""
    return link.id in NVLS_EFFICIENCY and gpus_per_node >= NVLS_MIN_GPUS and ranks_per_node >= NVLS_MIN_RANKS


def nvls_bandwidth_Bps(link: LinkSpec) -> float:
    """NVLS' algorithm bandwidth: each GPU sends its buffer to the switch once and reads the
    reduced result once, at ``NVLS_EFFICIENCY`` of the NVLink's peak per direction."""
    return NVLS_EFFICIENCY[link.id] * link.peak_bandwidth_Bps


def hop_latency_s(intra: str, algorithm: str, protocol: str, link_id: str = "") -> float:
    """One step inside a node: NCCL's constant for what it crosses, plus what the NVLink
    generation adds where that has been measured (``NVLINK_HOP_EXTRA_S``)."""
    extra = NVLINK_HOP_EXTRA_S.get(link_id, 0.0) if intra == "nvlink" else 0.0
    return HOP_LATENCY_S[intra][(algorithm, protocol)] + extra


def rccl_hop_latency_s(key: tuple[str, str], link_id: str = "") -> float:
    """One step over Infinity Fabric: RCCL's constant plus what the fabric adds where that has
    been measured (``RCCL_HOP_EXTRA_S``)."""
    return RCCL_HOP_LATENCY_S[key] + RCCL_HOP_EXTRA_S.get(link_id, 0.0)


def ring_latency_s(
    protocol: str,
    steps: int,
    inter_steps: int,
    intra: str,
    link_id: str = "",
) -> float:
    """[TUNE]: the ring's base latency plus one hop per step, the steps that cross nodes at the
    network's hop latency (``RCCL``: RCCL's base and per-hop constants inside a node, [RCCL])."""
    key = ("ring", protocol)
    if intra == RCCL:
        return (
            RCCL_BASE_LATENCY_S[key]
            + (steps - inter_steps) * rccl_hop_latency_s(key, link_id)
            + inter_steps * HOP_LATENCY_S["net"][key]
        )
    return (
        BASE_LATENCY_S[key]
        + (steps - inter_steps) * hop_latency_s(intra, "ring", protocol, link_id)
        + inter_steps * HOP_LATENCY_S["net"][key]
    )


def tree_latency_s(protocol: str, per_node: int, nodes: int, intra: str, link_id: str = "") -> float:
    """[TUNE]: up and down a chain of ``per_node`` GPUs and ``log2(nodes)`` tree levels."""
    key = ("tree", protocol)
    depth = math.ceil(math.log2(nodes)) if nodes > 1 else 0
    if intra == RCCL:  # [RCCL]: its base and chain hop, NCCL's network hop across nodes
        base, hop = RCCL_BASE_LATENCY_S[key], rccl_hop_latency_s(key, link_id)
    else:
        base, hop = BASE_LATENCY_S[key], hop_latency_s(intra, "tree", protocol, link_id)
    return base + 2 * ((per_node - 1) * hop + depth * HOP_LATENCY_S["net"][key])


def nvls_latency_s(nodes: int, link_id: str = "") -> float:
    """[TUNE]: NVLS pays one switch round (25 us; ``NVLS_START_S`` where measured) and, across
    nodes, one network hop."""
    key = ("nvls", "simple")
    start = NVLS_START_S.get(link_id, HOP_LATENCY_S["nvlink"][key])
    return start + (HOP_LATENCY_S["net"][key] if nodes > 1 else 0.0)


def fastest(choices: list[Choice]) -> Choice:
    """NCCL's tuner: the (algorithm, protocol) of least predicted time (the first on a tie)."""
    if not choices:
        raise ParsimError("no NCCL algorithm and protocol can run this collective here")
    return min(choices, key=lambda c: c.seconds)
