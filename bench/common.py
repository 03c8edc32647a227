"""What the benchmark scripts share: the release binary, built if it is missing, and the header
lines that say when, where and with what a run was made (BENCHMARKS.md records them)."""
import os, platform, re, subprocess, sys, threading, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The fully optimised build (the `dist` profile: fat LTO, one codegen unit), as boards get it;
# `--binary target/release/rtgauge` measures the default release profile instead.
BINARY = os.path.join(ROOT, "target", "dist", "rtgauge")


def rtgauge_version(binary):
    """Builds the `dist` binary if `binary` is it and missing; returns its `--version` line."""
    if not os.path.exists(binary) and os.path.abspath(binary) == BINARY:
        subprocess.run(["cargo", "build", "--profile", "dist", "--quiet"], cwd=ROOT, check=True)
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


class RssTrace:
    """The exact resident set of one process and its peak, from the kernel's `kmem:rss_stat`
    trace event, in a tracefs instance of its own. Since Linux 6.2 the event fires at every
    change of a process's file, anonymous or shared-memory page count and carries the count's
    exact value (checked here: one event per page touched, 4096 B apart); older kernels are
    refused.

    Why not VmHWM: the kernel raises its high-water mark (`mm->hiwater_rss`) only when memory is
    unmapped, from per-CPU counters read without summing them, each of which lags the truth by up
    to 31 pages per CPU either way (VmHWM is the larger of that mark and the resident set when
    read). RSS is the sum of two or three such counters: on a 2-CPU machine the mark can be
    several hundred KiB off, more than 1 % of rtgauge's resident set (seen here: one VmHWM reading
    16 KiB lower than the one a minute before, and VmHWM up to 184 KiB under the exact peak).

    Use as a context manager (the instance, and a mount made for it, are removed however the
    script ends): `with RssTrace() as t:`, `p = subprocess.Popen(..., preexec_fn=t.follow_me)`,
    `t.start(p.pid)`; `t.now()` -> (exact KiB, peak KiB so far); `t.close()` -> events lost (0:
    exact). The process followed is the one started (its threads share its memory); a child it
    starts is traced too (event-fork) but counted apart, by its own memory's id."""

    ROOT = "/sys/kernel/tracing"

    def __init__(self, name=None):
        release = tuple(int(x) for x in re.findall(r"\d+", platform.release())[:2])
        if release < (6, 2):
            sys.exit(f"RssTrace: kernel {platform.release()}: kmem:rss_stat is exact from Linux 6.2 on")
        self.mounted = not os.path.isdir(os.path.join(self.ROOT, "instances"))
        if self.mounted:
            subprocess.run(["mount", "-t", "tracefs", "nodev", self.ROOT], check=True)
        # A name of this process's own: another benchmark may be tracing beside it.
        self.dir = os.path.join(self.ROOT, "instances", name or f"rtgauge-bench-rss-{os.getpid()}")
        os.mkdir(self.dir)
        self._write("tracing_on", "0")
        self._write("buffer_size_kb", "8192")
        self._write("options/event-fork", "1")
        self._write("events/kmem/rss_stat/enable", "1")
        self.lock = threading.Lock()
        self.mms = {}        # mm_id -> {"members": {type: bytes}, "peak": bytes, "at_peak": {type: bytes}}
        self.current = None  # the followed process's memory: of its latest event from its own pid
        self.pid = None
        self.thread = None
        self.stop = False
        self.started = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _write(self, rel, text):
        with open(os.path.join(self.dir, rel), "w") as f:
            f.write(text)

    def follow_me(self):
        """For preexec_fn: traces the child (and, with event-fork, its threads) from before exec."""
        self._write("set_event_pid", str(os.getpid()))
        self._write("tracing_on", "1")

    def start(self, pid):
        self.pid = pid
        self.started = time.monotonic()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        import select
        # "<comm>-<pid> [(<tgid>)] [<cpu>] <flags> <time>: rss_stat: mm_id=.. curr=.. type=.. size=..B"
        pat = re.compile(rb"-(\d+)\s+(?:\(\s*[\d-]+\)\s+)?\[\d+\].*rss_stat: mm_id=(\d+) curr=(\d) type=(\w+) size=(-?\d+)B")
        fd = os.open(os.path.join(self.dir, "trace_pipe"), os.O_RDONLY | os.O_NONBLOCK)
        buf = b""
        while not self.stop:
            select.select([fd], [], [], 0.2)
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                continue
            buf += chunk
            *lines, buf = buf.split(b"\n")
            with self.lock:
                for line in lines:
                    m = pat.search(line)
                    if not m or m.group(4) == b"MM_SWAPENTS":
                        continue
                    pid, mm, curr, kind, size = int(m.group(1)), int(m.group(2)), m.group(3) == b"1", m.group(4), int(m.group(5))
                    st = self.mms.setdefault(mm, {"members": {}, "peak": 0, "at_peak": {}})
                    st["members"][kind] = size
                    total = sum(st["members"].values())
                    if total > st["peak"]:
                        st["peak"], st["at_peak"] = total, dict(st["members"])
                    # The process's own thread, in its own memory (exec gives it new memory:
                    # the last one is its own).
                    if curr and pid == self.pid:
                        self.current = mm
        os.close(fd)

    def split(self):
        """The peak's parts: 'peak: anon 5678 file 1234; now: ...' (KiB)."""
        with self.lock:
            st = self.mms.get(self.current)
            if st is None:
                return ""
            name = lambda d: " ".join(f"{k.decode()[3:-5].lower()} {v // 1024}" for k, v in sorted(d.items()))
            return f"peak: {name(st['at_peak'])}; now: {name(st['members'])}"

    def now(self):
        """(exact resident KiB, its peak KiB so far) of the followed process; None before its first
        event. Exits when no event of it was read 10 s after the start (the trace is not working)."""
        time.sleep(0.3)  # let the reader catch up with what the kernel has buffered
        with self.lock:
            st = self.mms.get(self.current)
        if st is None:
            if time.monotonic() - self.started > 10:
                self.close()
                sys.exit("RssTrace: no kmem:rss_stat event of the process read in 10 s")
            return None
        with self.lock:
            return sum(st["members"].values()) // 1024, st["peak"] // 1024

    def close(self):
        """Stops tracing and removes the instance (and a mount made for it); returns the events the
        buffer lost (0: exact). Safe to call twice."""
        if self.dir is None:
            return 0
        lost = 0
        try:
            for cpu in os.listdir(os.path.join(self.dir, "per_cpu")):
                with open(os.path.join(self.dir, "per_cpu", cpu, "stats")) as f:
                    for line in f:
                        if line.startswith(("overrun:", "dropped events:")):
                            lost += int(line.split()[-1])
        except OSError:
            pass
        self._write("tracing_on", "0")
        self.stop = True
        if self.thread is not None:
            self.thread.join()
        self._write("events/kmem/rss_stat/enable", "0")
        os.rmdir(self.dir)
        self.dir = None
        if self.mounted:
            # Mounted here: unmounted again (left alone if someone else uses it by now).
            subprocess.run(["umount", self.ROOT], stderr=subprocess.DEVNULL)
        return lost
