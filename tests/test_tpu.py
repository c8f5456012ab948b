"""TPUs: presets, the systolic array's padding rule, and predictions that respect the chip's limits."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from parsim.base.errors import ParsimError
from parsim.hardware import registry
from parsim.hardware.presets import LINKS, PROCESSORS
from parsim.methods.predict import predict
from parsim.model import systolic
from parsim.model.kernel import kernel_time_s
from parsim.model.modes import check_mode, default_mode
from parsim.workloads.registry import make_workload

TPUS = ["tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e"]


def _matmul(size: int, dtype: str = "bfloat16"):
    return make_workload("matmul", {"m": size, "n": size, "k": size, "dtype": dtype}).kernels[0]


@pytest.mark.parametrize("pid", TPUS)
def test_tpu_presets_are_tpus_with_their_ici(pid):
    spec = PROCESSORS[pid]
    assert spec.kind == "tpu" and spec.is_accelerator and not spec.is_gpu
    assert spec.systolic_array == (256 if pid == "tpu-v6e" else 128)
    assert LINKS[spec.peer_link].kind == "ici" and LINKS[spec.peer_link].is_peer
    assert spec.default_link in LINKS
    # the clock derived from the bf16 peak and the MXUs gives back the peak
    per_cycle = spec.cores * spec.matrix_units_per_core * spec.systolic_array**2 * 2
    assert per_cycle * spec.clock_Hz == pytest.approx(dict(spec.matrix_flops_per_s)["bfloat16"])
    assert default_mode(spec) == "mimd+simd"
    with pytest.raises(ParsimError, match="simt needs a GPU"):
        check_mode(spec, "simt")


def test_tpu_v4_clock_is_the_papers():
    assert PROCESSORS["tpu-v4"].clock_Hz == pytest.approx(1050e6, rel=1e-3)  # Jouppi et al., ISCA 2023


def test_a_systolic_array_needs_a_tpu():
    import attrs

    with pytest.raises(ParsimError, match="systolic_array"):
        attrs.evolve(PROCESSORS["a100-80gb"], systolic_array=128)
    with pytest.raises(ParsimError, match="systolic_array"):
        attrs.evolve(PROCESSORS["tpu-v5e"], systolic_array=None)


def test_padded_product_by_hand():
    """4097^3 on a v5e: k and n padded to 33 x 128 = 4224, m to 513 x 8 = 4104 rows."""
    spec = PROCESSORS["tpu-v5e"]
    seconds, leg = kernel_time_s(_matmul(4097), spec, "mimd+simd")
    assert leg == "compute"
    assert seconds == pytest.approx(2 * 4104 * 4224 * 4224 / (197e12 * 0.85), rel=1e-9)
    unpadded, _ = kernel_time_s(_matmul(4096), spec, "mimd+simd")
    assert unpadded == pytest.approx(2 * 4096**3 / (197e12 * 0.85), rel=1e-9)


def test_129_costs_like_256_on_a_128_array_and_not_on_a_256_one():
    pad = systolic.padding(PROCESSORS["tpu-v5e"], _matmul(129))
    assert (pad.padded_m, pad.padded_n, pad.padded_k) == (136, 256, 256)
    assert pad.used == pytest.approx(129**3 / (136 * 256 * 256))
    assert "MXU 128x128" in pad.sentence() and "k=129 padded to 256" in pad.sentence()
    wide = systolic.padding(PROCESSORS["tpu-v6e"], _matmul(129))
    assert (wide.padded_n, wide.padded_k) == (256, 256)
    assert systolic.padding(PROCESSORS["tpu-v6e"], _matmul(256)).used == 1.0
    assert systolic.padding(PROCESSORS["a100-80gb"], _matmul(129)) is None  # tensor cores: no such rule


@given(m=st.integers(1, 5000), n=st.integers(1, 5000), k=st.integers(1, 5000), pid=st.sampled_from(TPUS))
def test_padding_only_grows_to_whole_arrays(m, n, k, pid):
    spec = PROCESSORS[pid]
    kernel = make_workload("matmul", {"m": m, "n": n, "k": k, "dtype": "bfloat16"}).kernels[0]
    pad = systolic.padding(spec, kernel)
    edge = spec.systolic_array
    assert pad.padded_n % edge == 0 and pad.padded_k % edge == 0 and pad.padded_m % systolic.ROWS == 0
    assert pad.padded_n - edge < n <= pad.padded_n and pad.padded_k - edge < k <= pad.padded_k
    assert 0 < pad.used <= 1
    assert systolic.padded(spec, kernel).work.flops >= kernel.work.flops


def test_the_note_and_the_bottleneck_sentence_say_padded():
    from parsim.report.text import bottleneck_sentence

    p = predict("matmul", {"m": 4097, "n": 4097, "k": 4097, "dtype": "bfloat16"}, device="tpu-v5e")
    assert any("k=4097 padded to 4224" in note for note in p.notes)
    sentence = bottleneck_sentence(p, PROCESSORS["tpu-v5e"])
    assert sentence.startswith("compute-bound") and "MXU 128x128" in sentence


CASES = [
    ("matmul", {"m": 4096, "n": 4096, "k": 4096, "dtype": "bfloat16"}),
    ("network", {"model": "gpt2", "batch": 8, "train": True, "dtype": "bfloat16"}),
    ("llm_serve", {"model": "llama-2-7b"}),
]


@pytest.mark.slow
@pytest.mark.parametrize("pid", TPUS)
@pytest.mark.parametrize(("workload", "params"), CASES, ids=[c[0] for c in CASES])
def test_predictions_on_each_tpu_respect_its_peaks(pid, workload, params):
    spec = PROCESSORS[pid]
    p = predict(workload, dict(params), device=pid)
    assert math.isfinite(p.latency_s) and p.latency_s > 0
    peak = max(rate for _, rate in spec.matrix_flops_per_s)
    assert 0 < p.flops_per_s <= peak  # never faster than the MXUs
    assert p.memory is not None and p.memory.fits
    system = registry.system(pid)
    assert system.link.id == spec.default_link


@pytest.mark.parametrize("pid", TPUS)
@pytest.mark.parametrize(("workload", "params"), CASES, ids=[c[0] for c in CASES])
def test_the_engine_and_the_closed_forms_agree_on_a_tpu(pid, workload, params):
    engine = predict(workload, dict(params), device=pid).latency_s
    analytic = predict(workload, dict(params), device=pid, method="analytic").latency_s
    assert analytic == pytest.approx(engine, rel=0.05)  # the same padding, fusion and step dispatch


@pytest.mark.parametrize("pid", TPUS)
def test_a_newer_tpu_never_loses_a_big_product_to_an_older_one(pid):
    order = ["tpu-v5e", "tpu-v4", "tpu-v5p", "tpu-v6e"]  # bf16 peaks 197 < 275 < 459 < 918
    times = [kernel_time_s(_matmul(8192), PROCESSORS[p], "mimd+simd")[0] for p in order]
    assert times == sorted(times, reverse=True)


# --- XLA: the stack on a TPU ----------------------------------------------------------------------


def _gpt2_inference(framework: str = "xla"):
    params = {
        "model": "gpt2",
        "batch": 1,
        "seq": 128,
        "dtype": "bfloat16",
        "framework": framework,
        "train": False,
    }
    return make_workload("network", params)


def test_xla_fuses_each_elementwise_consumer_of_a_product():
    from parsim.model.fusion import fuse_epilogues

    workload = _gpt2_inference()
    fused = fuse_epilogues(workload, registry.system("tpu-v5e"))
    # per layer: the residual add after the output projection, the GELU after the up projection and
    # the residual add after the down projection
    assert len(fused.ops) == len(workload.ops) - 3 * 12
    assert fuse_epilogues(workload, registry.system("a100-80gb")) is workload  # cuBLAS does not fuse
    names = [op.name for op in workload.ops]
    up = workload.ops[names.index("h.0.mlp up fwd")]
    gelu = workload.ops[names.index("h.0.mlp gelu fwd")]
    after = fused.ops[[op.name for op in fused.ops].index("h.0.mlp up fwd")]
    assert after.work.bytes_written == gelu.work.bytes_written  # GELU's output, not the product's
    assert after.work.bytes_read == up.work.bytes_read  # GELU read nothing but the product's output
    assert after.work.flops == up.work.flops  # its arithmetic hides under the product (vector unit)


def test_xla_is_the_default_framework_on_a_tpu_only():
    tpu = predict("network", {"model": "gpt2", "batch": 1, "seq": 128}, device="tpu-v5e")
    assert dict(tpu.params)["framework"] == "xla"
    gpu = predict("network", {"model": "gpt2", "batch": 1, "seq": 128}, device="a100-80gb")
    assert dict(gpu.params)["framework"] == "eager"
    asked = predict(
        "network", {"model": "gpt2", "batch": 1, "seq": 128, "framework": "eager"}, device="tpu-v5e"
    )
    assert dict(asked.params)["framework"] == "eager"


@pytest.mark.parametrize("method", ["engine", "analytic"])
def test_a_jitted_step_pays_its_dispatch_once(method):
    from parsim.stack import framework

    p = predict(
        "network",
        {"model": "gpt2", "batch": 1, "seq": 128, "dtype": "bfloat16"},
        device="tpu-v5e",
        method=method,
    )
    steps = [e for e in p.trace if e.label == "dispatch the compiled step"]
    assert len(steps) == 1
    host = registry.processor("xeon-e5-2630v3")
    assert steps[0].end_s - steps[0].start_s == pytest.approx(framework("xla").step_cycles / host.clock_Hz)


# --- the ICI torus and the pods -------------------------------------------------------------------


def test_all_reduce_on_a_4x4_torus_by_hand():
    """16 v5e chips, 1 GB, links of 50 GB/s per direction and 2 us: x then y, two links at once."""
    from parsim.model.torus import torus_collective

    link = LINKS["ici-v5e"]
    timing = torus_collective("all_reduce", 1e9, (4, 4), link)
    x = 2 * 3 / 4 * 1e9 / (2 * 50e9)  # 15 ms: reduce-scatter + all-gather along x
    y = 2 * 3 / 4 * 0.25e9 / (2 * 50e9)  # 3.75 ms: a quarter of the data along y
    assert timing.bandwidth_s == pytest.approx(x + y)
    assert timing.bandwidth_s == pytest.approx(1e9 * 15 / 16 / 50e9)  # the telescoped form
    assert timing.latency_s == pytest.approx((2 * 3 + 2 * 3) * 2e-6)
    half = torus_collective("reduce_scatter", 1e9, (4, 4), link)
    assert half.bandwidth_s == pytest.approx(timing.bandwidth_s / 2)


@given(
    dims=st.lists(st.integers(1, 16), min_size=2, max_size=3).map(tuple),
    nbytes=st.floats(1.0, 1e11),
    kind=st.sampled_from(["all_reduce", "reduce_scatter", "all_gather"]),
)
def test_a_torus_collective_is_never_faster_than_the_injection_bound(dims, nbytes, kind):
    from parsim.model.torus import injection_bound_s, torus_collective

    link = LINKS["ici-v5p"]
    timing = torus_collective(kind, nbytes, dims, link)
    assert timing.bandwidth_s >= injection_bound_s(kind, nbytes, dims, link) * (1 - 1e-12)
    assert timing.seconds >= timing.bandwidth_s >= 0


@pytest.mark.parametrize(
    ("pod", "shape"), [("tpu-v4-pod", (4, 4, 4)), ("tpu-v5p-pod", (4, 4, 4)), ("tpu-v5e-pod", (16, 16))]
)
def test_pods_are_tori_and_their_collectives_run_on_the_torus(pod, shape):
    from parsim.model.collectives import TORUS, collective

    system = registry.cluster_system(pod)
    assert system.torus == shape and system.device.kind == "tpu" and system.ring_link.kind == "ici"
    timing = collective(system, "all_reduce", 1e9)
    assert timing.algorithm == TORUS
    n = system.total_gpus
    assert timing.bandwidth_s == pytest.approx(1e9 * (n - 1) / n / system.ring_link.bandwidth_Bps)


@pytest.mark.parametrize("pod", ["tpu-v4-pod", "tpu-v5p-pod", "tpu-v5e-pod"])
def test_a_pod_runs_data_parallel_training(pod):
    params = {
        "model": "gpt2",
        "batch": 8,
        "seq": 1024,
        "sync": "ring",
        "scaling": "weak",
        "dtype": "bfloat16",
    }
    p = predict("data_parallel", params, cluster=pod)
    assert dict(p.params)["framework"] == "xla"
    assert p.latency_s > 0 and any("torus" in note for note in p.notes)


def test_torus_shapes_are_balanced():
    from parsim.hardware.network import torus_shape

    assert torus_shape(64, 3) == (4, 4, 4)
    assert torus_shape(128, 3) == (8, 4, 4)
    assert torus_shape(256, 2) == (16, 16)
    assert math.prod(torus_shape(96, 3)) == 96


def test_data_parallel_recompute_runs_the_forward_again_and_keeps_less():
    base = {"model": "gpt2", "batch": 2, "seq": 512, "sync": "ring", "dtype": "bfloat16", "gpus": 2}
    plain = make_workload("data_parallel", base)
    again = make_workload("data_parallel", {**base, "recompute": "full"})
    recomputed = [k for k in again.kernels if k.name.endswith("(recomputed)")]
    assert recomputed and len(again.kernels) == len(plain.kernels) + len(recomputed)
    names = {k.name for k in plain.kernels}
    assert all(k.name.removesuffix(" (recomputed)") in names for k in recomputed)
    assert again.memory.activations_B < plain.memory.activations_B
    with pytest.raises(ParsimError, match="recompute"):
        make_workload("data_parallel", {"model": "resnet18", "batch": 2, "recompute": "full"})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"torus_dims": 4}, "'torus_dims' must be one of 0, 2, 3: 4"),
        ({"fabric": "ici-v5e", "gpus_per_node": 0}, "'gpus_per_node'"),
    ],
)
def test_bad_pod_fields_are_one_line(change, message):
    import attrs

    from parsim.hardware.presets_cluster import CLUSTER_PRESETS

    with pytest.raises(ParsimError, match=message):
        attrs.evolve(CLUSTER_PRESETS["tpu-v5e-pod"], **change)


def test_a_torus_must_hold_every_chip():
    import attrs

    system = registry.cluster_system("tpu-v5e-pod")
    with pytest.raises(ParsimError, match="'torus' must be a shape of 256 chips"):
        attrs.evolve(system, torus=(8, 8))


@pytest.mark.slow
def test_a_maxtext_recipe_with_offloaded_checkpoints_fits_a_v6e_and_runs():
    # Llama 3.1 8B, 3 x 8192 tokens per chip on a v6e-8 (tpu-recipes): with every layer input and
    # the float32 log-probabilities on the chip it does not fit 32 GB; MaxText offloads the inputs
    # to the host and XLA fuses the loss
    params = {
        "model": "llama-3.1-8b",
        "batch": 3,
        "seq": 8192,
        "sync": "ring",
        "scaling": "weak",
        "dtype": "bfloat16",
        "optimizer": "adam",
        "zero": 3,
        "recompute": "full",
        "nodes": 1,
    }
    with pytest.raises(ParsimError, match="needs .* GiB per GPU"):
        predict("data_parallel", params, cluster="tpu-v6e-pod")
    p = predict("data_parallel", {**params, "offload": True}, cluster="tpu-v6e-pod")
    assert p.memory.needs.activations_B < 3 * 8192 * 128256 * 2 + 2 * 3 * 8192 * 4096 * 2 + 1
    assert 0 < p.metrics["samples_per_s"] < 8 * 3 * 918e12 / (6 * 8.0e9 * 3 * 8192)  # peak bound


def test_the_v6e_matmul_efficiency_is_the_measured_one():
    # [GEMM-V6E]: a jitted bfloat16 GEMM reaches 75-79 % of 918 TFLOP/s; older generations keep the estimate
    assert PROCESSORS["tpu-v6e"].matmul_efficiency == 0.77
    assert PROCESSORS["tpu-v5p"].matmul_efficiency == 0.85


def test_xlas_flash_attention_runs_at_its_fitted_share():
    from parsim.stack.presets import library_for

    assert library_for("tpu").attention_share("flash") == 0.6
    assert library_for("tpu").attention_share("flash-v1") == 1.0  # only the kind that was fitted
