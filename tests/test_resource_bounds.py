"""Huge input: bounded memory and time, or a clean refusal.

A 5 MB line in every text format, a 200 MB log (streamed: the peak resident
size of the command stays that of a small file), sa headers claiming 2^31
activities or items, and decompression bombs.  The same checks at 2 GB and
10 GB are in ``fuzz/huge_inputs.py`` (too slow for every test run).
"""
from __future__ import annotations

import gzip
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sarsleuth.errors import InputError
from sarsleuth.inputs.parsers import ParseOptions, kinds, registry
from sarsleuth.inputs.reading import MAX_LINE_BYTES

from .conftest import SAMPLES
from .test_hostile_inputs import base_seed, check_parse, one_line

MB = 1 << 20

# --------------------------------------------------------------------------------------------
# Peak resident size of one command, measured inside its own process
# --------------------------------------------------------------------------------------------

_MEASURED = r"""
import sys
from sarsleuth.cli import main
sys.argv = ["sarsleuth"] + sys.argv[1:]
try:
    main()
finally:
    with open("/proc/self/status") as fh:
        peak = [ln.split()[1] for ln in fh if ln.startswith("VmHWM:")]
    sys.stderr.write(f"\nVMHWM_KB {peak[0] if peak else -1}\n")
"""


def run_measured(*args, timeout=300):
    """(CompletedProcess, peak RSS in bytes, seconds) of ``sarsleuth ARGS``."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _MEASURED, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)
    elapsed = time.perf_counter() - t0
    lines = proc.stderr.splitlines()
    peak = [int(ln.split()[1]) * 1024 for ln in lines if ln.startswith("VMHWM_KB ")]
    proc.stderr = "\n".join(ln for ln in lines if not ln.startswith("VMHWM_KB ")).strip() + "\n"
    return proc, (peak[0] if peak else None), elapsed


needs_proc = pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux /proc for VmHWM")


@pytest.fixture(scope="module")
def baseline_rss(tmp_path_factory):
    """Peak RSS of the same commands on a small file: interpreter, pandas, the lot."""
    out = tmp_path_factory.mktemp("baseline") / "out.csv"
    peaks = []
    for name in ("tengine-720k/messages", "nginx-worker-crash/error.log"):
        proc, peak, _ = run_measured("parse", SAMPLES / name, "-o", out)
        assert proc.returncode == 0 and peak, proc.stderr
        peaks.append(peak)
        proc, peak, _ = run_measured("analyze", SAMPLES / name, "--format", "json")
        assert proc.returncode == 0 and peak, proc.stderr
        peaks.append(peak)
    return max(peaks)


#: What a huge streamed input may add to the peak RSS of a small one.
STREAMING_ALLOWANCE = 96 * MB

# --------------------------------------------------------------------------------------------
# Generated big logs
# --------------------------------------------------------------------------------------------

SYSLOG_NOISE = b"May  6 15:04:10 web1 CROND[21000]: (root) CMD (/usr/lib64/sa/sa1 1 1) run-parts /etc/cron.hourly\n"
SYSLOG_EVENT = (b"May  6 15:04:11 web1 kernel: Out of memory: Killed process 4242 (nginx) total-vm:1021908kB, "
                b"anon-rss:524288kB, file-rss:4096kB, shmem-rss:0kB\n")
NGINX_NOISE = (b'2014/05/06 15:03:12 [info] 8888#0: *2101000 client 10.12.0.20 closed keepalive connection while '
               b'reading client request line, client: 10.12.0.20, server: img.example.com\n')
NGINX_EVENT = (b'2014/05/06 15:03:12 [error] 8888#0: *2101000 upstream timed out (110: Connection timed out) while '
               b'reading response header from upstream, client: 10.12.0.20, server: img.example.com, request: '
               b'"GET /img/big-0.jpg HTTP/1.1", upstream: "http://10.20.0.11:8080/img/big-0.jpg", host: "x"\n')


def write_big_log(path: Path, noise: bytes, event: bytes, size: int, every: int = 10_000) -> int:
    """A log of about ``size`` bytes: noise lines with one event every ``every``; returns the events written."""
    block = noise * (every - 1) + event
    written = events = 0
    opener = gzip.open(path, "wb", compresslevel=1) if path.suffix == ".gz" else open(path, "wb")
    with opener as fh:
        while written < size:
            fh.write(block)
            written += len(block)
            events += 1
    return events


@pytest.fixture(scope="module")
def big_logs(tmp_path_factory):
    d = tmp_path_factory.mktemp("big")
    out = {}
    out["syslog"] = (d / "messages", write_big_log(d / "messages", SYSLOG_NOISE, SYSLOG_EVENT, 200 * MB))
    out["nginx-error"] = (d / "error.log", write_big_log(d / "error.log", NGINX_NOISE, NGINX_EVENT, 200 * MB))
    out["syslog-gz"] = (d / "messages.gz", write_big_log(d / "messages.gz", SYSLOG_NOISE, SYSLOG_EVENT, 200 * MB))
    yield out
    for path, _ in out.values():
        path.unlink()


@needs_proc
@pytest.mark.parametrize("which", ["syslog", "nginx-error", "syslog-gz"])
def test_200mb_log_is_streamed_in_bounded_memory(big_logs, baseline_rss, tmp_path, which):
    path, events = big_logs[which]
    out = tmp_path / "out.csv"
    proc, peak, elapsed = run_measured("parse", path, "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert peak is not None and peak < baseline_rss + STREAMING_ALLOWANCE, (peak, baseline_rss)
    # nothing lost: every event line is in the table (identical ones of a
    # second counted in the row that stands for them)
    with open(out, "rb") as fh:
        next(fh)
        lines = sum(int(row.rsplit(b",", 1)[1]) for row in fh)
    assert lines == events, (lines, events)
    print(f"{which}: {path.stat().st_size / MB:.0f} MB in {elapsed:.1f}s, peak RSS {peak / MB:.0f} MB "
          f"(small file: {baseline_rss / MB:.0f} MB)")


@needs_proc
def test_200mb_analyze_in_bounded_memory(big_logs, baseline_rss):
    path, events = big_logs["nginx-error"]
    proc, peak, elapsed = run_measured("analyze", path, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert '"upstream-timeout"' in proc.stdout
    assert peak < baseline_rss + STREAMING_ALLOWANCE, (peak, baseline_rss)


def write_flood(path: Path, lines: int, per_second: int = 1000) -> None:
    """One OOM kill printed ``lines`` times, ``per_second`` lines a second
    (as mm/oom_kill.c words it in 5.x), after the invocation line."""
    with open(path, "wb") as fh:
        fh.write(b"Mar 12 02:59:59 web7 kernel: java invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), "
                 b"order=0, oom_score_adj=0\n")
        for second in range(0, lines // per_second):
            stamp = f"Mar 12 {3 + second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}".encode()
            fh.write((stamp + b" web7 kernel: Out of memory: Killed process 4242 (java) total-vm:8011156kB, "
                      b"anon-rss:3998712kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:7980kB "
                      b"oom_score_adj:0\n") * per_second)


@needs_proc
def test_a_flood_of_one_line_is_stored_once_in_flat_memory(tmp_path):
    """The same OOM kill printed 60,000 and 480,000 times: one event that
    says how often, and the larger log costs no more memory than the
    allocator's slack (about 1 MB here; one small Python object of 57 bytes
    kept per line would be 24 MB)."""
    runs = {}
    for lines in (60_000, 480_000):
        path = tmp_path / f"messages-{lines}"
        write_flood(path, lines)
        proc, peak, _ = run_measured("analyze", path, "--year", "2024", "--format", "json")
        path.unlink()
        assert proc.returncode == 0, proc.stderr
        runs[lines] = (json.loads(proc.stdout), peak)
    for lines, (doc, _) in runs.items():
        kill = next(f for f in doc["findings"] if f["detector"] == "oom-kill")
        assert kill["title"].endswith(f"reported {lines:,} times") and kill["metrics"]["victims"] == 1
        assert kill["metrics"]["kill_reports"] == lines
        assert kill["evidence"][0]["line"] == 2
        assert kill["evidence"][0]["repeated"] == {
            "times": lines, "first": "2024-03-12T03:00:00",
            "last": f"2024-03-12T{3 + (lines // 1000 - 1) // 3600:02d}:{(lines // 1000 - 1) // 60 % 60:02d}:"
                    f"{(lines // 1000 - 1) % 60:02d}",
            "peak_per_minute": 60_000}
    small, big = runs[60_000][1], runs[480_000][1]
    assert big < small + 15 * MB, (small / MB, big / MB)


# --------------------------------------------------------------------------------------------
# A 5 MB line in every text format
# --------------------------------------------------------------------------------------------

TEXT_KINDS = [k for k in kinds() if registry()[k].shape != "records"]


def shape(kind: str) -> str:
    """How the parser reads a file (:attr:`~sarsleuth.inputs.parsers.base.Parser.shape`):
    logs are scanned in 8 MB blocks (a 5 MB line fits a block and is scanned
    whole; only the candidate lines are decoded, and those are cut at 16 K),
    documents are parsed whole, other text is read a line at a time."""
    return registry()[kind].shape


def _with_long_line(kind: str, size: int = 5 * MB) -> bytes:
    data = base_seed(kind)
    lines = data.split(b"\n")
    mid = max(1, len(lines) // 2)
    rng = random.Random(kind)
    alphabet = b"0123456789 .:;,-abcdefxyz%[]()<>\"'"
    long_line = bytes(rng.choice(alphabet) for _ in range(4096)) * (size // 4096)
    if shape(kind) == "document":
        # a huge value inside the document rather than between its lines
        long_line = lines[mid] + b" " * size
    return b"\n".join(lines[:mid] + [long_line] + lines[mid:])


@pytest.mark.parametrize("kind", TEXT_KINDS)
def test_five_megabyte_line(kind, tmp_path):
    data = _with_long_line(kind)
    path = tmp_path / f"long-{kind}"
    path.write_bytes(data)
    out = check_parse(kind, path, data)
    if out.result == "source" and shape(kind) == "lines":
        # line readers cut it at MAX_LINE_BYTES, and say so
        src = out.detail
        assert any("longer than" in w and str(MAX_LINE_BYTES) in w for w in src.warnings), src.warnings
    # the line-oriented readers cut it: memory stays far below the line's size times the parser's overhead
    if shape(kind) != "document":
        assert out.peak < 48 * MB, (kind, out.peak)
    assert out.seconds < 10


# --------------------------------------------------------------------------------------------
# sa headers claiming 2^31 activities or items
# --------------------------------------------------------------------------------------------

def test_sa_claiming_two_to_the_31_activities_or_items(corpus, tmp_path):
    """The corpus's own damaged headers, with the damaged count made 2^31
    (and 2^32 - 1): a clean one-line error naming the field's byte, fast
    (in this process: an attempt to allocate what a header claims would
    fail here too)."""
    import struct
    from .conftest import run_cli
    binary = corpus / "sysstat" / "binary"
    cases = {"data-12.6.0-file_hdr-sa_act_nr-err": ("activities declared", 257),
             "data-12.6.0-file_act-nr-err": ("item count", 268435457),
             "data-12.6.0-file_act-nr2-err": ("sub-item count", 4097)}
    for name, (words, claimed) in cases.items():
        raw = (binary / name).read_bytes()
        pos = raw.find(struct.pack("<I", claimed))
        assert pos > 0, name
        for huge in (1 << 31, (1 << 32) - 1):
            data = raw[:pos] + struct.pack("<I", huge) + raw[pos + 4:]
            path = tmp_path / name
            path.write_bytes(data)
            t0 = time.perf_counter()
            proc = run_cli("parse", path)
            assert time.perf_counter() - t0 < 30
            assert proc.returncode == 2, proc.stderr
            line = one_line(proc)
            assert str(path) in line and words in line and "(byte " in line, line


@pytest.mark.parametrize("value", [1 << 31, (1 << 32) - 1])
def test_every_sa_header_word_claiming_a_huge_count(tmp_path, value):
    """Every 32-bit word of the sample's headers (file header, activity
    list), in turn, set to a huge count (2^31 activities, items, sizes...):
    a Source or a clean error, quickly, never an attempt to allocate what
    the header claims."""
    from sarsleuth.inputs.parsers.sa.layout import read_layout
    raw = (SAMPLES / "nginx-proxy-oom" / "sa06").read_bytes()
    headers = read_layout("sa06", raw).data_offset      # where the first record begins
    assert headers > 600
    refused = 0
    worst = 0.0
    for pos in range(0, headers, 4):
        data = bytearray(raw)
        data[pos:pos + 4] = value.to_bytes(4, "little")
        path = tmp_path / "sa"
        path.write_bytes(bytes(data))
        out = check_parse("sa", path, bytes(data), measure_memory=pos % 64 == 0)
        refused += out.result == "error"
        worst = max(worst, out.seconds)
    assert refused > 0 and worst < 5


# --------------------------------------------------------------------------------------------
# Decompression bombs
# --------------------------------------------------------------------------------------------

def write_bomb(path: Path, head: bytes, gigabytes: float) -> int:
    """``head`` then ``gigabytes`` of zeros, gzip-compressed (as many
    members, each a compressed MB: the file stays small)."""
    zero_mb = gzip.compress(b"\0" * MB, compresslevel=9)
    n = int(gigabytes * 1024)
    with open(path, "wb") as fh:
        fh.write(gzip.compress(head))
        for _ in range(n):
            fh.write(zero_mb)
    return len(head) + n * MB


@needs_proc
def test_gzip_bomb_behind_a_syslog_head_is_read_in_bounded_memory(tmp_path, baseline_rss):
    bomb = tmp_path / "messages.gz"
    total = write_bomb(bomb, (SAMPLES / "tengine-720k" / "messages").read_bytes(), 1)
    assert bomb.stat().st_size < 2 * MB
    proc, peak, elapsed = run_measured("analyze", bomb, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert peak < baseline_rss + STREAMING_ALLOWANCE, (peak / MB, total / MB)
    assert "longer than" in proc.stderr and str(bomb) in proc.stderr
    assert '"tcp-tw-bucket-overflow"' in proc.stdout or '"syn-flood"' in proc.stdout or '"findings"' in proc.stdout


@needs_proc
def test_gzip_bomb_of_zeros_is_refused_quickly(tmp_path):
    bomb = tmp_path / "zeros.gz"
    write_bomb(bomb, b"", 1)
    proc, peak, elapsed = run_measured("analyze", bomb)
    assert proc.returncode == 2
    line = one_line(proc)
    assert str(bomb) in line and "no usable input" in line
    assert elapsed < 30 and peak < 512 * MB


@pytest.mark.parametrize("kind", ["sadf-json", "ab", "ps"])
def test_whole_file_readers_refuse_or_bound_a_bomb(kind, tmp_path, monkeypatch):
    """Formats read whole (sadf -j) refuse what is over their limit; the
    report readers keep lines bounded; neither reads the bomb into memory.
    The bomb is 48 MB of zeros, over every limit that applies: the whole
    read of a report (8 MiB), a line (1 MiB), and sadf -j's (256 MiB, made
    32 MiB here, as for a 0.5 GB bomb against the real one)."""
    from sarsleuth.inputs.parsers.sadf import json_reader
    monkeypatch.setattr(json_reader, "JSON_LIMIT", 32 * MB)
    head = base_seed(kind)
    bomb = tmp_path / f"bomb-{kind}.gz"
    write_bomb(bomb, head, 48 / 1024)
    t0 = time.perf_counter()
    try:
        src = registry()[kind].parse(bomb, ParseOptions())
    except InputError as exc:
        assert "\n" not in str(exc) and str(bomb) in str(exc)
        if kind == "sadf-json":
            assert "refusing to load it whole" in str(exc)
    else:
        assert any("longer than" in w for w in src.warnings), src.warnings
    assert time.perf_counter() - t0 < 60


def test_a_stream_of_repeated_ps_rows_is_refused_at_the_whole_read_limit(tmp_path):
    """ps snapshots and load-test reports are held as lines: a stream of
    ps rows past the limit (64 MiB; 1 MiB here) is refused naming it and
    the byte, where a 10 GB gzip of them was held whole."""
    from sarsleuth.inputs import reading as textio
    from .conftest import run_cli
    header = b"USER       PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND\n"
    row = b"nginx    12345  2.0  1.5 123456 65432 ?        S    10:00   0:01 nginx: worker process\n"
    path = tmp_path / "ps.gz"
    path.write_bytes(gzip.compress(header + row * (2 * MB // len(row))))
    limit = textio.MAX_WHOLE_TEXT_BYTES
    textio.MAX_WHOLE_TEXT_BYTES = MB
    try:
        ran = run_cli("analyze", path)
    finally:
        textio.MAX_WHOLE_TEXT_BYTES = limit
    assert (ran.returncode, ran.stderr) == (2, f"sarsleuth: no usable input: {path} (byte {MB}): more than 1 MiB once "
                                               "decompressed: load-test reports and ps snapshots are read whole, "
                                               "and none is this big; not read\n")


@needs_proc
def test_gzip_bomb_behind_an_sa_header_is_bounded(tmp_path, baseline_rss):
    """32 MB and 128 MB of zeros after a real sa file: the larger costs no
    more memory than the smaller (a reader holding the zeros would take
    96 MB more), and both stay within 256 MB of a small file's."""
    peaks = []
    for gigabytes in (1 / 32, 1 / 8):
        bomb = tmp_path / "sa.gz"
        write_bomb(bomb, (SAMPLES / "nginx-proxy-oom" / "sa06").read_bytes(), gigabytes)
        proc, peak, elapsed = run_measured("parse", bomb, "-o", tmp_path / "out.csv")
        assert proc.returncode in (0, 2) and "Traceback" not in proc.stderr
        assert peak < baseline_rss + 256 * MB, peak / MB
        peaks.append(peak)
    small, big = peaks
    assert big < small + 48 * MB, (small / MB, big / MB)


# --------------------------------------------------------------------------------------------
# Many small files (50,000 in fuzz/many_files.py): folded into few sources, nothing lost
# --------------------------------------------------------------------------------------------

def small_log(i: int, event: bool) -> bytes:
    """A small application log as rsyslog writes it, with a kernel segfault
    line (the kernel's own format) when ``event``."""
    lines = [f"Mar 12 03:{j:02d}:07 web7 myapp[{1000 + i}]: request {j} served in {j * 3 + 1} ms\n"
             for j in range(20)]
    if event:
        lines.append(f"Mar 12 03:30:{i % 60:02d} web7 kernel: nginx[{16660 + i}]: segfault at 0 ip "
                     "00007f3a2c1e4b5a sp 00007ffd3a9c1e80 error 4 in ngx_http_lua_module.so[7f3a2c1a0000+9b000]\n")
    return "".join(lines).encode()


def test_many_small_logs_are_folded_into_few_sources_and_lose_nothing(tmp_path, monkeypatch):
    """Past FOLD_AFTER files a case holds the small logs of one kind, host
    and clock as one source (50,000 separate sources took 2.6 GB): the
    findings, events and counts are those of the files read one by one; a
    line present in two files still counts once."""
    import io
    import tarfile

    import sarsleuth
    from sarsleuth.inputs import many_small_logs as folding
    path = tmp_path / "var-log.tar.gz"
    dmesg = b"[    0.000000] Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org) #1 SMP\n"
    with tarfile.open(path, "w:gz") as tf:
        for i in range(60):
            data = small_log(i, event=i % 3 == 0)
            info = tarfile.TarInfo(f"var/log/app/app{i:03d}.log")
            info.size, info.mtime = len(data), 1710212400
            tf.addfile(info, io.BytesIO(data))
            if i == 10:          # a dmesg (never folded) among them
                info = tarfile.TarInfo("var/log/dmesg")
                info.size, info.mtime = len(dmesg), 1710212400
                tf.addfile(info, io.BytesIO(dmesg))
        copy = small_log(0, event=True)          # app000.log copied elsewhere: its segfault counts once
        info = tarfile.TarInfo("var/log/old/app000.log")
        info.size, info.mtime = len(copy), 1710212400
        tf.addfile(info, io.BytesIO(copy))
    one_by_one = sarsleuth.load(path, year=2024).to_json()
    monkeypatch.setattr(folding, "FOLD_AFTER", 20)
    monkeypatch.setattr(folding, "BATCH", 8)
    case = sarsleuth.load(path, year=2024)
    folded = case.to_json()
    # under the limit, the sources are as read
    assert [s["path"] for s in one_by_one["sources"]] == (
        [f"{path}!var/log/app/app{i:03d}.log" for i in range(11)] + [f"{path}!var/log/dmesg"]
        + [f"{path}!var/log/app/app{i:03d}.log" for i in range(11, 60)] + [f"{path}!var/log/old/app000.log"])
    assert [(s["path"], s["records"], s["start"], s["end"]) for s in folded["sources"]] == [
        (f"{path}!var/log/ (61 files)", 61 * 20 + 21, "2024-03-12T03:00:00", "2024-03-12T03:30:59"),
        (f"{path}!var/log/dmesg", 1, None, None)]
    assert case.sources[0].meta["files"][:2] == [f"{path}!var/log/app/app000.log", f"{path}!var/log/app/app001.log"]
    for key in ("findings", "incidents", "summary", "merged"):
        assert folded[key] == one_by_one[key], key
    [segv] = [f for f in folded["findings"] if f["detector"] == "segfault"]
    assert segv["metrics"]["segfaults"] == 20 and folded["merged"] == {"events": 1, "metric_values": 0}
    assert ("61 log files are held as 1 source(s), one per kind, host and clock (their events keep their "
            "files and lines)") in folded["notes"]
