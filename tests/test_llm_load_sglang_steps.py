"""SGLang 0.4's decode step under load (``ModelSteps.engine_decode_s``): the overlap scheduler's
host work beside the GPU's, the eager steps above the CUDA-graph batch, and its decode attention's
bandwidth share — hand-computed answers on small numbers."""

from __future__ import annotations

import attrs
import pytest

from parsim import stack
from parsim.hardware import registry
from parsim.methods.serving.steps import GIL_SWITCH_S, ModelSteps
from parsim.workloads.llms import llm
from parsim.workloads.registry import validate_params
from parsim.workloads.serving import _phase_kernels
from parsim.workloads.transformer_ops import ATTENTION_CORE

LLAMA = {"model": "llama-2-7b", "framework": "sglang"}


@pytest.fixture(scope="module")
def steps() -> ModelSteps:
    return ModelSteps(LLAMA, "a100-80gb", max_batch=64)  # prices nothing until asked


def seconds_per_sequence() -> float:
    clock = registry.system("a100-80gb").host.clock_Hz
    return stack.framework("sglang").serve_sequence_cycles / clock


def test_a_few_sequences_pay_their_host_work_in_full(steps):
    # 8 sequences: 8 x 77 us = 0.6 ms, under the 5 ms the launching thread waits for the lock
    host = 8 * seconds_per_sequence()
    assert host < GIL_SWITCH_S
    assert steps.engine_decode_s(0.020, 8) == pytest.approx(0.020, rel=1e-12)


def test_host_work_beyond_the_switch_interval_runs_under_the_kernels(steps):
    # 100 sequences, 7.7 ms of host work in a 20 ms step (12.3 ms of kernels): 12.3 + 5 = 17.3 ms
    host = 100 * seconds_per_sequence()
    assert host == pytest.approx(0.00769, rel=1e-3)
    assert steps.engine_decode_s(0.020, 100) == pytest.approx(0.020 - host + GIL_SWITCH_S, rel=1e-12)


def test_an_eager_step_adds_its_launches_and_the_longer_side_sets_the_step(steps):
    engine = stack.framework("sglang")
    clock = registry.system("a100-80gb").host.clock_Hz
    eager = engine.serve_eager_step_cycles / clock  # 10 ms at 2.6 GHz
    host = 2000 * seconds_per_sequence()  # 154 ms
    # kernels 310 - 154 = 156 ms, + 10 ms of launches + 5 ms of lock: 171 ms, longer than the host's
    # 154 ms and its 10 ms of launches (164 ms)
    assert steps.engine_decode_s(0.310, 2000) == pytest.approx(0.310 - host + eager + GIL_SWITCH_S)
    # kernels 146 ms: 161 ms on the GPU's side, but the host's side is 164 ms
    assert steps.engine_decode_s(0.300, 2000) == pytest.approx(host + eager)
    # kernels 6 ms: the host's 154 ms and its 10 ms of Python launches (the same lock) set the step
    assert steps.engine_decode_s(host + 0.006, 2000) == pytest.approx(host + eager)


def test_the_cuda_graph_batch_bounds_the_eager_steps():
    engine = stack.framework("sglang")
    assert engine.serve_graph_max_batch == 160
    assert engine.eager_step_s(2.6e9, 160) == 0.0
    assert engine.eager_step_s(2.6e9, 161) == pytest.approx(0.010)
    assert stack.framework("sglang-0.3").eager_step_s(2.6e9, 4096) == 0.0


def test_an_engine_without_an_overlap_scheduler_keeps_the_priced_step():
    steps = ModelSteps({**LLAMA, "framework": "sglang-0.3"}, "a100-80gb", max_batch=64)
    assert steps.engine_decode_s(0.020, 100) == 0.020


def test_only_the_decode_attention_takes_the_engines_attention_share():
    params = validate_params("llm_serve", {**LLAMA, "batch": 4, "prompt": 512, "output": 2})
    config = llm("llama-2-7b")
    decode = _phase_kernels(config, params, 512, 1, 0, "decode")
    attention = [k for k in decode if k.part == ATTENTION_CORE]
    assert attention and all(k.access.bandwidth_share == 0.3 for k in attention)
    assert all(k.access.bandwidth_share == 1.0 for k in decode if k.part != ATTENTION_CORE)
    prefill = _phase_kernels(config, params, 0, 512, 0, "prefill")
    assert all(k.access.bandwidth_share == 1.0 for k in prefill)


def test_an_attention_share_out_of_range_is_refused():
    with pytest.raises(ValueError, match="decode_attention_share"):
        attrs.evolve(stack.framework("sglang"), decode_attention_share=0.0)
