"""Benchmark: the whole analysis and HTML report on a big bundle.

A day of one-second sar data (86 400 records, real ``sadc -S DISK`` samples
repeated with advancing clocks, as in bench_sa_binary.py) plus a 100 MB
``messages`` file (real corpus lines re-stamped, incidents sprinkled in, as
in bench_logs.py), analysed with

    sarsleuth analyze BUNDLE --html report.html --format json > /dev/null

Prints the wall time, peak memory and the report's size.  Targets: under
8 s, under 700 MB of peak memory (children included) and a report under
5 MB.  Not a test: run it by hand.

    python benchmarks/bench_report.py [--records 86400] [--log-mb 100] [--keep DIR]
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import bench_logs  # noqa: E402
import bench_sa_binary  # noqa: E402


def make_bundle(folder: Path, records: int, log_mb: int) -> None:
    sample = folder / "sample.sa"
    subprocess.run([bench_sa_binary.SADC, "-S", "DISK", "1", "11", str(sample)], check=True)
    bench_sa_binary.build(sample, records, folder / "sa21")
    sample.unlink()
    bench_logs.generate(folder / "messages", log_mb)


def run(folder: Path) -> tuple[float, int, int]:
    report = folder.parent / "report.html"
    cmd = [sys.executable, "-c",
           "import resource, sys; from sarsleuth.cli import main; sys.argv = sys.argv[1:];\n"
           "try:\n    main()\nexcept SystemExit:\n    pass\n"
           "print(max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,\n"
           "          resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss), file=sys.stderr)",
           # the generated messages carry the corpus lines' many host names:
           # one case, as for the single host the bundle stands for
           "sarsleuth", "analyze", str(folder), "--no-fleet", "--html", str(report), "--format", "json"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    peak_kb = int(proc.stderr.strip().splitlines()[-1])
    return wall, peak_kb * 1024, report.stat().st_size


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=86400)
    ap.add_argument("--log-mb", type=int, default=100)
    ap.add_argument("--keep", type=Path, help="build the bundle here and keep it")
    args = ap.parse_args()
    if shutil.which(bench_sa_binary.SADC) is None and not Path(bench_sa_binary.SADC).exists():
        raise SystemExit("needs sysstat's sadc (apt-get install sysstat)")
    tmp = Path(tempfile.mkdtemp(prefix="sarsleuth-report-bench-"))
    folder = args.keep or tmp / "bundle"
    folder.mkdir(parents=True, exist_ok=True)
    try:
        if not any(folder.iterdir()):
            make_bundle(folder, args.records, args.log_mb)
        sizes = {p.name: p.stat().st_size for p in folder.iterdir()}
        wall, peak, html = run(folder)
        print(f"bundle: " + ", ".join(f"{k} {v / 2**20:.0f} MiB" for k, v in sorted(sizes.items())))
        print(f"analyze + HTML: {wall:.1f} s, peak RSS {peak / 2**20:.0f} MiB, report {html / 2**20:.2f} MiB")
        print(f"targets: time < 8 s -> {'met' if wall < 8 else 'NOT met'}; "
              f"peak < 700 MB -> {'met' if peak < 700e6 else 'NOT met'}; "
              f"size < 5 MiB -> {'met' if html < 5 * 2**20 else 'NOT met'}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
