"""Clock attacks through the command line: a repeated DST hour, times in a
spring gap, a stray line of last year, an sa clock stepped a day back, and
line numbers of short rows deep in a file.  (Unit-level forms:
test_timebase.py, test_sa_damage.py, test_sar_text.py.)"""
from __future__ import annotations

import json
import os
import struct
from datetime import datetime, timezone

import pandas as pd
import pytest

from tests.conftest import run_cli

BANNER = "Linux 5.15.0-91-generic (db01) \t{date} \t_x86_64_\t(4 CPU)"
HEADER = "00:00:01        CPU     %user     %nice   %system   %iowait    %steal     %idle"


def sar_u(times, date, iowait) -> str:
    rows = [BANNER.format(date=date), "", HEADER]
    for h, m, s in times:
        io = iowait(h, m)
        rows.append(f"{h:02d}:{m:02d}:{s:02d}        all      2.00      0.00      1.00     {io:5.2f}      0.00"
                    f"     {97 - io:5.2f}")
    return "\n".join(rows) + "\n"


def analyze_json(*args) -> dict:
    proc = run_cli("analyze", *args, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_berlin_october_repeated_hour_keeps_all_42_records(tmp_path):
    """sar prints local time: 00:00..05:50 every 10 min is 36 wall times, and
    the 02:xx rows come twice (CEST, then CET) -> 42 records, one every 10
    minutes, a 70 % iowait hour across the change, no gap."""
    times = [(h, m, 1) for h in range(6) for m in range(0, 60, 10)]
    at = times.index((3, 0, 1))
    times[at:at] = [(2, m, 1) for m in range(0, 60, 10)]
    assert len(times) == 42
    path = tmp_path / "sar25.txt"
    path.write_text(sar_u(times, "10/25/2026", lambda h, m: 70.0 if 2 <= h < 3 else 1.0))
    doc = analyze_json(path, "--tz", "Europe/Berlin")
    [src] = doc["sources"]
    assert src["records"] == 42
    start, end = pd.Timestamp(src["start"]), pd.Timestamp(src["end"])
    assert start == pd.Timestamp("2026-10-24 22:00:01", tz="UTC")            # 00:00:01 CEST
    assert end == pd.Timestamp("2026-10-25 04:50:01", tz="UTC")              # 05:50:01 CET
    assert (end - start) == pd.Timedelta(minutes=10 * 41)                  # every record 10 min apart
    assert not [f for f in doc["findings"] if f["detector"] == "sar-gap"]
    io = [f for f in doc["findings"] if f["detector"] == "iowait-spike"]
    assert io, [f["detector"] for f in doc["findings"]]
    # both 02:xx hours (two real hours) are the spike, not one
    assert pd.Timestamp(io[0]["end"]) - pd.Timestamp(io[0]["start"]) >= pd.Timedelta(minutes=100)


def test_new_york_spring_forward_times_keep_their_spacing(tmp_path):
    """Lines stamped 02:10, 02:30, 02:59:59 on the spring-forward day (a
    clock still on EST): distinct instants, spaced as written."""
    log = tmp_path / "messages"
    stamps = ["01:50:00", "02:10:00", "02:30:00", "02:59:59"]
    log.write_text("".join(f"Mar  8 {t} web1 kernel: [{100 + 60 * i}.000000] possible SYN flooding on port 443. "
                           f"Sending cookies.\n" for i, t in enumerate(stamps)))
    proc = run_cli("parse", log, "--tz", "America/New_York", "--year", "2026", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(ln) for ln in proc.stdout.splitlines()]
    got = [pd.Timestamp(e["timestamp"]).tz_convert("UTC") for e in events]
    assert got == [pd.Timestamp(f"2026-03-08 {t}", tz="UTC") + pd.Timedelta(hours=5) for t in stamps]


def test_one_stray_november_line_after_january_moves_only_itself(tmp_path):
    """A `Nov 30` line pasted among January lines (file written on 3 Jan):
    only that line is the year before."""
    log = tmp_path / "messages"
    days = [(1, "09:00:00"), (1, "09:05:00"), (1, "10:00:00")]
    lines = [f"Jan  {d} {t} web1 kernel: [{1000 + i}.000000] possible SYN flooding on port 443. Sending cookies."
             for i, (d, t) in enumerate(days)]
    lines.insert(2, "Nov 30 12:00:00 web1 kernel: [5.000000] possible SYN flooding on port 80. Sending cookies.")
    lines += [f"Jan  2 0{h}:00:00 web1 kernel: [{9000 + h}.000000] possible SYN flooding on port 443. "
              f"Sending cookies." for h in range(1, 6)]
    log.write_text("\n".join(lines) + "\n")
    written = datetime(2026, 1, 3, 8, 0, tzinfo=timezone.utc).timestamp()
    os.utime(log, (written, written))
    proc = run_cli("parse", log, "--tz", "UTC", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(ln) for ln in proc.stdout.splitlines()]
    years = [(e["message"].split("port ")[1].split(".")[0], pd.Timestamp(e["timestamp"]).year) for e in events]
    assert [y for p, y in years if p == "80"] == [2025], years
    assert [y for p, y in years if p == "443"] == [2026] * 8, years


@pytest.fixture(scope="module")
def sa_file(corpus):
    from sarsleuth.inputs.parsers.sa.layout import read_layout
    from sarsleuth.inputs.parsers.sa.records import Walker
    path = corpus / "sysstat" / "binary" / "pcp-sysstat-9.0.4-0x2170"
    raw = path.read_bytes()
    layout = read_layout(str(path), raw)
    index = Walker(str(path), raw, layout, []).walk()
    return raw, [int(o) for o in index.offsets], layout


def test_sa_clock_a_day_back_is_a_segment_break_not_a_gap_or_a_day_long_finding(sa_file, tmp_path):
    """Parser level: test_sa_damage.py::test_a_clock_stepped_a_day_back_is_a_warning_and_a_segment_break."""
    raw, offsets, layout = sa_file
    data = bytearray(raw)
    at = offsets[20] + layout.record.ust_off
    struct.pack_into("<Q", data, at, struct.unpack_from("<Q", data, at)[0] - 86400)
    path = tmp_path / "sa25"
    path.write_bytes(bytes(data))
    doc = analyze_json(path, "--tz", "UTC")
    assert any("record time goes back" in w for w in doc["warnings"]), doc["warnings"]
    assert not [f for f in doc["findings"] if f["detector"] == "sar-gap"], doc["findings"]
    for f in doc["findings"]:
        if f["start"] and f["end"]:
            assert pd.Timestamp(f["end"]) - pd.Timestamp(f["start"]) < pd.Timedelta(hours=12), f
    [src] = doc["sources"]
    assert pd.Timestamp(src["end"]) - pd.Timestamp(src["start"]) < pd.Timedelta(hours=12)


def test_short_row_deep_in_a_sar_text_names_its_own_line(tmp_path):
    """Short-row form near the top: test_sar_text.py::test_short_row_warning_names_its_own_line."""
    times = [(h, m, 1) for h in range(0, 24) for m in range(0, 60, 10)][1:]
    text = sar_u(times, "11/21/2026", lambda h, m: 1.0).splitlines()
    short = 3 + 120                     # the 120th row
    text[short - 1] = text[short - 1].rsplit("     ", 3)[0]
    path = tmp_path / "sar-u.txt"
    path.write_text("\n".join(text) + "\n")
    proc = run_cli("parse", path, "--tz", "UTC", "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    said = [ln for ln in proc.stderr.splitlines() if "shorter than their header" in ln]
    assert said and f"{path}:{short}:" in said[0], proc.stderr


def test_a_clock_that_wrote_spring_gap_times_keeps_its_offset_after_them(tmp_path):
    """sar rows 01:50, 02:10, 02:30, 02:59:59, 03:20 on New York's spring
    day: a clock that wrote 02:xx had not moved, so 03:20 is EST too (the
    rows stay in order, 20 minutes after 02:59:59, none before it)."""
    path = tmp_path / "sar08.txt"
    path.write_text(sar_u([(1, 50, 0), (2, 10, 0), (2, 30, 0), (2, 59, 59), (3, 20, 0)], "03/08/2026",
                          lambda h, m: 1.0))
    doc = analyze_json(path, "--tz", "America/New_York")
    [src] = doc["sources"]
    assert src["records"] == 5
    assert pd.Timestamp(src["start"]) == pd.Timestamp("2026-03-08 06:50:00", tz="UTC")
    assert pd.Timestamp(src["end"]) == pd.Timestamp("2026-03-08 08:20:00", tz="UTC")
    from sarsleuth.timebase.zones import localize_wall
    walls = pd.Series(pd.to_datetime(["2026-03-08 02:59:59", "2026-03-08 03:20:00", "2026-03-08 00:00:00",
                                      "2026-03-08 03:20:00"]))
    got = [t.tz_convert("UTC").strftime("%H:%M:%S") for t in localize_wall(walls, "America/New_York")]
    # a series that starts over (00:00) is read afresh: its 03:20 is summer time
    assert got == ["07:59:59", "08:20:00", "05:00:00", "07:20:00"]
