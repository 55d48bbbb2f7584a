"""The held-out set's tables from validation/h100_heldout/run_both_schedulings.sh, merged:
one row per scored kernel with both read schedulings, and each setting's summary over the
kernels run both ways.

    python -m validation.h100_both OUT      # OUT: the script's folder (OUT/<mode>/*.md)
"""
import glob
import math
import sys

from validation.heldout import cases

root = sys.argv[1]
rows = {}
order = []
for mode in ("at-arrival", "fr-fcfs"):
    for f in sorted(glob.glob(f"{root}/{mode}/*.md")):
        for line in open(f):
            if line.startswith("| ") and not line.startswith("| case") and "(setup" not in line:
                c = [x.strip() for x in line.strip().strip("|").split("|")]
                case, kernel, outeq, counteq, gpu, sim, ratio, within = c
                if case not in order:
                    order.append(case)
                rows.setdefault(case, {})[mode] = (outeq, counteq, float(gpu), float(sim), float(ratio), within)
names = [c.name for c in cases("full")]
order.sort(key=names.index)
print("| case | GPU ms | at-arrival: sim ms, sim/GPU | fr-fcfs: sim ms, sim/GPU | fr-fcfs / at-arrival | outputs equal (both); counts |")
print("|---|---:|---|---|---:|---|")
summ = {m: [] for m in ("at-arrival", "fr-fcfs")}
for case in order:
    r = rows[case]
    a, f = r.get("at-arrival"), r.get("fr-fcfs")
    g = (a or f)[2]
    cell = lambda x: f"{x[3]:.4f}, {x[4]:.2f}{' (within)' if x[5] == 'yes' else ''}" if x else "not run"
    rel = f"{f[3] / a[3]:.3f}" if a and f else "-"
    if a and f:
        outs = "yes" if a[0] == f[0] == "yes" else f"{a[0]} / {f[0]}"
        cnt = ("equal" if a[1] == f[1] == "yes" else
               "the same differences from the GPU's both ways" if a[1] == f[1] else "DIFFER")
        eq = f"{outs}; {cnt}"
    else:
        eq = "-"
    print(f"| {case} | {g:.4f} | {cell(a)} | {cell(f)} | {rel} | {eq} |")
    if a and f:
        for m, x in (("at-arrival", a), ("fr-fcfs", f)):
            summ[m].append(x)
for m, xs in summ.items():
    if xs:
        within = sum(x[5] == "yes" for x in xs)
        gm = math.exp(sum(abs(math.log(x[4])) for x in xs) / len(xs))
        print(f"\n{m}: {within} of {len(xs)} within 15%, geometric-mean error {gm:.3f}x "
              f"(over the {len(xs)} kernels run both ways)")
