"""``parsim capacity``: the highest request rate a server meets its latency SLOs at, and the GPUs a
target rate needs (``studies.serving_load.capacity_search``), with the curve the search walked."""

from __future__ import annotations

import math
from typing import Annotated

import typer

from parsim.base import jsontext, units
from parsim.base.choices import Method
from parsim.base.errors import Interrupted, ParsimError
from parsim.cli.limits import NoLimits, budget_of


def register(app: typer.Typer) -> None:
    app.command()(capacity)


def capacity(
    workload: Annotated[str, typer.Argument(help="a workload served under load, e.g. llm_load")],
    params: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[KEY=VALUE]...",
            help="model=llama-2-7b prompt=512 output=128 slo_ttft=0.5 slo_tpot=0.05 [rate=TARGET]",
        ),
    ] = None,
    device: Annotated[str, typer.Option(help="GPU preset id or hardware TOML")] = "a100-80gb",
    host: Annotated[str | None, typer.Option(help="host CPU of the GPU")] = None,
    link: Annotated[str | None, typer.Option(help="host<->device link")] = None,
    method: Annotated[Method, typer.Option(help="engine (SimPy) or analytic, for the step times")] = "engine",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    no_limits: NoLimits = False,
):
    """The highest request rate whose P90 time to first token and per output token meet the SLOs."""
    from parsim.report.text import table
    from parsim.studies.serving_load import capacity_search
    from parsim.workloads.registry import WORKLOADS, lookup

    if lookup(workload).requests is None:
        served = ", ".join(name for name, d in WORKLOADS.items() if d.requests is not None)
        raise ParsimError(f"capacity applies to the workloads served under load ({served}), not {workload}")
    given = units.parse_assignments(params or [])
    target = given.pop("rate", None)
    if target is not None and (isinstance(target, bool) or not isinstance(target, (int, float))):
        raise ParsimError(f"'rate' (the target) must be a number of requests/s: {target!r}")
    try:
        found = capacity_search(
            given,
            device,
            target_per_s=target,
            host=host,
            link=link,
            method=method,
            budget=budget_of(no_limits),
        )
    except KeyboardInterrupt:
        raise Interrupted("a capacity search keeps nothing until it finishes; nothing was written") from None
    if as_json:
        typer.echo(jsontext.dumps(found.to_dict()))
        return
    headers = ["rate/s", "replicas"]
    headers += [f"{what} {p}" for what in ("TTFT", "TPOT", "e2e") for p in ("P50", "P90", "P99")] + [""]
    rows = []
    for probe in found.probes:
        r = probe.record
        times = (r.ttft_p50_s, r.ttft_p90_s, r.ttft_p99_s, r.tpot_p50_s, r.tpot_p90_s, r.tpot_p99_s)
        rows.append(
            [
                f"{probe.rate_per_s:.3g}",
                str(probe.replicas),
                *("-" if math.isnan(t) else units.seconds(t) for t in times),
                *(units.seconds(t) for t in (r.e2e_p50_s, r.e2e_p90_s, r.e2e_p99_s)),
                "meets" if probe.meets else "misses",
            ]
        )
    typer.echo(table([(h, "right") for h in headers[:-1]] + [("", "left")], rows))
    if found.rate_per_s == 0:
        typer.echo("no rate probed meets the SLOs: not even the lowest")
        return
    failing = "" if math.isinf(found.failing_rate_per_s) else f" ({found.failing_rate_per_s:.3g}/s misses)"
    typer.echo(
        f"capacity: {found.rate_per_s:.3g} requests/s on {found.replicas} replica(s), "
        f"{found.per_replica_per_s:.3g}/s per replica of {found.gpus_per_replica} GPU(s){failing}"
    )
    if found.target_per_s is not None:
        if found.replicas_needed is None:
            typer.echo(f"target {found.target_per_s:g}/s: no replica count checked meets the SLOs")
        else:
            typer.echo(
                f"target {found.target_per_s:g}/s: {found.replicas_needed} replica(s), "
                f"{found.gpus_needed} GPU(s)"
            )
