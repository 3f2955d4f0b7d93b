"""Benchmark: ``parse --format openmetrics`` of a one-second ``-S XALL``
day against ``sadf -d`` over the same file, side by side.

The day is built as ``bench_sa_binary.py`` builds it (ten seconds of the
local ``sadc -S XALL``, their records repeated one second apart: 86 400
records, about 370 MB) in a temporary folder, and removed afterwards
unless ``--keep`` says where to keep it (``--file`` benchmarks a day you
already have).  Then, alternated run by run, each in its own process with
its output to /dev/null:

    sadf -d DAY -- -A
    sarsleuth parse DAY --format openmetrics

sarsleuth is the console script of ``--venv`` (default: a virtual
environment made next to the day with ``pip install`` of this checkout,
no extras: the default install users get).  Prints wall and CPU seconds
(medians), peak resident memory (``wait4``) of each, the ratio of the two
times and our peak against the file's size.  Targets: time <= 1x sadf's,
peak <= 1x the file.  Run it on a quiet machine:

    python benchmarks/bench_openmetrics.py [--runs 3] [--records 86400]
        [--file DAY] [--keep DAY] [--venv DIR]
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from bench_cli import TOOL_ENV, run  # noqa: E402
from bench_sa_binary import build, collect  # noqa: E402


def default_install(venv: Path) -> Path:
    """The ``sarsleuth`` script of a venv holding ``pip install`` of this
    checkout (made when missing)."""
    script = venv / "bin" / "sarsleuth"
    if not script.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(ROOT)], check=True)
    return script


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=86400)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--file", type=Path, help="an sa file to export instead of a generated day")
    ap.add_argument("--keep", type=Path, help="keep the generated day here")
    ap.add_argument("--venv", type=Path, help="virtual environment with sarsleuth installed (made when missing)")
    args = ap.parse_args(argv)
    if shutil.which("sadf") is None or (args.file is None and not Path("/usr/lib/sysstat/sadc").exists()):
        raise SystemExit("needs sysstat (sadc to build the day, sadf to compare)")
    with tempfile.TemporaryDirectory(prefix="sarsleuth-openmetrics-") as tmp:
        day = args.file
        if day is None:
            sample = Path(tmp) / "sample.sa"
            day = args.keep or Path(tmp) / "day.sa"
            collect(10, sample, "XALL")
            build(sample, args.records, day)
        ours = default_install(args.venv or Path(tmp) / "venv")
        size_mb = day.stat().st_size / 2**20
        rows = {"sadf -d": [], "openmetrics": []}
        for _ in range(args.runs):
            rows["sadf -d"].append(run(["sadf", "-d", str(day), "--", "-A"], TOOL_ENV))
            rows["openmetrics"].append(run([str(ours), "parse", str(day), "--format", "openmetrics"], TOOL_ENV))
        if args.file is None and args.keep is None:
            day.unlink()
    print(f"{day.name}: {size_mb:.1f} MiB, {args.runs} alternated run(s), sarsleuth from {ours}")
    print(f"{'':14}{'wall s':>9}{'cpu s':>9}{'peak MiB':>10}{'peak/file':>11}")
    summary = {}
    for name, runs in rows.items():
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[2] for r in runs)
        peak = max(r[1] for r in runs)
        summary[name] = (wall, cpu, peak)
        print(f"{name:14}{wall:9.2f}{cpu:9.2f}{peak:10.1f}{peak / size_mb:11.2f}")
    (sw, sc, _), (ow, oc, op) = summary["sadf -d"], summary["openmetrics"]
    print(f"openmetrics / sadf -d: wall {ow / sw:.2f}x, cpu {oc / sc:.2f}x; peak {op / size_mb:.2f}x the file")
    return 0


if __name__ == "__main__":
    sys.exit(main())
