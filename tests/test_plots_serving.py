"""Figures of a server under load (issue 24): the knee rule by hand, and what each figure draws.

The loads are simulated with a fixed affine step time (no model), so the figures are fast and their
numbers known; the tests read back the lines, the marks and the axes the renderer drew.
"""

from __future__ import annotations

import pytest

from parsim.methods.serving.config import ServerConfig
from parsim.methods.serving.metrics import summarize, timeline
from parsim.methods.serving.simulate import simulate
from parsim.plots import serving
from parsim.workloads.requests import generate
from tests.test_plots import PLAIN_TICK, drawn, ticks


def step(prefill_tokens: int, decode_batch: int, decode_context_tokens: int) -> float:
    return 0.01 + 5e-5 * prefill_tokens + 2e-4 * decode_batch + 1e-7 * decode_context_tokens


def load(rate: float, scheduler: str = "continuous", requests: int = 300):
    stream = generate(rate, requests, prompt=256, output=32, seed=1)
    outcome = simulate(stream, ServerConfig(kv_blocks=4000, scheduler=scheduler, max_batch=32), step)
    return summarize(outcome), timeline(outcome)


def test_the_knee_is_the_first_rate_whose_p99_doubles():
    assert serving.knee_rate([1, 2, 4, 8], [0.1, 0.15, 0.2, 0.9]) == 4  # 0.2 >= 2 x 0.1
    assert serving.knee_rate([1, 2, 4], [0.1, 0.12, 0.19]) is None
    assert serving.knee_rate([1, 2], [0.1, 0.3], factor=4) is None
    assert serving.knee_rate([], []) is None


def test_latency_against_rate_draws_p50_p99_the_knee_the_slo_and_the_current_rate():
    rates = [2.0, 8.0, 16.0, 24.0, 30.0]
    metrics = [load(r)[0] for r in rates]
    fig = serving.latency_vs_rate(rates, metrics, "ttft", slo_s=0.5, current_rate=8.0)
    drawn(fig)
    ax = fig.axes[0]
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels[:2] == ["P50 TTFT", "P99 TTFT"]
    p99 = list(ax.get_lines()[1].get_ydata())
    assert p99 == [m.ttft_p99_s for m in metrics]
    knee = serving.knee_rate(rates, p99)
    assert knee is not None and any(label.startswith(f"knee: {knee:g}") for label in labels)
    assert "SLO 0.5 s" in labels and "now: 8 requests/s" in labels
    assert all(PLAIN_TICK.match(t) for t in ticks(ax.xaxis))
    assert ax.yaxis.get_label().get_text().startswith("time to first token")


def test_the_load_timeline_draws_queue_batch_and_kv_on_one_time_axis():
    _, line = load(24.0)
    fig = serving.load_timeline(line)
    drawn(fig)
    top, middle, bottom = fig.axes
    assert [a.yaxis.get_label().get_text() for a in fig.axes] == [
        "waiting",
        "running (batch)",
        "KV cache used (%)",
    ]
    assert max(middle.get_lines()[0].get_ydata()) == max(line.running) <= 32  # max_batch
    assert bottom.get_ylim() == (0, 100)
    assert bottom.xaxis.get_label().get_text().startswith("time (")


def test_schedulers_side_by_side_draw_each_ones_figures():
    results = {name: load(16.0, name)[0] for name in ("static", "continuous", "chunked")}
    fig = serving.schedulers(results)
    drawn(fig)
    ttft, _, tokens = fig.axes
    assert [t.get_text() for t in ttft.get_xticklabels()] == ["static", "continuous", "chunked"]
    heights = [bar.get_height() for bar in tokens.patches]
    assert heights == pytest.approx([results[n].tokens_per_s for n in results])
    p50s = [bar.get_height() for bar in ttft.patches[:3]]
    assert p50s == pytest.approx([results[n].ttft_p50_s for n in results])


def test_a_serving_lesson_draws_ttft_and_tpot_of_each_case_against_rate():
    rates = [4.0, 16.0]
    series = {
        name: (rates, [load(r, name)[0].as_dict() for r in rates]) for name in ("continuous", "chunked")
    }
    fig = serving.cases_vs_rate(series, "t")
    drawn(fig)
    ttft, tpot = fig.axes
    assert ttft.yaxis.get_label().get_text().startswith("time to first token")
    assert tpot.yaxis.get_label().get_text().startswith("time per output token")
    lines = {line.get_label(): list(line.get_ydata()) for line in tpot.get_lines()}
    assert lines["chunked: P99"] == [m["tpot_p99_s"] for m in series["chunked"][1]]
    assert len(lines) == 4  # P50 and P99 of each case
