#!/usr/bin/env python3
"""rtgauge's probes beside the established tool for each, alternating A/B runs in one script:

  wakeup via=sem     vs ptsematest   (thread -> thread wake-up through a lock, one CPU)
  wakeup via=mq      vs pmqtest      (POSIX message queue)
  wakeup via=signal  vs sigwaittest  (signal taken with sigwait)
  noise              vs oslat        (busy loop; gaps of 2 us or more per second)
  period 10ms        vs cyclictest   (a 10 ms loop; the long cycles' excess, p99 of cycle - interval)
  udp                vs sockperf     (UDP ping-pong on loopback, mean round trip)

Same CPU, priority (the sender / handler at 99, or 80 for the busy loops), interval and length.
For the wake-up, rtgauge's `task` series (the task's wake-up - the handler's post) is the
counterpart of the rt-tests tools' receiver latency (their JSON gives its mean to 0.01 us). The
ratio reported is the median of the per-pair ratios rtgauge/anchor; CPU cost is the child's user +
system time (wait4) per sample. Needs rt-tests (ptsematest, pmqtest, sigwaittest, oslat) and, for
udp, sockperf; a missing tool's rows are skipped and say so.

    python3 bench/probes_vs_rt_tests.py [--repeats 5] [--loops 5000] [--seconds 5]
"""
import argparse, json, re, resource, shutil, statistics, subprocess, sys, tempfile, time
import common


def run_timed(argv, **kw):
    """Runs argv; returns (stdout, child CPU seconds)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(argv, capture_output=True, text=True, check=True, **kw).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return out, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def rtgauge(binary, measure, length):
    argv = [binary, "run", "--quiet", "--json", "-", "--warmup", "0", "--load", "none", "--measure", measure] + length
    out, cpu = run_timed(argv)
    return json.loads(out), cpu


def series(doc, name):
    return next(p for p in doc["probes"] if p.get("series", None) == name or (name is None and "series" not in p))


def wakeup(binary, via, tool, loops, cpu):
    """rtgauge's task series and the rt-tools receiver: (mean wake-up us, CPU us per sample)."""

    def ours():
        doc, c = rtgauge(binary, f"wakeup:via={via},priority=99@{cpu}", ["--loops", str(loops)])
        return series(doc, "task")["mean_ns"] / 1e3, 1e6 * c / loops

    def theirs():
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            _, c = run_timed([tool, "-a", str(cpu), "-t", "1", "-p", "99", "-i", "1000", "-l", str(loops), "-q", f"--json={f.name}"])
            return float(json.load(open(f.name))["thread"]["0"]["receiver"]["avg"]), 1e6 * c / loops

    return ours, theirs


def noise(binary, seconds, cpu):
    """Gaps of 2 us or more per second, and the CPU share: rtgauge's noise probe and oslat."""

    def ours():
        doc, c = rtgauge(binary, f"noise:threshold=1999ns@{cpu}", ["--duration", f"{seconds}s"])
        return doc["probes"][0]["samples"] / (doc["measured_ns"] / 1e9), c / seconds

    def theirs():
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            _, c = run_timed(["oslat", "--cpu-list", str(cpu), "-D", str(seconds), "--rtprio", "80", f"--json={f.name}"])
            th = next(iter(json.load(open(f.name))["thread"].values()))
            return sum(n for k, n in th["histogram"].items() if int(k) >= 2) / th["duration"], c / seconds

    return ours, theirs


def period(binary, seconds, cpu):
    """A 10 ms loop's cycle lengths at FIFO 80: the 99th percentile of cycle − interval (the long
    cycles' excess), and CPU us per cycle. rtgauge's period probe reports cycle lengths; cyclictest's
    per-wake-up latencies (-v) give them as interval + L(k) − L(k−1)."""
    interval_us, n = 10_000, seconds * 100

    def p99(values):
        v = sorted(values)
        return v[min(len(v) - 1, int(0.99 * len(v)))]

    def ours():
        doc, c = rtgauge(binary, f"period:interval=10ms,warmup=0@{cpu}", ["--duration", f"{seconds}s"])
        return doc["probes"][0]["p99_ns"] / 1e3 - interval_us, 1e6 * c / n

    def theirs():
        out, c = run_timed(["cyclictest", "-m", "-p", "80", "-a", str(cpu), "-t", "1", "-d", "0", "-i", str(interval_us),
                            "-l", str(n), "-v", "-q"])
        lat = [int(m.group(1)) for m in re.finditer(r"^\s*0:\s*\d+:\s*(\d+)\s*$", out, re.M)]
        return p99(interval_us + b - a for a, b in zip(lat, lat[1:])) - interval_us, 1e6 * c / n

    return ours, theirs


def udp(binary, seconds, cpu):
    """Mean UDP round trip on loopback at 1000/s, 64 bytes, and CPU us per round trip: rtgauge's udp
    probe against rtgauge udp-echo, sockperf ping-pong against sockperf's server (both at FIFO 80;
    the clients on `cpu`, the servers on another)."""
    n = 1000 * seconds
    server_cpu = 0 if cpu != 0 else 1

    def ours():
        echo = subprocess.Popen([binary, "udp-echo", "--listen", "127.0.0.1:11112", "--priority", "80", "--cpu", str(server_cpu)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(0.3)
            doc, c = rtgauge(binary, f"udp:target=127.0.0.1:11112,rate=1000,size=64@{cpu}", ["--loops", str(n)])
            return doc["probes"][0]["mean_ns"] / 1e3, 1e6 * c / n
        finally:
            echo.terminate()
            echo.wait()

    def theirs():
        server = subprocess.Popen(["taskset", "-c", str(server_cpu), "chrt", "-f", "80", "sockperf", "sr", "-i", "127.0.0.1", "-p", "11111"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(0.3)
            out, c = run_timed(["taskset", "-c", str(cpu), "chrt", "-f", "80", "sockperf", "pp", "-i", "127.0.0.1", "-p", "11111",
                                "-t", str(seconds), "--mps=1000", "-m", "64", "--full-rtt"])
            m = re.search(r"avg-(?:rtt|lat)\s*=\s*([0-9.]+)", out)
            if not m:
                sys.exit(f"no average in sockperf's output: {out}")
            return float(m.group(1)), 1e6 * c / n
        finally:
            server.terminate()
            server.wait()

    return ours, theirs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--loops", type=int, default=5000, help="wake-ups per run (1 ms apart)")
    ap.add_argument("--seconds", type=int, default=5, help="length of a noise or udp run")
    ap.add_argument("--cpu", type=int, default=1)
    ap.add_argument("--binary", default=common.BINARY)
    ap.add_argument("--only", help="run only the rows whose probe starts with this (e.g. period)")
    a = ap.parse_args()
    common.header(common.rtgauge_version(a.binary))
    print(f"# {a.repeats} A/B pairs per row, CPU {a.cpu}\n")
    print("| probe | anchor | what | rtgauge median | anchor median | ratio (median of pairs) [pairs] | CPU ratio |")
    print("|---|---|---|---|---|---|---|")
    rows = [
        ("wakeup via=sem", "ptsematest", "mean wake-up us", wakeup(a.binary, "sem", "ptsematest", a.loops, a.cpu)),
        ("wakeup via=mq", "pmqtest", "mean wake-up us", wakeup(a.binary, "mq", "pmqtest", a.loops, a.cpu)),
        ("wakeup via=signal", "sigwaittest", "mean wake-up us", wakeup(a.binary, "signal", "sigwaittest", a.loops, a.cpu)),
        ("noise", "oslat", "gaps >= 2 us per s", noise(a.binary, a.seconds, a.cpu)),
        ("period 10ms", "cyclictest", "p99 cycle - interval us", period(a.binary, a.seconds * 2, a.cpu)),
        ("udp", "sockperf", "mean round trip us", udp(a.binary, a.seconds, a.cpu)),
    ]
    for name, tool, what, (ours, theirs) in rows:
        if a.only and not name.startswith(a.only):
            continue
        if shutil.which(tool) is None:
            print(f"| {name} | {tool} | {what} | - | - | SKIPPED: {tool} not installed | - |")
            continue
        pairs = []
        for r in range(a.repeats):
            # Alternating: rtgauge first in even pairs, the anchor first in odd ones.
            if r % 2:
                t = theirs(); o = ours()
            else:
                o = ours(); t = theirs()
            pairs.append((o, t))
        ratio = [o[0] / t[0] if t[0] else float("inf") for o, t in pairs]
        cpu = [o[1] / t[1] if t[1] else float("inf") for o, t in pairs]
        print(f"| {name} | {tool} | {what} | {statistics.median(o[0] for o, _ in pairs):.2f} | "
              f"{statistics.median(t[0] for _, t in pairs):.2f} | {statistics.median(ratio):.3f} "
              f"[{', '.join(f'{x:.2f}' for x in ratio)}] | {statistics.median(cpu):.3f} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
