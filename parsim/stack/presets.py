"""Framework and kernel-library presets, each number with its source or the rows it is fitted to.

Sources, abbreviated in the comments:

- [LG16] A. Lavin, S. Gray, "Fast Algorithms for Convolutional Neural Networks", CVPR 2016, section 4:
  Winograd F(2x2, 3x3) computes a 2x2 output tile of a 3x3 filter with 16 multiplies instead of 36.
- [CUDNN] NVIDIA cuDNN API reference, ``cudnnConvolutionFwdAlgo_t``: IMPLICIT_GEMM,
  IMPLICIT_PRECOMP_GEMM, GEMM, FFT, FFT_TILING, WINOGRAD, WINOGRAD_NONFUSED; ``cudnnFindConvolution*``
  times each and returns the fastest.
- [DBENCH] baidu-research/DeepBench@da81ba7820739e2e506dc27f382d15be5479f98f results/train/
  DeepBench_NV_V100.xlsx and DeepBench_NV_T4.xlsx (CUDA 10.1, cuDNN 7.6.2), sheets "Results FP32" and
  "Results - FP16 ip, Mixed math", section Convolution: per shape "Forward (msec)", "wrt Inputs
  (msec)" and "wrt Parameters (msec)", cuDNN's fastest algorithm for each pass.
- [CUTLASS] NVIDIA CUTLASS, media/docs/efficient_gemm.md and the profiler's default kernels:
  threadblock tiles from 256x128 down to 64x64 (and 32x32 for small problems), with split-K.
- [ONEDNN] oneDNN developer guide, "Memory Format Propagation" (convolutions choose blocked formats
  such as nChw16c / OIhw16i16o; tensors in the plain layout are reordered before the primitive) and
  "Primitive Attributes: Post-ops" (eltwise/sum fused into the convolution); TensorFlow's grappler
  remapper folds batch norm and fuses ReLU into _FusedConv2D on CPUs.
- [JCJ] jcjohnson/cnn-benchmarks README and issue #20: Torch7 CPU timings on 2x Xeon E5-2630 v3 with
  the plain `nn` backend and a vanilla Torch install.
- [THRESH] fmassa/nn@03e4ff9c1302f66d7127af056cb129db3f411951 lib/THNN/generic/Threshold.c (Torch7 nn's
  THNN of 2016: ``TH_TENSOR_APPLY`` loops with a branch per element, no OpenMP) and
  ColfaxResearch/nn@a73aa0a0a172dc89a6150aea0d1bf96c44ceb2dd, the same file with ``#pragma omp parallel
  for`` added for Intel's optimised Torch.
- [AGNER] A. Fog, "The microarchitecture of Intel, AMD and VIA CPUs", Haswell: "The branch
  misprediction penalty is 15-20 clock cycles".
- [PT131958] pytorch/pytorch issue #131958, a ``DNNL_VERBOSE`` log of stock PyTorch 2.4 CPU inference at
  batch 1: each NCHW convolution runs as oneDNN ``reorder`` primitives of the source and the weights,
  the ``convolution`` primitive, and a ``reorder`` of the destination back, each timed on its own.
- [THNN] torch/nn@d2233768b0ce4a7e690c41b071dd4e2379b82a84 lib/THNN/generic/SpatialConvolutionMM.c:
  ``updateOutput`` and ``updateGradInput`` run ``#pragma omp parallel for`` over the batch's frames,
  each an ``unfolded_copy`` (im2col) and one ``THTensor_(addmm)`` of the weights by that frame's
  unfolded input; ``accGradParameters`` loops over the frames serially, one ``addmm`` each.
- [PTDISC] dev-discuss.pytorch.org "Overhead in nn.Module causing massive slowdowns compared to raw
  CuBLAS or Torchscript": 158-218 Python opcodes per ``nn.Linear`` call; TorchScript 74 % faster on
  the same 64-layer model. The cost per operator is therefore thousands of interpreter steps, plus
  the dispatcher (~3 us per operator in PyTorch's own operator micro-benchmarks).
- [HF] huggingface/transformers, src/transformers/models/llama/modeling_llama.py (LlamaRMSNorm:
  ``hidden_states.to(torch.float32)``, ``pow(2).mean(-1)``, ``rsqrt``, ``.to(input_dtype)``, ``weight *``;
  ``apply_rotary_pos_emb`` with ``rotate_half``; separate ``q_proj``/``k_proj``/``v_proj``) and
  cache_utils.py (``DynamicCache.update``: ``torch.cat([self.keys, key_states], dim=-2)``).
- [ADAMW] pytorch/pytorch torch/optim/adamw.py and adam.py ``_multi_tensor_adam``: with the default
  ``foreach`` on CUDA, one step is ``_foreach_mul_`` (weight decay), ``_foreach_lerp_`` (m),
  ``_foreach_mul_`` and ``_foreach_addcmul_`` (v), ``_foreach_sqrt``, ``_foreach_div_``, ``_foreach_add_``
  (the denominator) and ``_foreach_addcdiv_`` (the weights): 12 arrays read and 8 written per weight;
  ``fused=True`` is opt-in.
- [SCALER] pytorch/pytorch torch/amp/grad_scaler.py (torch/cuda/amp/grad_scaler.py before 2.3):
  ``unscale_`` runs ``torch._amp_foreach_non_finite_check_and_unscale_`` over every gradient (one
  multi-tensor pass, reading and writing each), and ``_maybe_opt_step`` calls ``optimizer.step`` only
  ``if not sum(v.item() for v in optimizer_state["found_inf_per_device"].values())``: a device-to-host
  read that waits for the backward pass (the float16 recipe; bfloat16 needs no scaler).
- [XLAJIT] JAX docs, "Just-in-time compilation" and "Asynchronous dispatch": a jitted function is
  traced and compiled once; each later call dispatches the compiled executable, no Python per op.
- [XLAFUSE] OpenXLA docs, "XLA architecture" / operation fusion: element-wise operations are fused
  into their producers and consumers (including a dot's output), so intermediates are never
  written to memory.
- [VIDUR] microsoft/vidur@7d47513363ec447a741ac5e47241580b47724fbf
  data/profiling/compute/{a100,h100}/meta-llama/Llama-2-{7b,70b}-hf/mlp.csv: cuBLAS times of the
  LLaMA-2 projections for 1 to 4096 tokens. At 128 tokens (A100) they take 1.70-1.76x the max of
  compute at peak and weight streaming, 0.94-0.98x their sum; sqrt(compute^2 + memory^2) with
  the devices' efficiencies follows every size from 16 to 4096 tokens within ~10 %.
- [DBENCH] baidu-research/DeepBench@da81ba7820739e2e506dc27f382d15be5479f98f results/train/
  DeepBench_NV_V100.xlsx and DeepBench_NV_T4.xlsx, sheet 'Results FP32', 'Convolution' (cuDNN 7.6.2,
  the forward algorithm cuDNN chose named per row).
- [MIOPEN] ROCm/MIOpen documentation, "Convolution algorithms" (miopenConvFwdAlgorithm_t: GEMM, Direct,
  FFT, Winograd, ImplicitGEMM; ``miopenFindConvolutionForwardAlgorithm`` times them, as cudnnFind does).
- [TENSILE] ROCm/Tensile (hipBLASLt's and rocBLAS's GEMM generator): kernels named by their macro tile
  ``MT<rows>x<cols>x<depth>`` on the matrix cores (MFMA instructions), 256x256 the largest.
- [DLEMX] NVIDIA/DeepLearningExamples@729963dd47e7c8bd462ad10bfac7a7b0b604e6dd
  MxNet/Classification/RN50v1.5/README.md, "Inference performance: NVIDIA DGX-1 (1x V100 16GB)"
  (mxnet-20.12-py3, benchmark.py --mode val, float16): batch 1/2/4/8 average latency 3.48/3.84/
  4.39/4.87 ms.
- [DLETF] NVIDIA/DeepLearningExamples@729963dd47e7c8bd462ad10bfac7a7b0b604e6dd
  TensorFlow/Classification/ConvNets/resnet50v1.5/README.md, "Inference performance" tables
  (20.06-tf1-py3, XLA off): batch-1 average latency 5.26/4.51 ms (A100 TF32/AMP), 5.79/4.25 ms
  (V100 FP32/AMP), 7.34/4.77 ms (T4 FP32/AMP).
- [DLEMX22] NVIDIA/DeepLearningExamples@1bd98ac3723aaf483098c265095cd7e8c350879c ("[RN50/MXNet] Release
  22.10"): MxNet/Classification/RN50v1.5/runner adds ``os.environ['MXNET_ENABLE_CUDA_GRAPHS'] = "1"`` and
  ``MXNET_ASYNC_GPU_ENGINE`` = "1"; README.md's A100 80GB tables are re-measured in mxnet-22.10-py3
  (batch 1 float16: 0.70 ms, against 2.15 ms in the 20.12 table of commit 134510b4) while the V100
  and T4 tables keep the 20.12 container.
- [TFSESS] TensorFlow 1.x API docs, ``tf.compat.v1.Session.run``: "runs one step of TensorFlow
  computation ... The value returned by run() has the same shape as the fetches argument, where the
  leaves are replaced by the corresponding values returned by TensorFlow" (numpy arrays: the call
  returns after the fetched tensors are on the host); ``tf.estimator.Estimator.predict`` runs one
  ``MonitoredSession.run`` with its hooks per batch.
- [AZ-MI300X] samuel-bohman/AI-benchmarking-guide@3de0c294fd1059a91a2c158712c4a078619d73e8
  Azure_Results/ND_MI300X_v5_results.md (a fork of Azure/AI-benchmarking-guide): 8x MI300X, ROCm 6.2,
  RCCL 2.22.3: hipBLASLt FP8 GEMM, BabelStream, FlashAttention-2, TransferBench and rccl-tests tables.
"""

from __future__ import annotations

import attrs

from parsim.base.errors import ParsimError
from parsim.hardware.specs import ProcessorSpec
from parsim.stack.engines import engines
from parsim.stack.specs import FrameworkSpec, LibrarySpec

EAGER_KERNEL_FLOOR_S = 2.8e-6
"""The shortest time a small kernel holds the GPU, launch to drain (``FrameworkSpec.kernel_floor_s``):
fitted once on an H100 (issue #30, measured 2026-11-25; see ``EAGER``)."""
CUDA_GRAPH_LAUNCH_SHARE = 0.2
"""The share of a separate kernel launch a replayed CUDA graph node pays (estimate: the driver
replays the nodes back to back; a fifth of a launch each)."""

EAGER = FrameworkSpec(
    id="eager",
    name="eager framework (PyTorch: Python, dispatcher, autograd, caching allocator per operator)",
    # fitted once (benchmarks/fit_stack.py) against the published batch-1 inference rows run in
    # eager PyTorch (DeepLearningExamples ResNet-50, V100 and T4, FP32 and AMP: 78-98 img/s, flat up
    # to batch 4): 133k cycles = 51 us per operator on the default 2.6 GHz host, [PTDISC]'s order
    op_cycles=133_000.0,
    launch_share=1.0,  # every kernel is launched on its own
    autocast=True,  # torch.autocast: a cast kernel before every matrix layer under float16/bfloat16
    # [PTDISC]: the dispatcher costs ~3 us per operator in PyTorch's own micro-benchmarks: 8k cycles
    # on the default 2.6 GHz host for a tensor op inside a module's forward (no module call)
    primitive_cycles=8_000.0,
    primitive_layers=True,  # [HF] Hugging Face modules: RMSNorm, RoPE, SiLU x up as tensor ops
    kv_cache_concat=True,  # [HF] DynamicCache.update: torch.cat of the past and the new keys
    # fitted once: llama-2-7b float16 decode at batch 1 in eager PyTorch on an H100 SXM (issue #30,
    # measured 2026-11-25): 7.9 ms of kernels for 1,334 kernels, 4.7 ms of them streaming weights and
    # cache; ~1,000 small kernels (RMSNorm's, RoPE's, the adds) take ~2.8 us each from launch to drain
    kernel_floor_s=EAGER_KERNEL_FLOOR_S,
    fused_optimizer=False,  # [ADAMW] torch.optim.AdamW defaults to foreach=True on CUDA (not fused)
    scaler_sync=True,  # [SCALER] GradScaler.step reads the overflow flag back before optimizer.step
)

GRAPH = FrameworkSpec(
    id="graph",
    name="graph executor (TensorFlow graphs, XLA, TorchScript: no Python per operator)",
    # fitted once against the batch-1 inference rows run in TensorFlow 1 graphs (DeepLearningExamples
    # ResNet-50 on A100, V100, T4) as one cost per operator: 62k cycles = 24 us per operator, half of
    # eager PyTorch's ([PTDISC]: no Python per operator). Those rows now run ``tf1`` (a cost per
    # Session.run step); this one stays for the other graph rows (TF2 and TorchScript on CPUs,
    # MXNet and Paddle training), whose fits were made with it
    op_cycles=62_000.0,
    launch_share=1.0,
    autocast=False,  # TF AMP rewrites the graph; weight casts run ahead of the activations
    compiles=True,  # the whole graph is known before it runs
    layout="nhwc",  # TensorFlow's default data format (channels last)
)

TF1_SESSION = FrameworkSpec(
    id="tf1",
    name="TensorFlow 1 graph run step by step through Session.run (Estimator loop, NGC 20.06-tf1)",
    # [TFSESS] every step is one Session.run from Python: the Estimator's hooks, the feed and fetch
    # of host arrays and the executor's set-up run on the host while the GPU waits (the fetch blocks,
    # ``Transfer.waits``), then the C++ executor walks the graph's nodes. Fitted once
    # (benchmarks/fit_stack.py) against [DLETF]'s 14 TF1 ResNet-50 inference rows (A100, V100, T4;
    # FP32/TF32 and AMP; batch 1, 16, 256; 26 rows with batch 4 and 8): 10.0M cycles = 3.8 ms per
    # step on the default 2.6 GHz host (9.0M before batch norm in eval mode was priced as the one
    # pass it is: the batch-256 steps got shorter, the optimum moved; 9.5M-10.0M score alike)
    # and 5k cycles = 2 us per node; the optimum is flat from 0 to 10k cycles per node (a
    # per-node cost is hidden behind the kernels), where one cost per node (``graph``'s 62k) gives
    # the same time to float32 and AMP at batch 1, which the rows do not show (7.34 vs 4.77 ms on a T4)
    op_cycles=5_000.0,
    step_cycles=10_000_000.0,
    launch_share=1.0,
    autocast=False,  # TF AMP rewrites the graph; weight casts run ahead of the activations
    compiles=True,  # the whole graph is known before it runs
    layout="nhwc",  # TensorFlow's default data format (channels last)
)

MXNET = FrameworkSpec(
    id="mxnet",
    name="MXNet 1.x Gluon, hybridized (CachedOp, static_alloc/static_shape; NGC 20.12)",
    # fitted once against [DLEMX]'s V100 batch 1-8 mixed-precision latencies in the mxnet-20.12
    # container (3.48, 3.84, 4.39, 4.87 ms; least squares: 3.43 ms of host time per step plus
    # 0.19 ms per image of DALI input and GPU work): 3.43 ms over ResNet-50's ~170 issued
    # operators is 20.2 us each, less the V100's 7.4 us launch: 12.8 us = 33k cycles on the default
    # 2.6 GHz host per operator, half of TensorFlow 1's 62k (the CachedOp replays a prepared op
    # list; no graph walk per step)
    op_cycles=33_000.0,
    launch_share=1.0,
    autocast=False,  # the float16 model is cast once (net.cast), no casts per step
    compiles=True,  # the hybridized graph is known before it runs
    layout="nhwc",  # [DLEMX] float16 runs use the NHWC layout
)

MXNET_CUDA_GRAPHS = attrs.evolve(
    MXNET,
    id="mxnet-cuda-graph",
    name="MXNet 1.9 Gluon, hybridized and replayed as CUDA graphs (MXNET_ENABLE_CUDA_GRAPHS=1; NGC 22.10)",
    # [DLEMX22] the 22.10 runner sets MXNET_ENABLE_CUDA_GRAPHS=1: the CachedOp captures the hybridized
    # forward once and replays it, so no host work per operator is left (A100 batch 1: 2.15 ms in
    # 20.12 without graphs, 0.70 ms in 22.10 with them)
    op_cycles=0.0,
    launch_share=CUDA_GRAPH_LAUNCH_SHARE,  # as ``cuda-graph``: the driver replays the nodes
    # a replayed kernel still ramps its grid up and drains it: the eager preset's
    # launch-to-drain floor, measured on an H100 (a GPU's property, not the launch path's)
    kernel_floor_s=EAGER_KERNEL_FLOOR_S,
    # fitted once (benchmarks/fit_stack.py) against [DLEMX22]'s A100 batch-1 row, the one published
    # step whose time the host sets (batch 256: within 5 % at any value): fit.py's ``model_score``
    # loop is Python per batch (DALI's iterator, the CachedOp call, ``metric.update``, which copies
    # the outputs to the host), 500k cycles = 0.19 ms on the default 2.6 GHz host
    step_cycles=500_000.0,
)

CUDA_GRAPH = FrameworkSpec(
    id="cuda-graph",
    name="captured CUDA graph (one launch replays the whole step)",
    op_cycles=0.0,  # nothing runs on the host per operator once the graph is captured
    launch_share=CUDA_GRAPH_LAUNCH_SHARE,
    autocast=True,
)

XLA_JIT = FrameworkSpec(
    id="xla",
    name="XLA: one jitted step (JAX, PyTorch/XLA), compiled ahead; the default on a TPU",
    op_cycles=0.0,  # [XLAJIT] nothing runs on the host per operator once the step is compiled
    launch_share=1.0,  # each fused op still pays the device's own issue cost (dispatch_s) on the chip
    autocast=False,  # mixed precision is part of the traced program, not inserted casts
    compiles=True,  # the whole step is one compiled program
    fused_optimizer=True,  # the optimizer update is traced into the step and fused by XLA
    # [XLAFUSE] the log-softmax is fused into the cross-entropy's reductions: no float32
    # log-probabilities are written beside the logits
    fused_loss=True,
    # estimate: a jitted call's Python dispatch and the runtime's launch of one executable, ~100k
    # cycles (~40 us on the default 2.6 GHz host), paid once per step [XLAJIT]
    step_cycles=100_000.0,
)

TORCH7 = FrameworkSpec(
    id="torch7",
    name="Lua Torch 7 (nn / cudnn.torch modules called from LuaJIT, no autograd tape)",
    # estimate: a LuaJIT call into a C module per operator, a few microseconds
    op_cycles=15_000.0,
    launch_share=1.0,
    autocast=False,  # no mixed-precision machinery
    cpu_library="thnn",  # [JCJ] CPU runs use Torch's own nn backend, not MKL-DNN
)

_NETWORK_FRAMEWORKS = (EAGER, GRAPH, TF1_SESSION, CUDA_GRAPH, TORCH7, XLA_JIT, MXNET, MXNET_CUDA_GRAPHS)
FRAMEWORKS: dict[str, FrameworkSpec] = {
    spec.id: spec for spec in (*_NETWORK_FRAMEWORKS, *engines(EAGER, CUDA_GRAPH))
}
DEVICE_FRAMEWORKS = {"tpu": XLA_JIT.id}
"""The framework a workload runs in by default on a device of that kind, where it is not the
workload's own default (every TPU program is an XLA program)."""

CUDNN = LibrarySpec(
    id="cudnn",
    name="cuDNN and cuBLAS (NVIDIA GPUs)",
    winograd_reduction=36 / 16,  # [LG16] F(2x2, 3x3): 16 multiplies instead of 36
    fft_min_filter=5,  # [CUDNN] FFT and FFT_TILING pay off for large filters at stride 1
    # fitted once (grid 0.2-0.5 in steps of 0.05, least MAPE) on DeepBench's two FFT_TILING convolutions
    # ([DBENCH]: 28x28, 192 -> 32 channels, 5x5, batch 16, float32: 0.192 ms on a V100, 0.439 ms on a
    # T4): their ratio (2.29) is the two chips' vector-rate ratio (2.4), not their bandwidth ratio
    # (3.3), so the algorithm is bound by its arithmetic, at 0.3 of the vector peak (transforms' index
    # and twiddle work beside the 5 n log2 n FLOPs; complex products of 16x192 by 192x32 per frequency)
    fft_efficiency=0.3,
    # [VIDUR] cuBLAS products of LLaMA-2 7B/70B shapes timed on A100 and H100 from 16 to 4096 rows:
    # 1.7x the max of compute and weight streaming at 128 rows, near the sum; the smooth roofline
    # with p = 2 follows them within ~10 % at every size (compute-bound or memory-bound ends keep
    # the max within 1 %)
    gemm_overlap_norm=2.0,
    # [CUTLASS] threadblock tiles, largest first; then (8, 128): cuBLAS runs a product of a few rows
    # (an LLM's decode step at batch 1-8) as a matrix-vector kernel (gemv), not padded to 32 rows
    gemm_tiles=(
        (256, 128),
        (128, 256),
        (128, 128),
        (128, 64),
        (64, 128),
        (64, 64),
        (64, 32),
        (32, 32),
        (8, 128),
    ),
    conv_efficiency=1.0,  # implicit GEMM reaches cuBLAS's rate: the processor's matmul_efficiency
    # fitted once (benchmarks/fit_stack.py) against the published float32 (TF32) ResNet-50 training
    # rows on A100s (DeepLearningExamples: PyTorch, TensorFlow, MXNet, PaddlePaddle, 909-1056 img/s):
    # TF32 convolutions reach 0.40 of the TF32 tensor rate in the forward pass (~53 TFLOP/s on an
    # A100; 0.34 before the backward passes' own share below), while cuBLAS's TF32 GEMM reaches 0.69
    # (published torch.mm 4096^3: 108 TFLOP/s) and float16 convolutions the full matmul_efficiency:
    # ResNet-50's convolutions are too small and too channel-poor for TF32 tiles
    matrix_conv_efficiency=(("tf32", 0.40),),
    # [DBENCH] fitted once: the data and weight gradients of every DeepBench training convolution timed
    # with both (V100 and T4 sheets, float16 on tensor cores and float32 on CUDA cores; 4 x 70
    # shapes) take 1.10-1.44x (dgrad) and 1.19-1.38x (wgrad) the forward's time, where the same
    # FLOPs at the forward's rate give 0.99-1.04x; the shares that make parsim's pooled ratios match
    # (geometric mean over the four sheets): dgrad 0.79, wgrad 0.78 of the forward's rate
    backward_conv_efficiency=(("dgrad", 0.79), ("wgrad", 0.78)),
    # fitted once (grid 30-80, least MAPE over the training and inference classes, whose 16-bit NCHW
    # rows are the ones it moves): 60 integer instructions per element of the nchwToNhwc/nhwcToNchw
    # transposes, about three divisions with remainders by runtime dimensions, done in software (a
    # GPU has no integer divider), and the address arithmetic. At 64 integer results per SM per
    # clock they bound the transposes where a chip's SMs x clock are few for its memory: A100 and
    # H100 (Lambda's NCHW AMP ResNet-50 +38 % and +48 % -> -3 % and +4 %), V100 and GA102 in part,
    # not an RTX 4090 (128 SMs at 2.5 GHz outrun its 1 TB/s); see benchmarks/fit_stack.py
    transpose_int_ops=60.0,
    # flash-v1 fitted once (benchmarks/fit_stack.py) against FlashAttention's own GPT-3 125M-760M
    # training runs on 8x A100 (training/README.md of the v1 era: PyTorch 1.12, CUDA 11.8, "up to 189
    # TFLOPs/sec per A100"): its fused attention forward + backward reaches 0.22 of the GEMM rate
    # (~59 TFLOP/s in bf16 on an A100; refitted from 0.21 once those runs' AdamW was modelled as
    # PyTorch's default foreach passes, issue 30); flash (FlashAttention-2, and the fused attention of
    # cuDNN and TensorRT) twice that: [FA2] Dao 2023, "FlashAttention-2", abstract: "around 2x speedup
    # compared to FlashAttention, reaching 50-73% of the theoretical maximum FLOPs/s on A100"
    attention_efficiency=(("flash-v1", 0.22), ("flash", 0.44)),
    # FlashAttention 1 (2022; its Triton port too) issues Ampere's mma.sync, never Hopper's wgmma: on
    # an H100 it runs at the chip's legacy_mma_share of that share. "flash" stands for FlashAttention-2
    # and for the fused attention of cuDNN and TensorRT, which have Hopper kernels: not listed
    legacy_attention=("flash-v1",),
    # estimate: a PyTorch process's CUDA context with cuDNN/cuBLAS loaded takes 0.3-0.8 GB as nvidia-smi
    # reports it before any tensor; plus cuDNN's convolution workspace
    runtime_B=1.0 * 2**30,
)

ONEDNN = LibrarySpec(
    id="onednn",
    name="oneDNN / MKL (CPUs)",
    # fitted once (benchmarks/fit_stack.py) against the published Xeon 8480+ inference rows (Intel
    # Neural Compressor's FP32 baselines: TensorFlow, PyTorch and IPEX; ResNet-18/50, VGG-16): oneDNN's
    # convolutions reach the BLAS GEMM rate (matmul_efficiency), 80 % of the AVX-512 peak at base clock;
    # what separates the frameworks is the weight reorders and op folding below, not the kernels
    conv_efficiency=1.0,
    folds=True,  # [ONEDNN] post-ops and batch-norm folding in compiled (frozen) inference graphs
    blocked_weights=True,  # [ONEDNN] convolutions run on blocked weights (OIhw16i16o); plain ones reorder
    # fitted once (benchmarks/fit_stack.py: 50-150 pixels in steps of 10; issue 26 item 8) against the
    # Xeon 8480+ rows, batch 1 on 4 cores per instance: the late stages' 7 x 7 and 14 x 14 feature
    # maps leave one call too few pixels to spread its fixed work over (TensorFlow's ResNet-50 at
    # ~540 img/s where VGG-16, whose work sits in 14-224 pixel-wide layers, runs its convolutions near
    # the peak). With eager convolutions' reorders as passes of their own ([PT131958],
    # model.library) and the 8480+'s vector units at 3.0 GHz, the 20 rows: 22 % -> 9.7 %
    batch_half_pixels=80.0,
)

THNN = LibrarySpec(
    id="thnn",
    name="Torch7 nn on CPUs (THNN: im2col and an OpenBLAS GEMM per image, a serial ReLU)",
    # [THRESH] nn.ReLU is THNN's Threshold: ``TH_TENSOR_APPLY(real, input, if (*input_data <=
    # threshold) *input_data = val;)``, forward and backward, a scalar loop on one thread (2016's
    # TH_TENSOR_APPLY has no OpenMP; Intel's fork added ``omp parallel for`` to it later). On the
    # activations' random signs the branch misses about every second element: [AGNER] Haswell's
    # misprediction penalty is 15-20 cycles, so ~8.5 of them per element plus the loop's ~3 (load,
    # compare, store, the apply's counters): 12 cycles. ResNet-50 runs 154 M ReLU elements a batch of
    # 16 forward (VGG-16 217 M, ResNet-18 37 M): 0.7 s of its 2.5 s on one core.
    serial_sign_test_cycles=12.0,
    # the convolution's share and its per-image curve, fitted once (benchmarks/fit_stack.py) against
    # the published Torch7 CPU rows ([JCJ]: VGG-16, ResNet-18/50 on 2x Xeon E5-2630 v3, "pretty far
    # from optimal ... a vanilla Torch installation") with the serial ReLU above: VGG-16's products
    # (3,136-50,176 pixels an image) run at 0.29 of the GEMM rate, ResNets' late stages (196 and 49
    # pixels) far below: [THNN] SpatialConvolutionMM loops ``omp parallel for`` over the batch and
    # calls one ``addmm`` per image (weights x the image's unfolded input), so each call's fixed work
    # is spread over one image's output pixels only. MAPE of the six rows: 39.8 % with one flat share
    # (0.14), 12.9 % with the per-image curve (0.2, 320 pixels), 6.3 % with the serial ReLU as well
    conv_efficiency=0.29,
    per_image_half_pixels=400.0,
)

ROCM = LibrarySpec(
    id="rocm",
    name="MIOpen, rocBLAS/hipBLASLt and RCCL (AMD Instinct GPUs, ROCm)",
    winograd_reduction=36 / 16,  # [MIOPEN] Winograd solvers for 3x3 filters; [LG16] F(2x2, 3x3)
    fft_min_filter=5,  # [MIOPEN] miopenConvolutionFwdAlgoFFT, as cuDNN's FFT a candidate for large filters
    # estimate: hipBLASLt's main loop streams operands through the LDS as cuBLAS's does through shared
    # memory; no per-size timing of hipBLASLt is public, so cuBLAS's smooth roofline ([VIDUR]) is kept
    gemm_overlap_norm=2.0,
    # [TENSILE] macro tiles up to 256x256 (MT256x128x16 is what rocBLAS runs for an 8192^3 SGEMM on gfx90a,
    # ROCm/rocm-libraries issue #9453), down to 32x32; then (8, 128): a product of a few rows runs as
    # rocBLAS's gemv, as cuBLAS's does
    gemm_tiles=(
        (256, 256),
        (256, 128),
        (128, 256),
        (128, 128),
        (128, 64),
        (64, 128),
        (64, 64),
        (32, 32),
        (8, 128),
    ),
    # estimate: MIOpen's implicit-GEMM (igemm) solvers at rocBLAS's rate, as cuDNN's are taken at cuBLAS's;
    # no published ResNet rows on Instinct GPUs to fit a share against yet
    conv_efficiency=1.0,
    # [AZ-MI300X] FlashAttention-2 on an MI300X: 328.6 TFLOP/s (head dim 64, batch 2, sequence 8192), of
    # the 575 TFLOP/s hipBLASLt's rate (1307.4 peak x 0.44): 0.57; flash-v1 keeps cuDNN's v1/v2 ratio (1/2)
    attention_efficiency=(("flash-v1", 0.285), ("flash", 0.57)),
    # estimate: as CUDA's: a PyTorch process's HIP context with rocBLAS/MIOpen loaded and their workspaces
    runtime_B=1.0 * 2**30,
)

XLA = LibrarySpec(
    id="xla",
    name="XLA on TPUs (the compiler lowers every op; products on the MXUs, padded to the array)",
    # estimate: libtpu and the runtime hold a few hundred MB of HBM before any array (no public figure)
    runtime_B=0.5 * 2**30,
    fuses_elementwise=True,  # [XLAFUSE] element-wise consumers fused into the product's output
    # fitted once (grid 0.35-0.7 in steps of 0.05, least MAPE) against the published MaxText runs on v6e
    # (AI-Hypercomputer/tpu-recipes: Llama 3.1 8B/70B at 8,192 tokens on 8-256 chips, Llama 2 70B,
    # GPT-3 175B; 13.8 % -> 5.6 %): the Pallas flash/splash attention kernel's products run at 0.6 of
    # the MXU's GEMM rate (no public per-kernel timing on a TPU; FlashAttention-2 on GPUs: 0.44-0.57)
    attention_efficiency=(("flash", 0.6),),
)

CUDNN5 = attrs.evolve(
    CUDNN,
    id="cudnn5",
    name="cuDNN 5.1 through cudnn.torch (Lua Torch 7 on NVIDIA GPUs, 2016)",
    # fitted once (grid 0.4-1.0 in steps of 0.05, least MAPE) against the eight published Torch7
    # GTX 1080 rows ([JCJ] README, cuDNN 5.1.05: AlexNet, VGG-16, ResNet-18/50 at batch 16, forward and
    # forward + backward; 34.6 % -> 16.8 %): cuDNN 5.1's convolutions (its first Pascal release, before
    # cuDNN 6/7's tuned kernels) reach half of cuBLAS's SGEMM rate on these batch-16 layers; Winograd
    # and FFT keep their candidacy and their FLOP counts ([LG16], [CUDNN])
    conv_efficiency=0.5,
)

LIBRARIES: dict[str, LibrarySpec] = {spec.id: spec for spec in (CUDNN, CUDNN5, ROCM, ONEDNN, THNN, XLA)}
GPU_LIBRARIES: dict[str, LibrarySpec] = {"cuda": CUDNN, "rocm": ROCM}
"""The kernel library frameworks call on a GPU of each platform (``ProcessorSpec.platform``)."""
STACK_GPU_LIBRARIES: dict[tuple[str, str], LibrarySpec] = {("cuda", THNN.id): CUDNN5}
"""A framework stack whose GPU library is not its platform's current one, keyed by the platform and
the stack's CPU library (``FrameworkSpec.cpu_library``, which every kernel of the framework carries):
Lua Torch 7 (THNN on CPUs) calls cuDNN 5.1 through cudnn.torch on NVIDIA GPUs."""
CPU_LIBRARIES: dict[str, LibrarySpec] = {spec.id: spec for spec in (ONEDNN, THNN)}
"""The kernel libraries a framework may call on a CPU (``FrameworkSpec.cpu_library``)."""


def framework(name: str) -> FrameworkSpec:
    """The framework preset ``name`` (``eager``, ``graph``, ``cuda-graph``, ``torch7``, ``xla``, or a
    serving engine of ``stack.engines``)."""
    if name not in FRAMEWORKS:
        raise ParsimError(f"'framework' must be one of {', '.join(FRAMEWORKS)}: {name!r}")
    return FRAMEWORKS[name]


def library_of(spec: ProcessorSpec | None, cpu_library: str = "") -> LibrarySpec:
    """The kernel library a framework uses on processor ``spec`` (None: a CPU-only system's host):
    its platform's on a GPU (cuDNN on CUDA, MIOpen/rocBLAS on ROCm), XLA on a TPU, ``cpu_library``
    on a CPU."""
    if spec is None:
        return library_for("cpu", cpu_library)
    return library_for(spec.kind, cpu_library, spec.platform)


def library_for(kind: str, cpu_library: str = "", platform: str = "cuda") -> LibrarySpec:
    """The kernel library a framework uses on a processor of ``kind``: on a GPU its ``platform``'s
    (cuDNN on CUDA, the ROCm libraries on ROCm; cuDNN 5.1 for the Torch 7 stack), XLA on a TPU, on a
    CPU ``cpu_library`` (empty: a CPU's usual one, oneDNN).

    Raises:
        ParsimError: ``cpu_library`` names no CPU library parsim knows (it is not guessed).
    """
    if kind == "gpu":
        return STACK_GPU_LIBRARIES.get((platform, cpu_library), GPU_LIBRARIES[platform])
    if kind == "tpu":
        return XLA
    if not cpu_library:
        return ONEDNN
    chosen = CPU_LIBRARIES.get(cpu_library)
    if chosen is None:
        raise ParsimError(f"'cpu_library' must be one of {', '.join(CPU_LIBRARIES)}: {cpu_library!r}")
    return chosen
