"""The standard workloads: elementwise kernels, reductions, GEMMs, convolutions, copies, networks.

Each is a parameter model (pydantic: bounds, defaults, descriptions) and a ``WorkloadDef`` in
``DEFINITIONS``, which ``registry`` registers. Lists of choices are derived from what they choose
among: the elementwise operations from ``ops.ELEMENTWISE``, the networks from ``models.MODELS`` and
``llms.LLMS``; a language model may also be named by the path of its ``config.json``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from parsim.base.errors import ParsimError
from parsim.workloads import conv2d, mlp, ops, training, transfers
from parsim.workloads.base import Params
from parsim.workloads.definition import MAX_ELEMENTS, ParamsModel, WorkloadDef
from parsim.workloads.llms import LLMS, is_llm, llm
from parsim.workloads.models import MODELS
from parsim.workloads.moe import CAPACITY_FACTOR_FIELD, IMBALANCE_FIELD
from parsim.workloads.parallel3d import ParallelMetrics

if TYPE_CHECKING:  # the choices are data: to the type checker, names
    ElementwiseOp = str
    Model = str
else:
    ElementwiseOp = Literal[tuple(ops.ELEMENTWISE)]
    Model = Literal[(*MODELS, *LLMS)] | str  # or a config.json path: ``registry`` checks the name
"""The elementwise operations (``ops.ELEMENTWISE``) and the networks (the CNNs and MLP of
``models.MODELS``, then the language models of ``llms.LLMS``): derived, no hand-kept list; any
other text is a language model's ``config.json`` (``llms.llm`` reads it)."""


class VectorParams(ParamsModel):
    n: int = Field(gt=0, le=MAX_ELEMENTS, description="number of elements")


class ElementwiseParams(VectorParams):
    fused: bool = Field(True, description="one kernel (true) or one pass per operation, as NumPy (false)")


class MatmulParams(ParamsModel):
    m: int = Field(gt=0, le=10**7, description="rows of A and C")
    n: int = Field(gt=0, le=10**7, description="columns of B and C")
    k: int = Field(gt=0, le=10**7, description="columns of A, rows of B")
    math: Literal["ieee", "tf32"] = Field("ieee", description="float32 on TF32 tensor cores (tf32) or not")


class Conv2dParams(ParamsModel):
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


Optimizer = Literal["sgd", "adam"]
_OPTIMIZER: Any = Field("sgd", description="sgd (w -= lr g) or adam (two moments per weight)")


FrameworkName = Literal["eager", "graph", "tf1", "cuda-graph", "torch7", "xla", "mxnet", "mxnet-cuda-graph"]
"""The frameworks a deep-learning workload may run in (``stack.FRAMEWORKS``' ids for networks)."""


class _FrameworkParams(ParamsModel):
    """What every deep-learning workload shares: the framework and its float32 arithmetic."""

    framework: FrameworkName = Field(
        "eager",
        description="eager (PyTorch), graph (TensorFlow/TorchScript), tf1 (TensorFlow 1 Session.run "
        "per step), mxnet (hybridized MXNet Gluon), mxnet-cuda-graph (the same replayed as CUDA graphs), "
        "cuda-graph, or xla (one jitted step; the default on a TPU)",
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
    framework: FrameworkName | Literal["none"] = Field(  # type: ignore[assignment]
        "eager",
        description="eager (PyTorch), graph (TensorFlow/XLA/TorchScript), tf1, mxnet, mxnet-cuda-graph, "
        "cuda-graph, or none: NumPy/CuPy calls with no framework (what parsim measures)",
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


Code = Literal["fused", "hf", "eager", "eager-fused-norm"]
CODE_FIELD: Any = Field(
    "fused",
    description="language models: the model's code: fused kernels (Megatron-LM, FlashAttention, llm.c, "
    "a compiled graph), Hugging Face's modules run op by op (hf), or the reference Llama's PyTorch "
    "run op by op as torchtitan trains it with compile=false (eager; eager-fused-norm: with its "
    "Triton RMSNorm); all but fused need framework=eager",
)


class NetworkParams(_ModelParams):
    model: Model = "resnet18"
    batch: int = Field(1, gt=0, le=10**6, description="samples per step (the global batch when split)")
    train: bool = True
    input: Literal["copied", "resident"] = Field(
        "copied",
        description="copied: the batch crosses the host link every step (a data loader); resident: "
        "made on the GPU once and reused (synthetic benchmarks such as timm's benchmark.py)",
    )
    optimizer: Optimizer = _OPTIMIZER
    gpus: int = Field(1, gt=0, le=72, description="GPUs per node (language-model training: tp x pp x dp)")
    nodes: int = Field(1, gt=0, le=65_536, description="nodes of the cluster (--cluster)")
    tp: int = Field(1, gt=0, le=72, description="tensor-parallel GPUs (inside a node)")
    pp: int = Field(1, gt=0, le=1024, description="pipeline stages")
    microbatches: int = Field(1, gt=0, le=65_536, description="micro-batches per replica and step (1F1B)")
    recompute: Literal["none", "selective", "full"] = Field(
        "none", description="activation recomputation: none, selective (attention core) or full"
    )
    dropout: bool = Field(False, description="language models: attention dropout (Megatron-LM's default 0.1)")
    sequence_parallel: bool = Field(
        False,
        description="norms, dropouts, their activations over tp; all-reduce -> reduce-scatter + all-gather",
    )
    distributed_optimizer: bool = Field(
        False, description="shard master weights and Adam state over dp (ZeRO-1): reduce-scatter + all-gather"
    )
    optimizer_moments: Literal["float32", "bfloat16"] = Field(
        "float32",
        description="Adam's two moments' dtype: bfloat16 is Megatron-Core's precision-aware optimizer "
        "(--use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16; distributed "
        "optimizer only)",
    )
    overlap_grad_reduce: bool = Field(
        False,
        description="reduce the gradients bucket by bucket beside the last backward (--overlap-grad-reduce)",
    )
    overlap_param_gather: bool = Field(
        False, description="gather the weights bucket by bucket beside the forward (--overlap-param-gather)"
    )
    bucket_params: int = Field(
        0,
        ge=0,
        le=10**12,
        description="elements per data-parallel bucket; 0: Megatron-Core's max(40M, 1M x dp)",
    )
    cp: int = Field(
        1, gt=0, le=64, description="context-parallel GPUs: each holds seq/cp tokens (ring attention)"
    )
    virtual_stages: int = Field(
        1,
        gt=0,
        le=64,
        description="layer chunks per pipeline stage: the interleaved 1F1B schedule (bubble / v)",
    )
    fp8: bool = Field(
        False, description="Transformer Engine FP8 GEMMs in the blocks' linear layers (H100 and later)"
    )
    fp8_recipe: Literal["delayed", "tensorwise", "blockwise", "mxfp8"] = Field(
        "delayed",
        description="with fp8=true, how casts are scaled (Megatron-LM's --fp8-recipe): delayed (amax "
        "history), tensorwise (current scaling: an amax pass first), blockwise (1 x 128 blocks, two "
        "copies; Hopper and later) or mxfp8 (Blackwell's 32-element blocks, two copies)",
    )
    ep: int = Field(
        1, gt=0, le=1024, description="mixture of experts: expert-parallel GPUs (of dp x cp; all-to-alls)"
    )
    expert_tp: int = Field(
        0, ge=0, le=72, description="mixture of experts: GPUs each expert is split over (0: tp; 1: folding)"
    )
    dispatcher: Literal["alltoall", "flex"] = Field(
        "alltoall",
        description="mixture of experts: NCCL all-to-all, or flex (DeepEP/HybridEP: a token crosses "
        "to a node once)",
    )
    flex_backend: Literal["hybridep", "deepep"] = Field(
        "hybridep",
        description="with dispatcher=flex: HybridEP (permutes and pads inside its kernels) or DeepEP "
        "(permutes after the dispatch; FP8 experts pad their rows; Megatron-Core's own default)",
    )
    ep_overlap: bool = Field(
        False, description="mixture of experts: all-to-alls beside another micro-batch's compute"
    )
    cuda_graphs: str = Field(
        "",
        max_length=80,
        description="CUDA graphs (Megatron-Core's --cuda-graph-scope): comma-separated attn, mlp, "
        "moe_router, moe_preprocess, or layer (each whole layer) or full_iteration alone; empty or "
        "none: eager",
    )
    imbalance: float = IMBALANCE_FIELD
    capacity_factor: float = CAPACITY_FACTOR_FIELD
    pipeline_events: bool = Field(
        False,
        description="time a pipelined step event by event in the SimPy engine (the oracle) instead of "
        "its exact max-plus recurrence (the default: the same timeline, faster)",
    )
    code: Code = CODE_FIELD


class ServeParams(_ModelParams):
    model: Model = "resnet50"
    batch: int = Field(1, gt=0, le=10**5, description="samples per request batch")


class DataParallelParams(_ModelParams):
    model: Model = "resnet50"
    batch: int = Field(256, gt=0, le=10**6, description="global batch (strong) or per GPU (weak)")
    gpus: int = Field(1, gt=0, le=72, description="GPUs the batch is split over")
    sync: Literal["host", "ring"] = "host"
    scaling: Literal["strong", "weak"] = "strong"
    optimizer: Optimizer = _OPTIMIZER
    nodes: int = Field(1, gt=0, le=65_536, description="nodes of the cluster (--cluster), gpus each")
    bucket_mb: float = Field(25.0, gt=0, le=1e5, description="gradient bucket (MiB; DDP's bucket_cap_mb)")
    overlap: bool = Field(True, description="all-reduce buckets during the backward pass (DDP) or after it")
    zero: int = Field(
        0, ge=0, le=3, description="ZeRO stage: shard optimizer state (1), + gradients (2), + weights (3)"
    )
    recompute: Literal["none", "selective", "selective-op", "full"] = Field(
        "none",
        description="language models: activation recomputation (as network's): none, selective (the "
        "attention core), selective-op (torchtitan's per-op policy: every second matmul of a block and "
        "its elementwise ops again) or full (FSDP runs such as MaxText's: zero=3 recompute=full)",
    )
    offload: bool = Field(
        False,
        description="language models with recompute=full: keep each layer's checkpointed input in host "
        "memory, not on the device (MaxText's remat_policy custom with decoder_layer_input: offload)",
    )
    microbatches: int = Field(
        1,
        gt=0,
        le=4096,
        description="micro-batches per GPU and step (gradient accumulation): each GPU's samples run "
        "in that many forward/backward passes before one update",
    )
    prefetch: int = Field(
        2,
        gt=0,
        le=1024,
        description="zero=3 (FSDP): units whose weights may be gathered at once; 2 as FSDP's "
        "limit_all_gathers and FSDP2's default prefetch keep (1: every gather exposed)",
    )
    tp: int = Field(
        1,
        gt=0,
        le=72,
        description="language models with zero=3: tensor-parallel GPUs inside a node (2D, torchtitan's "
        "FSDP + TP): each group of tp GPUs splits the layers, FSDP runs over gpus x nodes / tp groups",
    )
    code: Code = CODE_FIELD


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
    ranks = params["gpus"] * params.get("nodes", 1) // params.get("tp", 1)  # one per tensor-parallel group
    shard = params["batch"] if params["scaling"] == "weak" else params["batch"] // ranks
    return int(shard * ranks)


_DATA_PARALLEL = " (use data_parallel model=... gpus=G)"
SEQUENCE_FIELDS = ("seq", "attention", "dropout", "code")


def _check_model(name: str, given: Params, params: Params) -> Params:
    """A language model's ``seq`` defaults to its context and may not exceed it; a CNN takes none."""
    model = params["model"]
    if is_llm(model):
        try:
            config = llm(model)
        except ParsimError as error:
            raise ParsimError(f"{name}: {error}") from None
        context = config.context
        seq = params["seq"] or context
        if seq > context:
            raise ParsimError(f"{name}: 'seq' {seq} is above {model}'s context of {context} tokens")
        code = params.get("code", "fused")
        if code != "fused" and params["framework"] != "eager":
            raise ParsimError(
                f"{name}: code={code} is the model's tensor ops run one by one: it needs "
                f"framework=eager, not {params['framework']} (a compiled graph fuses them: use code=fused)"
            )
        return {**params, "seq": seq}
    if given.get("seq") is not None:
        raise ParsimError(
            f"{name}: 'seq' applies only to the language models ({', '.join(LLMS)}); "
            f"{model} takes no sequence"
        )
    return {key: value for key, value in params.items() if key not in SEQUENCE_FIELDS}


NETWORK = WorkloadDef(
    "network",
    NetworkParams,
    training.network,
    "a model's forward (+ backward + update)",
    instead=_DATA_PARALLEL,
    samples=_batch,
    check=_check_model,
    record=ParallelMetrics,
    cluster=(),
)
"""A network's step; split over a cluster, the 3D-parallel step its figures describe."""


DATA_PARALLEL = WorkloadDef(
    "data_parallel",
    DataParallelParams,
    training.data_parallel,
    "training split over GPUs, host or ring sync",
    samples=_global_batch,
    baseline=lambda params: {**params, "gpus": 1, "nodes": 1, "tp": 1},
    check=_check_model,
    cluster=(("sync", "ring"),),  # a cluster's GPUs sum gradients with NCCL, not on one host
)
"""Training split over GPUs; on a cluster, its gradients summed by NCCL (``sync=ring``)."""


DEFINITIONS: tuple[WorkloadDef, ...] = (
    *(_elementwise(op) for op in ops.ELEMENTWISE),
    WorkloadDef(
        "reduce_sum",
        VectorParams,
        ops.reduce_sum,
        "s = sum(x)",
        ("n",),
        ops.vectorised_reduce_sum,
        split="items",
    ),
    WorkloadDef(
        "matmul",
        MatmulParams,
        ops.matmul,
        "C = A @ B (dense GEMM)",
        ("m", "n", "k"),
        ops.vectorised_matmul,
        split="items",
        # 4096^3 keeps a GPU's tensor cores busy (the app's first values)
        example=(("m", 4096), ("n", 4096), ("k", 4096)),
    ),
    WorkloadDef(
        "conv2d",
        Conv2dParams,
        conv2d.conv2d,
        "3x3 convolution, same padding",
        split="items",
        samples=_batch,
    ),
    WorkloadDef(
        "copy",
        CopyParams,
        transfers.copy,
        "one host<->device copy",
        ("n",),
        transfers.vectorised_copy,
        split="items",
        figures=("timeline", "breakdown"),
    ),
    WorkloadDef(
        "mlp_train_step",
        MlpTrainParams,
        mlp.mlp_train_step,
        "one SGD step of the 2-layer MLP",
        instead=_DATA_PARALLEL,
        samples=_batch,
    ),
    NETWORK,
    WorkloadDef(
        "serve",
        ServeParams,
        training.serve,
        "inference on one batch: copy in, forward, copy out",
        split="batch",
        samples=_batch,
        check=_check_model,
    ),
    DATA_PARALLEL,
    WorkloadDef(
        "offload",
        OffloadParams,
        transfers.offload,
        "H2D, elementwise op, D2H chunked over streams",
        split="items",
    ),
)
"""The kernels, copies and networks (``registry`` registers them first, in this order)."""
