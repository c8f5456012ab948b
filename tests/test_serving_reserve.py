"""SGLang's admission under load (``methods.serving.reserve``): the look-ahead, the ratio budget,
retraction — hand-computed answers, and the invariant that a token-granular look-ahead never
runs out of room."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsim import stack
from parsim.base.errors import ParsimError
from parsim.methods.serving import reserve
from parsim.methods.serving.config import ServerConfig
from parsim.methods.serving.metrics import summarize
from parsim.methods.serving.simulate import _Simulation, simulate
from parsim.workloads.requests import RequestStream, generate
from tests.test_llm_load import affine, one_second, times


def test_the_look_ahead_counts_the_survivors_growth_against_what_the_first_ends_free():
    # sorted by tokens left: (2 left, 10 held), (5 left, 4 held). Check 0: room - 5 x 2 > 0;
    # check 1: room + 10 - 5 x 1 > 0. So room must exceed 10.
    left, held = np.array([5, 2]), np.array([4, 10])
    assert not reserve.fits(left, held, 10)
    assert reserve.fits(left, held, 11)
    # a request with nothing left is not counted (nor what it holds)
    assert reserve.fits(np.array([0, 3]), np.array([100, 1]), 4) and not reserve.fits(
        np.array([0, 3]), np.array([100, 1]), 3
    )


def test_retraction_takes_the_fewest_generated_first_and_the_longest_prompt_among_equals():
    order = reserve.retract_order(np.array([3, 1, 1, 5]), np.array([10, 4, 8, 2]))
    assert list(order) == [2, 1, 0, 3]


def test_the_new_token_ratio_falls_to_its_floor_and_a_retraction_resets_it():
    state = reserve.Reservation()
    state.decoded(300)
    assert state.ratio == pytest.approx(0.7 - 300 * (0.7 - 0.098) / 600)
    state.decoded(10_000)
    assert state.ratio == pytest.approx(0.098)
    state.full = True
    state.retracted(np.array([10, 30]), np.array([100, 100]))  # (40 + 2 x 20) / 200
    assert state.ratio == pytest.approx(0.4) and not state.full
    state.decoded(3)  # the step after the retraction keeps the ratio it set
    assert state.ratio == pytest.approx(0.4 - 2 * (0.7 - 0.098) / 600)
    assert state.open(1000, np.array([100, 5000]))
    assert state.budget == pytest.approx(1000 - state.ratio * (100 + 4096))
    state.idle()
    assert state.ratio == 0.7


def test_reserve_queues_what_prompt_admission_preempts():
    # 1-token blocks, 6 of them; A (0 s, 2 + 4 tokens), B (0.5 s, 2 + 3), 1 s steps.
    # prompt (vLLM): both run, B is preempted at 3 (tests/test_llm_load.py): TTFT 1 and 1.5.
    # reserve (SGLang): A alone is admitted (idle replica); its prompt and whole output spend the
    # ratio budget (6 - (2 + 4) = 0: batch full), so B waits for A's end at 4 (A: prefill 0-1,
    # decodes 1-4), then prefill 4-5 (TTFT 4.5) and decodes 5-7 (e2e 6.5). Nothing preempted.
    stream = RequestStream([0.0, 0.5], [2, 2], [4, 3])
    ttft, e2e, outcome = times(stream, ServerConfig(kv_blocks=6, block=1, admission="reserve"))
    assert ttft == [1.0, 4.5] and e2e == [4.0, 6.5]
    assert summarize(outcome).preemptions == 0


def test_a_decode_out_of_room_retracts_to_the_back_of_the_queue():
    # three decoding requests hold every block; the next token needs 3 more: the one with the fewest
    # tokens generated (1) goes first, then more until 20 steps' tokens fit for those left
    stream = RequestStream([0.0, 0.0, 0.0, 0.0], [4, 4, 4, 4], [50, 50, 50, 50])
    config = ServerConfig(kv_blocks=30, block=1, admission="reserve")
    sim = _Simulation(stream, config, one_second, True)
    replica = sim.replicas[0]
    decoding = np.array([0, 1, 2])
    replica.running = decoding.copy()
    replica.waiting.append(3)
    sim.generated[decoding] = [6, 1, 9]
    sim.cached[decoding] = [10, 5, 13]
    sim.held[decoding] = [10, 5, 13]
    sim.prefill_left[decoding] = 0
    replica.free = 2
    kept, need = sim._preempt(replica, decoding)
    # request 1 (1 generated) goes first and frees 5 blocks: 7 free < 20 steps x 2 requests, so 0
    # (6 generated) goes too (17 free); the last one is always kept
    assert list(kept) == [2] and list(need) == [1]
    assert list(replica.waiting) == [3, 1, 0] and list(replica.running) == [2]
    assert list(sim.prefill_left[[1, 0]]) == [4 + 1, 4 + 6]  # prompt and tokens so far, again
    assert replica.free == 17 and list(sim.preemptions) == [1, 1, 0, 0]
    assert replica.reservation.ratio == pytest.approx((9 + 20) / 50)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**16), st.floats(1.0, 40.0), st.sampled_from(["continuous", "chunked"]))
def test_a_token_granular_look_ahead_never_runs_out_of_room(seed, rate, scheduler):
    # SGLang's check assumes each running request generates all it has left: with 1-token pages the
    # cache can never overflow, so nothing is ever retracted, and every request finishes
    stream = generate(rate, 60, "uniform:1:64", "uniform:1:64", seed=seed)
    config = ServerConfig(kv_blocks=300, block=1, scheduler=scheduler, chunk=64, admission="reserve")
    outcome = simulate(stream, config, affine)
    assert int(outcome.preemptions.sum()) == 0
    assert not np.isnan(outcome.finish_s[~outcome.refused]).any()


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**16), st.integers(8, 60), st.sampled_from(["continuous", "chunked"]))
def test_with_paged_blocks_every_request_still_finishes_or_is_refused(seed, blocks, scheduler):
    # 8-token blocks round the look-ahead's tokens up, so a decode may still run out and retract:
    # retracted requests are queued again, never lost, and the simulation ends
    stream = generate(40.0, 60, "uniform:1:100", "uniform:1:100", seed=seed)
    config = ServerConfig(kv_blocks=blocks, block=8, scheduler=scheduler, chunk=32, admission="reserve")
    outcome = simulate(stream, config, affine)
    finished = ~np.isnan(outcome.finish_s)
    assert (finished ^ outcome.refused).all()


def test_reserve_needs_one_step_per_scheduling_on_replicas():
    with pytest.raises(ParsimError, match="admission=reserve"):
        ServerConfig(kv_blocks=100, admission="reserve", scheduler="static")
    with pytest.raises(ParsimError, match="admission=reserve"):
        ServerConfig(kv_blocks=100, admission="reserve", multi_step=4)
    with pytest.raises(ParsimError, match="'admission'.*prompt, reserve.*'lifo'"):
        ServerConfig(kv_blocks=100, admission="lifo")


def test_sglang_admits_by_reserving_and_vllm_by_prompt():
    assert stack.framework("sglang").serve_admission == "reserve"
    assert stack.framework("vllm").serve_admission == "prompt"
    assert stack.framework("cuda-graph").serve_admission == "prompt"
