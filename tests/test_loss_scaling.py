"""Loss scaling (``workloads.loss_scaling``): a float16 eager training step ends with GradScaler's
unscale pass, the host's read-back of the overflow flag, then the optimizer's updates."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsim import stack
from parsim.methods.predict import predict
from parsim.workloads.base import Kernel, Transfer
from parsim.workloads.loss_scaling import OVERFLOW_FLAG_B, scaler_syncs
from parsim.workloads.models import MODELS
from parsim.workloads.registry import make_workload
from parsim.workloads.training import numerics_of

STEP = {"model": "resnet18", "batch": 64, "train": True, "dtype": "float16", "framework": "eager"}


def _ops(**changes):
    return make_workload("network", {**STEP, **changes}).ops


def test_float16_eager_step_ends_with_unscale_flag_and_updates_hand_computed():
    ops = _ops()
    names = [op.name for op in ops]
    at = names.index("d2h overflow flag")
    unscale, flag = ops[at - 1], ops[at]
    weights = sum(layer.params for layer in MODELS["resnet18"]())
    assert unscale.name == "unscale gradients and check them"
    assert unscale.work.bytes_read == unscale.work.bytes_written == weights * 4  # float32 gradients
    assert isinstance(flag, Transfer) and flag.waits and flag.nbytes == OVERFLOW_FLAG_B
    updates = [op for op in ops[at + 1 : -1] if isinstance(op, Kernel)]
    with_params = [layer for layer in MODELS["resnet18"]() if layer.params]
    assert [op.name for op in updates] == [f"{layer.name} update" for layer in with_params]
    assert not any(name.endswith(" update") for name in names[:at])  # none inside the backward pass
    assert names[-1] == "d2h loss"


@pytest.mark.parametrize(
    "changes",
    [{"dtype": "bfloat16"}, {"dtype": "float32"}, {"framework": "graph"}, {"train": False}],
)
def test_no_scaler_for_bfloat16_float32_graphs_or_inference(changes):
    assert not any(op.name == "d2h overflow flag" for op in _ops(**changes))


def test_scaler_syncs_only_float16_mixed_precision_of_a_syncing_framework():
    eager, graph = stack.framework("eager"), stack.framework("graph")
    assert scaler_syncs(numerics_of({**STEP, "math": "default", "layout": "default"}), eager)
    assert not scaler_syncs(numerics_of({**STEP, "math": "default", "layout": "default"}), graph)


def test_the_gpu_waits_while_the_host_issues_the_updates():
    """At a batch where the GPU sets the pace, the float16 step (scaler) outlasts the bfloat16 one (no
    scaler, the same tensor-core rate and bytes on an A100) by about the updates' host issue time."""
    step = {**STEP, "batch": 256, "layout": "nhwc"}
    float16 = predict("network", step, device="a100-80gb").latency_s
    bfloat16 = predict("network", {**step, "dtype": "bfloat16"}, device="a100-80gb").latency_s
    updates = sum(1 for layer in MODELS["resnet18"]() if layer.params)
    host = stack.framework("eager").op_host_s(2.6e9)  # the default host's clock
    assert float16 - bfloat16 == pytest.approx(updates * host, rel=0.35)


@settings(max_examples=10, deadline=None)
@given(batch=st.integers(1, 128), model=st.sampled_from(["resnet18", "resnet50", "vgg16"]))
def test_the_scaler_moves_every_update_to_the_end_and_keeps_them(batch, model):
    """Whatever the model and batch, the scaled step keeps one update per layer with weights, and its
    kernels are the unscaled step's kernels plus the one unscale pass."""
    scaled = [op.name for op in _ops(model=model, batch=batch) if isinstance(op, Kernel)]
    plain = [op.name for op in _ops(model=model, batch=batch, dtype="bfloat16") if isinstance(op, Kernel)]
    assert sorted(scaled) == sorted([*plain, "unscale gradients and check them"])
