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
from parsim.studies.scenarios import load_scenario
from parsim.workloads.llms import llm
from parsim.workloads.registry import llm_names

# comparison -> (scenario file, the sweep parameter bounded by the context, if any)
COMPARISONS = {
    "FlashAttention vs unfused": ("flash_attention", "seq"),
    "LLM prefill vs decode": ("llm_prefill_vs_decode", None),
    "LLM batching decode": ("llm_batching_decode", None),
}
COLUMNS = {
    "latency_ms": st.column_config.NumberColumn("latency", format="%.4g ms"),
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
    rows = []
    for r in result.results:
        metrics = r.prediction.metrics
        rows.append(
            {
                "configuration": r.label,
                **({scenario.sweep.label: r.value} if scenario.sweep else {}),
                "latency_ms": r.prediction.latency_s * 1e3,
                "first_token_ms": metrics.get("time_to_first_token_s", float("nan")) * 1e3,
                "per_token_ms": _per_token_ms(r.prediction),
                "tokens_per_s": metrics.get("tokens_per_s"),
                "bottleneck": r.prediction.bottleneck,
            }
        )
    table = pandas.DataFrame(rows).dropna(axis="columns", how="all")
    st.dataframe(table, hide_index=True, key="compare_llm_table", column_config=COLUMNS)
    csv_download(table, stem, key="compare_llm_csv")


def _per_token_ms(prediction) -> float:
    """The time per output token in ms; none (NaN, a blank cell) for requests of one output token,
    which have no token after the first (``llm_serve`` reports 0 s for them, not a time)."""
    if int(prediction.params.get("output", 2)) <= 1:
        return float("nan")
    return prediction.metrics.get("time_per_output_token_s", float("nan")) * 1e3


def _figure(path: str, stamp: float, changes: tuple):
    return plots.scenario(cached_scenario(path, stamp, changes))
