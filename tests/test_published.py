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
    # issue 26 lowered every target to 10 %. Single-GPU training at 14.3 %: PyTorch AMP runs on
    # Ampere/Hopper predicted too fast (+15 to +50 %, Lambda's H100 ResNet-50 at batch 1280 worst)
    # and 2016 Torch7/cuDNN 5.1 runs on a GTX 1080 too slow (-26 to -43 %, forward passes as well)
    "training": "framework-level kernel efficiency of PyTorch AMP on Hopper; 2016 cuDNN 5.1 rates",
    # GEMM/conv at 12.4 %: DeepBench's 5x5 FP32 convolution on a V100 (-40 %: cuDNN's FFT
    # algorithm), the T4 FP32 skinny GEMM (-34 %), the H100 PCIe FP16 GEMM (-22 %: its 350 W cap)
    "kernel": "cuDNN's FFT convolutions and the H100 PCIe's power-capped clock not modelled",
    # nccl-tests at 10.9 %: MI300X at 1 MiB is +57 % (the measured curve implies ~70 us of fixed cost,
    # RCCL's own tuner table says 46 us), the A100 64-256 MB plateau (NCCL 2.18's LL128) is not
    # reproduced (Azure +25-28 %), GB200 forced-ring rows +10-24 % (~690 GB/s measured, nvlink5 750)
    "collective": "RCCL's measured fixed cost, NCCL 2.18's LL128 rate and NVLink 5's achieved rate",
    # serving at 14.1 % (P50 15.0 %, P99 9.1 %): SGLang on 4x H200 at 8 req/s (random lengths)
    # predicted far too fast (-68 % e2e P50) and vLLM 0.8.3's time to first token at 16 req/s short
    # (P50 -18 %, P99 -42 %: its single API-server process queueing under load, not modelled)
    "serving": "the API server's own queue under load and SGLang's behaviour near saturation on H200",
    # issue 26's FSDP rows (llm-foundry MPT, torchtitan, fms-fsdp; 8 to 128 A100/H100): ~16 %
    # against 10 %, every row optimistic (+2 to +35 %). The FSDP schedule is not the gap: the
    # published per-GPU throughput is flat from 8 to 128 GPUs (MPT-7B on A100 40GB: MFU 50.1-51.6 %)
    # and so is parsim's (prefetch 2 hides the gathers); the per-GPU step of eager/compiled PyTorch
    # models on H100 (MPT-7B: 46 % MFU measured, ~62 % predicted) and A100 runs below parsim's
    # kernel rates. Missing: the single-GPU efficiency of these frameworks. NCCL's SM share cannot
    # close it: parsim's gathers and reduce-scatters keep each GPU's NVLink busy 15 % (MPT-7B, DGX
    # H100) and 9 % (DGX A100) of the step, so even 32 channels of 132 SMs slow compute <= 4 %. A
    # sustained H100 SXM clock below boost would also move the NeMo DGX-H100 megatron rows (-9 to
    # +12 % today) and the H100 serving rows (already slow): not a per-device fix either
    "fsdp": "single-GPU kernel efficiency of PyTorch FSDP frameworks not modelled (NCCL SM share <= 4 %)",
    # issue 26 item 8: 10.4 % against 10 % (19.9 % before: eager convolutions' oneDNN reorders as
    # passes of their own, oneDNN's batch-1 pixel share, the 8480+ at its 3.0 GHz all-core turbo;
    # the 20 Xeon 8480+ rows at 9.7 %). Left: IPEX runs ResNet-18/50 ~25 % faster than TensorFlow
    # (-22 %; both framework=graph: IPEX's prepacked blocked weights and fused post-ops against
    # TF's NHWC oneDNN path are not told apart), eager PyTorch ResNet-50 -10 to -17 %, and the
    # 2016 Torch7 ResNet-50 rows on two Haswell sockets (-21/-28 %)
    "cpu": "IPEX vs TensorFlow on oneDNN (prepacked blocked weights, fused post-ops); Torch7's ResNet-50",
    # issue 26 item 9: 19.0 % -> 17.7 % against 10 % (framework=mxnet took MXNet 20.12's V100 batch-1
    # row from -37 % to -2 %). Left: MXNet 22.10's 0.7 ms at batch 1 on an A100 (-79 %; the same
    # README's TF32 column gives 1.33 ms, so the step is GPU-bound there, and parsim's batch-1 GPU
    # time is 0.34 / 0.45 ms: too few CTAs per kernel to fill 108 SMs is not priced), TF1 AMP at
    # batch 16-256 on a V100 (+23 to +44 %: the real-TFRecords input pipeline), Torch7/cuDNN 5.1 on
    # a GTX 1080 (-25 to -43 %), timm on an RTX 4090 (-10 to +46 %). TF1 at batch 1 looks like host
    # time plus GPU time (A100: 5.23 ms TF32, 4.48 ms AMP, 0.75 ms apart as MXNet's GPU-bound
    # 1.33 / 0.7 ms are), not their overlap; a per-step serial host cost (step_cycles) did not help
    "inference": "input pipelines, batch-1 GPU kernel efficiency (grid fill) and 2016 cuDNN's rates",
    # issue 26 took "serving" (28.8 % -> 19.3 %: the engines' per-request and per-step host work,
    # stack.engines) and "llm-decode" (32.7 % -> 11.4 %: decode kernels per engine) off this list
    # issue 26 item 1: 13 % against 10 %. NVLS' start-up is ~30 us in Azure's forced-NVLS H200 rows
    # where NCCL's constant says 25 us (+20 % on three rows), and SuperBench's A100 1 MiB run (older
    # NCCL) is 38 % slower than LL's 87.7 GB/s cap allows, where Azure's NCCL 2.18 run agrees.
    # Checked and rejected (round 3): NCCL's tuning.cc up to v2.20.5 models Ring/LL all-reduce at
    # 1/4 of the bus bandwidth (1/2 from v2.21.5) and NVLS at 23 us (v2.20.5; 25 today), but used as
    # the realized rate 1/4 moves SuperBench's 1 MiB to +17 % and Azure's 2.18.5 1 MiB to -22 %, and
    # 23 us makes the 2.20.5 NVLS rows worse: both are the tuner's beliefs, not the run's cost
    "collective-small": "NVLS' fixed cost (~30 us measured, NCCL's 25 us) and NCCL-version LL rates",
    # issue 26 item 2: 10.4 % against 10 %. Four RTX 4090 without peer access, two behind each PCIe
    # switch, reach 2.6 GB/s where sharing the switch's upstream port prices 2.0 (-22 %): how NCCL's
    # SHM reads of host memory share a switch is not modelled beyond an even split
    "tp-pcie": "how host-staged (SHM) traffic of GPUs behind one PCIe switch shares its upstream port",
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
    code, _, err = cli("validate", "--class", "copy")
    assert code == 2 and "'--class' goes with --published" in err
    code, _, err = cli("validate", "--published", "--class", "copies")
    assert code == 2 and "'copies' is not a published class" in err and "copy" in err


def test_cli_published_one_class(cli):
    code, out, _ = cli("validate", "--published", "--json", "--class", "copy", "--class", "tp-pcie")
    data = json.loads(out)
    expected = [row.id for row in ROWS if row.klass in ("copy", "tp-pcie")]
    assert code == 0 and [row["id"] for row in data["rows"]] == expected
    assert set(data["classes"]) == {"copy", "tp-pcie"}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("patch", "value", "rows"),
    [
        ("framework_patch:eager", 133_000.0, "eager-batch-1"),
        ("framework_patch:graph", 62_000.0, "graph-batch-1"),
        ("tf32_patch", 0.34, "tf32-training"),
        ("onednn_patch", 1.0, "modern-cpu"),
        ("onednn_pixels_patch", 80.0, "modern-cpu"),
        ("thnn_patch", 0.2, "torch7-cpu"),
        ("thnn_pixels_patch", 320.0, "torch7-cpu"),
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
        "graph-batch-1": lambda r: (
            r.klass == "inference" and r.params.get("batch") == 1 and r.params.get("framework") == "graph"
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
