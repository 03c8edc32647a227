#!/usr/bin/env python3
"""How short an interval the timer sustains, rtgauge beside cyclictest: one thread at FIFO 80 on
one CPU, memory locked, for each interval from 200 us down to 10 us, alternating A/B runs.

For each run: the share of planned periods that passed unserved (rtgauge: `missed` over
`samples + missed`; cyclictest: 1 − its cycle count C over duration / interval, since it skips
the periods it overran), and the CPU time per served period (the child's user + system, wait4).
The shortest interval a tool sustains is the shortest reached, going down, before one whose
median missed share exceeds 1 % (this VM's hypervisor stalls alone cost a fraction of a percent
at any interval).

    python3 bench/shortest_interval.py [--repeats 3] [--seconds 3] [--cpu 1]
"""
import argparse, json, re, resource, statistics, subprocess
import common

INTERVALS_US = [200, 100, 50, 30, 20, 10]


def run_timed(argv):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(argv, capture_output=True, text=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return out.stdout, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def ours(binary, us, seconds, cpu):
    out, c = run_timed([binary, "run", "--quiet", "--json", "-", "--warmup", "0", "--load", "none", "--priority", "80",
                        "--interval", f"{us}us", "--duration", f"{seconds}s", "--measure", f"timer@{cpu}"])
    p = json.loads(out)["probes"][0]
    served = p["samples"]
    return p["missed"] / (served + p["missed"]), 1e6 * c / max(served, 1)


def theirs(us, seconds, cpu):
    out, c = run_timed(["cyclictest", "-m", "-p", "80", "-a", str(cpu), "-t", "1", "-i", str(us), "-D", str(seconds), "-q"])
    served = int(re.search(r"C:\s*(\d+)", out).group(1))
    planned = seconds * 1_000_000 // us
    return max(0.0, 1 - served / planned), 1e6 * c / max(served, 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--cpu", type=int, default=1)
    ap.add_argument("--binary", default=common.BINARY)
    a = ap.parse_args()
    common.header(common.rtgauge_version(a.binary), " vs cyclictest")
    print(f"# {a.repeats} A/B pairs per interval, {a.seconds} s each, CPU {a.cpu}, FIFO 80\n")
    print("| interval us | rtgauge missed % | cyclictest missed % | rtgauge CPU us/period | cyclictest CPU us/period | CPU ratio |")
    print("|---|---|---|---|---|---|")
    sustained, failed = {"rtgauge": None, "cyclictest": None}, set()
    for us in INTERVALS_US:
        pairs = []
        for r in range(a.repeats):
            if r % 2:
                t = theirs(us, a.seconds, a.cpu); o = ours(a.binary, us, a.seconds, a.cpu)
            else:
                o = ours(a.binary, us, a.seconds, a.cpu); t = theirs(us, a.seconds, a.cpu)
            pairs.append((o, t))
        om, tm = statistics.median(o[0] for o, _ in pairs), statistics.median(t[0] for _, t in pairs)
        oc, tc = statistics.median(o[1] for o, _ in pairs), statistics.median(t[1] for _, t in pairs)
        cpu_ratio = statistics.median(o[1] / t[1] for o, t in pairs if t[1])
        print(f"| {us} | {100 * om:.2f} | {100 * tm:.2f} | {oc:.2f} | {tc:.2f} | {cpu_ratio:.3f} |", flush=True)
        for tool, m in (("rtgauge", om), ("cyclictest", tm)):
            if m > 0.01:
                failed.add(tool)
            elif tool not in failed:
                sustained[tool] = us
    print(f"\nshortest interval with at most 1 % missed: rtgauge {sustained['rtgauge']} us, "
          f"cyclictest {sustained['cyclictest']} us")


if __name__ == "__main__":
    main()
