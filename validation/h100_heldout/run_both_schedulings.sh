#!/bin/bash
# The held-out set on sim:h100 with [dram] read_scheduling "at-arrival" and "fr-fcfs",
# every case of both in parallel (one process each, the slowest first, the two 40 GiB
# chases one after the other), each case's table in OUT/<mode>/<case>.md as it
# finishes, so that a run cut short keeps what is done. Assemble them afterwards.
#     bash validation/h100_heldout/run_both_schedulings.sh OUT [PROCESSES [LIST]]
# LIST: a file of "mode|case" lines to run in that order instead (mode "chain": the
# case at-arrival, then fr-fcfs, in one process slot).
set -u
out=$1; procs=${2:-15}; list=${3:-}
mkdir -p "$out/at-arrival" "$out/fr-fcfs"
one() {   # mode case
    local file="$OUT_DIR/$1/$(echo "$2" | tr ' =' '__').md" start=$SECONDS
    python3 -m validation.h100_compare --only "$2" --read-scheduling "$1" \
        --markdown "$file" > /dev/null 2> "$file.err" || echo "exit $?" >> "$file.err"
    echo "$1 | $2 | wall $((SECONDS - start)) s" >> "$OUT_DIR/walls.txt"
}
export -f one
export OUT_DIR=$out
cases=$(python3 -c "from validation import heldout
print('\n'.join(c.name for c in heldout.cases('full')))")
if [ -n "$list" ]; then cat "$list"; else
{
    for slow in "gather_scatter" "histogram_atomic" "spmv_csr" "bfs_expand"; do
        for mode in at-arrival fr-fcfs; do
            echo "$mode|$(echo "$cases" | grep "^$slow")"
        done
    done
    echo "chain|chase_i64 40 GiB steps=2048"
    echo "$cases" | grep -v -e gather_scatter -e histogram_atomic -e spmv_csr -e bfs_expand \
        -e "40 GiB" | while read -r c; do echo "at-arrival|$c"; echo "fr-fcfs|$c"; done
}; fi | xargs -P "$procs" -d '\n' -I{} bash -c '
    mode=${1%%|*}; c=${1#*|}
    if [ "$mode" = chain ]; then one at-arrival "$c"; one fr-fcfs "$c"; else one "$mode" "$c"; fi' _ {}
