#!/usr/bin/env python3
"""How harsh is rtgauge's built-in stress-like load compared with stress-ng's equivalent?

The same timer measurement (rtgauge run, FIFO 80, 1 ms, all CPUs) alternately under
  A: the built-in generators   --load cpu:workers=N,vm:workers=N,bytes=20M
  B: stress-ng, as a command   --load 'cmd:stress-ng --cpu N --vm N --vm-bytes 20M'
(stress --cpu N --vm N --vm-bytes 20MB, the Cortex-A53 slides' load), and also the worst-case
default mix. Reports timer p99 and p99.9 (median of repeats) and ratios A/B: at least 1 means the
built-in load is at least as harsh. Needs stress-ng.

    python3 bench/harshness_vs_stress_ng.py [--repeats 3] [--duration 20]
"""
import argparse, json, os, statistics, subprocess, sys
import common


def measure(binary, duration, load):
    argv = [binary, "run", "--quiet", "--json", "-", "--duration", f"{duration}s", "--load", load]
    doc = json.loads(subprocess.run(argv, capture_output=True, text=True, check=True).stdout)
    c = doc["combined"][0]
    failed = [l["spec"] for l in doc["loads"] if l["failed"]]
    if failed:
        sys.exit(f"loads failed: {failed}")
    usage = sum(l["usage"]["user_ns"] + l["usage"]["system_ns"] for l in doc["loads"]) / 1e9
    faults = sum(l["usage"]["minor_faults"] for l in doc["loads"])
    return c["p99_ns"] / 1e3, c["p999_ns"] / 1e3, c["max_ns"] / 1e3, usage, faults


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--duration", type=int, default=20)
    ap.add_argument("--binary", default=common.BINARY)
    a = ap.parse_args()
    n = os.cpu_count()
    sng = subprocess.run(["stress-ng", "--version"], capture_output=True, text=True).stdout.strip()
    common.header(common.rtgauge_version(a.binary), f" · {sng}")
    print(f"# each run: rtgauge run, FIFO 80, 1 ms, all CPUs, {a.duration} s; {a.repeats} alternating repeats\n")
    loads = {
        "built-in cpu+vm": f"cpu:workers={n},vm:workers={n},bytes=20M",
        "stress-ng cpu+vm": f"cmd:stress-ng --cpu {n} --vm {n} --vm-bytes 20M",
        "built-in default mix": ",".join(["hackbench:groups=2,loops=50", "vm:bytes=32M", "io:size=8M", "net", "timers"]),
        "stress-ng cpu+vm+io+sock+timer": f"cmd:stress-ng --cpu {n} --vm {n} --vm-bytes 20M --hdd 1 --sock 1 --timer 1",
    }
    res = {k: [] for k in loads}
    for r in range(a.repeats):
        names = list(loads)
        if r % 2:
            names.reverse()
        for k in names:
            res[k].append(measure(a.binary, a.duration, loads[k]))
    print("| load | p99 µs | p99.9 µs | max µs (info) | load CPU s | load page faults |")
    print("|---|---|---|---|---|---|")
    med = {}
    for k, rows in res.items():
        med[k] = [statistics.median(x) for x in zip(*rows)]
        m = med[k]
        print(f"| {k} | {m[0]:.1f} | {m[1]:.1f} | {max(x[2] for x in rows):.0f} | {m[3]:.1f} | {m[4]:.0f} |")
    for a_, b_ in [("built-in cpu+vm", "stress-ng cpu+vm"), ("built-in default mix", "stress-ng cpu+vm+io+sock+timer")]:
        print(f"\n{a_} / {b_}: p99 {med[a_][0] / med[b_][0]:.2f}, p99.9 {med[a_][1] / med[b_][1]:.2f}")


if __name__ == "__main__":
    main()
