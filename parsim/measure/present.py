"""Which GPU is here, and which spec predicts what it measures: one decision for every front end.

A CuPy measurement is only worth showing beside a prediction of the chip that ran it: an H100's
time beside a V100's prediction compares two chips, not the model with the machine. So the CLI,
the Measure page and the lessons' "Measure it here" all ask ``present_gpu`` and predict with what
it answers, naming it ("predicted for h100-sxm (matched NVIDIA H100 80GB HBM3)"). Like a doctor
reading a patient's own chart before a textbook, it takes the most specific record first:

1. this GPU's own calibration, ``this-machine-gpu.toml`` (and ``-link.toml``) that ``parsim
   calibrate`` wrote in the working directory for this very device (its name and SM count);
2. the preset whose rule matches what CUDA reports: a name pattern *and* the preset's SM count
   *and* its memory within 10 % (what CUDA reports is what is left after the driver's and ECC's
   share). The three together keep a GTX 1080 Ti off the GTX 1080 (28 SMs, not 20), an H100 NVL
   off the H100 SXM (94 GB), a 32 GB V100 off the 16 GB preset;
3. a quick calibration made now (seconds), when the GPU is unknown: kept for the caller, never
   written anywhere the user did not name.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import attrs

from parsim.base.errors import ParsimError
from parsim.base.paths import CALIBRATION, gpu_calibration
from parsim.hardware.specs import LinkSpec, ProcessorSpec

MEMORY_TOLERANCE = 0.10
"""How far CUDA's total memory may sit from a preset's: it reports what the driver leaves (an H100
80GB HBM3 reports 79.2 GiB of 80, a K80 die with ECC 11.2 of 12, an H200 140.4 GiB of its
"141 GB"), while the next memory size of the same chip is at least 17 % away (H100 NVL 94 GB)."""

NAME_PATTERNS = {
    # cudaDeviceProp.name as drivers report it (case ignored; older drivers omit "NVIDIA ")
    "gtx-980": r"(NVIDIA )?GeForce GTX 980",
    "gtx-1080": r"(NVIDIA )?GeForce GTX 1080",
    "k80": r"(NVIDIA )?Tesla K80",
    "t4": r"(NVIDIA )?(Tesla )?T4",
    "v100-pcie": r"(NVIDIA )?Tesla V100-PCIE-\d+GB",  # not V100S (faster memory and clock)
    "v100-sxm2": r"(NVIDIA )?Tesla V100-SXM2-\d+GB",
    "a100-40gb": r"NVIDIA A100-SXM4-40GB",  # the presets are SXM4 boards (400 W, not PCIe's 250 W)
    "a100-80gb": r"NVIDIA A100-SXM4-80GB",
    "h100-pcie": r"NVIDIA H100 PCIe",
    "h100-sxm": r"NVIDIA H100 80GB HBM3",  # the SXM5 board (H100 NVL and GH200 have their own names)
    "h200": r"NVIDIA H200",  # the SXM board (H200 NVL is named so, and runs at 600 W)
    "rtx-4090": r"NVIDIA GeForce RTX 4090",  # the 4090 D is named so (114 SMs)
    # the current GPUs of presets_gpu_current.py, as nvidia-smi and deviceQuery logs name them
    "b200": r"NVIDIA B200",
    "gb200": r"NVIDIA GB200",
    "h100-nvl": r"NVIDIA H100 NVL",
    "a100-pcie-40gb": r"NVIDIA A100-PCIE-40GB",
    "a100-pcie-80gb": r"NVIDIA A100 80GB PCIe",
    "l40s": r"NVIDIA L40S",  # not the L40 (same AD102, 142 SMs, slower tensor rate)
    "a10g": r"NVIDIA A10G",  # AWS's variant; the A10 is named so
    "l4": r"NVIDIA L4",
    "rtx-3090": r"NVIDIA GeForce RTX 3090",  # the 3090 Ti has 84 SMs
    "rtx-a6000": r"NVIDIA RTX A6000",  # not the RTX 6000 Ada Generation
    # hipDeviceProp_t.name on ROCm (rocminfo's "Marketing Name"); "VF" in a virtual machine (Azure's)
    "mi300x": r"AMD Instinct MI300X( VF)?",  # not MI300A/MI325X; a CPX partition shows 38 CUs
    "mi250x": r"AMD Instinct MI250X(/MI250)?",  # one GCD; a plain MI250 GCD has 104 CUs
}
"""One CUDA/HIP name pattern per GPU preset that a runtime reports as one device (tests check that
every other GPU preset is in ``UNREPORTED``)."""

UNREPORTED = frozenset({"mi250x-module"})
"""GPU presets no runtime shows as one device: ROCm shows an MI250X's two GCDs as two GPUs."""


@attrs.frozen
class Identity:
    """What CUDA says about the present GPU."""

    name: str
    sms: int
    memory_B: float
    clock_Hz: float = 0.0
    capability: str = ""
    platform: str = "cuda"

    def describe(self) -> str:
        cores = "CUs" if self.platform == "rocm" else "SMs"  # HIP's multiProcessorCount counts CUs
        return f"{self.name}, {self.sms} {cores}, {self.memory_B / 2**30:.1f} GiB"


@attrs.frozen
class PresentGpu:
    """The spec that predicts the present GPU, and how it was chosen.

    Attributes:
        identity: what CUDA reports.
        device: the GPU's spec (a preset or a calibration).
        host: this machine's calibrated CPU when there is one (else predict's default host).
        link: the calibrated host link when there is one (else the GPU's usual link).
        how: ``calibration`` (this machine's file), ``preset`` (matched) or ``calibrated now``.
        note: why a calibration file present was not used ("" when none was).
    """

    identity: Identity
    device: ProcessorSpec
    host: ProcessorSpec | None
    link: LinkSpec | None
    how: str
    note: str = ""

    @property
    def label(self) -> str:
        """Which spec predicts, in words to print beside a prediction."""
        if self.how == "preset":
            return f"predicted for {self.device.id} (matched {self.identity.name})"
        if self.how == "calibration":
            return f"predicted for {self.identity.name}, calibrated on this machine"
        return f"predicted for {self.identity.name}, calibrated on this machine just now (quick, not saved)"

    def predict(self, workload: str, params: dict):
        """``parsim.predict`` of ``workload`` on this GPU (with the calibrated host and link if any)."""
        from parsim.methods.predict import predict

        return predict(workload, params, device=self.device, host=self.host, link=self.link)


def identify(cupy=None) -> Identity:
    """The present GPU as CUDA or ROCm reports it (``getDeviceProperties`` of the current device)."""
    from parsim.measure.backends import CupyBackend, platform_of

    if cupy is None:
        cupy = CupyBackend().xp
    properties = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    name = properties["name"]
    return Identity(
        name=(name.decode() if isinstance(name, bytes) else str(name)).strip(),
        sms=int(properties["multiProcessorCount"]),
        memory_B=float(properties["totalGlobalMem"]),
        clock_Hz=float(properties.get("clockRate", 0)) * 1e3,
        capability=f"{properties.get('major', '?')}.{properties.get('minor', '?')}",
        platform=platform_of(cupy),
    )


def match_preset(identity: Identity) -> str | None:
    """The GPU preset whose name pattern, SM count and memory all fit ``identity``, or None."""
    from parsim.hardware.presets import PROCESSORS

    found = [
        preset
        for preset, pattern in NAME_PATTERNS.items()
        if re.fullmatch(pattern, identity.name, re.IGNORECASE)
        and PROCESSORS[preset].cores == identity.sms
        and abs(identity.memory_B / PROCESSORS[preset].memory.capacity_B - 1) <= MEMORY_TOLERANCE
    ]
    return found[0] if len(found) == 1 else None


def present_gpu(
    folder: str | Path = ".",
    calibrate: Callable[[], tuple[ProcessorSpec, LinkSpec]] | None = None,
    cupy=None,
    tell: Callable[[str], None] | None = None,
) -> PresentGpu:
    """The spec that predicts the present GPU: its calibration, its preset, or one measured now.

    Args:
        folder: where ``parsim calibrate``'s files are looked for (the working directory).
        calibrate: measures an unknown GPU and returns ``(device, link)`` (default: the quick
            ``calibrate_gpu``); called only when neither a calibration nor a preset fits.
        cupy: the CuPy module (default: imported, checking that a GPU is there).
        tell: told in one line before an unknown GPU is calibrated (it takes seconds).

    Raises:
        ParsimError: no GPU here, or an unknown GPU whose calibration failed (one line).
    """
    identity = identify(cupy)
    cpu_file = Path(folder) / CALIBRATION
    device_file, link_file = gpu_calibration(cpu_file)
    host = _spec(cpu_file, ProcessorSpec)
    host = host if host is not None and host.kind == "cpu" else None
    calibrated, note = _calibration_of(identity, device_file)
    if calibrated is not None:
        return PresentGpu(identity, calibrated, host, _spec(link_file, LinkSpec), "calibration")
    preset = match_preset(identity)
    if preset is not None:
        from parsim.hardware.presets import PROCESSORS

        return PresentGpu(identity, PROCESSORS[preset], None, None, "preset", note)
    if calibrate is None:
        from parsim.measure.gpu_calibrate import calibrate_gpu

        def calibrate():
            device, link, _raw = calibrate_gpu(quick=True)
            return device, link

    if tell is not None:
        tell(f"{identity.describe()} matches no preset and has no calibration here: calibrating it (quick)")
    try:
        device, link = calibrate()
    except ParsimError as exc:
        raise ParsimError(f"{identity.name} matches no preset, and calibrating it failed: {exc}") from None
    return PresentGpu(identity, device, host, link, "calibrated now", note)


def _calibration_of(identity: Identity, path: Path) -> tuple[ProcessorSpec | None, str]:
    """The calibrated spec in ``path`` if it describes this GPU; else None and why (or "" if no file)."""
    if not path.is_file():
        return None, ""
    spec = _spec(path, ProcessorSpec)
    if spec is None or spec.kind != "gpu":
        return None, f"{path} is not a GPU calibration parsim can read"
    if spec.name != f"{identity.name} (calibrated)" or spec.cores != identity.sms:
        return None, f"{path} describes another GPU ({spec.name}, {spec.cores} SMs)"
    return spec, ""


def _spec(path: Path, kind: type):
    """The hardware in ``path`` when it is a readable file of ``kind``; else None."""
    from parsim.hardware.tomlio import load_hardware

    if not path.is_file():
        return None
    try:
        spec = load_hardware(path)
    except (ParsimError, OSError):
        return None
    return spec if isinstance(spec, kind) else None
