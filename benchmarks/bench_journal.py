"""The binary journal read natively against journalctl reading it.

Writes an export stream of realistic entries (a web host's units, the
kernel's lines, an OOM kill and segfaults planted), turns it into a binary
journal with the real ``systemd-journal-remote``, then times, alternated in
one run, ``journalctl --file FILE -o export > /dev/null`` and ``sarsleuth
analyze FILE --format json --quiet > /dev/null`` (default install, no
extras), with peak RSS from GNU time.

    python benchmarks/bench_journal.py --dir SCRATCH --mb 1024 --runs 3
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import time

REMOTE = "/lib/systemd/systemd-journal-remote"
T0 = 1_764_000_000_000_000          # 2025-11-24 16:00:00 UTC, in µs
BOOT = "5f2a0c9e1d3b4a6f8e7d6c5b4a392817"
#: (unit, identifier, message) of the routine lines; nginx's first message is an event, written one time in 100
UNITS = [("nginx.service", "nginx", "2025/11/24 16:{m:02d}:{s:02d} [error] 1235#1235: *{n} upstream timed out "
          "(110: Connection timed out) while reading response header from upstream, client: 198.51.100.{c}, "
          "server: shop.example, request: \"GET /api/cart/{n} HTTP/1.1\", upstream: \"http://127.0.0.1:9000/\""),
         ("nginx.service", "nginx", "198.51.100.{c} - - [24/Nov/2025:16:{m:02d}:{s:02d} +0000] \"GET /api/cart/{n} "
          "HTTP/1.1\" 200 {n} \"-\" \"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0\""),
         ("php8.2-fpm.service", "php-fpm8.2", "[pool www] child {n} exited with code 0 after {c}.125000 seconds "
          "from start"),
         ("cron.service", "CRON", "pam_unix(cron:session): session opened for user root(uid=0) by (uid=0)"),
         ("ssh.service", "sshd", "Accepted publickey for deploy from 203.0.113.{c} port {n} ssh2: ED25519 "
          "SHA256:q0sv1o8mQq3d8m2nVQv7zB2yq5c2v8WkqkO0Xc3xH2k"),
         ("systemd-logind.service", "systemd-logind", "New session {n} of user deploy."),
         ("postgresql@15-main.service", "postgres", "LOG:  checkpoint complete: wrote {c} buffers (0.{c}%); 0 WAL "
          "file(s) added, 0 removed, 1 recycled; write={c}.101 s, sync=0.004 s, total={c}.120 s")]
KERNEL = ["[UFW BLOCK] IN=eth0 OUT= MAC=52:54:00:12:34:56:52:54:00:65:43:21:08:00 SRC=198.51.100.{c} "
          "DST=203.0.113.10 LEN=60 TOS=0x00 PREC=0x00 TTL=52 ID={n} DF PROTO=TCP SPT={n} DPT=22 WINDOW=64240 RES=0x00 "
          "SYN URGP=0",
          "nginx[{n}]: segfault at 18 ip 000055d0c4a1b2c3 sp 00007ffc5e1d2a40 error 4 in nginx[55d0c4a00000+e8000] "
          "likely on CPU 1 (core 1, socket 0)"]


def _field(name: str, value: str) -> bytes:
    return f"{name}={value}\n".encode()


def write_export(path: str, target_bytes: int, seed: int = 7) -> int:
    """An export stream that makes a binary journal of about ``target_bytes``."""
    rnd = random.Random(seed)
    n = written = 0
    with open(path, "wb") as out:
        while written < target_bytes:
            n += 1
            t = T0 + n * 20_000
            mono = 5_000_000 + n * 20_000
            m, s = divmod((n * 20_000 // 1_000_000) % 3600, 60)
            common = (_field("__REALTIME_TIMESTAMP", str(t)) + _field("__MONOTONIC_TIMESTAMP", str(mono))
                      + _field("_BOOT_ID", BOOT) + _field("_MACHINE_ID", "0c1e2d3f4a5b6c7d8e9fa0b1c2d3e4f5")
                      + _field("_HOSTNAME", "web1"))
            if n % 10 == 0:
                msg = KERNEL[1 if n % 100_000 == 0 else 0].format(n=n % 65536, c=rnd.randrange(1, 254))
                rec = common + (_field("_TRANSPORT", "kernel") + _field("PRIORITY", "4")
                                + _field("SYSLOG_IDENTIFIER", "kernel")
                                + _field("_SOURCE_MONOTONIC_TIMESTAMP", str(mono - 700)) + _field("MESSAGE", msg))
            else:
                unit, ident, text = UNITS[0 if n % 100 == 1 else rnd.randrange(1, len(UNITS))]
                pid = 1000 + rnd.randrange(4000)
                msg = text.format(m=m, s=s, n=n, c=rnd.randrange(1, 254))
                rec = common + (_field("_TRANSPORT", "syslog") + _field("PRIORITY", "6")
                                + _field("SYSLOG_FACILITY", "3") + _field("SYSLOG_IDENTIFIER", ident)
                                + _field("SYSLOG_PID", str(pid)) + _field("_PID", str(pid)) + _field("_UID", "0")
                                + _field("_GID", "0") + _field("_COMM", ident[:15])
                                + _field("_EXE", f"/usr/sbin/{ident}") + _field("_CMDLINE", f"/usr/sbin/{ident} -D")
                                + _field("_SYSTEMD_CGROUP", f"/system.slice/{unit}") + _field("_SYSTEMD_UNIT", unit)
                                + _field("_SYSTEMD_SLICE", "system.slice")
                                + _field("_SOURCE_REALTIME_TIMESTAMP", str(t - 350)) + _field("MESSAGE", msg))
            out.write(rec + b"\n")
            # a binary journal stores a field shared by entries once: about 60 % of the stream's bytes
            written += int(len(rec) * 0.6)
    return n


def _timed(argv: list, stdout) -> tuple[float, float, int]:
    """(wall s, cpu s, peak RSS KiB) of one run under GNU time."""
    t = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M", *argv], stdout=stdout, stderr=subprocess.PIPE,
                          check=True)
    wall = time.perf_counter() - t
    last = proc.stderr.decode().strip().splitlines()[-1].split()
    return wall, float(last[1]) + float(last[2]), int(last[3])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--mb", type=int, default=1024)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--sarsleuth", default=shutil.which("sarsleuth") or "sarsleuth")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    export = os.path.join(args.dir, "bench.export")
    journal = os.path.join(args.dir, "bench.journal")
    t = time.perf_counter()
    entries = write_export(export, args.mb << 20)
    for old in os.listdir(args.dir):
        if old.endswith(".journal") or old.endswith(".journal~"):
            os.unlink(os.path.join(args.dir, old))
    subprocess.run([REMOTE, "-o", journal, export], check=True, stderr=subprocess.DEVNULL)
    os.unlink(export)
    files = sorted(os.path.join(args.dir, f) for f in os.listdir(args.dir) if f.endswith(".journal"))
    size = sum(os.path.getsize(f) for f in files)
    print(f"{entries:,} entries in {len(files)} file(s), {size / 2**20:,.0f} MiB, made in {time.perf_counter() - t:.0f} s")
    journalctl = [[shutil.which("journalctl") or "journalctl", *sum((["--file", f] for f in files), []), "-o", "export"]]
    ours = [args.sarsleuth, "analyze", *files, "--format", "json", "--quiet"]
    results = {"journalctl": [], "sarsleuth": []}
    with open(os.devnull, "wb") as null:
        for _ in range(args.runs):
            results["journalctl"].append(_timed(journalctl[0], null))
            results["sarsleuth"].append(_timed(ours, null))
    for name, runs in results.items():
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        rss = max(r[2] for r in runs) / 1024
        print(f"{name:10s} wall {wall:7.2f} s  cpu {cpu:7.2f} s  peak {rss:7.0f} MiB  "
              f"{size / 2**20 / wall:6.1f} MiB/s  {entries / wall:9,.0f} entries/s")
    ratio = statistics.median(r[0] for r in results["sarsleuth"]) / statistics.median(r[0] for r in results["journalctl"])
    print(f"ratio sarsleuth / journalctl (wall): {ratio:.2f}")
    if not args.keep:
        for f in files:
            os.unlink(f)


if __name__ == "__main__":
    sys.exit(main())
