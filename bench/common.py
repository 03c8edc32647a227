"""What the benchmark scripts share: the release binary, built if it is missing, and the header
lines that say when, where and with what a run was made (BENCHMARKS.md records them)."""
import os, platform, subprocess, sys, threading, time

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


def vm_hwm_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def run_rusage(argv):
    """Runs argv; returns (stdout, user+sys CPU seconds, peak RSS KiB).

    CPU time comes from wait4's rusage. Peak RSS does not: ru_maxrss of a child started by
    Python includes Python's own high-water mark (carried through vfork+exec), so the child's
    VmHWM is polled from /proc every 20 ms instead (monotonic; the last value read is the peak
    up to 20 ms before exit)."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    box = {"hwm": 0}
    done = threading.Event()
    def poll():
        # Must not reap the child (p.poll() would): wait4 below needs it for the rusage.
        while not done.is_set():
            v = vm_hwm_kib(p.pid)
            if v:
                box["hwm"] = max(box["hwm"], v)
            time.sleep(0.02)
    t = threading.Thread(target=poll, daemon=True)
    t.start()
    out, err = p.stdout.read(), p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    done.set()
    t.join()
    if p.returncode != 0:
        sys.exit(f"{argv[0]} failed ({p.returncode}): {err.decode()[-500:]}")
    return out, ru.ru_utime + ru.ru_stime, box["hwm"]
