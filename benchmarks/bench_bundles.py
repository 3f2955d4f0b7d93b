"""Benchmark: analyse a big sosreport archive in place, next to ``tar -xO``
of the same archive to /dev/null plus analysing its extracted folder.

The archive is the committed web07 sosreport (made by sos, see
samples/bundles/stage.sh) grown to the size asked: a long
``var/log/messages`` (routine lines as rsyslog writes them, with the kernel
lines of an incident near the end), rotated ``messages-*.gz``, and large
command outputs sarsleuth does not read (as ``lsof`` and ``ps -elfL`` are
on a busy host).  It is written as a gzip sosreport (``sos report -z gzip``).

    python benchmarks/bench_bundles.py                     # 200 MB
    python benchmarks/bench_bundles.py --size-mb 1024      # the 1 GB case
    python benchmarks/bench_bundles.py --size-mb 50 --dir /scratch --keep

Each measurement runs in a child process so its peak RSS is its own
(``wait4``; the tar figure includes the Python parent's few MB at fork);
the three commands run interleaved ``--repeat`` times, best of each.  Target: the archive analysed in no more than 1.5x the time of
``tar -xOf`` plus analysing the extracted folder, with a peak memory close
to the extracted folder's.
"""
from __future__ import annotations

import argparse
import gzip
import os
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

ROUTINE = [
    "CROND[{pid}]: (root) CMD (/usr/lib64/sa/sa1 1 1)",
    "sshd[{pid}]: Accepted publickey for deploy from 10.1.{a}.{b} port {port} ssh2",
    "sshd[{pid}]: pam_unix(sshd:session): session opened for user deploy by (uid=0)",
    "systemd[1]: Started Session {pid} of user deploy.",
    "ntpd[812]: adjust time server 10.0.0.{a} offset 0.00{b} sec",
    "kernel: [UFW BLOCK] IN=eth0 OUT= MAC=00:16:3e:{a:02x}:{b:02x}:01 SRC=10.9.{a}.{b} DST=10.0.0.7 LEN=60 PROTO=TCP "
    "SPT={port} DPT=23 WINDOW=29200 SYN",
]
INCIDENT = [
    "kernel: TCP: time wait bucket table overflow",
    "kernel: nginx: page allocation failure. order:0, mode:0x20",
    "kernel: Out of memory: Kill process {pid} (nginx) score 912 or sacrifice child",
    "kernel: Killed process {pid} (nginx) total-vm:8123456kB, anon-rss:7823456kB, file-rss:0kB",
]
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]


def _syslog(out, size: int, rnd: random.Random, incident: bool, start: float) -> None:
    written, t = 0, start
    while written < size:
        t += rnd.random() * 0.5
        tm = time.gmtime(t)
        body = rnd.choice(ROUTINE).format(pid=rnd.randrange(1000, 60000), a=rnd.randrange(256),
                                          b=rnd.randrange(256), port=rnd.randrange(1024, 65535))
        line = f"{MONTHS[tm.tm_mon - 1]} {tm.tm_mday:2d} {tm.tm_hour:02d}:{tm.tm_min:02d}:{tm.tm_sec:02d} web07 {body}\n"
        out.write(line.encode())
        written += len(line)
    if incident:
        for body in INCIDENT:
            t += 1
            tm = time.gmtime(t)
            out.write(f"{MONTHS[tm.tm_mon - 1]} {tm.tm_mday:2d} {tm.tm_hour:02d}:{tm.tm_min:02d}:{tm.tm_sec:02d} "
                      f"web07 {body.format(pid=4242)}\n".encode())


def build(folder: Path, size_mb: int) -> tuple[Path, Path]:
    """The grown sosreport, extracted (``folder/extracted/ROOT``) and as
    ``folder/ROOT.tar.gz``."""
    (src,) = sorted((ROOT / "samples" / "bundles").glob("sosreport-web07-*.tar.xz"))
    extracted = folder / "extracted"
    with tarfile.open(src) as tf:
        tf.extractall(extracted, filter="data")
    (root,) = extracted.iterdir()
    rnd = random.Random(7)
    size = size_mb << 20
    start = time.mktime((2026, 11, 16, 0, 0, 0, 0, 0, 0))
    with open(root / "var/log/messages", "wb") as fh:
        _syslog(fh, size * 45 // 100, rnd, True, start + 6 * 86400)
    for n in (1, 2):
        with gzip.open(root / f"var/log/messages-2026111{n}.gz", "wb", compresslevel=1) as fh:
            _syslog(fh, size * 10 // 100, rnd, False, start + n * 86400)
    noise = root / "sos_commands/process/lsof_-b_M_-n_-l_-c"
    line = b"nginx     4242  4251 nginx  www-data  17u  IPv4 0x0 0t0 TCP 10.0.0.7:443->10.9.1.2:51234 (ESTABLISHED)\n"
    with open(noise, "wb") as fh:
        fh.write(line * (size * 35 // 100 // len(line)))
    archive = folder / f"{root.name}.tar.gz"
    subprocess.run(["tar", "-C", str(extracted), "-I", "gzip -1", "-cf", str(archive), root.name], check=True)
    return archive, root


def _measure(argv: list[str]) -> tuple[float, float]:
    """(seconds, peak RSS MB) of one command."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(argv)} failed")
    return seconds, usage.ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=int, default=200)
    ap.add_argument("--dir", type=Path, default=None)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--build-into", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.build_into:
        build(args.build_into, args.size_mb)
        return
    folder = Path(tempfile.mkdtemp(prefix="bench-bundles-", dir=args.dir))
    try:
        # built by a child: a forked child's peak RSS starts at its parent's
        subprocess.run([sys.executable, __file__, "--size-mb", str(args.size_mb), "--build-into", str(folder)],
                       check=True)
        (archive,) = folder.glob("*.tar.gz")
        (root,) = (folder / "extracted").iterdir()
        unpacked = sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())
        print(f"archive {archive.stat().st_size / 1e6:.1f} MB, {unpacked / 1e6:.1f} MB unpacked")
        sarsleuth = [sys.executable, "-m", "sarsleuth.cli", "analyze", "--format", "json"]
        runs: dict = {"tar": [], "dir": [], "arc": []}
        for _ in range(args.repeat):
            # interleaved, best of each: other work on the machine slows one run, not one command
            runs["tar"].append(_measure(["tar", "-xOzf", str(archive)]))
            runs["dir"].append(_measure(sarsleuth + [str(root)]))
            runs["arc"].append(_measure(sarsleuth + [str(archive)]))
        (tar_s, tar_mb), (dir_s, dir_mb), (arc_s, arc_mb) = (min(runs[k]) for k in ("tar", "dir", "arc"))
        print(f"tar -xOzf > /dev/null          {tar_s:7.1f} s  {tar_mb:7.1f} MB")
        print(f"sarsleuth analyze FOLDER       {dir_s:7.1f} s  {dir_mb:7.1f} MB")
        print(f"sarsleuth analyze ARCHIVE      {arc_s:7.1f} s  {arc_mb:7.1f} MB")
        print(f"ratio archive / (tar + folder)  {arc_s / (tar_s + dir_s):.2f}  (target <= 1.5)")
        print(f"peak archive / folder           {arc_mb / dir_mb:.2f}")
    finally:
        if args.keep:
            print(f"kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
