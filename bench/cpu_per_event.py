#!/usr/bin/env python3
"""CPU per event of the wake-up ping-pong, rtgauge's against the rt-tests tool's, split into what a
run costs once (start-up, audit, the result and, unless --no-store, storing it) and what each event
costs. bench/probes_vs_rt_tests.py reports CPU per sample of whole runs; this tells the two apart.

For each mechanism (sem vs ptsematest, mq vs pmqtest, signal vs sigwaittest), alternating, each
round runs: rtgauge `wakeup:shape=ping-pong,via=V,priority=99@CPU` stored and with --no-store, and
the tool (`-a CPU -t 1 -p 99 -i 1000`), each with --short and --long events. CPU is the child's
user + system time (wait4). Per event = (long - short) / (long events - short events); once = the
short run's CPU minus its events' share.

    python3 bench/cpu_per_event.py [--rounds 5] [--short 10] [--long 5000] [--cpu 1]
"""
import argparse, resource, statistics, subprocess
import common

TOOLS = {"sem": "ptsematest", "mq": "pmqtest", "signal": "sigwaittest"}


def cpu_ms(argv):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, capture_output=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return 1e3 * ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--short", type=int, default=10)
    ap.add_argument("--long", type=int, default=5000)
    ap.add_argument("--cpu", type=int, default=1)
    ap.add_argument("--binary", default=common.BINARY)
    a = ap.parse_args()
    common.header(common.rtgauge_version(a.binary))
    print(f"# {a.rounds} rounds, {a.short} and {a.long} events, CPU {a.cpu}; medians in ms (once) and us (per event)\n")
    print("| via | who | once ms | per event us | per event vs tool |")
    print("|---|---|---|---|---|")
    with common.dma_latency_held():
        for via, tool in TOOLS.items():
            def ours(n, store):
                return [a.binary, "run", "-q", "--json", "/dev/null", "--warmup", "0", "--load", "none", "--loops", str(n),
                        "--measure", f"wakeup:shape=ping-pong,via={via},priority=99@{a.cpu}"] + ([] if store else ["--no-store"])

            def theirs(n):
                return [tool, "-a", str(a.cpu), "-t", "1", "-p", "99", "-i", "1000", "-l", str(n), "-q"]

            runs = {"rtgauge": lambda n: ours(n, True), "rtgauge --no-store": lambda n: ours(n, False), tool: theirs}
            got = {who: {"short": [], "long": []} for who in runs}
            for r in range(a.rounds):
                order = list(runs.items())
                order = order[r % len(order):] + order[:r % len(order)]  # rotate who goes first
                for who, argv in order:
                    got[who]["short"].append(cpu_ms(argv(a.short)))
                    got[who]["long"].append(cpu_ms(argv(a.long)))
            per = {}
            for who, g in got.items():
                each = statistics.median((l - s) / (a.long - a.short) for s, l in zip(g["short"], g["long"])) * 1e3
                once = statistics.median(g["short"]) - each * a.short / 1e3
                per[who] = (once, each)
            for who, (once, each) in per.items():
                print(f"| {via} | {who} | {once:.2f} | {each:.2f} | {each / per[tool][1]:.3f} |")


if __name__ == "__main__":
    main()
