#!/bin/bash
# The GPU side of calibration/loaded_latency_probe.py on the lent machine:
#   [STATES="cold dirty"] [METRICS=a,b,...] bash calibration/loaded_latency_probe.sh WORK OUT
# WORK: a folder for everything; OUT: what comes back (llp.tar.xz, the first repeat's
# records).  Tiers of ncu counters: METRICS, or the chosen list (WANTED where the device
# has them, plus the crossbar/NoC/fill counters found by name), else WANTED alone, else
# the three stream_limits used.
w=$1; back=$2; mkdir -p "$w" "$back"
states=${STATES:-cold warm mixed}
py="python3 -m calibration.loaded_latency_probe"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > "$w/gpu.txt" 2>&1
ncu --version >> "$w/gpu.txt" 2>&1
if [ -n "$METRICS" ]; then echo "$METRICS" > "$w/metrics.txt"; else
  ncu --query-metrics --query-metrics-mode all > "$w/metrics-all.txt" 2>"$w/metrics-all.err"
  $py --metrics-from "$w/metrics-all.txt" > "$w/metrics.txt"
fi
echo "metrics: $(tr , '\n' < "$w/metrics.txt" | wc -l)"
t0=$(date +%s)
$py --device cuda --child "$w" --tag clock --repeats 3 --states $states > "$w/clock.log" 2>&1; echo "clock rc=$? $(( $(date +%s) - t0 )) s"
under_ncu() {   # $1: metric list
  timeout 300 ncu --clock-control none --cache-control none --replay-mode application \
    --kernel-name regex:probe_u --csv --print-units base --metrics "$1" --log-file "$w/ncu.csv" \
    $py --device cuda --child "$w" --tag ncu --repeats 1 --states $states > "$w/ncu.log" 2>&1
}
under_ncu "$(cat "$w/metrics.txt")"; rc=$?; echo "ncu tier 1 rc=$rc $(( $(date +%s) - t0 )) s"
if [ $rc != 0 ]; then
  cp "$w/ncu.log" "$w/ncu-tier1.log"
  under_ncu "$(python3 -c 'from calibration.loaded_latency_probe import WANTED; print(",".join(WANTED))')"
  rc=$?; echo "ncu tier 2 rc=$rc"
  [ $rc != 0 ] && { cp "$w/ncu.log" "$w/ncu-tier2.log"; under_ncu gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sectors.avg.pct_of_peak_sustained_elapsed; echo "ncu tier 3 rc=$?"; }
fi
$py --report "$w" --md "$w/report.md" > /dev/null 2> "$w/report.err"; echo "report rc=$?"
python3 -c "
import numpy as np, sys
from calibration.loaded_latency_probe import compact
np.savez_compressed(sys.argv[2], **compact(dict(np.load(sys.argv[1]))))" "$w/records-clock.npz" "$back/records-clock-r0.npz"
[ -f "$w/metrics-all.txt" ] && gzip -9 "$w/metrics-all.txt"
tar -cJf "$back/llp.tar.xz" -C "$w" --exclude='records-*.npz' --exclude='metrics-all.txt.gz' .
ls -la "$back"; head -c 5000 "$w/report.md"
