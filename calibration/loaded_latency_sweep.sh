#!/bin/bash
# The sweep of calibration/loaded_latency_sweep.py on a machine with many CPUs (the lent
# GPU machine's 16), every job its own process, lines into $1 as they finish.
# usage: calibration/loaded_latency_sweep.sh OUTFILE JOBS VARIANT...
out=$1; jobs=$2; shift 2
for c in store:sector_16_B store:sector_4_B store:full store:line_4_B \
         wide stride32 case:gather:4194304 case:read:16777216 case:gather:1048576 case:copy:4194304 \
         read case:read:4194304 stride8 read4 case:copy:1048576 case:empty:1056; do
  for v in "$@"; do
    echo "$v $c"       # (the slowest jobs first)
  done
done | xargs -P "$jobs" -L 1 sh -c 'python3 -m calibration.loaded_latency_sweep "$0" "$1" >> '"$out"' 2>&1'
