"""The held-out set on sim:h100 with and without the fill ports (docs/results/l2-fill-port.md):

    PYTHONPATH=. python3 docs/results/l2-fill-port/devrun_heldout.py before|after JOBS OUT.md [SKIP,SKIP]

validation.h100_compare's own functions; "before" runs sim:h100 from a copy of h100.toml without
l2_fill_bandwidth_gbps (the fills on the combined budget, as before the fill ports); cases whose
name contains a SKIP text are left out."""
import json, pathlib, re, sys, tempfile, time
from concurrent.futures import ProcessPoolExecutor
import simgpu
from validation import h100_compare as hc, heldout

mode, jobs, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
skip = [s for s in (sys.argv[4] if len(sys.argv) > 4 else "").split(",") if s]
if mode == "before":
    text = (pathlib.Path(simgpu.__file__).parent / "configs" / "h100.toml").read_text()
    text, n = re.subn(r"(?m)^l2_fill_bandwidth_gbps\s*=\s*[^#\n]*", "", text)
    assert n == 1
    path = pathlib.Path(tempfile.mkdtemp()) / "h100.toml"
    path.write_text(text)

    def sim_device():
        dev = simgpu.get_device("sim:" + str(path))
        assert dev.config.cache.l2_fill_bandwidth_gbps is None
        dev.default_engine, dev.cache_control = "timed-block", "all"
        return dev
    hc.sim_device = sim_device
gpu = json.loads(hc.DEFAULT_GPU.read_text())
by = {c["case"]: c for c in gpu["cases"]}
sel = [c for c in heldout.cases("full") if c.name in by and not any(s in c.name for s in skip)]
t0 = time.time()
with ProcessPoolExecutor(jobs) as pool:
    sims = list(pool.map(hc.run_sim, [c.name for c in sel]))
rows = [r for c, s in zip(sel, sims) for r in hc.compare_case(by[c.name], s, c.kernel)]
text = (f"{mode}: sim:h100 against {gpu['nvidia_smi']} (measured {gpu['date_utc']}); skipped {skip}; "
        f"wall {time.time() - t0:.0f} s\n\n{hc.table(rows)}\n\n{hc.summary_text(hc.summary(rows))}\n")
pathlib.Path(out).write_text(text)
print(text)
