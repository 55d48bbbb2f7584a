# gather_scatter n=4194304 (held-out) on sim:h100, both read schedulings, two trees at once:
# $ROOT/.devrun/frwake (this branch) and $ROOT/.devrun/frwake_base (its base 3f02af3: warps
# looked again every lead, the cyclic collector on), each run under a wall limit of $1 s;
# tables and walls under $OUT (raw-gather-scatter-wake-2026-11-26.md: the lent machine's run)
lim=$1
run() {  # tree mode
    local s=$SECONDS
    (cd "$ROOT/.devrun/$1" && PYTHONPATH=/tmp/site:$ROOT/.devrun/$1 timeout $lim python3 \
        -m validation.h100_compare --only "gather_scatter n=4194304" --read-scheduling $2 \
        --markdown $OUT/$1-$2.md > $OUT/$1-$2.log 2>&1)
    echo "$1 | $2 | rc $? | wall $((SECONDS - s)) s" >> $OUT/walls.txt
}
for t in frwake frwake_base; do for m in at-arrival fr-fcfs; do run $t $m & done; done
wait
nproc >> $OUT/walls.txt; python3 --version >> $OUT/walls.txt
