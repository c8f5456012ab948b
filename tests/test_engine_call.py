"""An offline engine's per-call host time (``FrameworkSpec.call_cycles``) in ``llm_serve``'s figures.

Oracle: TensorRT-LLM's preset is the ``cuda-graph`` framework plus ``call_cycles``, so the same
request's time to first token and end to end differ by exactly call_cycles / host clock, and its
time per output token not at all.
"""

from __future__ import annotations

import pytest

from parsim import stack
from parsim.hardware import registry
from parsim.methods.predict import predict


def figures(framework: str):
    params = dict(model="gpt2", batch=1, prompt=64, output=4, framework=framework)
    return predict("llm_serve", params, device="a100-80gb").records[0]


def test_a_generate_call_adds_its_host_time_to_the_first_token_only():
    plain, engine = figures("cuda-graph"), figures("tensorrt-llm")
    clock = registry.system("a100-80gb", None, None, 1).host.clock_Hz
    call_s = stack.framework("tensorrt-llm").call_cycles / clock
    assert call_s == pytest.approx(1.2e7 / 2.6e9)  # 4.6 ms on the default 2.6 GHz host
    assert engine.time_to_first_token_s - plain.time_to_first_token_s == pytest.approx(call_s)
    assert engine.e2e_latency_s - plain.e2e_latency_s == pytest.approx(call_s)
    assert engine.time_per_output_token_s == pytest.approx(plain.time_per_output_token_s)


def test_engines_without_a_call_cost_keep_llm_serve_unchanged():
    assert stack.framework("cuda-graph").call_cycles == 0
    assert stack.framework("vllm").call_cycles == 0  # online: its front end is request_cycles (llm_load)
