#!/usr/bin/env python3
"""Built-in hackbench (rtgauge load hackbench) beside rt-tests hackbench, alternating A/B runs
with the same groups, loops and mode (processes/threads, sockets/pipes). Reports the median of the
times both print ("Time: X") and their ratio rtgauge/hackbench: the same load gives a ratio near 1
(target 0.8-1.25). Needs hackbench (Debian: rt-tests).

    python3 bench/hackbench_vs_rt_tests.py [--repeats 7] [--groups 10] [--loops 100]
"""
import argparse, re, statistics, subprocess, sys
import common


def time_of(argv):
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    m = re.search(r"^Time: ([0-9.]+)", out, re.M)
    if not m:
        sys.exit(f"no 'Time:' line from {argv}: {out}")
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--groups", type=int, default=10)
    ap.add_argument("--loops", type=int, default=100)
    ap.add_argument("--binary", default=common.BINARY)
    a = ap.parse_args()
    common.header(common.rtgauge_version(a.binary), " vs rt-tests hackbench")
    print(f"# {a.groups} groups × 40 tasks, {a.loops} loops, {a.repeats} alternating repeats per mode\n")
    print("| mode | rtgauge median s | hackbench median s | ratio (median of A/B pairs) | pairs |")
    print("|---|---|---|---|---|")
    for mode, opts, flags in [
        ("process, sockets", "", []),
        ("process, pipes", ",pipe", ["-p"]),
        ("threads, sockets", ",threads", ["-T"]),
        ("threads, pipes", ",threads,pipe", ["-T", "-p"]),
    ]:
        ours = [a.binary, "load", f"hackbench:groups={a.groups},loops={a.loops}{opts}"]
        theirs = ["hackbench", "-g", str(a.groups), "-l", str(a.loops)] + flags
        pairs = []
        for r in range(a.repeats):
            if r % 2:
                t2 = time_of(theirs); t1 = time_of(ours)
            else:
                t1 = time_of(ours); t2 = time_of(theirs)
            pairs.append((t1, t2))
        ratios = [x / y for x, y in pairs]
        print(f"| {mode} | {statistics.median(p[0] for p in pairs):.3f} | {statistics.median(p[1] for p in pairs):.3f} | "
              f"{statistics.median(ratios):.2f} | {', '.join(f'{r:.2f}' for r in ratios)} |")


if __name__ == "__main__":
    main()
