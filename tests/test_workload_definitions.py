"""Workloads own their checks, metrics and figures: registered once, found without their names.

- The faces (``methods/predict.py``, ``cli/``, ``studies/sweeps/``, ``app/``) hold no registered
  workload name as a string: what is particular to a workload comes from its definition.
- No result is read back out of a label: renaming every op leaves every figure as it was, and the
  modules that compute results call no string method on a label, a name or a layer.
- The registry finds definitions, the results layer finds hooks, and both refuse a duplicate.
"""

from __future__ import annotations

import ast
import typing
from pathlib import Path

import attrs
import pytest

import parsim
from parsim.base.errors import ParsimError
from parsim.methods.predict import predict
from parsim.results import catalog, hooks
from parsim.results.prediction import Prediction
from parsim.stack import library_for
from parsim.stack.presets import ONEDNN, THNN
from parsim.workloads import collective, load, ops, serving, standard
from parsim.workloads.base import Block, Kernel, Transfer, Workload
from parsim.workloads.collective import ALL_REDUCE, CollectiveMetrics
from parsim.workloads.definition import WorkloadDef
from parsim.workloads.llms import LLMS
from parsim.workloads.models import MODELS
from parsim.workloads.parallel3d import ParallelMetrics
from parsim.workloads.records import Record, Scaling, Throughput
from parsim.workloads.registry import WORKLOADS, cluster_names, make_workload
from parsim.workloads.serving import ServingMetrics

PACKAGE = Path(parsim.__file__).parent
FACES = [
    PACKAGE / "methods" / "predict.py",
    *sorted((PACKAGE / "cli").rglob("*.py")),
    *sorted((PACKAGE / "studies" / "sweeps").rglob("*.py")),
    *sorted((PACKAGE / "app").rglob("*.py")),
]
ALLOWED_NAMES: dict[str, set[str]] = {}
"""File -> workload names it may hold: none. (The app's first workload is the registry's first, its
starting sizes a definition's ``example``; the cluster defaults are ``WorkloadDef.cluster``.)"""


def _strings(path: Path) -> list[tuple[int, str]]:
    """Every string constant of a module (f-strings' literal parts included), with its line."""
    tree = ast.parse(path.read_text())
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


def test_the_faces_name_no_workload():
    found = [
        f"{path.relative_to(PACKAGE)}:{line}: {value!r}"
        for path in FACES
        for line, value in _strings(path)
        if value in WORKLOADS and value not in ALLOWED_NAMES.get(path.name, set())
    ]
    assert found == []


def test_the_name_test_would_catch_a_name(tmp_path):
    sample = tmp_path / "page.py"
    sample.write_text(
        'predict_on("allreduce", params)\nx = f"{n} on llm_serve"\nif name == "network": pass\n'
    )
    assert {value for _, value in _strings(sample)} & set(WORKLOADS) == {"allreduce", "network"}


# --- no result read from a label ------------------------------------------------------------------

STRING_METHODS = {
    "startswith",
    "endswith",
    "split",
    "rsplit",
    "partition",
    "rpartition",
    "removeprefix",
    "removesuffix",
    "find",
    "index",
}
LABELS = {"label", "name", "layer"}
RESULT_MODULES = [
    *sorted((PACKAGE / "results").glob("*.py")),
    *sorted((PACKAGE / "methods").rglob("*.py")),
    *sorted((PACKAGE / "workloads").glob("*.py")),
]
ALLOWED_PARSES = {"methods/engine/processor.py": 1}
"""Module -> parses it may keep. The engine's notes name an offload's chunks (``relu[0]``, ``relu[1]``)
once, by the name before the bracket: words for people, no figure depends on it."""


def _label_parses(path: Path) -> list[str]:
    """Calls of a string method on ``x.label``, ``x.name`` or ``x.layer``, and ``... in x.label``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in STRING_METHODS
            and isinstance(node.func.value, ast.Attribute)
            and node.func.value.attr in LABELS
        ):
            found.append(f"{node.lineno}: .{node.func.value.attr}.{node.func.attr}(...)")
        if isinstance(node, ast.Compare) and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops):
            for right in node.comparators:
                if (
                    isinstance(right, ast.Attribute)
                    and right.attr in LABELS
                    and isinstance(node.left, ast.Constant)
                ):
                    found.append(f"{node.lineno}: {node.left.value!r} in .{right.attr}")
    return found


def test_no_module_that_computes_results_reads_a_label():
    found = {str(path.relative_to(PACKAGE)): _label_parses(path) for path in RESULT_MODULES}
    extra = {
        module: parses for module, parses in found.items() if len(parses) > ALLOWED_PARSES.get(module, 0)
    }
    assert extra == {}


def test_the_label_test_would_catch_a_parse(tmp_path):
    sample = tmp_path / "figures.py"
    sample.write_text(
        "a = event.label.startswith('sample')\nb = k.name.endswith(' tp')\nc = ' cast' in k.name\n"
        "d = layer.split('.')\ne = k.layer.split('.')[1]\n"
    )
    assert len(_label_parses(sample)) == 4  # ``layer.split`` on a plain variable is not an op's field


def _renamed(op: object, index: int) -> object:
    """The op under a meaningless name (and its block's kernels too): only fields remain."""
    if isinstance(op, Block):
        kernels = tuple(attrs.evolve(k, name=f"k{index}.{j}") for j, k in enumerate(op.kernels))
        collectives = tuple(attrs.evolve(c, name=f"c{index}.{j}") for j, c in enumerate(op.collectives))
        return attrs.evolve(op, name=f"op{index}", kernels=kernels, collectives=collectives)
    return attrs.evolve(op, name=f"op{index}")


def _anonymous(workload: Workload) -> Workload:
    return attrs.evolve(workload, ops=tuple(_renamed(op, i) for i, op in enumerate(workload.ops)))


def test_serving_figures_survive_renaming_every_op():
    workload = make_workload(
        "llm_serve", {"model": "gpt2", "prompt": 128, "output": 32, "batch": 4, "gpus": 2}
    )
    named = predict(workload, device="a100-80gb", link="nvlink3")
    renamed = predict(_anonymous(workload), device="a100-80gb", link="nvlink3")
    first, second = named.record(ServingMetrics), renamed.record(ServingMetrics)
    assert first == second
    # time to first token: the prefill's tokens reach the host with its last copy back
    copy_back = next(op for op in workload.ops if isinstance(op, Transfer) and op.phase == "prefill")
    assert first.time_to_first_token_s == max(e.end_s for e in named.trace if e.op is copy_back)


def test_a_3d_steps_figures_survive_renaming_every_op():
    given = {"model": "gpt3-1.3b", "batch": 32, "seq": 512, "tp": 2, "pp": 2, "microbatches": 4}
    given |= {"gpus": 8, "nodes": 2, "recompute": "selective", "attention": "unfused"}
    workload = make_workload("network", given)
    named = predict(workload, cluster="dgx-a100")
    renamed = predict(_anonymous(workload), cluster="dgx-a100")
    assert named.record(ParallelMetrics) == renamed.record(ParallelMetrics)
    assert named.record(ParallelMetrics).tp_comm_share > 0 and named.record(ParallelMetrics).dp_comm_share > 0


def test_the_trace_keeps_the_op_but_json_does_not():
    prediction = predict("vector_add", {"n": 1e6}, device="t4")
    assert any(isinstance(e.op, Kernel) for e in prediction.trace)
    assert all("op" not in e.to_dict() for e in prediction.trace)


# --- typed records --------------------------------------------------------------------------------


def test_a_records_fields_are_its_metrics_and_its_labels_its_texts():
    record = Scaling(speedup=3.5, efficiency=0.875, serial_fraction=1 / 21, single_gpu_latency_s=0.1)
    assert record.as_dict() == {
        "speedup": 3.5,
        "efficiency": 0.875,
        "serial_fraction": 1 / 21,
        "single_gpu_latency_s": 0.1,
    }
    assert record.texts() == [
        ("speed-up", "3.50x vs 1 GPU"),
        ("efficiency", "88%"),
        ("serial part", "4.8% (Amdahl, implied)"),
    ]


def test_predictions_carry_typed_records_and_flatten_them():
    step = predict(
        "data_parallel", {"model": "resnet50", "batch": 256, "gpus": 4, "sync": "ring"}, device="v100-sxm2"
    )
    assert [type(r) for r in step.records] == [Throughput, Scaling]
    assert step.metrics["speedup"] == step.record(Scaling).speedup
    assert step.to_dict()["metrics"]["samples_per_s"] == step.record(Throughput).samples_per_s
    with pytest.raises(KeyError, match="ServingMetrics"):
        step.record(ServingMetrics)
    ring = predict(ALL_REDUCE.name, {"bytes": 1e9}, cluster="dgx-a100")
    record = ring.record(CollectiveMetrics)
    # 8 GPUs: busbw = algbw x 2(n-1)/n = algbw x 1.75
    assert record.bus_bandwidth_Bps == pytest.approx(record.algorithm_bandwidth_Bps * 1.75)


def test_every_record_a_definition_declares_is_what_its_hooks_return():
    for definition in {d.kind: d for d in WORKLOADS.values()}.values():
        found = catalog.hooks_for(definition)
        if definition.record is not None:
            assert issubclass(definition.record, Record)
            # a load is simulated request by request: the simulation itself fills its record
            assert found.metrics is not None or definition.requests is not None, definition.name
    assert typing.get_type_hints(serving.ServingMetrics)["max_batch"] is int


# --- registration -----------------------------------------------------------------------------------


def test_every_definition_is_registered_once_by_discovery():
    declared = [d for module in (standard, collective, load, serving) for d in module.DEFINITIONS]
    assert [WORKLOADS[d.name] for d in declared] == declared
    assert len(WORKLOADS) == len(declared)  # nothing registered by hand besides


def test_hooks_are_registered_for_kinds_of_definitions_only_and_once():
    catalog.figure_modules()
    assert set(hooks.kinds()) <= {d.kind for d in WORKLOADS.values()}
    assert {"cluster_figures", "serving_figures"} <= set(catalog.figure_modules())
    with pytest.raises(ValueError, match="registered twice"):
        hooks.register(serving.LLM_SERVE.kind, metrics=lambda w, s, p: None)


def test_a_workload_built_by_hand_gets_no_hooks():
    assert catalog.hooks_for(None) == hooks.NONE


def test_lists_of_choices_are_derived_from_the_definitions():
    model = standard.NetworkParams.model_fields["model"].annotation
    choices, text = typing.get_args(model)  # the names, or a language model's config.json path
    assert typing.get_args(choices) == (*MODELS, *LLMS) and text is str
    op = standard.OffloadParams.model_fields["op"].annotation
    assert typing.get_args(op) == tuple(ops.ELEMENTWISE)


def test_a_definition_says_where_it_runs_on_a_cluster():
    assert cluster_names() == [
        "network",
        "data_parallel",
        "allreduce",
        "reduce_scatter",
        "allgather",
        "alltoall",
    ]
    assert standard.DATA_PARALLEL.on_cluster({"model": "resnet50"}, 4, 8) == {
        "model": "resnet50",
        "nodes": 4,
        "gpus": 8,
        "sync": "ring",
    }
    assert ALL_REDUCE.on_cluster({"bytes": 1e6, "nodes": 2}, 4, 8) == {"bytes": 1e6, "nodes": 2}
    with pytest.raises(ValueError):
        WORKLOADS["matmul"].on_cluster({}, 1, 8)
    with pytest.raises(ParsimError, match="--cluster applies to network, data_parallel, allreduce"):
        predict("vector_add", {"n": 1e6}, cluster="dgx-a100")


def test_kind_defaults_to_the_name_and_collectives_share_one():
    assert WORKLOADS["matmul"].kind == "matmul"
    assert {d.kind for d in collective.DEFINITIONS} == {collective.KIND}
    assert isinstance(ALL_REDUCE, WorkloadDef) and collective.KINDS[ALL_REDUCE.name] == "all_reduce"


# --- the CPU kernel library -------------------------------------------------------------------------


def test_an_unknown_cpu_library_is_refused_not_taken_for_onednn():
    assert library_for("cpu") is ONEDNN
    assert library_for("cpu", "thnn") is THNN
    with pytest.raises(ParsimError, match=r"^'cpu_library' must be one of onednn, thnn: 'mkl'$"):
        library_for("cpu", "mkl")


# --- no import circle among the workloads and the results ---------------------------------------------


@pytest.mark.parametrize("package", ["workloads", "results"])
def test_no_import_circle_inside(package):
    from tests.test_architecture import _imports, _resolve

    inside = f"parsim.{package}"
    graph: dict[str, set[str]] = {}
    for module, target, _, _ in _imports():
        resolved = _resolve(target)
        if (
            module.startswith(inside + ".")
            and resolved
            and resolved.startswith(inside + ".")
            and resolved != module
        ):
            graph.setdefault(module, set()).add(resolved)
    state: dict[str, str] = {}

    def visit(module: str, path: list[str]) -> None:
        state[module] = "open"
        for nxt in sorted(graph.get(module, ())):
            assert state.get(nxt) != "open", "import circle: " + " -> ".join([*path[path.index(nxt) :], nxt])
            if nxt not in state:
                visit(nxt, [*path, nxt])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])


def test_prediction_needs_no_metrics_argument():
    assert "metrics" not in {f.name for f in attrs.fields(Prediction) if f.init}
