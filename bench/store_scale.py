#!/usr/bin/env python3
"""A lab's store at scale (issue 23: with 100 000 runs of 200 boards stored, `list` filtered by
board and by date under 300 ms, `show`/`report` of a run and `compare` of two under 1 s, storing
a 10-minute 2-CPU run under 200 ms), for both stores: a SQLite file in a temporary directory, and
a PostgreSQL database in a throw-away cluster of the script's own (Debian's initdb + pg_ctl, as
the postgres user when run as root; stopped and removed at the end).

The store is filled through the library's own Store::save (examples/store_scale.rs) with runs
made from a real result document (a 2 s run of the release binary on CPUs 0 and 1, or
--template FILE), varied as a lab's runs vary. Then the release binary is timed as a user sees
it (the process's wall clock, its output to a pipe), the commands alternating, --repeat times
each: `list --board B`, `list --since D`, both, each with the default bound (the newest 100) and
with --all; `show RUN` (by id and by UUID), `report RUN --html`, `compare A B`; and storing a
10-minute 2-CPU run (its 600 1-s windows a series): `rtgauge import FILE` of such a document (a
fresh UUID each), and the library's Store::save of it alone. Medians are printed, and the store's
size per run once filled (SQLite: the file over the runs; PostgreSQL: pg_database_size over the
runs, and the runs' tables alone), and how much a 10-minute run adds.

    python3 bench/store_scale.py [--runs 100000] [--boards 200] [--repeat 15] [--backend sqlite|postgres|both]
"""
import argparse, glob, json, os, shutil, socket, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import BINARY, ROOT, header, rtgauge_version

EXAMPLE = os.path.join(ROOT, "target", "dist", "examples", "store_scale")


def example(*args):
    subprocess.run([EXAMPLE, *map(str, args)], check=True)


def timed(argv):
    start = time.perf_counter()
    out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if out.returncode not in (0, 1):
        sys.exit(f"{' '.join(argv)} failed: {out.stderr.decode()}")
    return elapsed


def listed(db, *extra):
    out = subprocess.run([BINARY, "list", "--json", "--db", db, *extra], capture_output=True, check=True)
    return json.loads(out.stdout)


class Cluster:
    """A PostgreSQL cluster of the script's own in a temporary directory, on a free port of
    127.0.0.1, trusting local connections; as the postgres user when run as root."""

    def __init__(self):
        bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
        if not bins:
            sys.exit("PostgreSQL is not installed (apt-get install postgresql); or give --backend sqlite")
        self.bin = os.path.dirname(bins[-1])
        self.dir = tempfile.mkdtemp(prefix="rtgauge-pg-bench-", dir="/tmp")
        self.root = os.geteuid() == 0
        if self.root:
            shutil.chown(self.dir, "postgres", "postgres")
        self.data = os.path.join(self.dir, "data")
        self.as_server(["initdb", "-D", self.data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "-N"])
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"postgres://postgres@127.0.0.1:{self.port}/postgres?sslmode=disable"

    def as_server(self, argv):
        prefix = ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--"] if self.root else []
        subprocess.run(prefix + [os.path.join(self.bin, argv[0]), *argv[1:]], check=True, stdout=subprocess.DEVNULL)

    def start(self, durable):
        """Started with PostgreSQL's defaults (`durable`: every commit flushed, as a lab's server),
        or without flushing anything (to fill the store quickly)."""
        options = f"-k {self.dir} -p {self.port} -c listen_addresses=127.0.0.1"
        if not durable:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        self.as_server(["pg_ctl", "-D", self.data, "-l", os.path.join(self.dir, "log"), "-w", "-s", "-o", options, "start"])

    def stop(self):
        self.as_server(["pg_ctl", "-D", self.data, "-w", "-s", "-m", "fast", "stop"])

    def sql(self, query):
        out = subprocess.run([os.path.join(self.bin, "psql"), "-At", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
                              "-c", query], capture_output=True, text=True, check=True)
        return out.stdout.strip()

    def remove(self):
        try:
            self.stop()
        except subprocess.CalledProcessError:
            pass
        shutil.rmtree(self.dir, ignore_errors=True)


def measure(name, db, d, template, a, size_per_run):
    """Fills the store at `db`, times the commands, prints the medians and the size per run."""
    print(f"\n## {name}: {a.runs} runs of {a.boards} boards")
    t0 = time.perf_counter()
    example("fill", template, db, a.runs, a.boards, a.writers if name == "PostgreSQL" else 1)
    print(f"store filled in {time.perf_counter() - t0:.0f} s")
    if name == "PostgreSQL":
        a.cluster.stop()
        a.cluster.start(durable=True)
        a.cluster.sql("VACUUM ANALYZE")
    print(size_per_run(a.runs))
    newest = listed(db, "--limit", "1")[0]
    board = "imx8mp-evk-07"
    runs_of_board = listed(db, "--board", board)
    # A date 30 days before the newest run: ~1/24 of two years' runs.
    since = time.strftime("%Y-%m-%d", time.gmtime(time.mktime(time.strptime(newest["started_at"][:10], "%Y-%m-%d")) - 30 * 86400))
    recent = listed(db, "--since", since)
    a_run, b_run = runs_of_board[len(runs_of_board) // 2], runs_of_board[len(runs_of_board) // 2 + 1]
    print(f"board {board}: {len(runs_of_board)} runs; --since {since}: {len(recent)} runs; "
          f"run A {a_run['id']} ({a_run['uuid']}), run B {b_run['id']}")
    files = os.path.join(d, "ten")
    os.makedirs(files, exist_ok=True)
    example("ten-minutes", template, files, a.repeat)
    html = os.path.join(d, "r.html")
    cases = {
        "list --board B": ["list", "--board", board],
        "list --board B --all": ["list", "--board", board, "--all"],
        "list --since D": ["list", "--since", since],
        "list --since D --all": ["list", "--since", since, "--all"],
        "list --board B --since D": ["list", "--board", board, "--since", since],
        "list (no filter)": ["list"],
        "show A (id)": ["show", str(a_run["id"])],
        "show A (UUID start)": ["show", a_run["uuid"][:8]],
        "report A --html": ["report", str(a_run["id"]), "--html", html],
        "compare A B": ["compare", str(a_run["id"]), str(b_run["id"])],
        "import a 10-min 2-CPU run": None,
    }
    times = {k: [] for k in cases}
    for n in range(a.repeat):
        for k, argv in cases.items():
            if argv is None:
                argv = ["import", os.path.join(files, f"ten-minutes-{n}.json")]
            times[k].append(timed([BINARY, *argv, "--db", db]))
    print(f"{'command':<28} {'median ms':>10} {'max ms':>8}")
    for k, ts in times.items():
        print(f"{k:<28} {statistics.median(ts) * 1000:>10.0f} {max(ts) * 1000:>8.0f}")
    before = a.size()
    example("save", template, db, a.repeat)
    print(f"the store grew by {(a.size() - before) / a.repeat / 1e3:.0f} kB a 10-minute 2-CPU run saved")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=100_000)
    ap.add_argument("--boards", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--writers", type=int, default=4, help="PostgreSQL: writers filling the store at once")
    ap.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="both")
    ap.add_argument("--template", help="a result document to make the runs from (default: a 2 s run on CPUs 0 and 1)")
    a = ap.parse_args()
    version = rtgauge_version(BINARY)
    subprocess.run(["cargo", "build", "--profile", "dist", "--quiet", "--example", "store_scale"], cwd=ROOT, check=True)
    header(version)
    with tempfile.TemporaryDirectory() as d:
        template = a.template or os.path.join(d, "template.json")
        if not a.template:
            subprocess.run([BINARY, "run", "-q", "--no-store", "-D", "2s", "--cpus", "0,1", "--load", "none", "--json", template],
                           check=True, stdout=subprocess.DEVNULL)
        print(f"template: {template}, {os.path.getsize(template) / 1e3:.0f} kB of JSON")
        if a.backend in ("sqlite", "both"):
            db = os.path.join(d, "runs.db")

            a.size = lambda: sum(os.path.getsize(p) for p in (db, db + "-wal") if os.path.exists(p))

            def sqlite_size(runs):
                size = os.path.getsize(db)
                wal = os.path.getsize(db + "-wal") if os.path.exists(db + "-wal") else 0
                return f"store size: {size / 1e6:.0f} MB ({size / runs / 1e3:.1f} kB a run), its log beside it {wal / 1e6:.0f} MB"

            measure("SQLite", db, d, template, a, sqlite_size)
        if a.backend in ("postgres", "both"):
            a.cluster = Cluster()
            try:
                a.cluster.start(durable=False)
                url = a.cluster.url
                a.size = lambda: int(a.cluster.sql("SELECT pg_database_size(current_database())"))

                def pg_size(runs):
                    whole = int(a.cluster.sql("SELECT pg_database_size(current_database())"))
                    tables = int(a.cluster.sql("SELECT sum(pg_total_relation_size(c)) FROM unnest(ARRAY['runs','timelines',"
                                               "'kernel_configs']::regclass[]) AS c"))
                    return (f"store size: database {whole / 1e6:.0f} MB ({whole / runs / 1e3:.1f} kB a run), its tables with "
                            f"their indexes and TOAST {tables / 1e6:.0f} MB ({tables / runs / 1e3:.1f} kB a run)")

                measure("PostgreSQL", url, d, template, a, pg_size)
            finally:
                a.cluster.remove()


if __name__ == "__main__":
    main()
