#!/usr/bin/env bash
# One lent GPU machine, one call: parsim's GPU tests, then the H100 grid measured on this GPU and
# recorded as a report for the package (parsim/data/measured/NAME.json, what `validate --load` reads).
#
# Run from the repository root on the device machine, with the wheels parsim needs beyond its image
# (simpy, pydantic, pydantic-core, annotated-types, typing-inspection, typing-extensions, tomli-w)
# in .whl/:  bash benchmarks/gpu_session.sh NAME   (e.g. h200-2026-11-28); files land in $OUT.
set -u
name=${1:?usage: gpu_session.sh NAME}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/parsim-gpu}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit,driver_version --format=csv | tee "$OUT/gpu.txt"
python3 -c "import sys, cupy, numpy; print(sys.version.split()[0], 'cupy', cupy.__version__, 'numpy', numpy.__version__)" | tee -a "$OUT/gpu.txt"
lscpu | grep -E "Model name|^CPU\(s\)" | tee -a "$OUT/gpu.txt"
# the GPU-marked tests (the other test files import the app's and browser's packages, absent there)
timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_measure.py tests/test_present.py 2>&1 | tee "$OUT/pytest-gpu.log" | tail -12
timeout 330 python3 -m parsim validate --record "$OUT/$name.json" > "$OUT/record.txt" 2> "$OUT/record.err"
echo "record exit $?"; tail -45 "$OUT/record.txt"; tail -5 "$OUT/record.err"
