"""``parsim hardware``: the presets (and hardware files) with their headline figures, one in full.

``list`` prints every preset's headline (memory bandwidth and size, FP32 or matrix rate, a link's
bandwidth and latency) with the source of its numbers; ``show`` prints one in full, as a tree, as
JSON or as the hardware TOML ``--device``/``--host``/``--link`` accept (a round trip).
"""

from __future__ import annotations

from typing import Annotated

import typer

from parsim.base import jsontext, units
from parsim.base.choices import HardwareKind

Json = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
hardware_app = typer.Typer(no_args_is_help=True, help="Hardware presets and files.")


def register(app: typer.Typer) -> None:
    app.add_typer(hardware_app, name="hardware")


@hardware_app.command("list")
def hardware_list(
    kind: Annotated[HardwareKind | None, typer.Option(help="cpu, gpu, tpu, link, nic or cluster")] = None,
    as_json: Json = False,
):
    """Every preset with its headline figures."""
    from parsim.hardware.presets import LINKS, PROCESSORS
    from parsim.hardware.presets_cluster import CLUSTER_PRESETS, NIC_PRESETS
    from parsim.hardware.sources import source_of

    rows = []
    for spec in PROCESSORS.values():
        if kind in (None, spec.kind):
            rows.append(
                {
                    "id": spec.id,
                    "kind": spec.kind,
                    "name": spec.name,
                    "cores": spec.cores,
                    "core_unit": spec.core_unit,
                    "fp32_flops_per_s": spec.vector_flops_per_s("float32"),
                    "bf16_matrix_flops_per_s": dict(spec.matrix_flops_per_s).get("bfloat16"),
                    "memory_bandwidth_Bps": spec.memory.bandwidth_Bps,
                    "memory_B": spec.memory.capacity_B,
                }
            )
    for spec in LINKS.values():
        if kind in (None, "link"):
            rows.append(
                {
                    "id": spec.id,
                    "kind": "link",
                    "name": spec.name,
                    "bandwidth_Bps": spec.bandwidth_Bps,
                    "latency_s": spec.latency_s,
                }
            )
    for nic in NIC_PRESETS.values():
        if kind in (None, "nic"):
            rows.append(
                {
                    "id": nic.id,
                    "kind": "nic",
                    "name": nic.name,
                    "bandwidth_Bps": nic.bandwidth_Bps,
                    "latency_s": nic.latency_s,
                }
            )
    for cluster in CLUSTER_PRESETS.values():
        if kind in (None, "cluster"):
            rows.append(
                {
                    "id": cluster.id,
                    "kind": "cluster",
                    "name": cluster.name,
                    "gpus_per_node": cluster.gpus_per_node,
                    "device": cluster.device,
                    "fabric": cluster.fabric,
                    "nic": cluster.network.nic.id,
                    "nics_per_node": cluster.network.nics_per_node,
                }
            )
    for row in rows:
        row["source"] = source_of(row["id"])
    if as_json:
        typer.echo(jsontext.dumps(rows))
        return
    lines = []
    for row in rows:
        if row["kind"] == "cluster":
            headline = (
                f"{row['gpus_per_node']}x {row['device']} per node over {row['fabric']}, "
                f"{row['nics_per_node']}x {row['nic']}"
            )
        elif row["kind"] in ("link", "nic"):
            headline = (
                f"{units.si(row['bandwidth_Bps'], 'B/s')} per direction, {units.seconds(row['latency_s'])}"
            )
        else:
            matrix = row["bf16_matrix_flops_per_s"] if row["kind"] == "tpu" else None
            rate = (
                f"{units.si(matrix, 'FLOP/s')} bf16 (MXU)"
                if matrix
                else f"{units.si(row['fp32_flops_per_s'], 'FLOP/s')} fp32"
            )
            headline = (
                f"{row['cores']} {row['core_unit']}{'s' if row['cores'] > 1 else ''}, {rate}, "
                f"{units.si(row['memory_bandwidth_Bps'], 'B/s')}, {units.gib(row['memory_B'])}"
            )
        lines.append([row["id"], row["kind"], row["name"], headline, row["source"]])
    columns = [("id", "left"), ("kind", "left"), ("name", "left"), ("headline", "left"), ("source", "left")]
    from parsim.report.text import table

    typer.echo(table(columns, lines))


@hardware_app.command("show")
def hardware_show(
    spec_id: Annotated[str, typer.Argument(metavar="ID", help="preset id or hardware TOML path")],
    as_json: Json = False,
    toml: Annotated[bool, typer.Option("--toml", help="Print as a hardware TOML file.")] = False,
):
    """One preset (or hardware file) in full."""
    import attrs

    from parsim.hardware import registry
    from parsim.hardware.presets import LINKS
    from parsim.hardware.tomlio import dumps_hardware

    if spec_id.endswith(".toml"):
        from parsim.hardware.tomlio import load_hardware

        spec = load_hardware(spec_id)
    else:
        from parsim.hardware.presets_cluster import CLUSTER_PRESETS, NIC_PRESETS

        if spec_id in NIC_PRESETS:
            spec = NIC_PRESETS[spec_id]
        elif spec_id in CLUSTER_PRESETS:
            spec = CLUSTER_PRESETS[spec_id]
        else:
            spec = registry.link(spec_id) if spec_id in LINKS else registry.processor(spec_id, "ID")
    if toml:
        typer.echo(dumps_hardware(spec), nl=False)
        return
    data = attrs.asdict(spec, recurse=True)
    if "matrix_flops_per_s" in data:
        data["matrix_flops_per_s"] = dict(spec.matrix_flops_per_s)
        data["peak_flops_per_s"] = {
            dtype: spec.peak_flops_per_s(dtype, matrix=True)
            for dtype in ("float16", "bfloat16", "float32", "float64")
        }
    if as_json:
        typer.echo(jsontext.dumps(data))
        return
    _print_tree(data)


def _print_tree(data: dict, indent: int = 0) -> None:
    for key, value in data.items():
        if isinstance(value, dict):
            typer.echo(" " * indent + f"{key}:")
            _print_tree(value, indent + 2)
        elif isinstance(value, (list, tuple)) and value and isinstance(value[0], dict):
            typer.echo(" " * indent + f"{key}:")
            for item in value:
                _print_tree(item, indent + 2)
                typer.echo("")
        else:
            typer.echo(" " * indent + f"{key:<28}{_human(key, value)}")


def _human(key: str, value) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if key.endswith("_s"):
        return units.seconds(value)
    if key.endswith("_Bps"):
        return units.si(value, "B/s")
    if key.endswith("_B"):
        return f"{units.si(value, 'B')} ({units.gib(value)})"
    if key.endswith("_Hz"):
        return units.si(value, "Hz")
    if "flops" in key:
        return units.si(value, "FLOP/s")
    return f"{value:g}"
