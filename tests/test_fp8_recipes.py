"""FP8 scaling recipes (``fp8_recipe``, ``megatron.RECIPES``): the kernels each recipe adds around a
linear layer, by hand, and the step they make, against each other and the refusals."""

from __future__ import annotations

import pytest

from parsim.base.errors import ParsimError
from parsim.hardware import registry
from parsim.model.issue import issue_s
from parsim.stack import framework
from parsim.workloads.base import Kernel
from parsim.workloads.megatron import RECIPES, fp8_linears
from parsim.workloads.registry import make_workload

M, N, K = 4096, 1024, 2048  # x [M, K] @ W [K, N], bfloat16


def _linear(part: str, *, backward: bool = False) -> Kernel:
    """A dense linear's forward product (weights streamed in: cold beyond what it writes) or, with
    ``backward``, its data gradient dy [M, N] @ W^T."""
    rows_out = K if backward else N
    written = 2.0 * M * rows_out
    return Kernel.of(
        f"layer 0 {part} {'bwd-data' if backward else 'fwd'}",
        2.0 * M * N * K,
        2.0 * M * (N if backward else K) + 2.0 * N * K,
        written,
        M * rows_out,
        dtype="bfloat16",
        matrix=True,
        gemm_mn=(M, rows_out),
        cold_bytes=2.0 * N * K + written,
        part=part,
        layer="layer 0",
    )


def _added(kernel: Kernel, recipe: str, forward: bool = True) -> list[tuple[str, float, float]]:
    """(name suffix, bytes read, bytes written) of what ``recipe`` adds before ``kernel``."""
    made = fp8_linears([kernel], "bfloat16", forward, recipe)
    assert made[-1].library.math == "float8" and made[-1].work.flops == kernel.work.flops
    return [(" ".join(k.name.split()[-2:]), k.work.bytes_read, k.work.bytes_written) for k in made[:-1]]


def test_the_attention_outputs_cast_under_each_recipe_by_hand():
    out = _linear("out")
    x = M * K  # the attention output's elements
    assert _added(out, "delayed") == [("fp8 cast", 2 * x, x)]  # read 16 bits, write a byte
    # current scaling: the tensor's amax (a read), the scale (one float), then the cast
    assert _added(out, "tensorwise") == [("fp8 amax", 2 * x, 4), ("fp8 scale", 4, 4), ("fp8 cast", 2 * x, x)]
    # MXFP8: row- and column-wise copies, each with an E8M0 scale per 32 elements
    assert _added(out, "mxfp8") == [("fp8 cast", 2 * x, pytest.approx(2 * x * (1 + 1 / 32)))]
    # blockwise: two copies with a float32 scale per 128 elements
    assert _added(out, "blockwise") == [("fp8 cast", 2 * x, pytest.approx(2 * x * (1 + 4 / 128)))]


def test_a_gradients_cast_under_current_scaling_pays_one_call_and_three_launches():
    dgrad = _linear("qkv", backward=True)
    made = fp8_linears([dgrad], "bfloat16", False, "tensorwise")
    amax, scale, cast = made[:3]
    assert made[0].work.bytes_read == 2 * M * N  # dy [M, N]
    assert [k.issue.in_library_call for k in (amax, scale, cast)] == [True, True, False]
    system = registry.system("h100-sxm", "xeon-8480", None, 8, None)
    eager = framework("eager")
    host = sum(issue_s(system, eager, False, k) for k in (amax, scale, cast))
    assert host == pytest.approx(eager.op_host_s(system.host.clock_Hz) + 3 * system.gpu.dispatch_s)


@pytest.mark.parametrize(
    ("recipe", "after_norm", "after_activation"),
    [
        ("delayed", [], []),  # the norm and the activation write FP8 themselves
        ("tensorwise", ["fp8 scale", "fp8 cast"], ["fp8 scale", "fp8 cast"]),  # their amax fused, then cast
        ("mxfp8", ["fp8 cast"], []),  # the norm in 16 bits, then cast; the activation writes MXFP8
        ("blockwise", ["fp8 cast"], ["fp8 cast"]),
    ],
)
def test_what_follows_the_norm_and_the_activation(recipe, after_norm, after_activation):
    for part, expected in [("qkv", after_norm), ("up", after_norm), ("down", after_activation)]:
        made = fp8_linears([_linear(part)], "bfloat16", True, recipe)
        added = [k.name.split(f"{part} ", 1)[1] for k in made[:-1]]
        assert added == expected, (recipe, part)
        assert all(k.issue.in_library_call for k in made[:-1])  # inside the norm's / activation's call
    # the gate half shares up's input: never cast of its own
    assert fp8_linears([_linear("gate")], "bfloat16", True, recipe)[:-1] == []


def test_the_recipes_share_one_rule_table():
    assert set(RECIPES) == {"delayed", "tensorwise", "mxfp8", "blockwise"}
    assert RECIPES["delayed"].fused_norm and not RECIPES["tensorwise"].fused_norm


def _step_s(recipe: str, device: str = "dgx-b200") -> float:
    from parsim.methods.predict import predict

    params = {
        "model": "llama-2-7b",
        "batch": 16,
        "seq": 2048,
        "train": True,
        "dtype": "bfloat16",
        "fp8": True,
        "fp8_recipe": recipe,
        "gpus": 8,
        "microbatches": 2,
        "distributed_optimizer": True,
    }
    return predict("network", params, cluster=device).latency_s


def test_every_recipe_costs_at_least_delayed_scaling_and_current_scaling_the_most_passes():
    delayed = _step_s("delayed")
    others = {r: _step_s(r) for r in ("tensorwise", "mxfp8", "blockwise")}
    assert all(seconds > delayed for seconds in others.values())
    # current scaling reads every explicitly cast tensor twice; MXFP8 writes more but reads once
    assert others["tensorwise"] > others["mxfp8"]


def test_recipes_are_refused_where_transformer_engine_refuses_them(cli):
    with pytest.raises(ParsimError, match="'fp8_recipe' tensorwise scales FP8 casts: it needs fp8=true"):
        make_workload(
            "network",
            {"model": "llama-2-7b", "batch": 8, "seq": 2048, "dtype": "bfloat16", "fp8_recipe": "tensorwise"},
        )
    base = ("predict", "network", "model=llama-2-7b", "batch=8", "seq=2048", "dtype=bfloat16", "fp8=true")
    code, out, err = cli(*base, "fp8_recipe=mxfp8", "gpus=8", "--cluster", "dgx-h100")
    assert code == 2
    assert "fp8_recipe=mxfp8 needs Blackwell's block-scaled tensor cores" in err and "H100" in err
    assert "Traceback" not in out + err
    code, out, err = cli(*base, "fp8_recipe=current", "gpus=8", "--cluster", "dgx-h100")
    assert code == 2
    assert "'fp8_recipe' input should be 'delayed', 'tensorwise', 'mxfp8' or 'blockwise': 'current'" in err
