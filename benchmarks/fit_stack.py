"""Fit the software stack's free parameters, each once, against the published measurements.

Two kinds of parameters no datasheet gives:

- each framework's host cycles per operator (``FrameworkSpec.op_cycles``), from the batch-1
  inference rows it ran: there the GPU idles behind the host (ResNet-50 runs ~160 operators
  per image), so these rows measure the framework's per-operator cost and little else;
- TensorFlow 1's host cycles per ``Session.run`` step (``FrameworkSpec.step_cycles`` of ``tf1``),
  from every TF1 inference row (batch 1 to 256): the fetch blocks, so each step is that host time
  and then the GPU's; likewise MXNet's with CUDA graphs (``mxnet-cuda-graph``: DeepLearningExamples'
  22.10 runner), from its inference rows;
- cuDNN's share of the TF32 tensor-core rate on convolutions
  (``LibrarySpec.matrix_conv_efficiency``), from the float32 (TF32) training rows on Ampere;
- oneDNN's share of the CPU's GEMM rate on convolutions (``LibrarySpec.conv_efficiency``), from
  the modern-CPU inference rows; and Torch7's own CPU backend (THNN: its share and the output
  pixels of one image at which its per-image GEMM reaches half of it) from its CPU rows, with its
  serial ReLU's cycles per element set from the core's branch-miss penalty, not fitted;
- FlashAttention's share of the GEMM rate (``LibrarySpec.attention_efficiency``), from the
  transformer training rows that ran it;
- the integer instructions per element of cuDNN's NCHW <-> NHWC transposes
  (``LibrarySpec.transpose_int_ops``), from the 16-bit training and inference rows (those of
  NCHW networks run their convolutions between two transposes).

For each it scans the value, prints the MAPE of the rows it governs, and the best value, which
the presets in ``parsim/stack/presets.py`` take (rounded).

    python benchmarks/fit_stack.py
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import numpy

from parsim.base import caching
from parsim.stack import presets
from parsim.studies import published


def mape(rows: list[published.Row], install: Callable[[], Callable[[], None]]) -> float:
    """MAPE of ``rows`` with a patched preset (``install`` patches and returns the undo)."""
    undo = install()
    try:
        caching.clear_caches()
        return float(numpy.mean([abs(published.predicted(r) - r.value) / r.value for r in rows]))
    finally:
        undo()
        caching.clear_caches()


def framework_patch(name: str, op_cycles: float) -> Callable[[], Callable[[], None]]:
    def install() -> Callable[[], None]:
        original = presets.FRAMEWORKS[name]
        presets.FRAMEWORKS[name] = attrs.evolve(original, op_cycles=float(op_cycles))
        return lambda: presets.FRAMEWORKS.__setitem__(name, original)

    return install


def step_patch(name: str, step_cycles: float) -> Callable[[], Callable[[], None]]:
    """Patch framework ``name``'s host cycles per step (``FrameworkSpec.step_cycles``)."""

    def install() -> Callable[[], None]:
        original = presets.FRAMEWORKS[name]
        presets.FRAMEWORKS[name] = attrs.evolve(original, step_cycles=float(step_cycles))
        return lambda: presets.FRAMEWORKS.__setitem__(name, original)

    return install


def preset_patch(attribute: str, **changes: object) -> Callable[[], Callable[[], None]]:
    """Patch the library preset ``presets.<attribute>`` with ``changes`` (returns the undo)."""

    def install() -> Callable[[], None]:
        original = getattr(presets, attribute)
        patched = attrs.evolve(original, **changes)
        # the tables ``library_for`` reads hold the preset itself: patch them too
        tables = [
            t
            for t in (
                presets.LIBRARIES,
                presets.CPU_LIBRARIES,
                presets.GPU_LIBRARIES,
                presets.STACK_GPU_LIBRARIES,
            )
            if original in t.values()
        ]

        def put(spec: object) -> None:
            setattr(presets, attribute, spec)
            for table in tables:
                for key in [k for k, v in table.items() if v is original or v is patched]:
                    table[key] = spec  # type: ignore[assignment]

        put(patched)
        return lambda: put(original)

    return install


def tf32_patch(share: float) -> Callable[[], Callable[[], None]]:
    return preset_patch("CUDNN", matrix_conv_efficiency=(("tf32", float(share)),))


def cudnn5_patch(share: float) -> Callable[[], Callable[[], None]]:
    return preset_patch("CUDNN5", conv_efficiency=float(share))


def torch7_gpu(rows) -> list[published.Row]:
    """The Lua Torch 7 rows on the GTX 1080 (cuDNN 5.1: training and inference)."""
    return [r for r in rows if r.params.get("framework") == "torch7" and r.device == "gtx-1080"]


def onednn_patch(share: float) -> Callable[[], Callable[[], None]]:
    return preset_patch("ONEDNN", conv_efficiency=min(1.0, float(share)))


def onednn_pixels_patch(half_pixels: float) -> Callable[[], Callable[[], None]]:
    """oneDNN's call over the batch: the images x output pixels a call needs for half the share."""
    return preset_patch("ONEDNN", batch_half_pixels=float(half_pixels))


def thnn_patch(share: float) -> Callable[[], Callable[[], None]]:
    return preset_patch("THNN", conv_efficiency=min(1.0, float(share)))


def thnn_pixels_patch(half_pixels: float) -> Callable[[], Callable[[], None]]:
    """THNN's per-image GEMM: the output pixels an image needs for half the convolution share."""
    return preset_patch("THNN", per_image_half_pixels=float(half_pixels))


def attention_patch(share: float) -> Callable[[], Callable[[], None]]:
    """FlashAttention v1's share; FlashAttention-2 is twice as fast ([FA2]: "around 2x")."""
    v1 = min(1.0, float(share))
    return preset_patch("CUDNN", attention_efficiency=(("flash-v1", v1), ("flash", min(1.0, 2 * v1))))


def fft_patch(share: float) -> Callable[[], Callable[[], None]]:
    """cuDNN's FFT convolutions: the share of the vector rate their arithmetic reaches."""
    return preset_patch("CUDNN", fft_efficiency=min(1.0, float(share)))


def fft_convolutions(rows) -> list[published.Row]:
    """The kernel rows of single convolutions cuDNN may run as FFT (a 5x5 or larger filter)."""
    return [r for r in rows if r.klass == "kernel" and r.workload == "conv2d" and r.params["kernel"] >= 5]


def best(values, rows, patch) -> tuple[float, float]:
    scores = {float(v): mape(rows, patch(v)) for v in values}
    value = min(scores, key=scores.__getitem__)
    return value, scores[value]


def transpose_patch(instructions: float) -> Callable[[], Callable[[], None]]:
    """cuDNN's NCHW <-> NHWC transposes: integer instructions per element."""
    return preset_patch("CUDNN", transpose_int_ops=float(instructions))


def half_precision_networks(rows) -> list[published.Row]:
    """The 16-bit training and inference rows: those whose NCHW convolutions run between transposes."""
    return [
        r
        for r in rows
        if r.klass in ("training", "inference") and r.params.get("dtype") in ("float16", "bfloat16")
    ]


def flash_training(rows) -> list[published.Row]:
    """The transformer training rows that ran FlashAttention v1 (``attention=flash-v1``)."""
    return [r for r in rows if r.klass == "transformer-training" and r.params.get("attention") == "flash-v1"]


def main() -> None:
    rows = published.load_rows()
    for name in ("eager",):

        def patch(value: float, name: str = name) -> Callable[[], Callable[[], None]]:
            return framework_patch(name, value)

        governed = [
            r
            for r in rows
            if r.klass == "inference" and r.params.get("batch") == 1 and r.params.get("framework") == name
        ]
        coarse, _ = best(numpy.arange(10_000, 260_001, 10_000), governed, patch)
        value, score = best(numpy.arange(coarse - 9_000, coarse + 9_001, 1_000), governed, patch)
        print(f"{name}: op_cycles {value:,.0f} -> MAPE {score:.1%} over {len(governed)} rows")
    governed = [r for r in rows if r.klass == "inference" and r.params.get("framework") == "tf1"]
    value, score = best(numpy.arange(6e6, 12.01e6, 0.5e6), governed, lambda v: step_patch("tf1", v))
    print(f"tf1: step_cycles {value:,.0f} -> MAPE {score:.1%} over {len(governed)} rows")
    governed = [r for r in rows if r.klass == "inference" and r.params.get("framework") == "mxnet-cuda-graph"]
    value, score = best(
        numpy.arange(0.0, 1.001e6, 50_000), governed, lambda v: step_patch("mxnet-cuda-graph", v)
    )
    print(f"mxnet-cuda-graph: step_cycles {value:,.0f} -> MAPE {score:.1%} over {len(governed)} rows")
    governed = [
        r
        for r in rows
        if r.klass == "training" and r.params.get("math") == "tf32" and r.workload == "network"
    ]
    value, score = best(numpy.arange(0.10, 1.001, 0.02), governed, tf32_patch)
    print(f"cudnn tf32 conv share: {value:.2f} -> MAPE {score:.1%} over {len(governed)} rows")
    governed = torch7_gpu(rows)
    value, score = best(numpy.arange(0.40, 1.001, 0.05), governed, cudnn5_patch)
    print(f"cudnn 5.1 conv share: {value:.2f} -> MAPE {score:.1%} over {len(governed)} rows")
    governed = [r for r in rows if r.klass == "cpu" and r.device in ("xeon-8480", "epyc-9654")]
    value, score = best(numpy.linspace(0.10, 1.0, 19), governed, onednn_patch)
    print(f"onednn conv share: {value:.2f} -> MAPE {score:.1%} over {len(governed)} rows")
    value, score = best(numpy.arange(50.0, 151.0, 10.0), governed, onednn_pixels_patch)
    print(f"onednn batch half pixels: {value:.0f} -> MAPE {score:.1%} over {len(governed)} rows")
    governed = flash_training(rows)
    value, score = best(numpy.linspace(0.10, 1.0, 46), governed, attention_patch)
    print(f"fused attention share: {value:.2f} -> MAPE {score:.1%} over {len(governed)} rows")
    governed = half_precision_networks(rows)
    value, score = best(numpy.arange(30.0, 81.0, 5.0), governed, transpose_patch)
    print(f"cudnn transpose int ops per element: {value:.0f} -> MAPE {score:.1%} over {len(governed)} rows")
    governed = fft_convolutions(rows)
    value, score = best(numpy.arange(0.2, 0.501, 0.05), governed, fft_patch)
    print(f"cudnn fft share: {value:.2f} -> MAPE {score:.1%} over {len(governed)} rows")
    governed = [r for r in rows if r.klass == "cpu" and r.params.get("framework") == "torch7"]
    value, score = best(numpy.arange(0.02, 0.501, 0.01), governed, thnn_patch)
    print(f"thnn conv share: {value:.2f} -> MAPE {score:.1%} over {len(governed)} rows")
    value, score = best(numpy.linspace(40.0, 800.0, 20), governed, thnn_pixels_patch)
    print(f"thnn per-image half pixels: {value:.0f} -> MAPE {score:.1%} over {len(governed)} rows")


if __name__ == "__main__":
    main()
