"""Benchmark: sarsleuth as ``pip install .`` installs it (no extras), side by
side with the standard tools, in one run, the runs of each comparison
interleaved so that load on the machine hits both alike.

    python -m venv VENV && VENV/bin/pip install .
    python benchmarks/bench_install.py --sarsleuth VENV/bin/sarsleuth --dir SCRATCH [--job logs|memory|sa|startup]

Jobs (each prints markdown rows: wall seconds, CPU seconds, peak RSS):

``logs``
    ``analyze --format json`` of a 500 MB /var/log/messages (real corpus
    lines re-stamped, incident reports planted: ``bench_logs.generate``)
    against ``grep -cE`` over the same signature patterns; gzipped against
    ``gzip -dc | grep -cE``; and with the RE2 engine (``SARSLEUTH_LOG_ENGINE=re2``:
    the install where Hyperscan has no wheel) against ``grep -cE``.
``memory``
    Peak RSS of ``analyze`` on a 300 MB and a 3 GB log of the same making,
    and on a 300 MB nginx error.log whose every line is an event; for each,
    whether a progress bar reaches a pseudo-terminal while the JSON on
    standard output stays whole.
``sa``
    A one-second ``sadc -S XALL`` day (``bench_sa_binary.build``): ``sadf -d
    FILE -- -A`` against ``parse --format csv`` (long and wide layouts) and
    ``analyze --format json``; a 1 MB file of the same recording against
    ``sadf -d``.
``startup``
    ``sarsleuth --help``, median of 10.

Big inputs are written under ``--dir`` and deleted afterwards (``--keep``
keeps them).
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_logs  # noqa: E402
import ere  # noqa: E402

TOOL_ENV = dict(os.environ, TZ="UTC", LC_ALL="C")
MB = 1 << 20


def measure(cmd: list, env: dict, stdout=subprocess.DEVNULL) -> tuple[float, float, float, str]:
    """(wall s, CPU s, peak RSS MiB, stdout) of one child, from GNU time."""
    start = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-f", "%M %U %S", *map(str, cmd)], env=env,
                          stdout=subprocess.PIPE if stdout is None else stdout, stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{cmd} failed ({proc.returncode}): {proc.stderr.decode(errors='replace')[-600:]}")
    rss, user, system = proc.stderr.decode().strip().splitlines()[-1].split()
    out = proc.stdout.decode(errors="replace") if proc.stdout is not None else ""
    return wall, float(user) + float(system), int(rss) / 1024, out


def interleaved(commands: dict, runs: int) -> dict:
    """{name: (median wall, median CPU, max peak, last stdout)}, the commands run in turn."""
    seen: dict = {name: [] for name in commands}
    for _ in range(runs):
        for name, (cmd, env, stdout) in commands.items():
            seen[name].append(measure(cmd, env, stdout))
    return {name: (statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs),
                   max(r[2] for r in rs), rs[-1][3]) for name, rs in seen.items()}


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


# ------------------------------------------------------------------ logs

def logs_job(args, scratch: Path) -> None:
    log = scratch / "messages"
    planted = bench_logs.generate(log, args.log_mb)
    gz = scratch / "messages.gz"
    with open(gz, "wb") as out:
        subprocess.run(["gzip", "-c", str(log)], stdout=out, check=True)
    patterns = scratch / "signatures.ere"
    from sarsleuth.inputs.parsers.logs.engine import candidate_patterns
    patterns.write_text(ere.grep_expression(candidate_patterns()) + "\n")
    grep = ere.gnu_grep() or "grep"
    ours = dict(os.environ)
    analyze = [args.sarsleuth, "analyze", "--format", "json", "--quiet"]
    try:
        print(f"\n## logs: {log.stat().st_size / MB:.0f} MiB, {planted['lines']:,} lines, "
              f"{planted['events']} events planted ({load()})")
        print("| input | reference | reference s (cpu) | sarsleuth s (cpu) | ratio (cpu) | sarsleuth peak MiB | read |")
        print("|---|---|---|---|---|---|---|")
        subprocess.run(["cat", str(log), str(gz)], stdout=subprocess.DEVNULL, check=True)
        r = interleaved({
            "grep": ([grep, "-cE", "-f", patterns, log], TOOL_ENV, None),
            "default": ([*analyze, log], ours, None),
            "re2": ([*analyze, log], dict(ours, SARSLEUTH_LOG_ENGINE="re2"), None),
            "zgrep": (["sh", "-c", f'gzip -dc "$1" | {grep} -cE -f "$2"', "sh", gz, patterns], TOOL_ENV, None),
            "gz": ([*analyze, gz], ours, None)}, args.runs)
        for label, ref, mine, ref_name in (("plain", "grep", "default", "grep -cE"),
                                           ("plain, RE2 engine", "grep", "re2", "grep -cE"),
                                           ("gzip", "zgrep", "gz", "gzip -dc \\| grep -cE")):
            rw, rc, _, _ = r[ref]
            mw, mc, mp, out = r[mine]
            doc = json.loads(out)
            read = sum(s["records"] for s in doc["sources"])
            print(f"| {label} | `{ref_name}` | {rw:.2f} ({rc:.2f}) | {mw:.2f} ({mc:.2f}) | {mw / rw:.2f} "
                  f"({mc / rc:.2f}) | {mp:.0f} | {read:,} lines, {len(doc['findings'])} findings |", flush=True)
        print(f"({load()} after)")
    finally:
        if not args.keep:
            for path in (log, gz, patterns):
                path.unlink(missing_ok=True)


# ------------------------------------------------------------------ memory

def progress_on_a_terminal(sarsleuth: str, path: Path, scratch: Path) -> tuple[bool, bool]:
    """(a progress bar reached the terminal, standard output was whole
    JSON): ``script`` gives the run a pseudo-terminal, standard output goes
    to a file."""
    out = scratch / "analyze.json"
    command = " ".join(map(shlex.quote, [sarsleuth, "analyze", "--format", "json", str(path)]))
    shown = subprocess.run(["script", "-q", "-e", "-c", f"{command} > {shlex.quote(str(out))}", "/dev/null"],
                           env=dict(os.environ, COLUMNS="100"), capture_output=True)
    try:
        json.loads(out.read_text())
        clean = True
    except ValueError:
        clean = False
    out.unlink(missing_ok=True)
    return b"file(s)" in shown.stdout, clean


def memory_job(args, scratch: Path) -> None:
    print(f"\n## memory: analyze --format json ({load()})")
    print("| input | MiB | seconds (cpu) | peak MiB | on a pseudo-terminal: progress bar, stdout whole JSON |")
    print("|---|---|---|---|---|")
    for size in (int(x) for x in args.memory_mb.split(",")):
        log = scratch / f"messages-{size}"
        bench_logs.generate(log, size)
        try:
            memory_row(args.sarsleuth, "/var/log/messages", log, scratch)
        finally:
            if not args.keep:
                log.unlink(missing_ok=True)
    from bench_scale import make_matches
    folder = scratch / "matches"
    folder.mkdir(exist_ok=True)
    log = make_matches(folder, min(int(x) for x in args.memory_mb.split(",")))
    try:
        memory_row(args.sarsleuth, "nginx error.log, every line an event", log, scratch)
    finally:
        if not args.keep:
            shutil.rmtree(folder)


def memory_row(sarsleuth: str, label: str, log: Path, scratch: Path) -> None:
    """One row: the run with ``--quiet`` (seconds, peak), then again on a
    pseudo-terminal (the bar shows once reading has taken 2 s)."""
    wall, cpu, peak, out = measure([sarsleuth, "analyze", "--format", "json", "--quiet", log], dict(os.environ), None)
    json.loads(out)
    shown, clean = progress_on_a_terminal(sarsleuth, log, scratch)
    print(f"| {label} | {log.stat().st_size / MB:.0f} | {wall:.1f} ({cpu:.1f}) | {peak:.0f} | "
          f"{'shown' if shown else 'not shown'}, {'yes' if clean else 'NO'} |", flush=True)


# ------------------------------------------------------------------ sa

def sa_job(args, scratch: Path) -> None:
    from bench_sa_binary import build, collect
    sample = scratch / "sample.sa"
    collect(10, sample, "XALL")
    day = Path(args.day) if args.day else scratch / "day.sa"
    if not args.day:
        build(sample, 86400, day)
    small = scratch / "small.sa"
    build(sample, 240, small)
    size = day.stat().st_size / MB
    out = scratch / "out.csv"
    try:
        print(f"\n## sa: one-second -S XALL day, {size:.1f} MiB; {small.stat().st_size / MB:.2f} MiB file ({load()})")
        print("| file | command | s (cpu) | peak MiB | ratio to sadf (cpu) | peak / file | output MiB |")
        print("|---|---|---|---|---|---|---|")
        for path, runs in ((day, args.sa_runs), (small, 10)):
            outs = {}
            commands = {}
            for name, cmd in (("sadf -d -- -A", ["sadf", "-d", path, "--", "-A"]),
                              ("parse --format csv", [args.sarsleuth, "parse", "-q", path, "-o", out]),
                              ("parse --format csv --layout wide", [args.sarsleuth, "parse", "-q", "--layout",
                                                                    "wide", path, "-o", out]),
                              ("analyze --format json", [args.sarsleuth, "analyze", "-q", "--format", "json",
                                                         path])):
                if name.startswith("sadf"):
                    cmd = ["sh", "-c", 'exec sadf -d "$1" -- -A > "$2"', "sh", path, scratch / "sadf.csv"]
                commands[name] = (cmd, TOOL_ENV if name.startswith("sadf") else dict(os.environ), subprocess.DEVNULL)
            seen: dict = {name: [] for name in commands}
            for _ in range(runs):
                for name, (cmd, env, stdout) in commands.items():
                    seen[name].append(measure(cmd, env, stdout))
                    target = scratch / "sadf.csv" if name.startswith("sadf") else out
                    outs[name] = target.stat().st_size / MB if target.exists() and "analyze" not in name else None
            rows = {name: (statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs),
                           max(r[2] for r in rs)) for name, rs in seen.items()}
            sw, sc, _ = rows["sadf -d -- -A"]
            file_mb = path.stat().st_size / MB
            for name, (w, c, p) in rows.items():
                made = f"{outs[name]:.0f}" if outs.get(name) is not None else ""
                print(f"| {file_mb:.1f} MiB | `{name}` | {w:.2f} ({c:.2f}) | {p:.0f} | {w / sw:.2f} ({c / sc:.2f}) | "
                      f"{p / file_mb:.2f} | {made} |", flush=True)
        print(f"({load()} after)")
    finally:
        for path in (out, scratch / "sadf.csv", small, sample) + (() if args.day or args.keep else (day,)):
            path.unlink(missing_ok=True)


def startup_job(args, scratch: Path) -> None:
    times = [measure([args.sarsleuth, "--help"], dict(os.environ))[0] for _ in range(10)]
    print(f"\n## start-up: `sarsleuth --help` median of 10: {statistics.median(times):.3f} s ({load()})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sarsleuth", default=shutil.which("sarsleuth"), help="the installed console script")
    ap.add_argument("--job", choices=("logs", "memory", "sa", "startup", "all"), default="all")
    ap.add_argument("--dir", help="scratch directory for the big inputs (default: a temporary one)")
    ap.add_argument("--day", help="an existing one-second sa day instead of building one")
    ap.add_argument("--runs", type=int, default=3, help="interleaved runs of the log comparisons")
    ap.add_argument("--log-mb", type=int, default=500, help="size of the log compared with grep")
    ap.add_argument("--memory-mb", default="300,3072", help="sizes of the logs whose peak memory is measured")
    ap.add_argument("--sa-runs", type=int, default=2, help="interleaved runs on the one-second day")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    if not args.sarsleuth:
        sys.exit("no sarsleuth console script: give --sarsleuth VENV/bin/sarsleuth")
    scratch = Path(args.dir or tempfile.mkdtemp(prefix="sarsleuth-install-"))
    scratch.mkdir(parents=True, exist_ok=True)
    jobs = {"logs": logs_job, "memory": memory_job, "sa": sa_job, "startup": startup_job}
    for name, job in jobs.items():
        if args.job in (name, "all"):
            job(args, scratch)


if __name__ == "__main__":
    main()
