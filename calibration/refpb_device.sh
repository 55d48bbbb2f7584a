#!/bin/bash
# sim:h100 with and without HBM3 per-bank refresh (h100.toml trefi_pb/trfc_pb; variant
# "refpb" of calibration/loaded_latency_sweep.py), on a machine with many CPUs: the
# probe's levels (calibration/loaded_latency_probe_sim.py: b1-b4 at 16 MiB, b8-b8u4 at
# 64 MiB), the calibration's cold cases (calibration/loaded_latency_sweep.sh's list),
# then the held-out set at arrival with refresh on (a copy of the tree whose h100.toml
# has it on), every job its own process; results under OUT, one tar OUT.tar.
# STATES="cold dirty": the probe's levels in those L2 states (default cold); SKIP_HELDOUT=1:
# no held-out cases. With BUILTIN=N, also `python -m validation.builtin_sim_side --jobs N` with refresh on,
# beside the rest; with SKIP_SWEEP=1, no cold cases.
#     [STATES=...] [BUILTIN=4] [SKIP_SWEEP=1] [SKIP_HELDOUT=1] bash calibration/refpb_device.sh OUT JOBS
set -u
out=$1; jobs=${2:-16}
mkdir -p "$out/probe" "$out/heldout"
on=$(mktemp -d)/tree
cp -r . "$on"
sed -i -e 's/^trefi_pb = 0 /trefi_pb = 638 /' -e 's/^trfc_pb = 0 /trfc_pb = 524 /' \
    "$on/simgpu/configs/h100.toml"
grep -q '^trefi_pb = 638' "$on/simgpu/configs/h100.toml" || { echo "sed failed"; exit 2; }
export ON=$on OUTD=$out
if [ "${BUILTIN:-0}" -gt 0 ]; then
  (cd "$on" && PYTHONPATH=$PWD:$PYTHONPATH python3 -m validation.builtin_sim_side --jobs "$BUILTIN" \
     --markdown "$out/builtin-refpb.md" > "$out/builtin-refpb.out" 2>&1) &
fi
{
  for st in ${STATES:-cold}; do
    for lv in b8u4 b8u2 b8; do for v in base refpb; do echo "probe $v $lv 24 $st"; done; done
    for lv in b4 b2 b1; do for v in base refpb; do echo "probe $v $lv 22 $st"; done; done
  done
  [ "${SKIP_HELDOUT:-0}" = 1 ] ||
  [ "${SKIP_SWEEP:-0}" = 1 ] ||
  for c in case:gather:4194304 case:read:16777216 case:gather:1048576 case:copy:4194304 \
           read case:read:4194304 stride8 read4 case:copy:1048576 case:empty:1056; do
    for v in base refpb; do echo "sweep $v $c"; done
  done
  python3 -c "from validation import heldout
print('\n'.join('heldout ' + c.name.replace(' ', '%') for c in heldout.cases('full')
      if not c.name.startswith(('gather_scatter', 'chase_i64 40'))))"
} | xargs -P "$jobs" -L 1 sh -c '
  start=$(date +%s)
  case $0 in
    probe) if [ "$1" = refpb ]; then cd "$ON"; fi
           PYTHONPATH=$PWD:$PYTHONPATH python3 -m calibration.loaded_latency_probe_sim --levels "$2" --log2n "$3" \
             --state "$4" > "$OUTD/probe/$1-$2-$4.md" 2>&1;;
    sweep) python3 -m calibration.loaded_latency_sweep "$1" "$2" >> "$OUTD/sweep.md" 2>&1;;
    heldout) name=$(echo "$1" | tr "%" " "); cd "$ON"
             PYTHONPATH=$PWD:$PYTHONPATH python3 -m validation.h100_compare --only "$name" --read-scheduling at-arrival \
               --markdown "$OUTD/heldout/$(echo "$1" | tr "%=" "__").md" > /dev/null 2>&1 \
               || echo "exit $?" >> "$OUTD/heldout/$1.err";;
  esac
  echo "$0 $1 $2 wall $(( $(date +%s) - start )) s" >> "$OUTD/walls.txt"'
wait
