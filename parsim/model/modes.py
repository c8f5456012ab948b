"""Flynn's taxonomy as ways of driving one chip.

- ``sisd``: one core, one lane. On a CPU this is the one-element-at-a-time interpreter loop of
  the classroom demo, so each element pays ``interpreted_element_s`` per Python operation.
- ``simd``: one core, all of its vector lanes (NumPy on one thread).
- ``mimd``: every core, one lane each (scalar threads).
- ``mimd+simd``: every core with all its lanes (a real multicore CPU; the CPU default).
- ``simt``: a GPU's SMs running warps of 32 lanes in lockstep (the GPU default).

A TPU's TensorCores are VLIW cores driving a vector unit (and matrix units fed by it): its default
is ``mimd+simd``, every TensorCore with all its lanes; ``simt`` is a GPU's alone.
"""

from __future__ import annotations

from parsim.base.choices import MODES, Mode
from parsim.base.errors import ParsimError
from parsim.hardware.specs import ProcessorSpec

__all__ = ["MODES", "Mode", "busy_cores", "check_mode", "default_mode", "lanes", "modes_for"]


def default_mode(spec: ProcessorSpec) -> str:
    """``simt`` on a GPU, ``mimd+simd`` on a CPU or a TPU."""
    return "simt" if spec.is_gpu else "mimd+simd"


def modes_for(spec: ProcessorSpec) -> list[str]:
    """The modes ``spec`` can run, in taxonomy order (``simt`` only on a GPU, where it comes first)."""
    if spec.is_gpu:
        return ["simt", *(mode for mode in MODES if mode != "simt")]
    return [mode for mode in MODES if mode != "simt"]


def check_mode(spec: ProcessorSpec, mode: str | None) -> str:
    """Return the mode to use on ``spec``; ``None`` picks the default.

    Raises:
        ParsimError: an unknown mode, or ``simt`` on a CPU.
    """
    if mode is None:
        return default_mode(spec)
    if mode not in MODES:
        raise ParsimError(f"'mode' must be one of {', '.join(MODES)}: {mode!r}")
    if mode == "simt" and not spec.is_gpu:
        raise ParsimError(
            f"'mode' simt needs a GPU; {spec.id} is a {spec.kind.upper()} (use sisd, simd, mimd or mimd+simd)"
        )
    return mode


def busy_cores(spec: ProcessorSpec, mode: str) -> int:
    """Cores a mode keeps busy: one for ``sisd`` and ``simd``, all of them otherwise."""
    return 1 if mode in ("sisd", "simd") else spec.cores


def lanes(spec: ProcessorSpec, mode: str) -> int:
    """Lanes used on each busy core: one for ``sisd`` and ``mimd``, all of them otherwise."""
    return 1 if mode in ("sisd", "mimd") else spec.lanes_per_core
