"""Benchmark: sarsleuth's native sa reader against ``sadf -d`` on a big file.

Builds a day of one-second samples (86 400 records, a few hundred MB) from
real ``sadc`` output: ten seconds are collected with every activity, then
their records are repeated with the uptime, time stamps and wall clock of
each record advanced one second at a time.  Then it times

    sadf -d FILE -- -A > /dev/null
    sarsleuth's SaBinaryParser.parse(FILE)   (in a child process)

and prints both, their ratio and the peak memory of each against the file
size.  Not a test: run it by hand.

    python benchmarks/bench_sa_binary.py [--records N] [--keep FILE]
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sarsleuth.parsers._sa_format import read_layout  # noqa: E402
from sarsleuth.parsers._sa_records import Walker  # noqa: E402

SADC = "/usr/lib/sysstat/sadc"


def collect(seconds: int, path: Path) -> None:
    """Real sadc samples, every activity, one per second."""
    subprocess.run([SADC, "-S", "XALL", "1", str(seconds + 1), str(path)], check=True)


def build(source: Path, records: int, out: Path) -> None:
    """Repeat the statistics records of ``source`` up to ``records`` records,
    advancing uptime and time one second per record."""
    buf = source.read_bytes()
    layout = read_layout(source, buf)
    index = Walker(source, buf, layout, []).walk()
    starts = index.offsets
    sizes = np.diff(np.append(starts, len(buf)))
    if len(set(sizes.tolist())) != 1:
        raise SystemExit("records of the sample differ in size; collect again")
    size = int(sizes[0])
    block = np.frombuffer(buf, dtype=np.uint8, count=size * len(starts), offset=int(starts[0]))
    block = block.reshape(len(starts), size)
    tiles = -(-records // len(starts))
    body = np.tile(block, (tiles, 1))[:records].copy()
    step = np.arange(records, dtype=np.uint64)
    uptime0 = int(index.uptime[0])
    ust0 = int(index.ust[0])
    body[:, 0:8] = (uptime0 + 100 * step).astype("<u8").view(np.uint8).reshape(records, 8)
    body[:, 8:16] = (ust0 + step).astype("<u8").view(np.uint8).reshape(records, 8)
    local = (ust0 + step.astype(np.int64)) % 86400
    hms_off = layout.record.type_off + 1
    body[:, hms_off] = local // 3600
    body[:, hms_off + 1] = local % 3600 // 60
    body[:, hms_off + 2] = local % 60
    with open(out, "wb") as fh:
        fh.write(buf[:int(starts[0])])
        fh.write(body.tobytes())


def timed(cmd: list, stdout=subprocess.DEVNULL):
    """(seconds, peak RSS in bytes) of a child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=stdout, env=dict(os.environ, TZ="UTC", LC_ALL="C"))
    elapsed = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return elapsed, max(peak, before) * 1024


READER = """
import resource, sys, time
sys.path.insert(0, {root!r})
from sarsleuth.parsers.base import ParseOptions
from sarsleuth.parsers.sa_binary import SaBinaryParser
t0 = time.perf_counter()
source = SaBinaryParser.parse({path!r}, ParseOptions())
elapsed = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(f"{{elapsed}} {{peak}} {{len(source.metrics)}} {{source.records}}")
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=86400)
    ap.add_argument("--keep", type=Path, help="keep the generated file here")
    args = ap.parse_args()
    if not Path(SADC).exists() or shutil.which("sadf") is None:
        raise SystemExit("needs sysstat (sadc and sadf)")
    with tempfile.TemporaryDirectory() as tmp:
        sample = Path(tmp) / "sample.sa"
        big = args.keep or Path(tmp) / "day.sa"
        collect(10, sample)
        build(sample, args.records, big)
        size = big.stat().st_size
        print(f"file: {args.records} records, {size / 1e6:.1f} MB")
        sadf_s, sadf_rss = timed(["sadf", "-d", str(big), "--", "-A"])
        # the reader runs in its own interpreter so its peak memory is its own
        out = subprocess.run([sys.executable, "-c", READER.format(root=str(ROOT), path=str(big))],
                             check=True, capture_output=True, text=True).stdout.split()
        ours_s, ours_rss, rows, records = float(out[0]), int(out[1]), int(out[2]), int(out[3])
        print(f"{'':12}{'seconds':>10}{'peak MB':>10}{'peak/file':>11}")
        print(f"{'sadf -d':12}{sadf_s:10.2f}{sadf_rss / 1e6:10.1f}{sadf_rss / size:11.2f}")
        print(f"{'sarsleuth':12}{ours_s:10.2f}{ours_rss / 1e6:10.1f}{ours_rss / size:11.2f}")
        print(f"speed ratio (sadf / sarsleuth): {sadf_s / ours_s:.2f}x; "
              f"{rows} metric rows from {records} records")


if __name__ == "__main__":
    main()
