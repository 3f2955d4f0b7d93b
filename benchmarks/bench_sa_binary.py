"""Benchmark: sarsleuth's native sa reader against ``sadf -d`` on a big file.

Builds a day of one-second samples (86 400 records) from real ``sadc``
output: ten seconds are collected, then their records are repeated with the
uptime, time stamps and wall clock of each record advanced one second at a
time.  ``--collect`` picks what sadc collects: ``XALL`` (every activity,
per-CPU interrupts included: the worst case, about 370 MB), ``DISK`` or
``default`` (sadc's default set, what most hosts write; about 150 MB).
Then it runs, each in its own process so that its peak memory is its own,

    sadf -d FILE -- -A > /dev/null
    sarsleuth's SaBinaryParser.parse(FILE)

and prints their times and peak memory (resident set high-water mark) side
by side, against each other and against the file size, with the size of the
metrics table itself (the floor of the reader's peak).  Not a test: run it
by hand.

    python benchmarks/bench_sa_binary.py [--collect XALL|DISK|default] [--records N]
                                         [--keep FILE] [--file FILE] [--no-sadf]
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sarsleuth.inputs.parsers.sa.layout import read_layout  # noqa: E402
from sarsleuth.inputs.parsers.sa.records import Walker  # noqa: E402

SADC = "/usr/lib/sysstat/sadc"
ENV = dict(os.environ, TZ="UTC", LC_ALL="C")


def collect(seconds: int, path: Path, what: str = "XALL") -> None:
    """Real sadc samples, one per second."""
    options = [] if what == "default" else ["-S", what]
    subprocess.run([SADC, *options, "1", str(seconds + 1), str(path)], check=True)


#: Records of the generated file built and written at a time.
BUILD_RECORDS = 4096


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
    uptime0 = int(index.uptime[0])
    ust0 = int(index.ust[0])
    hms_off = layout.record.type_off + 1
    # written a few thousand records at a time: a child's peak memory, as
    # wait4 reports it, starts from this process's own high-water mark (the
    # kernel keeps it across exec), so this process must stay small
    with open(out, "wb") as fh:
        fh.write(buf[:int(starts[0])])
        for first in range(0, records, BUILD_RECORDS):
            step = np.arange(first, min(records, first + BUILD_RECORDS), dtype=np.uint64)
            n = len(step)
            body = block[(step % len(starts)).astype(np.int64)]
            body[:, 0:8] = (uptime0 + 100 * step).astype("<u8").view(np.uint8).reshape(n, 8)
            body[:, 8:16] = (ust0 + step).astype("<u8").view(np.uint8).reshape(n, 8)
            local = (ust0 + step.astype(np.int64)) % 86400
            body[:, hms_off] = local // 3600
            body[:, hms_off + 1] = local % 3600 // 60
            body[:, hms_off + 2] = local % 60
            fh.write(body.tobytes())


def measured(cmd: list, stdout=subprocess.DEVNULL):
    """(wall seconds, peak resident bytes, stdout) of one child process; the
    peak is the child's own (``wait4``), not the largest of all children."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=stdout, env=ENV)
    _pid, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - t0
    out = proc.stdout.read() if proc.stdout else b""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{cmd[0]} failed with status {status}")
    return elapsed, usage.ru_maxrss * 1024, out


READER = """
import sys, time
sys.path.insert(0, {root!r})
def hwm():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
import pandas                                     # imported first: its size is not the reader's
from sarsleuth.inputs.parsers.base import ParseOptions
from sarsleuth.inputs.parsers.sa.parser import SaBinaryParser
base = hwm()
t0 = time.perf_counter()
source = SaBinaryParser.parse({path!r}, ParseOptions())
elapsed = time.perf_counter() - t0
peak = hwm()
store = source.store
print(elapsed, peak, base, len(store), source.records, store.nbytes)
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--collect", choices=("XALL", "DISK", "default"), default="XALL",
                    help="what sadc collects for the sample (default XALL)")
    ap.add_argument("--records", type=int, default=86400)
    ap.add_argument("--keep", type=Path, help="keep the generated file here")
    ap.add_argument("--file", type=Path, help="benchmark this sa file instead of generating one")
    ap.add_argument("--no-sadf", action="store_true", help="time sarsleuth only")
    args = ap.parse_args()
    if args.file is None and not Path(SADC).exists():
        raise SystemExit("needs sysstat's sadc to build the file (or pass --file)")
    if not args.no_sadf and shutil.which("sadf") is None:
        raise SystemExit("needs sysstat's sadf (or pass --no-sadf)")
    with tempfile.TemporaryDirectory() as tmp:
        if args.file:
            big = args.file
        else:
            sample = Path(tmp) / "sample.sa"
            big = args.keep or Path(tmp) / "day.sa"
            collect(10, sample, args.collect)
            build(sample, args.records, big)
        size = big.stat().st_size
        out = subprocess.run([sys.executable, "-c", READER.format(root=str(ROOT), path=str(big))],
                             check=True, capture_output=True, text=True, env=ENV).stdout.split()
        ours_s, ours_peak, base = float(out[0]), int(out[1]), int(out[2])
        values, records, table = int(out[3]), int(out[4]), int(out[5])
        sadf = None if args.no_sadf else measured(["sadf", "-d", str(big), "--", "-A"])

    what = "" if args.file else f", sadc {'-S ' + args.collect if args.collect != 'default' else 'defaults'}"
    print(f"file: {records} records{what}, {size / 1e6:.1f} MB, {values:,} values "
          f"({size / max(values, 1):.1f} bytes of file per value)")
    print(f"metric store: {table / 1e6:.1f} MB ({table / max(values, 1):.1f} bytes per value, "
          f"{table / size:.2f}x the file); Python with pandas loaded: {base / 1e6:.1f} MB")
    print(f"{'':12}{'seconds':>10}{'peak MB':>10}{'peak/file':>11}")
    if sadf:
        print(f"{'sadf -d':12}{sadf[0]:10.2f}{sadf[1] / 1e6:10.1f}{sadf[1] / size:11.2f}")
    print(f"{'sarsleuth':12}{ours_s:10.2f}{ours_peak / 1e6:10.1f}{ours_peak / size:11.2f}")
    if sadf:
        print(f"sarsleuth / sadf -d: time {ours_s / sadf[0]:.3f}x ({sadf[0] / ours_s:.1f}x faster), "
              f"peak memory {ours_peak / sadf[1]:.1f}x")
    print("(sarsleuth's seconds are the parse alone, its peak includes the interpreter and pandas; "
          "sadf's are the whole process)")


if __name__ == "__main__":
    main()
