#!/usr/bin/env python3
"""Every command's output on the project's fixtures, to show a change of shape changed no behaviour.

    scripts/same-output.py BEFORE_BIN before/      # the build before the change
    scripts/same-output.py AFTER_BIN after/        # the build after
    diff -r before/ after/                         # empty: the outputs, exit statuses and files alike

For each command it keeps standard output, standard error and the exit status (NAME.out, NAME.err,
NAME.rc) and the files it wrote (their SHA-256). What it runs: the help of every command, the
built-in scenarios, every import fixture imported into one store with and without requirements,
list/show/export (every format)/report (text, HTML, PNG)/compare of the runs stored, a run document
measured once by BEFORE_BIN (kept as _measured.json, and read from there by the AFTER run so both see
the same run), and bad input of every kind the commands refuse. Nothing here measures but that one
run, and it touches only files in the directory given and a temporary directory.
"""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"


def main() -> int:
    if len(sys.argv) != 3:
        print("usage: scripts/same-output.py RTGAUGE_BINARY OUTPUT_DIR", file=sys.stderr)
        return 2
    binary = str(Path(sys.argv[1]).resolve())
    out = Path(sys.argv[2]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="rtgauge-same-"))
    # (run from the same place each time: the command line a document keeps names the binary)
    shutil.copy(binary, tmp / "rtgauge")
    binary = str(tmp / "rtgauge")
    env = dict(os.environ, XDG_DATA_HOME=str(tmp / "data"), RTGAUGE_DB=str(tmp / "runs.db"),
               COLUMNS="100", NO_COLOR="1", TZ="UTC")
    env.pop("RTGAUGE_JOURNAL_DIR", None)
    env["RTGAUGE_JOURNAL_DIR"] = str(tmp / "journal")
    db = str(tmp / "runs.db")
    n = [0]

    def cmd(name: str, *args: str, files: list[Path] = ()) -> None:
        n[0] += 1
        p = subprocess.run([binary, *args], env=env, capture_output=True, cwd=tmp, timeout=300)
        text = lambda b: b.decode("utf-8", "replace").replace(str(tmp), "$TMP")
        (out / f"{name}.out").write_text(text(p.stdout))
        (out / f"{name}.err").write_text(text(p.stderr))
        (out / f"{name}.rc").write_text(f"{p.returncode}\n")
        for f in files:
            if f.is_dir():
                for g in sorted(f.iterdir()):
                    digest = hashlib.sha256(g.read_bytes()).hexdigest()
                    (out / f"{name}.{g.name}.sha256").write_text(digest + "\n")
            elif f.exists():
                (out / f"{name}.{f.name}").write_text(text(f.read_bytes()))

    # Help and scenarios.
    cmd("help", "--help")
    for c in ["run", "stall", "udp-echo", "check", "restore", "scenarios", "list", "show", "delete",
              "export", "report", "compare", "import", "push", "serve", "load"]:
        cmd(f"help-{c}", c, "--help")
    cmd("scenarios", "scenarios")
    for s in ["worst-case", "arm-paper", "arm-chain", "cortex-a53", "firmtimers", "ocera", "am3356"]:
        cmd(f"scenario-{s}", "scenarios", s)

    # One measured run, made by the build before and read by both.
    measured = out.parent / "_measured.json"
    if not measured.exists():
        subprocess.run([binary, "run", "-D", "2s", "--load", "none", "--no-store", "--cpus", "0",
                        "--json", str(measured)], env=env, capture_output=True, check=False)
    # Every fixture imported.
    imports = sorted((FIXTURES / "import").glob("*.json")) + sorted((FIXTURES / "import").glob("*.txt"))
    imports += [FIXTURES / "result-v1.json", FIXTURES / "result-v2.json"]
    if measured.exists():
        local = tmp / "measured.json"
        shutil.copy(measured, local)
        imports.append(local)
    for f in imports:
        cmd(f"import-{f.name}", "import", "--db", db, str(f))
    cmd("import-require", "import", "--db", db, "--label", "req", "--require", "max<100us",
        str(FIXTURES / "import" / "cyclictest-H-q.txt"))
    cmd("import-require-assume", "import", "--db", db, "--label", "req2", "--require", "p99.9<80us",
        "--assume-independent", str(FIXTURES / "import" / "cyclictest-hist.txt"))

    cmd("list", "list", "--db", db, "--all")
    cmd("list-json", "list", "--db", db, "--all", "--json")
    cmd("list-filter", "list", "--db", db, "--verdict", "fail")
    ids = range(1, 40)
    for i in ids:
        cmd(f"show-{i}", "show", "--db", db, str(i))
        cmd(f"show-json-{i}", "show", "--db", db, "--json", str(i))
        for fmt in ["json", "csv", "junit", "cyclictest-json", "cyclictest-hist", "rteval-xml"]:
            cmd(f"export-{i}-{fmt}", "export", "--db", db, "--format", fmt, str(i))
        cmd(f"report-{i}", "report", "--db", db, str(i))
    for i in [1, 5, 20, 30]:
        html = tmp / f"report-{i}.html"
        cmd(f"report-html-{i}", "report", "--db", db, str(i), "--html", str(html), files=[html])
    png = tmp / "png"
    cmd("report-png", "report", "--db", db, "1", "--png", str(png), files=[png])
    cmd("compare", "compare", "--db", db, "1", "2", "3")
    cmd("compare-json", "compare", "--db", db, "--json", "1", "2", "3")
    cmd("compare-ct", "compare", "--db", db, "--cycle-time", "1ms", "--fail-if-worse", "10", "4", "5")
    chtml = tmp / "compare.html"
    cmd("compare-html", "compare", "--db", db, "1", "2", "--html", str(chtml), files=[chtml])

    # Bad input, each refused with one line.
    bad = [
        ["run", "--cycle-time", "fast"], ["run", "-D", "-1s"], ["run", "--cpus", "99999"],
        ["run", "--measure", "nosuch"], ["run", "--load", "nosuch"], ["run", "--require", "max<"],
        ["run", "--scenario", "nosuch"], ["run", "--db", "mysql://x/y"], ["import", "/nonexistent"],
        ["import", str(FIXTURES / "import" / "README.md")], ["export", "--format", "nosuch", "1"],
        ["show", "999"], ["show", "nosuch-label"], ["compare", "1"], ["list", "--since", "tomorrow"],
        ["serve", "--listen", "nonsense"], ["load", "--load", "cpu:x"], ["stall", "--cpu", "9999"],
        ["push", "--to", "mysql://x/y", "1"], ["report", "1", "--png", "/proc/x"],
    ]
    for k, args in enumerate(bad):
        cmd(f"bad-{k}", *args)
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"{n[0]} commands; outputs in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
