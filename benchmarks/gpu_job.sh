#!/usr/bin/env bash
# The whole GPU job in one go, for a lent GPU machine (see ../shared/GPU.md):
#   bash benchmarks/gpu_job.sh OUTDIR [quick]
# It installs the carried simpy wheel (.whl/), then runs, each step logged to OUTDIR:
#   1. the GPU-marked tests (all of tests/),      -> tests.log
#   2. the validation against sim:h100,           -> validation.md (+ ncu.csv)
#   3. the calibration microbenchmarks,           -> calibration-gpu.json
#   4. the list-ranking and CC benchmarks.        -> list_ranking.md, connected_components.md
set -u
OUT=${1:?usage: gpu_job.sh OUTDIR [quick]}
QUICK=${2:-}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/gpu.txt" 2>&1
step() { echo "== $1 ($(date +%T))"; }
step tests
# -o addopts: one process, whether or not the machine has pytest-xdist (pyproject asks for -n 2)
timeout 240 python3 -m pytest -o addopts=-q -p no:cacheprovider -m gpu tests -rA 2>&1 | tail -30 > "$OUT/tests.log"
cat "$OUT/tests.log"
step validation
timeout 540 python3 -m simgpu_apps.gpu_tools.validate --out "$OUT/val" --seeds 3 ${QUICK:+--quick} > "$OUT/validation.log" 2>&1
tail -5 "$OUT/validation.log"; cp "$OUT/val/validation.md" "$OUT/" 2>/dev/null
{ printf '\n## GPU tests on the same machine\n\n`python3 -m pytest -q -m gpu tests -rA` (%s):\n\n```\n' "$(date +%F)"
  grep -v '^=\+' "$OUT/tests.log"; printf '```\n'; } >> "$OUT/validation.md"
step calibration
timeout 300 python3 -m simgpu_apps.gpu_tools.calibrate --device cuda --out "$OUT/calibration-gpu.json" 2>&1 | tail -12
step list-ranking
timeout 300 python3 benchmarks/gpu_list_ranking.py ${QUICK:+--log2n 20} --out "$OUT/list_ranking.md" 2>&1 | tail -12
step connected-components
timeout 300 python3 benchmarks/gpu_connected_components.py ${QUICK:+--log2n 16 --log2m 18} --out "$OUT/connected_components.md" 2>&1 | tail -8
step done
