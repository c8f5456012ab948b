"""Cached pure computations for the app, keyed by plain values so pages switch instantly.

Hardware arrives as a *source*: a preset id, or the text of a hardware TOML (an upload, the
editor, a calibration). Predictions, scenario runs and sweeps are cached with
``st.cache_data``; figures are drawn from the cached data on each run (drawing is cheap).
"""

from __future__ import annotations

import streamlit as st

from parsim.hardware.specs import LinkSpec, ProcessorSpec
from parsim.hardware.tomlio import loads_hardware
from parsim.predict import predict
from parsim.scenarios import load_scenario, run_scenario
from parsim.sweeps.api import sweep


def resolve(source: str | None) -> str | ProcessorSpec | LinkSpec | None:
    """A preset id stays an id; TOML text becomes the spec it describes."""
    if source is None or "\n" not in source and "[" not in source:
        return source
    return loads_hardware(source, source="hardware file")


@st.cache_data(show_spinner=False, max_entries=512)
def cached_predict(
    workload: str,
    params: tuple,
    device: str,
    host: str | None,
    link: str | None,
    mode: str | None,
    method: str = "engine",
    gpus: int | None = None,
):
    return predict(
        workload,
        dict(params),
        device=resolve(device),
        host=resolve(host),
        link=resolve(link),
        mode=mode,
        method=method,
        gpus=gpus,
    )


@st.cache_data(show_spinner=False, max_entries=64)
def cached_scenario(path: str, stamp: float = 0.0):
    """A scenario run, cached by path and modification time (``stamp``)."""
    return run_scenario(load_scenario(path))


@st.cache_data(show_spinner=False, max_entries=256)
def cached_sweep(base: tuple, grid: tuple):
    """A sweep of a predict call (``base``) over ``grid``; both as sorted items so they hash."""
    source = {key: resolve(value) if key in ("device", "host", "link") else value for key, value in base}
    source["params"] = dict(source.get("params") or ())
    return sweep(source, {field: list(values) for field, values in grid})


def sweep_with_progress(base: tuple, field: str, values: list, bar, parts: int = 5):
    """The sweep in a few cached pieces, moving ``bar`` between them.

    Streamlit cannot replay a progress bar drawn inside a cached function, so the bar moves
    here, outside, and each piece is cached on its own.
    """
    import pandas

    pieces = [values[i::parts] for i in range(parts) if values[i::parts]]
    frames = []
    for index, piece in enumerate(pieces):
        frames.append(cached_sweep(base, ((field, tuple(piece)),)))
        bar.progress((index + 1) / len(pieces))
    return pandas.concat(frames, ignore_index=True)
