"""A tar of tens of thousands of small logs through ``sarsleuth analyze``,
peak resident memory measured in the command's own process, beside ``tar``
reading the same archive in the same run.

    python fuzz/many_files.py                        # 10,000, 25,000 and 50,000 members
    python fuzz/many_files.py --members 50000 --every 1
    python fuzz/many_files.py --dir SCRATCH --keep

Each member is a small application log of 20 lines as rsyslog writes them;
every ``--every``-th one also holds a kernel segfault line (``--every 1``:
an event in every file, the worst case).  Prints, per size: seconds and
peak RSS of ``analyze --format json``, seconds of ``tar -xzOf ARCHIVE >
/dev/null`` (tar reading every member), the ratio, and checks the peak
against ``--max-mb`` (default 500) and the findings against what was
written.  Exit 1 when a check fails.
"""
from __future__ import annotations

import argparse
import io
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.test_resource_bounds import MB, run_measured, small_log  # noqa: E402


def write_tar(path: Path, members: int, every: int) -> int:
    """The archive, written member by member; returns the segfaults in it."""
    events = 0
    with tarfile.open(path, "w:gz", compresslevel=1) as tf:
        for i in range(members):
            event = i % every == 0
            events += event
            data = small_log(i, event)
            info = tarfile.TarInfo(f"var/log/app/app{i:05d}.log")
            info.size, info.mtime = len(data), 1710212400
            tf.addfile(info, io.BytesIO(data))
    return events


def time_tar(path: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(["tar", "-xzOf", str(path)], stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--members", type=int, nargs="+", default=[10_000, 25_000, 50_000])
    ap.add_argument("--every", type=int, default=1, help="a segfault line in every N-th member")
    ap.add_argument("--max-mb", type=float, default=500.0)
    ap.add_argument("--dir", type=Path, default=None)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args(argv)
    work = args.dir or Path(tempfile.mkdtemp(prefix="sarsleuth-many-"))
    work.mkdir(parents=True, exist_ok=True)
    rows, failed = [], False
    try:
        for n in args.members:
            path = work / f"logs-{n}.tar.gz"
            events = write_tar(path, n, args.every)
            tar_s = time_tar(path)
            proc, peak, secs = run_measured("analyze", path, "--year", "2024", "--format", "json", timeout=7200)
            tar_s = (tar_s + time_tar(path)) / 2          # before and after: the machine is shared
            ok = proc.returncode == 0
            if ok:
                doc = json.loads(proc.stdout)
                segv = [f["metrics"]["segfaults"] for f in doc["findings"] if f["detector"] == "segfault"]
                ok = sum(segv) == events and (peak or 0) < args.max_mb * MB
            failed |= not ok
            rows.append((n, events, path.stat().st_size, proc.returncode, peak, secs, tar_s, ok))
            if not args.keep:
                path.unlink()
    finally:
        if args.dir is None and not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{'members':>8} {'events':>7} {'archive MB':>10} {'exit':>4} {'peak MB':>8} {'seconds':>8} "
          f"{'tar s':>6} {'ratio':>6} {'ms/member':>9} ok")
    for n, events, size, code, peak, secs, tar_s, ok in rows:
        print(f"{n:8d} {events:7d} {size / MB:10.1f} {code:4d} {(peak or 0) / MB:8.0f} {secs:8.1f} "
              f"{tar_s:6.2f} {secs / tar_s:6.0f} {secs / n * 1000:9.2f} {'yes' if ok else 'NO'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
