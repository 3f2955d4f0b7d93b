"""Damaged sa files: everything readable is read, and every loss is counted.

Damage is made the way it happens (a header byte flipped, a copy cut short,
a half-downloaded compressed file, a clock stepped back) on a real file
sysstat 9.0.4 wrote: 36 records of 10,876 bytes.
"""
from __future__ import annotations

import bz2
import gzip
import lzma
import struct

import pytest

from sarsleuth.errors import InputError
from sarsleuth.inputs.parsers.base import ParseOptions
from sarsleuth.inputs.parsers.sa.layout import read_layout
from sarsleuth.inputs.parsers.sa.parser import SaBinaryParser
from sarsleuth.inputs.parsers.sa.records import Walker

NAME = "pcp-sysstat-9.0.4-0x2170"


def parse(path):
    return SaBinaryParser.parse(path, ParseOptions())


@pytest.fixture(scope="module")
def original(corpus):
    path = corpus / "sysstat" / "binary" / NAME
    raw = path.read_bytes()
    layout = read_layout(str(path), raw)
    index = Walker(str(path), raw, layout, []).walk()
    return raw, [int(o) for o in index.offsets], layout


def _write(tmp_path, data, name="sa25"):
    path = tmp_path / name
    path.write_bytes(bytes(data))
    return path


def test_one_bad_record_header_loses_one_record(original, tmp_path):
    raw, offsets, layout = original
    data = bytearray(raw)
    data[offsets[10] + layout.record.type_off] = 0x77        # record type 119
    source = parse(_write(tmp_path, data))
    assert source.records == 35
    [warning] = source.warnings
    assert "invalid record header" in warning and "about 1 record" in warning
    assert f"reading again at byte {offsets[11]}" in warning


def test_two_damaged_places_are_both_counted(original, tmp_path):
    raw, offsets, layout = original
    data = bytearray(raw)
    for k in (5, 6, 7, 30):
        data[offsets[k] + layout.record.type_off + 1] = 99   # hour 99
    source = parse(_write(tmp_path, data))
    assert source.records == 32
    assert len(source.warnings) == 2
    assert "about 3 records" in source.warnings[0] and "about 1 record," in source.warnings[1]


def test_a_file_cut_short_keeps_the_complete_records(original, tmp_path):
    raw, offsets, _layout = original
    source = parse(_write(tmp_path, raw[:offsets[20] + 500]))
    assert source.records == 20
    assert "records from here on skipped (500 bytes)" in source.warnings[-1]


@pytest.mark.parametrize("suffix, compress", [("gz", gzip.compress), ("xz", lzma.compress)])
def test_a_half_downloaded_compressed_file_yields_the_records_before_the_damage(original, tmp_path, suffix,
                                                                               compress):
    raw, offsets, _layout = original
    packed = compress(raw)
    source = parse(_write(tmp_path, packed[:len(packed) // 2], f"sa25.{suffix}"))
    assert 10 <= source.records < 36
    assert "compressed stream damaged after" in source.warnings[0]
    assert "records from here on skipped" in source.warnings[-1]
    whole = parse(_write(tmp_path, packed, f"whole.{suffix}"))
    assert whole.records == 36 and whole.warnings == []


def test_a_cut_compressed_file_with_nothing_decodable_is_one_line_error(original, tmp_path):
    raw, _offsets, _layout = original
    packed = bz2.compress(raw)              # one 900 kB block: nothing before its end
    with pytest.raises(InputError, match="damaged compressed stream"):
        parse(_write(tmp_path, packed[:len(packed) // 2], "sa25.bz2"))


def test_a_clock_stepped_a_day_back_is_a_warning_and_a_segment_break(original, tmp_path):
    raw, offsets, layout = original
    data = bytearray(raw)
    at = offsets[20] + layout.record.ust_off
    ust = struct.unpack_from("<Q", data, at)[0]
    struct.pack_into("<Q", data, at, ust - 86400)
    source = parse(_write(tmp_path, data))
    assert source.records == 36
    assert any("record time goes back" in w for w in source.warnings)
    stamps = source.metrics["timestamp"].dt.tz_convert("UTC")
    # the stepped record only starts a new segment: no figure for it, no
    # figure computed over a day-long interval
    assert (stamps.dt.tz_localize(None).astype("int64") // 10 ** 9 != ust - 86400).all()
    io = source.metrics[(source.metrics["section"] == "io") & (source.metrics["metric"] == "tps")]
    assert len(io) == 34 and io["value"].max() < 20


def test_rhel5_format_resynchronises_too(corpus, tmp_path):
    """0x2169 records are fixed structures: the restart record at 0xf0 (464
    bytes), then statistics records of 1968 bytes."""
    raw = bytearray((corpus / "sysstat" / "binary" / "pcp-rhel5-sa20-0x2169").read_bytes())
    fifth = 0xF0 + 464 + 4 * 1968
    raw[fifth + 448] = 0x55                  # its record type
    source = parse(_write(tmp_path, raw, "sa20"))
    assert source.records == 36
    assert "invalid record; 1968 bytes skipped, about 1 record" in source.warnings[0]


# --- every header field against the format's own limits ------------------------------------------

_VERSIONS = __import__("pathlib").Path(__file__).resolve().parent.parent / "samples" / "sysstat-versions"


def _sample(release: str) -> bytes:
    return gzip.decompress((_VERSIONS / release / "sa.gz").read_bytes())


def _patched(raw: bytes, off: int, fmt: str, was, value) -> bytes:
    """``raw`` with the field at ``off`` set to ``value``, after checking
    it held ``was`` (the field is where the format puts it)."""
    assert struct.unpack_from(fmt, raw, off)[0] == was, (off, struct.unpack_from(fmt, raw, off))
    return raw[:off] + struct.pack(fmt, value) + raw[off + struct.calcsize(fmt):]


# (release written by, offset, struct format, value there, absurd value, what the refusal says)
HEADER_FIELDS = [
    # 0x2175 (sysstat 11.7.1+): magic of 76 bytes, then the file header
    ("12.7.9", 92, "<I", 3, 0, "file header claims 0 CPU lines (sysstat writes 1 to 8193)"),
    ("12.7.9", 92, "<I", 3, 100_000, "file header claims 100000 CPU lines (sysstat writes 1 to 8193)"),
    ("12.7.9", 84, "<Q", 100, 0, "file header claims 0 clock ticks a second (HZ; 100 on Linux)"),
    ("12.7.9", 84, "<Q", 100, 1 << 40, f"file header claims {1 << 40} clock ticks a second (HZ; 100 on Linux)"),
    ("12.7.9", 142, "B", 8, 5, "file header says a C long is 5 bytes (4 or 8)"),
    ("12.7.9", 100, "<I", 126, 2_000_000, "file header dated in the year 2000000"),
    ("12.7.9", 141, "B", 10, 12, "file header dated in month 13"),
    ("12.7.9", 140, "B", 23, 0, "file header dated on day 0 of a month"),
    ("12.7.9", 428, "<I", 1, 7, "activity 1: has_nr is 7 (0 or 1)"),
    ("12.7.9", 420, "<I", 3, 8194, "activity 1: item count 8194 above the 8193 sysstat allows it"),
    # 0x2173 (10.3.1-11.6): magic of 76 bytes, the old file header
    ("11.2.0", 99, "B", 8, 0, "file header says a C long is 0 bytes (4 or 8)"),
    ("11.2.0", 92, "<I", 2, 200, "200 volatile activities declared, more than the 32 activities of the file"),
    ("11.2.0", 97, "B", 10, 40, "file header dated in month 41"),
    # 0x2171 (9.1.6-10.2) and 0x2170 (9.0-9.1.5): an 8-byte magic, the old file header
    ("10.1.5", 23, "B", 8, 16, "file header says a C long is 16 bytes (4 or 8)"),
    ("10.1.5", 20, "B", 23, 32, "file header dated on day 32 of a month"),
    ("9.1.5", 23, "B", 8, 3, "file header says a C long is 3 bytes (4 or 8)"),
]


@pytest.mark.parametrize("release,off,fmt,was,value,said", HEADER_FIELDS,
                         ids=[f"{r}@{o}={v}" for r, o, _f, _w, v, _s in HEADER_FIELDS])
def test_an_absurd_header_field_refuses_the_file_naming_its_byte(tmp_path, release, off, fmt, was, value, said):
    """Real files of each format (recorded by that sysstat release), one
    header field set past the format's own limit (sa.h, activity.c): the
    file is refused naming the field and its byte, where the value used to
    be taken (a C long of 5 bytes read as 4, 100,000 CPUs as the host's)."""
    path = _write(tmp_path, _patched(_sample(release), off, fmt, was, value))
    with pytest.raises(InputError) as err:
        parse(path)
    assert err.value.one_line() == f"{path} (byte {off}): {said}"


def test_the_0x2169_header_is_checked_too(corpus, tmp_path):
    """sysstat 7.0 (RHEL 5): the word size byte and the CPU count."""
    raw = (corpus / "sysstat" / "binary" / "pcp-rhel5-sa20-0x2169").read_bytes()
    endian = "<" if struct.unpack_from("<H", raw, 0x24)[0] == 0x2169 else ">"
    for off, fmt, value, said in ((0x2B, "B", 2, "file header says a C long is 2 bytes (4 or 8)"),
                                  (24, endian + "I", 9000, "file header declares 9000 CPUs (at most 8193)")):
        was = struct.unpack_from(fmt, raw, off)[0]
        path = _write(tmp_path, _patched(raw, off, fmt, was, value))
        with pytest.raises(InputError) as err:
            parse(path)
        assert err.value.one_line() == f"{path} (byte {off}): {said}"


def test_the_sysstat_test_file_over_nr_max_is_refused_for_that_reason(corpus, tmp_path):
    """sysstat's own test file of an activity holding more items than its
    nr_max: refused at that count's byte (it was read as a file without
    statistics records)."""
    path = corpus / "sysstat" / "binary" / "data-12.6.0-file_act-nr-nr_max-err"
    with pytest.raises(InputError) as err:
        parse(path)
    assert err.value.one_line() == f"{path} (byte 420): activity 2: item count 2 above the 1 sysstat allows it"
