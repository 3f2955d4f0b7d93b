"""Logs as they arrive in the field: cut or damaged compressed streams, logs
cut mid-line, CR / CRLF / mixed line endings, byte order marks, bursts
where every line matches, and hostile user patterns.  Nothing is lost
without a warning saying what."""
from __future__ import annotations

import bz2
import gzip
import lzma
import subprocess
import time
import zlib

import pytest

from sarsleuth.knowledge.signatures import Signature
from sarsleuth.inputs.parsers.logs import engine as log_engine
from sarsleuth.inputs.parsers import parse, sniff
from sarsleuth.inputs.parsers.base import ParseOptions
from sarsleuth.inputs.parsers.logs import assembly

#: rsyslog's traditional file format: one event every tenth line.
EVENT = "May  6 15:{m:02d}:{s:02d} web1 kernel: TCP: time wait bucket table overflow"
NOISE = "May  6 15:{m:02d}:{s:02d} web1 sshd[4121]: Accepted publickey for deploy from 10.0.0.{n} port {p} ssh2"


def syslog_lines(count: int) -> list[str]:
    out = []
    for i in range(count):
        m, s = (i // 60) % 60, i % 60
        out.append(EVENT.format(m=m, s=s) if i % 10 == 0 else NOISE.format(m=m, s=s, n=i % 250, p=40000 + i))
    return out


def as_bytes(lines: list[str], eol: str = "\n") -> bytes:
    return (eol.join(lines) + eol).encode()


def overflow_lines(data: bytes) -> int:
    return sum(1 for ln in data.split(b"\n") if b"bucket table overflow" in ln)


# what zcat / xzcat / bzcat print before they stop at the damage
RECOVER = {
    "gz": (gzip.compress, lambda b: zlib.decompressobj(31).decompress(b)),
    "xz": (lzma.compress, lambda b: lzma.LZMADecompressor().decompress(b)),
    "bz2": (bz2.compress, lambda b: bz2.BZ2Decompressor().decompress(b)),
}


@pytest.mark.parametrize("ext", sorted(RECOVER))
def test_half_downloaded_compressed_log_keeps_everything_before_the_cut(tmp_path, ext):
    compress, recover = RECOVER[ext]
    data = compress(as_bytes(syslog_lines(20_000)))
    cut = data[: len(data) * 3 // 4]
    path = tmp_path / f"messages.{ext}"
    path.write_bytes(cut)
    readable = recover(cut)
    assert sniff(path)[0] == "syslog"
    src = parse(path, options=ParseOptions(year=2014))
    assert len(src.events) == overflow_lines(readable) > 500
    assert src.records == readable.count(b"\n") + (not readable.endswith(b"\n"))
    text = " | ".join(src.warnings)
    assert "ends before its end marker (cut short)" in text
    assert f"the {len(readable)} bytes read before are kept" in text


def test_gzip_damaged_in_the_middle_keeps_what_came_before(tmp_path):
    raw = as_bytes(syslog_lines(20_000))
    data = bytearray(gzip.compress(raw, compresslevel=6))
    data[len(data) // 2: len(data) // 2 + 64] = bytes(64)
    path = tmp_path / "messages.1.gz"
    path.write_bytes(bytes(data))
    src = parse(path, options=ParseOptions(year=2014))
    # deflate has no resync point: as with zcat, the lines before the damage
    # come out intact, what follows may be garbled, and the checksum says so
    first = src.events.head(500)
    assert list(first["line"]) == list(range(1, 5000, 10))
    assert set(first["message"]) == {"TCP: time wait bucket table overflow"}
    assert any("fails its checksum" in w and "may be garbled" in w for w in src.warnings)


def test_gzip_members_and_padding_are_read_whole(tmp_path):
    """logrotate's ``delaycompress`` + ``cat a.gz b.gz``: several members."""
    lines = syslog_lines(3000)
    data = gzip.compress(as_bytes(lines[:1000])) + gzip.compress(as_bytes(lines[1000:])) + bytes(512)
    path = tmp_path / "messages.gz"
    path.write_bytes(data)
    src = parse(path, options=ParseOptions(year=2014))
    assert (len(src.events), src.records, src.warnings) == (300, 3000, [])


def test_log_cut_mid_line_keeps_the_partial_line(tmp_path):
    data = as_bytes(syslog_lines(1000))
    cut = data[: data.rindex(b"bucket table") + len(b"bucket ")]
    path = tmp_path / "messages"
    path.write_bytes(cut)
    src = parse(path, options=ParseOptions(year=2014))
    assert src.records == 991 and len(src.events) == 99
    assert any("ends in the middle of a line (kept)" in w for w in src.warnings)


@pytest.mark.parametrize("eol", ["\r", "\r\n", "mixed"])
def test_line_endings(tmp_path, eol):
    lines = syslog_lines(2000)
    if eol == "mixed":
        data = "".join(ln + ("\n", "\r\n", "\r")[i % 3] for i, ln in enumerate(lines)).encode()
    else:
        data = as_bytes(lines, eol)
    path = tmp_path / "messages"
    path.write_bytes(data)
    src = parse(path, options=ParseOptions(year=2014))
    assert (len(src.events), src.records, int(src.meta["volume"].sum())) == (200, 2000, 2000)
    assert list(src.events["line"][:3]) == [1, 11, 21]
    assert src.events["message"].iloc[0] == "TCP: time wait bucket table overflow"


def test_cr_pair_split_by_a_read_is_one_line_end(tmp_path):
    from sarsleuth.inputs.parsers.logs.scan import LogFormat, scan
    from sarsleuth.inputs.parsers.logs import syslog
    data = as_bytes(syslog_lines(500), "\r\n")
    path = tmp_path / "messages"
    path.write_bytes(data)
    fmt = LogFormat("syslog", syslog.parse_line, syslog.volume_spec(data[:4096])[1])
    for block_bytes in (97, 1000, 4093):   # reads ending between a CR and its LF
        result = scan(path, fmt, block_bytes=block_bytes)
        assert (result.lines, len(result.events)) == (500, 50), block_bytes


def test_byte_order_marks(tmp_path):
    """A BOM at the start (Windows editors) and one where a second file was
    appended (``cat a b``) are not part of a line."""
    lines = syslog_lines(400)
    data = b"\xef\xbb\xbf" + as_bytes(lines[:200]) + b"\xef\xbb\xbf" + as_bytes(lines[200:])
    path = tmp_path / "messages"
    path.write_bytes(data)
    assert sniff(path)[0] == "syslog"
    src = parse(path, options=ParseOptions(year=2014))
    assert (len(src.events), src.records, src.warnings) == (40, 400, [])
    assert src.events["timestamp"].iloc[0].year == 2014 and src.host == "web1"


def test_utf16_log_is_read_as_text(tmp_path):
    lines = syslog_lines(300)
    path = tmp_path / "messages"
    path.write_bytes(("\r\n".join(lines) + "\r\n").encode("utf-16"))
    from sarsleuth.inputs.parsers.logs import syslog
    src = syslog.read_events(path, ParseOptions(year=2014))
    assert (len(src.events), src.records) == (30, 300)
    assert any("UTF-16" in w for w in src.warnings)


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_utf16_log_with_a_bom_is_sniffed_and_analysed(tmp_path, encoding):
    """Notepad's "Unicode" (little-endian) and big-endian UTF-16, each
    with its byte order mark: sniffed as the log they are, every line
    counted, the decoding said once."""
    from .conftest import run_cli
    lines = syslog_lines(300)
    path = tmp_path / "messages"
    path.write_bytes("\ufeff".encode(encoding) + ("\r\n".join(lines) + "\r\n").encode(encoding))
    kind, reason = sniff(path)
    assert (kind, reason.endswith(", UTF-16 text")) == ("syslog", True)
    ran = run_cli("analyze", path, "--year", "2014", "--format", "json")
    assert ran.returncode == 0, ran.stderr
    import json
    doc = json.loads(ran.stdout)
    assert [(s["kind"], s["records"]) for s in doc["sources"]] == [("syslog", 300)]
    [overflow] = [f for f in doc["findings"] if f["detector"] == "tcp-tw-bucket-overflow"]
    assert overflow["metrics"]["lines"] == 30
    assert doc["warnings"] == [f"{path}: UTF-16 text (read as such)"]


def test_utf16_text_of_a_kind_read_in_utf8_only_is_refused_saying_how_to_convert(tmp_path):
    from .conftest import run_cli
    path = tmp_path / "sar.txt"
    text = ("Linux 5.15.0-91-generic (web1) \t03/01/2024 \t_x86_64_\t(4 CPU)\n\n"
            "10:00:01 AM     CPU     %user     %nice   %system   %iowait    %steal     %idle\n"
            "10:10:01 AM     all      2.00      0.00      1.00      0.50      0.00     96.50\n"
            "10:20:01 AM     all      3.00      0.00      1.00      0.50      0.00     95.50\n")
    path.write_bytes(text.encode("utf-16"))
    ran = run_cli("analyze", path)
    assert ran.returncode == 2
    assert ran.stderr == (f"sarsleuth: no usable input: {path}: UTF-16 text that reads as sar-text, which is "
                          "read in UTF-8 only (convert it: iconv -f UTF-16 -t UTF-8)\n")


def test_zstd_long_window_is_read(tmp_path):
    """``zstd --long=31`` writes a 2 GiB window; the default decoder limit
    (128 MiB) would call it damaged."""
    zstandard = pytest.importorskip("zstandard", reason="zstandard (the zstd extra) is not installed")
    raw = as_bytes(syslog_lines(2000))
    params = zstandard.ZstdCompressionParameters.from_level(3, window_log=31, enable_ldm=True)
    # streamed: no content size in the frame, so the window stays at 2 GiB
    cobj = zstandard.ZstdCompressor(compression_params=params).compressobj()
    data = cobj.compress(raw) + cobj.flush()
    with pytest.raises(zstandard.ZstdError):
        zstandard.ZstdDecompressor().decompressobj().decompress(data)
    path = tmp_path / "messages.zst"
    path.write_bytes(data)
    src = parse(path, options=ParseOptions(year=2014))
    assert (len(src.events), src.records, src.warnings) == (200, 2000, [])


def test_bursts_beyond_the_cap_keep_exact_counts(tmp_path, monkeypatch):
    """Every line matching: past the cap, a burst is counted, not kept."""
    monkeypatch.setattr(assembly, "KEEP_ALL_EVENTS", 500)
    monkeypatch.setattr(assembly, "BURST_CAP", 20)
    line = ('2024/03/12 03:{m:02d}:{s:02d} [error] 2211#0: *{c} upstream timed out (110: Connection timed out) '
            'while reading response header from upstream, client: 10.12.0.20, server: img.example.com, '
            'request: "GET /img/a.jpg HTTP/1.1", upstream: "http://10.20.0.11:8080/img/a.jpg"\n')
    path = tmp_path / "error.log"
    # 30 minutes, 200 timeouts a minute
    path.write_text("".join(line.format(m=c // 200, s=(c % 200) * 60 // 200, c=c) for c in range(6000)))
    src = parse(path, options=ParseOptions(year=2024))
    ev = src.events
    assert int(ev["count"].sum()) == 6000
    kept = 500 + 27 * 20  # minutes 0-1 (400 events) and 100 of minute 2 kept whole, then 20 a minute
    assert len(ev) == kept
    assert src.meta["aggregated_events"] == 6000 - kept
    assert any(f"{6000 - kept} event(s) beyond 20" in w for w in src.warnings)
    assert set(ev["kind"]) == {"upstream-timeout"}


def test_user_pattern_cannot_stall_the_scan(tmp_path):
    sig = Signature("runaway-a", "any", (r"(a+)+$",))
    path = tmp_path / "messages"
    path.write_bytes(as_bytes(syslog_lines(100)) + b"May  6 16:00:00 web1 app[1]: " + b"a" * 40 + b"!\n")
    t0 = time.perf_counter()
    src = parse(path, options=ParseOptions(year=2014, signatures=(sig,)))
    assert time.perf_counter() - t0 < 10
    assert len(src.events) == 10


def test_the_scan_starts_no_child_process(tmp_path, monkeypatch):
    """No grep or other program run beside the scan, whose failure could silently lose events."""
    def refuse(*args, **kwargs):
        raise AssertionError("child process started")
    monkeypatch.setattr(subprocess, "Popen", refuse)
    path = tmp_path / "messages"
    path.write_bytes(as_bytes(syslog_lines(20_000)))
    src = parse(path, options=ParseOptions(year=2014))
    assert len(src.events) == 2000


def test_gzip_without_isal(tmp_path, monkeypatch):
    """``isal`` is optional: zlib inflates the same, cut or whole."""
    import sys
    monkeypatch.setitem(sys.modules, "isal", None)
    lines = syslog_lines(20_000)
    data = gzip.compress(as_bytes(lines[:5000])) + gzip.compress(as_bytes(lines[5000:]))
    whole, cut = tmp_path / "messages.gz", tmp_path / "messages.1.gz"
    whole.write_bytes(data)
    cut.write_bytes(data[: len(data) * 3 // 4])
    src = parse(whole, options=ParseOptions(year=2014))
    assert (len(src.events), src.records, src.warnings) == (2000, 20000, [])
    src = parse(cut, options=ParseOptions(year=2014))
    assert 1000 < len(src.events) < 2000 and "cut short" in src.warnings[0]


def test_decompression_thread_stops_with_the_reader(tmp_path):
    """A reader that stops early (an error, a closed pipe) leaves no
    decompression thread behind."""
    import threading
    from sarsleuth.inputs.parsers.logs.blocks import normalised_chunks
    path = tmp_path / "messages.gz"
    path.write_bytes(gzip.compress(as_bytes(syslog_lines(20_000))))
    chunks = normalised_chunks(path, [], block_bytes=4096)
    assert next(chunks).startswith(b"May  6 15:00:00 web1 kernel:")
    chunks.close()
    assert not [t for t in threading.enumerate() if t.name == "sarsleuth-decompress"]


def test_unknown_engine_in_the_environment_means_the_default(tmp_path, monkeypatch):
    monkeypatch.setenv("SARSLEUTH_LOG_ENGINE", "grep")
    path = tmp_path / "messages"
    path.write_bytes(as_bytes(syslog_lines(100)))
    src = parse(path, options=ParseOptions(year=2014))
    assert len(src.events) == 10 and src.meta["engine"] == log_engine.default_engine()
