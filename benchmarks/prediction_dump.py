"""Every figure a speed change must keep to the bit, as JSON: diff the file of two checkouts.

Run: ``python benchmarks/prediction_dump.py OUT.json`` in each checkout, then ``cmp`` (or diff)
the two files. It holds each bench case's ``to_dict`` (engine and analytic, with and without
``detail``) and its trace (records' reprs, every float in full), a few more single kernels, and
the rows of the bench's ResNet-50 sweep and of a matmul sweep. The published rows are the other
half of the check: ``parsim validate --published --json`` (its ``created_at`` aside). A
figures-only prediction (``detail=False``) keeps no trace: compare those entries only between
checkouts that agree on that.
"""

from __future__ import annotations

import json
import sys

from bench_engine import CASES

import parsim
from parsim.methods.predict import clear_caches
from parsim.studies.sweeps.api import sweep

EXTRA = [
    ("matmul", {"m": 128, "n": 256, "k": 512}, {"device": "t4"}),
    ("matmul", {"m": 4096, "n": 4096, "k": 4096, "dtype": "float16"}, {"device": "a100-80gb"}),
    ("matmul", {"m": 1000, "n": 3, "k": 77}, {"device": "v100-sxm2"}),
    ("matmul", {"m": 4096, "n": 4096, "k": 4096}, {"device": "v100-pcie"}),
    ("vector_add", {"n": 1e7}, {"device": "v100-pcie"}),
]
GRIDS = {
    "sweep": {
        "workload": ["network"],
        "workload.model": ["resnet50"],
        "workload.train": [True],
        "workload.batch": [1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
        "device": ["t4", "v100-sxm2", "h100-sxm"],
    },
    "sweep matmul": {
        "workload": ["matmul"],
        "workload.m": [64, 1000, 4096],
        "workload.n": [64, 4096],
        "workload.k": [128, 4096],
        "device": ["t4", "h100-sxm", "a100-80gb"],
    },
}


def dump() -> dict[str, object]:
    out: dict[str, object] = {}
    for label, name, params, where in CASES:
        for method in ("engine", "analytic"):
            for detail in (True, False):
                clear_caches()
                prediction = parsim.predict(name, params, method=method, detail=detail, **where)
                out[f"{label}|{method}|{detail}"] = prediction.to_dict()
                out[f"{label}|{method}|{detail}|trace"] = [repr(event) for event in prediction.trace]
    for name, params, where in EXTRA:
        for method in ("engine", "analytic"):
            clear_caches()
            out[f"extra {name} {params} {where}|{method}"] = parsim.predict(
                name, params, method=method, **where
            ).to_dict()
    for label, grid in GRIDS.items():
        clear_caches()
        out[label] = sweep(None, grid).to_dict(orient="records")
    return out


if __name__ == "__main__":
    with open(sys.argv[1], "w") as file:
        json.dump(dump(), file, indent=1, sort_keys=True, default=repr)
