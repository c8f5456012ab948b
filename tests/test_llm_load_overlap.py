"""Serving under load, round 3: an overlap scheduler's one-step lag, inter-token latency (ITL), and
an engine's own default of running requests — hand-computed timelines and invariants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsim.base.errors import ParsimError
from parsim.methods.serving.config import ServerConfig
from parsim.methods.serving.metrics import summarize, weighted_percentiles
from parsim.methods.serving.simulate import simulate
from parsim.workloads.registry import validate_params
from parsim.workloads.requests import RequestStream, generate
from tests.test_llm_load import affine, one_second, two_requests


def test_an_overlap_scheduler_admits_an_arrival_one_step_later():
    # 0-1 prefill A. At 1 the step 1-2 was chosen while 0-1 ran (B, at 0.5, unseen): A decodes
    # 1-2. At 2 the pass saw B: prefill B 2-3 (TTFT 2.5); 3-4 both decode, both done at 4.
    # Without overlap B would be prefilled 1-2 (TTFT 1.5).
    outcome = simulate(two_requests(), ServerConfig(kv_blocks=100, overlap=True), one_second)
    assert list(outcome.first_token_s - [0.0, 0.5]) == [1.0, 2.5]
    assert list(outcome.finish_s - [0.0, 0.5]) == [4.0, 3.5]


def test_an_idle_overlap_scheduler_sees_an_arrival_at_once():
    stream = RequestStream([0.0, 10.0], [4, 4], [2, 2])  # B arrives long after A ended
    outcome = simulate(stream, ServerConfig(kv_blocks=100, overlap=True), one_second)
    assert list(outcome.first_token_s) == [1.0, 11.0] and list(outcome.finish_s) == [2.0, 12.0]


def test_overlap_needs_one_step_per_scheduling_on_replicas():
    with pytest.raises(ParsimError, match="'overlap'"):
        ServerConfig(kv_blocks=100, overlap=True, scheduler="static")
    with pytest.raises(ParsimError, match="'overlap'"):
        ServerConfig(kv_blocks=100, overlap=True, multi_step=4)


def test_itl_is_every_gap_between_streamed_tokens_by_hand():
    # continuous: 0-1 prefill A; 1-2 prefill B (A waits); 2-3 both decode; 3-4 A decodes.
    # A's gaps: 3 - 1 = 2 and 1; B's: 3 - 2 = 1. ITL P50 1, P99 2; TPOT (A 1.5, B 1) P50 1.25.
    metrics = summarize(simulate(two_requests(), ServerConfig(kv_blocks=100), one_second))
    assert metrics.itl_p50_s == 1.0 and metrics.itl_p99_s == 2.0
    assert metrics.tpot_p50_s == pytest.approx(1.25)


def test_a_multi_step_window_streams_its_tokens_together():
    # multi_step 3, one request (4 + 4): prefill 0-1, a window 1-4 (3 tokens out at 4): gaps 3, 0, 0
    outcome = simulate(RequestStream([0.0], [4], [4]), ServerConfig(kv_blocks=100, multi_step=3), one_second)
    assert sorted(np.repeat(outcome.gaps[:, 0], outcome.gaps[:, 1].astype(int))) == [0.0, 0.0, 3.0]


def test_static_batches_record_no_itl():
    config = ServerConfig(kv_blocks=100, scheduler="static", max_batch=2, batch_timeout_s=10)
    metrics = summarize(simulate(two_requests(), config, one_second))
    assert metrics.itl_p50_s is None and metrics.itl_p99_s is None


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0.001, 10.0), st.integers(1, 20)), min_size=1, max_size=30),
    st.sampled_from([1, 25, 50, 90, 99, 100]),
)
def test_weighted_percentiles_are_those_of_the_repeated_values(rows, q):
    gaps = np.array(rows, dtype=np.float64)
    repeated = np.repeat(gaps[:, 0], gaps[:, 1].astype(int))
    (got,) = weighted_percentiles(gaps, (q,))
    assert got == pytest.approx(float(np.percentile(repeated, q, method="inverted_cdf")))


@settings(max_examples=8, deadline=None)
@given(st.integers(0, 1000), st.booleans())
def test_every_token_after_the_first_has_one_gap(seed, overlap):
    stream = generate(40.0, 60, "uniform:8:200", "uniform:1:60", seed=seed)
    outcome = simulate(stream, ServerConfig(kv_blocks=400, max_batch=16, overlap=overlap), affine)
    assert outcome.gaps[:, 1].sum() == pytest.approx(float((stream.output_tokens - 1).sum()))
    assert (outcome.gaps[:, 0] >= 0).all()


def test_an_engine_sets_max_batch_when_not_given():
    base = {"model": "llama-2-7b", "rate": 1.0, "requests": 10}
    assert validate_params("llm_load", {**base, "framework": "sglang"})["max_batch"] == 4096
    assert validate_params("llm_load", {**base, "framework": "sglang", "max_batch": 64})["max_batch"] == 64
    assert validate_params("llm_load", {**base, "framework": "vllm"})["max_batch"] == 256
