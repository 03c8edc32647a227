#!/usr/bin/env python3
"""What `--trace` costs the measurement: the same run with and without it, alternating, in one
script. Idle and under a hackbench load, it reports per pair the ratios traced/untraced of the
timer's p50, p99 and p99.9 latency on the measured CPU, of rtgauge's own CPU time per sample
(the collector reading and explaining traces), and how often the trace was stopped and read.
Needs root (tracefs).

    python3 bench/trace_cost.py [--repeats 5] [--duration 20] [--cpu 1]

Medians (and the spread of the pairs) are reported; single maxima are not compared.
"""
import argparse, json, os, statistics, subprocess, sys
import common


def run_rusage(argv):
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = p.stdout.read()
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"rtgauge failed ({code}): {err.decode()[-500:]}")
    return json.loads(out), ru.ru_utime + ru.ru_stime


def figures(doc, cpu):
    p = next(x for x in doc["probes"] if x["cpu"] == cpu)
    triggers = sum(c["triggers"] for c in (doc.get("trace") or {}).get("captures", []))
    return {"p50": p["p50_ns"], "p99": p["p99_ns"], "p99.9": p["p999_ns"], "samples": p["samples"], "missed": p["missed"],
            "triggers": triggers}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--duration", type=int, default=20)
    ap.add_argument("--cpu", type=int, default=1)
    a = ap.parse_args()
    version = common.rtgauge_version(common.BINARY)
    common.header(version)
    for mode, load in [("idle", "none"), ("hackbench", "hackbench:groups=2,loops=100000")]:
        base = [common.BINARY, "run", "-q", "--json", "-", "--no-store", "--cpus", str(a.cpu), "-D", f"{a.duration}s",
                "--load", load]
        ratios = {k: [] for k in ["p50", "p99", "p99.9", "cpu/sample"]}
        triggers = []
        for i in range(a.repeats):
            order = [False, True] if i % 2 == 0 else [True, False]
            got = {}
            for traced in order:
                doc, cpu_s = run_rusage(base + (["--trace"] if traced else []))
                f = figures(doc, a.cpu)
                f["cpu/sample"] = cpu_s / max(f["samples"], 1)
                got[traced] = f
            for k in ratios:
                ratios[k].append(got[True][k] / got[False][k] if got[False][k] else float("nan"))
            triggers.append(got[True]["triggers"])
            print(f"  {mode} pair {i + 1}: untraced p50 {got[False]['p50'] / 1e3:.2f} us p99 {got[False]['p99'] / 1e3:.2f} us, "
                  f"traced p50 {got[True]['p50'] / 1e3:.2f} us p99 {got[True]['p99'] / 1e3:.2f} us, trace stops {got[True]['triggers']}")
        print(f"{mode}: traced/untraced (median of {a.repeats} pairs, range):")
        for k, v in ratios.items():
            print(f"  {k:<11} {statistics.median(v):.3f}  ({min(v):.3f}..{max(v):.3f})")
        print(f"  trace stops per run: median {statistics.median(triggers)}")


if __name__ == "__main__":
    main()
