"""Explore: one workload on one system — the numbers, the sentence, the timeline, the roofline."""

from __future__ import annotations

import pandas
import streamlit as st

from parsim import plots
from parsim.app import editor, layout, links, urlstate
from parsim.app.cache import cached_lessons_using, cached_predict, resolve
from parsim.app.memory import memory_bar
from parsim.app.widgets import (
    cached_png,
    csv_download,
    label_of,
    link_picker,
    processor_picker,
    runs_on_cpu,
    show_png,
    trace_download,
    workload_form,
)
from parsim.base import units
from parsim.base.budget import APP
from parsim.base.errors import ParsimError
from parsim.hardware import registry
from parsim.model import footprint
from parsim.model.modes import default_mode, modes_for
from parsim.report import chrome_trace
from parsim.report.text import bottleneck_sentence, metric_texts
from parsim.results.algorithms import describe
from parsim.workloads.records import Throughput
from parsim.workloads.registry import WORKLOADS, make_workload
from parsim.workloads.serving import ServingMetrics

# Starting sizes: 100 M elements fill a GPU's memory bandwidth (a definition's ``example`` says its own).
DEFAULTS = {"": {"n": 10**8}}


def render() -> None:
    st.title("Explore")
    st.caption("Pick hardware and a workload: parsim predicts how long it takes and shows why.")
    with layout.controls():
        choice = _controls()
    if choice is None:
        return
    workload, params, device, host, link, mode, method, spec = choice
    try:
        p = cached_predict(workload, tuple(sorted(params.items())), device, host, link, mode, method)
    except ParsimError as exc:
        st.error(str(exc))
        return
    system = registry.system(resolve(device), resolve(host), resolve(link)) if spec.is_accelerator else None
    show(
        p,
        spec,
        system.link if system else None,
        (workload, tuple(sorted(params.items())), device, host, link, mode, method),
    )
    with st.expander("Hardware editor: start from a preset, change figures, download the TOML"):
        editor.render()


def _controls() -> tuple | None:
    """The sidebar: device, host, link, Flynn mode, method, workload and its parameters.

    The link and the mode are kept per device (their keys name it): a new device starts from its
    usual link and default mode, and one chosen for a device comes back with that device.
    """
    device = processor_picker("device", "explore_device", default="h100-sxm")
    if device is None:
        return None
    try:
        spec = registry.processor(resolve(device))
    except ParsimError as exc:
        st.error(str(exc))
        return None
    name = label_of(device)
    host = link = None
    if spec.is_accelerator:
        host = processor_picker("host CPU", "explore_host", kind="cpu", default="xeon-e5-2630v3")
        if host is None:
            return None
        link = link_picker("link", f"explore_link__{name}", spec.default_link)
    modes = modes_for(spec)
    mode = urlstate.choice(
        "Flynn mode", modes, default_mode(spec), f"explore_mode__{name}", param="explore_mode"
    )
    method = st.radio(
        "method", ["engine", "analytic"], horizontal=True, key="explore_method", bind="query-params"
    )
    # a server under load (requests over time) has its own view: Scale out, "LLM serving under load"
    names = [
        n for n in WORKLOADS if WORKLOADS[n].requests is None and (spec.is_accelerator or runs_on_cpu(n))
    ]
    workload, params = workload_form(
        "explore", names=names, overrides=DEFAULTS, fits=fits_on(device, host, link)
    )
    if not spec.is_accelerator:
        st.caption("copies, offloads and multi-GPU training need a GPU: pick one as the device to see them")
    return workload, params, device, host, link, mode, method, spec


def fits_on(device: str, host: str | None, link: str | None):
    """``fits(name, params)``: whether a workload's footprint fits ``device``'s memory (the model's
    own rule, ``footprint.of_workload``); True when it cannot tell (parsim then says why itself)."""

    def fits(name: str, params: dict) -> bool:
        try:
            gpus = int(params.get("gpus", 1))
            system = registry.system(resolve(device), resolve(host), resolve(link), gpus=gpus)
            return bool(footprint.of_workload(make_workload(name, params), system).fits)
        except (ParsimError, TypeError, ValueError):
            return True

    return fits


def _timeline(*call):
    return plots.timeline(cached_predict(*call))


def _trace(*call):
    return chrome_trace.pending_cases([("", cached_predict(*call))], budget=APP)


def _roofline(*call):
    p = cached_predict(*call)
    return plots.roofline(p, registry.processor(resolve(call[2])), dtype=p.params.get("dtype", "float32"))


def show(p, spec, link, call: tuple) -> None:
    """Metrics, the bottleneck sentence, the breakdown, the timeline and the roofline of ``p``.

    ``call`` are the arguments of ``cached_predict`` that made ``p``: the figures are cached by them.
    """
    serving = next((r for r in p.records if isinstance(r, ServingMetrics)), None)
    if serving is not None:
        _serving_headline(serving)
    columns = st.columns(4)
    if serving is None:
        columns[0].metric("latency", units.seconds(p.latency_s))
    else:  # the simulated program is the prefill and one decode step, not the request
        columns[0].metric(
            "prefill + one step",
            units.seconds(p.latency_s),
            help="the simulated program: the request's"
            " prefill and one representative decode step (the end-to-end time above adds the other steps)",
        )
    columns[1].metric("throughput", units.si(p.throughput_per_s, "/s"))
    columns[2].metric(
        "compute achieved", units.si(p.flops_per_s, "FLOP/s"), help="floating-point operations per second"
    )
    columns[3].metric(
        "memory traffic", units.si(p.bytes_per_s, "B/s"), help="bytes moved to and from memory per second"
    )
    own = metric_texts(r for r in p.records if not isinstance(r, Throughput))
    if serving is not None:
        own = [(label, text) for label, text in own if label not in HEADLINE]
    if own:  # the workload's own figures (LLM serving: first token, per token, tokens/s...)
        for row in range(0, len(own), 4):
            for column, (label, text) in zip(st.columns(4), own[row : row + 4], strict=False):
                column.metric(label, text)
    st.info(bottleneck_sentence(p, spec, link), icon=":material/lightbulb:")
    for note in p.notes:
        st.caption(note)
    memory_bar(p.memory, "explore_memory")
    figures = WORKLOADS[call[0]].figures  # the figures that explain this workload, its own choice
    for figure, tab in zip(figures, st.tabs([TITLES[f] for f in figures]), strict=True):
        with tab:
            if figure == "timeline":
                show_png(cached_png(_timeline, *call), "timeline", key="explore_timeline_png")
                trace_download(_trace, *call, name="timeline", key="explore_timeline_trace")
            elif figure == "roofline":
                show_png(cached_png(_roofline, *call), "roofline", key="explore_roofline_png")
            else:
                _breakdown_tables(p)
    taught = cached_lessons_using(call[0])
    if taught:  # the lessons that teach this workload, found from the lessons themselves
        st.caption(
            "Lessons with this workload: "
            + ", ".join(f"[{title}]({links.lesson(name).url})" for name, title in taught)
        )


TITLES = {"timeline": "Timeline", "roofline": "Roofline", "breakdown": "Breakdown"}

HEADLINE = ("end to end", "first token", "per output token", "tokens/s, all")
"""The ``ServingMetrics`` figures an LLM request leads with, in this order (their ``figure`` labels)."""


def _serving_headline(serving: ServingMetrics) -> None:
    """End-to-end time, time to first token, time per output token and tokens/s, first."""
    texts = dict(serving.texts())
    helps = {
        "end to end": "the request: time to first token + (output - 1) x time per output token",
        "first token": "TTFT: the prefill of the prompt, with the copies in and out",
        "per output token": "TPOT: the mean decode step",
        "tokens/s, all": "generated tokens of the whole batch per second",
    }
    for column, label in zip(st.columns(4), HEADLINE, strict=True):
        column.metric(label, texts[label], help=helps[label])


def _breakdown_tables(p) -> None:
    breakdown = pandas.DataFrame(
        {
            "category": list(p.breakdown),
            "time_us": [v * 1e6 for v in p.breakdown.values()],
            "share": [v / p.latency_s for v in p.breakdown.values()],
        }
    )
    st.dataframe(breakdown, hide_index=True, key="explore_breakdown", column_config=COLUMNS)
    csv_download(breakdown, "breakdown", key="explore_breakdown_csv")
    if p.layers:
        layers = pandas.DataFrame([_layer_row(row) for row in p.layers])
        st.dataframe(layers, hide_index=True, key="explore_layers", column_config=COLUMNS)
        csv_download(layers, "layers", key="explore_layers_csv")


# Tables for people: times in us, shares in percent, work with SI prefixes; one column per quantity.
COLUMNS = {
    "time_us": st.column_config.NumberColumn("time", format="%.4g us"),
    "share": st.column_config.NumberColumn(format="percent"),
    "flops": st.column_config.NumberColumn("FLOP", format="compact"),
    "bytes": st.column_config.NumberColumn("bytes", format="compact"),
}


def _layer_row(row: dict) -> dict:
    """A layer as the table shows it: its time in us, its algorithms in words (not a mapping)."""
    shown = {k: v for k, v in row.items() if k != "latency_s"}
    shown["time_us"] = row["latency_s"] * 1e6
    if "algorithms" in row:
        shown["algorithms"] = describe(row["algorithms"])
    return shown
