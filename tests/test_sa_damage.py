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
from sarsleuth.parsers.base import ParseOptions
from sarsleuth.parsers.sa.layout import read_layout
from sarsleuth.parsers.sa.parser import SaBinaryParser
from sarsleuth.parsers.sa.records import Walker

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
