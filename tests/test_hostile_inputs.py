"""Hostile, broken and huge input: never crash, never lie, never lose data.

Every parser, given any bytes, returns a Source or raises InputError (one
line, naming the file), quickly and in bounded memory.  Every command, given
such input, exits 0 with warnings when something is usable and 2 with one
line naming the file otherwise, never with a traceback.  Outputs escape what
came from the inputs, and the inputs are never written to.

The seeds and the checking function here are shared with the fuzz scripts in
``fuzz/`` (which run the same properties with many more examples).
"""
from __future__ import annotations

import bz2
import gzip
import hashlib
import json
import lzma
import os
import re
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from sarsleuth.errors import InputError
from sarsleuth.model import EVENT_COLUMNS, METRIC_COLUMNS, Source
from sarsleuth.inputs.parsers import ParseOptions, kinds, registry, sniff_bytes

from . import conftest
from .conftest import SAMPLES, corpus_dir

# --------------------------------------------------------------------------------------------
# Seeds: real samples, small hand-written documents for kinds the samples lack, and (when it
# is there) every corpus file of the kind.  Every registered kind needs one: the properties
# run on each.
# --------------------------------------------------------------------------------------------

#: Every kind a parser reads.
KINDS = kinds()

SAMPLE_SEEDS = {
    "sa": ["nginx-proxy-oom/sa06"],
    "sar-text": ["nginx-proxy-oom/sar06.txt", "image-service-ab/sar-n-DEV.txt", "tengine-720k/sar-n-SOCK-q.txt"],
    "syslog": ["nginx-proxy-oom/messages", "tengine-720k/messages"],
    "dmesg": ["nginx-worker-crash/dmesg"],
    "nginx-error": ["nginx-proxy-oom/error.log", "nginx-worker-crash/error.log"],
    "ab": ["image-service-ab/ab-2m-image.txt", "image-service-ab/ab-50k-image.txt"],
    "ps": ["nginx-worker-crash/ps-before.txt", "nginx-worker-crash/ps-after.txt"],
    "journal-file": ["journal/web1.journal"],
    "journal-export": ["journal/web1.export"],
}

INLINE_SEEDS = {
    # PostgreSQL 15 with Debian's log_line_prefix '%m [%p] %q%u@%d '
    "postgresql-log": """\
2024-01-05 10:00:00.123 UTC [1234] LOG:  database system is ready to accept connections
2024-01-05 10:12:31.456 UTC [4410] app@shop FATAL:  sorry, too many clients already
2024-01-05 10:14:02.001 UTC [1234] LOG:  server process (PID 4420) was terminated by signal 9: Killed
2024-01-05 10:14:02.001 UTC [1234] DETAIL:  Failed process was running: SELECT 1
""",
    # MySQL 8.0's error log stopping on a full disk
    "mysql-log": """\
2021-11-08T15:47:07.889528Z 1 [ERROR] [MY-012640] [InnoDB] Error number 28 means 'No space left on device'
2021-11-08T15:47:07.947552Z 0 [ERROR] [MY-010020] [Server] Data Dictionary initialization failed.
2021-11-08T15:47:07.948874Z 0 [ERROR] [MY-010119] [Server] Aborting
""",
    # php-fpm 8.2's error_log
    "php-fpm-log": """\
[05-Jan-2024 10:00:00] NOTICE: fpm is running, pid 811
[05-Jan-2024 10:12:31] WARNING: [pool www] server reached pm.max_children setting (5), consider raising it
[05-Jan-2024 10:14:02] WARNING: [pool www] child 4410 exited on signal 9 (SIGKILL) after 312.412345 seconds from start
""",
    # dpkg 1.21 (Debian 12) as it logs an upgrade run
    "package-log": """\
2025-06-24 14:36:25 startup archives unpack
2025-06-24 14:36:25 upgrade libsystemd0:amd64 252.36-1~deb12u1 252.38-1~deb12u1
2025-06-24 14:36:25 status triggers-pending libc-bin:amd64 2.36-9+deb12u10
2025-06-24 14:36:25 status half-configured libsystemd0:amd64 252.36-1~deb12u1
2025-06-24 14:36:25 status unpacked libsystemd0:amd64 252.36-1~deb12u1
2025-06-24 14:36:29 install libgdbm6:amd64 <none> 1.23-3
2025-06-24 14:36:29 status half-installed libgdbm6:amd64 1.23-3
2025-06-24 14:36:31 configure libgdbm6:amd64 1.23-3 <none>
2025-06-24 14:36:31 status installed libgdbm6:amd64 1.23-3
""",
    "sadf-csv": """\
# hostname;interval;timestamp;CPU;%user;%nice;%system;%iowait;%steal;%idle
web-7;60;2014-05-06 07:01:01 UTC;-1;5.37;0.00;8.35;0.01;0.00;86.27
web-7;62;2014-05-06 07:02:03 UTC;-1;5.24;0.00;7.93;11.12;0.00;75.71
# hostname;interval;timestamp;kbswpfree;kbswpused;%swpused;kbswpcad;%swpcad
web-7;60;2014-05-06 07:01:01 UTC;8388600;0;0.00;0;0.00
web-7;62;2014-05-06 07:02:03 UTC;5065192;3323408;39.62;107908;3.25
# hostname;interval;timestamp;runq-sz;plist-sz;ldavg-1;ldavg-5;ldavg-15;blocked
web-7;60;2014-05-06 07:01:01 UTC;3;611;6.12;4.28;2.45;0
web-7;62;2014-05-06 07:02:03 UTC;5;611;33.19;23.23;13.27;4
""",
    "sadf-json": """\
{"sysstat": {
\t"hosts": [
\t\t{
\t\t\t"nodename": "web-7",
\t\t\t"sysname": "Linux",
\t\t\t"release": "2.6.32-358.el6.x86_64",
\t\t\t"machine": "x86_64",
\t\t\t"number-of-cpus": 24,
\t\t\t"file-date": "2014-05-06",
\t\t\t"file-utc-time": "07:00:01",
\t\t\t"timezone": "UTC",
\t\t\t"statistics": [
\t\t\t\t{
\t\t\t\t\t"timestamp": {"date": "2014-05-06", "time": "07:01:01", "utc": 1, "interval": 60},
\t\t\t\t\t"cpu-load": [
\t\t\t\t\t\t{"cpu": "all", "user": 5.37, "nice": 0.00, "system": 8.35, "iowait": 0.01, "steal": 0.00, "idle": 86.27}
\t\t\t\t\t],
\t\t\t\t\t"memory": {"swpfree": 8388600, "swpused": 0, "swpused-percent": 0.00, "swpcad": 0, "swpcad-percent": 0.00}
\t\t\t\t},
\t\t\t\t{
\t\t\t\t\t"timestamp": {"date": "2014-05-06", "time": "07:02:03", "utc": 1, "interval": 62},
\t\t\t\t\t"cpu-load": [
\t\t\t\t\t\t{"cpu": "all", "user": 5.24, "nice": 0.00, "system": 7.93, "iowait": 11.12, "steal": 0.00, "idle": 75.71}
\t\t\t\t\t],
\t\t\t\t\t"memory": {"swpfree": 5065192, "swpused": 3323408, "swpused-percent": 39.62, "swpcad": 107908, "swpcad-percent": 3.25}
\t\t\t\t}
\t\t\t],
\t\t\t"restarts": [
\t\t\t]
\t\t}
\t]
}}
""",
    "sadf-xml": """\
<?xml version="1.0" encoding="UTF-8"?>
<sysstat>
\t<sysdata-version>3.11</sysdata-version>
\t<host nodename="web-7">
\t\t<sysname>Linux</sysname>
\t\t<release>2.6.32-358.el6.x86_64</release>
\t\t<machine>x86_64</machine>
\t\t<number-of-cpus>24</number-of-cpus>
\t\t<file-date>2014-05-06</file-date>
\t\t<statistics>
\t\t\t<timestamp date="2014-05-06" time="07:01:01" utc="1" interval="60">
\t\t\t\t<cpu-load>
\t\t\t\t\t<cpu number="all" user="5.37" nice="0.00" system="8.35" iowait="0.01" steal="0.00" idle="86.27"/>
\t\t\t\t</cpu-load>
\t\t\t\t<memory unit="kB">
\t\t\t\t\t<swpfree>8388600</swpfree>
\t\t\t\t\t<swpused>0</swpused>
\t\t\t\t\t<swpused-percent>0.00</swpused-percent>
\t\t\t\t</memory>
\t\t\t</timestamp>
\t\t\t<timestamp date="2014-05-06" time="07:02:03" utc="1" interval="62">
\t\t\t\t<cpu-load>
\t\t\t\t\t<cpu number="all" user="5.24" nice="0.00" system="7.93" iowait="11.12" steal="0.00" idle="75.71"/>
\t\t\t\t</cpu-load>
\t\t\t</timestamp>
\t\t</statistics>
\t\t<restarts>
\t\t\t<boot date="2014-05-06" time="06:59:00" utc="1" cpu_count="24"/>
\t\t</restarts>
\t</host>
</sysstat>
""",
    "journal": """\
-- Logs begin at Fri 2022-02-04 09:34:04 UTC, end at Thu 2022-02-10 16:19:27 UTC. --
Feb 10 16:19:13 compute4 kernel: nginx invoked oom-killer: gfp_mask=0x100cca, order=0
Feb 10 16:19:13 compute4 kernel: CPU: 3 PID: 4242 Comm: nginx Not tainted 5.4.0-97-generic
Feb 10 16:19:13 compute4 kernel: Out of memory: Killed process 4242 (nginx) total-vm:4194304kB, anon-rss:4000000kB, file-rss:0kB, shmem-rss:0kB
-- Boot 901c1e96f7bd44a28a0d69d9933a9a75 --
Feb 10 16:20:00 compute4 systemd[1]: nginx.service: Main process exited, code=killed, status=9/KILL
Feb 10 16:20:01 compute4 kernel: TCP: time wait bucket table overflow
""",
    "wrk": """\
Running 30s test @ http://127.0.0.1:8080/index.html
  12 threads and 400 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   635.91us    0.89ms  12.92ms   93.69%
    Req/Sec    56.20k     8.07k   62.00k    86.54%
  Latency Distribution
     50%  250.00us
     75%  491.00us
     90%    1.00ms
     99%    5.00ms
  22464657 requests in 30.00s, 17.76GB read
  Socket errors: connect 0, read 12, write 0, timeout 7
  Non-2xx or 3xx responses: 12
Requests/sec: 748868.53
Transfer/sec:    606.33MB
""",
    "wrk2": """\
Running 30s test @ http://127.0.0.1:80/index.html
  2 threads and 100 connections
  Thread calibration: mean lat.: 1.234ms, rate sampling interval: 10ms
  Thread calibration: mean lat.: 1.301ms, rate sampling interval: 10ms
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.25ms  512.30us   9.87ms   70.12%
    Req/Sec     1.05k   120.00     1.50k    75.00%
  Latency Distribution (HdrHistogram - Recorded Latency)
 50.000%    1.20ms
 75.000%    1.55ms
 90.000%    1.90ms
 99.000%    3.10ms
 99.900%    6.00ms
 99.990%    9.00ms
 99.999%    9.87ms
100.000%    9.87ms

  59998 requests in 30.00s, 21.40MB read
Requests/sec:   1999.93
Transfer/sec:    730.40KB
""",
    "httperf": """\
httperf --client=0/1 --server=localhost --port=80 --uri=/ --rate=100 --send-buffer=4096 --recv-buffer=16384 --num-conns=1000 --num-calls=1
Maximum connect burst length: 1

Total: connections 1000 requests 1000 replies 1000 test-duration 9.991 s

Connection rate: 100.1 conn/s (10.0 ms/conn, <=3 concurrent connections)
Connection time [ms]: min 0.3 avg 0.6 max 12.1 median 0.5 stddev 0.7
Connection time [ms]: connect 0.1
Connection length [replies/conn]: 1.000

Request rate: 100.1 req/s (10.0 ms/req)
Request size [B]: 62.0

Reply rate [replies/s]: min 100.0 avg 100.0 max 100.0 stddev 0.0 (1 samples)
Reply time [ms]: response 0.4 transfer 0.0
Reply size [B]: header 250.0 content 612.0 footer 0.0 (total 862.0)
Reply status: 1xx=0 2xx=1000 3xx=0 4xx=0 5xx=0

CPU time [s]: user 2.10 system 7.80 (user 21.0% system 78.1% total 99.1%)
Net I/O: 90.3 KB/s (0.7*10^6 bps)

Errors: total 0 client-timo 0 socket-timo 0 connrefused 0 connreset 0
Errors: fd-unavail 0 addrunavail 0 ftab-full 0 other 0
""",
    "tsar": """\
Time              ---cpu-- ---mem-- ---tcp-- -----traffic---- --sda---  ---load-
Time                util     util   retran    bytin  bytout     util     load1
27/06/13-15:40    2.56    33.21     0.00     1.2K    1.5K     0.84      0.23
27/06/13-15:45    2.77    33.25     0.00     1.0K    1.3K     0.86      0.20
27/06/13-15:50    2.61    33.24     0.00     1.1K    1.4K     0.85      0.22

MAX               2.77    33.25     0.00     1.2K    1.5K     0.86      0.23
MEAN              2.65    33.23     0.00     1.1K    1.4K     0.85      0.22
MIN               2.56    33.21     0.00     1.0K    1.3K     0.84      0.20
""",
}

#: Corpus files above this size are used through their first bytes only.
SEED_MAX_BYTES = 256 * 1024


def _corpus_seeds() -> dict[str, list[bytes]]:
    root = corpus_dir()
    out: dict[str, list[bytes]] = {}
    if root is None:
        return out
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.suffix in (".md", ".xz", ".gz", ".zst", ".bz2"):
            continue
        with open(path, "rb") as fh:
            data = fh.read(SEED_MAX_BYTES)
        kind, _ = sniff_bytes(data[:64 * 1024])
        if kind is not None:
            out.setdefault(kind, []).append(data)
    return out


_SEEDS: dict[str, list[bytes]] | None = None


def base_seeds(kind: str) -> list[bytes]:
    """The good documents of ``kind`` that ship with the project (samples and
    the inline ones above), smallest first."""
    found = [(SAMPLES / n).read_bytes() for n in SAMPLE_SEEDS.get(kind, ()) if (SAMPLES / n).is_file()]
    if kind in INLINE_SEEDS:
        found.append(INLINE_SEEDS[kind].encode())
    return sorted(found, key=len)


def base_seed(kind: str) -> bytes:
    return base_seeds(kind)[0]


def seeds(kind: str) -> list[bytes]:
    """Every seed document of ``kind``: the project's own, then (when it is
    there) every corpus file that sniffs as ``kind``, damaged ones included."""
    global _SEEDS
    if _SEEDS is None:
        found: dict[str, list[bytes]] = {k: base_seeds(k) for k in KINDS}
        for k, datas in _corpus_seeds().items():
            found.setdefault(k, []).extend(sorted(datas, key=len))
        _SEEDS = found
    return _SEEDS[kind]


def test_every_kind_has_a_seed_that_parses(tmp_path):
    """The seeds are what the properties below damage: each must be a good
    document of its kind to begin with."""
    for kind in KINDS:
        data = base_seed(kind)
        assert sniff_bytes(data[:65536])[0] == kind, kind
        path = tmp_path / f"seed-{kind}"
        path.write_bytes(data)
        src = registry()[kind].parse(path, ParseOptions())
        assert src.kind == kind and (src.records > 0 or len(src.events) or src.reports), kind


# --------------------------------------------------------------------------------------------
# The check every generated input goes through
# --------------------------------------------------------------------------------------------

#: Seconds one small generated input may take (generous: CI machines are slow).
MAX_SECONDS = 10.0
#: Bytes of Python allocations (tracemalloc peak) one parse may reach, per input
#: byte, on top of a fixed allowance for pandas frames and the grammars.
MEMORY_PER_BYTE = 200
MEMORY_FIXED = 96 << 20


class Outcome:
    __slots__ = ("kind", "result", "seconds", "peak", "detail")

    def __init__(self, kind, result, seconds, peak, detail):
        self.kind, self.result, self.seconds, self.peak, self.detail = kind, result, seconds, peak, detail


def check_parse(kind: str, path: Path, data: bytes | None = None, measure_memory: bool = True) -> Outcome:
    """Parse ``path`` as ``kind`` and assert the input contract: a Source with
    the contract's columns and one-line warnings, or an InputError of one line
    naming the file; within :data:`MAX_SECONDS` and bounded memory."""
    size = len(data) if data is not None else path.stat().st_size
    if measure_memory:
        tracemalloc.start()
    t0 = time.perf_counter()
    try:
        try:
            src = registry()[kind].parse(path, ParseOptions())
        except InputError as exc:
            result, detail = "error", exc
        else:
            result, detail = "source", src
        elapsed = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1] if measure_memory else 0
    finally:
        if measure_memory:
            tracemalloc.stop()
    assert elapsed < MAX_SECONDS, f"{kind}: {elapsed:.1f}s on {size} bytes"
    assert peak < MEMORY_FIXED + MEMORY_PER_BYTE * size, f"{kind}: peak {peak} bytes on {size} bytes"
    if result == "error":
        check_error(detail, path)
    else:
        check_source(detail, kind, path)
    return Outcome(kind, result, elapsed, peak, detail)


def check_error(exc: InputError, path: Path):
    message = str(exc)
    assert "\n" not in message and "\r" not in message, message
    assert exc.path == str(path) and message.startswith(str(path)), message
    assert exc.reason.strip(), message
    if exc.line is not None:
        assert exc.line >= 1, message
    if exc.offset is not None:
        assert exc.offset >= 0, message


def check_source(src, kind: str, path: Path):
    assert isinstance(src, Source) and src.kind == kind
    assert src.path == str(path)
    assert src.records >= 0
    for w in src.warnings:
        assert isinstance(w, str) and "\n" not in w and "\r" not in w, w
    if src.metrics is not None:
        m = src.metrics
        assert list(m.columns)[:len(METRIC_COLUMNS)] == METRIC_COLUMNS
        assert m["value"].dtype == np.float64
        # never lie: no invented infinities, and every value has its time
        assert not np.isinf(m["value"].to_numpy()).any(), m[np.isinf(m["value"])].head()
        assert not m["timestamp"].isna().any()
    if src.events is not None and len(src.events):
        e = src.events
        assert list(e.columns[:len(EVENT_COLUMNS)]) == EVENT_COLUMNS
        lines = e["line"].dropna()
        assert (lines >= 1).all()
    for r in src.reports:
        assert isinstance(r, dict)
    # a source that has nothing at all should have been an InputError
    averages = src.meta.get("averages")
    assert (src.records or (src.metrics is not None and len(src.metrics))
            or (src.events is not None and len(src.events)) or src.reports
            or (averages is not None and len(averages))), f"{kind}: empty Source"


# --------------------------------------------------------------------------------------------
# Generators of damage
# --------------------------------------------------------------------------------------------

GARBAGE_LINES = [
    b"", b" ", b"\x00" * 17, b"\xff\xfe\xfd", "é€漢字\u202e\u200b".encode(), b"\x1b[31mred\x1b[0m",
    b"-" * 300, b"Average:", b"Linux 2.6.32 (x) 13/45/2099 _x86_64_", b"12:00:00 AM CPU %usr",
    b"99:99:99 all nan inf -inf 1e309", b"{\"sysstat\": {", b"</sysstat>", b"<!DOCTYPE x [",
    b"May 32 25:61:61 host kernel: [ -1.0] x", b"2014/13/45 99:99:99 [crit] -1#-1: *x",
    b"Requests per second:    inf [#/sec] (mean)", b"  99999999999999999999999 requests in 1e999s, 1ZB read",
    b"Latency   -1.00ms  nanus  1e400s  200%", b"\t\t\t\t}", b"\r", b"\x0b\x0c\x1c\x1d\x1e\x85",
    b"root 1 " + b"9" * 40 + b" 0.0 ? Ss Dec24 0:00 /sbin/init",
]

HOSTILE_NUMBERS = [b"nan", b"NaN", b"inf", b"-inf", b"1e309", b"-0", b"99999999999999999999999999",
                   b"0x10", b"1,5", b"", b"-1", b"1e-400", b"\xff"]


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


@st.composite
def truncated(draw, kind):
    data = draw(st.sampled_from(seeds(kind)))
    cut = draw(st.integers(0, len(data)))
    return data[:cut]


@st.composite
def interleaved(draw, kind):
    """Garbage lines (fixed hostile ones and random bytes) put between the lines of a seed."""
    lines = _lines(draw(st.sampled_from(seeds(kind))))
    inserts = draw(st.lists(st.tuples(st.integers(0, len(lines)),
                                      st.one_of(st.sampled_from(GARBAGE_LINES),
                                                st.binary(max_size=200).map(lambda b: b.replace(b"\n", b"")))),
                            min_size=1, max_size=12))
    for pos, junk in sorted(inserts, reverse=True):
        lines.insert(pos, junk)
    return b"\n".join(lines)


@st.composite
def mutated(draw, kind):
    """Lines deleted, duplicated and swapped, numbers replaced by hostile ones, bytes flipped."""
    data = draw(st.sampled_from(seeds(kind)))
    lines = _lines(data)
    for _ in range(draw(st.integers(0, 6))):
        op = draw(st.sampled_from(["del", "dup", "swap", "num", "flip"]))
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        if op == "del":
            del lines[i]
        elif op == "dup":
            lines.insert(i, lines[i])
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "num":
            nums = list(re.finditer(rb"\d+(?:\.\d+)?", lines[i]))
            if nums:
                m = nums[draw(st.integers(0, len(nums) - 1))]
                lines[i] = lines[i][:m.start()] + draw(st.sampled_from(HOSTILE_NUMBERS)) + lines[i][m.end():]
        elif lines[i]:
            b = bytearray(lines[i])
            j = draw(st.integers(0, len(b) - 1))
            b[j] ^= 1 << draw(st.integers(0, 7))
            lines[i] = bytes(b)
    return b"\n".join(lines)


def _compressors():
    out = {"gzip": gzip.compress, "xz": lzma.compress, "bz2": bz2.compress}
    try:
        import zstandard
        out["zstd"] = lambda b: zstandard.ZstdCompressor().compress(b)
    except ImportError:  # pragma: no cover - zstandard is a test dependency
        pass
    return out


@st.composite
def damaged_compressed(draw, kind):
    """A seed compressed, then cut or flipped inside the compressed stream."""
    data = draw(st.sampled_from(seeds(kind)))[:64 * 1024]
    name = draw(st.sampled_from(sorted(_compressors())))
    packed = bytearray(_compressors()[name](data))
    if draw(st.booleans()):
        packed = packed[:draw(st.integers(1, len(packed)))]
    else:
        for _ in range(draw(st.integers(1, 3))):
            i = draw(st.integers(0, len(packed) - 1))
            packed[i] ^= 1 << draw(st.integers(0, 7))
    return bytes(packed)


STRATEGIES = {
    "random": lambda kind: st.binary(max_size=4096),
    "truncated": truncated,
    "interleaved": interleaved,
    "mutated": mutated,
    "compressed": damaged_compressed,
}

# --------------------------------------------------------------------------------------------
# The properties
# --------------------------------------------------------------------------------------------

_scratch = tempfile.TemporaryDirectory(prefix="sarsleuth-hostile-")


def _write(kind: str, data: bytes) -> Path:
    path = Path(_scratch.name) / f"input-{kind}"
    path.write_bytes(data)
    return path


#: Examples per kind in the test suite (every kind of damage drawn among
#: them); ``fuzz/run_hypothesis.py`` runs the same properties by thousands.
EXAMPLES_PER_KIND = 20
#: Memory is measured (tracemalloc, which slows parsing 4x) on one example in this many.
MEASURE_EVERY = 4

PROPERTY_SETTINGS = settings(max_examples=EXAMPLES_PER_KIND, deadline=None, database=None,
                             suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def any_damage(kind):
    return st.one_of(*(make(kind) for make in STRATEGIES.values()))


@pytest.mark.parametrize("kind", KINDS)
def test_any_damage_gives_a_source_or_one_line_error(kind):
    counter = iter(range(10**9))

    @PROPERTY_SETTINGS
    @given(data=any_damage(kind))
    def prop(data):
        check_parse(kind, _write(kind, data), data, measure_memory=next(counter) % MEASURE_EVERY == 0)
    prop()


def test_truncation_at_every_record_boundary_keeps_earlier_data(tmp_path):
    """Never lose data: a text log cut anywhere still yields every complete
    line before the cut (here: the events of the nginx sample)."""
    data = (SAMPLES / "nginx-worker-crash" / "error.log").read_bytes()
    full = registry()["nginx-error"].parse(_write("nginx-error", data), ParseOptions()).events
    ends = [m.end() for m in re.finditer(rb"\n", data)]
    for end in ends[::3]:
        path = tmp_path / "cut.log"
        path.write_bytes(data[:end + 5])          # cut 5 bytes into the next line
        try:
            part = registry()["nginx-error"].parse(path, ParseOptions()).events
        except InputError:
            part = full.iloc[:0]
        complete = full[full["line"] <= data[:end].count(b"\n")]
        assert set(complete["line"]) <= set(part["line"]), end


# --- sa headers: bit flips and absurd counts ---------------------------------------------------

SA_SEED = SAMPLES / "nginx-proxy-oom" / "sa06"
#: The part of an sa file that is headers (file magic, file header, activity list).
SA_HEADER_BYTES = 1024


@settings(max_examples=80, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(flips=st.lists(st.tuples(st.integers(0, SA_HEADER_BYTES - 1), st.integers(0, 7)), min_size=1, max_size=8),
       cut=st.one_of(st.none(), st.integers(0, 300_000)))
def test_sa_header_bit_flips(flips, cut):
    data = bytearray(SA_SEED.read_bytes())
    for pos, bit in flips:
        data[pos] ^= 1 << bit
    if cut is not None:
        data = data[:cut]
    check_parse("sa", _write("sa", bytes(data)), bytes(data))


def test_sa_percentages_of_damaged_values_are_finite():
    """Found by the fuzz run: an sa file whose power-in record was damaged
    printed ``%in`` as inf and -inf."""
    from sarsleuth.inputs.parsers.sa.activities import _pct
    out = _pct(np.array([1e300, -1e300, 5.0]), np.array([1e-300, 1e-300, 50.0]))
    assert not np.isinf(out).any(), out


# --------------------------------------------------------------------------------------------
# Hostile documents crafted by hand
# --------------------------------------------------------------------------------------------

def _deep_json(depth):
    return ('{"sysstat": {"hosts": [{"nodename": "x", "statistics": [{"timestamp": {"date": "2014-05-06", '
            '"time": "07:01:01", "utc": 1}, "cpu-load": ' + "[" * depth + "]" * depth + "}]}]}}").encode()


def _deep_xml(depth):
    return ('<?xml version="1.0"?>\n<sysstat><sysdata-version>3</sysdata-version><host nodename="x"><statistics>'
            '<timestamp date="2014-05-06" time="07:01:01" utc="1"><cpu-load><cpu number="all" user="1"/>'
            + "<a>" * depth + "</a>" * depth + "</cpu-load></timestamp></statistics></host></sysstat>").encode()


def _laughs():
    ents = '<!ENTITY l0 "lol">' + "".join(f'<!ENTITY l{i} "{("&l%d;" % (i - 1)) * 10}">' for i in range(1, 10))
    return (f'<?xml version="1.0"?>\n<!DOCTYPE sysstat [{ents}]>\n<sysstat><sysdata-version>3</sysdata-version>'
            '<host nodename="&l9;"></host></sysstat>').encode()


def _xxe():
    return ('<?xml version="1.0"?>\n<!DOCTYPE s [<!ENTITY x SYSTEM "file:///etc/hostname">]>\n<sysstat>'
            '<sysdata-version>3</sysdata-version><host nodename="x"><statistics><timestamp date="2014-05-06" '
            'time="07:01:01" utc="1"><cpu-load><cpu number="all" user="&x;"/></cpu-load></timestamp>'
            "</statistics></host></sysstat>").encode()


CRAFTED = {
    "deep-json": ("sadf-json", _deep_json(200_000)),
    "deep-xml": ("sadf-xml", _deep_xml(100_000)),
    "billion-laughs": ("sadf-xml", _laughs()),
    "xxe": ("sadf-xml", _xxe()),
    "json-not-object": ("sadf-json", b'["sysstat", {"hosts": 1}]'),
    "json-hosts-scalars": ("sadf-json", b'{"sysstat": {"hosts": [1, "x", null, {"statistics": 5}]}}'),
    "json-bad-stamps": ("sadf-json", b'{"sysstat": {"hosts": [{"nodename": "x", "statistics": [{"timestamp": '
                                     b'{"date": "2014-99-99", "time": "25:61:61"}, "cpu-load": [{"cpu": "all", '
                                     b'"user": 1e999}]}]}]}}'),
    "csv-only-headers": ("sadf-csv", b"# hostname;interval;timestamp;CPU;%user\n" * 50),
    "csv-short-rows": ("sadf-csv", b"# hostname;interval;timestamp;CPU;%user;%idle\nh;60;2014-05-06 07:01:01 UTC\n"
                                   b"h;60;2014-05-06 07:02:01 UTC;-1;1;2;3;4;5;6\n"),
    "sar-only-banner": ("sar-text", b"Linux 2.6.32-358.el6.x86_64 (web)  05/06/2014  _x86_64_  (24 CPU)\n\n"),
    "syslog-nul-lines": ("syslog", b"May  6 15:04:10 web1 kernel: Out of memory: Killed process 1 (x)\n"
                                   + b"\x00" * 5000 + b"\n"),
    "dmesg-negative-stamps": ("dmesg", b"[   -5.000000] Out of memory: Killed process 1 (x)\n"
                                      b"[99999999999999999999.000000] segfault at 0 ip 0 sp 0 error 4\n"),
    "ps-huge-numbers": ("ps", b"USER PID %CPU %MEM VSZ RSS TTY STAT START TIME COMMAND\n"
                              + b"root 99999999999999999999999 1e309 nan 1 1 ? Ss Dec24 0:00 /sbin/init\n" * 3),
}


@pytest.mark.parametrize("name", sorted(CRAFTED))
def test_crafted_hostile_documents(name, tmp_path):
    kind, data = CRAFTED[name]
    path = tmp_path / name
    path.write_bytes(data)
    out = check_parse(kind, path, data)
    if name == "xxe" and out.result == "source":
        host_file = Path("/etc/hostname")
        if host_file.is_file() and host_file.read_text().strip():
            secret = host_file.read_text().strip()
            assert secret not in repr(out.detail.metrics.to_dict()) + repr(out.detail.meta)
    # and through the command line: exit 0 or 2, one line, never a traceback
    proc = run_cli("parse", "--kind", kind, path)
    assert proc.returncode in (0, 2), proc.stderr
    assert "Traceback" not in proc.stderr
    if proc.returncode == 2:
        assert str(path) in one_line(proc)


# --------------------------------------------------------------------------------------------
# The command line, for each kind of input
# --------------------------------------------------------------------------------------------

def run_cli(*args, timeout=180, cwd=None, tty=False):
    """The command in-process (see conftest.run_cli)."""
    return conftest.run_cli(*args, cwd=cwd, tty=tty)


def one_line(proc) -> str:
    """The single line a failing command prints on stderr."""
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert lines[0].startswith("sarsleuth: ")
    return lines[0]


def _partly_readable(kind: str) -> bytes:
    """The smallest seed of ``kind`` with damage in its middle: a binary
    file or a document cut inside a record (what comes after it is lost),
    text with garbage lines in its middle."""
    data = base_seed(kind)
    if registry()[kind].shape in ("records", "document"):
        return data[:len(data) * 2 // 3]
    lines = data.split(b"\n")
    mid = max(1, len(lines) // 2)
    return b"\n".join(lines[:mid] + [b"\x00\xff garbage \x1b[2J" * 3, b"x" * 1500] + lines[mid:])


def _unusable(kind: str) -> bytes:
    """Something that sniffs as ``kind`` (or is forced to it) but holds
    nothing usable: the head of a binary file or document, before its first
    record is whole; text that is no line of it."""
    if registry()[kind].shape in ("records", "document"):
        return base_seed(kind)[:600]
    return b"\x00\x01\x02 nothing here\n" * 20 + b"\xff" * 100


@pytest.mark.parametrize("kind", KINDS)
def test_cli_parse_partly_readable_and_unusable(kind, tmp_path):
    good = tmp_path / f"partly-{kind}"
    good.write_bytes(_partly_readable(kind))
    proc = run_cli("parse", "--kind", kind, good)
    assert "Traceback" not in proc.stderr
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip(), "something was kept"
    bad = tmp_path / f"unusable-{kind}"
    bad.write_bytes(_unusable(kind))
    proc = run_cli("parse", "--kind", kind, bad)
    assert proc.returncode == 2, (proc.returncode, proc.stdout[:500], proc.stderr)
    line = one_line(proc)
    assert str(bad) in line


def test_cli_analyze_partly_readable_inputs_warn_and_exit_0(tmp_path):
    """Every kind damaged in the middle, analysed together: exit 0, a warning
    naming each file that lost something, JSON warnings, no traceback."""
    for kind in KINDS:
        (tmp_path / f"partly-{kind}").write_bytes(_partly_readable(kind))
    proc = run_cli("analyze", tmp_path, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    doc = json.loads(proc.stdout)
    assert len(doc["sources"]) >= len(KINDS) - 2, [s["path"] for s in doc["sources"]]
    for line in proc.stderr.splitlines():
        assert line.startswith("sarsleuth: "), line


@pytest.mark.parametrize("kind", KINDS)
def test_cli_analyze_unusable_input_is_one_line_exit_2(kind, tmp_path):
    bad = tmp_path / f"unusable-{kind}"
    bad.write_bytes(_unusable(kind))
    proc = run_cli("analyze", bad)
    assert proc.returncode == 2, proc.stderr
    line = one_line(proc)
    assert str(bad) in line and "no usable input" in line


def test_cli_sniff_hostile_names_and_contents(tmp_path):
    names = ["a\tb", "-rf", "new\nline", "é漢", " lead"]
    for n, name in enumerate(names):
        (tmp_path / name).write_bytes(os.urandom(64) if n % 2 else b"")
    proc = run_cli("sniff", "--", *sorted(tmp_path.iterdir()))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    assert proc.stdout.count("\tunknown") == len(names)
    proc = run_cli("sniff", tmp_path / "nope")
    assert proc.returncode == 2 and str(tmp_path / "nope") in one_line(proc)


def test_cli_detectors_and_compare_on_hostile_input(tmp_path):
    proc = run_cli("detectors", "--format", "json")
    assert proc.returncode == 0 and json.loads(proc.stdout)
    junk = tmp_path / "junk"
    junk.write_bytes(b"\x00\xff" * 1000)
    proc = run_cli("compare", junk)
    assert proc.returncode == 2 and str(junk) in one_line(proc)
    ab = tmp_path / "ab.txt"
    ab.write_bytes(_partly_readable("ab"))
    proc = run_cli("compare", ab, junk)
    assert proc.returncode == 2 and str(junk) in one_line(proc)
    proc = run_cli("compare", ab, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)


@pytest.mark.parametrize("content", [b"\xff\xfe\x00 not toml", b"detectors = 5\n", b"[detectors]\nswap-climb = 3\n",
                                     b"link_speed = [1, 2]\n", b"[[signature]]\nid = 1\npatterns = '('\n"])
def test_cli_hostile_config_is_a_one_line_usage_error(content, tmp_path):
    cfg = tmp_path / "cfg.toml"
    cfg.write_bytes(content)
    proc = run_cli("analyze", SAMPLES / "tengine-720k", "--config", cfg)
    assert proc.returncode == 2, proc.stderr
    assert str(cfg) in one_line(proc)


def test_cli_config_that_is_a_directory(tmp_path):
    proc = run_cli("analyze", SAMPLES / "tengine-720k", "--config", tmp_path)
    assert proc.returncode == 2 and str(tmp_path) in one_line(proc)


def test_cli_unreadable_and_special_files(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    link = tmp_path / "dangling"
    link.symlink_to(tmp_path / "gone")
    for p in (empty, link):
        proc = run_cli("analyze", p)
        assert proc.returncode == 2 and str(p) in one_line(proc)
    proc = run_cli("parse", empty)
    assert proc.returncode == 2 and str(empty) in one_line(proc)
    # a directory with a fifo in it must not hang
    proc = run_cli("analyze", tmp_path, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


# --- the damaged files of the sysstat test suite -------------------------------------------------

CORRUPTED = ["data-12.6.0-file_act-MAP_SIZE_types_nr-err", "data-12.6.0-file_act-nr-0-err",
             "data-12.6.0-file_act-nr-err", "data-12.6.0-file_act-nr-nr_max-err", "data-12.6.0-file_act-nr2-0-err",
             "data-12.6.0-file_act-nr2-err", "data-12.6.0-file_act-size-0-err", "data-12.6.0-file_act-size-err",
             "data-12.6.0-file_act-types_nr-SARerr", "data-12.6.0-file_hdr-MAP_SIZE_act_types_nr-err",
             "data-12.6.0-file_hdr-MAP_SIZE_rec_types_nr-err", "data-12.6.0-file_hdr-act_size-err",
             "data-12.6.0-file_hdr-rec_size-err", "data-12.6.0-file_hdr-sa_act_nr-err",
             "data-trunc", "data-12.7.1-A_IRQ_overflow"]
#: Damaged files that still hold something: read, with a warning naming the damage.
WARNED = {"data-ukwn": "activity 255", "data-ukwn0": "activity 255", "data-ukwn1": "queue (magic 0x8d)"}


def test_corrupted_list_covers_the_corpus(corpus):
    errs = {p.name for p in (corpus / "sysstat" / "binary").glob("data-12.6.0-*err")}
    assert len(errs) == 14 and errs <= set(CORRUPTED)


@pytest.mark.parametrize("name", CORRUPTED)
@pytest.mark.parametrize("command", ["analyze", "parse"])
def test_corrupted_sysstat_files_through_the_cli(corpus, name, command):
    path = corpus / "sysstat" / "binary" / name
    proc = run_cli(command, path)
    assert proc.returncode == 2, proc.stderr
    line = one_line(proc)
    assert str(path) in line and "(byte " in line, line
    if command == "analyze":
        assert "no usable input" in line
        assert line.count(str(path)) == 1, line


@pytest.mark.parametrize("name", sorted(WARNED))
def test_unknown_activities_warn_through_the_cli(corpus, name):
    path = corpus / "sysstat" / "binary" / name
    proc = run_cli("analyze", path, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    warnings = [ln for ln in proc.stderr.splitlines() if "warning" in ln]
    assert any(str(path) in ln and WARNED[name] in ln and "(byte " in ln for ln in warnings), proc.stderr
    assert any(WARNED[name] in w for w in json.loads(proc.stdout)["warnings"])


def test_non_printable_comment_through_the_cli(corpus):
    path = corpus / "sysstat" / "binary" / "data-non-printable"
    proc = run_cli("parse", path)
    assert proc.returncode == 0, proc.stderr
    assert "Hello..o.ld!" in proc.stdout
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", proc.stdout)
    proc = run_cli("analyze", path, "--format", "json")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr


def test_corrupted_files_together_with_good_input(corpus):
    binary = corpus / "sysstat" / "binary"
    proc = run_cli("analyze", SAMPLES / "tengine-720k", *(binary / n for n in CORRUPTED[:4]), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert {s["path"] for s in doc["skipped"]} == {str(binary / n) for n in CORRUPTED[:4]}
    for n in CORRUPTED[:4]:
        assert sum(f"skipped {binary / n}" in ln for ln in proc.stderr.splitlines()) == 1


# --------------------------------------------------------------------------------------------
# Inputs are never written to, nor written beside
# --------------------------------------------------------------------------------------------

def _snapshot(directory: Path) -> dict:
    out = {}
    for p in sorted(directory.rglob("*")):
        st_ = p.lstat()
        out[str(p.relative_to(directory))] = (hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir",
                                              st_.st_mode, st_.st_mtime_ns)
    return out


@pytest.fixture()
def input_dir(tmp_path):
    d = tmp_path / "inputs"
    d.mkdir()
    for name in ("nginx-proxy-oom/sa06", "nginx-proxy-oom/messages", "nginx-proxy-oom/error.log",
                 "image-service-ab/ab-2m-image.txt"):
        (d / Path(name).name).write_bytes((SAMPLES / name).read_bytes())
    (d / "messages.gz").write_bytes(gzip.compress((SAMPLES / "tengine-720k" / "messages").read_bytes()))
    return d


def test_analyze_with_html_and_plots_leaves_inputs_untouched(input_dir, tmp_path):
    before = _snapshot(input_dir)
    out = tmp_path / "out"
    out.mkdir()
    proc = run_cli("analyze", input_dir, "--html", out / "report.html", "--plots", out / "plots",
                   "--format", "json", cwd=input_dir)
    assert proc.returncode == 0, proc.stderr
    assert _snapshot(input_dir) == before
    assert (out / "report.html").is_file() and list((out / "plots").glob("*.svg"))


def test_unwritable_outputs_are_one_line_errors(input_dir, tmp_path):
    missing = tmp_path / "no" / "such" / "dir"
    for args in (("analyze", input_dir / "messages", "--html", missing / "r.html"),
                 ("parse", input_dir / "messages", "-o", missing / "m.csv"),
                 ("parse", input_dir / "ab-2m-image.txt", "--format", "json", "-o", tmp_path),
                 ("parse", input_dir / "sa06", "--format", "parquet", "-o", missing / "x.parquet")):
        proc = run_cli(*args)
        assert proc.returncode == 2, (args, proc.stderr)
        line = one_line(proc)
        assert "cannot write" in line, line
    assert not missing.exists()


def test_parse_output_leaves_inputs_untouched(input_dir, tmp_path):
    before = _snapshot(input_dir)
    for name, fmt in (("messages", "csv"), ("sa06", "parquet"), ("ab-2m-image.txt", "json")):
        out = tmp_path / f"{name}.{fmt}"
        proc = run_cli("parse", input_dir / name, "--format", fmt, "-o", out, cwd=input_dir)
        assert proc.returncode == 0, proc.stderr
        assert out.stat().st_size > 0
    assert _snapshot(input_dir) == before


@pytest.mark.parametrize("how", ["same", "relative", "symlink", "hardlink"])
def test_refuses_to_overwrite_an_input(input_dir, tmp_path, how):
    target = input_dir / "messages"
    if how == "same":
        out = target
    elif how == "relative":
        out = Path("..") / input_dir.name / "messages"
    elif how == "symlink":
        out = tmp_path / "link-to-input"
        out.symlink_to(target)
    else:
        out = tmp_path / "hardlink-to-input"
        os.link(target, out)
    before = _snapshot(input_dir)
    for args in (("parse", target, "-o", out), ("parse", target, "--format", "json", "-o", out),
                 ("analyze", input_dir, "--html", out), ("analyze", target, "--html", out)):
        proc = run_cli(*args, cwd=input_dir)
        assert proc.returncode == 2, (args, proc.stderr)
        assert "refusing to overwrite" in one_line(proc)
        assert _snapshot(input_dir) == before, args


def test_plots_directory_inside_inputs_never_clobbers_an_input(input_dir, tmp_path):
    """--plots pointing at the input directory: plots may be added there, but
    no input is overwritten and nothing else appears."""
    before = _snapshot(input_dir)
    proc = run_cli("analyze", input_dir / "sa06", input_dir / "messages", "--plots", input_dir)
    assert proc.returncode in (0, 2) and "Traceback" not in proc.stderr
    after = _snapshot(input_dir)
    for name, digest in before.items():
        assert after[name] == digest, name
    assert all(n.endswith(".svg") for n in set(after) - set(before))


# --------------------------------------------------------------------------------------------
# Outputs escape what came from the inputs
# --------------------------------------------------------------------------------------------

HOSTILE_STRINGS = ['<script>alert(1)</script>', '"><img src=x onerror=alert(2)>', "javascript:alert(3)",
                   "</td></tr><iframe src=//evil>", "<!--", "]]>", "{{7*7}}", "*[x](javascript:alert(4))*",
                   "| a | b |", "`code`"]


def _hostile_sar_text(host, device, metric):
    return f"""\
Linux 2.6.32-358.el6.x86_64 ({host})  05/06/2014  _x86_64_  (24 CPU)

03:00:01 PM     IFACE   rxpck/s   txpck/s    rxkB/s    txkB/s   rxcmp/s   txcmp/s  rxmcst/s   %ifutil
03:01:01 PM {device}  772841.17  13911.13 1071713.35  19290.84      0.00      0.00      0.00     99.38
03:02:01 PM {device}  772841.17  13911.13 1071713.35  19290.84      0.00      0.00      0.00     99.58
03:03:01 PM {device}  772841.17  13911.13 1071713.35  19290.84      0.00      0.00      0.00     99.70

03:00:01 PM     CPU     %user     %nice   %system   %iowait    %steal     %idle  {metric}
03:01:01 PM     all      5.37      0.00      8.35     60.01      0.00     26.27  1.0
03:02:01 PM     all      5.24      0.00      7.93     71.12      0.00     15.71  1.0
03:03:01 PM     all      5.24      0.00      7.93     75.12      0.00     11.71  1.0
"""


def _hostile_ab(command, server):
    return f"""\
$ {command}
This is ApacheBench, Version 2.3 <$Revision: 1430300 $>

Server Software:        {server}
Server Hostname:        {server}
Server Port:            80

Document Path:          /{server}
Document Length:        612 bytes

Concurrency Level:      200
Time taken for tests:   10.000 seconds
Complete requests:      50000
Failed requests:        4000
   (Connect: 0, Receive: 0, Length: 4000, Exceptions: 0)
Non-2xx responses:      3000
Total transferred:      42250000 bytes
HTML transferred:       30600000 bytes
Requests per second:    5000.00 [#/sec] (mean)
Time per request:       40.000 [ms] (mean)
Time per request:       0.200 [ms] (mean, across all concurrent requests)
Transfer rate:          4126.00 [Kbytes/sec] received

Percentage of the requests served within a certain time (ms)
  50%     20
  66%     25
  75%     30
  80%     35
  90%     50
  95%     80
  98%    200
  99%    900
 100%   3000 (longest request)
"""


@pytest.fixture(params=range(len(HOSTILE_STRINGS)), ids=lambda i: f"hostile{i}")
def hostile_fields_bundle(request, tmp_path):
    bad = HOSTILE_STRINGS[request.param]
    compact = bad.replace(" ", "")
    (tmp_path / "sar.txt").write_text(_hostile_sar_text(compact, compact[:30] or "x", compact[:20] or "y"))
    (tmp_path / "messages").write_text(
        f"May  6 15:01:10 {compact} kernel: {bad}[4121]: segfault at 0 ip 00000000004c2d27 sp 00007fff2b3e8b40 "
        f"error 4 in {compact}.so[400000+1000]\n"
        f"May  6 15:01:11 {compact} kernel: Out of memory: Killed process 4242 ({compact}) total-vm:1021908kB, "
        "anon-rss:524288kB, file-rss:4096kB, shmem-rss:0kB\n")
    (tmp_path / "ab.txt").write_text(_hostile_ab(f"ab -n 50000 -c 200 'http://h/{bad}'", compact))
    return tmp_path, bad


def _outside_code(md: str) -> str:
    """Markdown without its fenced blocks and code spans (both literal)."""
    md = re.sub(r"(?ms)^(`{3,})[^\n]*\n.*?^\1\s*$", "", md)
    return re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", md)


def test_reports_escape_hostile_hosts_devices_metrics_and_commands(hostile_fields_bundle, tmp_path):
    import sarsleuth
    from sarsleuth.render.formats.html import build_html
    from sarsleuth.render.formats.markdown import render_markdown
    bundle, bad = hostile_fields_bundle
    case = sarsleuth.load(bundle, year=2014)
    assert len(case.sources) == 3, [(s.path, s.reason) for s in case.skipped]
    assert case.findings
    html = build_html(case)
    md = render_markdown(case)
    from .test_report_html import _tags
    tags = _tags(html)
    assert not any(tag in ("script", "iframe", "img") and ("src", "x") in attrs or tag == "iframe"
                   for tag, attrs in tags)
    assert not any(name.startswith("on") for _, attrs in tags for name, _ in attrs)
    assert not any(value and "javascript:" in value for _, attrs in tags for _, value in attrs)
    assert "<script>alert" not in html and "<img src=x" not in html and "<iframe" not in html
    # the page's own scripts run; the explorer's data (names from inputs among
    # its strings) is JSON that nothing can end: no "<" in it
    scripts = [m.group(1) for m in re.finditer(r"<script>(.*?)</script>", html, re.S)]
    assert not any("alert(" in s for s in scripts)
    data = re.findall(r'<script type="application/json" id="explorer-data">(.*?)</script>', html, re.S)
    assert len(re.findall(r"<script\b", html)) == 3 * len(data) and not any("<" in d for d in data)
    # markdown: no raw tag, comment or declaration opens anywhere outside code
    # (a fenced block or code span shows its text literally), no live link
    prose = _outside_code(md)
    assert not re.search(r"(?<!\\)<[A-Za-z/!?]", prose), re.search(r".{0,40}<[A-Za-z/!?].{0,40}", prose).group()
    assert not re.search(r"(?<!\\)\]\(javascript:", prose)
    # the hostile text is still shown (escaped), not dropped
    import html as htmllib
    compact = bad.replace(" ", "")
    assert compact[:12] in htmllib.unescape(html) or bad[:12] in htmllib.unescape(html)


def test_hostile_strings_in_json_and_text_output_are_inert(hostile_fields_bundle):
    bundle, bad = hostile_fields_bundle
    proc = run_cli("analyze", bundle, "--year", "2014", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    json.loads(proc.stdout)
    proc = run_cli("analyze", bundle, "--year", "2014")
    assert proc.returncode == 0, proc.stderr
    assert "\x1b]" not in proc.stdout


def test_terminal_escape_sequences_from_logs_are_not_passed_through(tmp_path):
    """A log line carrying terminal control sequences (set title, clear
    screen) is shown as text in the terminal output, never executed."""
    (tmp_path / "messages").write_bytes(
        b"May  6 15:01:10 web1 kernel: \x1b]0;pwned\x07\x1b[2J[4121]: segfault at 0 ip 00000000004c2d27 "
        b"sp 00007fff2b3e8b40 error 4 in libc.so[400000+1000]\n"
        b"May  6 15:01:11 web1 kernel: Out of memory: Killed process 4242 (\x1b[2Jnginx) total-vm:1021908kB, "
        b"anon-rss:524288kB, file-rss:4096kB, shmem-rss:0kB\n")
    for fmt in ("text", "markdown"):
        proc = run_cli("analyze", tmp_path, "--year", "2014", "--format", fmt)
        assert proc.returncode == 0, proc.stderr
        assert "\x1b]0;" not in proc.stdout and "\x1b[2J" not in proc.stdout, fmt
        assert "\x1b" not in proc.stderr


#: Set the window title (OSC ... BEL), 8-bit CSI, and a right-to-left
#: override that shows "nginx\u202egpj.exe" as "nginxexe.jpg".
HOSTILE_NAME = "\x1b]0;pwned\x07\x9b2Jnginx\u202egpj"
HOSTILE_SHOWN = "\\x1b]0;pwned\\x07\\x9b2Jnginx\\u202egpj"


def test_control_and_bidi_characters_are_visible_escapes_in_every_output(tmp_path):
    """The rule of the terminal for every output: JSON and HTML write ESC,
    BEL, C1 controls and U+202E from a log as the text shows them
    (``\\x1b``, ``\\u202e``); the evidence keeps every other character of
    the line."""
    log = tmp_path / "messages"
    log.write_bytes(f"May  6 15:01:11 web1 kernel: Out of memory: Killed process 4242 ({HOSTILE_NAME}) "
                    "total-vm:1021908kB, anon-rss:524288kB, file-rss:4096kB, shmem-rss:0kB\n".encode())
    outputs = {}
    for fmt in ("text", "markdown", "json"):
        proc = run_cli("analyze", log, "--year", "2014", "--format", fmt)
        assert proc.returncode == 0, proc.stderr
        outputs[fmt] = proc.stdout
    report = tmp_path.parent / f"{tmp_path.name}.html"
    assert run_cli("analyze", log, "--year", "2014", "--html", report).returncode == 0
    outputs["html"] = report.read_text("utf-8")
    from sarsleuth.render.formats.markdown import md_escape
    for fmt, text in outputs.items():
        assert not re.search("[\x07\x1b\x9b\u202e]", text), fmt
        shown = {"markdown": md_escape(HOSTILE_NAME), "json": json.dumps(HOSTILE_SHOWN)[1:-1]}
        assert shown.get(fmt, HOSTILE_SHOWN) in text, fmt
    doc = json.loads(outputs["json"])
    [oom] = [f for f in doc["findings"] if f["detector"] == "oom-kill"]
    assert oom["evidence"][0]["text"] == (f"May  6 15:01:11 web1 kernel: Out of memory: Killed process 4242 "
                                          f"({HOSTILE_SHOWN}) total-vm:1021908kB, anon-rss:524288kB, "
                                          "file-rss:4096kB, shmem-rss:0kB")
    # a data export keeps the line as read when it goes to a file, escapes it on a terminal
    assert HOSTILE_NAME in run_cli("parse", log, "--year", "2014").stdout
    assert HOSTILE_SHOWN in run_cli("parse", log, "--year", "2014", tty=True).stdout


# --------------------------------------------------------------------------------------------
# Outputs: written whole or not at all, never through a planted link, names shown safely
# --------------------------------------------------------------------------------------------

def _segfault_log(path: Path) -> None:
    path.write_bytes(b"May  6 15:01:10 web1 kernel: nginx[4121]: segfault at 0 ip 00000000004c2d27 "
                     b"sp 00007fff2b3e8b40 error 4 in libc.so[400000+1000]\n"
                     b"May  6 15:01:11 web1 kernel: Out of memory: Killed process 4242 (nginx) total-vm:1021908kB, "
                     b"anon-rss:524288kB, file-rss:4096kB, shmem-rss:0kB\n")


def test_plots_never_follow_a_planted_symlink(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    plots = tmp_path / "plots"
    plots.mkdir()
    planted = plots / "incident-01-memory-exhaustion.svg"
    planted.symlink_to(victim)
    proc = run_cli("analyze", SAMPLES / "nginx-proxy-oom", "--plots", plots, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert victim.read_text() == "precious\n"
    assert not planted.is_symlink() and planted.read_text().startswith("<svg")


def test_html_through_a_symlink_the_user_named_writes_its_target(tmp_path):
    target = tmp_path / "reports" / "latest.html"
    target.parent.mkdir()
    target.write_text("old")
    link = tmp_path / "report.html"
    link.symlink_to(target)
    proc = run_cli("analyze", SAMPLES / "tengine-720k", "--html", link, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink() and "<svg" in target.read_text()


def test_a_failed_report_write_keeps_the_previous_report(tmp_path, monkeypatch):
    """A full disk while writing --html: one line, exit 2, the previous
    report intact and no partial file left beside it."""
    out = tmp_path / "report.html"
    out.write_text("<html>previous report</html>")

    def full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    proc = run_cli("analyze", SAMPLES / "tengine-720k", "--html", out, "--format", "json")
    assert proc.returncode == 2
    assert one_line(proc) == f"sarsleuth: {out}: cannot write: No space left on device"
    assert out.read_text() == "<html>previous report</html>"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]


def test_an_unwritable_directory_is_one_line(tmp_path, monkeypatch):
    locked = tmp_path / "locked"
    locked.mkdir()
    os.chmod(locked, 0o500)
    if os.access(locked, os.W_OK):          # root writes anywhere: make the OS say no for it
        real = tempfile.mkstemp

        def refuse(*args, dir=None, **kwargs):
            if dir is not None and Path(dir) == locked:
                raise PermissionError(13, "Permission denied")
            return real(*args, dir=dir, **kwargs)

        monkeypatch.setattr(tempfile, "mkstemp", refuse)
    try:
        for args in (("analyze", SAMPLES / "tengine-720k", "--html", locked / "r.html"),
                     ("parse", SAMPLES / "tengine-720k" / "messages", "-o", locked / "m.csv"),
                     ("analyze", SAMPLES / "nginx-proxy-oom" / "sa06", SAMPLES / "nginx-proxy-oom" / "messages",
                      "--plots", locked)):
            proc = run_cli(*args)
            assert proc.returncode == 2, (args, proc.stderr)
            assert one_line(proc).endswith("cannot write: Permission denied"), proc.stderr
        assert list(locked.iterdir()) == []
    finally:
        os.chmod(locked, 0o700)


def test_file_names_that_are_not_utf8(tmp_path):
    """An input whose name is not UTF-8: JSON stays valid UTF-8 (U+FFFD for
    each bad byte), HTML is written, the terminal sees the bytes escaped."""
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    name = os.fsdecode(b"sar-\xff\xfe.txt")
    (bundle / name).write_bytes((SAMPLES / "nginx-proxy-oom" / "sar06.txt").read_bytes())
    proc = run_cli("analyze", bundle, "--format", "json", "--html", tmp_path / "r.html")
    assert proc.returncode == 0, proc.stderr
    proc.stdout_bytes.decode("utf-8")                     # strict: valid UTF-8
    doc = json.loads(proc.stdout)
    assert [s["path"] for s in doc["sources"]] == [str(bundle / "sar-\ufffd\ufffd.txt")]
    assert re.search(r"[(\[]sar-\ufffd\ufffd\.txt:\d+[)\]]", doc["incidents"][0]["summary"])
    assert "sar-\ufffd\ufffd.txt" in (tmp_path / "r.html").read_bytes().decode("utf-8")
    for fmt in ("text", "markdown"):
        proc = run_cli("analyze", bundle, "--format", fmt)
        assert proc.returncode == 0, proc.stderr
        assert "sar-\\xff\\xfe.txt" in proc.stdout.replace("\\\\", "\\"), fmt
    proc = run_cli("sniff", bundle)
    assert proc.stdout == f"{bundle}/sar-\\xff\\xfe.txt\tsar-text\n"


def test_escape_sequences_in_file_names_never_reach_the_terminal(tmp_path):
    """Names carrying OSC/CSI sequences, through every command and every
    message: stdout and stderr show them escaped."""
    evil = "x\x1b]0;pwned\x07\x1b[2J\x9b31m"
    log = tmp_path / f"{evil}.log"
    _segfault_log(log)
    junk = tmp_path / f"{evil}.bin"
    junk.write_bytes(b"\x00\x01 nothing")
    partly = tmp_path / f"{evil}.sar"
    partly.write_bytes(_partly_readable("sar-text"))
    runs = [run_cli("sniff", tmp_path), run_cli("parse", junk), run_cli("parse", partly, tty=True),
            run_cli("parse", log, "--year", "2014", tty=True), run_cli("analyze", tmp_path, "--year", "2014"),
            run_cli("analyze", junk), run_cli("analyze", tmp_path, "--year", "2014", "--format", "markdown")]
    for proc in runs:
        for stream in (proc.stdout, proc.stderr):
            assert not re.search("[\x07\x1b\x9b]", stream), (proc.args, stream[:300])
    assert "x\\x1b]0;pwned\\x07" in runs[0].stdout
    assert runs[1].returncode == 2 and "\\x1b]0;pwned" in one_line(runs[1])
    assert any("warning" in ln and "\\x1b]0;pwned" in ln for ln in runs[2].stderr.splitlines()), runs[2].stderr
    assert "x\\x1b]0;pwned\\x07" in runs[3].stdout           # the file column, shown on a terminal
    # into a pipe or a file the table is data, kept as it was read
    assert f"{log}," in run_cli("parse", log, "--year", "2014").stdout


def test_a_load_test_lasting_past_any_clock_is_placed_at_its_file_s_time(tmp_path):
    """httperf's test-duration damaged to 9,999,999,999 s (three centuries):
    no run lasts that long, so the report is placed at its file's time,
    not 317 years before it (which no clock holds)."""
    path = tmp_path / "httperf.txt"
    path.write_bytes(b"\tTotal:connections0requests0replies0test-duration9999999999s")
    (report,) = registry()["httperf"].parse(path, ParseOptions()).reports
    assert report["duration_s"] == 9999999999.0 and report["time_from"] == "mtime"
    assert report["start"] == report["end"]
