#!/usr/bin/env python3
"""The cost of "was the run long enough?" on a day-long result of 64 CPUs (issue 25's target: the
whole analysis under 1 s). 64 series of 86 400 000 values each (24 h at 1 ms) with 86 400 1-s
timeline windows, half with an exponential tail and half with a heavy one (examples/forecast_cost.rs,
drawn as src/forecast/truth.rs draws them); the forecast and convergence of all of them timed
several times, release build, median reported. None of it runs in a measurement: it is made after
the run, from the histogram and the timeline.

    python3 bench/forecast_cost.py [--repeats 7] [--cpus 64]
"""
import argparse, subprocess
import common


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--cpus", type=int, default=64)
    a = ap.parse_args()
    common.header(common.rtgauge_version(common.BINARY))
    subprocess.run(["cargo", "run", "--quiet", "--profile", "dist", "--example", "forecast_cost", "--", str(a.cpus), str(a.repeats)],
                   cwd=common.ROOT, check=True)


if __name__ == "__main__":
    main()
