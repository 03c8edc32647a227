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


class dma_latency_held:
    """Holds /dev/cpu_dma_latency at 0 us while the `with` block runs (the kernel drops the
    request when the file is closed), so a tool that does not ask for it itself (sockperf) runs
    with the CPU idle policy rtgauge and the rt-tests tools ask for."""

    def __enter__(self):
        import struct
        try:
            self.fd = os.open("/dev/cpu_dma_latency", os.O_WRONLY)
            os.write(self.fd, struct.pack("i", 0))
        except OSError as e:
            sys.exit(f"cannot hold /dev/cpu_dma_latency at 0 ({e}): run as root")
        return self

    def __exit__(self, *exc):
        os.close(self.fd)
