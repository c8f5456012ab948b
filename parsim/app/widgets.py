"""Widgets shared by the pages: hardware pickers with uploads, workload forms, downloads.

Every widget has a ``key``; invalid uploads are reported in place and the previous choice is
kept; parameter inputs are bounded by the workload's own limits and validated again by parsim.
"""

from __future__ import annotations

import contextlib
import functools
import io
import typing
from pathlib import Path

import streamlit as st

from parsim.app import layout, urlstate
from parsim.base import paths, safefiles
from parsim.base.caching import cached
from parsim.base.errors import ParsimError
from parsim.hardware.presets import LINKS, PROCESSORS
from parsim.hardware.tomlio import MAX_FILE_BYTES, loads_hardware
from parsim.workloads.hf_config import MAX_CONFIG_BYTES
from parsim.workloads.llms import is_llm, llm, register_upload
from parsim.workloads.multi import on_cpu
from parsim.workloads.registry import WORKLOADS, llm_names, make_workload
from parsim.workloads.standard import SEQUENCE_FIELDS

UPLOADED = "uploaded hardware file"
UPLOADED_MODEL = "uploaded config.json"
THIS_MACHINE = "this machine (calibrated)"


def load_calibrated() -> None:
    """Offer ``this-machine.toml`` from the working directory (written by ``parsim calibrate``)."""
    if st.session_state.get("calibrated_toml") is not None:
        return
    # what ``measure_here`` calibrates into (it imports this module)
    st.session_state["calibrated_toml"] = calibration_text(Path(paths.CALIBRATION)) or ""


def calibration_text(path: Path) -> str | None:
    """The text of the calibrated hardware file at ``path`` when it is one: a regular file read by
    its name alone (never through a link), at most ``MAX_FILE_BYTES``, that parses as hardware
    TOML; None otherwise (nothing is shown of a file that is not)."""
    if not path.is_file():
        return None
    try:
        text = safefiles.read_text(path, MAX_FILE_BYTES)
        loads_hardware(text, source=str(path))
    except ParsimError:
        return None
    return text


def device_label(source: str) -> str:
    """How a device choice reads in a picker: its group and full name ("GPU · NVIDIA Tesla T4 ...")."""
    spec = PROCESSORS.get(source)
    if spec is None:
        return source
    return f"{spec.kind.upper()} · {spec.name} ({source})"


def _choices(kind: str | None) -> list[str]:
    """Preset ids grouped CPUs first, then GPUs; then an upload, and this machine once calibrated."""
    load_calibrated()
    ids = sorted(
        (k for k, spec in PROCESSORS.items() if kind is None or spec.kind == kind),
        key=lambda k: PROCESSORS[k].kind != "cpu",
    )
    extra = [THIS_MACHINE] if kind != "gpu" and st.session_state.get("calibrated_toml") else []
    return [*extra, *ids, UPLOADED]


def processor_picker(label: str, key: str, kind: str | None = None, default: str = "h100-sxm") -> str | None:
    """A processor source: a preset id, or TOML text from an upload or the calibration.

    None while "uploaded hardware file" is chosen and nothing valid was uploaded yet (the picker
    says so in place instead of quietly using another device).
    """
    choice = urlstate.choice(label, _choices(kind), default, key, format_func=device_label)
    if choice == THIS_MACHINE:
        return st.session_state["calibrated_toml"]
    if choice == UPLOADED:
        text = upload(f"{label}: hardware TOML", f"{key}_upload")
        if text is None:
            st.info(f"upload a hardware TOML file to use it as the {label}", icon=":material/upload_file:")
        return text
    return choice


def link_picker(label: str, key: str, default: str | None) -> str | None:
    """A link choice; ``key`` should name the device, so a new device brings its own usual link."""
    usual = "the GPU's usual link"
    choices = [usual, *LINKS]
    choice = urlstate.choice(label, choices, default or usual, key, param="explore_link")
    return None if choice == usual else choice


def label_of(source: str) -> str:
    """A short name for a hardware source (the id inside TOML text)."""
    if source in PROCESSORS or source in LINKS:
        return source
    try:
        return loads_hardware(source).id
    except ParsimError:
        return "uploaded hardware"


def upload(label: str, key: str) -> str | None:
    """TOML text of an uploaded hardware file; on a bad file, say why and keep the last good one."""
    stored = f"{key}_good"
    file = st.file_uploader(
        label, type=["toml"], key=key, max_upload_size=max(1, MAX_FILE_BYTES // 1_000_000)
    )
    if file is not None:
        data = file.getvalue()
        if len(data) > MAX_FILE_BYTES:
            st.error(f"{file.name} is larger than {MAX_FILE_BYTES:,} bytes; keeping the previous hardware")
        else:
            text = data.decode("utf-8", errors="replace")
            try:
                loads_hardware(text, source=file.name)
                st.session_state[stored] = text
            except ParsimError as exc:
                st.error(f"{exc} — keeping the previous hardware")
    return st.session_state.get(stored)


def model_picker(label: str, names, default: str, key: str, help: str | None = None) -> str:
    """A model by id, or a Hugging Face ``config.json`` uploaded (``upload_model``); while that choice
    has no valid upload yet, the page says so and stops there."""
    options = [*names, UPLOADED_MODEL]
    index = options.index(default) if default in options else 0
    choice = st.selectbox(label, options, index=index, key=key, help=help, bind="query-params")
    if choice != UPLOADED_MODEL:
        return str(choice)
    name = upload_model(f"{label}: a Hugging Face config.json", f"{key}_upload")
    if name is None:
        st.info("upload a model's config.json (Llama, Mistral, Qwen2, GPT-2, GPT-NeoX, OPT, Falcon ...)")
        st.stop()
    return name


def url_choice(label: str, options: tuple[str, ...], default: str, key: str, help: str | None = None) -> str:
    """A selectbox over ``options`` that starts at ``default`` and keeps its choice in the URL."""
    return st.selectbox(label, options, options.index(default), key=key, help=help, bind="query-params")


def upload_model(label: str, key: str) -> str | None:
    """The model name of an uploaded config.json, read from its bytes in memory (nothing is written
    to disk) by ``hf_config`` with a file's bounds; on a bad file, say why and keep the last good one."""
    stored = f"{key}_good"
    file = st.file_uploader(
        label, type=["json"], key=key, max_upload_size=max(1, MAX_CONFIG_BYTES // 1_000_000)
    )
    if file is not None:
        data = file.getvalue()
        try:
            llm(register_upload(data, file.name))  # a file the reader refuses is one line
            st.session_state[stored] = (data, file.name)
        except ParsimError as exc:
            st.error(f"{exc} — keeping the previous model")
    good = st.session_state.get(stored)
    if good is None:
        return None
    name = register_upload(*good)  # again: the registry keeps the last few uploads of every session
    st.caption(llm(name).summary())
    return name


@cached(maxsize=64)
def runs_on_cpu(name: str) -> bool:
    """Whether a workload makes sense without a GPU (copies and offloads do not), as the model says."""
    definition = WORKLOADS[name]
    required = {f: 1024 for f, info in definition.params.model_fields.items() if info.is_required()}
    return not on_cpu(make_workload(name, required)).needs_device


def workload_form(
    key: str,
    names: list[str] | None = None,
    default: str | None = None,
    overrides: dict | None = None,
    fits: typing.Callable[[str, dict], bool] | None = None,
) -> tuple[str, dict]:
    """A workload and its parameters, with the bounds of its parameter model, kept in the URL.

    ``default``: the first choice (the first of ``names`` when None, the registry's first workload
    when no names are given). ``overrides`` are starting values by workload name (``""``: for any
    workload); a definition's own ``example`` values come before them. ``fits(name, params)``:
    whether a workload fits the page's device; a ``batch`` then starts at the largest power-of-two
    fraction of its default that does, so every workload's defaults predict (a 16 GB card does not
    hold data-parallel ResNet-50's 256 images).
    """
    names = names or list(WORKLOADS)
    default = default if default is not None else names[0]
    name = urlstate.choice(
        "workload",
        names,
        default,
        f"{key}_workload",
        format_func=lambda n: f"{n} — {WORKLOADS[n].summary}",
    )
    fields = dict(WORKLOADS[name].params.model_fields)
    start = {
        **(overrides or {}).get("", {}),
        **dict(WORKLOADS[name].example),
        **(overrides or {}).get(name, {}),
    }
    if fits is not None and "batch" in fields:
        start = batch_that_fits(name, fields, start, fits)
    values = {}
    columns = st.columns(2)
    if "model" in fields:  # the model first: which other fields apply depends on it
        with columns[0]:
            info = fields["model"]
            kinds = (info.annotation, *typing.get_args(info.annotation))  # Literal[names] | str, or str
            literal = [a for a in kinds if typing.get_origin(a) is typing.Literal]
            options = typing.get_args(literal[0]) if literal else tuple(llm_names())  # llm_serve: text
            default_model = start.get("model", info.default)
            values["model"] = model_picker(
                "model", options, default_model, f"{key}_{name}_model", info.description
            )
    language = is_llm(values.get("model"))
    shown = [
        (field, info)
        for field, info in fields.items()
        if field != "model"
        and not (field == "gpus" and not WORKLOADS[name].owns_gpus)  # its own GPU count only
        and not (field in SEQUENCE_FIELDS and not language)
    ]
    for index, (field, info) in enumerate(shown, start=1 if "model" in fields else 0):
        default_value = start.get(field, info.default)
        if field == "seq" and default_value is None:
            default_value = llm(values["model"]).context  # a sequence starts at the model's context
        with columns[index % 2]:
            values[field] = _field_input(field, info, default_value, f"{key}_{name}_{field}")
    return name, values


def batch_that_fits(name: str, fields: dict, start: dict, fits: typing.Callable[[str, dict], bool]) -> dict:
    """``start`` with its batch halved until ``fits(name, params)`` (at least 1)."""
    params = {f: start.get(f, info.default) for f, info in fields.items()}
    params = {f: v for f, v in params.items() if v is not None}
    batch = int(params["batch"])
    while batch > 1 and not fits(name, {**params, "batch": batch}):
        batch //= 2
    return {**start, "batch": batch}


def literal_options(annotation) -> tuple | None:
    """The choices of a ``Literal`` field, or of a union of them (``FrameworkName | Literal["none"]``);
    None for any other annotation."""
    if typing.get_origin(annotation) is typing.Literal:
        return typing.get_args(annotation)
    parts = typing.get_args(annotation)
    if parts and all(typing.get_origin(part) is typing.Literal for part in parts):
        return tuple(option for part in parts for option in typing.get_args(part))
    return None


def _field_input(field: str, info, default, key: str):
    annotation = info.annotation
    options = literal_options(annotation)
    if options is not None:
        return st.selectbox(
            field,
            options,
            index=options.index(default) if default in options else 0,
            key=key,
            help=info.description,
            bind="query-params",
        )
    if annotation is bool:
        return st.checkbox(field, value=bool(default), key=key, bind="query-params")
    if annotation is str:  # a free list (cuda_graphs=attn,moe_router): the model validates it
        limit = next((m.max_length for m in info.metadata if getattr(m, "max_length", None)), 200)
        text = st.text_input(
            field,
            value=str(default or ""),
            max_chars=limit,
            key=key,
            help=info.description,
            bind="query-params",
        )
        return str(text or "")
    low, high = number_bounds(info, whole=annotation is not float)
    if annotation is float:  # a float field (bytes, MB) keeps its fractions
        low, high = float(low), float(high)
        start = float(default) if isinstance(default, (int, float)) else max(low, 1.0)  # none: 1 (B, MB)
        return float(
            st.number_input(
                field,
                min_value=low,
                max_value=high,
                value=min(max(start, low), high),
                format="%g",
                key=key,
                help=info.description,
                bind="query-params",
            )
        )
    start = int(default) if isinstance(default, (int, float)) else low
    return int(
        st.number_input(
            field,
            min_value=int(low),
            max_value=int(high),
            value=min(
                max(start, int(low)), int(high)
            ),  # a default shared across workloads may exceed a bound
            step=1,
            key=key,
            help=info.description,
            bind="query-params",
        )
    )


BROWSER_INT = 2**53 - 1
"""The largest integer a Streamlit number box takes (a JavaScript number holds it exactly)."""


def number_bounds(info, whole: bool) -> tuple[float, float]:
    """The box's (min, max) from the field's own bounds: ``ge``/``le`` as they are, ``gt``/``lt`` one
    step inside for whole numbers (a float box cannot say "above 0": parsim refuses 0 when sent)."""
    low, high = (1, 10**15) if whole else (0.0, 1e15)
    for bound in info.metadata:
        if getattr(bound, "ge", None) is not None:
            low = bound.ge
        if getattr(bound, "gt", None) is not None:
            low = bound.gt + 1 if whole else bound.gt
        if getattr(bound, "le", None) is not None:
            high = bound.le
        if getattr(bound, "lt", None) is not None:
            high = bound.lt - 1 if whole else bound.lt
    # a browser's number holds integers exactly only up to 2**53 - 1 (a seed may go to 2**63 - 1)
    return max(low, -BROWSER_INT), min(high, BROWSER_INT)


def png_bytes(figure, dpi: int = 110) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def csv_download(frame, name: str, key: str) -> None:
    """A button that downloads a DataFrame as CSV."""
    st.download_button(
        "Download CSV", frame.to_csv(index=False).encode(), file_name=f"{name}.csv", mime="text/csv", key=key
    )


def figure(fig, name: str, key: str) -> None:
    """Show a matplotlib figure full width, and offer the same PNG for download (drawn once)."""
    show_png(png_bytes(fig), name, key)


def show_png(png: bytes, name: str, key: str) -> None:
    st.image(png, width="stretch")
    st.download_button("Download PNG", png, file_name=f"{name}.png", mime="image/png", key=key)


def trace_download(build, *args, name: str, key: str) -> None:
    """A button that downloads the timeline ``build(*args)`` makes as a Chrome Trace Event file, for
    Perfetto or ``chrome://tracing`` (``report.chrome_trace``). ``build`` returns a
    ``chrome_trace.PendingTrace``: its size is checked against the app's budget as the page is
    drawn (a trace above it is refused in place), and the file is built only when the button is
    pressed — a step's trace of tens of thousands of events is not built for every slider move."""
    try:
        pending = build(*args)
    except ParsimError as exc:
        st.caption(f"trace: {exc}")
        return
    st.download_button(
        "Download trace (Perfetto)",
        functools.partial(_trace_bytes, pending),
        file_name=f"{name}.json",
        mime="application/json",
        key=key,
        help="the timeline in the Chrome Trace Event format: open it in ui.perfetto.dev or chrome://tracing",
        # a download changes nothing on the page: no rerun, whose fresh button would otherwise race the
        # deferred build for the press (on a loaded server the file never came)
        on_click="ignore",
    )


def _trace_bytes(pending) -> bytes:
    from parsim.report.chrome_trace import dumps

    return dumps(pending.build()).encode("utf-8")


def cached_png(draw, *args) -> bytes:
    """PNG of ``draw(*args)``, drawn once per builder, arguments and style (the arguments must hash).

    In presentation mode the figure is drawn in ``plots.presentation()``: 16:9, type 1.5x larger.
    """
    return _png(f"{draw.__module__}.{draw.__qualname__}", layout.presenting(), draw, *args)


@st.cache_data(show_spinner=False, max_entries=256)
def _png(name: str, presenting: bool, _draw, *args) -> bytes:
    from parsim.plots import presentation

    with presentation() if presenting else contextlib.nullcontext():
        return png_bytes(_draw(*args))
