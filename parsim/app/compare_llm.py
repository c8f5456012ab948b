"""Compare, for transformers: the LLM lessons on the language model and GPU you pick.

Like the rest of Compare, each comparison is a shipped lesson moved with ``scenarios.retarget``
(the model as a parameter of every case, the GPU as every case's device); a swept lesson keeps
only the sizes the model's context allows.
"""

from __future__ import annotations

import pandas
import streamlit as st

from parsim import plots
from parsim.app.cache import as_changes, cached_scenario, scenario_path
from parsim.app.widgets import cached_png, csv_download, model_picker, processor_picker, show_png
from parsim.base.errors import ParsimError
from parsim.results.serving_figures import phase_bounds
from parsim.studies.scenarios import load_scenario
from parsim.workloads.llms import llm
from parsim.workloads.registry import llm_names
from parsim.workloads.serving import ServingMetrics

# comparison -> (scenario file, the sweep parameter bounded by the context, if any)
COMPARISONS = {
    "FlashAttention vs unfused": ("flash_attention", "seq"),
    "LLM prefill vs decode": ("llm_prefill_vs_decode", None),
    "LLM batching decode": ("llm_batching_decode", None),
}
COLUMNS = {
    "latency_ms": st.column_config.NumberColumn("latency", format="%.4g ms"),
    "end_to_end_ms": st.column_config.NumberColumn("end to end", format="%.4g ms"),
    "first_token_ms": st.column_config.NumberColumn("first token", format="%.4g ms"),
    "per_token_ms": st.column_config.NumberColumn("per output token", format="%.4g ms"),
    "tokens_per_s": st.column_config.NumberColumn("tokens/s", format="%.0f"),
}


def controls(kind: str) -> tuple[str, str | None]:
    """The model and GPU pickers (in the page's controls), starting from the lesson's own."""
    stem, _ = COMPARISONS[kind]
    defaults = load_scenario(scenario_path(stem)).defaults
    start = defaults.params.get("model", "llama-2-7b")
    names = llm_names()
    model = model_picker("language model", names, start, "compare_llm_model")
    gpu = processor_picker("GPU", "compare_llm_gpu", kind="gpu", default=defaults.device or "a100-80gb")
    return model, gpu


def render(kind: str, model: str, gpu: str) -> None:
    stem, bounded = COMPARISONS[kind]
    path = scenario_path(stem)
    scenario = load_scenario(path)
    options: dict = {"gpu": gpu, "params": {"model": model}}
    if bounded is not None and scenario.sweep is not None:
        context = llm(model).context
        options["values"] = [v for v in scenario.sweep.values if v <= context]
    try:
        args = (str(path), path.stat().st_mtime, as_changes(options))
        result = cached_scenario(*args)
    except (OSError, ParsimError) as exc:
        st.error(str(exc))
        return
    show_png(cached_png(_figure, *args), stem, key="compare_llm_png")
    rows = [
        {
            "configuration": r.label,
            **({scenario.sweep.label: r.value} if scenario.sweep else {}),
            **row_figures(r.prediction),
        }
        for r in result.results
    ]
    table = pandas.DataFrame(rows).dropna(axis="columns", how="all")
    st.dataframe(table, hide_index=True, key="compare_llm_table", column_config=COLUMNS)
    csv_download(table, stem, key="compare_llm_csv")


def row_figures(prediction) -> dict:
    """A row's figures: an LLM request leads with what a serving benchmark reports — its end-to-end
    time, time to first token, time per output token, tokens/s — as Explore does; another workload
    (attention alone) with its latency. The bottleneck is said per phase where a request has two
    (a prefill compute-bound, its decode memory-bound), never as the sum of both."""
    serving = next((r for r in prediction.records if isinstance(r, ServingMetrics)), None)
    if serving is None:
        return {"latency_ms": prediction.latency_s * 1e3, "bottleneck": bottleneck_words(prediction)}
    return {
        "end_to_end_ms": serving.e2e_latency_s * 1e3,
        "first_token_ms": serving.time_to_first_token_s * 1e3,
        "per_token_ms": _per_token_ms(prediction),
        "tokens_per_s": serving.tokens_per_s,
        "bottleneck": bottleneck_words(prediction),
    }


def bottleneck_words(prediction) -> str:
    """``memory-bound (99%)``, or per phase: ``prefill compute-bound (96%), decode memory-bound (98%)``."""
    bounds = phase_bounds(prediction)
    if bounds:
        return ", ".join(f"{b.phase} {b.kind}-bound ({b.share:.0%})" for b in bounds)
    share = prediction.breakdown[prediction.bottleneck] / prediction.latency_s if prediction.latency_s else 0
    return f"{prediction.bottleneck}-bound ({share:.0%})"


def _per_token_ms(prediction) -> float:
    """The time per output token in ms; none (NaN, a blank cell) for requests of one output token,
    which have no token after the first (``llm_serve`` reports 0 s for them, not a time)."""
    if int(prediction.params.get("output", 2)) <= 1:
        return float("nan")
    return prediction.metrics.get("time_per_output_token_s", float("nan")) * 1e3


def _figure(path: str, stamp: float, changes: tuple):
    return plots.scenario(cached_scenario(path, stamp, changes))
