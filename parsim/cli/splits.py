"""``parsim splits``: every (tp, pp, dp) split of a cluster for one language model, the fastest marked.

``parsim splits model=gpt3-175b batch=1536 recompute=full --cluster dgx-a100 nodes=128`` lists
each split with its memory per GPU, whether it fits, and for those that do the predicted step,
tokens/s, TFLOP/s per GPU and MFU (``parsim.studies.splits``).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from parsim.base import jsontext, units
from parsim.base.choices import Method
from parsim.base.errors import Interrupted
from parsim.cli.limits import NoLimits


def register(app: typer.Typer) -> None:
    app.command()(splits)


def splits(
    params: Annotated[
        list[str] | None,
        typer.Argument(metavar="[KEY=VALUE]...", help="model=gpt3-175b batch=1536 nodes=128 recompute=full"),
    ] = None,
    cluster: Annotated[
        str, typer.Option(help="cluster preset id or TOML (dgx-a100, dgx-h100...)")
    ] = "dgx-a100",
    micro_batch: Annotated[int, typer.Option(help="sequences per micro-batch", min=1)] = 1,
    method: Annotated[Method, typer.Option(help="engine (SimPy) or analytic")] = "engine",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    no_limits: NoLimits = False,
):
    """Every (tp, pp, dp) split of a cluster for training one language model; the fastest marked."""
    from parsim.base.budget import CLI
    from parsim.report.text import table
    from parsim.studies.splits import split_table

    budget = None if no_limits else CLI
    given = units.parse_assignments(params or [])
    try:
        rows = split_table(given, cluster, micro_batch, method, budget)
    except KeyboardInterrupt:
        raise Interrupted("a split search keeps nothing until it finishes; nothing was written") from None
    if as_json:
        typer.echo(jsontext.dumps([row.to_dict() for row in rows]))
        return
    columns = [
        (name, "right")
        for name in ("tp", "pp", "dp", "layers/stage", "micro-batches", "memory/GPU", "step", "tokens/s")
    ]
    columns += [("TFLOP/s/GPU", "right"), ("MFU", "right"), ("", "left")]
    lines = []
    for row in rows:
        timed = row.step_s is not None
        lines.append(
            [
                str(row.tp),
                str(row.pp),
                str(row.dp),
                row.layers_per_stage,
                str(row.microbatches),
                units.gib(row.memory_per_gpu_B),
                units.seconds(row.step_s) if timed else "-",
                units.si(row.tokens_per_s) if timed else "-",
                f"{row.tflops_per_gpu:.0f}" if row.tflops_per_gpu is not None else "-",
                f"{row.mfu:.0%}" if row.mfu is not None else "-",
                "fastest" if row.fastest else ("" if row.fits else "does not fit"),
            ]
        )
    typer.echo(table(columns, lines))
    typer.echo(_mfu_note(given, cluster))


def _mfu_note(given: dict[str, Any], cluster: str) -> str:
    """What MFU is measured against: the peak of the step's dtype (FP32 training on an A100 has a
    19.5 TFLOP/s peak, not the 312 of its 16-bit tensor cores, so 14 TFLOP/s is an MFU of 72 %)."""
    from parsim.studies.splits import mfu_peak

    gpu, dtype, peak = mfu_peak(given, cluster)
    return (
        f"MFU: the model's FLOPs (recomputation left out) per second over one {gpu}'s {dtype} peak, "
        f"{peak / 1e12:.1f} TFLOP/s (TFLOP/s/GPU counts every FLOP run)"
    )
