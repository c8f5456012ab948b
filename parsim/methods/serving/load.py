"""A server under load from a workload's parameters: stream, server, priced steps, simulation, figures.

This is where ``llm_load``'s parameters (``workloads.load``) meet the request-level simulation:
the stream is generated (``workloads.requests.generate``) or read from the one trace file named
(``load_trace``: never through a link), the KV-cache blocks are the room a replica's GPUs leave
beside the weights (``steps.kv_blocks``), each iteration is priced from ``llm_serve`` predictions
(``steps.ModelSteps``), and ``simulate`` serves the stream. ``predict`` hands any workload whose
definition counts ``requests`` to ``predict_requests``; the studies above (``studies.serving_load``:
the capacity search, the app's figures) call ``run`` with one ``ModelSteps`` reused across runs.

A ``ModelSteps`` holds the predictions it has made, so the steps of one model on one system are
kept (a few, ``cached``): a sweep over the rate prices each step shape once.
"""

from __future__ import annotations

from typing import Any

import attrs

from parsim import stack
from parsim.base import units
from parsim.base.budget import Budget
from parsim.base.caching import cached
from parsim.base.errors import ParsimError
from parsim.hardware.specs import SystemSpec
from parsim.methods.serving.config import ServerConfig
from parsim.methods.serving.disagg import simulate_disaggregated
from parsim.methods.serving.metrics import LoadMetrics, LoadTimeline, summarize, timeline
from parsim.methods.serving.simulate import simulate
from parsim.methods.serving.steps import ModelSteps, kv_blocks, kv_transfer, replica_system
from parsim.model.modes import check_mode
from parsim.results.prediction import Prediction
from parsim.workloads.clients import replayed
from parsim.workloads.definition import WorkloadDef
from parsim.workloads.llms import llm
from parsim.workloads.load import parse_disaggregated, serve_params
from parsim.workloads.requests import RequestStream, generate, load_trace

UNBOUNDED_REQUESTS = 10**7
"""Requests one stream may hold with no budget (``--no-limits``): the parameter's own bound."""


@attrs.frozen(eq=False)
class LoadRun:
    """One simulated load: its figures, its timeline, the server it ran on and the stream it served."""

    metrics: LoadMetrics
    timeline: LoadTimeline
    config: ServerConfig
    stream: RequestStream
    iterations: int


def request_budget(budget: Budget | None) -> int:
    """Requests one stream may hold under ``budget`` (None: the parameter's bound)."""
    return UNBOUNDED_REQUESTS if budget is None else budget.requests


def stream_of(params: dict[str, Any], budget: Budget | None) -> RequestStream:
    """The requests ``params`` describe: the trace file's, or generated (truncated to the context).

    Raises:
        ParsimError: above the budget's requests (before generating any), or a bad trace file.
    """
    context = llm(str(params["model"])).context
    most = request_budget(budget)
    if params.get("trace") is not None:
        return load_trace(str(params["trace"]), max_context=context, budget=most)
    if budget is not None:
        budget.check(int(params["requests"]), "requests", "llm_load: requests")
    if params.get("client") is not None:  # the benchmark client's own draws (workloads.clients)
        return replayed(str(params["client"]), params, max_context=context, budget=most)
    return generate(
        float(params["rate"]),
        int(params["requests"]),
        params["prompt"],
        params["output"],
        arrival=str(params["arrival"]),
        cv=float(params["cv"]),
        seed=int(params["seed"]),
        max_context=context,
        budget=most,
    )


def server(params: dict[str, Any], system: SystemSpec) -> ServerConfig:
    """The server ``params`` describe on one replica's ``system`` (its KV blocks: the room left)."""
    scheduler = str(params["scheduler"])
    engine = stack.framework(str(params.get("framework", "cuda-graph")))
    config = ServerConfig(
        kv_blocks=1,
        scheduler=scheduler,
        max_batch=int(params["max_batch"]),
        batch_timeout_s=float(params["batch_timeout"]),
        chunk=int(params["chunk"]),
        block=int(params["block"]),
        replicas=int(params["replicas"]),
        router=str(params["router"]),
        slo_ttft_s=params.get("slo_ttft"),
        slo_tpot_s=params.get("slo_tpot"),
        disaggregated=parse_disaggregated(params["disaggregated"]) if params.get("disaggregated") else None,
        multi_step=int(params.get("multi_step", 1)),
        cached_prefix=float(params.get("cached_prefix", 0.0)),
        overlap=engine.overlap_schedule and not params.get("disaggregated"),
        admission="prompt" if params.get("disaggregated") else engine.serve_admission,
    )
    # the activations reserved are those of the largest prefill one step runs (vLLM profiles one)
    largest = config.chunk if scheduler == "chunked" else config.max_prefill_tokens
    blocks = kv_blocks(serve_params(params), system, config.block, largest)
    context = llm(str(params["model"])).context
    running = engine.running_limit(config.max_batch, blocks * config.block, context)
    return attrs.evolve(config, kv_blocks=blocks, max_batch=running)


@cached(maxsize=8)
def _steps(
    fixed: tuple[tuple[str, Any], ...], device: Any, host: Any, link: Any, method: str, max_batch: int
) -> ModelSteps:
    return ModelSteps(dict(fixed), device, host=host, link=link, method=method, max_batch=max_batch)


def model_steps(
    params: dict[str, Any], device: Any, host: Any = None, link: Any = None, method: str = "engine"
) -> ModelSteps:
    """The priced steps of ``params``' model on a replica of ``device`` (kept: see the docstring)."""
    fixed = tuple(sorted(serve_params(params).items()))
    return _steps(fixed, device, host, link, method, int(params["max_batch"]))


def run(
    params: dict[str, Any],
    device: Any,
    *,
    host: Any = None,
    link: Any = None,
    method: str = "engine",
    budget: Budget | None = None,
    steps: ModelSteps | None = None,
) -> LoadRun:
    """Simulate the load of validated ``llm_load`` parameters on ``device`` (a replica of ``gpus``).

    Raises:
        ParsimError: above ``budget`` (first, before any work), a bad trace, or no room for a cache.
    """
    stream = stream_of(params, budget)
    system = replica_system(params, device, host, link)
    if system.device is None:
        raise ParsimError(f"llm_load serves on GPUs: {system.compute.id} is a CPU (try --device a100-80gb)")
    config = server(params, system)
    priced = steps if steps is not None else model_steps(params, device, host, link, method)
    # the engine's front end (HTTP, tokenising) holds each request before the scheduler sees it
    request_s = stack.framework(str(params.get("framework", "cuda-graph"))).request_s(
        system.host.framework_clock_Hz
    )
    entered = attrs.evolve(stream, arrival_s=stream.arrival_s + request_s) if request_s else stream
    if config.disaggregated is None:
        outcome, transfers = simulate(entered, config, priced), None
    else:
        copy_s = kv_transfer(serve_params(params), device, host, link)
        outcome, transfers = simulate_disaggregated(entered, config, priced, copy_s)
    outcome = attrs.evolve(outcome, stream=stream)  # latencies count from the arrival at the server
    iterations = int(outcome.steps[:, 2].sum()) if outcome.steps.size else 0
    return LoadRun(summarize(outcome, transfers), timeline(outcome), config, stream, iterations)


def predict_requests(
    definition: WorkloadDef,
    params: dict[str, Any],
    device: Any,
    *,
    host: Any = None,
    link: Any = None,
    method: str = "engine",
    budget: Budget | None = None,
) -> Prediction:
    """The ``Prediction`` of a request-level workload: latency the P50 end to end, throughput the
    completed requests per second, its record (``definition.record``) the load's figures."""
    done = run(params, device, host=host, link=link, method=method, budget=budget)
    system = replica_system(params, device, host, link)
    m, config = done.metrics, done.config
    waiting = m.queue_mean_s if m.queue_mean_s == m.queue_mean_s else 0.0  # NaN: none completed
    serving = max(m.e2e_mean_s - waiting, 0.0) if m.e2e_mean_s == m.e2e_mean_s else 0.0
    record = definition.record(**m.as_dict()) if definition.record is not None else None
    cache_tokens = config.kv_blocks * config.block
    if config.disaggregated is None:
        servers = f"{config.replicas} replica(s) of {system.total_gpus} GPU(s)"
    else:
        p, d = config.disaggregated
        servers = f"disaggregated: {p} prefill and {d} decode instance(s) of {system.total_gpus} GPU(s)"
    notes: tuple[str, ...] = (
        f"{len(done.stream):,} requests: {done.stream.source}; {config.scheduler} batching, "
        f"at most {config.max_batch} per iteration, {servers}, {config.router} routing",
        f"KV cache: {config.kv_blocks:,} blocks of {config.block} tokens ({cache_tokens:,} tokens) "
        f"per {'replica' if config.disaggregated is None else 'instance'} beside the weights",
        "latency is the mean request's end to end (P50/P90/P99 above); "
        "throughput the completed requests per second",
    )
    if m.kv_transfer_mean_s is not None:
        notes += (
            f"KV cache handed from prefill to decode instances in {units.seconds(m.kv_transfer_mean_s)} "
            "on average (TTFT ends at the prefill instance's first token)",
        )
    return Prediction(
        workload=definition.name,
        params=params,
        device=system.compute.id,
        host=system.host.id,
        link=system.link.id if system.link is not None else None,
        mode=check_mode(system.compute, None),
        method=method,
        latency_s=m.e2e_mean_s if m.requests_completed else 0.0,
        throughput_per_s=m.requests_per_s,
        flops=0.0,
        bytes=0.0,
        transfer_bytes=0.0,
        bottleneck="queueing" if waiting > serving else "serving",
        breakdown={"queueing": waiting, "serving": serving},
        busy={},
        events=done.iterations,
        notes=notes,
        gpus=system.total_gpus * config.instances,
        peer_link=system.peer_link.id if system.peer_link is not None else None,
        records=(record,) if record is not None else (),
    )
