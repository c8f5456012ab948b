"""Any Hugging Face model: a ``config.json`` read into an ``LlmConfig``.

A checkpoint on the Hugging Face Hub describes its transformer in ``config.json``: the class that
builds it (``architectures``) and the numbers that class reads (``hidden_size``,
``num_hidden_layers``, ...; GPT-2 and BLOOM spell them ``n_embd``, ``n_layer``; MPT ``d_model``).
Each architecture (``hf_architectures``) names the fields its class reads and the choices its code
makes without a field (Llama's gated SiLU MLP and RMSNorm, OPT's two extra position rows, Qwen2's
q/k/v biases).
Fields parsim does not need (dropout, token ids, ``torch_dtype``) are ignored; a field it reads
with a value it cannot model is refused in one line naming the file, the field and the value, as
is an unknown architecture. The built-in models (``parsim/models/<id>.json``) are such files,
read by the same reader, with ``_source`` (where the numbers come from) and ``_published_params``
(the count the tests compare with) added.

A file is read with ``safefiles.read_text``: never through a symbolic link, a regular file only,
at most ``MAX_CONFIG_BYTES``; what a message echoes of it is a field's name and a short value.
"""

from __future__ import annotations

import json
from pathlib import Path

from parsim.base.errors import ParsimError
from parsim.base.safefiles import read_text
from parsim.workloads.hf_architectures import ARCHITECTURES, LIMITS, Fields
from parsim.workloads.llm_config import LlmConfig

MAX_CONFIG_BYTES = 1_000_000
"""A config.json parsim reads holds at most this many bytes (Hugging Face's are a few kB)."""
__all__ = ["ARCHITECTURES", "LIMITS", "MAX_CONFIG_BYTES", "parse_config", "parse_upload", "read_config"]


def parse_config(text: str, where: str, name: str | None = None) -> LlmConfig:
    """The model of config.json text ``text`` (``where``: the file, for messages; ``name``: its id,
    by default ``where``).

    Raises:
        ParsimError: one line naming ``where`` and the field: not JSON, an unknown architecture, a
            missing field or a value parsim cannot model.
    """
    try:
        data = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        detail = f" (line {exc.lineno})" if isinstance(exc, json.JSONDecodeError) else ""
        raise ParsimError(f"{where}: not JSON{detail}") from None
    if not isinstance(data, dict):
        raise ParsimError(f"{where}: a config.json holds an object, not {type(data).__name__}")
    fields = Fields(data, where)
    architectures = data.get("architectures")
    if not isinstance(architectures, list) or len(architectures) != 1:
        raise fields.error("architectures", "a list of one class name", architectures)
    architecture = architectures[0]
    if not isinstance(architecture, str) or architecture not in ARCHITECTURES:  # [[1]]: unhashable
        raise fields.error("architectures", f"one of {', '.join(ARCHITECTURES)}", architecture)
    shape = ARCHITECTURES[architecture](fields)
    published = data.get("_published_params", 0)
    if type(published) is not int or published < 0:
        raise fields.error("_published_params", "a whole number >= 0", published)
    source = data.get("_source", where)
    if not isinstance(source, str):
        raise fields.error("_source", "text", source)
    return LlmConfig(name=name or where, published_params=published, source=source, **shape)


def _no_constant(value: str) -> None:
    raise ValueError(f"{value} is not a JSON number")


def read_config(path: str | Path, name: str | None = None) -> LlmConfig:
    """The model of the config.json at ``path`` (read by ``safefiles.read_text``: no link, a regular
    file of at most ``MAX_CONFIG_BYTES``), named ``name`` or the path as given."""
    text = read_text(Path(path), MAX_CONFIG_BYTES, option="model")
    return parse_config(text, str(path), name)


def parse_upload(data: bytes, filename: str) -> LlmConfig:
    """The model of an uploaded config.json's bytes, with the bounds of a file on disk."""
    if len(data) > MAX_CONFIG_BYTES:
        raise ParsimError(f"{filename}: {len(data):,} bytes, above the {MAX_CONFIG_BYTES:,} parsim reads")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ParsimError(f"{filename}: not UTF-8 text (byte {exc.start})") from None
    return parse_config(text, filename)
