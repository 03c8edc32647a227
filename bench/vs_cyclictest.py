#!/usr/bin/env python3
"""rtgauge beside cyclictest (rt-tests), side by side in one run.

Alternates A/B runs with the same interval on every thread (cyclictest -d 0), priority, CPUs,
memory locking (cyclictest -m) and /dev/cpu_dma_latency request (0 us, both tools' default),
idle and under a hackbench load, and reports ratios rtgauge/cyclictest of p50, p99 and p99.9
latency (both from 1-us histograms, computed the same way), CPU time per sample and peak RSS,
plus binary size and start-up time. Needs root, cyclictest and hackbench (Debian: rt-tests).

    python3 bench/vs_cyclictest.py [--repeats 3] [--duration 20] [--interval-us 1000]

Medians over the repeats are reported; single maxima are printed for information only.
"""
import argparse, json, os, shutil, signal, statistics, subprocess, sys, threading, time
import common


def percentiles_us(hist, qs):
    """hist: {latency_us: count}. Returns the smallest value v with cumulative share >= q."""
    total = sum(hist.values())
    keys = sorted(hist)
    res = []
    for q in qs:
        need = q / 100.0 * total
        acc = 0
        for k in keys:
            acc += hist[k]
            if acc >= need:
                res.append(k)
                break
    return res


def cyclictest_run(args, cpus):
    argv = ["cyclictest", "-m", "-p", str(args.priority), "-i", str(args.interval_us),
            "-t", str(len(cpus)), "-a", ",".join(map(str, cpus)), "-d", "0", "-D", f"{args.duration}s",
            "-h", "100000", "-q"]
    out, cpu_s, rss = common.run_rusage(argv)
    hist, samples = {}, 0
    for line in out.decode().splitlines():
        if line.startswith("#"):
            if line.startswith("# Total:"):
                samples += sum(int(x) for x in line.split()[2:])
            continue
        parts = line.split()
        if len(parts) >= 2 and parts[0].isdigit():
            c = sum(int(x) for x in parts[1:])
            if c:
                hist[int(parts[0])] = hist.get(int(parts[0]), 0) + c
    return hist, samples, cpu_s, rss


def rtgauge_run(args, cpus, binary, duration=None):
    argv = [binary, "run", "--quiet", "--json", "-", "--priority", str(args.priority),
            "--interval", f"{args.interval_us}us", "--cpus", ",".join(map(str, cpus)),
            "--duration", f"{duration or args.duration}s", "--warmup", "0",
            # The same external load for both tools: rtgauge's own loads stay off.
            "--load", "none"]
    out, cpu_s, rss = common.run_rusage(argv)
    doc = json.loads(out)
    hist, samples = {}, 0
    for p in doc["probes"]:
        samples += p["samples"] + p["warmup_samples"]
        for lo, _hi, count in p["histogram"]["buckets"]:
            us = lo // 1000  # truncate to whole microseconds, as cyclictest does
            hist[us] = hist.get(us, 0) + count
    return hist, samples, cpu_s, rss


def start_load(kind):
    if kind == "idle":
        return None
    # hackbench in a loop, as the ARM9/ARM11 paper loads its boards: 4 groups (160 tasks), sockets.
    return subprocess.Popen(["sh", "-c", "while :; do hackbench -g 4 -l 2000 >/dev/null 2>&1; done"],
                            start_new_session=True)


def stop_load(p):
    if p is not None:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()


def startup(binary, n=20):
    def med(argv):
        ts = []
        for _ in range(n):
            t = time.perf_counter()
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            ts.append(time.perf_counter() - t)
        return statistics.median(ts)
    a = med([binary, "run", "--quiet", "--loops", "1", "--warmup", "0", "--cpus", "0", "--load", "none"])
    b = med(["cyclictest", "-m", "-p", "80", "-l", "1", "-t", "1", "-a", "0", "-q"])  # -l 1: one period
    return a, b


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--duration", type=int, default=20, help="seconds per run")
    ap.add_argument("--interval-us", type=int, default=1000)
    ap.add_argument("--priority", type=int, default=80)
    ap.add_argument("--binary", default=common.BINARY)
    ap.add_argument("--loads", default="idle,hackbench")
    args = ap.parse_args()
    for tool in ("cyclictest", "hackbench"):
        if not shutil.which(tool):
            sys.exit(f"{tool} not found: apt-get install rt-tests")
    cpus = sorted(os.sched_getaffinity(0))
    version = common.rtgauge_version(args.binary)
    ct_version = subprocess.run(["cyclictest", "--help"], capture_output=True, text=True)
    ct_version = (ct_version.stdout + ct_version.stderr).splitlines()[0].strip()
    common.header(version, f" vs {ct_version}")
    print(f"# each run: {args.duration} s, interval {args.interval_us} us, priority {args.priority}, "
          f"CPUs {cpus}, memory locked; {args.repeats} alternating repeats per load\n")

    rows = {}
    for load in args.loads.split(","):
        lp = start_load(load)
        time.sleep(1 if lp else 0)
        try:
            for r in range(args.repeats):
                order = [("rtgauge", rtgauge_run), ("cyclictest", cyclictest_run)]
                if r % 2:
                    order.reverse()
                for name, fn in order:
                    res = fn(args, cpus, args.binary) if name == "rtgauge" else fn(args, cpus)
                    rows.setdefault((load, name), []).append(res)
        finally:
            stop_load(lp)

    print("| load | tool | p50 us | p99 us | p99.9 us | max us (info) | CPU us/sample | peak RSS KiB |")
    print("|---|---|---|---|---|---|---|---|")
    ratios = {}
    for (load, name), runs in rows.items():
        per = []
        for hist, samples, cpu_s, rss in runs:
            p50, p99, p999 = percentiles_us(hist, [50, 99, 99.9])
            per.append((p50, p99, p999, max(hist), cpu_s * 1e6 / samples, rss))
        med = [statistics.median(x) for x in zip(*per)]
        ratios[(load, name)] = (med, per)
        print(f"| {load} | {name} | {med[0]:.0f} | {med[1]:.0f} | {med[2]:.0f} | {max(p[3] for p in per)} | "
              f"{med[4]:.2f} | {med[5]:.0f} |")
    print("\nRatios rtgauge / cyclictest (median over repeats; per-repeat ratios of A/B pairs in brackets):")
    for load in args.loads.split(","):
        a, pa = ratios[(load, "rtgauge")]
        b, pb = ratios[(load, "cyclictest")]
        def pair(i):
            rs = [x[i] / y[i] if y[i] else float("nan") for x, y in zip(pa, pb)]
            return f"{statistics.median(rs):.3f} [{', '.join(f'{r:.2f}' for r in rs)}]"
        print(f"- {load}: p50 {pair(0)}, p99 {pair(1)}, p99.9 {pair(2)}, CPU/sample {pair(4)}, peak RSS {pair(5)}")

    # Peak RSS must not grow with duration.
    short = rtgauge_run(args, cpus, args.binary, duration=max(2, args.duration // 4))[3]
    long_ = rtgauge_run(args, cpus, args.binary, duration=args.duration * 2)[3]
    print(f"\nrtgauge peak RSS: {short} KiB for {max(2, args.duration // 4)} s, {long_} KiB for {args.duration * 2} s")
    ct = shutil.which("cyclictest")
    print(f"binary size: rtgauge {os.path.getsize(args.binary)} B (stripped; shared libc, libm, libgcc_s) vs cyclictest "
          f"{os.path.getsize(ct)} B (shared libc, librt, libpthread, libnuma)")
    a, b = startup(args.binary)
    print(f"start-up to first sample and exit (median of 20, 1 period): rtgauge {a * 1e3:.1f} ms, "
          f"cyclictest {b * 1e3:.1f} ms, ratio {a / b:.2f}")


if __name__ == "__main__":
    main()
