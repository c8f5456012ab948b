"""Kernel-library rules of issue 26's kernel round 4: stream-K on Hopper and FFT's arithmetic share."""

from __future__ import annotations

import json
import math
import re

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import parsim
from parsim import stack
from parsim.base.errors import ParsimError
from parsim.hardware.presets import PROCESSORS
from parsim.hardware.tomlio import dumps_hardware, loads_hardware
from parsim.methods.engine.processor import kernel_s
from parsim.methods.engine.waves import decompose
from parsim.model.kernel import choose
from parsim.model.library import FFT, candidates, gemm_tiling, stream_k, tile_seconds
from parsim.model.rates import execution
from parsim.workloads.ops import gemm_kernel
from parsim.workloads.registry import make_workload

# --- stream-K on Hopper ---------------------------------------------------------------------------


def _plain(spec):
    return attrs.evolve(spec, stream_k=False)


def test_a_4096_product_on_the_h100_pcie_takes_4_49_waves_not_5_hand_computed():
    # 4096^3 in 256x128 tiles: 16 x 32 = 512 tiles on 114 SMs = 4.49 waves; the tail wave of 56 tiles
    # would cost a whole fifth wave, stream-K shares it: 512/114 tile times instead of 5
    spec = PROCESSORS["h100-pcie"]
    kernel = gemm_kernel(4096, 4096, 4096, "bfloat16", "g")
    ex = execution(spec, "simt", kernel)
    tiling = gemm_tiling(spec, ex, kernel)
    assert (tiling.rows, tiling.columns, tiling.tiles) == (256, 128, 512)
    tile_s = tile_seconds(kernel, ex, 256, 128, 1, spec)
    shared = decompose(kernel, ex, spec)
    assert len(shared.phases) == 1
    assert shared.phases[0].compute_s == pytest.approx(512 / 114 * tile_s, rel=1e-12)
    tailed = decompose(kernel, execution(_plain(spec), "simt", kernel), _plain(spec))
    assert [p.tiles for p in tailed.phases] == [456, 56]
    assert sum(p.compute_s for p in tailed.phases) == pytest.approx(5 * tile_s, rel=1e-12)


def test_cuda_core_products_and_convolutions_keep_their_tail():
    spec = PROCESSORS["h100-sxm"]
    tensor = gemm_kernel(4096, 4096, 4096, "bfloat16", "g")
    simt = gemm_kernel(4096, 4096, 4096, "float32", "g")  # IEEE float32: the CUDA cores
    assert stream_k(spec, execution(spec, "simt", tensor), tensor)
    assert not stream_k(spec, execution(spec, "simt", simt), simt)
    conv = make_workload(
        "conv2d",
        {
            "batch": 32,
            "channels": 256,
            "height": 14,
            "width": 14,
            "filters": 256,
            "kernel": 3,
            "dtype": "bfloat16",
        },
    ).ops[0]
    assert not stream_k(spec, execution(spec, "simt", conv), conv)
    assert not stream_k(PROCESSORS["a100-80gb"], execution(PROCESSORS["a100-80gb"], "simt", tensor), tensor)


@given(
    m=st.integers(64, 12_000),
    n=st.integers(64, 12_000),
    k=st.integers(64, 8192),
    dtype=st.sampled_from(["float16", "bfloat16"]),
)
@settings(max_examples=40, deadline=None)
def test_stream_k_never_beats_the_even_share_and_never_loses_to_the_tail(m, n, k, dtype):
    # invariants: the busy time is every tile's work spread evenly over the SMs (a part of one tile
    # each when there are fewer tiles than SMs: stream-K splits their reductions), never more than
    # the same tiling with a tail wave
    spec = PROCESSORS["h100-sxm"]
    kernel = gemm_kernel(m, n, k, dtype, "g")
    ex = execution(spec, "simt", kernel)
    tiling = gemm_tiling(spec, ex, kernel)
    tile_s = tile_seconds(kernel, ex, tiling.rows, tiling.columns, tiling.split, spec)
    busy = sum(p.compute_s for p in decompose(kernel, ex, spec).phases)
    assert busy == pytest.approx(tiling.tiles / spec.cores * tile_s, rel=1e-9)
    assert busy <= math.ceil(tiling.tiles / spec.cores) * tile_s * (1 + 1e-12)


def test_hopper_products_reach_the_same_rate_at_2048_4096_and_8192():
    # zzc0721 #95: the H100 PCIe's FP16 torch.mm at 458 / 457 / 437 TFLOP/s for 2048 / 4096 / 8192
    def rate(edge):
        p = parsim.predict(
            "matmul", {"m": edge, "n": edge, "k": edge, "dtype": "float16"}, device="h100-pcie"
        )
        return 2 * edge**3 / (p.latency_s - p.breakdown["overhead"])

    rates = [rate(edge) for edge in (2048, 4096, 8192)]
    assert max(rates) / min(rates) < 1.05


def test_stream_k_round_trips_through_toml():
    spec = PROCESSORS["h100-sxm"]
    assert spec.stream_k
    assert loads_hardware(dumps_hardware(spec)) == spec
    assert not loads_hardware(dumps_hardware(_plain(spec))).stream_k


def test_a_non_boolean_stream_k_is_a_one_line_error():
    with pytest.raises(ParsimError, match="'stream_k'"):
        attrs.evolve(PROCESSORS["h100-sxm"], stream_k="yes")


# --- FFT convolutions -----------------------------------------------------------------------------

LAYER = {
    "batch": 16,
    "channels": 192,
    "height": 28,
    "width": 28,
    "filters": 32,
    "kernel": 5,
    "dtype": "float32",
}


def _fft_kernel(device: str):
    spec = PROCESSORS[device]
    conv = make_workload("conv2d", LAYER).ops[0]
    return spec, dict(candidates(spec, conv))[FFT]


def test_fft_arithmetic_runs_at_cudnns_share_of_the_vector_rate_hand_computed():
    # V100 SXM2: 64 lanes x 2 FLOPs x 1.53 GHz = 195.84 GFLOP/s per SM, x 0.3 for cuDNN's FFT
    spec, fft = _fft_kernel("v100-sxm2")
    assert stack.library_of(spec).fft_efficiency == 0.3
    assert execution(spec, "simt", fft).core_flops_per_s == pytest.approx(64 * 2 * 1.53e9 * 0.3, rel=1e-12)


def test_deepbenchs_5x5_layer_runs_fft_and_is_bound_by_its_arithmetic():
    # cuDNN chose FFT_TILING on both chips (DeepBench); the V100 / T4 time ratio follows their vector
    # rates (15.7 vs 8.1 x 0.8 sustained: 2.4), not their bandwidths (800 vs 240 GB/s: 3.3)
    times = {}
    for device in ("v100-sxm2", "t4"):
        spec, fft = _fft_kernel(device)
        conv = make_workload("conv2d", LAYER).ops[0]
        assert choose(spec, "simt", "roofline", conv)[0] == FFT
        times[device] = kernel_s(spec, "simt", "roofline", fft)
    assert 2.0 < times["t4"] / times["v100-sxm2"] < 2.8


@pytest.mark.parametrize("value", [0.0, -0.1, 1.5])
def test_a_bad_fft_efficiency_is_a_one_line_error(value):
    with pytest.raises(ParsimError, match=re.escape("'fft_efficiency'")):
        attrs.evolve(stack.library_of(PROCESSORS["v100-sxm2"]), fft_efficiency=value)


def test_the_notes_say_stream_k_shares_the_last_wave_and_name_no_tail():
    product = {"m": 2048, "n": 2048, "k": 2048, "dtype": "float16"}
    hopper = parsim.predict("matmul", product, device="h100-pcie").notes
    assert any("1.12 waves, the last shared among the SMs (stream-K)" in note for note in hopper)
    assert not any("wave quantisation" in note for note in hopper)
    ampere = parsim.predict("matmul", product, device="a100-80gb").notes
    assert any("wave quantisation" in note for note in ampere) and not any("stream-K" in n for n in ampere)


def test_a_hardware_toml_turns_stream_k_off_from_the_cli(cli, tmp_path):
    # `parsim hardware show h100-pcie --toml` carries stream_k = true; set false, the 2048^3 product
    # pays its tail again: 256 tiles of 128x128 on 114 SMs take 3 waves, where stream-K spreads 128
    # tiles of 256x128 (the work of 2.25 such waves) evenly: 3 / 2.25 = 1.33 x the busy time
    code, out, _ = cli("hardware", "show", "h100-pcie", "--toml")
    assert code == 0 and "stream_k = true" in out
    path = tmp_path / "h100-tail.toml"
    path.write_text(out.replace("stream_k = true", "stream_k = false"))
    args = ("predict", "matmul", "m=2048", "n=2048", "k=2048", "dtype=float16", "--json")

    def compute_s(device: str) -> float:
        code, out, _ = cli(*args, "--device", device)
        assert code == 0
        return float(json.loads(out)["breakdown"]["compute"])

    assert compute_s(str(path)) / compute_s("h100-pcie") > 3 / (256 / 114)
