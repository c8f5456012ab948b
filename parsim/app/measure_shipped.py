"""Measured on a real GPU: the measurements shipped with parsim, with today's prediction beside them.

Most people open the Measure page on a laptop without a GPU; the page still shows a real GPU's times
(``parsim/data/measured/``: an H100 SXM measured by parsim itself), predicted again by the installed
model for the preset the file names (``parsim.studies.measured``), with the per-class errors, the
predicted-vs-measured figure and the machine and software they came from. The same report is what
``parsim validate --load h100-sxm-2026-11-25`` prints.
"""

from __future__ import annotations

import pandas
import streamlit as st

from parsim import plots
from parsim.app.widgets import cached_png, csv_download, show_png
from parsim.base import units
from parsim.studies import measured

DEFAULT = "h100-sxm-2026-11-25"


@st.cache_data(show_spinner=False, max_entries=8)
def cached_shipped(name: str) -> dict:
    """A shipped report, its rows predicted with the installed model (a fraction of a second)."""
    return measured.load(name)


def draw(name: str):
    return plots.validation(cached_shipped(name)["rows"], title=f"Predicted vs measured: {name}")


def render() -> None:
    with st.container(border=True):
        st.subheader("Measured on a real GPU")
        names = measured.shipped_names()
        name = st.selectbox(
            "measurements shipped with parsim",
            names,
            index=names.index(DEFAULT) if DEFAULT in names else 0,
            key="shipped_name",
        )
        data = cached_shipped(name)
        headline = measured.headline(data)
        st.write(f"**{headline[0].upper()}{headline[1:]}.**")
        for what in ("machine", "software"):
            header = data.get(what)
            if isinstance(header, dict):
                st.caption(f"{what}: " + "; ".join(f"{k} {v}" for k, v in header.items()))
        if data.get("method"):
            st.caption(f"method: {data['method']}")
        classes = pandas.DataFrame(
            [
                {
                    "class": name,
                    "points": s["points"],
                    "MAPE (>= 100 us)": s["mape_large"],
                    "largest error": s["max_error"],
                    "small points within 5 us or 30 %": s["small_within"],
                    "Spearman": s["spearman"],
                }
                for name, s in [*data["classes"].items(), ("overall", data["overall"])]
            ]
        )
        percent = st.column_config.NumberColumn(format="percent")
        st.dataframe(
            classes,
            hide_index=True,
            key="shipped_classes",
            column_config={
                "MAPE (>= 100 us)": percent,
                "largest error": percent,
                "small points within 5 us or 30 %": percent,
                "Spearman": st.column_config.NumberColumn(format="%.3f"),
            },
        )
        show_png(cached_png(draw, name), f"{name}-predicted-vs-measured", key="shipped_png")
        rows = pandas.DataFrame(data["rows"])
        rows["params"] = rows["params"].map(units.assignments)
        table = rows[["class", "params", "measured_s", "predicted_s", "error"]]
        st.dataframe(
            table.assign(measured_s=table["measured_s"] * 1e3, predicted_s=table["predicted_s"] * 1e3),
            hide_index=True,
            key="shipped_rows",
            column_config={
                "measured_s": st.column_config.NumberColumn("measured (ms)", format="%.4g"),
                "predicted_s": st.column_config.NumberColumn("predicted (ms)", format="%.4g"),
                "error": percent,
            },
        )
        csv_download(table, f"{name}-measured-vs-predicted", key="shipped_csv")
        reasons: dict[str, int] = {}
        for row in data.get("not_predicted") or []:  # one line per reason, not per row
            reasons[row["why"]] = reasons.get(row["why"], 0) + 1
        for why, count in reasons.items():
            st.caption(f"{count} row{'s' * (count > 1)} not predicted by this parsim: {why}")
