"""Disaggregated serving (issue 24, ``disaggregated=P:D``) against hand-computed answers.

Oracles: tiny timelines worked out by hand with constant steps and transfers; a lone request's
end to end as prefill + the KV copy (its bytes over the NVLink preset's bandwidth, plus its
latency) + its decode steps; conservation (nothing vanishes, no cache overflows); the CLI's JSON.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from parsim.base.errors import ParsimError
from parsim.methods.serving.config import ServerConfig
from parsim.methods.serving.disagg import simulate_disaggregated
from parsim.methods.serving.load import run
from parsim.methods.serving.metrics import summarize
from parsim.methods.serving.simulate import SAMPLE_FIELDS
from parsim.methods.serving.steps import ModelSteps, kv_transfer
from parsim.workloads.load import parse_disaggregated
from parsim.workloads.requests import RequestStream, generate


def one_second(prefill_tokens: int, decode_batch: int, decode_context_tokens: int) -> float:
    return 1.0


def tenth_per_token(tokens: int) -> float:
    return 0.1 * tokens


def split(p: int, d: int, **fields) -> ServerConfig:
    return ServerConfig(kv_blocks=100, scheduler="continuous", disaggregated=(p, d), **fields)


def test_prefill_and_decode_run_side_by_side():
    # A: at 0, 4 prompt, 3 out; B: at 0.5, 2 prompt, 2 out; steps 1 s, copies 0.1 s per token.
    # prefill instance: A 0-1 (A's first token at 1), B 1-2 (B's at 2);
    # A's copy 1-1.4, B's 2-2.2; decode instance: A alone 1.4-2.4 (token 2), then A and B
    # together 2.4-3.4 (A's token 3, B's token 2): both end at 3.4, B's prefill never stalled A.
    stream = RequestStream([0.0, 0.5], [4, 2], [3, 2])
    outcome, transfers = simulate_disaggregated(stream, split(1, 1), one_second, tenth_per_token)
    assert list(outcome.first_token_s - stream.arrival_s) == pytest.approx([1.0, 1.5])
    assert list(outcome.finish_s - stream.arrival_s) == pytest.approx([3.4, 2.9])
    assert list(transfers) == pytest.approx([0.4, 0.2])
    assert [tuple(row) for row in outcome.steps] == [(1, 1, 1), (1, 1, 1), (1, 1, 1), (2, 1, 1)]
    metrics = summarize(outcome, transfers)
    assert metrics.kv_transfer_mean_s == pytest.approx(0.3) and metrics.preemptions == 0


def test_more_prefill_instances_take_the_prefill_queue_in_parallel():
    # two 4-token prompts at 0, one prompt per prefill step (max_prefill_tokens=4), copies free:
    # one prefill instance gives the first tokens at 1 and 2; two give both at 1, and the lone
    # decode instance then decodes both together (done at 2 instead of 2 and 3)
    stream = RequestStream([0.0, 0.0], [4, 4], [2, 2])
    for (p, d), ttft, e2e in (((1, 1), [1, 2], [2, 3]), ((2, 1), [1, 1], [2, 2])):
        outcome, _ = simulate_disaggregated(
            stream, split(p, d, max_prefill_tokens=4), one_second, lambda t: 0.0
        )
        assert list(outcome.first_token_s) == ttft and list(outcome.finish_s) == e2e


def test_a_single_token_output_ends_at_its_prefill_with_no_copy():
    stream = RequestStream([0.0], [8], [1])
    outcome, transfers = simulate_disaggregated(stream, split(1, 1), one_second, tenth_per_token)
    assert outcome.finish_s[0] == outcome.first_token_s[0] == 1.0 and np.isnan(transfers[0])
    assert summarize(outcome, transfers).kv_transfer_mean_s == 0.0


@pytest.mark.parametrize(
    ("p", "d", "router"), [(1, 1, "round_robin"), (2, 3, "least_loaded"), (3, 1, "round_robin")]
)
def test_no_request_vanishes_and_no_instance_overflows(p, d, router):
    def affine(prefill_tokens: int, decode_batch: int, decode_context_tokens: int) -> float:
        return 0.01 + 5e-5 * prefill_tokens + 2e-4 * decode_batch + 1e-7 * decode_context_tokens

    stream = generate(40.0, 300, "lognormal:200:0.8", "uniform:1:300", seed=3, max_context=4096)
    config = ServerConfig(kv_blocks=40, max_batch=16, block=16, disaggregated=(p, d), router=router)
    outcome, transfers = simulate_disaggregated(stream, config, affine, lambda t: 1e-5 * t)
    finished = ~np.isnan(outcome.finish_s)
    assert int(finished.sum()) + int(outcome.refused.sum()) == len(stream) and outcome.refused.any()
    assert (outcome.first_token_s[finished] <= outcome.finish_s[finished]).all()
    used = outcome.samples[:, SAMPLE_FIELDS.index("kv_blocks")]
    assert used.max() <= config.kv_blocks and set(outcome.samples[:, 4].astype(int)) <= set(range(p + d))
    several = finished & (stream.output_tokens > 1)
    assert np.allclose(transfers[several], 1e-5 * stream.prompt_tokens[several])


def test_a_lone_request_is_prefill_plus_the_kv_copy_plus_its_decodes():
    params = {"model": "llama-2-7b"}
    steps = ModelSteps(params, "h100-sxm", max_batch=8)
    prompt, output = 512, 16
    # llama-2-7b: K and V x 32 layers x 4096 x 2 bytes = 524,288 B per token, over h100-sxm's NVLink
    # preset (nvlink4: 375 GB/s, 3 us), one GPU per instance
    copy_s = 3e-6 + prompt * 524_288 / 375e9
    assert kv_transfer(params, "h100-sxm")(prompt) == pytest.approx(copy_s, rel=1e-12)
    decodes = sum(steps.decode_s(1, prompt + k - 1) for k in range(1, output))
    expected = steps.prefill_s(prompt) + copy_s + decodes
    load = {
        **params,
        "rate": 1.0,
        "requests": 1,
        "arrival": "constant",
        "cv": 1.0,
        "prompt": prompt,
        "output": output,
        "seed": 0,
        "scheduler": "continuous",
        "max_batch": 8,
        "batch_timeout": 0.1,
        "chunk": 512,
        "block": 16,
        "replicas": 1,
        "router": "round_robin",
        "disaggregated": "1:1",
    }
    metrics = run(load, "h100-sxm", steps=steps).metrics
    assert metrics.e2e_mean_s == pytest.approx(expected, rel=1e-9)
    assert metrics.ttft_p50_s == pytest.approx(steps.prefill_s(prompt), rel=1e-9)
    assert metrics.kv_transfer_mean_s == pytest.approx(copy_s, rel=1e-9)


def test_tensor_parallel_instances_copy_their_shards_at_once():
    # each of 2 GPUs sends half the cache at the same time: half the streaming, the same latency
    one = kv_transfer({"model": "llama-2-7b"}, "h100-sxm")(1000)
    two = kv_transfer({"model": "llama-2-7b", "gpus": 2}, "h100-sxm")(1000)
    assert two - 3e-6 == pytest.approx((one - 3e-6) / 2)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"scheduler": "static"}, "needs scheduler=continuous"),
        ({"scheduler": "chunked"}, "needs scheduler=continuous"),
        ({"replicas": 2}, "replaces 'replicas'"),
    ],
)
def test_incompatible_settings_are_refused(fields, message):
    with pytest.raises(ParsimError, match=message):
        ServerConfig(kv_blocks=10, **{"scheduler": "continuous", **fields}, disaggregated=(1, 1))


@pytest.mark.parametrize("value", ["0:1", "1", "a:b", "1:2:3", "1:2000"])
def test_a_bad_split_is_a_one_line_error(value):
    with pytest.raises(ParsimError, match="'disaggregated' must be P:D"):
        parse_disaggregated(value)


def test_cli_predicts_a_disaggregated_load_as_json(cli):
    args = ("predict", "llm_load", "model=llama-2-7b", "rate=4", "requests=100", "disaggregated=1:1")
    code, out, err = cli(*args, "--device", "h100-sxm", "--json")
    assert code == 0, err
    data = json.loads(out)
    metrics = data["metrics"]
    assert metrics["requests_arrived"] == metrics["requests_completed"] == 100
    assert 0 < metrics["kv_transfer_mean_s"] < metrics["ttft_p50_s"]
    assert data["params"]["disaggregated"] == "1:1"


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("disaggregated=1:1", "scheduler=static"), "scheduler=continuous"),
        (("disaggregated=1:1", "replicas=2"), "replicas"),
        (("disaggregated=0:2",), "P:D"),
    ],
)
def test_cli_refuses_incompatible_settings_in_one_line(cli, args, named):
    code, out, err = cli("predict", "llm_load", *args, "--device", "h100-sxm")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and named in err
