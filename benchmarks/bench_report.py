"""Benchmark: the whole analysis and HTML report on big inputs, and the
report's size for every sample.

``--job bundle`` (the default): a day of one-second sar data (86 400
records, real ``sadc -S DISK`` samples repeated with advancing clocks, as
in bench_sa_binary.py) plus a 100 MB ``messages`` file (real corpus lines
re-stamped, incidents sprinkled in, as in bench_logs.py), analysed with

    sarsleuth analyze BUNDLE --no-fleet --html report.html --format json > /dev/null

Targets: under 8 s, under 700 MB of peak memory (children included) and a
report under 5 MB.

``--job xall``: the one-second ``sadc -S XALL`` day alone (every activity,
built as bench_sa_binary.py builds it), ``analyze DAY --html report.html
--format json``; then, in one process, the case loaded and the report
rendered alone (the explorer's reduction and encoding, the charts, the
page).  Targets: the whole command under 10 s, the report under 5 MB.

``--job samples``: every sample's report (``samples/*`` and the bundles),
its size.  Target: each under 1.5 MB.

Not a test: run it by hand.

    python benchmarks/bench_report.py [--job bundle|xall|samples] [--records 86400] [--log-mb 100] [--keep DIR]
"""
from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

import bench_logs  # noqa: E402
import bench_sa_binary  # noqa: E402

#: Run in a child: sarsleuth's command line, then its peak memory on stderr.
CHILD = ("import resource, sys; from sarsleuth.cli import main; sys.argv = sys.argv[1:];\n"
         "try:\n    main()\nexcept SystemExit:\n    pass\n"
         "print(max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,\n"
         "          resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss), file=sys.stderr)")
#: Run in a child: the case loaded, then the report rendered alone.
RENDER = """
import sys, time
sys.path.insert(0, {root!r})
import sarsleuth
from sarsleuth.render.formats.html import build_html
case = sarsleuth.load({path!r})
t0 = time.perf_counter()
html = build_html(case)
print(time.perf_counter() - t0, len(html.encode()))
"""


def make_bundle(folder: Path, records: int, log_mb: int) -> None:
    sample = folder / "sample.sa"
    subprocess.run([bench_sa_binary.SADC, "-S", "DISK", "1", "11", str(sample)], check=True)
    bench_sa_binary.build(sample, records, folder / "sa21")
    sample.unlink()
    bench_logs.generate(folder / "messages", log_mb)


def make_xall(folder: Path, records: int) -> None:
    sample = folder / "sample.sa"
    bench_sa_binary.collect(10, sample, "XALL")
    bench_sa_binary.build(sample, records, folder / "sa21")
    sample.unlink()


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def analyze(inputs: list, report: Path, *extra) -> tuple[float, float, int, int]:
    """(wall seconds, CPU seconds, peak bytes, report bytes) of ``analyze INPUTS --html``."""
    cmd = [sys.executable, "-c", CHILD, "sarsleuth", "analyze", *map(str, inputs), *extra, "--html", str(report),
           "--format", "json"]
    t0, c0 = time.perf_counter(), _cpu()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    peak_kb = int(proc.stderr.strip().splitlines()[-1])
    return wall, cpu, peak_kb * 1024, report.stat().st_size


def job_bundle(folder: Path, args) -> None:
    if not any(folder.iterdir()):
        make_bundle(folder, args.records, args.log_mb)
    sizes = {p.name: p.stat().st_size for p in folder.iterdir()}
    # the generated messages carry the corpus lines' many host names: one case, as for the single host the bundle stands for
    wall, cpu, peak, html = analyze([folder], folder.parent / "report.html", "--no-fleet")
    print("bundle: " + ", ".join(f"{k} {v / 2**20:.0f} MiB" for k, v in sorted(sizes.items())))
    print(f"analyze + HTML: {wall:.1f} s ({cpu:.1f} s CPU), peak RSS {peak / 2**20:.0f} MiB, "
          f"report {html / 2**20:.2f} MiB")
    print(f"targets: time < 8 s -> {'met' if wall < 8 else 'NOT met'}; "
          f"peak < 700 MB -> {'met' if peak < 700e6 else 'NOT met'}; "
          f"size < 5 MiB -> {'met' if html < 5 * 2**20 else 'NOT met'}")


def job_xall(folder: Path, args) -> None:
    day = folder / "sa21"
    if not day.exists():
        make_xall(folder, args.records)
    json_wall, json_cpu = analyze_json(day)
    wall, cpu, peak, html = analyze([day], folder.parent / "report.html")
    out = subprocess.run([sys.executable, "-c", RENDER.format(root=str(ROOT), path=str(day))], check=True,
                         capture_output=True, text=True, cwd=ROOT).stdout.split()
    render_s = float(out[0])
    print(f"day: {day.stat().st_size / 2**20:.1f} MiB, sadc -S XALL, {args.records} records at 1 s")
    print(f"analyze --format json alone: {json_wall:.1f} s ({json_cpu:.1f} s CPU)")
    print(f"analyze --html: {wall:.1f} s ({cpu:.1f} s CPU), peak RSS {peak / 2**20:.0f} MiB, "
          f"report {html / 2**20:.2f} MiB; the report rendered alone: {render_s:.2f} s")
    print(f"targets: time < 10 s -> {'met' if wall < 10 else 'NOT met'}; "
          f"size < 5 MiB -> {'met' if html < 5 * 2**20 else 'NOT met'}")


def analyze_json(day: Path) -> tuple[float, float]:
    """(wall, CPU seconds) of the same analysis without the report."""
    t0, c0 = time.perf_counter(), _cpu()
    subprocess.run([sys.executable, "-c", CHILD, "sarsleuth", "analyze", str(day), "--format", "json"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, cwd=ROOT)
    return time.perf_counter() - t0, _cpu() - c0


def job_samples(folder: Path, args) -> None:
    samples = ROOT / "samples"
    cases = {p.name: [p] for p in sorted(samples.iterdir()) if p.is_dir() and p.name not in ("bundles", "record")}
    cases["bundles"] = sorted((samples / "bundles").glob("*.tar.*"))
    worst = 0
    print(f"{'sample':22}{'seconds':>9}{'report KiB':>12}")
    for name, inputs in cases.items():
        wall, _cpu_s, _peak, html = analyze(inputs, folder / f"{name}.html", "--no-fleet")
        worst = max(worst, html)
        print(f"{name:22}{wall:9.1f}{html / 1024:12.0f}")
    print(f"target: every report < 1.5 MiB -> {'met' if worst < 1.5 * 2**20 else 'NOT met'} "
          f"(largest {worst / 2**20:.2f} MiB)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--job", choices=("bundle", "xall", "samples"), default="bundle")
    ap.add_argument("--records", type=int, default=86400)
    ap.add_argument("--log-mb", type=int, default=100)
    ap.add_argument("--keep", type=Path, help="build the inputs here and keep them")
    args = ap.parse_args()
    if args.job != "samples" and shutil.which(bench_sa_binary.SADC) is None and not Path(bench_sa_binary.SADC).exists():
        raise SystemExit("needs sysstat's sadc (apt-get install sysstat)")
    tmp = Path(tempfile.mkdtemp(prefix="sarsleuth-report-bench-"))
    folder = args.keep or tmp / "inputs"
    folder.mkdir(parents=True, exist_ok=True)
    try:
        {"bundle": job_bundle, "xall": job_xall, "samples": job_samples}[args.job](folder, args)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
