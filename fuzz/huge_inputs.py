"""Huge inputs, too slow for the test suite: a 2 GB syslog, a 2 GB nginx
error.log, and a 10 GB gzip bomb behind a syslog head, each through
``sarsleuth parse``/``analyze`` with the peak resident size measured in the
command's own process (VmHWM).

    python fuzz/huge_inputs.py [--dir DIR] [--gb 2] [--bomb-gb 10]

Writes its files into DIR (default: a temporary directory; about 4 GB of
free space needed) and removes them afterwards.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.test_resource_bounds import (MB, NGINX_EVENT, NGINX_NOISE, SYSLOG_EVENT, SYSLOG_NOISE,  # noqa: E402
                                        run_measured, write_big_log, write_bomb)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=None)
    ap.add_argument("--gb", type=float, default=2.0, help="size of the generated logs")
    ap.add_argument("--bomb-gb", type=float, default=10.0, help="decompressed size of the gzip bomb")
    args = ap.parse_args(argv)
    work = args.dir or Path(tempfile.mkdtemp(prefix="sarsleuth-huge-"))
    work.mkdir(parents=True, exist_ok=True)
    small = work / "small.log"
    small.write_bytes(SYSLOG_NOISE * 100 + SYSLOG_EVENT)
    rows = []
    try:
        proc, base, secs = run_measured("parse", small, "-o", work / "out.csv")
        rows.append(("small syslog (baseline)", small.stat().st_size, proc.returncode, base, secs))
        size = int(args.gb * 1024 * MB)
        for name, noise, event in (("messages", SYSLOG_NOISE, SYSLOG_EVENT), ("error.log", NGINX_NOISE, NGINX_EVENT)):
            path = work / name
            write_big_log(path, noise, event, size)
            proc, peak, secs = run_measured("parse", path, "-o", work / "out.csv")
            rows.append((f"{name} parse", path.stat().st_size, proc.returncode, peak, secs))
            proc, peak, secs = run_measured("analyze", path, "--format", "json")
            rows.append((f"{name} analyze", path.stat().st_size, proc.returncode, peak, secs))
            path.unlink()
        bomb = work / "bomb.gz"
        total = write_bomb(bomb, SYSLOG_NOISE * 1000 + SYSLOG_EVENT, args.bomb_gb)
        proc, peak, secs = run_measured("analyze", bomb, "--format", "json")
        rows.append((f"gzip bomb {total / 2**30:.0f} GB ({bomb.stat().st_size / MB:.0f} MB file)", total,
                     proc.returncode, peak, secs))
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{'input':44} {'MB':>8} {'exit':>4} {'peak RSS MB':>11} {'seconds':>8}")
    for name, nbytes, code, peak, secs in rows:
        print(f"{name:44} {nbytes / MB:8.0f} {code:4d} {(peak or 0) / MB:11.0f} {secs:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
