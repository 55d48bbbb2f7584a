#!/bin/bash
# Issue 18: extra ncu metrics for the H100 held-out kernels (DRAM bytes read and written,
# L2 sectors, hit rate and read-miss sectors, achieved occupancy, DRAM and SM throughput),
# every case but the 1 MiB, 32 MiB, 8 GiB and 40 GiB chases. Run on the GPU machine from
# the repository root, with $OUT set (where all_ncu.csv and logs.txt go) and simpy's wheel
# in .whl/. Its run of 2026-11-27: validation/h100_heldout/ncu-memory-h100-2026-11-27.csv,
# docs/results/heldout-dram-bytes-2026-11-27.md.
set -x
mkdir -p /tmp/site && python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/simpy*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 SIMGPU_CUDA_TIMING=events
NCU=$(ls /usr/local/cuda/bin/ncu 2>/dev/null || which ncu)
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__t_sector_hit_rate.pct,lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum,lts__t_sectors_srcunit_tex_op_write_lookup_miss.sum,sm__warps_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,gpc__cycles_elapsed.max,sm__cycles_active.avg,launch__occupancy_limit_shared_mem,launch__occupancy_limit_registers,launch__registers_per_thread,sm__maximum_warps_per_active_cycle_pct
for c in copy_f32 triad strided_read transpose reduce_shared stencil spmv bfs gather_scatter "chase_i64 1 GiB"; do
  f=$(echo "$c" | tr ' ' '_')
  timeout 120 $NCU --clock-control none --cache-control all --csv --print-units base --metrics $M --log-file $OUT/ncu_$f.csv python3 -m validation.h100_gpu --worker --out /tmp/w_$f --only "$c" > $OUT/log_$f.txt 2>&1
  echo "$c rc=$?"
done
cd $OUT && cat ncu_*.csv > all_ncu.csv && rm ncu_*.csv && tail -n 3 log_*.txt > logs.txt && rm log_*.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; $NCU --version | tail -1
