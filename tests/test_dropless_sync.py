"""The host's wait for the dropless token dispatcher's split sizes (``moe_layer_ops.dropless_syncs``,
``Issue.host_waits``) as ``model.blocks`` prices it, by hand, on a block and on a whole step (the
recurrence and the engine's events alike)."""

from __future__ import annotations

import pytest

from parsim.hardware import registry
from parsim.methods.engine.machine import shape
from parsim.methods.engine.processor import kernel_s
from parsim.methods.predict import predict
from parsim.model.blocks import block_parts
from parsim.model.issue import issue_s
from parsim.stack import framework
from parsim.studies import pipeline_figures
from parsim.workloads.base import Kernel
from parsim.workloads.llms import llm
from parsim.workloads.moe_layer_ops import (
    MCORE_MOE_FORWARD_OPS,
    SPLIT_SIZES_READ_BACK,
    dropless_syncs,
    layer_ops,
)

PCIE_D2H_LATENCY_S = 2.5e-6  # the DGX H100's PCIe 5.0 x16 link preset


def _op(name: str, waits: bool = False) -> Kernel:
    return Kernel.of(name, 1.0, 4.0, 4.0, 1, dtype="bfloat16", host_waits=waits)


def test_a_waiting_kernel_adds_its_issue_run_and_read_back_in_series():
    system = registry.system("h100-sxm", "xeon-8480", None, 8, None)
    eager = framework("eager")
    host = issue_s(system, eager, False, _op("a"))  # 133k cycles at 2.0 GHz + a 5 us launch
    assert host == pytest.approx(133_000 / 2.0e9 + 5e-6)
    runs = {"a": 100e-6, "copy": 4e-6, "b": 10e-6}  # a long kernel, the copy, a short kernel
    kernels = (_op("a"), _op("copy", waits=True), _op("b"))
    compute, communication = block_parts(system, eager, kernels, (), lambda k: runs[k.name])
    # a: its 100 us run outlasts its 71.5 us issue; the copy: 71.5 + 4 + 2.5 us in series; b: issue
    assert compute == pytest.approx(100e-6 + (host + 4e-6 + PCIE_D2H_LATENCY_S) + host)
    assert communication == 0.0
    plain = block_parts(system, eager, (_op("a"), _op("copy"), _op("b")), (), lambda k: runs[k.name])[0]
    assert compute - plain == pytest.approx(4e-6 + PCIE_D2H_LATENCY_S)  # the copy's run, no longer hidden


def test_dropless_routing_waits_once_per_layer_forward_and_never_in_the_backward():
    qwen = llm("qwen3-30b-a3b")
    ops = layer_ops(qwen, 4096, "layer 0", "bfloat16", 0, local=16, syncs=True)
    waiting = [i for i, k in enumerate(ops) if k.issue.host_waits]
    assert waiting == [SPLIT_SIZES_READ_BACK] and SPLIT_SIZES_READ_BACK < MCORE_MOE_FORWARD_OPS
    assert not any(k.issue.host_waits for k in layer_ops(qwen, 4096, "layer 0", "bfloat16", 0, local=16))
    assert dropless_syncs({}) and dropless_syncs({"capacity_factor": 0.0})
    assert not dropless_syncs({"capacity_factor": 1.0})  # dropped and padded to capacity: sizes known


def test_a_dropless_step_pays_each_layers_wait_in_the_recurrence_and_the_engine():
    # Qwen3-30B-A3B on one DGX H100, ep=8, 2 micro-batches of 256 tokens: 48 MoE layers each
    # forward; the capacity-factor step runs the same kernels (imbalance 1 = capacity 1) without
    # the wait. Each wait adds its copy's run (the eager floor: a few bytes) and the link's latency.
    base = {"model": "qwen3-30b-a3b", "train": True, "dtype": "bfloat16", "optimizer": "adam", "seq": 256}
    base |= {"gpus": 8, "nodes": 1, "ep": 8, "microbatches": 2, "batch": 16, "distributed_optimizer": True}
    steps = []
    for capacity in (0.0, 1.0):
        params = {**base, "capacity_factor": capacity}
        fast = pipeline_figures.step_figures(params, "dgx-h100")["step_s"]
        events = predict("network", {**params, "pipeline_events": True}, cluster="dgx-h100", budget=None)
        assert fast == pytest.approx(events.latency_s, rel=1e-9)
        steps.append(fast)
    qwen = llm("qwen3-30b-a3b")
    copy = layer_ops(qwen, 256, "layer 0", "bfloat16", 0, local=16, syncs=True)[SPLIT_SIZES_READ_BACK]
    system = registry.cluster_system(registry.cluster("dgx-h100"), 1)
    eager = framework("eager")
    run = eager.floor(kernel_s(system.gpu, "roofline", "none", shape(copy)))
    assert run == pytest.approx(eager.kernel_floor_s)
    wait = min(run, issue_s(system, eager, False, copy)) + PCIE_D2H_LATENCY_S
    assert steps[0] - steps[1] == pytest.approx(2 * 48 * wait, rel=1e-6)
