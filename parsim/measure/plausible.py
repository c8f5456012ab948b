"""What a machine can physically do: the bounds a calibration figure must respect.

Calibration turns timings into figures, often by subtracting a measured overhead (a call's fixed
cost, a fork/join) from a measured total. When the overhead is most of the total, what is left is
mostly the two timings' noise: 4.5 MB "moved" in 1 ns, an op rate of 10^13 per second. Such a
figure is not slow or fast, it is impossible, and a model built on it predicts nonsense. So every
figure passes two checks before it is kept:

- the **net share**: the time left after the overhead is at least ``MIN_NET_SHARE`` of the timed
  total (below it, a few percent of spread in either timing is tens of percent of the net);
- a **ceiling**: the rate is below what the hardware can deliver (bytes or results per cycle at
  the highest clock any core reaches; for a GPU its memory's peak from the device properties);
  where a figure also has a **floor** (a transcendental takes far fewer than a thousand cycles on
  any core), a rate below it is a timer's overhead, not the machine.

A figure that fails is measured again (``ATTEMPTS`` times in all); if it still fails it is
dropped with a note (kept in the calibration's ``[meta]``), and if the spec cannot do without it,
calibration stops with ``unmeasurable``: one line saying what could not be measured and why.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from parsim.base.errors import ParsimError

MIN_NET_SHARE = 0.25
ATTEMPTS = 3

# CPU ceilings, deliberately above every shipping core, so that only impossible figures fail:
CLOCK_CEILING_HZ = 6.5e9  # no x86/Arm core boosts higher (Intel i9-14900KS: 6.2 GHz, 2024)
CORE_BYTES_PER_CYCLE = (
    256.0  # widest L1 data paths: 2-3 x 64 B loads + 1-2 x 64 B stores (Golden Cove, Zen 4)
)
CORE_RESULTS_PER_CYCLE = 64.0  # float32 results: two 512-bit pipes give 32 (AVX-512 FMA); x2 for margin
SPECIAL_FLOOR_PER_CYCLE = 1e-3  # an exp costs < 1,000 cycles on any core (glibc's expf: tens)
INTERPRETED_FLOOR_S = 1e-9  # one element of a CPython loop is several bytecodes: > 1 ns even at 6.5 GHz
GPU_LINK_LATENCY_FLOOR_S = 0.5e-6  # a DMA needs a PCIe read round trip: >= ~0.5 us (Neugebauer et al.,
# "Understanding PCIe performance for end host networking", SIGCOMM 2018: 64 B DMA reads 0.5-1 us)
GPU_LAUNCH_FLOOR_S = 1e-6  # a cudaLaunchKernel through the driver takes >= ~2 us on any host; half that

# GPU ceilings where the device properties do not give the figure:
GPU_MEMORY_CEILING_BPS = 10e12  # no GPU memory is faster (B200's HBM3e: 8 TB/s)
TENSOR_OVER_VECTOR = 32.0  # tensor cores reach < 32x the FP32 vector peak (B200 dense FP16 2.25 PF / 80 TF)
LINK_CEILING_BPS = 450e9  # the fastest host<->GPU link per direction (NVLink-C2C on GH200: 450 GB/s)

Figure = TypeVar("Figure")  # what one try measures: a number, or a table of them


def net_s(total_s: float, overhead_s: float) -> float | str:
    """The time left after ``overhead_s``, or why it is not a measurement (a vanishing share)."""
    net = total_s - overhead_s
    if net < MIN_NET_SHARE * total_s:
        return (
            f"the overhead ({overhead_s * 1e6:.3g} us) took {1 - net / total_s:.0%} of the timed "
            f"{total_s * 1e6:.3g} us"
        )
    return net


def rate(amount: float, seconds: float | str, ceiling: float, unit: str, floor: float = 0.0) -> float | str:
    """``amount / seconds`` if between ``floor`` and ``ceiling``; else (or if ``seconds`` is a
    reason) why not."""
    if isinstance(seconds, str):
        return seconds
    if seconds <= 0:
        return f"a time of {seconds:.3g} s"
    value = amount / seconds
    if value > ceiling:
        return f"{value:.3g} {unit} is above what the hardware can do ({ceiling:.3g} {unit})"
    if value < floor:
        return f"{value:.3g} {unit} is below what any core does ({floor:.3g} {unit})"
    return value


def measured(attempt: Callable[[], Figure | str], attempts: int = ATTEMPTS) -> Figure | str:
    """The first plausible figure of up to ``attempts`` tries, else the last try's reason."""
    outcome: Figure | str = "not measured"
    for _ in range(attempts):
        outcome = attempt()
        if not isinstance(outcome, str):
            return outcome
    return outcome


def unmeasurable(what: str, why: str) -> ParsimError:
    """The one-line error for a figure the spec needs and no try measured plausibly."""
    return ParsimError(
        f"calibration could not measure {what}: {why} (after {ATTEMPTS} tries); "
        "run it again on a quieter machine"
    )


def cpu_ceilings(lanes: int) -> dict[str, float]:
    """Per-core ceilings of a CPU: bytes/s and results/s (``lanes``: float32 SIMD lanes x pipes)."""
    return {
        "bytes_per_s": CORE_BYTES_PER_CYCLE * CLOCK_CEILING_HZ,
        "results_per_s": CORE_RESULTS_PER_CYCLE * CLOCK_CEILING_HZ,
        "flops_per_s": 2.0 * max(lanes, CORE_RESULTS_PER_CYCLE / 2) * CLOCK_CEILING_HZ,
    }


def gpu_memory_peak_Bps(properties: dict) -> float | None:
    """A GPU memory's peak from its device properties: 2 transfers per clock (DDR) x the bus width,
    or None where the properties do not say (``memoryClockRate`` is in kHz, the width in bits)."""
    clock_kHz, width_bits = properties.get("memoryClockRate"), properties.get("memoryBusWidth")
    if not clock_kHz or not width_bits:
        return None
    return 2.0 * float(clock_kHz) * 1e3 * float(width_bits) / 8.0
