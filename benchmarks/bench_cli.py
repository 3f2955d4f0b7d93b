"""Benchmark: the commands users type, side by side with the standard tool.

Times whole command lines in child processes (start-up, imports and output
included), each next to the tool that does the same job, interleaved run by
run, at three sizes to show how the cost grows:

* ``sarsleuth analyze TEXT`` against ``sar -A -f SA`` printing that text
  (``TEXT`` is ``sar -A`` of a one-second ``sadc -S XALL`` recording);
* ``sarsleuth parse SA --format csv`` against ``sadf -d SA -- -A`` on the
  one-second recording itself, with both peaks of memory against the file;
* ``sarsleuth --help`` and ``sarsleuth sniff FILE`` (start-up) for every
  kind of input users hand it (sa, sar text, syslog, journal, dmesg, nginx
  error.log, ab and wrk reports; the logs from the corpus, grown past the
  64 KiB head sniffing reads), next to ``sar -V``.

The recordings are built as ``bench_sa_binary.py`` builds them: ten seconds
collected by the local ``sadc``, their records repeated one second apart.
Output goes to /dev/null for every command.  Peak memory is the child's
resident set high-water mark (``wait4``).

    python benchmarks/bench_cli.py                       # all three jobs
    python benchmarks/bench_cli.py --job analyze --sizes 3600,10800,21600
    python benchmarks/bench_cli.py --job csv --sizes 21600,43200,86400
    python benchmarks/bench_cli.py --job startup
    python benchmarks/bench_cli.py --workdir SCRATCH --keep --runs 3
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_sa_binary import build, collect  # noqa: E402

TOOL_ENV = dict(os.environ, TZ="UTC", LC_ALL="C")
#: sarsleuth runs from this checkout, whatever is installed
OUR_ENV = dict(TOOL_ENV, PYTHONPATH=str(ROOT))

#: records (seconds) of each size: sar -A text of XALL is ~6.2 kB a record,
#: so 21 600 records print ~134 MB; the binary day is ~4.3 kB a record.
ANALYZE_SIZES = (3600, 10800, 21600)
CSV_SIZES = (21600, 43200, 86400)


def sarsleuth_command() -> list[str]:
    """The console script beside this interpreter (what users run), else
    the interpreter calling the same entry point."""
    script = Path(sys.executable).with_name("sarsleuth")
    if script.exists():
        return [sys.executable, str(script)]
    return [sys.executable, "-c", "from sarsleuth.cli import main; main()"]


def run(cmd: list, env: dict) -> tuple[float, float, float]:
    """(wall seconds, peak resident MB, CPU seconds) of one child, output
    discarded.  CPU time (user + system) is the steadier figure on a
    machine shared with other work."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(map(str, cmd))} failed ({proc.returncode}): {err[-400:]}")
    return elapsed, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def side_by_side(label: str, ours: list, theirs: list, runs: int) -> dict:
    """Interleaved runs; medians of time, max of peaks."""
    mine, tool = [], []
    for _ in range(runs):
        tool.append(run(theirs, TOOL_ENV))
        mine.append(run(ours, OUR_ENV))
    out = {"label": label,
           "tool_s": statistics.median(r[0] for r in tool), "tool_mb": max(r[1] for r in tool),
           "tool_cpu": statistics.median(r[2] for r in tool),
           "ours_s": statistics.median(r[0] for r in mine), "ours_mb": max(r[1] for r in mine),
           "ours_cpu": statistics.median(r[2] for r in mine)}
    out["ratio"] = out["ours_s"] / out["tool_s"]
    out["cpu_ratio"] = out["ours_cpu"] / max(out["tool_cpu"], 1e-9)
    return out


def recording(workdir: Path, records: int) -> Path:
    sample = workdir / "sample.sa"
    if not sample.exists():
        print("collecting 10 s with sadc -S XALL ...", flush=True)
        collect(10, sample, "XALL")
    path = workdir / f"sa-{records}"
    if not path.exists():
        build(sample, records, path)
    return path


def analyze_job(workdir: Path, sizes, runs: int) -> None:
    print("\n## sarsleuth analyze TEXT  vs  sar -A -f SA (printing TEXT)")
    print("| records | text MB | sar -A s (cpu) | analyze s (cpu) | ratio (cpu) | analyze peak MB |")
    print("|---|---|---|---|---|---|")
    for records in sizes:
        sa = recording(workdir, records)
        text = workdir / f"sar-A-{records}.txt"
        if not text.exists():
            with open(text, "wb") as fh:
                subprocess.run(["sar", "-A", "-f", str(sa)], env=TOOL_ENV, stdout=fh, check=True)
        r = side_by_side("analyze", [*sarsleuth_command(), "analyze", str(text), "--format", "json"],
                         ["sar", "-A", "-f", str(sa)], runs)
        print(f"| {records} | {text.stat().st_size / 1e6:.1f} | {r['tool_s']:.2f} ({r['tool_cpu']:.2f}) | "
              f"{r['ours_s']:.2f} ({r['ours_cpu']:.2f}) | {r['ratio']:.2f} ({r['cpu_ratio']:.2f}) | "
              f"{r['ours_mb']:.0f} |", flush=True)


def csv_job(workdir: Path, sizes, runs: int) -> None:
    print("\n## sarsleuth parse SA --format csv  vs  sadf -d SA -- -A")
    print("| records | sa MB | sadf -d s (cpu) / MB | parse csv s (cpu) / MB | ratio (cpu) | our peak / file |")
    print("|---|---|---|---|---|---|")
    for records in sizes:
        sa = recording(workdir, records)
        r = side_by_side("csv", [*sarsleuth_command(), "parse", str(sa), "--format", "csv"],
                         ["sadf", "-d", str(sa), "--", "-A"], runs)
        size = sa.stat().st_size / 2**20
        print(f"| {records} | {size:.1f} | {r['tool_s']:.2f} ({r['tool_cpu']:.2f}) / {r['tool_mb']:.0f} | "
              f"{r['ours_s']:.2f} ({r['ours_cpu']:.2f}) / {r['ours_mb']:.0f} | {r['ratio']:.2f} "
              f"({r['cpu_ratio']:.2f}) | {r['ours_mb'] / size:.2f} |", flush=True)


#: Corpus files standing for the kinds ``sniff`` is timed on (sa and sar text
#: are generated); each log is repeated past :data:`SNIFF_LOG_BYTES` so that
#: sniffing reads a whole head, as it does for a real log.
SNIFF_FILES = {
    "syslog": "logs/messages-2.6.5-fedora-loghub-linux2k.log",
    "dmesg": "logs/dmesg-ubuntu-5.4-hotsos-compute4.log",
    "nginx-error": "logs/nginx-error-signal11-core-dumped-respawn-openresty.log",
    "ab": "loadtest/ab-post-total-body-sent-kbs-sent.txt",
    "wrk": "loadtest/wrk-readme-basic-high-rps-gb.txt",
}
#: journalctl's default (short) output: its header line, then syslog-style lines.
JOURNAL_LINES = "logs/kernlog-ubuntu-5.4-two-boots-hotsos-compute4.log"
JOURNAL_HEADER = "-- Journal begins at Fri 2022-02-04 09:34:04 UTC, ends at Thu 2022-02-10 16:19:27 UTC. --\n"
SNIFF_LOG_BYTES = 256 * 1024


def corpus_dir() -> Path | None:
    env = os.environ.get("SARSLEUTH_CORPUS")
    for cand in ([Path(env)] if env else []) + [ROOT.parent / "shared" / "corpus"]:
        if (cand / "logs").is_dir():
            return cand
    return None


def sniff_inputs(workdir: Path) -> list[tuple[str, Path]]:
    """(kind, file) for every kind timed: sa and sar text from the local
    sysstat, the others from the corpus when it is there."""
    sa = recording(workdir, 60)
    text = workdir / "sar-A-60.txt"
    with open(text, "wb") as fh:
        subprocess.run(["sar", "-A", "-f", str(sa)], env=TOOL_ENV, stdout=fh, check=True)
    out = [("sa", sa), ("sar-text", text)]
    corpus = corpus_dir()
    if corpus is None:
        print("(corpus not found, set SARSLEUTH_CORPUS: only sa and sar text are sniffed)")
        return out
    for kind, rel in SNIFF_FILES.items():
        data = (corpus / rel).read_bytes()
        if kind not in ("ab", "wrk"):       # a load-test report is a few KB whatever the run
            data = data * (SNIFF_LOG_BYTES // len(data) + 1)
        path = workdir / f"sniff-{kind}{Path(rel).suffix}"
        path.write_bytes(data)
        out.append((kind, path))
    journal = workdir / "sniff-journal.txt"
    lines = (corpus / JOURNAL_LINES).read_bytes()
    journal.write_bytes(JOURNAL_HEADER.encode() + lines * (SNIFF_LOG_BYTES // len(lines) + 1))
    out.insert(3, ("journal", journal))
    return out


def startup_job(workdir: Path, runs: int) -> None:
    print("\n## start-up: sarsleuth --help / sniff FILE  vs  sar -V")
    inputs = sniff_inputs(workdir)
    runs = max(runs, 10)
    cached = "off (PYTHONDONTWRITEBYTECODE)" if OUR_ENV.get("PYTHONDONTWRITEBYTECODE") else "on"
    print(f"{runs} interleaved runs each; bytecode cache {cached}; load average before: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("| command | s (median) | cpu s | peak MB | sar -V s |")
    print("|---|---|---|---|---|")
    commands = [("--help", ["--help"])] + [(f"sniff ({kind})", ["sniff", str(path)]) for kind, path in inputs]
    for (label, args), kind in zip(commands, [None] + [k for k, _ in inputs]):
        if kind is not None:
            said = subprocess.run([*sarsleuth_command(), *args], env=OUR_ENV, capture_output=True, text=True)
            if said.stdout.split("\t")[-1].strip() != kind:
                raise SystemExit(f"{args[-1]} sniffed as {said.stdout.strip()!r}, not {kind}")
        r = side_by_side(label, [*sarsleuth_command(), *args], ["sar", "-V"], runs)
        print(f"| sarsleuth {label} | {r['ours_s']:.3f} | {r['ours_cpu']:.3f} | {r['ours_mb']:.0f} | "
              f"{r['tool_s']:.3f} |", flush=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--job", choices=("analyze", "csv", "startup", "all"), default="all")
    ap.add_argument("--sizes", help="records of each size, comma-separated (default per job)")
    ap.add_argument("--runs", type=int, default=3, help="interleaved runs per size (median)")
    ap.add_argument("--workdir", type=Path, help="scratch directory (default: a temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    args = ap.parse_args(argv)
    for tool in ("sar", "sadf"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} not found: install sysstat")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="sarsleuth-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    sizes = tuple(int(s) for s in args.sizes.split(",")) if args.sizes else None
    try:
        if args.job in ("startup", "all"):
            startup_job(workdir, args.runs)
        if args.job in ("analyze", "all"):
            analyze_job(workdir, sizes or ANALYZE_SIZES, args.runs)
        if args.job in ("csv", "all"):
            csv_job(workdir, sizes or CSV_SIZES, args.runs)
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
