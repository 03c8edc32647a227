"""What the benchmark scripts share: the release binary, built if it is missing, and the header
lines that say when, where and with what a run was made (BENCHMARKS.md records them)."""
import os, platform, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = os.path.join(ROOT, "target", "release", "rtgauge")


def rtgauge_version(binary):
    """Builds the release binary if `binary` is missing; returns its `--version` line."""
    if not os.path.exists(binary):
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    return subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.strip()


def header(version, anchor=""):
    """Prints the date, machine, kernel, CPUs, rtgauge's version (and the anchor's), and the command."""
    print(f"# {time.strftime('%Y-%m-%d %H:%M')} · {platform.node()} · kernel {platform.release()} · "
          f"{os.cpu_count()} CPUs · {version}{anchor}")
    print(f"# command: {' '.join(sys.argv)}")
