"""FP8 scaling recipes (``fp8_recipe``, ``megatron.RECIPES``): the kernels each recipe adds around a
linear layer, by hand, and the step they make, against each other and the refusals."""

from __future__ import annotations

import pytest

from parsim.base.errors import ParsimError
from parsim.hardware import registry
from parsim.model.issue import issue_s
from parsim.stack import framework
from parsim.workloads.base import Kernel
from parsim.workloads.megatron import fp8_linears
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
    # block scaling: each block's amax inside the cast, both copies, an FP32 scale per 128 elements
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
        ("blockwise", ["fp8 cast"], ["fp8 cast"]),  # both write 16 bits (TE: UNFUSED), then one cast
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


def test_under_sequence_parallelism_the_norm_output_is_cast_on_its_own_shard():
    """The norm runs on 1/tp of the tokens and TE quantises that shard before the all-gather into
    qkv and fc1: the cast reads a quarter of the GEMM's input at tp=4; fc2's input (after the
    activation, inside the tensor-parallel region) is not split by sequence."""
    for part, share in [("qkv", 4), ("up", 4), ("down", 1)]:
        whole = fp8_linears([_linear(part)], "bfloat16", True, "tensorwise")[-2]
        split = fp8_linears([_linear(part)], "bfloat16", True, "tensorwise", sequence_split=4)[-2]
        assert whole.name.endswith("fp8 cast") and split.name.endswith("fp8 cast")
        assert split.work.bytes_read == whole.work.bytes_read // share == 2 * M * K // share


def test_each_experts_input_under_mxfp8_is_two_copies_inside_its_round():
    from parsim.workloads.moe import GROUPED_GEMM
    from parsim.workloads.moe_layer_ops import per_expert_gemms

    up = _linear("up").but(op=GROUPED_GEMM)
    rounds = per_expert_gemms([up], 8)  # two rounds of four experts, M/2 rows each
    for recipe, written in [("delayed", M // 2 * K), ("mxfp8", 2 * (M // 2) * K * (1 + 1 / 32))]:
        casts = [k for k in fp8_linears(rounds, "bfloat16", True, recipe) if k.name.endswith("fp8 cast")]
        assert [c.work.bytes_written for c in casts] == [pytest.approx(written)] * 2
        assert [(c.issue.launches, c.issue.in_library_call) for c in casts] == [(4, False), (4, True)]
    # current scaling: each round's experts pay an amax pass and a scale kernel as well
    made = fp8_linears(rounds, "bfloat16", True, "tensorwise")
    assert [" ".join(k.name.split()[-2:]) for k in made if "fp8" in k.name] == [
        "fp8 amax",
        "fp8 scale",
        "fp8 cast",
    ] * 2


def _optimizer_kernels(recipe: str) -> list[Kernel]:
    """The kernels of the optimizer's block of a small FP8 step (the update and the weights' casts)."""
    params = {
        "model": "llama-2-7b",
        "batch": 8,
        "seq": 1024,
        "dtype": "bfloat16",
        "fp8": True,
        "fp8_recipe": recipe,
        "gpus": 8,
        "microbatches": 1,
    }
    workload = make_workload("network", params)
    blocks = [op for op in workload.ops if getattr(op, "layer", "") == "optimizer"]
    return [k for block in blocks for k in block.kernels]


def test_the_weights_are_cast_once_a_step_as_the_recipe_casts():
    recipes = ("delayed", "tensorwise", "mxfp8", "blockwise")
    delayed, current, mx, block = (_optimizer_kernels(r) for r in recipes)
    step = [k for k in delayed if "fp8" not in k.name]
    assert [k.name for k in step] == ["optimizer step"]
    runs = (delayed, current, mx, block)
    names = [[k.name.split()[-1] for k in kernels if "fp8" in k.name] for kernels in runs]
    assert names == [["cast"], ["amax", "scale", "cast"], ["cast"], ["cast"]]
    cast = {
        r: [k for k in ks if k.name.endswith("fp8 cast")][0]
        for r, ks in [("delayed", delayed), ("mxfp8", mx), ("blockwise", block)]
    }
    weights = cast["delayed"].work.bytes_written  # one byte per weight
    assert cast["mxfp8"].work.bytes_written == pytest.approx(2 * weights * (1 + 1 / 32))
    # the weights in 128 x 128 blocks: one FP32 scale per 16,384 weights and copy
    assert cast["blockwise"].work.bytes_written == pytest.approx(2 * weights * (1 + 4 / 16384))


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


def test_every_recipe_makes_a_longer_step_than_delayed_scaling():
    """Each recipe only adds passes (or bytes) to delayed scaling's, so its step is longer."""
    delayed = _step_s("delayed")
    for recipe in ("tensorwise", "mxfp8", "blockwise"):
        assert _step_s(recipe) > delayed


def test_recipes_are_refused_where_they_cannot_apply(cli):
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
    assert "'fp8_recipe' input should be 'delayed', 'tensorwise', 'blockwise' or 'mxfp8': 'current'" in err


def test_block_scaling_runs_from_hopper_on_and_is_refused_on_ada(cli):
    """TE's FP8 block scaling needs compute capability 9.0 (``fp8_block_scaling``): an H100 runs
    it, an L40S (Ada's FP8 tensor cores) is refused by name, in one line, exit code 2."""
    base = ("predict", "network", "model=llama-2-7b", "batch=8", "seq=1024", "dtype=bfloat16", "fp8=true")
    code, out, err = cli(*base, "fp8_recipe=blockwise", "gpus=8", "--cluster", "dgx-h100")
    assert code == 0, err
    code, out, err = cli(*base, "fp8_recipe=blockwise", "train=true", "--device", "l40s")
    assert code == 2
    assert "fp8_recipe=blockwise needs FP8 products with 128-element block scales" in err and "L40S" in err
    assert "fp8_block_scaling" in err and "Traceback" not in out + err
    assert len(err.strip().splitlines()) == 1


def test_block_scaling_round_trips_through_a_hardware_file():
    from parsim.hardware.presets import PROCESSORS
    from parsim.hardware.tomlio import dumps_hardware, loads_hardware

    for gpu, runs in [("h100-sxm", True), ("gb200", True), ("l40s", False)]:
        spec = PROCESSORS[gpu]
        assert spec.fp8_block_scaling is runs
        assert loads_hardware(dumps_hardware(spec)).fp8_block_scaling is runs
