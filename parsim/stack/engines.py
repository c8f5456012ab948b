"""LLM serving engines as frameworks: how each one's decode kernels and host loop really run.

A batch-1 decode step is a chain of matrix-vector products (GEMVs) that read every weight once, so
its time is the weights' bytes over the bandwidth the engine's kernels draw. That share is the
engine's, not the GPU's. TensorRT-LLM's and vLLM's GEMVs stream at a library copy's rate (the
device's achievable bandwidth); gpt-fast's Inductor-generated ones at four fifths of it. llama.cpp's
own kernels keep only a few KB of loads in flight per SM, so by Little's law they reach the
bandwidth of a GDDR card (few SMs' worth of bytes in flight suffice) but only about half of an HBM
GPU's (A100, H100: bandwidth x latency is twice as large); and until CUDA graphs (May 2024) its
host launched every kernel of every token itself, which on an A100 or H100 takes longer than a
4-bit model's kernels. An engine that gathers a mixture of experts' weights by index before its
products (gpt-fast's ``w1[expert_indices]``) or runs a weight-only format through a padded
tensor-core kernel (gpt-fast's int4 tinygemm) reaches less again.

A serving engine sizes its KV cache by its own rule: SGLang keeps a fixed share of each GPU's
memory for the weights and the cache (``static_memory``) and leaves the rest free, where vLLM
profiles one step's activations and gives the cache everything else.

Around the GPU, a serving engine's host runs the scheduler, the sampler's bookkeeping and the
detokeniser between two steps (hidden under the GPU only by an overlap scheduler: SGLang 0.4) and
per request its HTTP front end and tokeniser (``serve_step_cycles``, ``request_cycles``).

An engine that runs its model as plain PyTorch modules inside the captured graph (vLLM's V0 engine,
SGLang by default) launches each small op as its own kernel: the norms, the rotary embedding, the
cache write, the activation and the residual adds (vLLM's custom CUDA ops, PyTorch's adds). Each
holds the GPU for the launch-to-drain floor the eager preset measured on an H100 (2.8 us) however
little it does: 7 x 2.8 = 19.6 us a layer of floor, some 15 us more than those kernels' bytes
take on an H100 at a 70B model's decode. Run through ``torch.compile`` (SGLang's
``--enable-torch-compile``, vLLM's V1 engine always, gpt-fast) Inductor fuses them into the
neighbouring kernels and their generated code, so they cost their bytes alone: the ``+compile``
twin of an engine (``sglang+compile``, ``sglang-0.3+compile``) drops the floor. Not modelled: SGLang
compiles only the decode batches up to ``--torch-compile-max-bs`` (32 by default), so its prefills
and larger decode batches keep the floor; the twin drops it for every step.

Every preset keeps its base framework's issue costs (``cuda-graph`` for engines that replay a
captured graph per step; ``eager`` for Hugging Face's ``generate``) and adds the engine's own
parameters, each cited or fitted once per engine against the rows of ``parsim validate --published``
named beside it (never per row or per model). ``framework=`` names them in ``llm_serve`` and
``llm_load``; ``parsim validate --published`` reports the decode class's error per engine.

Sources, abbreviated in the comments:

- [GPTFAST] pytorch-labs/gpt-fast@0f925b5d4ce457b89a7ca6c9ce50f42bf2576945 generate.py
  (``torch.compile(decode_one_token, mode="reduce-overhead", fullgraph=True)``: CUDA graphs) and
  quantize.py (int4: ``torch.ops.aten._weight_int4pack_mm``, tinygemm's tensor-core kernel);
  mixtral-moe/model.py@0474176566aaeac370e8493e19ffca7c865f5446 ``ConditionalFeedForward``
  (``self.w1[expert_indices]`` then ``torch.einsum``).
- [GGML] ggml-org/llama.cpp ggml/src/ggml-cuda (``mul_mat_vec_q``, ``dequantize_mul_mat_vec``: one
  block per output row, each thread loading a few quantised blocks per iteration); pull request
  #6766 (May 2024) added CUDA graphs, before which ``ggml_backend_cuda_graph_compute`` launched every
  node from the host.
- [SGLARGS] sgl-project/sglang python/sglang/srt/server_args.py ``__post_init__`` (the
  ``mem_fraction_static`` default by ``tp_size``: v0.3.0 and v0.4.0-0.4.1, Dec 2024) and
  model_executor/model_runner.py ``profile_max_num_token``: ``rest_memory = available_gpu_memory -
  total_gpu_memory * (1 - mem_fraction_static)``, the memory free after the weights loaded less the
  unreserved share of the memory free before, over the KV bytes per token.
"""

from __future__ import annotations

from typing import Literal

import attrs

from parsim.stack.specs import FrameworkSpec

SGLANG_STATIC_MEMORY = ((1, 0.88), (2, 0.87), (4, 0.85), (8, 0.81), (16, 0.79))
"""SGLang 0.4's ``mem_fraction_static`` by tensor-parallel GPUs at least [SGLARGS]."""

SGLANG_REQUEST_POOL = (2048, 4096)
"""SGLang's request pool: ``KV tokens / context x 512`` requests, clamped to these (model_runner.py)."""

SERVING_ENGINES = (
    "hf",
    "vllm",
    "vllm-v0",
    "tensorrt-llm",
    "llama.cpp",
    "exllamav2",
    "gpt-fast",
    "sglang",
    "sglang+compile",
    "sglang-0.3",
    "sglang-0.3+compile",
)
"""The engines ``framework=`` names for the LLM workloads, besides the plain frameworks."""


ServeFramework = Literal[
    "eager",
    "graph",
    "cuda-graph",
    "xla",
    "hf",
    "vllm",
    "vllm-v0",
    "tensorrt-llm",
    "llama.cpp",
    "exllamav2",
    "gpt-fast",
    "sglang",
    "sglang+compile",
    "sglang-0.3",
    "sglang-0.3+compile",
]
"""What ``framework=`` takes in the LLM serving workloads: a plain framework or a serving engine
(``stack.engines``: its decode kernels' bandwidth share and its host work per step and request)."""


COMPILED_ENGINES = ("sglang", "sglang-0.3")
"""The engines with a ``+compile`` twin: their users turn ``torch.compile`` on with a flag."""


def compiled(engine: FrameworkSpec) -> FrameworkSpec:
    """``engine`` run through ``torch.compile``: Inductor fuses its small ops, no kernel floor."""
    return attrs.evolve(
        engine,
        id=f"{engine.id}+compile",
        name=f"{engine.name}, run through torch.compile (--enable-torch-compile: small ops fused)",
        kernel_floor_s=0.0,
    )


def engines(eager: FrameworkSpec, cuda_graph: FrameworkSpec) -> tuple[FrameworkSpec, ...]:
    """The serving-engine presets, built on the plain ``eager`` and ``cuda-graph`` frameworks, and the
    ``+compile`` twins of ``COMPILED_ENGINES``."""
    presets = _engines(eager, cuda_graph)
    return presets + tuple(compiled(spec) for spec in presets if spec.id in COMPILED_ENGINES)


def _engines(eager: FrameworkSpec, cuda_graph: FrameworkSpec) -> tuple[FrameworkSpec, ...]:
    return (
        attrs.evolve(eager, id="hf", name="Hugging Face transformers generate() (eager PyTorch)"),
        # TensorRT-LLM and vLLM: their GEMVs stream at the device's achievable bandwidth (the
        # published TensorRT-LLM 0.5/0.6 and vLLM 0.7.3 rows are within a few % without a share)
        attrs.evolve(
            cuda_graph,
            id="tensorrt-llm",
            name="TensorRT-LLM (compiled engine, CUDA graphs)",
            # fitted once on the TensorRT-LLM 0.5 and 0.9 first-token rows (gptSessionBenchmark, batch
            # 1, output 1, A100 FP16: 7B, Mistral 7B and 70B at 128 and 2048 input tokens): every
            # 128-token row sits 3-10 ms above its prefill, a fixed cost of the GptSession's
            # generate() call (buffers set up, inputs copied, the decoder layer set up, the first
            # token synchronised back): 4.6 ms at 2.6 GHz
            call_cycles=1.2e7,
        ),
        attrs.evolve(
            cuda_graph,
            id="vllm",
            name="vLLM 0.8+ (V1 engine: CUDA graphs, paged attention)",
            # fitted once on the vLLM 0.8.3 rows (Llama 3.3 70B, 8x A100 40GB, 1-16 requests/s; the
            # 4 and 16 requests/s runs with cached_prefix=1: they replay the 1 request/s run's prompts
            # on the same server, whose prefix cache still holds them): its API server, tokeniser and
            # detokeniser per request (13.5 ms at 2.6 GHz), and per step its scheduler, the broadcast
            # of the step to the 8 worker processes and their input preparation (5.0 ms) plus 77 us
            # per running sequence (the published ITLs grow from 20 to 25 ms as 1 to 16 sequences
            # run), which the GPU waits for (no asynchronous scheduling in 0.8). Refit in round 12
            # (grid 1.1-1.6e7 x 2-5e7 x 1-3e5 cycles, least MAPE over the 18 rows: 7.6 -> 4.2 %):
            # the 2e7 / 1e7 of the first fit predated NCCL's protocols reaching main, whose faster
            # all-reduces had left every one of the 18 rows fast (-1 to -39 %, mean -7.6 %)
            request_cycles=3.5e7,
            serve_step_cycles=1.3e7,
            serve_sequence_cycles=2e5,
        ),
        attrs.evolve(
            cuda_graph,
            id="vllm-v0",
            name="vLLM 0.6-0.7 (V0 engine; multi-step scheduling with multi_step=)",
            # its model's small ops are its custom CUDA kernels and PyTorch's adds, one launch each
            # inside the graph, each held for the launch-to-drain floor (module docstring)
            kernel_floor_s=eager.kernel_floor_s,
            # fitted once on the vLLM 0.6.0 rows of SGLang's benchmark (Llama 3.1 8B on one A100 80GB,
            # 70B on four H100 80GB, 4 and 8 requests/s, --num-scheduler-steps 10) and the ROCm vLLM
            # 0.7.3 decode rows (MI300X), with the kernel floor (grid 3-8e7 x 0-1e7 cycles, least
            # MAPE over its 20 rows: 13.0 -> 12.9 %): 23 ms per request, 1.9 ms per step
            request_cycles=6e7,
            serve_step_cycles=5e6,
        ),
        attrs.evolve(
            cuda_graph,
            id="gpt-fast",
            name="gpt-fast (torch.compile reduce-overhead: CUDA graphs) [GPTFAST]",
            # fitted once on gptfast-llama2-7b-bf16 (A100 80GB at 330 W, batch 1: 104.9 tokens/s,
            # 13.5 GB per token = 1.41 TB/s, 0.8 of the 1.75 TB/s an A100 SXM streams at)
            decode_share=0.8,
            # fitted once on the Mixtral 8x7B rows (bf16 and int8, 1-4 GPUs): the experts' products
            # read their weights through an indexed gather (``w1[expert_indices]``) at 0.65 of that
            expert_share=0.65,
            # fitted once on gptfast-llama2-7b-int4 (196.8 tokens/s): tinygemm's int4 kernel runs the
            # 1-row product on tensor-core tiles, at 0.65 of the dense GEMV's rate; int8 weight-only
            # needs no share (its dequantising GEMV is priced by ``workloads.quantised``)
            weight_only_share=(("int4", 0.65),),
        ),
        attrs.evolve(
            cuda_graph,
            id="llama.cpp",
            name="llama.cpp before CUDA graphs (ggml's CUDA kernels launched per node, to May 2024) [GGML]",
            # fitted once on the A100 and H100 PCIe rows of Q4_0 7B (133.8-136.2 tokens/s: 7.4 ms per
            # token whatever the GPU, so the host's launches set it): 30k cycles, 11.5 us per kernel
            # on the default 2.6 GHz host, for ggml's graph walk and cudaLaunchKernel per node
            op_cycles=30_000.0,
            launch_share=1.0,
            # fitted once on the A100 80GB PCIe and H100 PCIe float16 7B rows (73.8 and 83.3 tokens/s:
            # 13.5 GB per token at 1.0 and 1.1 TB/s, half of either's bandwidth): 3.7 KB in flight per
            # SM x 108 SMs / 407 ns = 1.0 TB/s, x 114 / 375 ns = 1.1 TB/s; the same kernels then reach
            # the whole bandwidth of an RTX 3090, 4090 or A6000 (82-128 SMs at 450 ns, under 1 TB/s)
            decode_in_flight_B=3_700.0,
        ),
        # not fitted: its kernels at the library's streaming rate already predict its three published rows
        # (RTX 4090, 4-bit 7B and 13B: exl2-readme-*) 11-18 % slow, so no share could lower the time
        attrs.evolve(cuda_graph, id="exllamav2", name="ExLlamaV2 (own CUDA kernels; not fitted)"),
        attrs.evolve(
            cuda_graph,
            id="sglang",
            name="SGLang 0.4+ (overlap scheduler: the next step's host work runs under this one's kernels)",
            # without --enable-torch-compile (its default) every small op is a kernel of its own,
            # held for the launch-to-drain floor (module docstring); ``sglang+compile`` drops it
            kernel_floor_s=eager.kernel_floor_s,
            # every parameter below is shared with ``sglang+compile``, whose rows they were fitted on
            # (the DataCrunch runs used --enable-torch-compile: no published row runs plain ``sglang``)
            # fitted once on the SGLang (Dec 2024) rows of datacrunch-research/h200-benchmarks (Llama 3.3
            # 70B on 4x H200, 1-4 requests/s): 31 ms per request between the HTTP server, the
            # tokeniser and detokeniser processes and the scheduler
            request_cycles=8e7,
            # the overlap scheduler (0.4) runs the batch's scheduling under the previous step's
            # kernels, so no fixed host time per step; the work per sequence of the step (its request
            # object, its token appended and checked for a stop, sent to the detokeniser) is the same
            # Python as 0.3's: sglang-0.3's 77 us per sequence, not refitted. The scheduler thread
            # does it while the forward thread (tp_worker_overlap_thread.py, a thread of the same
            # process) launches and runs the next step (scheduler.py event_loop_overlap, Dec 2024);
            # the forward thread waits for the interpreter lock up to CPython's 5 ms switch interval,
            # so the first 5 ms of a step's host work stay on its path and the rest runs under its
            # kernels (methods.serving.steps ModelSteps.engine_decode_s). The datacrunch ITLs say
            # so: 13.6-19.4 ms at about 8-52 sequences (0.13-0.15 ms per sequence beside the GPU's
            # weights: host work under 5 ms, all paid), while the offline runs' steps of 1,000-2,800
            # sequences take far less than their kernels plus 77 us per sequence
            serve_sequence_cycles=2e5,
            overlap_schedule=True,
            # CUDA graphs are captured for decode batches up to cuda_graph_max_bs, 160 on a GPU of 25 GB
            # or more ([SGLARGS] server_args.py, Dec 2024); a larger decode step runs eagerly, its
            # kernels (about a thousand for a 70B model) launched one by one from Python. Fitted once
            # on the datacrunch rows (the offline runs' durations and the 8 requests/s ITL: steps of
            # 250-2,800 sequences): 10 ms per eager step at 2.6 GHz, some 10 us per launch
            serve_graph_max_batch=160,
            serve_eager_step_cycles=2.6e7,
            # decode attention over the cache at 0.3 of the library kernel's bandwidth: fitted once on
            # the datacrunch offline runs of 4096-token prompts (2,500-2,900 cached tokens per
            # sequence, whose durations the rest of the step leaves 40 % short); taken to be
            # FlashInfer's decode over SGLang's token-granular pool (page size 1: each cached token's
            # K and V rows fetched by their own index), not shown. The SGLang 0.3 rows (A100, Llama
            # 3.1 8B and 70B, short ShareGPT contexts) do not call for it, so it is this engine's
            # fit, not the library's
            decode_attention_share=0.3,
            # sglang's default max_running_requests: min(KV tokens // 2, the request pool), the pool
            # min(max(KV tokens / context x 512, 2048), 4096) (python/sglang/srt/managers/tp_worker.py,
            # model_executor/model_runner.py): 4096 for a 128K-context model on a large cache
            # (``FrameworkSpec.running_limit``), 2,048 on a smaller one
            serve_max_running=SGLANG_REQUEST_POOL[1],
            serve_request_pool=SGLANG_REQUEST_POOL,
            # its scheduler admits a request only when the running requests' remaining outputs fit
            # ahead of it, and retracts requests to the back of the queue when a decode runs out of
            # room (methods.serving.reserve, from its schedule_policy.py and scheduler.py): not
            # fitted, the engine's code
            serve_admission="reserve",
            # its KV pool: mem_fraction_static of the memory free at start less what loading the
            # weights took, by --tp-size 0.88 (1), 0.87 (2+), 0.85 (4+), 0.81 (8+), 0.79 (16+)
            # ([SGLARGS] server_args.py, model_runner.py ``profile_max_num_token``): not fitted
            static_memory=SGLANG_STATIC_MEMORY,
        ),
        attrs.evolve(
            cuda_graph,
            id="sglang-0.3",
            name="SGLang 0.3 (no overlap scheduler)",
            kernel_floor_s=eager.kernel_floor_s,  # as ``sglang``: torch.compile is off by default
            # fitted once on the SGLang 0.3.0 rows of its own benchmark (Llama 3.1 8B on one A100 80GB,
            # 70B on four H100 80GB, 4 and 8 requests/s), with the kernel floor (grid 1-4e7 x 2.5-7.5e6
            # cycles, least MAPE over its 13 rows: 10.6 -> 10.3 %, flat from 2e7 to 2.5e7): 9.6 ms per
            # request; per step 1.9 ms and 77 us per sequence of scheduling, sampling and output
            # processing, which the GPU waits for
            request_cycles=2.5e7,
            serve_step_cycles=5e6,
            serve_sequence_cycles=2e5,
            # its request pool by the same rule (model_runner.py ``init_memory_pool`` since 0.2): 2,048
            # requests for Llama 3.1 8B on an A100 80GB (~450k KV tokens for a 131k context)
            serve_max_running=SGLANG_REQUEST_POOL[1],
            serve_request_pool=SGLANG_REQUEST_POOL,
            # the same rule; 0.3.0's fractions differ only at 8+ GPUs (0.83) [SGLARGS]
            static_memory=tuple((gpus, 0.83 if gpus == 8 else share) for gpus, share in SGLANG_STATIC_MEMORY),
        ),
    )
