"""``llm_load``: a language model served under load — requests arriving over time, a scheduler, a queue.

Where ``llm_serve`` is one batch of identical requests (one program), ``llm_load`` is a stream of
requests (``requests``: generated at ``rate`` per second, or a ``trace`` file) served by
``replicas`` copies of the model on ``gpus`` tensor-parallel GPUs each, under a scheduler
(``static``, ``continuous``, ``chunked``), with a paged KV cache. Its prediction is the
request-level simulation of ``methods.serving`` (the definition's ``requests`` says so), and what
it reports is the tail: the percentiles of time to first token, time per output token and
end-to-end latency, the throughput, the preemptions, the KV cache's peak (``LoadRecord``).

The model's own fields (``model``, ``dtype``, ``weights``, ``kv_dtype``, ``gpus``, ``attention``,
``framework``) are ``llm_serve``'s, and checked by its rules; each step is priced from
``llm_serve`` predictions.

``disaggregated="P:D"`` serves on P prefill and D decode instances of ``gpus`` GPUs each, the KV
cache of each request copied between them over the node's GPU link (``methods.serving.disagg``);
TTFT ends at the prefill instance's first token. It needs ``scheduler=continuous`` and one replica.
"""

from __future__ import annotations

from typing import Any, Literal

import attrs
from pydantic import Field

from parsim import stack
from parsim.base import units
from parsim.base.errors import ParsimError, field_error
from parsim.stack.engines import ServeFramework
from parsim.workloads import clients
from parsim.workloads import requests as request_streams
from parsim.workloads.base import Params, Workload
from parsim.workloads.definition import ParamsModel, WorkloadDef
from parsim.workloads.quantised import WeightFormat
from parsim.workloads.records import Record, figure
from parsim.workloads.serving import LlmServeParams, check_llm_serve, llm_serve

NAME = "llm_load"
SERVE_FIELDS = tuple(
    name for name in LlmServeParams.model_fields if name not in ("batch", "prompt", "output")
)
"""The fields that say which model runs how (``llm_serve``'s, but one request's shape)."""
STREAM_FIELDS = ("rate", "requests", "arrival", "cv", "prompt", "output", "seed", "client")
"""The fields of a generated stream: a trace file gives its own arrivals and lengths."""
MAX_REQUESTS_FIELD = 10**7  # the budget (``base.budget``) refuses far fewer; this bounds typos


class LlmLoadParams(ParamsModel):
    """``llm_load``'s parameters: the model as ``llm_serve``'s, the load, the server, the SLOs."""

    dtype: Literal["float16", "bfloat16", "float32"] = "float16"
    model: str = Field("llama-2-7b", description="language model (gpt2 ... llama-2-70b)")
    weights: WeightFormat = Field("dtype", description="weight type (as llm_serve)")
    kv_dtype: Literal["dtype", "float16", "bfloat16", "float32", "int8", "float8"] = Field(
        "dtype", description="element type of the KV cache (dtype: as the activations)"
    )
    gpus: int = Field(1, gt=0, le=64, description="tensor-parallel GPUs of one replica")
    attention: Literal["flash", "flash-v1", "unfused"] = Field("flash", description="as llm_serve")
    framework: ServeFramework = Field("cuda-graph", description="as llm_serve (or a serving engine)")
    ep: int = Field(
        1, gt=0, le=64, description="mixture of experts: expert-parallel GPUs of a replica's (as llm_serve)"
    )
    imbalance: float = Field(1.0, ge=1.0, le=1000.0, description="mixture of experts: as llm_serve")
    capacity_factor: float = Field(0.0, ge=0.0, le=1000.0, description="mixture of experts: as llm_serve")
    replicas: int = Field(1, gt=0, le=1024, description="copies of the model behind the router")
    router: Literal["round_robin", "least_loaded"] = Field("round_robin", description="request -> replica")
    rate: float = Field(1.0, gt=0, le=1e6, description="requests per second (all replicas)")
    requests: int = Field(1000, gt=0, le=MAX_REQUESTS_FIELD, description="requests simulated")
    arrival: Literal["poisson", "gamma", "constant"] = Field("poisson", description="arrival process")
    cv: float = Field(1.0, ge=0.05, le=20, description="gamma arrivals: coefficient of variation of the gaps")
    prompt: int | str = Field(
        512,
        description="prompt tokens: a number, uniform:a:b, lognormal:median:sigma, sharegpt(-dataset)",
    )
    output: int | str = Field(
        128,
        description="output tokens: a number, uniform:a:b, lognormal:median:sigma, sharegpt(-dataset)",
    )
    trace: str | None = Field(
        None, description="CSV of arrival_s,prompt_tokens,output_tokens (or Azure's columns) instead"
    )
    seed: int = Field(0, ge=0, le=2**63 - 1, description="random seed of the stream")
    client: Literal["vllm", "sglang"] | None = Field(
        None,
        description="replay a benchmark client's own draws (workloads.clients): vllm (benchmark_serving.py, "
        "seed 0) or sglang (sglang.bench_serving, seed 1)",
    )
    scheduler: Literal["static", "continuous", "chunked"] = Field("continuous", description="batching")
    max_batch: int = Field(
        256, gt=0, le=65_536, description="requests in one iteration, at most (default 256 or the engine's)"
    )
    batch_timeout: float = Field(0.1, ge=0, le=3600, description="static: seconds the oldest waits")
    chunk: int = Field(512, gt=1, le=10**6, description="chunked: tokens per step")
    multi_step: int = Field(
        1, ge=1, le=64, description="continuous: decode steps per scheduling (vLLM --num-scheduler-steps)"
    )
    block: int = Field(16, gt=0, le=4096, description="tokens per KV-cache block")
    cached_prefix: float = Field(
        0.0,
        ge=0,
        le=1,
        description="share of each prompt in the prefix cache on arrival (1: a rerun of the same prompts)",
    )
    slo_ttft: float | None = Field(None, gt=0, le=3600, description="time-to-first-token SLO (s)")
    slo_tpot: float | None = Field(None, gt=0, le=3600, description="time-per-output-token SLO (s)")
    disaggregated: str | None = Field(
        None, description="P:D prefill and decode instances of gpus GPUs each (DistServe), KV over the link"
    )


def serve_params(params: Params) -> dict[str, Any]:
    """The ``llm_serve`` fields of ``llm_load`` parameters (which model runs how)."""
    return {name: params[name] for name in SERVE_FIELDS if name in params}


MAX_INSTANCES = 1024
"""Prefill or decode instances of a disaggregated server, at most (as ``replicas``)."""


def parse_disaggregated(value: object) -> tuple[int, int]:
    """``"P:D"`` as (P, D), prefill and decode instances, each in 1..``MAX_INSTANCES``.

    Raises:
        ParsimError: not two such counts joined by a colon.
    """
    parts = str(value).split(":")
    if len(parts) == 2 and all(part.strip().isdigit() for part in parts):
        split = int(parts[0]), int(parts[1])
        if all(1 <= count <= MAX_INSTANCES for count in split):
            return split
    raise field_error("disaggregated", f"P:D, two instance counts in 1..{MAX_INSTANCES} (e.g. 1:1)", value)


def _check_disaggregated(name: str, params: Params) -> Params:
    """``disaggregated`` normalised to ``"P:D"``, refused beside a scheduler or replicas it excludes."""
    if params.get("disaggregated") is None:
        return params
    try:
        p, d = parse_disaggregated(params["disaggregated"])
    except ParsimError as error:
        raise ParsimError(f"{name}: {error}") from None
    if params["scheduler"] != "continuous":
        raise ParsimError(
            f"{name}: 'disaggregated' needs scheduler=continuous (prefill instances run prefill-only "
            f"iterations, decode instances decode-only ones): scheduler={params['scheduler']}"
        )
    if params["replicas"] != 1:
        raise ParsimError(
            f"{name}: 'disaggregated' replaces 'replicas' (P:D instances): replicas={params['replicas']}"
        )
    return {**params, "disaggregated": f"{p}:{d}"}


def _length(value: object, field: str) -> int | str:
    spec = request_streams.lengths(value, field)  # type: ignore[arg-type]
    return int(spec.a) if spec.kind == "constant" else str(value)


def check_llm_load(name: str, given: Params, params: Params) -> Params:
    """The model's rules (``llm_serve``'s), the length specs, and a trace's fields against a stream's.

    With ``trace`` the file gives the arrivals and lengths: a stream's fields given besides are
    refused, and dropped from the parameters when left at their defaults; so are a trace and the
    SLOs when not given.
    """
    check_llm_serve(name, given, {**serve_params(params), "prompt": 1, "output": 1})
    engine = stack.framework(str(params["framework"]))
    if "max_batch" not in given and engine.serve_max_running:  # the engine's own default
        params = {**params, "max_batch": engine.serve_max_running}
    unset = (
        "trace",
        "slo_ttft",
        "slo_tpot",
        "disaggregated",
        "client",
    )  # not given: nothing to print or pass on
    params = {key: value for key, value in params.items() if key not in unset or value is not None}
    params = _check_disaggregated(name, params)
    if params.get("trace") is not None:
        extra = [field for field in STREAM_FIELDS if field in given]
        if extra:
            raise ParsimError(
                f"{name}: '{extra[0]}' does not apply with trace=: the trace gives the arrivals and lengths"
            )
        return {key: value for key, value in params.items() if key not in STREAM_FIELDS}
    try:
        prompt, output = _length(params["prompt"], "prompt"), _length(params["output"], "output")
        if params.get("client") is not None:  # what the client cannot send, refused before any work
            clients.check(
                str(params["client"]),
                prompt,
                output,
                int(params["requests"]),
                str(params["arrival"]),
                int(params["seed"]),
            )
    except ParsimError as error:
        raise ParsimError(f"{name}: {error}") from None
    return {**params, "prompt": prompt, "output": output}


def requests_of(params: Params) -> int:
    """Requests a prediction simulates (0 for a trace: counted as the file is read)."""
    return int(params.get("requests", 0)) if params.get("trace") is None else 0


def build(params: Params) -> Workload:
    """The program each iteration is priced from: ``llm_serve``'s prefill and decode step of one
    request at the median prompt (what the model, memory and hooks see of the load)."""
    prompt = params.get("prompt", 512)
    median = prompt if isinstance(prompt, int) else request_streams.lengths(prompt, "prompt").a
    program = llm_serve({**serve_params(params), "batch": 1, "prompt": int(median), "output": 2})
    return attrs.evolve(program, name=NAME, params=tuple(sorted(params.items())))


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _rate(value: float | None) -> str:
    return "-" if value is None else units.si(value, "/s")


@attrs.frozen
class LoadRecord(Record):
    """A server under load as a serving benchmark reports it (``methods.serving.metrics``).

    The percentiles print as a table (``table``); the rest as labelled lines.
    """

    ttft_p50_s: float = figure()
    ttft_p90_s: float = figure()
    ttft_p99_s: float = figure()
    tpot_p50_s: float = figure()
    tpot_p90_s: float = figure()
    tpot_p99_s: float = figure()
    e2e_mean_s: float = figure()
    e2e_p50_s: float = figure()
    e2e_p90_s: float = figure()
    e2e_p99_s: float = figure()
    queue_mean_s: float = figure()
    queue_p99_s: float = figure()
    requests_arrived: int = figure("requests", lambda v: f"{v:,} arrived")
    requests_completed: int = figure("completed", lambda v: f"{v:,}")
    requests_refused: int = figure("refused", lambda v: f"{v:,} (longer than a replica's KV cache)")
    requests_preempted: int = figure("preempted", lambda v: f"{v:,} requests (recomputed)")
    preemptions: int = figure("preemptions", lambda v: f"{v:,}")
    requests_per_s: float = figure("requests/s", lambda v: units.si(v, "/s"))
    tokens_per_s: float = figure("tokens/s", lambda v: units.si(v, "/s") + " (output)")
    mean_in_system: float = figure("in system", lambda v: f"{v:.3g} requests (time average)")
    batch_mean: float = figure("mean batch", lambda v: f"{v:.3g} requests per iteration")
    kv_cache_peak_fraction: float = figure("KV cache peak", lambda v: f"{v:.1%} of the blocks")
    duration_s: float = figure("busy period", units.seconds)
    goodput_requests_per_s: float | None = figure("goodput", _rate)
    slo_attainment: float | None = figure("SLO attained", _percent)
    kv_transfer_mean_s: float | None = figure()  # disaggregated only; the notes say it in words
    itl_p50_s: float | None = figure()  # gaps between streamed tokens; in the table
    itl_p99_s: float | None = figure()

    def table(self) -> tuple[list[str], list[list[str]]]:
        """The latency percentiles: headers and rows (TTFT, TPOT, end to end, queueing)."""

        def row(label: str, *values: float | None) -> list[str]:
            # None: no such figure; NaN: no request had one (every output a single token)
            return [label, *("-" if v is None or v != v else units.seconds(v) for v in values)]

        return (
            ["latency", "P50", "P90", "P99", "mean"],
            [
                row("first token", self.ttft_p50_s, self.ttft_p90_s, self.ttft_p99_s, None),
                row("per token", self.tpot_p50_s, self.tpot_p90_s, self.tpot_p99_s, None),
                row("between tokens", self.itl_p50_s, None, self.itl_p99_s, None),
                row("end to end", self.e2e_p50_s, self.e2e_p90_s, self.e2e_p99_s, self.e2e_mean_s),
                row("queueing", None, None, self.queue_p99_s, self.queue_mean_s),
            ],
        )


LLM_LOAD = WorkloadDef(
    NAME,
    LlmLoadParams,
    build,
    "LLM serving under load: requests over time, a scheduler, KV blocks, latency percentiles",
    check=check_llm_load,
    record=LoadRecord,
    requests=requests_of,
    example=(("rate", 4.0), ("requests", 1000), ("max_batch", 64), ("seed", 1)),
)
"""Its definition: predicted request by request (``requests``), not as one program."""
DEFINITIONS = (LLM_LOAD,)
"""What ``registry.WORKLOADS`` registers from this module."""
