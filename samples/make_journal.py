#!/usr/bin/env python3
"""Write ``samples/journal/``: a web host's journal over two boots, as
``journalctl -o export`` writes it (``web1.export``), and the binary journal
the real ``systemd-journal-remote`` makes of that stream (``web1.journal``,
without the zeros journald allocates ahead of its last object).

The entries are written the way their programs write them: the kernel's
boot line, a segfault with its ``Code:`` line (Linux 6.1), an OOM kill in
its four lines, systemd's unit lines (with ``UNIT=``), nginx's worker exit
through syslog, a service's stdout with a name that is not UTF-8 (the
export format then writes the field as binary: its size, then its bytes)
and a message in three lines (binary too).  Run from the repository root:
``python samples/make_journal.py``; the tests build the same stream with
:func:`export_stream`.
"""
from __future__ import annotations

import shutil
import struct
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REMOTE = "/lib/systemd/systemd-journal-remote"
BOOT1 = "5f2a0c9e1d3b4a6f8e7d6c5b4a392817"
BOOT2 = "a1b2c3d4e5f60718293a4b5c6d7e8f90"
MACHINE = "0c1e2d3f4a5b6c7d8e9fa0b1c2d3e4f5"
#: Routine entries of the binary sample: enough for its entries to outweigh
#: the hash table the writer sizes for a file of its maximum size (3.6 MiB)
SAMPLE_BUSY = 1_300
T0 = 1_764_000_000_000_000     # 2025-11-24 16:00:00 UTC, µs since the epoch
S = 1_000_000
LINUX = ("Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org) (gcc-12 (Debian 12.2.0-14) 12.2.0, "
         "GNU ld (GNU Binutils for Debian) 2.40) #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)")
OOM = ["php-fpm8.2 invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0",
       "CPU: 1 PID: 2301 Comm: php-fpm8.2 Not tainted 6.1.0-18-amd64 #1  Debian 6.1.76-1",
       "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,"
       "task_memcg=/system.slice/php8.2-fpm.service,task=php-fpm8.2,pid=2301,uid=33",
       "Out of memory: Killed process 2301 (php-fpm8.2) total-vm:2098432kB, anon-rss:1843200kB, file-rss:0kB, "
       "shmem-rss:0kB, UID:33 pgtables:3700kB oom_score_adj:0"]


def field(name: str, value) -> bytes:
    """One field as the export format writes it: ``NAME=value``, or, for a
    value with control characters or bytes that are not UTF-8, the name,
    the size (little-endian, 64 bits), the bytes and a newline."""
    value = value.encode() if isinstance(value, str) else value
    try:
        value.decode("utf-8")
        text = not any(c < 32 and c != 9 for c in value)
    except UnicodeDecodeError:
        text = False
    if text:
        return name.encode() + b"=" + value + b"\n"
    return name.encode() + b"\n" + struct.pack("<Q", len(value)) + value + b"\n"


def entry(t: int, mono: int, boot: str, host: str, message, transport: str = "kernel", ident: str | None = None,
          pid: int | None = None, prio: int = 6, unit: str | None = None, comm=None, extra=()) -> bytes:
    """One entry (``t``: µs after :data:`T0`), its fields in journald's order."""
    fields = [("__REALTIME_TIMESTAMP", str(T0 + t)), ("__MONOTONIC_TIMESTAMP", str(mono)), ("_BOOT_ID", boot),
              ("_MACHINE_ID", MACHINE), ("_HOSTNAME", host), ("PRIORITY", str(prio)), ("_TRANSPORT", transport)]
    if transport == "kernel":
        fields += [("SYSLOG_FACILITY", "0"), ("SYSLOG_IDENTIFIER", "kernel"),
                   ("_SOURCE_MONOTONIC_TIMESTAMP", str(mono - 1500))]
    else:
        fields += [("SYSLOG_IDENTIFIER", ident), ("_PID", str(pid)), ("_COMM", comm or ident)]
        if unit:
            fields.append(("_SYSTEMD_UNIT", unit))
    fields += list(extra)
    fields.append(("MESSAGE", message))
    return b"".join(field(k, v) for k, v in fields) + b"\n"


def export_stream(host: str = "web1", long_message: str | None = None, busy: int = 0) -> bytes:
    """The journal of ``host`` over two boots, as ``journalctl -o export``
    writes it (``long_message``: one more kernel line, long enough for the
    writer to compress it; ``busy``: entries of routine traffic after the
    kill, none an event)."""
    out = [
        entry(0, 1_200_000, BOOT1, host, LINUX, prio=5),
        entry(5 * S, 6_200_000, BOOT1, host, "Started nginx.service - A high performance web server and a reverse "
              "proxy server.", "journal", "systemd", 1, unit="init.scope", extra=[("UNIT", "nginx.service")]),
        entry(600 * S, 601_200_000, BOOT1, host, "nginx[1240]: segfault at 18 ip 000055d0c4a1b2c3 sp 00007ffc5e1d2a40 "
              "error 4 in nginx[55d0c4a00000+e8000] likely on CPU 1 (core 1, socket 0)"),
        entry(600 * S + 200, 601_200_200, BOOT1, host, "Code: 48 8b 45 f8 48 8b 00 5d c3 0f 1f 44 00 00 55 48 89 e5 "
              "<48> 8b 07 5d c3 66 2e 0f 1f 84 00 00 00 00 00"),
        entry(601 * S, 602_200_000, BOOT1, host, "2025/11/24 16:10:01 [alert] 1235#1235: worker process 1240 exited "
              "on signal 11 (core dumped)", "syslog", "nginx", 1235, prio=1, unit="nginx.service"),
        entry(700 * S, 701_200_000, BOOT1, host, b"upload of caf\xe9.jpg failed: Too many open files", "stdout",
              "resizer", 3300, prio=3, unit="resizer.service", comm=b"resiz\xe9r"),
        entry(701 * S, 702_200_000, BOOT1, host, 'Traceback (most recent call last):\n  File "/srv/app/resize.py", '
              "line 12, in <module>\nMemoryError", "stdout", "resizer", 3300, prio=3, unit="resizer.service"),
    ]
    out += [entry(1800 * S + k * 100, 1801_200_000 + k * 100, BOOT1, host, m, prio=4 if k == 1 else 3)
            for k, m in enumerate(OOM)]
    out.append(entry(1801 * S, 1802_200_000, BOOT1, host, "php8.2-fpm.service: A process of this unit has been "
                     "killed by the OOM killer.", "journal", "systemd", 1, prio=4, unit="init.scope",
                     extra=[("UNIT", "php8.2-fpm.service")]))
    if long_message:
        out.append(entry(1900 * S, 1901_200_000, BOOT1, host, long_message, prio=4))
    out += busy_hour(host, busy)
    out += [entry(3600 * S, 1_100_000, BOOT2, host, LINUX, prio=5),
            entry(3605 * S, 6_100_000, BOOT2, host, "Started nginx.service - A high performance web server and a "
                  "reverse proxy server.", "journal", "systemd", 1, unit="init.scope", extra=[("UNIT", "nginx.service")])]
    return b"".join(out)


def busy_hour(host: str, n: int) -> list[bytes]:
    """``n`` routine entries (sshd, cron, nginx access through syslog) from
    16:35 on, two a second, each with the trace fields a program adds
    (``CODE_FILE``, ``CODE_FUNC``, a request id, the query it served: 1.6 KB
    that nothing reads)."""
    out = []
    for k in range(n):
        t = 2100 * S + k * 500_000
        mono = t + 1_200_000
        trace = [("CODE_FILE", f"/srv/app/handlers/cart_{k % 97}.py"), ("CODE_FUNC", f"handle_{k}"),
                 ("REQUEST_ID", f"{k:08x}-" + "0123456789abcdef" * 24),
                 ("QUERY", f"SELECT /* {k} */ " + ", ".join(f"c{j}" for j in range(60)) + " FROM cart"),
                 ("SPAN", f"{k}:" + "span " * 90)]
        if k % 3 == 0:
            out.append(entry(t, mono, BOOT1, host, f"Accepted publickey for deploy from 203.0.113.{k % 250 + 1} port "
                             f"{40000 + k % 20000} ssh2: ED25519 SHA256:q0sv1o8mQq3d8m2nVQv7zB2yq5c2v8WkqkO0Xc3xH2k",
                             "syslog", "sshd", 4000 + k, unit="ssh.service", extra=trace))
        elif k % 3 == 1:
            out.append(entry(t, mono, BOOT1, host, "(root) CMD (command -v debian-sa1 > /dev/null && debian-sa1 1 1)",
                             "syslog", "CRON", 5000 + k, unit="cron.service", extra=trace))
        else:
            out.append(entry(t, mono, BOOT1, host, f'198.51.100.{k % 250 + 1} - - [24/Nov/2025:16:{35 + k // 7200:02d}:'
                             f'{(k // 120) % 60:02d} +0000] "GET /api/cart/{k} HTTP/1.1" 200 {512 + k % 900} "-" '
                             '"curl/7.88.1"', "syslog", "nginx", 1235, unit="nginx.service", extra=trace))
    return out


def make_journal(export: Path, journal: Path, env=None, args=()) -> Path:
    """The binary journal ``systemd-journal-remote`` writes of ``export``
    (``env``: its environment, ``SYSTEMD_JOURNAL_COMPACT=0`` for 64-bit
    offsets, ``SYSTEMD_JOURNAL_KEYED_HASH=0`` for Jenkins hashes; ``args``:
    more options, ``--compress=no``)."""
    subprocess.run([REMOTE, "-o", str(journal), *args, str(export)], check=True, capture_output=True, env=env)
    return journal


def used_part(journal: Path) -> bytes:
    """A journal file up to the end of its last object (the header's
    ``tail_object_offset``): the zeros allocated ahead left out."""
    data = journal.read_bytes()
    tail = struct.unpack_from("<Q", data, 136)[0]
    size = struct.unpack_from("<Q", data, tail + 8)[0]
    return data[:(tail + size + 7) & ~7]


def main() -> int:
    if not Path(REMOTE).exists():
        print(f"{REMOTE} is missing (Debian package systemd-journal-remote)", file=sys.stderr)
        return 1
    folder = HERE / "journal"
    folder.mkdir(exist_ok=True)
    export = folder / "web1.export"
    export.write_bytes(export_stream())
    scratch = folder / "scratch.export"
    scratch.write_bytes(export_stream(busy=SAMPLE_BUSY))
    binary = folder / "scratch.journal"
    make_journal(scratch, binary)
    scratch.unlink()
    scratch = binary
    (folder / "web1.journal").write_bytes(used_part(scratch))
    scratch.unlink()
    shutil.rmtree(folder / "__pycache__", ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
