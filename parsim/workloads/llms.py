"""Transformer language models: the built-in ones, and any Hugging Face ``config.json``.

Every model is a ``config.json`` read by one reader (``hf_config``) into an ``LlmConfig``: the
built-in ones ship as package data, ``parsim/models/<id>.json``, each with the source of its numbers
(``_source``) and its published parameter count (``_published_params``, which the tests check the
derived count against); ``LLMS`` is their registry, by id, in the order of ``BUILT_IN``. A user
names a model by id or by the path of its ``config.json`` (``model=path/to/config.json``); the app
registers an upload's bytes under a name of their hash. ``llm`` is the one resolver every workload,
figure and study calls: an id, a registered upload or a path, a ParsimError otherwise. A mixture of
experts (``experts``, ``experts_per_token``) is modelled for inference by ``moe``.

The memory a model needs follows from the same numbers: ``kv_cache_bytes`` (keys and values of
every layer for every token kept) here, the rest part by part in ``transformer_memory``.
"""

from __future__ import annotations

import hashlib
import os
from collections import OrderedDict
from importlib import resources

import attrs

from parsim.base.dtypes import DTYPES
from parsim.base.errors import ParsimError, closest
from parsim.workloads.hf_config import MAX_CONFIG_BYTES, parse_config, parse_upload, read_config
from parsim.workloads.llm_config import LlmConfig

__all__ = ["LLMS", "LlmConfig", "is_llm", "kv_cache_bytes", "kv_itemsize", "llm", "register_upload"]

_QUANTISED = {"int8": 1.0, "float8": 1.0, "int4": 0.5}  # KV-cache element types below 16 bits

BUILT_IN = (
    "gpt2",
    "gpt2-medium",
    "gpt2-xl",
    "gpt3-125m",
    "gpt3-355m",
    "gpt3-760m",
    "gpt3-1.3b",
    "gpt3-2.7b",
    "llama-2-7b",
    "llama-2-13b",
    "llama-2-70b",
    "llama-3-8b",
    "llama-3-70b",
    "llama-3.1-8b",
    "llama-3.1-70b",
    "megatron-1.7b",
    "megatron-3.6b",
    "megatron-7.5b",
    "megatron-18b",
    "megatron-39b",
    "megatron-76b",
    "megatron-145b",
    "megatron-310b",
    "megatron-530b",
    "megatron-1t",
    "gpt3-175b",
    "llama-1-65b",
    "llama-3.1-405b",
    "mistral-7b",
    "bloom-176b",
    "mpt-7b",
    "mpt-30b",
    "opt-13b",
    "opt-66b",
    "opt-175b",
    "falcon-40b",
    "gpt-neox-20b",
    "mixtral-8x7b",
    "mixtral-8x22b",
    "dbrx",
    "qwen3-30b-a3b",
    "qwen3-235b-a22b",
)
"""The built-in models' ids, in the order the choices list them (``parsim/models/<id>.json``)."""
MODELS_FOLDER = "models"
"""The package-data folder of the built-in config files."""


def _built_in(name: str) -> LlmConfig:
    text = resources.files("parsim").joinpath(MODELS_FOLDER, f"{name}.json").read_text(encoding="utf-8")
    return parse_config(text, f"parsim/{MODELS_FOLDER}/{name}.json", name)


LLMS: dict[str, LlmConfig] = {name: _built_in(name) for name in BUILT_IN}
"""The language models parsim knows, by name."""

_MAX_UPLOADS = 32
_UPLOADS: OrderedDict[str, LlmConfig] = OrderedDict()  # uploaded configs by the hash of their bytes
_FILES: dict[str, tuple[tuple[int, int, int], LlmConfig]] = {}  # path -> (its lstat, its model)


def is_llm(name: object) -> bool:
    """Whether ``name`` names a language model: an id, a registered upload or a ``.json`` path."""
    return isinstance(name, str) and (name in LLMS or name in _UPLOADS or name.endswith(".json"))


def llm(name: str) -> LlmConfig:
    """The configuration of language model ``name``: a built-in id, a registered upload, or the path
    of a ``config.json`` (read again when the file changed).

    Raises:
        ParsimError: an unknown name (with the closest ids), or a file ``hf_config`` refuses.
    """
    if name in LLMS:
        return LLMS[name]
    if name in _UPLOADS:
        config = _UPLOADS[name]
    elif isinstance(name, str) and name.endswith(".json"):
        config = _from_file(name)
    else:
        raise ParsimError(f"unknown model {name!r}; {closest(str(name), LLMS)} (or a path to a config.json)")
    return config


def _from_file(path: str) -> LlmConfig:
    """A config file's model, kept while the file's inode, size and modification time are the same."""
    try:
        info = os.lstat(path)
        key = (info.st_ino, info.st_size, info.st_mtime_ns)
    except OSError:
        key = (-1, -1, -1)  # read_config says why in one line
    kept = _FILES.get(path)
    if kept is not None and kept[0] == key:
        return kept[1]
    config = read_config(path)
    _FILES[path] = (key, config)
    return config


def register_upload(data: bytes, filename: str) -> str:
    """Read an uploaded config.json's bytes (``hf_config.parse_upload``: the bounds of a file) and
    keep its model in memory under ``uploaded-<hash>``, the name workloads then take; nothing is
    written to disk. The last ``_MAX_UPLOADS`` are kept."""
    if len(data) > MAX_CONFIG_BYTES:  # before hashing it
        parse_upload(data, filename)
    digest = hashlib.sha256(data).hexdigest()[:12]
    name = f"uploaded-{digest}"
    if name not in _UPLOADS:
        config = parse_upload(data, filename)
        _UPLOADS[name] = attrs.evolve(config, name=name, source=f"uploaded {filename}")
        while len(_UPLOADS) > _MAX_UPLOADS:
            _UPLOADS.popitem(last=False)
    _UPLOADS.move_to_end(name)
    return name


def kv_itemsize(dtype: str) -> float:
    """Bytes per KV-cache element: a float type's size, or a quantised type's (int8, float8, int4)."""
    return float(DTYPES[dtype]) if dtype in DTYPES else _QUANTISED[dtype]


def kv_cache_bytes(config: LlmConfig, batch: int, tokens: int, kv_dtype: str) -> float:
    """Keys and values of ``tokens`` tokens for ``batch`` sequences over every layer."""
    return 2.0 * config.layers * config.kv_width * tokens * batch * kv_itemsize(kv_dtype)
