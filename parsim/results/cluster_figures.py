"""Cluster figures that need the system: a collective's bandwidths as nccl-tests prints them, and a
3D-parallel training step's throughput, efficiency, breakdown and memory.

``workloads.collective`` builds one collective from its parameters; its time comes from the model
(``model.collectives``), and here, above the model, the prediction gets the figures a user holds
against an ``all_reduce_perf`` run: the *algorithm bandwidth* (bytes over time) and the *bus
bandwidth* (algorithm bandwidth times ``2(n-1)/n`` for all-reduce, ``(n-1)/n`` for the others), both
as ``model.collectives`` derives them.
A 3D-parallel step (``workloads.parallel3d``) reports tokens/s, the TFLOP/s each GPU achieves
(every FLOP it runs, recomputation included, as Megatron-LM's papers count them) and its model
FLOPs utilisation (MFU: the model's FLOPs without recomputation over the matrix units' peak), and
where a stage's time goes: compute, tensor-parallel communication, the data-parallel all-reduce,
and the rest, idle: the pipeline bubble and waits for sends. ``check_parallel`` refuses a split
that does not fit and names the smallest that would.

Both are registered once for their definitions' kinds (``hooks.register``), as LLM serving's are;
``predict`` finds them without naming a workload. A stage's time is told apart by the fields of the
ops behind its intervals (``TraceEvent.op``: a pass's ``Block``, a gradient ``AllReduce``, a
recomputed kernel's ``phase``), never by their labels.
"""

from __future__ import annotations

from parsim.base.errors import ParsimError
from parsim.hardware.specs import SystemSpec
from parsim.model import footprint
from parsim.model.collectives import algorithm_bandwidth_Bps, bus_bandwidth_Bps, group_of, op_timing
from parsim.results import hooks
from parsim.results.prediction import Prediction
from parsim.workloads import parallel3d
from parsim.workloads.base import AllReduce, Block, Params, Workload
from parsim.workloads.collective import KIND, CollectiveMetrics
from parsim.workloads.layers import Numerics
from parsim.workloads.llms import LlmConfig, llm
from parsim.workloads.parallel3d import ParallelMetrics
from parsim.workloads.standard import NETWORK
from parsim.workloads.training import numerics_of
from parsim.workloads.transformer_memory import uneven_stages

PROTOCOL_NAMES = {"ll": "LL", "ll128": "LL128", "simple": "Simple"}
"""How NCCL writes its protocols."""


def collective_metrics(workload: Workload, system: SystemSpec, prediction: Prediction) -> CollectiveMetrics:
    """Algorithm and bus bandwidth of the collective, from its device time (the op's own interval,
    as nccl-tests times it with CUDA events: no launch on the host)."""
    op = workload.ops[0]
    assert isinstance(op, AllReduce)  # a collective workload is one collective
    seconds = op_timing(system, op).seconds
    ranks = group_of(system, op).ranks
    return CollectiveMetrics(
        collective_s=seconds,
        algorithm_bandwidth_Bps=algorithm_bandwidth_Bps(op.nbytes, seconds),
        bus_bandwidth_Bps=bus_bandwidth_Bps(op.kind, op.nbytes, seconds, ranks),
        ranks=float(ranks),
    )


def collective_notes(workload: Workload, system: SystemSpec) -> tuple[str, ...]:
    """Which algorithm the collective took, and why, in one line."""
    op = workload.ops[0]
    assert isinstance(op, AllReduce)
    timing = op_timing(system, op)
    if system.total_gpus == 1:
        return ("one GPU: nothing to exchange",)
    share = timing.latency_s / timing.seconds if timing.seconds else 0.0
    return (
        f"{op.kind.replace('_', '-')} by {timing.algorithm}"
        f"{f' ({PROTOCOL_NAMES[timing.protocol]} protocol)' if timing.protocol else ''}"
        f" over {system.total_gpus} GPUs "
        f"({system.nodes} node{'s' if system.nodes > 1 else ''}): latency terms are {share:.0%} of its time",
    )


def parallel_metrics(
    workload: Workload, system: SystemSpec, prediction: Prediction
) -> ParallelMetrics | None:
    """A 3D-parallel step's throughput, efficiency and breakdown (nothing for a one-GPU step)."""
    if not workload.devices:
        return None
    params: Params = dict(workload.params)
    stages = int(params["pp"])
    return parallel_record(workload, system, prediction.latency_s, _stage_busy(prediction, stages))


def parallel_record(
    workload: Workload, system: SystemSpec, step: float, busy: tuple[float, float, float]
) -> ParallelMetrics:
    """The figures of a 3D-parallel step that took ``step`` seconds, its stages' GPUs busy
    ``busy`` seconds in all (kernels, tensor-parallel all-reduces, gradient collectives)."""
    params: Params = dict(workload.params)
    config = llm(str(params["model"]))
    lay = parallel3d.layout(config, params)
    blocks = [op for op in workload.ops if isinstance(op, Block)]
    run = workload.flops / lay.pp  # a GPU's FLOPs: every stage's representative alike
    own: dict[int, float] = {}  # the model's FLOPs of each shape of pass, without recomputation
    for block in blocks:
        if id(block.kernels) not in own:
            own[id(block.kernels)] = sum(
                k.work.flops for k in block.kernels if k.phase != parallel3d.RECOMPUTE_PHASE
            )
    model = sum(own[id(block.kernels)] for block in blocks)
    peak = system.gpu.peak_flops_per_s(str(params["dtype"]), matrix=True)
    shares = _stage_shares(busy, lay.pp, step)
    return ParallelMetrics(
        step_s=step,
        tokens_per_s=int(params["batch"]) * int(params["seq"]) / step,
        tflops_per_gpu=run / step / 1e12,
        mfu=model / lay.pp / step / peak,
        **shares,
        bubble_ideal=(lay.pp - 1) / (lay.microbatches * lay.virtual_stages + lay.pp - 1),
        memory_per_gpu_B=workload.footprint_B,
        tp=float(lay.tp),
        pp=float(lay.pp),
        dp=float(lay.dp),
        micro_batch=float(lay.micro_batch),
    )


def _stage_busy(prediction: Prediction, stages: int) -> tuple[float, float, float]:
    """Seconds the stages' GPUs spend in kernels, tensor-parallel and data-parallel communication.

    On a GPU's ring port, a pass's own interval (its ``Block``) is its tensor-parallel all-reduces,
    and an all-reduce outside a pass is the gradients' (the pipeline's sends are ``send``s).
    """
    compute = tensor = data = 0.0
    for event in prediction.trace:
        if event.resource.device < 0 or event.resource.device >= stages:
            continue
        if event.resource.kind == "cores":
            compute += event.duration_s
        elif event.resource.kind == "ring" and isinstance(event.op, Block):
            tensor += event.duration_s
        elif event.resource.kind == "ring" and isinstance(event.op, AllReduce) and event.op.kind != "send":
            data += event.duration_s
    return compute, tensor, data


def _stage_shares(busy: tuple[float, float, float], stages: int, step: float) -> dict[str, float]:
    """Shares of the step, averaged over the stages' GPUs: compute, tensor-parallel and
    data-parallel communication, and idle (bubble and waits)."""
    compute, tensor, data = busy
    total = stages * step
    return {
        "compute_share": compute / total,
        "tp_comm_share": tensor / total,
        "dp_comm_share": data / total,
        "idle_share": max(0.0, 1.0 - (compute + tensor + data) / total),
    }


def check_parallel(workload: Workload, system: SystemSpec) -> None:
    """Refuse a 3D split whose fullest GPU does not fit, naming the smallest split that would."""
    if not workload.devices or system.device is None:
        return
    params: Params = dict(workload.params)
    if params.get("fp8") and "float8" not in dict(system.gpu.matrix_flops_per_s):
        raise ParsimError(
            "network: fp8=true needs FP8 tensor cores (H100, H200, B200, MI300X...); "
            f"{system.gpu.name} has none"
        )
    if params.get("fp8_recipe") == "mxfp8" and "float4" not in dict(system.gpu.matrix_flops_per_s):
        raise ParsimError(  # MX block scaling came with the tensor cores that also run FP4
            "network: fp8_recipe=mxfp8 needs Blackwell's block-scaled tensor cores (B200, GB200...); "
            f"{system.gpu.name} has none"
        )
    if params.get("fp8_recipe") == "blockwise" and not system.gpu.fp8_block_scaling:
        raise ParsimError(
            "network: fp8_recipe=blockwise needs FP8 products with 128-element block scales "
            f"(compute capability 9.0 and later: H100, H200, B200...); {system.gpu.name} runs none "
            "(hardware field fp8_block_scaling)"
        )
    memory = footprint.of_workload(workload, system)
    if memory.fits:
        return
    config = llm(str(params["model"]))
    numerics = numerics_of(params)
    fitting = [split for split in parallel3d.splits(config, params) if _fits(config, split, numerics, system)]
    need = memory.refusal(f"network: {config.name}", f"with tp={params['tp']} pp={params['pp']}")
    if not fitting:
        raise ParsimError(
            f"{need}; no split of these {params['gpus'] * params['nodes']} GPUs fits "
            "(try recompute=full, a smaller micro-batch or more nodes)"
        )
    best = min(fitting, key=lambda split: (split["tp"] * split["pp"], split["pp"]))
    raise ParsimError(
        f"{need}; the smallest split that fits: tp={best['tp']} pp={best['pp']} "
        f"microbatches={best['microbatches']}"
    )


def _fits(config: LlmConfig, params: Params, numerics: Numerics, system: SystemSpec) -> bool:
    needs = parallel3d.memory_needs(config, parallel3d.layout(config, params), params, numerics)
    return bool(footprint.breakdown(needs, system, True).fits)


def parallel_notes(workload: Workload, system: SystemSpec) -> tuple[str, ...]:
    """What the timeline's GPU rows of a 3D step are, and whether its stages hold equal layers."""
    if not workload.devices:
        return ()
    params: Params = dict(workload.params)
    uneven = uneven_stages(llm(str(params["model"])), int(params["pp"])) if "pp" in params else ""
    said = (uneven,) if uneven else ()
    others = system.total_gpus - workload.devices
    rows = "GPU s in the timeline is pipeline stage s"
    if others == 0:  # one GPU per stage: the timeline shows every GPU
        return (f"{rows}; every GPU of the step is drawn", *said)
    gpus = "GPU does" if others == 1 else "GPUs do"
    return (
        f"{rows}'s first GPU (tensor-parallel rank 0 of data-parallel replica 0); "
        f"the other {others:,} {gpus} the same work at the same time",
        *said,
    )


hooks.register(KIND, metrics=collective_metrics, notes=collective_notes)
hooks.register(NETWORK.kind, check=check_parallel, metrics=parallel_metrics, notes=parallel_notes)
