"""Automatic prefix caching in serving under load: hand-computed hits and timelines, invariants.

Oracles: the blocks a prompt's cached share covers, counted by hand (whole blocks only, never the
last token); tiny timelines whose steps cost 0.1 s per prompt token computed and 1 s + 10 ms per
cached token per decode step, worked out by hand with and without a warm cache.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from parsim.base.errors import ParsimError
from parsim.methods.serving.config import ServerConfig
from parsim.methods.serving.simulate import simulate
from parsim.workloads.registry import validate_params
from parsim.workloads.requests import RequestStream


def per_token(prefill_tokens: int, decode_batch: int, decode_context_tokens: int) -> float:
    """0.1 s per prompt token computed; a decode step 1 s plus 10 ms per cached token it reads."""
    return 0.1 * prefill_tokens + ((1.0 + 0.01 * decode_context_tokens) if decode_batch else 0.0)


@pytest.mark.parametrize(
    ("share", "prompt", "hits"),
    [
        (1.0, 10, 8),  # blocks of 4: two whole blocks; the 2 tokens of the third have no hash
        (1.0, 8, 4),  # all hit: the last block is computed again, for the first output token
        (1.0, 3, 0),  # no whole block
        (0.5, 16, 8),  # half of four blocks
        (0.4, 16, 4),  # 6.4 tokens: one whole block
        (0.0, 100, 0),
    ],
)
def test_prefix_hits_are_whole_blocks_and_never_the_last_token(share, prompt, hits):
    config = ServerConfig(kv_blocks=100, block=4, cached_prefix=share)
    assert config.prefix_hits(np.array([prompt]))[0] == hits


def test_a_warm_prefix_shortens_the_prefill_but_not_the_context():
    # one request, 8 prompt tokens, 2 out, blocks of 4. Cold: prefill 8 tokens 0-0.8 (TTFT 0.8),
    # one decode over 8 cached tokens 1.08 s (done 1.88). Warm: 4 tokens hit, prefill 4 tokens
    # 0-0.4, the same decode over 8 cached tokens (done 1.48)
    stream = RequestStream([0.0], [8], [2])
    for share, ttft, e2e in ((0.0, 0.8, 1.88), (1.0, 0.4, 1.48)):
        outcome = simulate(stream, ServerConfig(kv_blocks=100, block=4, cached_prefix=share), per_token)
        assert outcome.first_token_s[0] == pytest.approx(ttft)
        assert outcome.finish_s[0] == pytest.approx(e2e)


def test_chunked_prefill_spends_its_budget_on_the_uncached_tokens_only():
    # chunk 4, blocks of 4, prompt 12 (8 hit): one 4-token chunk 0-0.4; cold: three chunks 0-1.2
    stream = RequestStream([0.0], [12], [1])
    for share, ttft in ((0.0, 1.2), (1.0, 0.4)):
        config = ServerConfig(kv_blocks=100, block=4, scheduler="chunked", chunk=4, cached_prefix=share)
        assert simulate(stream, config, per_token).first_token_s[0] == pytest.approx(ttft)


@given(
    st.floats(0, 1),
    st.lists(st.integers(1, 5000), min_size=1, max_size=20),
    st.sampled_from([1, 4, 16, 64]),
)
def test_hits_are_block_aligned_below_the_prompt_and_grow_with_the_share(share, prompts, block):
    prompt = np.array(prompts, dtype=np.int64)
    hits = ServerConfig(kv_blocks=10, block=block, cached_prefix=share).prefix_hits(prompt)
    more = ServerConfig(kv_blocks=10, block=block, cached_prefix=min(1.0, share + 0.25)).prefix_hits(prompt)
    assert (hits % block == 0).all() and (hits >= 0).all() and (hits < prompt).all()
    assert (more >= hits).all()


@given(st.lists(st.tuples(st.integers(1, 300), st.integers(1, 50)), min_size=1, max_size=12))
def test_a_warm_cache_never_delays_a_lone_request_and_loses_none(pairs):
    # requests far apart (1000 s: more than any one takes here): each runs alone, so the warm
    # one is never later than the cold one
    arrival = [1000.0 * i for i in range(len(pairs))]
    stream = RequestStream(arrival, [p for p, _ in pairs], [o for _, o in pairs])
    cold = simulate(stream, ServerConfig(kv_blocks=10_000, block=16), per_token)
    warm = simulate(stream, ServerConfig(kv_blocks=10_000, block=16, cached_prefix=1.0), per_token)
    assert not np.isnan(warm.finish_s).any()
    assert (warm.first_token_s <= cold.first_token_s + 1e-12).all()


def test_bad_shares_and_schedulers_are_refused_by_name():
    with pytest.raises(ParsimError) as error:
        ServerConfig(kv_blocks=10, cached_prefix=1.5)
    assert str(error.value) == "'cached_prefix' must be a share of the prompt in 0..1: 1.5"
    with pytest.raises(ParsimError, match="'cached_prefix' .* needs scheduler=continuous or chunked"):
        ServerConfig(kv_blocks=10, scheduler="static", cached_prefix=0.5)
    with pytest.raises(ParsimError, match="cached_prefix"):
        validate_params("llm_load", {"model": "llama-3.1-8b", "cached_prefix": "2"})
