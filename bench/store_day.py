#!/usr/bin/env python3
"""Storing a 24 h result of 64 CPUs (issue 9's target: under 100 ms). Takes a real result document
(a short run of the release binary on CPU 0), widens it to 64 CPUs with a day of 1 s timeline
windows each (examples/store_day.rs), and times the library's Store::save several times.

    python3 bench/store_day.py [--repeats 5]
"""
import argparse, os, subprocess, sys, tempfile
import common


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    version = common.rtgauge_version(common.BINARY)
    common.header(version)
    with tempfile.TemporaryDirectory() as d:
        template = os.path.join(d, "one.json")
        subprocess.run([common.BINARY, "run", "-q", "--no-store", "--loops", "2000", "--warmup", "0", "--cpus", "0",
                        "--load", "none", "--json", template], check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["cargo", "run", "--quiet", "--profile", "dist", "--example", "store_day", "--", template, str(a.repeats)],
                       cwd=common.ROOT, check=True)


if __name__ == "__main__":
    main()
