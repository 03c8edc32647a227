#!/usr/bin/env python3
"""Peak memory of rtgauge beside cyclictest, and its growth with phases, in one run.

1. Peak RSS on 2 CPUs, idle, no phases: rtgauge (`run -q --load none`, storing into a fresh store
   of its own, and with `--no-store`) and cyclictest with the comparable lossless-enough
   histogram (`-m -h 100000`), alternating A/B, N repeats each.
2. Growth per CPU x phase: rtgauge under 4 `cmd:sleep` loads, once without phases and once with
   the same loads on a timeline cutting the run into 9 phases; both at the end of the run (peak,
   the result document included) and while measuring (VmRSS sampled mid-run).

Peak RSS is each tool's own `ru_maxrss`, read by /usr/bin/time (a small C program, so nothing of
Python's is counted; the loads' processes are smaller than rtgauge, so their maxima do not hide
it). Needs root, cyclictest (Debian: rt-tests) and /usr/bin/time (Debian: time).

The idle comparison is also made for the static build that scripts/build-static.sh makes for
boards (`--static`, default dist/rtgauge-x86_64 when it exists): a dynamically linked rtgauge
also carries the shared C library's, libm's and the loader's resident pages, which the static
build does not map.

    python3 bench/memory.py [--repeats 5] [--rtgauge target/dist/rtgauge] [--static dist/rtgauge-x86_64]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

SLEEP = "cmd:sleep 1000"
PHASED = [f"{SLEEP}@1s..2s", f"{SLEEP}@3s..4s", f"{SLEEP}@5s..6s", f"{SLEEP}@7s..8s"]


def peak_kib(argv):
    r = subprocess.run(["/usr/bin/time", "-f", "%M"] + argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return int(r.stderr.strip().splitlines()[-1])


def mid_run_kib(argv, at_s):
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(at_s)
    rss = next((int(l.split()[1]) for l in open(f"/proc/{p.pid}/status") if l.startswith("VmRSS:")), None)
    err = p.communicate()[1]
    if rss is None:  # it ended before (a zombie has no VmRSS)
        sys.exit(f"memory.py: {' '.join(argv)} ended before {at_s} s, status {p.returncode}: {err.strip()}")
    return rss


def loads(specs):
    out = []
    for s in specs:
        out += ["--load", s]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--rtgauge", default="target/dist/rtgauge")
    ap.add_argument("--static", default="dist/rtgauge-x86_64", help="the static build (skipped when missing)")
    a = ap.parse_args()
    static = a.static if os.path.exists(a.static) else None
    store = tempfile.mkdtemp(prefix="rtgauge-bench-")
    base = [a.rtgauge, "run", "-q", "--cpus", "0,1"]
    rt = base + ["--db", os.path.join(store, "runs.db")]  # a store of this benchmark's runs only
    idle_rt = rt + ["-D", "3s", "--load", "none"]
    idle_rt_nostore = base + ["-D", "3s", "--load", "none", "--no-store"]
    idle_ct = ["cyclictest", "-q", "-m", "-p", "80", "-i", "1000", "-t", "2", "-a", "0,1", "-d", "0", "-D", "4", "-h", "100000"]
    flat = rt + ["-D", "9s", "--warmup", "0"] + loads([SLEEP] * 4)
    phased = rt + ["-D", "9s", "--warmup", "0"] + loads(PHASED)
    res = {k: [] for k in ["rt", "rt_nostore", "st", "st_nostore", "ct", "flat", "phased", "flat_mid", "phased_mid"]}
    for i in range(a.repeats):
        res["rt"].append(peak_kib(idle_rt))
        res["rt_nostore"].append(peak_kib(idle_rt_nostore))
        if static:
            res["st"].append(peak_kib([static] + idle_rt[1:]))
            res["st_nostore"].append(peak_kib([static] + idle_rt_nostore[1:]))
        res["ct"].append(peak_kib(idle_ct))
        res["flat"].append(peak_kib(flat))
        res["phased"].append(peak_kib(phased))
        res["flat_mid"].append(mid_run_kib(flat, 8.5))
        res["phased_mid"].append(mid_run_kib(phased, 8.5))
        print(f"repeat {i + 1}: " + ", ".join(f"{k} {v[-1]}" for k, v in res.items() if v), file=sys.stderr)
    med = {k: statistics.median(v) for k, v in res.items() if v}
    cpu_phases = 2 * 9  # 9 phases (none without them), on 2 CPUs
    print(f"peak RSS, 2 CPUs, idle, no phases (median of {a.repeats}): rtgauge {med['rt']:.0f} KiB, "
          f"cyclictest -h 100000 {med['ct']:.0f} KiB, ratio {med['rt'] / med['ct']:.3f}")
    print(f"  rtgauge {sorted(res['rt'])}, cyclictest {sorted(res['ct'])}")
    print(f"  without the store (--no-store: kept nowhere, as cyclictest keeps nothing): rtgauge "
          f"{med['rt_nostore']:.0f} KiB, ratio {med['rt_nostore'] / med['ct']:.3f} {sorted(res['rt_nostore'])}")
    if static:
        print(f"  the static build ({static}): rtgauge {med['st']:.0f} KiB, ratio {med['st'] / med['ct']:.3f} "
              f"{sorted(res['st'])}; --no-store {med['st_nostore']:.0f} KiB, ratio {med['st_nostore'] / med['ct']:.3f} "
              f"{sorted(res['st_nostore'])}")
    shutil.rmtree(store)
    print(f"growth per CPU x phase at the end (peak, the document included): "
          f"{(med['phased'] - med['flat']) / cpu_phases:.1f} KiB ({med['flat']:.0f} -> {med['phased']:.0f} KiB)")
    print(f"growth per CPU x phase while measuring (VmRSS at 8.5 s of 9 s): "
          f"{(med['phased_mid'] - med['flat_mid']) / cpu_phases:.1f} KiB ({med['flat_mid']:.0f} -> {med['phased_mid']:.0f} KiB)")


if __name__ == "__main__":
    main()
