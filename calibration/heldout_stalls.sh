#!/bin/bash
# Issue 18: which unit binds the held-out kernels the model still misses, on the card.
# Each case under ncu (cache flushed before each kernel, ncu's default) with the metrics of
# calibration/kernel_counters.py: L1 and L2 hits, the L2 slices' sectors (sum, busiest,
# mean: how evenly the slices are used), DRAM bytes, and the warps' stall reasons. Run on
# the GPU machine from the repository root, $OUT set, simpy's wheel in .whl/. Its run:
# docs/results/heldout-stalls-2026-11-27.md.
mkdir -p /tmp/site && python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/simpy*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 SIMGPU_CUDA_TIMING=events
NCU=$(ls /usr/local/cuda/bin/ncu 2>/dev/null || which ncu)
M=$(python3 -c "from calibration.kernel_counters import CACHE_METRICS as C, STALL_METRICS as S; print(','.join(C + S + ['lts__t_requests_srcunit_tex_op_write.sum', 'lts__t_requests_srcunit_tex_op_read.sum', 'sm__warps_active.avg.pct_of_peak_sustained_active']))")
for c in copy_f32 transpose_naive transpose_tiled stencil_2d spmv; do
  timeout 120 $NCU --clock-control none --cache-control all --csv --print-units base --metrics $M --log-file $OUT/ncu_$c.csv python3 -m validation.h100_gpu --worker --out /tmp/w_$c --only "$c" > $OUT/log_$c.txt 2>&1
  echo "$c rc=$?"
done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; $NCU --version | tail -1
