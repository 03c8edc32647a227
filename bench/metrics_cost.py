#!/usr/bin/env python3
"""What live metrics cost the measurement: a run scraped every second beside the same run without
--metrics, in alternating pairs.

Each run: `rtgauge run --cpus 1 -i 100us -D 60s --load none --no-store --quiet --json FILE`, once
as it is and once with `--metrics 127.0.0.1:PORT`, the order swapped every pair. During a run with
metrics a scraper thread GETs http://127.0.0.1:PORT/metrics every second, every other scrape with
`Accept: application/openmetrics-text; version=1.0.0` (the OpenMetrics form, as Prometheus asks),
the others with no Accept header (the text format).

Per run, from its JSON result: p50 and p99 per measured CPU (`probes[]` entries with a `cpu`),
and the samples (warm-up included); from the child's rusage (os.wait4): user + system CPU time,
divided by the samples. Peak RSS is the child's VmHWM, polled from /proc every 20 ms, not
ru_maxrss: ru_maxrss of a child started by Python carries Python's own high-water mark through
exec, and Python is larger than rtgauge (see bench/vs_cyclictest.py).

Reported per metric: the median over pairs of the ratio with / without, and the requirement of
issue 26: <= 1.02 for p50, p99 and CPU per sample; <= 1.1 for peak RSS. Needs root; CPU 1 must
exist (CPU 0 is left to rtgauge's own work, as --metrics requires).

    python3 bench/metrics_cost.py [--pairs 5] [--duration 60] [--interval 100us] [--binary PATH]
"""
import argparse, json, os, socket, statistics, subprocess, sys, tempfile, threading, time
import urllib.error, urllib.request
import common

OPENMETRICS = "application/openmetrics-text; version=1.0.0"


def free_port():
    """A loopback port free now (the kernel's choice); rtgauge binds it a moment later."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Scraper:
    """GETs URL every `every` seconds until stopped, alternating the two Accept forms; counts
    the answers of each form, those that were not what they should be, and the attempts made
    before the server answered for the first time (rtgauge binds before it measures)."""

    def __init__(self, url, every=1.0):
        self.url, self.every = url, every
        self.done = threading.Event()
        self.stats = {"text": 0, "openmetrics": 0, "refused_before_first": 0, "failed": 0, "bad": 0}
        self.errors = []
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.done.set()
        self.thread.join()

    def loop(self):
        n, answered = 0, False
        next_at = time.monotonic()
        while not self.done.is_set():
            om = n % 2 == 1
            req = urllib.request.Request(self.url, headers={"Accept": OPENMETRICS} if om else {})
            try:
                with urllib.request.urlopen(req, timeout=2) as r:
                    body = r.read().decode("utf-8", "replace")
                    ctype = r.headers.get("Content-Type", "")
                answered = True
                ok = "rtgauge_samples_total" in body and (
                    ctype.startswith("application/openmetrics-text") and body.rstrip().endswith("# EOF")
                    if om else ctype.startswith("text/plain"))
                if ok:
                    self.stats["openmetrics" if om else "text"] += 1
                else:
                    self.stats["bad"] += 1
                    self.errors.append(f"scrape {n}: Content-Type '{ctype}', {len(body)} bytes")
                n += 1
            except (urllib.error.URLError, OSError) as e:
                if answered:
                    self.stats["failed"] += 1
                    self.errors.append(f"scrape {n}: {e}")
                    n += 1
                else:
                    self.stats["refused_before_first"] += 1
            next_at += self.every
            self.done.wait(max(0.0, next_at - time.monotonic()))


def run_once(binary, args, port, json_path):
    """One run; returns {cpu: (p50_ns, p99_ns)}, samples (warm-up included), CPU seconds, peak
    RSS KiB and the scraper's counts (None without metrics)."""
    argv = [binary, "run", "--cpus", args.cpus, "-i", args.interval, "-D", f"{args.duration}s",
            "--load", "none", "--no-store", "--quiet", "--json", json_path]
    if port is not None:
        argv += ["--metrics", f"127.0.0.1:{port}"]
    scraper = Scraper(f"http://127.0.0.1:{port}/metrics").start() if port is not None else None
    try:
        _, cpu_s, hwm = common.run_rusage(argv)
    finally:
        if scraper:
            scraper.stop()
    with open(json_path) as f:
        doc = json.load(f)
    per_cpu, samples = {}, 0
    for e in doc["probes"]:
        if e.get("cpu") is None:
            continue  # the combined entry
        per_cpu[(e["probe"], e.get("series"), e["cpu"])] = (e["p50_ns"], e["p99_ns"])
        samples += e["samples"] + e["warmup_samples"]
    return per_cpu, samples, cpu_s, hwm, scraper


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=5, help="alternating pairs of runs (default 5)")
    ap.add_argument("--duration", type=int, default=60, help="seconds measured per run (default 60)")
    ap.add_argument("--interval", default="100us", help="the timer's period (default 100us)")
    ap.add_argument("--cpus", default="1", help="CPUs measured (default 1; CPU 0 stays rtgauge's own)")
    ap.add_argument("--binary", default=common.BINARY)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("metrics_cost.py: run as root (SCHED_FIFO, mlockall)")
    version = common.rtgauge_version(args.binary)
    common.header(version)
    print(f"# each run: {args.duration} s, interval {args.interval}, CPUs {args.cpus}, --load none, "
          f"--no-store; {args.pairs} alternating pairs; scraped every 1 s with --metrics\n")

    tmp = tempfile.mkdtemp(prefix="rtgauge-bench-metrics-")
    rows = []  # (pair, with_metrics, per_cpu, samples, cpu_s, hwm, scraper)
    for i in range(args.pairs):
        order = [False, True] if i % 2 == 0 else [True, False]
        for with_metrics in order:
            port = free_port() if with_metrics else None
            path = os.path.join(tmp, f"pair{i}-{'with' if with_metrics else 'without'}.json")
            res = run_once(args.binary, args, port, path)
            rows.append((i, with_metrics) + res)
            os.remove(path)
            s = res[4]
            scraped = (f", scrapes: {s.stats['text']} text + {s.stats['openmetrics']} OpenMetrics, "
                       f"{s.stats['failed']} failed, {s.stats['bad']} wrong") if s else ""
            print(f"pair {i + 1} {'with   ' if with_metrics else 'without'}: samples {res[1]}, "
                  f"CPU {res[2]:.3f} s, peak RSS {res[3]} KiB{scraped}", file=sys.stderr)
    os.rmdir(tmp)

    print("| pair | metrics | CPU | p50 us | p99 us | CPU us/sample | peak RSS KiB | scrapes (text + OM; failed, wrong) |")
    print("|---|---|---|---|---|---|---|---|")
    for i, w, per_cpu, samples, cpu_s, hwm, s in rows:
        for key, (p50, p99) in sorted(per_cpu.items(), key=lambda kv: str(kv[0])):
            sc = f"{s.stats['text']} + {s.stats['openmetrics']}; {s.stats['failed']}, {s.stats['bad']}" if s else "-"
            print(f"| {i + 1} | {'with' if w else 'without'} | {key[2]} | {p50 / 1e3:.3f} | {p99 / 1e3:.3f} | "
                  f"{cpu_s * 1e6 / samples:.3f} | {hwm} | {sc} |")

    ratios = {"p50": [], "p99": [], "cpu": [], "rss": []}
    for i in range(args.pairs):
        a = next(r for r in rows if r[0] == i and r[1])
        b = next(r for r in rows if r[0] == i and not r[1])
        for key in a[2]:
            if key in b[2]:
                ratios["p50"].append(a[2][key][0] / b[2][key][0])
                ratios["p99"].append(a[2][key][1] / b[2][key][1])
        ratios["cpu"].append((a[4] / a[3]) / (b[4] / b[3]))
        ratios["rss"].append(a[5] / b[5])
    print("\nRatios with / without --metrics (median over pairs; each pair's in brackets):")
    for key, name, bound in [("p50", "p50", 1.02), ("p99", "p99", 1.02), ("cpu", "CPU per sample", 1.02),
                             ("rss", "peak RSS", 1.1)]:
        med = statistics.median(ratios[key])
        verdict = "met" if med <= bound else "NOT met"
        print(f"- {name}: {med:.3f} [{', '.join(f'{r:.3f}' for r in ratios[key])}] "
              f"(requirement <= {bound}: {verdict})")
    errors = [e for r in rows if r[6] for e in r[6].errors]
    if errors:
        print(f"\nScrapes that failed or were wrong ({len(errors)}); the first ones:")
        for e in errors[:10]:
            print(f"- {e}")


if __name__ == "__main__":
    main()
