"""What ``tests/test_measure.py::test_gpu_calibration_latency_and_validation`` does on a GPU, kept.

Calibrates this machine's GPU, its host link and its CPU (quick), validates the quick grid on CuPy
with those specs and writes the report (``parsim validate --load`` reads it) and the raw
calibration to OUT, so a failing run can be read afterwards without the GPU.

    PYTHONPATH=. python benchmarks/gpu_calibrated.py OUT_DIR NAME
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from parsim.measure.calibrate import calibrate
from parsim.measure.gpu_calibrate import calibrate_gpu
from parsim.studies.validate import save_report, validate


def main(out: Path, name: str) -> None:
    device, link, raw = calibrate_gpu(quick=True)
    (out / f"{name}-calibration.json").write_text(json.dumps(raw, indent=1, default=str))
    cpu_spec, _ = calibrate(quick=True)
    report = validate(cpu_spec, {"device": device, "host": cpu_spec, "link": link}, backends=["cupy"])
    save_report(report, out / f"{name}-calibrated-quick.json")
    for cls, summary in report["classes"].items():
        print(f"{cls:<34} {summary}")
    print("overall", report["overall"])


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
