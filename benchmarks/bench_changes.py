"""Benchmark: "what changed" on a one-second ``sadc -S XALL`` day.

The day is built as bench_sa_binary.py builds it (ten seconds of real
``sadc -S XALL`` records repeated with advancing clocks: 86 400 records,
about 400 series).  The file is read once; then, alternated run by run,

    the ranking: every series against its baseline for a window of an hour
        (sarsleuth.analysis.departures.rank, in this process, the file
        already read: the ranking alone)
    sar -A -f DAY -s START -e END > /dev/null, for the window and for its
        baseline (the six hours before it): what an operator runs to read
        the averages the ranking compares

and prints the median of each and their ratio; then the ranking of 24
windows of a minute (one every hour), and of the whole day: its second
half against its first, every sample of every series.  Target: the
ranking of the day under 2 s on 2 cores.  Not a test: run it by hand.

    python benchmarks/bench_changes.py [--records 86400] [--runs 5] [--keep FILE] [--file FILE]
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import bench_sa_binary  # noqa: E402

SAR = "sar"


def make_day(folder: Path, records: int) -> Path:
    sample = folder / "sample.sa"
    bench_sa_binary.collect(10, sample, "XALL")
    day = folder / "sa21"
    bench_sa_binary.build(sample, records, day)
    sample.unlink()
    return day


def sar_averages(day: Path, start: pd.Timestamp, end: pd.Timestamp) -> float:
    t0 = time.perf_counter()
    subprocess.run([SAR, "-A", "-f", str(day), "-s", start.strftime("%H:%M:%S"), "-e", end.strftime("%H:%M:%S")],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=bench_sa_binary.ENV)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=86_400)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--keep", help="keep the generated day here")
    ap.add_argument("--file", help="use this sa file instead of building one")
    args = ap.parse_args()

    from sarsleuth.case import Case
    from sarsleuth.analysis.departures import rank

    with tempfile.TemporaryDirectory() as tmp:
        day = Path(args.file) if args.file else make_day(Path(tmp), args.records)
        if args.keep and not args.file:
            shutil.copyfile(day, args.keep)
        t0 = time.perf_counter()
        case = Case.load(day, analyse=False)
        read = time.perf_counter() - t0
        store = case.store
        lo, hi = store.span()
        lo, hi = pd.Timestamp(lo), pd.Timestamp(hi)
        series = len(store.runs)
        samples = max(run.count for run in store.runs.values())
        print(f"{day.stat().st_size / 2**20:.1f} MiB, {series} series, {samples:,} samples each at most, "
              f"read in {read:.2f} s (not counted below)")
        start = lo + (hi - lo) / 2
        window = (start, start + pd.Timedelta(hours=1))
        baseline = (start - pd.Timedelta(hours=6), start)
        ours, theirs = [], []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            found = rank(store, case.events, window)
            ours.append(time.perf_counter() - t0)
            theirs.append(sar_averages(day, *window) + sar_averages(day, *baseline))
        a, b = statistics.median(ours), statistics.median(theirs)
        print(f"ranking of a 1 h window against the 6 h before: {a:.2f} s (median of {args.runs}; "
              f"{len(found.table):,} rows, {int(found.table['departs'].sum())} departing)")
        print(f"sar -A -s -e over the window and the baseline:   {b:.2f} s")
        print(f"ratio: {a / b:.2f}x sar")
        t0 = time.perf_counter()
        for h in range(24):
            at = lo + pd.Timedelta(hours=h, minutes=30)
            if at + pd.Timedelta(minutes=1) <= hi:
                rank(store, case.events, (at, at + pd.Timedelta(minutes=1)))
        print(f"24 one-minute windows, one every hour: {time.perf_counter() - t0:.2f} s")
        half = lo + (hi - lo) / 2
        runs = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            rank(store, case.events, (half, hi), baseline=(lo, half))
            runs.append(time.perf_counter() - t0)
        print(f"the whole day, its second half against its first (every sample of every series): "
              f"{statistics.median(runs):.2f} s (median of {args.runs}; target: under 2 s)")


if __name__ == "__main__":
    main()
