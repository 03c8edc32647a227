#!/usr/bin/env python3
"""rtgauge's probes beside the established tool for each, alternating A/B runs in one script:

  wakeup shape=ping-pong via=sem     vs ptsematest   (thread -> thread wake-up through a lock, one CPU)
  wakeup shape=ping-pong via=mq      vs pmqtest      (POSIX message queue)
  wakeup shape=ping-pong via=signal  vs sigwaittest  (signal taken with sigwait)
  and the same three with the probe's default shape, the chain
  noise              vs oslat        (busy loop; gaps of 2 us or more per second)
  period 10ms        vs cyclictest   (a 10 ms loop; its jitter, p90 of |cycle - interval|)
  udp                vs sockperf     (UDP ping-pong across a veth pair, median round trip)

Same CPU, priority (the sender / handler at 99, or 80 for the busy loops), interval and length,
and the same CPU idle policy: the script holds /dev/cpu_dma_latency at 0 for every row, as
rtgauge, cyclictest, oslat and the rt-tests tools do for themselves and sockperf does not (on a
guest whose idle driver is haltpoll, a CPU that may halt takes tens of microseconds longer to
answer a packet).
For the wake-up, `shape=ping-pong` times the rt-tests tools' own shape (a receiver woken by its
timer wakes a sender and blocks; the sender posts back): its `pong` series (the receiver's wake-up -
the sender's post) is the counterpart of their receiver latency (their JSON gives its mean to
0.01 us); both threads at FIFO 99 on one CPU, as theirs.

The probe's default shape, the chain, times another wake-up (its task blocked an interval before,
the rt-tests receiver microseconds before), so its rows (`task` series) are also run against
bench/wake_chain.c (compiled here with gcc): the probe's chain written in plain C ("C chain"),
which tells rtgauge's own cost from the shape; and a control row checks that program against
ptsematest in ptsematest's own shape ("C ping-pong"). The
ratio reported is the median of the per-pair ratios rtgauge/anchor; CPU cost is the child's user +
system time (wait4) per sample. Needs rt-tests (ptsematest, pmqtest, sigwaittest, oslat) and, for
udp, sockperf; a missing tool's rows are skipped and say so.

    python3 bench/probes_vs_rt_tests.py [--repeats 5] [--loops 5000] [--seconds 5]
"""
import argparse, json, os, re, resource, shutil, statistics, subprocess, sys, tempfile, time
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


def wakeup(binary, via, tool, loops, cpu, shape="chain"):
    """rtgauge's task series (the chain) or pong series (the ping-pong) and the rt-tools receiver:
    (mean wake-up us, CPU us per sample)."""

    def ours():
        doc, c = rtgauge(binary, f"wakeup:via={via},shape={shape},priority=99@{cpu}", ["--loops", str(loops)])
        return series(doc, "task" if shape == "chain" else "pong")["mean_ns"] / 1e3, 1e6 * c / loops

    def theirs():
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            _, c = run_timed([tool, "-a", str(cpu), "-t", "1", "-p", "99", "-i", "1000", "-l", str(loops), "-q", f"--json={f.name}"])
            return float(json.load(open(f.name))["thread"]["0"]["receiver"]["avg"]), 1e6 * c / loops

    return ours, theirs


def c_chain(program, shape, via, loops, cpu, kill=""):
    """bench/wake_chain.c in `shape` (chain: the probe's; pingpong: ptsematest's), a signal sent
    by a raw tgkill or (`kill="pthread"`) by pthread_kill: (mean us, CPU us per sample)."""

    def run():
        env = dict(os.environ, WAKE_CHAIN_KILL=kill)
        out, c = run_timed([program, shape, via, str(cpu), str(loops)], env=env)
        return float(out.strip()), 1e6 * c / loops

    return run


def build_wake_chain():
    """Compiles bench/wake_chain.c into a temporary directory; None without a C compiler."""
    if shutil.which("gcc") is None:
        return None
    out = os.path.join(tempfile.mkdtemp(prefix="wake_chain-"), "wake_chain")
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "wake_chain.c")
    subprocess.run(["gcc", "-O2", "-o", out, src, "-lpthread", "-lrt"], check=True)
    return out


def noise(binary, seconds, cpu):
    """Gaps of 2 us or more per second, and the CPU share: rtgauge's noise probe (threshold 1999 ns:
    a gap counts when it is longer) and oslat (its histogram from key 3 up, see below; until
    2026-11-25 this row summed from key 2, counting oslat's gaps of 1 us or more)."""

    def ours():
        doc, c = rtgauge(binary, f"noise:threshold=1999ns@{cpu}", ["--duration", f"{seconds}s"])
        return doc["probes"][0]["samples"] / (doc["measured_ns"] / 1e9), c / seconds

    def theirs():
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            _, c = run_timed(["oslat", "--cpu-list", str(cpu), "-D", str(seconds), "--rtprio", "80", f"--json={f.name}"])
            th = next(iter(json.load(open(f.name))["thread"].values()))
            # oslat files a gap of v us (floor) under key v + 1 (its "us = index + 1"): key 2 holds
            # the gaps of 1 to 2 us, so gaps of 2 us or more are the keys from 3 up.
            return sum(n for k, n in th["histogram"].items() if int(k) >= 3) / th["duration"], c / seconds

    return ours, theirs


def period(binary, seconds, cpu):
    """A 10 ms loop at FIFO 80: the 90th percentile of the cycles' jitter |cycle − interval|, and CPU
    us per cycle. rtgauge's period probe reports it as its `jitter` series (ns steps near zero; its
    `cycle` series keeps 3 significant digits of 10 ms, 8 us steps, too coarse for this row);
    cyclictest's per-wake-up latencies in ns (-v -N) give it as |L(k) − L(k−1)|. (The 99th
    percentile, the 20th-largest of 2000 cycles, follows the hypervisor's stalls from one pair to the
    next: ratios 0.01 to 2.54 on 2026-11-23.)"""
    interval_us, n = 10_000, seconds * 100

    def p90(values):
        v = sorted(values)
        return v[min(len(v) - 1, int(0.90 * len(v)))]

    def ours():
        doc, c = rtgauge(binary, f"period:interval=10ms,warmup=0@{cpu}", ["--duration", f"{seconds}s"])
        jitter = next(p for p in doc["probes"] if p.get("series") == "jitter")
        return jitter["p90_ns"] / 1e3, 1e6 * c / n

    def theirs():
        out, c = run_timed(["cyclictest", "-m", "-p", "80", "-a", str(cpu), "-t", "1", "-d", "0", "-i", str(interval_us),
                            "-l", str(n), "-v", "-q", "-N"])
        lat = [int(m.group(1)) for m in re.finditer(r"^\s*0:\s*\d+:\s*(\d+)\s*$", out, re.M)]
        return p90(abs(b - a) for a, b in zip(lat, lat[1:])) / 1e3, 1e6 * c / n

    return ours, theirs


class Veth:
    """Two network namespaces joined by a veth pair (client 10.213.0.1, server 10.213.0.2), made
    here and removed on exit: the udp row runs both tools across it, as netperf UDP_RR would be."""
    A, B, SERVER = "rtgauge-bench-a", "rtgauge-bench-b", "10.213.0.2"

    def __enter__(self):
        ip = lambda *a: subprocess.run(["ip"] + list(a), check=True, capture_output=True)
        self.__exit__()
        ip("netns", "add", self.A)
        ip("netns", "add", self.B)
        ip("link", "add", "rtgb-a", "netns", self.A, "type", "veth", "peer", "name", "rtgb-b", "netns", self.B)
        for ns, dev, addr in ((self.A, "rtgb-a", "10.213.0.1/24"), (self.B, "rtgb-b", "10.213.0.2/24")):
            ip("-n", ns, "addr", "add", addr, "dev", dev)
            ip("-n", ns, "link", "set", dev, "up")
            ip("-n", ns, "link", "set", "lo", "up")
        return self

    def __exit__(self, *_):
        for ns in (self.A, self.B):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)

    def client(self, argv):
        return ["ip", "netns", "exec", self.A] + argv

    def server(self, argv):
        return ["ip", "netns", "exec", self.B] + argv


def udp(binary, seconds, cpu, veth):
    """Median UDP round trip across the veth pair at 1000/s, 64 bytes, and CPU us per round trip:
    rtgauge's udp probe against rtgauge udp-echo, sockperf ping-pong against sockperf's server (both
    at FIFO 80; the clients on `cpu`, the servers on another). The median, not the mean: on this VM
    a few millisecond stalls move the mean of 5000 round trips by more than the tools differ."""
    n = 1000 * seconds
    server_cpu = 0 if cpu != 0 else 1
    target = f"{veth.SERVER}:11112"

    def ours():
        echo = subprocess.Popen(veth.server([binary, "udp-echo", "--listen", target, "--priority", "80", "--cpu", str(server_cpu)]),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(0.3)
            argv = [binary, "run", "--quiet", "--json", "-", "--warmup", "0", "--load", "none",
                    "--measure", f"udp:target={target},rate=1000,size=64@{cpu}", "--loops", str(n)]
            out, c = run_timed(veth.client(argv))
            return json.loads(out)["probes"][0]["p50_ns"] / 1e3, 1e6 * c / n
        finally:
            echo.terminate()
            echo.wait()

    def theirs():
        server = subprocess.Popen(veth.server(["taskset", "-c", str(server_cpu), "chrt", "-f", "80", "sockperf", "sr", "-i", veth.SERVER, "-p", "11111"]),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(0.3)
            out, c = run_timed(veth.client(["taskset", "-c", str(cpu), "chrt", "-f", "80", "sockperf", "pp", "-i", veth.SERVER, "-p", "11111",
                                            "-t", str(seconds), "--mps=1000", "-m", "64", "--full-rtt"]))
            m = re.search(r"percentile 50\.000\s*=\s*([0-9.]+)", out)
            if not m:
                sys.exit(f"no median in sockperf's output: {out}")
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
    chain = build_wake_chain()

    def wake_rows(via, tool):
        rows = [(f"wakeup shape=ping-pong via={via}", tool, "mean wake-up us",
                 wakeup(a.binary, via, tool, a.loops, a.cpu, "ping-pong"), tool)]
        ours, theirs = wakeup(a.binary, via, tool, a.loops, a.cpu)
        rows.append((f"wakeup via={via}", tool, "mean wake-up us", (ours, theirs), tool))
        if chain:
            rows.append((f"wakeup via={via}", "C chain", "mean wake-up us", (ours, c_chain(chain, "chain", via, a.loops, a.cpu)), "gcc"))
        return rows

    def rows(veth):
        return wakeup_rows() + [
            ("noise", "oslat", "gaps >= 2 us per s", noise(a.binary, a.seconds, a.cpu), "oslat"),
            ("period 10ms", "cyclictest", "p90 |cycle - interval| us", period(a.binary, a.seconds * 4, a.cpu), "cyclictest"),
            ("udp", "sockperf", "median round trip us (veth)", udp(a.binary, a.seconds, a.cpu, veth), "sockperf"),
        ]

    def wakeup_rows():
        rows = wake_rows("sem", "ptsematest") + wake_rows("mq", "pmqtest") + wake_rows("signal", "sigwaittest")
        if chain:
            control = (c_chain(chain, "pingpong", "sem", a.loops, a.cpu), wakeup(a.binary, "sem", "ptsematest", a.loops, a.cpu)[1])
            rows.append(("C ping-pong (control)", "ptsematest", "mean wake-up us", control, "ptsematest"))
            # The signal's ping-pong: sent as rtgauge sends it (tgkill) and as sigwaittest does
            # (glibc's pthread_kill, which blocks every signal around its tgkill).
            sigwait = wakeup(a.binary, "signal", "sigwaittest", a.loops, a.cpu)[1]
            for kill, how in (("", "tgkill"), ("pthread", "pthread_kill")):
                c = c_chain(chain, "pingpong", "signal", a.loops, a.cpu, kill)
                rows.append((f"C ping-pong signal, {how} (control)", "sigwaittest", "mean wake-up us", (c, sigwait), "sigwaittest"))
            ours = wakeup(a.binary, "signal", "sigwaittest", a.loops, a.cpu, "ping-pong")[0]
            tgkill = c_chain(chain, "pingpong", "signal", a.loops, a.cpu)
            rows.append(("wakeup shape=ping-pong via=signal", "C ping-pong signal, tgkill", "mean wake-up us", (ours, tgkill), "gcc"))
        return rows

    with Veth() as veth, common.dma_latency_held():
        measure(a, rows(veth))


def measure(a, rows):
    for name, tool, what, (ours, theirs), needs in rows:
        if a.only and not name.startswith(a.only):
            continue
        if shutil.which(needs) is None:
            print(f"| {name} | {tool} | {what} | - | - | SKIPPED: {needs} not installed | - |")
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
