#!/bin/bash
# Issue 18 (docs/calibration/atomic-sectors-h100.md): is the H100's atomic (RED) sector count a function of the addresses alone?
# The atomic_sectors probe twice more (211 one-warp launches each) and the held-out
# histogram twice, all under ncu; compared with the committed runs afterwards.
mkdir -p /tmp/site && python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/simpy*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for r in 1 2; do
  s=$SECONDS; timeout 200 python3 -m calibration.atomic_sectors --gpu $OUT/probe$r > $OUT/probe_log$r.txt 2>&1
  echo "probe run $r rc=$? $((SECONDS - s)) s"
done
for r in 1 2; do
  s=$SECONDS; timeout 150 python3 -m validation.h100_gpu --out $OUT/hist$r --only histogram > $OUT/hist_log$r.txt 2>&1
  echo "histogram run $r rc=$? $((SECONDS - s)) s"
done
rm -f $OUT/probe*/*.cu $OUT/probe*/*.sass
