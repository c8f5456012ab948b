"""The software stack is part of the hardware: frameworks and kernel libraries as cited specs.

What users run goes through a framework and a kernel library, and both change the time as much as
a faster chip would. A **framework** (``FrameworkSpec``) spends host time on every operator before
the launch: Python, the dispatcher, autograd bookkeeping, the caching allocator. An eager framework
(PyTorch) pays it per operator, a graph executor (TensorFlow graphs, XLA, TorchScript) much less, a
captured CUDA graph almost nothing, because the whole step is replayed by one launch. Under mixed
precision, autocast inserts cast kernels in front of every matrix layer. At small batches this host
time, not the GPU, sets the pace.

A **kernel library** (``LibrarySpec``) decides how a convolution or a GEMM actually runs. cuDNN
picks per layer the fastest of implicit GEMM, Winograd and FFT (``cudnnFind``); cuBLAS picks an
output tile and a split of the reduction so that small and skinny products still fill the SMs.
oneDNN/MKL on CPUs reach a share of the BLAS GEMM rate on framework convolutions.

Every number is either cited or, where no publication gives it, fitted once per framework or library
against the published measurements of ``parsim validate --published`` (the comment names the
rows); never per workload or per model.
"""

from __future__ import annotations

import attrs

from parsim.base.checks import (
    boolean,
    fraction,
    non_negative,
    non_negative_int,
    one_of,
    positive,
    text,
    within,
)
from parsim.base.errors import ParsimError


@attrs.frozen(cache_hash=True)
class FrameworkSpec:
    """How a deep-learning framework issues work.

    Attributes:
        id: ``eager``, ``graph`` or ``cuda-graph``.
        name: what it stands for.
        op_cycles: host CPU cycles spent per operator before its launch (Python, dispatcher,
            autograd, allocator); divided by the host's clock, so a faster host issues faster.
        launch_share: share of the device's kernel-launch cost (``dispatch_s``) paid per kernel;
            1 for frameworks that launch each kernel, small for a replayed CUDA graph.
        autocast: under float16/bfloat16 (mixed precision: float32 master weights and optimizer)
            the host issues a cast kernel in front of every matrix layer, on the critical path
            (PyTorch's autocast). False for a graph rewrite (TensorFlow's AMP pass): its weight
            casts depend only on the weights, so the executor runs them ahead of the activations
            and they are left out.
        compiles: the framework compiles the whole graph before running it, so the library can
            fold inference ops (``LibraryHints.foldable``) and keep weights in its own layout; an eager
            framework hands every call plain tensors (``LibraryHints.reorder_B``).
        cpu_library: id of the kernel library the framework calls on a CPU.
        layout: the activations' default memory layout: ``nchw`` (PyTorch's contiguous format) or
            ``nhwc`` (TensorFlow's).
        primitive_cycles: host CPU cycles per *primitive* tensor op issued inside an operator's
            forward (``torch.mul`` in a Hugging Face RMSNorm): the Python binding, the dispatcher, the
            allocator and the launch, without the module call ``op_cycles`` pays; 0 where the
            framework issues no such ops (``Issue.primitive``).
        primitive_layers: composite layers run as the primitive tensor ops they are written in, one
            kernel each (Hugging Face's PyTorch modules: RMSNorm in float32, RoPE, SiLU x up, separate
            q, k and v projections); False: fused kernels (vLLM, TensorRT-LLM, compiled graphs).
        kv_cache_concat: the KV cache grows by concatenation (Hugging Face's ``DynamicCache``:
            ``torch.cat`` of the past and the new keys every step), so every step copies the whole
            cache; False: new keys are written in place (paged or preallocated caches).
        fused_optimizer: the optimizer updates a weight in one fused kernel (Adam reads w, g, m, v
            and writes w, m, v: 28 bytes per float32 weight); False: PyTorch 2.x's default
            ``foreach`` Adam(W), eight multi-tensor passes over all the weights (80 bytes per weight).
        kernel_floor_s: the shortest time one of the framework's kernels holds the GPU (launch, grid
            ramp-up and drain), whatever little work it does; 0: the roofline alone.
        fused_loss: the loss's log-softmax is fused into the cross-entropy (XLA), so the float32
            log-probabilities beside the logits are never kept for the backward; False: PyTorch's
            ``cross_entropy`` saves ``log_softmax``'s output.
        step_cycles: host CPU cycles to dispatch one whole compiled step (a jitted function's call:
            its arguments checked and the executable launched), paid once per step before its first
            op; 0 for frameworks that pay per operator instead.
        decode_share: share of the memory bandwidth a serving engine's decode-step matrix kernels
            (batch-1 GEMVs, the LM head, attention over the cache) reach, against a library's
            streaming kernels (1); set per engine in ``stack.engines``.
        expert_share: further share for a mixture of experts' expert kernels in a decode step (an
            engine that gathers each token's experts by index before its products).
        weight_only_share: ``(format, share)`` pairs: further share for a weight-only quantised
            format's decode kernels (``int8-weight-only``, ``int4``), which dequantise every weight
            they load on the CUDA cores; a format not listed streams at the dense kernels' share.
        decode_in_flight_B: bytes of loads each core (SM) keeps in flight in the engine's decode
            matrix kernels, where their code caps it (``Access.core_in_flight_B``); 0: enough to
            reach the bandwidth.
        serve_step_cycles: host CPU cycles of a serving engine's work between two steps that the
            GPU waits for (scheduling the batch, launching the step); 0 where an overlap scheduler
            runs it under the previous step's kernels.
        serve_sequence_cycles: host CPU cycles of that work per sequence of the step (its request
            object scheduled, its token sampled, detokenised and streamed).
        serve_graph_max_batch: the largest decode batch the engine captured CUDA graphs for; a
            decode step of more sequences runs eagerly and pays ``serve_eager_step_cycles`` (0: no
            such bound: no step pays them).
        serve_eager_step_cycles: host CPU cycles the GPU waits for in an eager decode step (one of
            more than ``serve_graph_max_batch`` sequences): its kernels launched one by one.
        decode_attention_share: share of the memory bandwidth the engine's decode attention over the
            KV cache reaches, against the library's attention kernel (1); set per engine.
        serve_max_running: requests a serving engine runs at once by default (its
            ``max_running_requests`` / ``max_num_seqs``), ``llm_load``'s ``max_batch`` when not
            given; 0: the load's own default.
        serve_request_pool: ``(least, most)``: the engine sizes its request pool from its KV cache,
            ``KV tokens / context x 512`` clamped to ``[least, most]``, and runs at most that many
            requests and half its KV tokens (SGLang's ``req_to_token_pool``, ``max_running_requests``:
            ``running_limit``); empty: no such rule.
        overlap_schedule: the engine schedules step k + 1 while step k runs (SGLang's overlap
            scheduler): a request that arrives is seen by a scheduling pass that starts after it, so
            it joins the step after the one already launched; and the host's work on step k's
            sequences runs under step k + 1's kernels, except the first 5 ms of it (the launching
            thread waits that long for the interpreter lock), so a decode step under load takes
            about the longer of its GPU time and that work, not their sum
            (``methods.serving.steps.ModelSteps.engine_decode_s``).
        serve_admission: how a serving engine admits requests under load
            (``methods.serving.config``): ``prompt`` when a request's prompt fits, preempting the
            latest admitted when a decode runs out of room (vLLM); ``reserve`` when the outputs of
            every running request still fit ahead of it, retracting to the back of the queue
            otherwise (SGLang: ``methods.serving.reserve``).
        static_memory: ``(gpus, fraction)`` pairs, by tensor-parallel GPUs at least: the share of
            each GPU's memory a serving engine keeps for its weights and KV cache, its cache being
            that share less the weights (SGLang's ``mem_fraction_static``: the rest stays free for
            activations and CUDA graphs, whatever the step needs); empty: the cache takes the room
            the runtime, the largest step's activations and workspace leave (vLLM's profiling).
        request_cycles: host CPU cycles of a serving engine's own work per request outside the
            steps (HTTP, tokenising the prompt, admitting the request, streaming the first token),
            part of the request's time to first token.
        scaler_sync: float16 training scales the loss (PyTorch's ``GradScaler``): one multi-tensor
            pass unscales the gradients and checks them for overflow, then the host reads the flag
            back (``.item()``) before it issues the optimizer's step, so that step's launches wait
            for the whole backward pass and the GPU waits for them.
        call_cycles: host CPU cycles of one generate() call of an engine's offline runtime outside
            its kernels (its buffers set up, the prompt copied in, the sampling layer set up, the
            first token synchronised back), part of ``llm_serve``'s time to first token.
    """

    id: str = attrs.field(validator=text)
    name: str = attrs.field(validator=text)
    op_cycles: float = attrs.field(validator=non_negative)
    launch_share: float = attrs.field(validator=fraction)
    autocast: bool = attrs.field(default=True, validator=boolean)
    compiles: bool = attrs.field(default=False, validator=boolean)
    cpu_library: str = attrs.field(default="onednn", validator=text)
    layout: str = attrs.field(default="nchw", validator=one_of(("nchw", "nhwc")))
    primitive_cycles: float = attrs.field(default=0.0, validator=non_negative)
    primitive_layers: bool = attrs.field(default=False, validator=boolean)
    kv_cache_concat: bool = attrs.field(default=False, validator=boolean)
    kernel_floor_s: float = attrs.field(default=0.0, validator=within(0.0, 1e-3))
    fused_optimizer: bool = attrs.field(default=True, validator=boolean)
    step_cycles: float = attrs.field(default=0.0, validator=non_negative)
    fused_loss: bool = attrs.field(default=False, validator=boolean)
    decode_share: float = attrs.field(default=1.0, validator=within(0.0, 1.0, low_open=True))
    expert_share: float = attrs.field(default=1.0, validator=within(0.0, 1.0, low_open=True))
    weight_only_share: tuple[tuple[str, float], ...] = attrs.field(default=())
    decode_in_flight_B: float = attrs.field(default=0.0, validator=non_negative)
    serve_step_cycles: float = attrs.field(default=0.0, validator=non_negative)
    serve_sequence_cycles: float = attrs.field(default=0.0, validator=non_negative)
    serve_graph_max_batch: int = attrs.field(default=0, validator=non_negative_int)
    serve_eager_step_cycles: float = attrs.field(default=0.0, validator=non_negative)
    decode_attention_share: float = attrs.field(default=1.0, validator=within(0.0, 1.0, low_open=True))
    request_cycles: float = attrs.field(default=0.0, validator=non_negative)
    serve_max_running: int = attrs.field(default=0, validator=non_negative_int)
    serve_request_pool: tuple[int, ...] = attrs.field(default=())
    overlap_schedule: bool = attrs.field(default=False, validator=boolean)
    serve_admission: str = attrs.field(default="prompt", validator=one_of(("prompt", "reserve")))
    static_memory: tuple[tuple[int, float], ...] = attrs.field(default=())
    call_cycles: float = attrs.field(default=0.0, validator=non_negative)
    scaler_sync: bool = attrs.field(default=False, validator=boolean)

    def decode_bandwidth_share(self, expert: bool, weights: str) -> float:
        """The memory-bandwidth share of one of this engine's decode matrix kernels: an expert's
        (``expert``) or not, its weights in ``weights`` (``dtype`` or a quantised format)."""
        share = self.decode_share * (self.expert_share if expert else 1.0)
        return share * dict(self.weight_only_share).get(weights, 1.0)

    @property
    def shapes_decode(self) -> bool:
        """Whether the engine's decode kernels differ from a library's streaming ones."""
        shares = (
            self.decode_share,
            self.expert_share,
            self.decode_attention_share,
            *dict(self.weight_only_share).values(),
        )
        return any(share != 1.0 for share in shares) or self.decode_in_flight_B > 0

    @property
    def serves(self) -> bool:
        """Whether the engine's host works between steps (``serve_step_cycles`` or per sequence)."""
        return bool(self.serve_step_cycles or self.serve_sequence_cycles)

    def serve_step_s(self, host_clock_Hz: float, sequences: int = 1) -> float:
        """Host seconds between two serving steps of ``sequences`` that the GPU waits for, at
        ``host_clock_Hz``."""
        return (self.serve_step_cycles + self.serve_sequence_cycles * sequences) / host_clock_Hz

    @static_memory.validator
    def _check_static_memory(
        self, attribute: attrs.Attribute[tuple[tuple[int, float], ...]], value: tuple[tuple[int, float], ...]
    ) -> None:
        for gpus, share in value:
            if not (isinstance(gpus, int) and gpus >= 1 and 0.0 < share <= 1.0):
                raise ValueError(f"'static_memory' must hold (gpus >= 1, 0 < fraction <= 1) pairs: {value!r}")

    @serve_request_pool.validator
    def _check_request_pool(
        self, attribute: attrs.Attribute[tuple[int, ...]], value: tuple[int, ...]
    ) -> None:
        pair = len(value) == 2 and all(isinstance(n, int) for n in value)
        if value and not (pair and 0 < value[0] <= value[1]):
            raise ParsimError(
                f"'serve_request_pool' must be () or (least, most) with 0 < least <= most: {value!r}"
            )

    def running_limit(self, max_batch: int, kv_tokens: int, context: int) -> int:
        """The requests the engine runs at once, at most: ``max_batch``, bounded by its request pool
        (``serve_request_pool``) on a KV cache of ``kv_tokens`` for a model of ``context`` tokens."""
        if not self.serve_request_pool:
            return max_batch
        least, most = self.serve_request_pool
        pool = min(max(int(kv_tokens / context * 512), least), most)
        return max(1, min(max_batch, pool, kv_tokens // 2))

    def static_memory_fraction(self, gpus: int) -> float | None:
        """The share of each GPU's memory the engine keeps for its weights and KV cache when it
        serves on ``gpus`` tensor-parallel GPUs (``static_memory``), or None where it sets none."""
        shares = [share for least, share in sorted(self.static_memory) if least <= gpus]
        return shares[-1] if shares else None

    def eager_step_s(self, host_clock_Hz: float, sequences: int) -> float:
        """Host seconds the GPU waits for in a decode step of ``sequences`` that runs eagerly (more
        than ``serve_graph_max_batch``), at ``host_clock_Hz``; 0 for a graph step."""
        eager = self.serve_graph_max_batch and sequences > self.serve_graph_max_batch
        return self.serve_eager_step_cycles / host_clock_Hz if eager else 0.0

    def request_s(self, host_clock_Hz: float) -> float:
        """Host seconds of per-request serving work in the time to first token, at ``host_clock_Hz``."""
        return self.request_cycles / host_clock_Hz

    def call_s(self, host_clock_Hz: float) -> float:
        """Host seconds of one offline generate() call outside its kernels, at ``host_clock_Hz``."""
        return self.call_cycles / host_clock_Hz

    def step_host_s(self, host_clock_Hz: float) -> float:
        """Host seconds to dispatch one compiled step at ``host_clock_Hz``."""
        return self.step_cycles / host_clock_Hz

    def op_host_s(self, host_clock_Hz: float, primitive: bool = False) -> float:
        """Host seconds per operator (``primitive``: per primitive op inside one) at ``host_clock_Hz``."""
        return (self.primitive_cycles if primitive else self.op_cycles) / host_clock_Hz

    def floor(self, seconds: float, multi_tensor: bool = False) -> float:
        """A kernel's time on the GPU: at least the framework's floor, unless it is one tensor's share
        of a multi-tensor launch (``Issue.multi_tensor``)."""
        return seconds if multi_tensor else max(seconds, self.kernel_floor_s)


PassShares = tuple[tuple[str, float], ...]
"""``(pass, share)`` pairs: a convolution pass's share of the rate (``backward_conv_efficiency``)."""


@attrs.frozen(cache_hash=True)
class LibrarySpec:
    """How a kernel library runs convolutions and matrix products.

    Attributes:
        id: ``cudnn`` (cuDNN + cuBLAS on NVIDIA GPUs) or ``onednn`` (oneDNN/MKL on CPUs).
        name: what it stands for.
        winograd_reduction: multiplies saved by Winograd on 3x3 stride-1 convolutions.
        fft_min_filter: smallest filter edge for which FFT convolution is a candidate.
        fft_efficiency: share of the vector rate an FFT convolution's arithmetic reaches (its
            transforms and its batched complex products of small matrices, one per frequency).
        gemm_tiles: output tiles (rows, columns) the GEMM heuristic chooses from; empty keeps the
            processor's own ``matmul_tile``.
        conv_efficiency: share of the processor's GEMM rate (``matmul_efficiency``) that
            framework convolutions reach through this library.
        matrix_conv_efficiency: ``(format, share)`` pairs that replace ``conv_efficiency`` for
            convolutions on the matrix units in that format (cuDNN's TF32 kernels reach far less of
            the TF32 peak than its float16 ones).
        attention_efficiency: ``(kind, share)`` pairs: the share of the processor's GEMM rate that
            fused attention kernels of that kind (``flash``, ``flash-v1``: both products and the
            softmax in one kernel) reach; a kind not listed runs at the full GEMM rate.
        legacy_attention: the fused attention kinds whose kernels use the previous generation's
            matrix instructions on a chip that has newer ones (FlashAttention 1 was written for
            Ampere): on it they reach ``ProcessorSpec.legacy_mma_share`` of their share.
        gemm_overlap_norm: how a GEMM's compute and operand streaming add up: ``p`` of the smooth
            roofline ``(compute^p + memory^p)^(1/p)``; None is the plain max. A tile's main loop
            cannot keep both the matrix units and the loads busy when neither clearly dominates (a
            product near the ridge point, such as an LLM prefill of a few hundred tokens).
        runtime_B: device memory a framework process holds before its tensors (the CUDA context,
            cuDNN and cuBLAS handles and their workspaces); 0 on a CPU.
        folds: a compiled inference graph's foldable ops (batch norm, ReLU) vanish into the
            convolutions (``LibraryHints.foldable``).
        blocked_weights: convolutions compute on weights in a blocked layout, so the plain weights
            of an eager call are re-laid out every time: read and written once more.
        fuses_elementwise: the compiler fuses an element-wise op on a product's output into the
            product (``model.fusion``): no separate pass over memory.
        per_image_half_pixels: a library that runs a convolution as one BLAS GEMM per image (Torch7's
            THNN: im2col and ``addmm`` per frame) gets the image's output pixels (H x W) as the
            product's short side; the call's fixed work (packing the weight panel, edge tiles,
            the threads' join) is spread over them, so the convolution reaches
            ``pixels / (pixels + per_image_half_pixels)`` of ``conv_efficiency``: half at this many
            pixels. 0: one product over the whole batch (oneDNN, cuDNN).
        batch_half_pixels: a library whose direct convolution spreads one call over the whole
            batch's output pixels (oneDNN's JIT kernels: threads over images, channel blocks and
            rows, registers over a row's pixels) pays a fixed share per call (the weight blocks each
            thread loads, the threads' join): it reaches ``m / (m + batch_half_pixels)`` of
            ``conv_efficiency``, ``m`` = images x output pixels. Felt at batch 1 on small late-stage
            feature maps (7 x 7 = 49 pixels), not at training batches. 0: no such share.
        backward_conv_efficiency: ``(pass, share)`` pairs: a convolution's backward passes (``dgrad``:
            the gradient with respect to the input, ``wgrad``: with respect to the weights) reach this
            share of the rate its forward pass reaches on the same shape (the library's backward
            kernels are fewer and less tuned: strided and small-map data gradients, weight gradients
            reduced over every pixel of the batch); a pass not listed runs at the forward's rate.
        transpose_int_ops: 32-bit integer instructions per element of the layout transposes the
            library launches around a convolution on NCHW activations (cuDNN's ``nchwToNhwcKernel``
            and ``nhwcToNchwKernel``): each element's address in the other layout is computed with
            divisions and remainders by the tensor's dimensions, which a GPU has no integer divider
            for; where the device's integer rate (``int_per_core_per_cycle``) issues them slower
            than its memory streams the bytes, the transposes are bound by it. 0: not modelled.
        serial_sign_test_cycles: a library whose ReLU is a scalar loop on one thread that branches
            on each element's sign (Torch7's THNN ``Threshold``: a ``TH_TENSOR_APPLY`` of
            ``if (x <= 0) x = 0``, no OpenMP) pays these cycles per element on one core: on
            activations of random sign the branch predictor misses about every second test.
            0: a vectorised, threaded ReLU (a max; the memory stream bounds it).
    """

    id: str = attrs.field(validator=text)
    name: str = attrs.field(validator=text)
    winograd_reduction: float = attrs.field(default=1.0, validator=positive)
    fft_min_filter: int = attrs.field(default=0)
    fft_efficiency: float = attrs.field(default=1.0, validator=within(0.0, 1.0, low_open=True))
    gemm_tiles: tuple[tuple[int, int], ...] = attrs.field(default=())
    conv_efficiency: float = attrs.field(default=1.0, validator=fraction)
    matrix_conv_efficiency: tuple[tuple[str, float], ...] = attrs.field(default=())
    attention_efficiency: tuple[tuple[str, float], ...] = attrs.field(default=())
    legacy_attention: tuple[str, ...] = attrs.field(default=())
    gemm_overlap_norm: float | None = attrs.field(
        default=None, validator=attrs.validators.optional(within(1.0, 64.0))
    )

    def attention_share(self, kind: str) -> float:
        """The share of the GEMM rate a fused attention kernel of ``kind`` reaches."""
        return dict(self.attention_efficiency).get(kind, 1.0)

    runtime_B: float = attrs.field(default=0.0, validator=non_negative)
    folds: bool = attrs.field(default=False, validator=boolean)
    blocked_weights: bool = attrs.field(default=False, validator=boolean)
    fuses_elementwise: bool = attrs.field(default=False, validator=boolean)
    per_image_half_pixels: float = attrs.field(default=0.0, validator=non_negative)
    batch_half_pixels: float = attrs.field(default=0.0, validator=non_negative)
    serial_sign_test_cycles: float = attrs.field(default=0.0, validator=non_negative)
    transpose_int_ops: float = attrs.field(default=0.0, validator=non_negative)
    backward_conv_efficiency: PassShares = attrs.field(default=())

    @backward_conv_efficiency.validator
    def _backward_passes(self, attribute: attrs.Attribute[PassShares], value: PassShares) -> None:
        passes = attrs.Attribute.evolve(attribute, name=f"{attribute.name} pass")
        for pass_, share in value:
            one_of(("dgrad", "wgrad"))(self, passes, pass_)
            fraction(self, attribute, share)

    def conv_share(
        self, matrix_format: str | None, pixels: float = 0.0, images: float = 1.0, pass_: str = "fwd"
    ) -> float:
        """Share of the GEMM rate a convolution's ``pass_`` (``fwd``, ``dgrad`` or ``wgrad``) reaches
        (``matrix_format``: None off the matrix units) over ``images`` images of ``pixels`` output
        pixels each (0: not known, the full share)."""
        share = dict(self.matrix_conv_efficiency).get(matrix_format or "", self.conv_efficiency)
        share *= dict(self.backward_conv_efficiency).get(pass_, 1.0)
        if self.per_image_half_pixels and pixels > 0:
            share *= pixels / (pixels + self.per_image_half_pixels)
        if self.batch_half_pixels and pixels > 0:
            share *= images * pixels / (images * pixels + self.batch_half_pixels)
        return share
