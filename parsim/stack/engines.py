"""LLM serving engines as frameworks: how each one's decode kernels and host loop really run.

A batch-1 decode step is a chain of matrix-vector products (GEMVs) that read every weight once, so
its time is the weights' bytes over the bandwidth the engine's kernels draw. That share is the
engine's, not the GPU's: TensorRT-LLM's and vLLM's GEMVs stream at close to a library copy's rate,
gpt-fast's Inductor-generated kernels at about four fifths of it, llama.cpp's own CUDA kernels at
well under that. An engine that gathers a mixture of experts' weights by index before its products
(gpt-fast's ``w1[expert_indices]``) or dequantises weight-only int8/int4 weights as it loads them
reaches less again. Around the GPU, a serving engine's host runs the scheduler, the sampler's
bookkeeping and the detokeniser between two steps (hidden under the GPU only by an overlap
scheduler: SGLang 0.4) and per request its HTTP front end and tokeniser.

Every preset keeps its base framework's issue costs (``cuda-graph`` for engines that replay a
captured graph per step; ``eager`` for Hugging Face's ``generate``) and adds the engine's shares and
host cycles, each cited or fitted once per engine against the rows of ``parsim validate --published``
named beside it (never per row or per model). ``framework=`` names them in ``llm_serve`` and
``llm_load``.
"""

from __future__ import annotations

import attrs

from parsim.stack.specs import FrameworkSpec

SERVING_ENGINES = ("hf", "vllm", "tensorrt-llm", "llama.cpp", "exllamav2", "gpt-fast", "sglang", "sglang-0.3")
"""The engines ``framework=`` names for the LLM workloads, besides the plain frameworks."""


def engines(eager: FrameworkSpec, cuda_graph: FrameworkSpec) -> tuple[FrameworkSpec, ...]:
    """The serving-engine presets, built on the plain ``eager`` and ``cuda-graph`` frameworks."""
    return (
        attrs.evolve(eager, id="hf", name="Hugging Face transformers generate() (eager PyTorch)"),
        attrs.evolve(cuda_graph, id="vllm", name="vLLM (CUDA graphs, paged attention)"),
        attrs.evolve(cuda_graph, id="tensorrt-llm", name="TensorRT-LLM (compiled engine, CUDA graphs)"),
        attrs.evolve(cuda_graph, id="gpt-fast", name="gpt-fast (torch.compile, CUDA graphs)"),
        attrs.evolve(cuda_graph, id="llama.cpp", name="llama.cpp (ggml CUDA kernels, CUDA graphs)"),
        attrs.evolve(cuda_graph, id="exllamav2", name="ExLlamaV2 (own CUDA kernels)"),
        attrs.evolve(cuda_graph, id="sglang", name="SGLang 0.4+ (overlap scheduler)"),
        attrs.evolve(cuda_graph, id="sglang-0.3", name="SGLang 0.3 (no overlap scheduler)"),
    )
