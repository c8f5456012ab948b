"""Benchmark clients replayed: the very requests a published serving benchmark sent, and when.

A published serving figure comes from a benchmark *client* that drew its requests from a seeded
random generator: their arrival times and, for a synthetic dataset, their lengths. parsim's own
stream (``requests.generate``) draws the same distributions from its own generator, so a P50 or
P99 of 200 requests differs from the published one by sampling noise as well as by the model.
``client=`` replays the client's own draws instead, the way a flight simulator replays a recorded
flight rather than a typical one:

- ``vllm``: vLLM's ``benchmarks/benchmark_serving.py`` (0.6-0.8) seeds NumPy's global generator
  (``np.random.seed(seed)``, seed 0 by default), sends the sampled requests in the sample's order
  and after each one sleeps ``np.random.gamma(burstiness, 1 / (rate x burstiness))`` (burstiness 1:
  exponential gaps; ``arrival=gamma`` with ``cv``: burstiness 1 / cv^2). Its ShareGPT requests are
  a ``requests.SAMPLES`` sample in the file's order (``sharegpt``: the 200 pairs of vLLM 0.8.3's
  own run, ``input_lens`` in request order).
- ``sglang``: ``python -m sglang.bench_serving`` (Sept-Dec 2024) seeds NumPy with ``seed`` (1 by
  default), and its ``random`` dataset draws every prompt length ``randint(max(int(N r), 1), N + 1)``
  and then every output length ``randint(int(M r), M + 1)`` for ``--random-input-len N
  --random-output-len M --random-range-ratio r`` (0 then, as DataCrunch's runs record); then, after
  each request, ``np.random.exponential(1 / rate)``. ``prompt=uniform:1:N output=uniform:1:M`` are
  those flags at range ratio 0; an output drawn 0 (one request in M + 1) is served as one token.

Checked against the published files (``tests/test_clients.py``): the sglang draws reproduce the
input and output token totals of each of DataCrunch's ten distinct random-dataset SGLang runs
exactly, and the vLLM draws the order of vLLM 0.8.3's 200 ``input_lens``; replayed, parsim's runs
last within 0.2-0.8 % (vLLM 0.8.3 at 1-16/s) and 0.2-0.4 % (SGLang at 1-4/s) of the published
durations.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from parsim.base.errors import ParsimError, field_error
from parsim.workloads.requests import (
    MAX_REQUESTS,
    SAMPLES,
    Floats,
    Ints,
    Lengths,
    RequestStream,
    check_fields,
    lengths,
    sharegpt_pairs,
    truncate,
)

CLIENTS = ("vllm", "sglang")
"""``client=``: the benchmark clients whose draws can be replayed (none given: parsim's own stream)."""


def replayed(
    client: str, fields: Mapping[str, Any], *, max_context: int | None = None, budget: int = MAX_REQUESTS
) -> RequestStream:
    """The stream benchmark ``client`` sent for a stream's ``fields`` (``rate``, ``requests``,
    ``prompt``, ``output``; ``arrival``, ``cv`` and ``seed`` as ``requests.generate`` takes them,
    checked alike).

    Raises:
        ParsimError: a bad field, an unknown client, lengths the client does not draw, more requests
            than a sample holds, or arrivals the client does not send.
    """
    rate, arrival = fields["rate"], str(fields.get("arrival", "poisson"))
    cv, seed = fields.get("cv", 1.0), fields.get("seed", 0)
    count = check_fields(arrival, rate, cv, seed, fields["requests"], budget)
    prompts, outputs = check(client, fields["prompt"], fields["output"], count, arrival, int(seed))
    burstiness = 1.0 / cv**2 if arrival == "gamma" else 1.0
    arrivals, drawn_prompts, drawn_outputs = replay(
        client, float(rate), count, prompts, outputs, int(seed), burstiness
    )
    p, o = truncate(drawn_prompts, np.maximum(drawn_outputs, 1), max_context)  # an output of 0: one token
    return RequestStream(arrivals, p, o, f"{client}'s benchmark client at {rate:g}/s, seed {seed}")


def check(
    client: str,
    prompt: int | str | Lengths,
    output: int | str | Lengths,
    count: int,
    arrival: str,
    seed: int = 0,
) -> tuple[Lengths, Lengths]:
    """The lengths ``client`` is asked to replay, once it is known to send them (nothing drawn).

    Raises:
        ParsimError: an unknown client, lengths or arrivals it does not draw, more requests than a
            sample holds.
    """
    if client not in CLIENTS:
        raise ParsimError(f"'client' must be one of {', '.join(CLIENTS)}: {client!r}")
    if not 0 <= seed < 2**32:  # the clients' np.random.seed takes 32 bits
        raise field_error(
            "seed", f"an integer from 0 to 2**32 - 1 with client={client} (np.random.seed)", seed
        )
    prompts, outputs = lengths(prompt, "prompt"), lengths(output, "output")
    if arrival == "constant" or (client == "sglang" and arrival != "poisson"):
        kinds = "poisson" if client == "sglang" else "poisson or gamma"
        raise ParsimError(f"client={client} sends random arrivals: 'arrival' must be {kinds}: {arrival!r}")
    if client == "vllm":
        if prompts.kind != outputs.kind or prompts.kind not in SAMPLES:
            raise ParsimError(
                "client=vllm replays a ShareGPT sample in its order: prompt and output must both be "
                f"{' or '.join(SAMPLES)}"
            )
        size = len(sharegpt_pairs(prompts.kind))
        if count > size:
            raise ParsimError(
                f"client=vllm replays the {size:,} requests of the {prompts.kind} sample: "
                f"'requests' {count:,}"
            )
    elif any(spec.kind != "uniform" or spec.a != 1 for spec in (prompts, outputs)):
        raise ParsimError(
            "client=sglang replays its random dataset at range ratio 0: prompt=uniform:1:N output=uniform:1:M"
        )
    return prompts, outputs


def replay(
    client: str, rate: float, count: int, prompts: Lengths, outputs: Lengths, seed: int, burstiness: float
) -> tuple[Floats, Ints, Ints]:
    """The arrival times (the first at 0) and the prompt and output lengths ``client`` asked for
    (``check``-ed lengths; an output may be 0, as the client counts it)."""
    generator = np.random.RandomState(seed)  # the clients' np.random.seed: NumPy's legacy generator
    if client == "vllm":  # the sample's first ``count`` pairs, in its order
        pairs = sharegpt_pairs(prompts.kind)
        prompt, output = pairs[:count, 0], pairs[:count, 1]
        gaps = generator.gamma(burstiness, 1.0 / (rate * burstiness), size=count - 1)
    else:  # every prompt length, then every output length, then the gaps
        prompt = generator.randint(1, int(prompts.b) + 1, size=count)
        output = generator.randint(0, int(outputs.b) + 1, size=count)  # 0 may be asked
        gaps = generator.exponential(1.0 / rate, size=count - 1)
    arrivals: Floats = np.concatenate(([0.0], np.cumsum(gaps)))
    return arrivals, prompt.astype(np.int64), output.astype(np.int64)
