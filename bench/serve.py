#!/usr/bin/env python3
"""The dashboard at scale (issue 24): with the 100 000-run, 200-board store of issue 23's
generator, `rtgauge serve` must serve the fleet page and a board page of 1 000 runs in under
300 ms (median, server side), a run page in under 1 s, on SQLite and on PostgreSQL; 50 clients at
once without an error; and its memory must not grow (RSS after 100 000 requests within 10 % of
after 1 000).

The store is made as bench/store_scale.py makes it (examples/store_scale.rs `fill`, through the
library's Store::save, runs varied from one real result document), with one board given exactly
1 000 runs (`rpi4-lab-01`, the generator's HEAVY argument) — or reused: `--store PATH` (a SQLite
file; filled there if it is not, and kept) and `--pg-url URL` (a filled PostgreSQL database).
Without --pg-url the PostgreSQL store is a database in a throw-away cluster of the script's own
(store_scale.Cluster: filled without flushing, then restarted with PostgreSQL's defaults and
VACUUM ANALYZEd before anything is timed; stopped and removed at the end).

On each store the release binary's `rtgauge serve --listen 127.0.0.1:0` is started and measured
from a client on the same machine:
  1. each page and API route fetched --repeat times, the routes alternating, over one kept-alive
     connection, after one round not counted (the first fetch of each is shown apart): the
     server's own time (its `Server-Timing: app;dur=MS` header) and the client's (request sent
     to body read), medians and maxima, and the size of the answer;
  2. --clients clients at once for --seconds seconds, each on a connection of its own, going
     round the same routes: requests served, errors (a status other than 200, or none), the
     client's median and 99th percentile;
  3. on a server of its own: its resident set (VmRSS) after 1 000 requests and after
     --rss-requests more, of a mix of every route (mostly the cheap ones, every 100th a page);
and how long SIGTERM takes to stop it. A table per store, then a Markdown block for BENCHMARKS.md.
The machine is shared: nothing else should run meanwhile.

    python3 bench/serve.py [--runs 100000] [--boards 200] [--repeat 15] [--backend sqlite|postgres|both]
                           [--store PATH] [--pg-url URL] [--template FILE] [--clients 50] [--seconds 30]
                           [--rss-requests 100000]
"""
import argparse, http.client, json, os, re, signal, statistics, subprocess, sys, tempfile, threading, time
from urllib.parse import quote

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import BINARY, ROOT, header, rtgauge_version
from store_scale import Cluster, example

# The board the generator gives exactly this many runs (examples/store_scale.rs, HEAVY).
HEAVY = 1000


class Server:
    """`rtgauge serve --db DB --listen 127.0.0.1:0`, started; its address read from its first
    line on stderr."""

    def __init__(self, db):
        self.proc = subprocess.Popen([BINARY, "serve", "--db", db, "--listen", "127.0.0.1:0"], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        line = self.proc.stderr.readline()
        m = re.search(r" at http://(\S+):(\d+)/", line)
        if not m:
            self.proc.kill()
            sys.exit(f"rtgauge serve did not start: {line}{self.proc.stderr.read()}")
        self.port = int(m.group(2))
        self.lines = [line.rstrip()]
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self):
        for line in self.proc.stderr:
            self.lines.append(line.rstrip())

    def conn(self):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)

    def rss(self):
        """Its resident set, in bytes."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        raise RuntimeError("no VmRSS")

    def stop(self):
        """SIGTERM; how long it took to exit, and its status."""
        t = time.perf_counter()
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = "killed after 30 s"
        return time.perf_counter() - t, code


def fetch(conn, path, method="GET"):
    """One request: (status, body, server ms or None, client ms)."""
    t = time.perf_counter()
    conn.request(method, path)
    r = conn.getresponse()
    body = r.read()
    client = (time.perf_counter() - t) * 1e3
    m = re.search(r"app;dur=([0-9.]+)", r.getheader("Server-Timing") or "")
    return r.status, body, float(m.group(1)) if m else None, client


def get_json(server, path):
    c = server.conn()
    status, body, _, _ = fetch(c, path)
    c.close()
    if status != 200:
        sys.exit(f"GET {path}: {status} {body[:200]!r}")
    return json.loads(body)


def pick(server):
    """The routes to time, from what the store holds: the board closest to 1 000 runs, one of
    about the median, a run of the first and one before it."""
    boards = get_json(server, "/api/boards")["boards"]
    heavy = min(boards, key=lambda b: abs(b["runs"] - HEAVY))
    typical = sorted(boards, key=lambda b: b["runs"])[len(boards) // 2]
    if abs(heavy["runs"] - HEAVY) > HEAVY // 10:
        print(f"note: no board has about {HEAVY} runs (the closest, {heavy['board']}, has {heavy['runs']}): "
              f"fill the store with the generator's HEAVY argument")
    runs = get_json(server, f"/api/runs?board={quote(heavy['board'], safe='')}&limit=1000")["runs"]
    ids = sorted(r["id"] for r in runs)
    a, b = ids[len(ids) // 2], ids[len(ids) // 2 + 1]
    h, t = quote(heavy["board"], safe=""), quote(typical["board"], safe="")
    print(f"boards: {len(boards)}; {heavy['board']}: {heavy['runs']} runs; {typical['board']}: {typical['runs']} runs; "
          f"run A {a}, run B {b}")
    board = f"board, {heavy['runs']} runs"
    routes = {
        "fleet /": "/",
        "fleet /?since=30d": "/?since=30d",
        "fleet /?label=nightly": "/?label=nightly",
        board: f"/board/{h}",
        "board, next page": f"/board/{h}?before={ids[len(ids) // 2]}",
        f"board of the median, {typical['runs']} runs": f"/board/{t}",
        "run page": f"/run/{a}",
        "compare A B": f"/compare?runs={a},{b}",
        "/api/boards": "/api/boards",
        "/api/runs?board=B&limit=1000": f"/api/runs?board={h}&limit=1000",
        "/api/runs?since=30d": "/api/runs?since=30d",
        "/api/runs/ID": f"/api/runs/{a}",
        "/api/boards/B/series": f"/api/boards/{h}/series?probe=timer",
    }
    # The targets: median server time under these many ms.
    targets = {"fleet /": 300, board: 300, "run page": 1000}
    return routes, targets, heavy["board"], typical["board"], ids


def timings(server, routes, repeat):
    """Each route `repeat` times, alternating, after one round not counted."""
    conn = server.conn()
    first, server_ms, client_ms, size = {}, {k: [] for k in routes}, {k: [] for k in routes}, {}
    for n in range(repeat + 1):
        for k, path in routes.items():
            status, body, s, c = fetch(conn, path)
            if status != 200:
                sys.exit(f"GET {path}: {status} {body[:200]!r}")
            if n == 0:
                first[k] = c
                size[k] = len(body)
                continue
            client_ms[k].append(c)
            if s is not None:
                server_ms[k].append(s)
    conn.close()
    rows = {}
    for k in routes:
        s = server_ms[k]
        rows[k] = {
            "server": statistics.median(s) if s else None,
            "server_max": max(s) if s else None,
            "client": statistics.median(client_ms[k]),
            "client_max": max(client_ms[k]),
            "first": first[k],
            "bytes": size[k],
        }
    return rows


def concurrent(server, routes, clients, seconds):
    """`clients` clients at once for `seconds`, each round the routes from its own place."""
    paths = list(routes.values())
    stop = time.perf_counter() + seconds
    lock = threading.Lock()
    done, errors, times, first_error = [0], [0], [], []

    def client(k):
        conn = server.conn()
        i = k
        mine = []
        while time.perf_counter() < stop:
            path = paths[i % len(paths)]
            i += 1
            try:
                status, body, _, c = fetch(conn, path)
                ok = status == 200
                mine.append(c)
            except (OSError, http.client.HTTPException) as e:
                ok, status, body = False, None, str(e).encode()
                conn.close()
                conn = server.conn()
            with lock:
                done[0] += 1
                if not ok:
                    errors[0] += 1
                    if not first_error:
                        first_error.append(f"{path}: {status} {body[:200]!r}")
        conn.close()
        with lock:
            times.extend(mine)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    took = time.perf_counter() - t
    times.sort()
    p = lambda q: times[min(len(times) - 1, int(q * len(times)))] if times else float("nan")
    return {"clients": clients, "seconds": took, "requests": done[0], "errors": errors[0], "first_error": first_error,
            "p50": p(0.5), "p99": p(0.99), "max": times[-1] if times else float("nan")}


def mix(i, heavy, ids, typical):
    """Request `i` of the memory mix (as tests/serve.rs's): (method, path, the status it must
    get). Every route, mostly the cheap ones, every 100th a page, queries that differ (a cache
    keyed by URL would grow), 404s and 400s."""
    h = quote(heavy, safe="")
    k = i % 100
    if k == 0:
        if i % 2000 == 1000:
            return "GET", f"/run/{ids[i // 2000 % len(ids)]}", 200
        if i % 2000 == 0:
            return "GET", f"/compare?runs={ids[i // 2000 % len(ids)]},{ids[-1]}", 200
        if i % 200 == 100:
            return "GET", f"/board/{quote(typical, safe='')}", 200
        return "GET", "/", 200
    if k <= 30:
        return "GET", "/healthz", 200
    if k <= 38:
        return "GET", "/static/dashboard.js", 200
    if k <= 43:
        return "GET", f"/nope/{i}", 404
    if k <= 48:
        return "GET", f"/api/runs?since=garbage-{i}", 400
    if k <= 68:
        return "GET", f"/api/runs?board={h}&limit={1 + i % 20}&before={ids[i % len(ids)]}", 200
    if k <= 78:
        return "GET", "/api/boards", 200
    if k <= 86:
        return "GET", f"/api/boards/{h}/series?probe=timer&limit={1 + i % 50}", 200
    if k <= 93:
        return "GET", f"/api/runs/{ids[i % len(ids)]}", 200
    if k <= 96:
        return "HEAD", "/api/boards", 200
    return "HEAD", "/healthz", 200


def memory(db, heavy, ids, typical, requests, clients=4):
    """A server of its own: RSS after 1 000 requests of the mix and after `requests` more."""
    server = Server(db)
    failures = []

    def phase(start, end):
        def client(c):
            conn = server.conn()
            for n, i in enumerate(range(start + c, end, clients)):
                if n and n % 1000 == 0:
                    conn.close()
                    conn = server.conn()
                method, path, want = mix(i, heavy, ids, typical)
                try:
                    status, body, _, _ = fetch(conn, path, method)
                except (OSError, http.client.HTTPException) as e:
                    failures.append(f"{method} {path}: {e}")
                    conn.close()
                    conn = server.conn()
                    continue
                if status != want:
                    failures.append(f"{method} {path}: {status} {body[:200]!r}")
            conn.close()

        threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        # The server gives its allocator's free memory back each second: read after one has passed.
        time.sleep(1.5)

    phase(0, 1000)
    after_1000 = server.rss()
    t = time.perf_counter()
    phase(1000, 1000 + requests)
    took = time.perf_counter() - t
    after_all = server.rss()
    stop_s, code = server.stop()
    return {"after_1000": after_1000, "after_all": after_all, "requests": requests, "seconds": took,
            "failures": failures, "stop_s": stop_s, "code": code}


def measure(name, db, a):
    print(f"\n## {name}")
    server = Server(db)
    print(server.lines[0])
    routes, targets, heavy, typical, ids = pick(server)
    rows = timings(server, routes, a.repeat)
    print(f"{'route':<32} {'server ms':>10} {'max':>7} {'client ms':>10} {'max':>7} {'first':>7} {'kB':>7}")
    f = lambda v: "-" if v is None else f"{v:.0f}" if v >= 10 else f"{v:.1f}"
    for k, r in rows.items():
        print(f"{k:<32} {f(r['server']):>10} {f(r['server_max']):>7} {f(r['client']):>10} {f(r['client_max']):>7} "
              f"{f(r['first']):>7} {r['bytes'] / 1e3:>7.0f}")
    if all(r["server"] is None for r in rows.values()):
        print("note: no Server-Timing header: the server column is empty")
    load = concurrent(server, routes, a.clients, a.seconds)
    print(f"{load['clients']} clients for {load['seconds']:.0f} s: {load['requests']} requests "
          f"({load['requests'] / load['seconds']:.0f} a second), {load['errors']} errors; client ms median "
          f"{load['p50']:.0f}, p99 {load['p99']:.0f}, max {load['max']:.0f}")
    if load["first_error"]:
        print(f"  the first error: {load['first_error'][0]}")
    stop_s, code = server.stop()
    print(f"SIGTERM: stopped in {stop_s * 1e3:.0f} ms, status {code}")
    mem = memory(db, heavy, ids, typical, a.rss_requests)
    growth = (mem["after_all"] / mem["after_1000"] - 1) * 100
    print(f"RSS: {mem['after_1000'] / 2**20:.1f} MiB after 1 000 requests, {mem['after_all'] / 2**20:.1f} MiB after "
          f"{mem['requests']} more ({growth:+.1f} %; {mem['requests'] / mem['seconds']:.0f} requests a second), "
          f"{len(mem['failures'])} failed; SIGTERM: {mem['stop_s'] * 1e3:.0f} ms, status {mem['code']}")
    if mem["failures"]:
        print(f"  the first failure: {mem['failures'][0]}")
    verdicts = []
    for k, limit in targets.items():
        v = rows[k]["server"]
        met = "not measured" if v is None else "met" if v < limit else "MISSED"
        verdicts.append(f"{k}: {'-' if v is None else f'{v:.0f}'} ms server side ({met}: under {limit} ms)")
    verdicts.append(f"{a.clients} clients: {load['errors']} errors ({'met' if load['errors'] == 0 else 'MISSED'})")
    verdicts.append(f"RSS growth {growth:+.1f} % ({'met' if growth <= 10 else 'MISSED'}: within 10 %)")
    print("targets: " + "; ".join(verdicts))
    return {"rows": rows, "load": load, "mem": mem, "growth": growth, "stop_s": stop_s}


def markdown(results, a, version):
    names = list(results)
    print("\n---- for BENCHMARKS.md ----\n")
    print("## The dashboard at scale: `rtgauge serve` on 100 000 runs of 200 boards — `bench/serve.py`\n")
    print(f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs, {version}, `{' '.join(sys.argv)}`. Server time: the "
          f"server's `Server-Timing` (median of {a.repeat}, routes alternating, one connection kept alive, after a "
          f"round not counted); client time: request sent to answer read, on the same machine.\n")
    head = "| route | " + " | ".join(f"{n} server ms | {n} client ms" for n in names) + " | kB |"
    print(head)
    print("|" + "---|" * (2 + 2 * len(names)))
    first = results[names[0]]["rows"]
    for k in first:
        cells = []
        for n in names:
            r = results[n]["rows"].get(k)
            cells.append("-" if r is None or r["server"] is None else f"{r['server']:.0f}")
            cells.append("-" if r is None else f"{r['client']:.0f}")
        print(f"| {k} | " + " | ".join(cells) + f" | {first[k]['bytes'] / 1e3:.0f} |")
    print()
    for n in names:
        r = results[n]
        load, mem = r["load"], r["mem"]
        print(f"- {n}: {load['clients']} clients at once for {load['seconds']:.0f} s: {load['requests']} requests, "
              f"{load['errors']} errors, client median {load['p50']:.0f} ms, p99 {load['p99']:.0f} ms. RSS "
              f"{mem['after_1000'] / 2**20:.1f} MiB after 1 000 requests, {mem['after_all'] / 2**20:.1f} MiB after "
              f"{mem['requests']} more ({r['growth']:+.1f} %). SIGTERM stopped it in {r['stop_s'] * 1e3:.0f} ms.")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=100_000)
    ap.add_argument("--boards", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--writers", type=int, default=4, help="PostgreSQL: writers filling the store at once")
    ap.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="both")
    ap.add_argument("--store", help="a SQLite store to use (filled there if there is none, and kept)")
    ap.add_argument("--pg-url", help="a filled PostgreSQL store to use instead of a cluster of the script's own")
    ap.add_argument("--template", help="a result document to make the runs from (default: a 2 s run on CPUs 0 and 1)")
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--rss-requests", type=int, default=100_000)
    a = ap.parse_args()
    subprocess.run(["cargo", "build", "--profile", "dist", "--quiet"], cwd=ROOT, check=True)
    subprocess.run(["cargo", "build", "--profile", "dist", "--quiet", "--example", "store_scale"], cwd=ROOT, check=True)
    version = rtgauge_version(BINARY)
    header(version)
    results = {}
    with tempfile.TemporaryDirectory() as d:
        template = a.template

        def the_template():
            nonlocal template
            if template is None:
                template = os.path.join(d, "template.json")
                subprocess.run([BINARY, "run", "-q", "--no-store", "-D", "2s", "--cpus", "0,1", "--load", "none", "--json",
                                template], check=True, stdout=subprocess.DEVNULL)
            return template

        def fill(db, writers):
            t = time.perf_counter()
            example("fill", the_template(), db, a.runs, a.boards, writers, HEAVY)
            print(f"store filled in {time.perf_counter() - t:.0f} s")

        if a.backend in ("sqlite", "both"):
            db = a.store or os.path.join(d, "runs.db")
            if not os.path.exists(db):
                fill(db, 1)
            results["SQLite"] = measure(f"SQLite: {db}", db, a)
        if a.backend in ("postgres", "both"):
            if a.pg_url:
                results["PostgreSQL"] = measure("PostgreSQL", a.pg_url, a)
            else:
                cluster = Cluster()
                try:
                    cluster.start(durable=False)
                    fill(cluster.url, a.writers)
                    cluster.stop()
                    cluster.start(durable=True)
                    cluster.sql("VACUUM ANALYZE")
                    results["PostgreSQL"] = measure("PostgreSQL (a cluster of the script's own)", cluster.url, a)
                finally:
                    cluster.remove()
    markdown(results, a, version)


if __name__ == "__main__":
    main()
