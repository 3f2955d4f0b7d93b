"""--save on big sa files: peak memory of ``analyze FILE --save DIR``
beside ``analyze FILE`` alone, each in its own process (VmHWM), and the
time.  The files are real sadc samples repeated a second apart up to a
day (``benchmarks/bench_sa_binary.py`` builds them the same way): sadc's
default activities (about 150 MB a day) and every activity (``-S XALL``,
about 370 MB); ``--cpus N`` adds a file of N CPUs written by
``sarsleuth.inputs.parsers.sa.writer`` (what sadc 12.6 writes), a few minutes
apart.

    python fuzz/saved_cases.py [--dir DIR] [--records 86400] [--collect default XALL] [--cpus 4096]

About twice the largest file of free space; a few minutes.
"""
from __future__ import annotations

import argparse
import datetime as dt
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_sa_binary import build, collect  # noqa: E402
from tests.test_resource_bounds import MB, run_measured  # noqa: E402


def many_cpus(path: Path, cpus: int, records: int) -> None:
    """``records`` samples of ``cpus`` CPUs (CPU time, interrupts per CPU
    left out), five minutes apart, written a day at a time."""
    from sarsleuth.inputs.parsers.sa.writer import write_sa
    t0 = dt.datetime(2026, 11, 24, 0, 0, 0, tzinfo=dt.timezone.utc)
    rows = []
    for k in range(records):
        per = [[1000 + 600 * k + c, 0, 500 + 300 * k, 90000 + 5100 * k, 7 * k, 0, 0, 0, 0, 0] for c in range(cpus)]
        rows.append({"time": t0 + dt.timedelta(minutes=5 * k), "uptime_cs": 1000 + 30000 * k,
                     "cpu": [[sum(c[i] for c in per) for i in range(10)]] + per,
                     "queue": {"nr_running": 3, "procs_blocked": 0, "nr_threads": 300, "load_avg_1": 100,
                               "load_avg_5": 100, "load_avg_15": 100}})
    write_sa(path, host="wide1", kernel="6.1.0", ncpu=cpus, records=rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=None)
    ap.add_argument("--records", type=int, default=86400, help="one-second records of each sadc file")
    ap.add_argument("--collect", nargs="*", default=["default", "XALL"], help="what sadc collects, a file each")
    ap.add_argument("--cpus", type=int, default=0, help="also a file of this many CPUs (0: none)")
    ap.add_argument("--cpu-records", type=int, default=288, help="its records (five minutes apart)")
    args = ap.parse_args(argv)
    work = args.dir or Path(tempfile.mkdtemp(prefix="sarsleuth-save-"))
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    try:
        files = []
        for what in args.collect:
            sample, big = work / f"sample-{what}", work / f"sa-{what}"
            collect(10, sample, what)
            build(sample, args.records, big)
            files.append((f"sadc {what}, {args.records:,} records", big))
        if args.cpus:
            wide = work / f"sa-{args.cpus}-cpus"
            many_cpus(wide, args.cpus, args.cpu_records)
            files.append((f"{args.cpus:,} CPUs, {args.cpu_records} records", wide))
        for name, path in files:
            proc, alone, secs = run_measured("analyze", path, "--format", "json", "-q", timeout=3600)
            rows.append((f"{name}: analyze", path.stat().st_size, proc.returncode, alone, secs))
            case = work / "case"
            proc, saved, secs = run_measured("analyze", path, "--save", case, "--format", "json", "-q",
                                             timeout=3600)
            on_disk = sum(p.stat().st_size for p in case.rglob("*") if p.is_file()) if case.exists() else 0
            rows.append((f"{name}: analyze --save ({on_disk / MB:.0f} MB saved)", path.stat().st_size,
                         proc.returncode, saved, secs))
            shutil.rmtree(case, ignore_errors=True)
            path.unlink()
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{'input':64} {'MB':>8} {'exit':>4} {'peak RSS MB':>11} {'seconds':>8}")
    for name, nbytes, code, peak, secs in rows:
        print(f"{name:64} {nbytes / MB:8.0f} {code:4d} {(peak or 0) / MB:11.0f} {secs:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
