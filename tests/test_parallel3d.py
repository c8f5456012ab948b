"""3D parallelism: the 1F1B order, layouts and their refusals, memory, contention and the step's figures."""

from __future__ import annotations

import pytest

import parsim
from parsim.base.errors import ParsimError
from parsim.hardware import registry
from parsim.methods.engine import simulate
from parsim.methods.engine.machine import engine_block_parts
from parsim.model.collectives import collective
from parsim.stack import framework
from parsim.workloads import parallel3d
from parsim.workloads.base import AllReduce, Block, Workload
from parsim.workloads.llms import LLMS
from parsim.workloads.pipeline_schedule import one_f_one_b
from parsim.workloads.registry import make_workload, validate_params
from parsim.workloads.transformer_memory import layer_activation_B

GPT3 = {"model": "gpt3-175b", "train": True, "dtype": "float16", "optimizer": "adam", "recompute": "full"}


def test_one_f_one_b_warms_up_alternates_and_drains():
    assert one_f_one_b(0, 4, 6) == [
        ("F", 0), ("F", 1), ("F", 2), ("F", 3), ("B", 0), ("F", 4), ("B", 1), ("F", 5),
        ("B", 2), ("B", 3), ("B", 4), ("B", 5),
    ]  # fmt: skip
    assert one_f_one_b(3, 4, 3) == [
        ("F", 0),
        ("B", 0),
        ("F", 1),
        ("B", 1),
        ("F", 2),
        ("B", 2),
    ]
    assert one_f_one_b(0, 8, 2) == [
        ("F", 0),
        ("F", 1),
        ("B", 0),
        ("B", 1),
    ]  # fewer than stages


def test_stages_split_the_layers_evenly():
    assert [len(r) for r in parallel3d.stage_layers(LLMS["megatron-530b"], 35)] == [3] * 35
    assert [len(r) for r in parallel3d.stage_layers(LLMS["gpt2"], 5)] == [3, 3, 2, 2, 2]


def _layout(**given):
    params = validate_params("network", {**GPT3, "batch": 1536, "gpus": 8, **given})
    return parallel3d.layout(LLMS["gpt3-175b"], params)


def test_megatrons_layout_places_groups_as_the_paper_does():
    lay = _layout(nodes=128, tp=8, pp=16, microbatches=192)
    assert (lay.dp, lay.micro_batch, lay.dp_per_node()) == (8, 1, 1)  # one data-parallel peer per node
    assert all(lay.crosses_nodes(s) for s in range(16))  # a stage is a whole node: sends use the NICs
    small = _layout(nodes=4, tp=2, pp=2, microbatches=192)  # 32 GPUs: dp 8, 4 peers in each node
    assert (small.dp, small.dp_per_node()) == (8, 4)
    assert small.crosses_nodes(0)  # stage 0 spans 16 GPUs = 2 nodes


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"nodes": 2, "tp": 16}, "tp=16 is larger than a node's 8 GPUs"),
        ({"nodes": 2, "tp": 8, "pp": 3}, r"tp x pp = 24 does not divide the 16 GPUs \(2 nodes x 8\)"),
        ({"nodes": 16, "tp": 1, "pp": 128}, "pp=128 is deeper than gpt3-175b's 96 layers"),
        ({"nodes": 2, "tp": 8, "pp": 1, "microbatches": 7}, "must divide by dp x microbatches = 2 x 7"),
    ],
)
def test_splits_that_do_not_factor_are_refused_in_one_line(given, message):
    with pytest.raises(ParsimError, match=message):
        make_workload("network", {**GPT3, "batch": 1536, "gpus": 8, **given})


def test_a_cnn_is_not_split_this_way():
    with pytest.raises(ParsimError, match="use data_parallel"):
        parsim.predict("network", {"model": "resnet50", "tp": 2, "nodes": 2}, cluster="dgx-a100")


def test_a_split_that_does_not_fit_names_the_smallest_that_does():
    with pytest.raises(
        ParsimError, match=r"needs .* per GPU with tp=8 pp=1.*smallest split that fits: tp=8 pp="
    ):
        parsim.predict(
            "network",
            {**GPT3, "batch": 1536, "nodes": 128, "tp": 8, "pp": 1, "microbatches": 12},
            cluster="dgx-a100",
        )


def test_activation_memory_is_korthikantis():
    # Korthikanti et al. 2022, section 4: sbh (10 + 24/t + 5as/(ht)) bytes per layer in float16
    # with Megatron-LM's dropouts on; their masks and the dropped probabilities go without them
    config = LLMS["gpt3-175b"]
    sbh, a, s, h, t = 2048 * 1 * 12288, 96, 2048, 12288, 8

    def per_layer(recompute, dropout):
        return layer_activation_B(config, 1, 2048, "float16", 8, recompute, "unfused", dropout)

    assert per_layer("none", True) == pytest.approx(sbh * (10 + 24 / t + 5 * a * s / (h * t)))
    assert per_layer("none", False) == pytest.approx(sbh * (8 + 24 / t + 2 * a * s / (h * t)))
    assert per_layer("selective", True) == pytest.approx(sbh * (10 + 24 / t))
    assert per_layer("full", True) == pytest.approx(2 * sbh)
    full = make_workload(
        "network", {**GPT3, "batch": 1536, "gpus": 8, "nodes": 128, "tp": 8, "pp": 16, "microbatches": 192}
    )
    none = make_workload(
        "network",
        {
            **GPT3,
            "recompute": "none",
            "batch": 1536,
            "gpus": 8,
            "nodes": 128,
            "tp": 8,
            "pp": 16,
            "microbatches": 192,
        },
    )
    assert none.footprint_B > full.footprint_B


def test_events_grow_with_stages_and_microbatches_not_with_gpus():
    base = {**GPT3, "batch": 512, "tp": 8, "pp": 8, "recompute": "full"}
    small = parsim.predict("network", {**base, "nodes": 64, "microbatches": 16}, cluster="dgx-a100")
    large = parsim.predict(
        "network", {**base, "nodes": 1024, "batch": 8192, "microbatches": 16}, cluster="dgx-a100"
    )
    assert (small.gpus, large.gpus) == (512, 8192)
    # the same ops; only the NICs' fluid re-sharing (sends against the gradient all-reduce) differs
    assert abs(small.events - large.events) <= 0.01 * small.events


def test_the_pipeline_is_what_1f1b_predicts_for_its_block_times():
    """With stages of equal blocks and cheap sends, 1F1B's step is (m + p - 1) x (forward + backward)
    plus the data-parallel all-reduce and the update; the engine and the analytic schedule agree."""
    params = {
        **GPT3,
        "model": "megatron-145b",
        "batch": 192,
        "nodes": 8,
        "tp": 8,
        "pp": 8,
        "microbatches": 24,
    }
    engine = parsim.predict("network", params, cluster="dgx-a100")
    analytic = parsim.predict("network", params, cluster="dgx-a100", method="analytic")
    # the closed form times each kernel without waves: 1-2 % apart on these GEMMs
    assert analytic.latency_s == pytest.approx(engine.latency_s, rel=0.02)
    workload = make_workload("network", {**params, "gpus": 8})
    system = registry.cluster_system("dgx-a100", 8)
    eager = framework("eager")
    middle = [op for op in workload.ops if isinstance(op, Block) and op.device == 3]
    passes = {op.name[0]: op for op in middle if op.name[0] in "FB"}
    f = sum(
        engine_block_parts(system, "simt", "roofline", eager, passes["F"].kernels, passes["F"].collectives)
    )
    b = sum(
        engine_block_parts(system, "simt", "roofline", eager, passes["B"].kernels, passes["B"].collectives)
    )
    one_f_one_b = (24 + 8 - 1) * (f + b)
    assert one_f_one_b < engine.latency_s < 1.12 * one_f_one_b  # ends: embedding/head, sends, sync, update
    assert engine.metrics["bubble_ideal"] == pytest.approx(7 / 31)
    assert engine.metrics["idle_share"] == pytest.approx(7 / 31, abs=0.05)


def test_a_send_and_a_gradient_all_reduce_share_the_gpus_nic():
    system = registry.cluster_system("dgx-a100", 2)  # a GPU's NIC share: 8 x 24 GB/s / 8 = 24 GB/s
    share = 24e9
    send = AllReduce("send", 240e6, stream=1, device=0, kind="send", ranks=2, per_node=1)
    grads_B = 0.010 * 192e9 * 16 / (2 * 15)  # a ring whose bandwidth part alone is 10 ms
    sync = AllReduce("sync", grads_B, stream=3, device=0, ranks=16, per_node=8, algorithm="ring")
    alone = collective(system, "all_reduce", grads_B, algorithm="ring")
    assert alone.bandwidth_s == pytest.approx(0.010)
    both = simulate(Workload("contention", (), (send, sync), gpus=8), system, "simt")
    # each streams 240 MB through the same 24 GB/s: together 20 ms, where each alone takes 10 ms
    assert both.instance_ends_s[0] == pytest.approx(480e6 / share + alone.latency_s, rel=0.01)


@pytest.mark.slow
def test_the_step_reports_what_megatron_reports():
    params = {**GPT3, "batch": 1536, "nodes": 128, "tp": 8, "pp": 16, "microbatches": 192}
    p = parsim.predict("network", params, cluster="dgx-a100")
    m = p.metrics
    assert p.gpus == 1024 and m["step_s"] == p.latency_s
    assert m["tokens_per_s"] == pytest.approx(1536 * 2048 / p.latency_s)
    # full recomputation runs the forward pass twice: four passes of FLOPs for three of the model's
    assert m["tflops_per_gpu"] * 1e12 / 312e12 == pytest.approx(4 / 3 * m["mfu"], rel=0.03)
    shares = m["compute_share"] + m["tp_comm_share"] + m["dp_comm_share"] + m["idle_share"]
    assert shares == pytest.approx(1.0)
    assert m["tp_comm_share"] > 0.05 and m["dp_comm_share"] > 0  # two all-reduces per layer and pass
    assert any("pipeline stage s's first GPU" in note for note in p.notes)


def test_unequal_stages_are_said_in_words_and_in_the_split_table():
    # Before: pp=64 over gpt3-175b's 96 layers was accepted silently (issue 27, 11).
    from parsim.workloads.transformer_memory import layers_per_stage, uneven_stages

    gpt3 = LLMS["gpt3-175b"]
    assert [len(r) for r in parallel3d.stage_layers(gpt3, 64)] == [2] * 32 + [1] * 32
    assert uneven_stages(gpt3, 64) == (
        "pp=64 does not divide gpt3-175b's 96 layers: the stages are unequal (32 of 2 layers and 32 of 1); "
        "the 2-layer stages set the pipeline's pace and the others wait"
    )
    assert uneven_stages(gpt3, 8) == "" and layers_per_stage(gpt3, 8) == "12"
    assert layers_per_stage(gpt3, 64) == "2 or 1" and layers_per_stage(LLMS["gpt2"], 5) == "3 or 2"


def test_a_prediction_with_unequal_stages_says_so():
    given = {"model": "llama-2-7b", "tp": 1, "pp": 24, "nodes": 3, "batch": 24, "microbatches": 24}
    notes = parsim.predict("network", given, cluster="dgx-a100", method="analytic").notes
    said = "pp=24 does not divide llama-2-7b's 32 layers: the stages are unequal (8 of 2 layers and 16 of 1)"
    assert said in " ".join(notes)
    even_split = {**given, "pp": 8, "microbatches": 8}
    even = parsim.predict("network", even_split, cluster="dgx-a100", method="analytic")
    assert not any("does not divide" in note for note in even.notes)


@pytest.mark.slow
def test_the_split_table_says_which_splits_have_unequal_stages(cli):
    from parsim.studies.splits import split_table

    rows = split_table({"model": "gpt2", "batch": 8, "nodes": 1}, "dgx-a100", method="analytic")
    assert {row.pp: row.layers_per_stage for row in rows} == {1: "12", 2: "6", 4: "3", 8: "2 or 1"}
    code, out, _ = cli("splits", "model=gpt2", "batch=8", "nodes=1", "--method", "analytic")
    assert code == 0 and "layers/stage" in out and "2 or 1" in out
