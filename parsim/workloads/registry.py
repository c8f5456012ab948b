"""Workload names, their parameters, and validation of what users type.

Each workload is registered with a pydantic model of its parameters (bounds included) and a
builder. ``make_workload("matmul", {"m": "4096", ...})`` validates, fills defaults and builds;
any mistake becomes a one-line ``ParsimError`` naming the workload, the field and the value.
Numbers may be written ``1e8``: whole floats are accepted for integer fields.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import attrs
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from parsim.base.errors import ParsimError, closest
from parsim.workloads import conv2d, mlp, ops, training, transfers
from parsim.workloads.base import Params, Vectorised, Workload

Dtype = Literal["float16", "bfloat16", "float32", "float64"]
ElementwiseOp = Literal["vector_add", "saxpy", "relu", "sigmoid"]
MAX_ELEMENTS = 10**15  # far beyond any memory: keeps typos like n=1e30 out of float overflow


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    dtype: Dtype = "float32"

    @field_validator("*", mode="before")
    @classmethod
    def _whole_floats(cls, value: Any) -> Any:
        # "1e8" arrives as the float 1e8; integer fields accept it when it is whole.
        if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
            return int(value)
        return value


class VectorParams(_Params):
    n: int = Field(gt=0, le=MAX_ELEMENTS, description="number of elements")


class ElementwiseParams(VectorParams):
    fused: bool = Field(True, description="one kernel (true) or one pass per operation, as NumPy (false)")


class MatmulParams(_Params):
    m: int = Field(gt=0, le=10**7, description="rows of A and C")
    n: int = Field(gt=0, le=10**7, description="columns of B and C")
    k: int = Field(gt=0, le=10**7, description="columns of A, rows of B")
    math: Literal["ieee", "tf32"] = Field("ieee", description="float32 on TF32 tensor cores (tf32) or not")


class Conv2dParams(_Params):
    batch: int = Field(1, gt=0, le=10**5, description="images")
    channels: int = Field(3, gt=0, le=10**5, description="input channels")
    height: int = Field(224, gt=0, le=10**5, description="image height (pixels)")
    width: int = Field(224, gt=0, le=10**5, description="image width (pixels)")
    filters: int = Field(64, gt=0, le=10**5, description="output channels")
    kernel: int = Field(3, gt=0, le=99, description="kernel edge (same padding, stride 1)")
    math: Literal["ieee", "tf32"] = Field("ieee", description="float32 on TF32 tensor cores (tf32) or not")
    algorithm: Literal["auto", "implicit-gemm", "winograd", "fft", "tap-gemm"] = Field(
        "auto",
        description="auto: the library's fastest (cuDNN); implicit-gemm, winograd or fft: that one; "
        "tap-gemm: one cuBLAS product per filter tap, what parsim measures on CuPy",
    )


class CopyParams(VectorParams):
    direction: Literal["h2d", "d2h"] = "h2d"
    pinned: bool = True


class OffloadParams(VectorParams):
    op: ElementwiseOp = "relu"
    streams: int = Field(1, gt=0, le=64, description="CUDA streams the chunks are spread over")
    pinned: bool = True


Model = Literal[
    "mlp",
    "alexnet",
    "vgg16",
    "resnet18",
    "resnet50",
    "resnet56",
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
]
"""The networks: the CNNs and MLP of ``models.MODELS`` and the language models of ``llms.LLMS``."""
Optimizer = Literal["sgd", "adam"]
_OPTIMIZER: Any = Field("sgd", description="sgd (w -= lr g) or adam (two moments per weight)")


class _FrameworkParams(_Params):
    """What every deep-learning workload shares: the framework and its float32 arithmetic."""

    framework: Literal["eager", "graph", "cuda-graph", "torch7"] = Field(
        "eager", description="eager (PyTorch), graph (TensorFlow/XLA/TorchScript) or cuda-graph"
    )
    math: Literal["default", "tf32", "ieee"] = Field(
        "default",
        description="default: PyTorch's (TF32 convolutions, IEEE matrix products); tf32: both; ieee: neither",
    )
    layout: Literal["default", "nchw", "nhwc"] = Field(
        "default",
        description="activation layout: default: the framework's (PyTorch NCHW, TensorFlow NHWC); "
        "nhwc: channels-last, what tensor cores compute in",
    )


class MlpTrainParams(_FrameworkParams):
    framework: Literal["eager", "graph", "cuda-graph", "torch7", "none"] = Field(  # type: ignore[assignment]
        "eager",
        description="eager (PyTorch), graph (TensorFlow/XLA/TorchScript), cuda-graph, or none: NumPy/CuPy "
        "calls with no framework (what parsim measures)",
    )
    batch: int = Field(64, gt=0, le=10**6, description="samples per step (N)")
    d_in: int = Field(1000, gt=0, le=10**6, description="input features (D)")
    hidden: int = Field(100, gt=0, le=10**6, description="hidden units (H)")
    d_out: int = Field(1000, gt=0, le=10**6, description="outputs")
    weights: Literal["resident", "copied"] = "resident"
    pinned: bool = Field(
        True, description="host buffers of the copies page-locked (true) or pageable NumPy arrays (false)"
    )
    optimizer: Optimizer = _OPTIMIZER


class _ModelParams(_FrameworkParams):
    """A network's parameters; ``seq`` and ``attention`` apply to the language models only."""

    seq: int | None = Field(
        None, gt=0, le=10**6, description="tokens per sample (language models; default: the model's context)"
    )
    attention: Literal["flash", "flash-v1", "unfused"] = Field(
        "flash",
        description="language models: fused FlashAttention-2 (flash), the first FlashAttention (flash-v1) "
        "or QK^T, softmax, xV through memory (unfused)",
    )


class NetworkParams(_ModelParams):
    model: Model = "resnet18"
    batch: int = Field(1, gt=0, le=10**6, description="samples per step (the global batch when split)")
    train: bool = True
    optimizer: Optimizer = _OPTIMIZER
    gpus: int = Field(1, gt=0, le=64, description="GPUs per node (language-model training: tp x pp x dp)")
    nodes: int = Field(1, gt=0, le=65_536, description="nodes of the cluster (--cluster)")
    tp: int = Field(1, gt=0, le=64, description="tensor-parallel GPUs (inside a node)")
    pp: int = Field(1, gt=0, le=1024, description="pipeline stages")
    microbatches: int = Field(1, gt=0, le=65_536, description="micro-batches per replica and step (1F1B)")
    recompute: Literal["none", "selective", "full"] = Field(
        "none", description="activation recomputation: none, selective (attention core) or full"
    )
    dropout: bool = Field(False, description="language models: attention dropout (Megatron-LM's default 0.1)")
    code: Literal["fused", "hf"] = Field(
        "fused",
        description="language models: the model's code: fused kernels (Megatron-LM, FlashAttention, "
        "llm.c) or Hugging Face's modules as eager PyTorch runs them, one kernel per tensor op "
        "(hf: framework=eager)",
    )


class ServeParams(_ModelParams):
    model: Model = "resnet50"
    batch: int = Field(1, gt=0, le=10**5, description="samples per request batch")


class DataParallelParams(_ModelParams):
    model: Model = "resnet50"
    batch: int = Field(256, gt=0, le=10**6, description="global batch (strong) or per GPU (weak)")
    gpus: int = Field(1, gt=0, le=64, description="GPUs the batch is split over")
    sync: Literal["host", "ring"] = "host"
    scaling: Literal["strong", "weak"] = "strong"
    optimizer: Optimizer = _OPTIMIZER
    nodes: int = Field(1, gt=0, le=65_536, description="nodes of the cluster (--cluster), gpus each")
    bucket_mb: float = Field(25.0, gt=0, le=1e5, description="gradient bucket (MiB; DDP's bucket_cap_mb)")
    overlap: bool = Field(True, description="all-reduce buckets during the backward pass (DDP) or after it")
    zero: int = Field(
        0, ge=0, le=3, description="ZeRO stage: shard optimizer state (1), + gradients (2), + weights (3)"
    )


@attrs.frozen
class WorkloadDef:
    """A registered workload: its parameters, its builder, and what it can do.

    Attributes:
        name: the id users type.
        params: the pydantic model of its parameters (bounds included).
        build: validated parameters -> ``Workload``.
        summary: one line for help texts.
        sizes: parameters a vectorised sweep may vary as arrays (``("n",)``, ``("m", "n", "k")``).
        vectorised: validated parameters (sizes as arrays) -> the quantities of its single op,
            for the vectorised analytic sweep; None where the workload is not one op.
        split: how ``--gpus G`` spreads it: ``items`` (independent items, 1/G each), ``batch``
            (the batch, which needs at least G samples), or None (it cannot be split).
        instead: what to use when it cannot be split (shown with the refusal).
        samples: validated parameters -> samples one instance processes (for ``samples_per_s``).
        baseline: validated parameters -> those of the one-GPU reference that speed-up,
            efficiency and Amdahl's serial fraction are measured against (multi-GPU workloads).
        family: workloads that stand in for one another in a lesson (``elementwise``).
        check: ``(name, given, validated) -> validated``: rules between fields that pydantic's
            per-field bounds cannot say (a sequence longer than the model's context), defaults
            that depend on other fields, and the removal of fields that do not apply.
    """

    name: str
    params: type[_Params]
    build: Callable[[Params], Workload]
    summary: str
    sizes: tuple[str, ...] = ()
    vectorised: Callable[[Params], Vectorised | None] | None = None
    split: Literal["items", "batch"] | None = None
    instead: str = ""
    samples: Callable[[Params], int] | None = None
    baseline: Callable[[Params], Params] | None = None
    family: str = ""
    check: Callable[[str, Params, Params], Params] | None = None

    @property
    def owns_gpus(self) -> bool:
        """The GPU count is one of its own parameters (``data_parallel gpus=G``)."""
        return "gpus" in self.params.model_fields


def _elementwise(op: str) -> WorkloadDef:
    formula = ops.ELEMENTWISE[op].formula
    return WorkloadDef(
        op,
        ElementwiseParams,
        lambda p: ops.elementwise(op, p),
        f"elementwise {formula}",
        sizes=("n",),
        vectorised=lambda p: ops.vectorised_elementwise(op, p),
        split="items",
        family="elementwise",
    )


def _batch(params: Params) -> int:
    return int(params["batch"])


def _global_batch(params: Params) -> int:
    """Samples of a data-parallel step: every GPU's shard (a strong-scaling batch may not divide evenly)."""
    ranks = params["gpus"] * params.get("nodes", 1)
    shard = params["batch"] if params["scaling"] == "weak" else params["batch"] // ranks
    return int(shard * ranks)


_DATA_PARALLEL = " (use data_parallel model=... gpus=G)"
SEQUENCE_FIELDS = ("seq", "attention", "dropout", "code")


def _check_model(name: str, given: Params, params: Params) -> Params:
    """A language model's ``seq`` defaults to its context and may not exceed it; a CNN takes none."""
    from parsim.workloads.llms import LLMS

    model = params["model"]
    if model in LLMS:
        context = LLMS[model].context
        seq = params["seq"] or context
        if seq > context:
            raise ParsimError(f"{name}: 'seq' {seq} is above {model}'s context of {context} tokens")
        if params.get("code", "fused") == "hf" and params["framework"] != "eager":
            raise ParsimError(
                f"{name}: code=hf is Hugging Face's modules run op by op: it needs framework=eager, "
                f"not {params['framework']} (a compiled graph fuses them: use code=fused)"
            )
        return {**params, "seq": seq}
    if given.get("seq") is not None:
        raise ParsimError(
            f"{name}: 'seq' applies only to the language models ({', '.join(LLMS)}); "
            f"{model} takes no sequence"
        )
    return {key: value for key, value in params.items() if key not in SEQUENCE_FIELDS}


WORKLOADS: dict[str, WorkloadDef] = {
    **{op: _elementwise(op) for op in ops.ELEMENTWISE},
    "reduce_sum": WorkloadDef(
        "reduce_sum",
        VectorParams,
        ops.reduce_sum,
        "s = sum(x)",
        ("n",),
        ops.vectorised_reduce_sum,
        split="items",
    ),
    "matmul": WorkloadDef(
        "matmul",
        MatmulParams,
        ops.matmul,
        "C = A @ B (dense GEMM)",
        ("m", "n", "k"),
        ops.vectorised_matmul,
        split="items",
    ),
    "conv2d": WorkloadDef(
        "conv2d", Conv2dParams, conv2d.conv2d, "3x3 convolution, same padding", split="items", samples=_batch
    ),
    "copy": WorkloadDef(
        "copy",
        CopyParams,
        transfers.copy,
        "one host<->device copy",
        ("n",),
        transfers.vectorised_copy,
        split="items",
    ),
    "mlp_train_step": WorkloadDef(
        "mlp_train_step",
        MlpTrainParams,
        mlp.mlp_train_step,
        "one SGD step of the 2-layer MLP",
        instead=_DATA_PARALLEL,
        samples=_batch,
    ),
    "network": WorkloadDef(
        "network",
        NetworkParams,
        training.network,
        "a model's forward (+ backward + update)",
        instead=_DATA_PARALLEL,
        samples=_batch,
        check=_check_model,
    ),
    "serve": WorkloadDef(
        "serve",
        ServeParams,
        training.serve,
        "inference on one batch: copy in, forward, copy out",
        split="batch",
        samples=_batch,
        check=_check_model,
    ),
    "data_parallel": WorkloadDef(
        "data_parallel",
        DataParallelParams,
        training.data_parallel,
        "training split over GPUs, host or ring sync",
        samples=_global_batch,
        baseline=lambda params: {**params, "gpus": 1, "nodes": 1},
        check=_check_model,
    ),
    "offload": WorkloadDef(
        "offload",
        OffloadParams,
        transfers.offload,
        "H2D, elementwise op, D2H chunked over streams",
        split="items",
    ),
}


def capabilities(workload: Workload) -> WorkloadDef | None:
    """The definition of a built workload (None for one built by hand under a name of its own)."""
    return WORKLOADS.get(workload.name)


def workload_names(family: str | None = None) -> list[str]:
    """Every workload id, or those of one ``family``, in registration order for a family."""
    if family is None:
        return sorted(WORKLOADS)
    return [name for name, definition in WORKLOADS.items() if definition.family == family]


def model_names() -> list[str]:
    """The networks ``network``, ``serve`` and ``data_parallel`` know: CNNs and MLP, then language models."""
    from parsim.workloads.models import MODELS

    return [*MODELS, *llm_names()]


def llm_names() -> list[str]:
    """The language models (``llms.LLMS``)."""
    from parsim.workloads.llms import LLMS

    return list(LLMS)


def lookup(name: str) -> WorkloadDef:
    """The registered workload ``name``, or a ParsimError suggesting the closest names."""
    if name not in WORKLOADS:
        raise ParsimError(f"unknown workload {name!r}; {closest(name, workload_names())}")
    return WORKLOADS[name]


def validate_params(name: str, params: Params) -> Params:
    """Validate ``params`` for workload ``name``; return them with defaults filled in."""
    definition = lookup(name)
    _check_numbers(name, definition.params, params)
    _check_model_name(name, definition.params, params)
    try:
        validated = definition.params(**params).model_dump()
    except ValidationError as exc:
        raise ParsimError(_one_line(name, definition.params, exc)) from None
    return definition.check(name, params, validated) if definition.check else validated


def _check_model_name(name: str, model: type[_Params], params: Params) -> None:
    """An unknown ``model`` is refused with the closest names (there are a dozen to choose from)."""
    value = params.get("model")
    if "model" not in model.model_fields or not isinstance(value, str) or value in model_names():
        return
    raise ParsimError(f"{name}: unknown 'model' {value!r}; {closest(value, model_names())}")


def _check_numbers(name: str, model: type[_Params], params: Params) -> None:
    """What pydantic's lax mode lets through or words poorly: ``n=true`` taken as 1, and a number
    far out of range reported as unparseable instead of against its bound."""
    for field, value in params.items():
        info = model.model_fields.get(field)
        if info is None or info.annotation not in (int, float):
            continue
        if isinstance(value, bool):
            raise ParsimError(f"{name}: {field!r} must be a number, not {str(value).lower()}")
        high = next((m.le for m in info.metadata if getattr(m, "le", None) is not None), None)
        if isinstance(value, (int, float)) and high is not None and value > high:
            raise ParsimError(f"{name}: {field!r} must be <= {high:g}: {value:g}")


def make_workload(name: str, params: Params | None = None) -> Workload:
    """Build workload ``name`` from user parameters (strings, numbers or booleans)."""
    return lookup(name).build(validate_params(name, dict(params or {})))


def _one_line(name: str, model: type[_Params], exc: ValidationError) -> str:
    error = exc.errors()[0]
    field = ".".join(str(part) for part in error["loc"]) or "?"
    if error["type"] == "extra_forbidden":
        known = ", ".join(model.model_fields)
        return f"{name}: unknown parameter {field!r} (known: {known})"
    if error["type"] == "missing":
        return f"{name}: missing parameter {field!r} (give it as {field}=VALUE)"
    message = error["msg"][0].lower() + error["msg"][1:]
    return f"{name}: {field!r} {message}: {error['input']!r}"


# llm_serve builds on this module's parameter models, so it registers itself once they exist.
from parsim.workloads.serving import LLM_SERVE  # noqa: E402

WORKLOADS[LLM_SERVE.name] = LLM_SERVE

from parsim.workloads.collective import COLLECTIVE_WORKLOADS  # noqa: E402

WORKLOADS.update(COLLECTIVE_WORKLOADS)
