"""Serving under load (issue 24): the request-level simulation against hand-computed answers.

Oracles: tiny timelines worked out by hand for each scheduler (and a preemption); Lindley's
recursion for a single FIFO server on the very sample simulated, and M/D/1's mean wait
rho D / (2 (1 - rho)) on average; Little's law; ``llm_serve`` itself at a low load.
"""

from __future__ import annotations

import math

import attrs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsim import stack
from parsim.base.errors import ParsimError
from parsim.methods.predict import predict
from parsim.methods.serving.config import ServerConfig
from parsim.methods.serving.metrics import in_system_area, summarize, timeline
from parsim.methods.serving.simulate import simulate
from parsim.methods.serving.steps import ModelSteps, grid, kv_blocks, replica_system
from parsim.workloads.requests import RequestStream, generate


def one_second(prefill_tokens: int, decode_batch: int, decode_context_tokens: int) -> float:
    return 1.0


def affine(prefill_tokens: int, decode_batch: int, decode_context_tokens: int) -> float:
    """A step shaped like the model's: weights once, prompt tokens, batch rows and context reads."""
    return 0.01 + 5e-5 * prefill_tokens + 2e-4 * decode_batch + 1e-7 * decode_context_tokens


def two_requests() -> RequestStream:
    """A: at 0 s, 4 prompt tokens, 3 out; B: at 0.5 s, 4 prompt tokens, 2 out."""
    return RequestStream([0.0, 0.5], [4, 4], [3, 2])


def times(stream: RequestStream, config: ServerConfig, step=one_second, fuse: bool = True):
    outcome = simulate(stream, config, step, fuse=fuse)
    arrival = stream.arrival_s
    return list(outcome.first_token_s - arrival), list(outcome.finish_s - arrival), outcome


# -- tiny timelines, by hand (every step takes 1 s) ---------------------------------------------


def test_continuous_prefills_first_then_decodes_together():
    # 0-1 prefill A (A's token 1 at 1); 1-2 prefill B, A waits (B's token 1 at 2);
    # 2-3 decode A and B (B done at 3); 3-4 decode A (done at 4)
    ttft, e2e, _ = times(two_requests(), ServerConfig(kv_blocks=100, scheduler="continuous"))
    assert ttft == [1.0, 1.5] and e2e == [4.0, 2.5]


def test_static_batch_waits_for_max_batch_and_runs_to_its_longest():
    # B fills the batch at 0.5: prefill 0.5-1.5 (both first tokens), decodes end at 2.5 and 3.5
    ttft, e2e, _ = times(
        two_requests(), ServerConfig(kv_blocks=100, scheduler="static", max_batch=2, batch_timeout_s=10)
    )
    assert ttft == [1.5, 1.0] and e2e == [3.5, 2.0]


def test_static_batch_timeout_starts_a_partial_batch():
    # A alone at its timeout 0.2: prefill 0.2-1.2, done 3.2; B waits for the GPU, then 3.2-5.2
    ttft, e2e, _ = times(
        two_requests(), ServerConfig(kv_blocks=100, scheduler="static", max_batch=2, batch_timeout_s=0.2)
    )
    assert ttft == pytest.approx([1.2, 3.7]) and e2e == pytest.approx([3.2, 4.7])


def test_chunked_prefill_mixes_a_prompt_chunk_with_decodes():
    # chunk 3: 0-1 A's tokens 1-3; 1-2 A's last token + B's first 2 (A's first token at 2);
    # 2-3 A decodes + B's last 2 (B's first token at 3); 3-4 both decode (both done at 4)
    ttft, e2e, _ = times(two_requests(), ServerConfig(kv_blocks=100, scheduler="chunked", chunk=3))
    assert ttft == [2.0, 2.5] and e2e == [4.0, 3.5]


def test_a_multi_step_window_holds_an_arrival_until_it_ends():
    # vLLM's --num-scheduler-steps 3. A (0 s, 4+5): prefill 0-1, then a 3-step window 1-4; B
    # (1.5 s, 4+2) waits for the window's end: prefill 4-5 (TTFT 3.5); then one step 5-6 ends both
    # (each has 1 token left). One step at a time B would be admitted at 2 (TTFT 1.5).
    stream = RequestStream([0.0, 1.5], [4, 4], [5, 2])
    ttft, e2e, _ = times(stream, ServerConfig(kv_blocks=100, multi_step=3))
    assert ttft == [1.0, 3.5] and e2e == [6.0, 4.5]
    ttft, e2e, _ = times(stream, ServerConfig(kv_blocks=100))
    assert ttft == [1.0, 1.5] and e2e == [6.0, 2.5]


def test_a_request_ending_inside_a_window_is_seen_at_its_end():
    # A and B (0 s, 4+2 and 4+5) prefill together 0-1; the window 1-4 ends A (token 2 made at 2,
    # its slot and its end seen at 4); one more step 4-5 ends B
    stream = RequestStream([0.0, 0.0], [4, 4], [2, 5])
    ttft, e2e, outcome = times(stream, ServerConfig(kv_blocks=100, multi_step=3))
    assert ttft == [1.0, 1.0] and e2e == [4.0, 5.0]
    assert list(outcome.steps[:, 2]) == [1, 3, 1]  # the prefill, the window, the last step


def test_out_of_blocks_preempts_the_latest_and_recomputes_it():
    # 1-token blocks, 6 of them. A (0 s, 2+4) and B (0.5 s, 2+3) prefill at 0-1 and 1-2, decode
    # together 2-3 (6 blocks used); at 3 both need a 7th: B (admitted last) is preempted, A decodes
    # 3-4 and 4-5 (done); B recomputes its prompt and 2 tokens (4) at 5-6, which yields its last.
    stream = RequestStream([0.0, 0.5], [2, 2], [4, 3])
    ttft, e2e, outcome = times(stream, ServerConfig(kv_blocks=6, block=1))
    assert ttft == [1.0, 1.5] and e2e == [5.0, 5.5]
    metrics = summarize(outcome)
    assert (metrics.requests_preempted, metrics.preemptions) == (1, 1)
    assert metrics.kv_cache_peak_fraction == 1.0


def test_a_request_longer_than_the_cache_is_refused_and_reported():
    stream = RequestStream([0.0, 1.0], [10, 2], [10, 2])
    metrics = summarize(simulate(stream, ServerConfig(kv_blocks=4, block=4), one_second))
    assert (metrics.requests_arrived, metrics.requests_completed, metrics.requests_refused) == (2, 1, 1)


def test_replicas_round_robin_and_least_loaded():
    stream = RequestStream([0.0, 0.0, 0.0], [1, 1, 1], [1, 1, 1])  # one prefill step each
    _, e2e, _ = times(stream, ServerConfig(kv_blocks=10, replicas=2, max_batch=1))
    assert e2e == [1.0, 1.0, 2.0]  # replica 0 serves requests 0 and 2
    _, e2e, _ = times(stream, ServerConfig(kv_blocks=10, replicas=3, router="least_loaded", max_batch=1))
    assert e2e == [1.0, 1.0, 1.0]


# -- queueing oracles ----------------------------------------------------------------------------


def fifo_server(stream: RequestStream, service_s: float) -> np.ndarray:
    """Lindley's recursion: the wait of each customer of one FIFO server of fixed service time."""
    waits, gaps = np.zeros(len(stream)), np.diff(stream.arrival_s)
    for n in range(1, len(stream)):
        waits[n] = max(0.0, waits[n - 1] + service_s - gaps[n - 1])
    return waits


def md1(step: float = 0.01):
    """max_batch=1, prompt 8, output 4: one 2-step prefill then 3 decodes, D = 0.05 s."""

    def service(prefill_tokens: int, decode_batch: int, decode_context_tokens: int) -> float:
        return 2 * step if prefill_tokens else step

    return service, 5 * step


def test_one_request_at_a_time_is_a_fifo_server_on_the_same_sample():
    service, d = md1()
    stream = generate(rate=0.8 / d, requests=3000, prompt=8, output=4, seed=3)
    outcome = simulate(stream, ServerConfig(kv_blocks=100, max_batch=1), service)
    np.testing.assert_allclose(outcome.admitted_s - stream.arrival_s, fifo_server(stream, d), atol=1e-9)


@pytest.mark.parametrize(
    ("rho", "requests"), [(0.5, 20_000), pytest.param(0.8, 100_000, marks=pytest.mark.slow)]
)
def test_md1_mean_wait(rho, requests):
    service, d = md1()
    stream = generate(rate=rho / d, requests=requests, prompt=8, output=4, seed=0)
    metrics = summarize(simulate(stream, ServerConfig(kv_blocks=100, max_batch=1), service))
    assert metrics.queue_mean_s == pytest.approx(rho * d / (2 * (1 - rho)), rel=0.05)


def test_littles_law_on_2000_requests():
    stream = generate(
        rate=30,
        requests=2000,
        prompt="lognormal:256:0.8",
        output="uniform:8:256",
        arrival="gamma",
        cv=2,
        seed=5,
    )
    metrics = summarize(simulate(stream, ServerConfig(kv_blocks=3000, max_batch=32), affine))
    assert metrics.mean_in_system == pytest.approx(metrics.requests_per_s * metrics.e2e_mean_s, rel=0.02)
    # and the area under N(t) is the sum of the latencies, request by request
    assert in_system_area(np.array([0.0, 1.0]), np.array([3.0, 2.0])) == pytest.approx(4.0)


def test_past_capacity_the_tail_grows_with_the_requests():
    p99 = []
    for requests in (250, 1000):
        stream = generate(rate=200, requests=requests, prompt=128, output=64, seed=1)
        p99.append(summarize(simulate(stream, ServerConfig(kv_blocks=2000, max_batch=16), affine)).e2e_p99_s)
    assert p99[1] > 3 * p99[0]  # four times the requests: the queue, and the wait, four times longer


def test_same_seed_same_result_other_seed_other_sample():
    def run(seed: int) -> dict:
        stream = generate(
            rate=20, requests=300, prompt="uniform:16:512", output="lognormal:64:0.5", seed=seed
        )
        return summarize(simulate(stream, ServerConfig(kv_blocks=800, scheduler="chunked"), affine)).as_dict()

    assert run(1) == run(1)
    assert run(1) != run(2)


# -- properties ----------------------------------------------------------------------------------


@st.composite
def loads(draw):
    n = draw(st.integers(1, 25))
    arrival = np.cumsum(draw(st.lists(st.floats(0, 2), min_size=n, max_size=n)))
    prompt = draw(st.lists(st.integers(1, 40), min_size=n, max_size=n))
    output = draw(st.lists(st.integers(1, 20), min_size=n, max_size=n))
    scheduler = draw(st.sampled_from(["static", "continuous", "chunked"]))
    config = ServerConfig(
        kv_blocks=draw(st.integers(1, 40)),
        block=draw(st.integers(1, 8)),
        scheduler=scheduler,
        multi_step=draw(st.integers(1, 4)) if scheduler == "continuous" else 1,
        max_batch=draw(st.integers(1, 6)),
        chunk=draw(st.integers(2, 24)),
        max_prefill_tokens=draw(st.integers(1, 64)),
        batch_timeout_s=draw(st.floats(0, 1)),
        replicas=draw(st.integers(1, 3)),
        router=draw(st.sampled_from(["round_robin", "least_loaded"])),
    )
    return RequestStream(arrival, prompt, output), config


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(loads(), st.floats(0.01, 1.0), st.floats(0, 0.01))
def test_no_request_vanishes_and_the_cache_never_overflows(load, base, per_token):
    stream, config = load

    def step(prefill_tokens: int, decode_batch: int, decode_context_tokens: int) -> float:
        return base + per_token * (prefill_tokens + decode_batch + 0.1 * decode_context_tokens)

    outcome = simulate(stream, config, step)
    blocks = -(-(stream.prompt_tokens + stream.output_tokens) // config.block)
    assert list(outcome.refused) == list(blocks > config.kv_blocks)
    served = ~outcome.refused
    assert not np.isnan(outcome.finish_s[served]).any()
    assert (outcome.first_token_s[served] > stream.arrival_s[served]).all()
    assert (outcome.finish_s[served] >= outcome.first_token_s[served]).all()
    assert (outcome.samples[:, 3] <= config.kv_blocks).all() and (outcome.samples[:, 3] >= 0).all()
    metrics = summarize(outcome)
    assert metrics.requests_completed + metrics.requests_refused == len(stream)
    assert metrics.kv_cache_peak_fraction <= 1.0
    # running the uninterrupted decode steps one event each changes nothing
    stepped = simulate(stream, config, step, fuse=False)
    np.testing.assert_allclose(stepped.finish_s, outcome.finish_s, rtol=1e-9)
    np.testing.assert_allclose(stepped.first_token_s, outcome.first_token_s, rtol=1e-9)
    assert (stepped.preemptions == outcome.preemptions).all()


def test_timeline_sums_the_replicas():
    stream = generate(rate=50, requests=200, prompt=64, output=32, seed=2)
    outcome = simulate(stream, ServerConfig(kv_blocks=200, replicas=2, max_batch=4), affine)
    line = timeline(outcome)
    assert (np.diff(line.time_s) >= 0).all()
    assert line.running.max() <= 8 and (line.kv_fraction <= 1).all()
    assert line.waiting.max() > 0


def test_batching_scores_are_typed():
    stream = generate(rate=5, requests=100, prompt=64, output=16, seed=2)
    config = ServerConfig(kv_blocks=500, slo_ttft_s=0.05, slo_tpot_s=1.0)
    metrics = summarize(simulate(stream, config, affine))
    assert 0 < metrics.slo_attainment <= 1
    assert metrics.goodput_requests_per_s == pytest.approx(metrics.requests_per_s * metrics.slo_attainment)
    assert summarize(simulate(stream, ServerConfig(kv_blocks=500), affine)).slo_attainment is None


# -- the model's steps ---------------------------------------------------------------------------

LLAMA = {"model": "llama-2-7b"}


@pytest.fixture(scope="module")
def llama_steps() -> ModelSteps:
    return ModelSteps(LLAMA, "a100-80gb", max_batch=64)


def test_grid_is_powers_of_two_and_half_again():
    assert grid(20) == [1, 2, 3, 4, 6, 8, 12, 16, 20]


@pytest.mark.parametrize("prompt", [512, 1000])
def test_low_load_reproduces_llm_serve(llama_steps, prompt):
    reference = predict("llm_serve", {**LLAMA, "prompt": prompt, "output": 128}, device="a100-80gb").metrics
    stream = generate(rate=0.05, requests=20, prompt=prompt, output=128, seed=1)
    blocks = kv_blocks(LLAMA, replica_system(LLAMA, "a100-80gb"), 16, 4096)
    metrics = summarize(simulate(stream, ServerConfig(kv_blocks=blocks), llama_steps))
    assert metrics.ttft_p50_s == pytest.approx(reference["time_to_first_token_s"], rel=0.02)
    assert metrics.tpot_p50_s == pytest.approx(reference["time_per_output_token_s"], rel=0.02)


def test_decode_is_affine_in_the_context(llama_steps):
    # the line through contexts 16 and 1024 predicts the step at 3000 (llm_serve's own figure)
    _, decode = llama_steps.phases(8, 3000)
    assert llama_steps.decode_s(8, 8 * 3000) == pytest.approx(decode, rel=0.01)


def test_kv_blocks_are_the_room_beside_the_weights():
    system = replica_system(LLAMA, "a100-80gb")
    blocks = kv_blocks(LLAMA, system, 16, 4096)
    # llama-2-7b: 2 (K, V) x 32 layers x 4096 x 2 bytes = 512 KiB per token; 80 GiB less 12.6 GiB
    # of weights leaves a little under 67 GiB, about 134,000 tokens
    assert 125_000 < blocks * 16 < 137_000


def test_sglangs_kv_pool_is_its_static_share_less_the_weights_by_hand():
    # SGLang keeps mem_fraction_static of the memory free at start (80 GiB less the 1 GiB CUDA
    # runtime) for weights and cache: 0.88 x 79 GiB = 69.52 GiB at one GPU, less llama-2-7b's
    # 6,738,415,616 bf16 weights (12.55 GiB): 56.97 GiB over 512 KiB per token = 116,670 tokens
    system = replica_system(LLAMA, "a100-80gb")
    params = {**LLAMA, "framework": "sglang"}
    weights = 6_738_415_616 * 2
    tokens = (0.88 * 79 * 2**30 - weights) / (512 * 2**10)
    assert kv_blocks(params, system, 16, 4096) == int(tokens // 16)
    # vLLM's profiling gives the cache the room past the activations and workspace: more of it
    assert kv_blocks({**LLAMA, "framework": "vllm"}, system, 16, 4096) > int(tokens // 16)


def test_sglangs_request_pool_bounds_its_running_requests_by_hand():
    # SGLang sizes its request pool as KV tokens / context x 512, clamped to [2048, 4096], and runs
    # at most that many requests and half its KV tokens (model_runner.py, tp_worker.py)
    sglang = stack.framework("sglang-0.3")
    assert sglang.running_limit(4096, 446_960, 131_072) == 2048  # 1,746 -> the least, 2,048
    assert sglang.running_limit(4096, 1_060_000, 131_072) == 4096  # 4,140 -> the most, 4,096
    assert sglang.running_limit(4096, 3_000_000, 4096) == 4096  # a short context: the most
    assert sglang.running_limit(4096, 3000, 4096) == 1500  # a tiny cache: half its tokens
    assert sglang.running_limit(64, 446_960, 131_072) == 64  # max_batch= given bounds it too
    assert stack.framework("vllm").running_limit(256, 3000, 4096) == 256  # no such rule
    # llm_load reports the limit it ran: Llama 3.1 8B on an A100 80GB, a 131,072-token context
    params = {"model": "llama-3.1-8b", "dtype": "bfloat16", "rate": 1.0, "requests": 2, "output": 4}
    notes = predict("llm_load", {**params, "framework": "sglang-0.3"}, device="a100-80gb").notes
    assert any("at most 2048 per iteration" in note for note in notes), notes


def test_the_static_share_follows_the_tensor_parallel_gpus():
    sglang = stack.framework("sglang")
    assert [sglang.static_memory_fraction(g) for g in (1, 2, 4, 8, 16)] == [0.88, 0.87, 0.85, 0.81, 0.79]
    assert stack.framework("sglang-0.3").static_memory_fraction(8) == 0.83
    assert stack.framework("vllm").static_memory_fraction(4) is None
    with pytest.raises(ValueError, match="static_memory"):
        attrs.evolve(sglang, static_memory=((4, 1.5),))


def mixed_load(rate: float, requests: int = 400) -> RequestStream:
    return generate(
        rate, requests, prompt="lognormal:256:0.6", output="uniform:8:512", seed=7, max_context=4096
    )


def best_rate(scheduler: str, steps: ModelSteps, target_s: float) -> float:
    """The highest rate whose P50 e2e stays within ``target_s`` (bisection on a log scale)."""
    config = ServerConfig(kv_blocks=8000, scheduler=scheduler, max_batch=32, batch_timeout_s=0.5)
    low, high = 0.05, 64.0
    for _ in range(9):
        rate = math.sqrt(low * high)
        if summarize(simulate(mixed_load(rate), config, steps)).e2e_p50_s <= target_s:
            low = rate
        else:
            high = rate
    return low


@pytest.mark.slow
def test_continuous_batching_doubles_static_throughput_at_the_same_latency(llama_steps):
    static = best_rate("static", llama_steps, 12.0)
    continuous = best_rate("continuous", llama_steps, 12.0)
    assert continuous >= 2 * static


def test_a_mixed_step_is_the_prefill_of_every_token_plus_the_decodes_attention(llama_steps):
    _, slope = llama_steps.decode_line(4)
    mixed = llama_steps(256, 4, 4 * 1000)
    assert mixed == pytest.approx(llama_steps.prefill_s(260) + slope * 1000)
    assert llama_steps(512, 0, 0) == llama_steps.phases(1, 512)[0]  # a grid prompt: llm_serve's own


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("scheduler", "fifo", "'scheduler' must be one of static, continuous, chunked: 'fifo'"),
        ("router", "random", "'router' must be one of round_robin, least_loaded: 'random'"),
        ("max_batch", 0, "'max_batch' must be an integer in 1..65,536: 0"),
        ("block", 1.5, "'block' must be an integer in 1..4,096: 1.5"),
        ("slo_ttft_s", -1.0, "'slo_ttft_s' must be >= 0 seconds: -1.0"),
        ("batch_timeout_s", None, "'batch_timeout_s' must be >= 0 seconds: None"),
        ("multi_step", 0, "'multi_step' must be an integer in 1..64: 0"),
    ],
)
def test_bad_server_settings_are_one_line_errors(field, value, message):
    with pytest.raises(ParsimError) as error:
        ServerConfig(kv_blocks=10, **{field: value})
    assert str(error.value) == message


def test_multi_step_runs_only_with_the_continuous_scheduler():
    with pytest.raises(ParsimError, match="'multi_step' .* needs scheduler=continuous"):
        ServerConfig(kv_blocks=10, scheduler="chunked", multi_step=4)
