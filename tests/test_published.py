"""The published-measurement set and ``parsim validate --published``: every row sourced and runnable,
each class within its target, bad files refused in one line."""

from __future__ import annotations

import json

import pytest

from parsim.studies import published
from parsim.studies.published import CLASSES, Compared, Row, compare, load_rows, summary

ROWS = load_rows()


@pytest.fixture(scope="module")
def compared() -> list[Compared]:
    return compare(ROWS)


def test_the_set_is_large_sourced_and_covers_every_class():
    assert len(ROWS) >= 80
    assert {row.klass for row in ROWS} == set(CLASSES)
    for row in ROWS:
        # a repository with a path (and commit) or a paper/page: never an unnamed estimate
        assert len(row.source) > 20 and ("/" in row.source or "http" in row.source), row.id
        assert row.detail, f"{row.id}: quote the published figure in 'detail'"


def test_the_set_spans_devices_batches_and_precisions():
    devices = {row.device for row in ROWS}
    assert {"v100-sxm2", "t4", "a100-80gb", "rtx-4090"} <= devices  # and a consumer card
    assert devices & {"h100-sxm", "h100-pcie"}
    inference = [row for row in ROWS if row.klass == "inference"]
    batches = {row.params.get("batch") for row in inference}
    assert 1 in batches and max(batches) >= 256
    dtypes = {row.params.get("dtype") for row in ROWS if row.klass == "training"}
    assert {"float32", "float16"} <= dtypes
    assert any(row.params.get("math") == "tf32" for row in ROWS)


@pytest.mark.slow  # predicts all 295 published runs (~50 s)
def test_no_published_run_is_refused(compared):
    refused = [(c.row.id, c.refused) for c in compared if c.refused]
    assert not refused


# Known gaps (issue 14), kept visible: each fails today and the xfail is strict, so meeting the
# target makes the test fail until the class leaves this list.
NOT_MET_YET: dict[str, str] = {
    # issue 24's published serving runs (SGLang 0.3/0.4, vLLM 0.6/0.8 on A100, H100, H200): 29 %
    # against 25 %. The time to first token is 15-40 ms short everywhere (the engine's per-request
    # work: HTTP, tokenising, scheduling, detokenising) and the per-token time 17-38 % short on
    # SGLang 0.3 and vLLM (their per-step host work, hidden by SGLang 0.4's overlap scheduler);
    # both are issue 26's engine mechanisms (items 3 and 5)
    "serving": "per-request and per-step serving-engine overhead not modelled (issue 26)",
    # issue 25's gpt-fast Mixtral 8x7B rows (batch 1 on 1-8 A100s): +3 to +131 %, 69 % on their own,
    # taking the class from 18.4 % to 32.7 %. parsim reads each touched expert once in one grouped
    # kernel; gpt-fast indexes each token's experts' weights (w1[expert_indices]) before its einsums
    # and its dense rows are already +23 % (bf16) and +58 % (int8): the MoE kernel's own traffic is
    # not modelled yet (issue 26's per-engine decode kernels)
    "llm-decode": "gpt-fast's MoE expert-gather kernels are not modelled (the dense rows: 18.4 %)",
}


@pytest.mark.slow  # predicts all published runs (~10 s)
@pytest.mark.parametrize(
    "klass",
    [
        pytest.param(k, marks=pytest.mark.xfail(strict=True, reason=NOT_MET_YET[k]))
        if k in NOT_MET_YET
        else k
        for k in CLASSES
    ],
)
def test_each_class_meets_its_target(compared, klass):
    result = summary(compared)[klass]
    assert result["mape"] <= result["target"], (klass, result["mape"], result["worst"])


NARROW = {"scaling", "cluster-scaling", "megatron"}
"""Classes whose published values sit close together (efficiencies of 0.7-1; 135-163 TFLOP/s per
GPU): their ranks are mostly measurement noise, so only their errors are checked (the TPU class's
MaxText runs, 7 to 225 samples/s on 8 to 256 chips, are ranked)."""
UNORDERED_YET: dict[str, str] = {
    # "collective" left this list with the GB200 and MI300X rows (Spearman 0.71 -> 0.95): the
    # classes' wider span orders well, though the A100 plateau near 170 GB/s from 64 to 256 MB
    # (NCCL's LL128 before Simple) is still predicted at the large-message rate (issue 26, item 1)
}


@pytest.mark.slow  # predicts every published run
@pytest.mark.parametrize(
    "klass",
    [
        pytest.param(k, marks=pytest.mark.xfail(strict=True, reason=UNORDERED_YET[k]))
        if k in UNORDERED_YET
        else k
        for k in CLASSES
        if k not in NARROW
    ],
)
def test_predictions_order_the_rows_like_the_measurements(compared, klass):
    result = summary(compared).get(klass)
    assert result is not None and result["spearman"] is not None, klass
    assert result["spearman"] > 0.8, klass


def test_summary_hand_computed():
    def row(identifier, klass, value):
        return Row(identifier, klass, "copy", {}, "t4", None, None, "bytes_per_s", value, "a/b", "")

    rows = [
        Compared(row("a", "copy", 10.0), 11.0),  # +10 %
        Compared(row("b", "copy", 10.0), 7.0),  # -30 %
        Compared(row("c", "copy", 10.0), None, "network needs 99 GiB"),
    ]
    result = summary(rows)["copy"]
    assert result["mape"] == pytest.approx(0.2)
    assert result["worst"] == {"id": "b", "error": pytest.approx(-0.3)}
    assert result["refused"] == [{"id": "c", "why": "network needs 99 GiB"}]
    assert not result["met"]  # a refusal fails the class whatever the MAPE


def test_each_metric_is_read_from_the_prediction():
    copy = next(row for row in ROWS if row.metric == "bytes_per_s")
    p = published.predict(copy.workload, copy.params, device=copy.device, host=copy.host, link=copy.link)
    assert published.predicted(copy) == pytest.approx(
        p.transfer_bytes / (p.latency_s - p.breakdown["overhead"])
    )
    kernel = next(row for row in ROWS if row.metric == "seconds")
    p = published.predict(kernel.workload, kernel.params, device=kernel.device)
    assert published.predicted(kernel) == pytest.approx(p.latency_s - p.breakdown["overhead"])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("id,class\n", "missing column"),
        (
            "id,class,workload,params,device,host,link,gpus,metric,value,source\n"
            "x,gpu,copy,n=1,t4,,,1,bytes_per_s,1e9,a/b\n",
            "line 2: 'class' must be one of training",
        ),
        (
            "id,class,workload,params,device,host,link,gpus,metric,value,source\n"
            "x,copy,copy,n=1,t4,,,1,bytes_per_s,-1,a/b\n",
            "line 2: 'value' must be > 0: -1.0",
        ),
        (
            "id,class,workload,params,device,host,link,gpus,metric,value,source\n"
            "x,copy,copy,n=1,t4,,,1,bytes_per_s,1e9,\n",
            "line 2: 'source' is empty",
        ),
        (
            "id,class,workload,params,device,host,link,gpus,metric,value,source\n"
            "x,copy,copy,n=1,t4,,,1,bytes_per_s,1e9,a/b\nx,copy,copy,n=1,t4,,,1,bytes_per_s,1e9,a/b\n",
            "line 3: duplicate id 'x'",
        ),
        (
            "id,class,workload,params,device,host,link,gpus,metric,value,source\n"
            "x,copy,copy,n,t4,,,1,bytes_per_s,1e9,a/b\n",
            "line 2: 'params': parameters are key=value",
        ),
    ],
)
def test_bad_files_are_refused_in_one_line(tmp_path, text, message):
    path = tmp_path / "rows.csv"
    path.write_text(text)
    with pytest.raises(published.ParsimError, match=message):
        load_rows(path)


@pytest.mark.slow  # predicts all 295 published runs (~50 s)
def test_cli_summary_and_json(cli, tmp_path):
    code, out, _ = cli("validate", "--published", "--summary")
    assert code == 0 and "single-GPU training throughput" in out and "MAPE" in out
    report = tmp_path / "published.json"
    code, out, _ = cli("validate", "--published", "--json", "--out", str(report))
    data = json.loads(out)
    assert code == 0 and data["schema"] == published.SCHEMA and len(data["rows"]) == len(ROWS)
    assert json.loads(report.read_text())["classes"].keys() == data["classes"].keys()


def test_cli_published_refuses_measuring_options(cli):
    code, _, err = cli("validate", "--published", "--device", "me.toml")
    assert code == 2 and "'--published'" in err
    code, _, err = cli("validate", "--summary")
    assert code == 2 and "'--summary' goes with --published" in err


@pytest.mark.slow
@pytest.mark.parametrize(
    ("patch", "value", "rows"),
    [
        ("framework_patch:eager", 133_000.0, "eager-batch-1"),
        ("tf32_patch", 0.34, "tf32-training"),
        ("onednn_patch", 1.0, "modern-cpu"),
        ("thnn_patch", 0.14, "torch7-cpu"),
        ("attention_patch", 0.22, "flash-training"),
    ],
)
def test_stack_presets_sit_at_their_fitted_optimum(patch, value, rows):
    # "fitted once": the preset is where the published rows it governs are best predicted; a model
    # change that moves the optimum fails here (re-run benchmarks/fit_stack.py and update the preset)
    from benchmarks import fit_stack

    governed = {
        "eager-batch-1": lambda r: (
            r.klass == "inference" and r.params.get("batch") == 1 and r.params.get("framework") == "eager"
        ),
        "tf32-training": lambda r: r.klass == "training" and r.params.get("math") == "tf32",
        "modern-cpu": lambda r: r.klass == "cpu" and r.device == "xeon-8480",
        "torch7-cpu": lambda r: r.klass == "cpu" and r.params.get("framework") == "torch7",
        "flash-training": lambda r: r in fit_stack.flash_training(ROWS),
    }[rows]
    chosen = [row for row in ROWS if governed(row)]
    name, _, argument = patch.partition(":")
    make = getattr(fit_stack, name)

    def score(v: float) -> float:
        return fit_stack.mape(chosen, make(argument, v) if argument else make(v))

    at = score(value)
    assert at <= score(value * 0.9) and at <= score(min(value * 1.1, 1.0 if value <= 1 else value * 1.1))
