#!/usr/bin/env python3
"""Sends GPIO edges into an arm64 test guest: watches the guest's console log for
'@@RTGAUGE-EDGES@@ COUNT GAP_MS' (printed by a command in tests/vm/commands.txt) and then asks
qemu, on its QMP socket, for COUNT 'system_powerdown's GAP_MS apart. On the virt board each one
raises line 3 of the PL061 GPIO controller for 100 ms: a rising and a falling edge. Records
what it sent in the third file ('sent COUNT' per request). Ends when the guest's output ends."""
import json, socket, sys, time

log_path, qmp_path, record_path = sys.argv[1:4]


def qmp_session():
    for _ in range(600):
        try:
            s = socket.socket(socket.AF_UNIX)
            s.connect(qmp_path)
            f = s.makefile("rw")
            f.readline()  # greeting
            f.write(json.dumps({"execute": "qmp_capabilities"}) + "\n")
            f.flush()
            f.readline()
            return s, f
        except OSError:
            time.sleep(0.1)
    raise SystemExit("edges.py: no QMP socket at " + qmp_path)


def send(f, count, gap_ms):
    for _ in range(count):
        f.write(json.dumps({"execute": "system_powerdown"}) + "\n")
        f.flush()
        while '"return"' not in f.readline():  # events (POWERDOWN) come before the return
            pass
        time.sleep(gap_ms / 1000)


seen, session = 0, None
with open(record_path, "w") as record:
    while True:
        try:
            lines = open(log_path, errors="replace").read().replace("\r", "").splitlines()
        except FileNotFoundError:
            lines = []
        asks = [l.split()[1:3] for l in lines if l.startswith("@@RTGAUGE-EDGES@@")]
        for count, gap in asks[seen:]:
            session = session or qmp_session()
            send(session[1], int(count), int(gap))
            record.write(f"sent {count}\n")
            record.flush()
        seen = len(asks)
        if any(l.startswith("@@RTGAUGE-OUT-END@@") for l in lines):
            break
        time.sleep(0.05)
