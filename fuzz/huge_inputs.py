"""Huge inputs, too slow for the test suite: a 2 GB syslog, a 2 GB nginx
error.log, a 10 GB gzip bomb behind a syslog head, and one OOM kill printed
a million and ten million times, each through ``sarsleuth parse``/``analyze``
with the peak resident size measured in the command's own process (VmHWM).

    python fuzz/huge_inputs.py [--dir DIR] [--gb 2] [--bomb-gb 10] [--flood 1000000 10000000]

Writes its files into DIR (default: a temporary directory; about 4 GB of
free space needed) and removes them afterwards.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.test_resource_bounds import (MB, NGINX_EVENT, NGINX_NOISE, SYSLOG_EVENT, SYSLOG_NOISE,  # noqa: E402
                                        run_measured, write_big_log, write_bomb, write_flood)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=None)
    ap.add_argument("--gb", type=float, default=2.0, help="size of the generated logs")
    ap.add_argument("--bomb-gb", type=float, default=10.0, help="decompressed size of the gzip bomb")
    ap.add_argument("--flood", type=int, nargs="*", default=[1_000_000, 10_000_000],
                    help="how many times the one OOM kill is printed (a run per count)")
    ap.add_argument("--only-flood", action="store_true", help="skip the big logs and the bomb")
    args = ap.parse_args(argv)
    work = args.dir or Path(tempfile.mkdtemp(prefix="sarsleuth-huge-"))
    work.mkdir(parents=True, exist_ok=True)
    small = work / "small.log"
    small.write_bytes(SYSLOG_NOISE * 100 + SYSLOG_EVENT)
    rows = []
    try:
        proc, base, secs = run_measured("parse", small, "-o", work / "out.csv")
        rows.append(("small syslog (baseline)", small.stat().st_size, proc.returncode, base, secs))
        size = 0 if args.only_flood else int(args.gb * 1024 * MB)
        for name, noise, event in (("messages", SYSLOG_NOISE, SYSLOG_EVENT), ("error.log", NGINX_NOISE, NGINX_EVENT)):
            if not size:
                break
            path = work / name
            write_big_log(path, noise, event, size)
            proc, peak, secs = run_measured("parse", path, "-o", work / "out.csv")
            rows.append((f"{name} parse", path.stat().st_size, proc.returncode, peak, secs))
            proc, peak, secs = run_measured("analyze", path, "--format", "json")
            rows.append((f"{name} analyze", path.stat().st_size, proc.returncode, peak, secs))
            path.unlink()
        if not args.only_flood:
            bomb = work / "bomb.gz"
            total = write_bomb(bomb, SYSLOG_NOISE * 1000 + SYSLOG_EVENT, args.bomb_gb)
            proc, peak, secs = run_measured("analyze", bomb, "--format", "json")
            rows.append((f"gzip bomb {total / 2**30:.0f} GB ({bomb.stat().st_size / MB:.0f} MB file)", total,
                         proc.returncode, peak, secs))
            bomb.unlink()
        for lines in args.flood:
            path = work / f"flood-{lines}"
            write_flood(path, lines)
            proc, peak, secs = run_measured("analyze", path, "--year", "2024", "--format", "json")
            said = _kill_reports(proc.stdout) if proc.returncode == 0 else proc.stderr.strip()[-200:]
            rows.append((f"one OOM kill x {lines:,}: {said}", path.stat().st_size, proc.returncode, peak, secs))
            path.unlink()
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{'input':64} {'MB':>8} {'exit':>4} {'peak RSS MB':>11} {'seconds':>8}")
    for name, nbytes, code, peak, secs in rows:
        print(f"{name:64} {nbytes / MB:8.0f} {code:4d} {(peak or 0) / MB:11.0f} {secs:8.1f}")
    return 0


def _kill_reports(stdout: str) -> str:
    """What the story says of the flood: the oom-kill finding's counts."""
    doc = json.loads(stdout)
    kill = next((f for f in doc["findings"] if f["detector"] == "oom-kill"), None)
    if kill is None:
        return "no oom-kill finding"
    return f"victims {kill['metrics']['victims']}, kill_reports {kill['metrics']['kill_reports']:,}"


if __name__ == "__main__":
    sys.exit(main())
