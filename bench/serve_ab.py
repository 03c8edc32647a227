#!/usr/bin/env python3
"""Two builds of `rtgauge serve` on one store, alternating: the server time (`Server-Timing`) of
the dashboard's heaviest routes, median of --repeat, and the ratio of the second build to the
first. For a change to the pages or the store's reads, before against after:

    python3 bench/serve_ab.py OLD_BINARY NEW_BINARY --store /tmp/serve-bench/runs.db [--repeat 7]

The store: one `bench/serve.py --backend sqlite --store PATH` filled (100 000 runs of 200 boards).
Both servers listen on 127.0.0.1 on a port of their own and are stopped at the end.
"""
import argparse, http.client, re, statistics, subprocess

ROUTES = ["/", "/api/boards", "/?label=nightly", "/board/rpi4-lab-01"]


def serve(binary, store):
    p = subprocess.Popen([binary, "serve", "--db", store, "--listen", "127.0.0.1:0"], stderr=subprocess.PIPE, text=True)
    port = int(re.search(r"127\.0\.0\.1:(\d+)", p.stderr.readline()).group(1))
    return p, port


def server_ms(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request("GET", path)
    r = c.getresponse()
    r.read()
    m = re.search(r"dur=([0-9.]+)", r.getheader("Server-Timing") or "")
    c.close()
    if not m:
        raise SystemExit(f"{path}: no Server-Timing in the answer ({r.status})")
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--store", required=True)
    ap.add_argument("--repeat", type=int, default=7)
    a = ap.parse_args()
    servers = [(name, *serve(b, a.store)) for name, b in (("old", a.old), ("new", a.new))]
    try:
        for _, _, port in servers:
            for r in ROUTES:
                server_ms(port, r)  # a round not counted
        ms = {}
        for _ in range(a.repeat):
            for name, _, port in servers:
                for r in ROUTES:
                    ms.setdefault((name, r), []).append(server_ms(port, r))
        print(f"# {a.old} against {a.new}, {a.store}, median of {a.repeat}")
        for r in ROUTES:
            o, n = statistics.median(ms[("old", r)]), statistics.median(ms[("new", r)])
            print(f"{r:28} old {o:7.1f} ms  new {n:7.1f} ms  ratio {n / o:.2f}")
    finally:
        for _, p, _ in servers:
            p.terminate()
            p.wait()


if __name__ == "__main__":
    main()
