"""Finding hardware by name: preset ids, hardware TOML paths, and whole systems.

``--device``, ``--host`` and ``--link`` accept a preset id or a path to a hardware TOML file
(anything ending in ``.toml``). An unknown id is answered with the closest ids, because
"h100" should lead to "h100-pcie, h100-sxm", not to a stack trace.
"""

from __future__ import annotations

import difflib
from typing import TypeVar

import attrs

from parsim.base.caching import cached
from parsim.base.errors import ParsimError
from parsim.hardware.network import ClusterSpec, torus_shape
from parsim.hardware.specs import LinkSpec, ProcessorSpec, SystemSpec
from parsim.hardware.tomlio import load_hardware

DEFAULT_HOST = "xeon-e5-2630v3"


@cached(maxsize=1)
def _processors() -> dict[str, ProcessorSpec]:
    # Imported on first use: the preset tables are the heaviest import of the package.
    from parsim.hardware.presets import PROCESSORS

    return PROCESSORS


@cached(maxsize=1)
def _links() -> dict[str, LinkSpec]:
    from parsim.hardware.presets import LINKS

    return LINKS


def _suggest(name: str, known: list[str]) -> str:
    """The ids that contain what was typed, then the closest spellings."""
    close = sorted(k for k in known if name and name in k)
    close += [k for k in difflib.get_close_matches(name, known, n=3, cutoff=0.5) if k not in close]
    return f"; closest: {', '.join(close[:4])}" if close else f"; known: {', '.join(sorted(known))}"


@cached(maxsize=1)
def _clusters() -> dict[str, ClusterSpec]:
    from parsim.hardware.presets_cluster import CLUSTER_PRESETS

    return CLUSTER_PRESETS


Spec = TypeVar("Spec", ProcessorSpec, LinkSpec, ClusterSpec)


def _resolve(
    value: object, cls: type[Spec], table: dict[str, Spec], field: str, noun: str, other: str
) -> Spec:
    """A spec of ``cls`` from a spec, a TOML path or a preset id in ``table``."""
    if isinstance(value, cls):
        return value
    value = str(value)
    if value.endswith(".toml"):  # a path (cheaper than pathlib: this runs on every prediction)
        loaded = load_hardware(value)
        if not isinstance(loaded, cls):
            raise ParsimError(f"'{field}': {value} describes a {_noun(loaded)}, not a {noun}")
        return loaded
    if value not in table:
        raise ParsimError(f"'{field}': unknown {noun} {value!r}{_suggest(value, list(table))}")
    return table[value]


def _noun(spec: object) -> str:
    return {ProcessorSpec: "processor", LinkSpec: "link", ClusterSpec: "cluster"}.get(type(spec), "spec")


def processor(value: str | ProcessorSpec, field: str = "device") -> ProcessorSpec:
    """A processor from a spec, a preset id or a TOML path."""
    return _resolve(value, ProcessorSpec, _processors(), field, "processor", "link")


def preset_link(name: str, field: str) -> LinkSpec:
    """A link a hardware spec names (``default_link``, ``peer_link``): a preset id only, never a
    file, so a spec read from anywhere cannot make parsim open a path."""
    table = _links()
    if name not in table:
        raise ParsimError(f"'{field}': unknown link preset{_suggest(name, list(table))}")
    return table[name]


def link(value: str | LinkSpec, field: str = "link") -> LinkSpec:
    """A link from a spec, a preset id or a TOML path."""
    return _resolve(value, LinkSpec, _links(), field, "link", "processor")


def system(
    device: str | ProcessorSpec,
    host: str | ProcessorSpec | None = None,
    link_: str | LinkSpec | None = None,
    gpus: int = 1,
    gpus_per_switch: int | None = None,
) -> SystemSpec:
    """Wire a system: a CPU ``device`` alone, or GPUs with their host and links.

    Args:
        device: the processor that runs the kernels.
        host: the host CPU (GPU systems only; defaults to ``xeon-e5-2630v3``).
        link_: a PCIe link between host and GPUs, or an NVLink between the GPUs (the host
            link then stays the GPU's usual PCIe link). Defaults to the GPU's usual link; several
            GPUs of a board with NVLink (``peer_link``: SXM boards) use it between them.
        gpus: number of identical GPUs.
        gpus_per_switch: GPUs sharing one PCIe switch uplink (default: up to 4, the common
            PCIe-switch topology of 8-GPU servers).
    """
    compute = processor(device, "device")
    if not compute.is_accelerator:
        if host is not None and processor(host, "host") != compute:
            raise ParsimError(
                f"'host' only applies with a GPU device; {compute.id} is a CPU and runs the work itself"
            )
        if link_ is not None:
            raise ParsimError(f"'link' only applies with a GPU device; {compute.id} is a CPU")
        if gpus != 1:
            raise ParsimError(f"'gpus' needs a GPU device; {compute.id} is a CPU: {gpus}")
        return SystemSpec(host=compute)
    host_spec = processor(host if host is not None else DEFAULT_HOST, "host")
    if host_spec.is_accelerator:
        raise ParsimError(f"'host' must be a CPU: {host_spec.id} is a GPU")
    if gpus > host_spec.max_gpus:
        raise ParsimError(
            f"'gpus' must be <= {host_spec.max_gpus} (the most {host_spec.id} can host): {gpus}"
        )
    chosen = link(link_, "link") if link_ is not None else None
    if chosen is not None and chosen.is_peer and compute.peer_link is None:
        raise ParsimError(
            f"'link': {compute.id} has no {chosen.family}, so {chosen.id} cannot join its GPUs; "
            f"its GPUs talk over PCIe ({compute.default_link}): leave 'link' out or name a PCIe link"
        )
    peer = chosen if chosen is not None and chosen.is_peer else None
    host_link = chosen if chosen is not None and peer is None else None
    if peer is None and gpus > 1 and compute.peer_link is not None:
        peer = preset_link(compute.peer_link, "peer_link")  # an SXM board's GPUs talk over its own NVLink
    if host_link is None:
        if compute.default_link is None:
            raise ParsimError(f"'link' is required: {compute.id} names no default link")
        host_link = preset_link(compute.default_link, "default_link")
    per_switch = gpus_per_switch if gpus_per_switch is not None else min(gpus, 4)
    if per_switch < 1:
        raise ParsimError(f"'gpus_per_switch' must be >= 1: {per_switch}")
    return SystemSpec(
        host=host_spec, device=compute, link=host_link, gpus=gpus, gpus_per_switch=per_switch, peer_link=peer
    )


def kind_of(source: str | ProcessorSpec | None) -> str | None:
    """``"cpu"``, ``"gpu"`` or ``"tpu"`` for a processor source, None where it names no processor."""
    if source is None:
        return None
    try:
        return processor(source).kind
    except (ParsimError, TypeError):
        return None


def processor_ids(kind: str | None = None) -> list[str]:
    return sorted(k for k, v in _processors().items() if kind is None or v.kind == kind)


def link_ids() -> list[str]:
    return sorted(_links())


def cluster(value: str | ClusterSpec, field: str = "cluster") -> ClusterSpec:
    """A cluster from a spec, a preset id (``dgx-a100``) or a cluster TOML path."""
    return _resolve(value, ClusterSpec, _clusters(), field, "cluster", "")


def cluster_system(value: str | ClusterSpec, nodes: int | None = None, gpus: int | None = None) -> SystemSpec:
    """The system of ``nodes`` nodes of cluster ``value`` (its own default when None), each running
    ``gpus`` of its GPUs (all of them when None).

    A job on part of a node (8 GPUs of an NVL72 rack, as published GB200 runs take) is a node of
    that many GPUs on the same fabric, with the network cards that serve them: a rail-optimised
    node gives each GPU its own, so each GPU's share of the network stays the whole node's.

    Raises:
        ParsimError: an unknown cluster, a part it names that is not a preset, a bad count, or more
            GPUs than a node has (or part of a TPU slice's host).
    """
    spec = cluster(value)
    count = spec.nodes if nodes is None else nodes
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ParsimError(f"'nodes' must be an integer >= 1: {count!r}")
    used = spec.gpus_per_node if gpus is None else gpus
    if isinstance(used, bool) or not isinstance(used, int) or not 1 <= used <= spec.gpus_per_node:
        raise ParsimError(
            f"'gpus' must be 1 to {spec.gpus_per_node}, the GPUs of one {spec.id} node (nodes= sets "
            f"how many nodes): {used!r}"
        )
    if used < spec.gpus_per_node and spec.torus_dims:
        raise ParsimError(
            f"'gpus' must be {spec.gpus_per_node} on {spec.id}: a TPU slice's hosts join every chip "
            f"into its torus: {used}"
        )
    network = spec.network
    if network is not None and used < spec.gpus_per_node:  # the cards of the GPUs in use
        nics = -(-network.nics_per_node * used // spec.gpus_per_node)
        network = attrs.evolve(network, nics_per_node=nics)
    device = processor(spec.device, "cluster.device")
    if not device.is_accelerator:
        raise ParsimError(f"'cluster.device' must be a GPU or TPU preset: {spec.device} is a CPU")
    host = processor(spec.host, "cluster.host")
    if host.is_accelerator:
        raise ParsimError(f"'cluster.host' must be a CPU preset: {spec.host} is a GPU")
    fabric = preset_link(spec.fabric, "cluster.fabric")
    host_link = preset_link(spec.host_link or device.default_link or "", "cluster.host_link")
    if spec.gpus_per_node > host.max_gpus:
        raise ParsimError(
            f"'cluster.gpus_per_node' must be <= {host.max_gpus} (the most {host.id} can host): "
            f"{spec.gpus_per_node}"
        )
    return SystemSpec(
        host=host,
        device=device,
        link=host_link,
        gpus=used,
        gpus_per_switch=min(spec.gpus_per_switch, used),
        peer_link=fabric if fabric.is_peer else None,
        gpus_per_socket=spec.gpus_per_socket,
        cross_socket_Bps=spec.cross_socket_Bps,
        staged_Bps=spec.staged_Bps,
        nodes=count,
        network=network,
        torus=torus_shape(spec.gpus_per_node * count, spec.torus_dims) if spec.torus_dims else (),
    )


def cluster_ids() -> list[str]:
    return sorted(_clusters())
