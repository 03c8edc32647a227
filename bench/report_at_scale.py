#!/usr/bin/env python3
"""report and compare on stored runs of 10^9 samples over 64 CPUs (issue 9's target: each under a
second). Two cyclictest histogram files of 64 CPUs × 15 625 000 samples (rows of 1 µs up to
--rows, a long tail, overflows) are generated, imported into a private store, and then
`rtgauge report A`, `report A --html`, `compare A B --json` and `compare A B --html` are timed,
alternating, --repeat times each; the medians and the largest are printed.

    python3 bench/report_at_scale.py [--rows 2000] [--repeat 5]
"""
import argparse, os, random, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import BINARY, header, rtgauge_version

CPUS = 64
PER_CPU = 15_625_000  # × 64 = 10^9


def histogram_file(path, rows, seed):
    """cyclictest -h ROWS output for CPUS threads of PER_CPU samples each in its rows ('# Total:'
    counts the rows; a few overflows beyond them besides, as cyclictest prints them)."""
    rnd = random.Random(seed)
    columns, mins, maxs, avgs, overflows = [], [], [], [], []
    for _ in range(CPUS):
        mode = rnd.randint(8, 30)
        weights = [0.0] * rows
        for v in range(rows):
            weights[v] = 1.0 / (1.0 + abs(v - mode) ** 2.2) if v >= mode // 2 else 0.0
        total_w = sum(weights)
        counts = [int(PER_CPU * w / total_w) for w in weights]
        over = rnd.randint(0, 3)
        counts[mode] += PER_CPU - sum(counts)
        columns.append(counts)
        nz = [v for v, c in enumerate(counts) if c]
        mins.append(nz[0])
        maxs.append(rows + 50 if over else nz[-1])
        avgs.append(sum(v * c for v, c in enumerate(counts)) // PER_CPU)
        overflows.append(over)
    with open(path, "w") as f:
        f.write("# /dev/cpu_dma_latency set to 0us\n# Histogram\n")
        for v in range(rows):
            f.write(f"{v:06d} " + "\t".join(f"{columns[c][v]:06d}" for c in range(CPUS)) + "\n")
        f.write("# Total: " + " ".join(f"{PER_CPU:09d}" for _ in range(CPUS)) + "\n")
        f.write("# Min Latencies: " + " ".join(f"{m:05d}" for m in mins) + "\n")
        f.write("# Avg Latencies: " + " ".join(f"{a:05d}" for a in avgs) + "\n")
        f.write("# Max Latencies: " + " ".join(f"{m:05d}" for m in maxs) + "\n")
        f.write("# Histogram Overflows: " + " ".join(f"{o:05d}" for o in overflows) + "\n")


def timed(argv):
    start = time.perf_counter()
    out = subprocess.run(argv, capture_output=True)
    elapsed = time.perf_counter() - start
    if out.returncode not in (0, 1):
        sys.exit(f"{' '.join(argv)} failed: {out.stderr.decode()}")
    return elapsed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    version = rtgauge_version(BINARY)
    header(version)
    with tempfile.TemporaryDirectory() as d:
        db = os.path.join(d, "runs.db")
        for name, seed in (("a", 1), ("b", 2)):
            path = os.path.join(d, f"{name}.txt")
            histogram_file(path, a.rows, seed)
            t = timed([BINARY, "import", "--db", db, "--label", name, path])
            print(f"import {name}: {os.path.getsize(path) / 1e6:.1f} MB, {CPUS} CPUs x {PER_CPU} samples, {t * 1000:.0f} ms")
        html = os.path.join(d, "r.html")
        cases = {
            "report a": [BINARY, "report", "a", "--db", db],
            "report a --html": [BINARY, "report", "a", "--db", db, "--html", html],
            "compare a b --json": [BINARY, "compare", "a", "b", "--db", db, "--json"],
            "compare a b --html": [BINARY, "compare", "a", "b", "--db", db, "--html", html],
        }
        times = {k: [] for k in cases}
        for _ in range(a.repeat):
            for k, argv in cases.items():
                times[k].append(timed(argv))
        print(f"{'command':<22} {'median ms':>10} {'max ms':>8}   (target: < 1000 ms)")
        for k, ts in times.items():
            print(f"{k:<22} {statistics.median(ts) * 1000:>10.0f} {max(ts) * 1000:>8.0f}")


if __name__ == "__main__":
    main()
