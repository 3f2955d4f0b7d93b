"""The case's clock: zones decided once per host after reading, DST folds and
gaps kept, --tz never duplicating, --window on the settled clock, years
robust to stray lines, hosts kept apart."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import sarsleuth
from sarsleuth.errors import UsageError
from sarsleuth.timebase.years import choose_base_year, rollover_segments
from sarsleuth.timebase.zones import localize_wall

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def _sar_u(path: Path, banner_date: str, times, iowait_at) -> Path:
    rows = [f"Linux 5.15.0-91-generic (db01) \t{banner_date} \t_x86_64_\t(4 CPU)", "",
            "00:00:01        CPU     %user     %nice   %system   %iowait    %steal     %idle"]
    for h, m in times:
        io = iowait_at(h, m)
        rows.append(f"{h:02d}:{m:02d}:01        all      2.00      0.00      1.00     {io:5.2f}      0.00     {97 - io:5.2f}")
    path.write_text("\n".join(rows) + "\n")
    return path


def test_repeated_hour_at_the_autumn_change_is_kept(tmp_path):
    # sar prints local time: at 03:00 CEST the clock goes back to 02:00 CET,
    # so the 02:xx rows appear twice
    times = [(h, m) for h in range(0, 5) for m in range(0, 60, 10) if (h, m) != (0, 0)]
    at = times.index((2, 50)) + 1
    times[at:at] = [(2, m) for m in range(0, 60, 10)]
    path = _sar_u(tmp_path / "sar25", "10/25/2026", times, lambda h, m: 70.0 if (1, 30) <= (h, m) <= (3, 30) else 1.0)
    case = sarsleuth.load(path, tz="Europe/Berlin")
    cpu = case.sar("cpu")
    assert len(cpu) == len(times) == 35
    steps = cpu.index.to_series().diff().dropna().unique()
    assert list(steps) == [pd.Timedelta(minutes=10)]          # one sample every 10 min, none lost
    assert cpu.index[0] == pd.Timestamp("2026-10-24 22:10:01", tz="UTC")
    assert cpu.index[-1] == pd.Timestamp("2026-10-25 03:50:01", tz="UTC")   # 04:50:01 CET
    assert not [f for f in case.findings if f.detector == "sar-gap"]


def test_times_in_the_spring_gap_keep_their_spacing():
    walls = pd.Series(pd.to_datetime(["2026-03-08 01:50:00", "2026-03-08 02:10:00", "2026-03-08 02:30:00",
                                      "2026-03-08 02:59:59"]))
    out = localize_wall(walls, "America/New_York")
    # written by a clock still on EST: 02:10 EST is 03:10 EDT, not 03:00
    assert [t.isoformat() for t in out] == ["2026-03-08T01:50:00-05:00", "2026-03-08T03:10:00-04:00",
                                           "2026-03-08T03:30:00-04:00", "2026-03-08T03:59:59-04:00"]
    assert out.is_unique


def test_syslog_across_the_spring_change(tmp_path):
    log = tmp_path / "messages"
    log.write_text(
        "Mar  8 01:59:30 web1 kernel: [ 100.000000] possible SYN flooding on port 443. Sending cookies.\n"
        "Mar  8 02:10:00 web1 kernel: [ 730.000000] possible SYN flooding on port 443. Sending cookies.\n"
        "Mar  8 03:20:00 web1 kernel: [1330.000000] possible SYN flooding on port 443. Sending cookies.\n")
    case = sarsleuth.load(log, tz="America/New_York", year=2026)
    stamps = case.events["timestamp"].dt.tz_convert("UTC").tolist()
    assert stamps == [pd.Timestamp("2026-03-08 06:59:30", tz="UTC"), pd.Timestamp("2026-03-08 07:10:00", tz="UTC"),
                      pd.Timestamp("2026-03-08 07:20:00", tz="UTC")]


def test_a_stray_line_moves_only_itself():
    keys = [(1, 1, 9, 0), (1, 1, 9, 5), (11, 30, 12, 0), (1, 1, 9, 10), (1, 2, 8, 0)]
    segments = rollover_segments(keys)
    assert segments == [1, 1, 0, 1, 1]
    year, how = choose_base_year(keys, segments, mtime=pd.Timestamp("2026-01-03"))
    assert (year, how) == (2025, "mtime")      # the January lines are 2026, the stray November 2025
    assert rollover_segments([(12, 31, 23, 0), (1, 1, 0, 5)]) == [0, 1]


def test_window_filters_on_the_settled_clock():
    everything = sarsleuth.load(SAMPLES / "nginx-proxy-oom")
    assert len(everything.findings) >= 8
    nothing = sarsleuth.load(SAMPLES / "nginx-proxy-oom", window="2001-01-01T00:00..2001-01-02T00:00")
    assert nothing.findings == [] and nothing.incidents == []
    # naive ends are in the case's zone (+08:00, recorded by sa06)
    part = sarsleuth.load(SAMPLES / "nginx-proxy-oom", window="2014-05-06T15:04..2014-05-06T15:05")
    assert 0 < len(part.findings) < len(everything.findings)
    for f in part.findings:
        if f.start is not None and not pd.isna(f.start):
            end = f.end if f.end is not None and not pd.isna(f.end) else f.start
            assert end >= pd.Timestamp("2014-05-06T15:04", tz="+08:00")
            assert f.start <= pd.Timestamp("2014-05-06T15:05", tz="+08:00")
    # an offset in the window is honoured as such
    utc = sarsleuth.load(SAMPLES / "nginx-proxy-oom", window="2014-05-06T07:04Z..2014-05-06T07:05Z")
    assert sorted(f.title for f in utc.findings) == sorted(f.title for f in part.findings)


def test_tz_contradicting_the_recorded_zone_warns_and_never_duplicates():
    plain = sarsleuth.load(SAMPLES / "nginx-proxy-oom")
    utc = sarsleuth.load(SAMPLES / "nginx-proxy-oom", tz="UTC")
    assert plain.tz == "+08:00" and utc.tz == "UTC"
    assert [w for w in utc.warnings if "--tz UTC contradicts the zone +08:00" in w and "sa06" in w]
    assert len(utc.incidents) == len(plain.incidents)
    assert [(i.category, i.start) for i in utc.incidents] == [(i.category, i.start) for i in plain.incidents]
    # error.log is wall clock of the same host: still on the same instants
    top = utc.incidents[0]
    assert top.start == pd.Timestamp("2014-05-06 06:50:01", tz="UTC")    # where available memory began to fall


def test_bad_window_and_tz_are_usage_errors():
    with pytest.raises(UsageError, match="--window"):
        sarsleuth.load(SAMPLES / "nginx-proxy-oom", window="yesterday")
    with pytest.raises(UsageError, match="end is before start"):
        sarsleuth.load(SAMPLES / "nginx-proxy-oom", window="2014-05-06T16:00..2014-05-06T15:00")
    with pytest.raises(UsageError, match="--tz"):
        sarsleuth.load(SAMPLES / "nginx-proxy-oom", tz="Mars/Olympus")


def test_two_hosts_keep_their_own_years_and_files():
    case = sarsleuth.load(SAMPLES / "tengine-720k", SAMPLES / "nginx-proxy-oom")
    by_host = {tuple(i.hosts): i for i in case.incidents}
    assert by_host[("Cangke_107_176",)].start.year == 2014
    assert by_host[("slbv2test04.cm3",)].start.year == 2016
    # the error.log beside sa06 belongs to that host, not to no host
    errors = case.events[case.events["source"] == "nginx-error"]
    assert len(errors) and set(errors["host"]) == {"Cangke_107_176"}
    assert any("error.log: names no host; taken to be Cangke_107_176" in n for n in case.notes)


def test_a_guessed_year_is_said(corpus):
    case = sarsleuth.load(corpus / "logs" / "messages-tcp-timewait-overflow-ratelimit.log")
    year = case.events["timestamp"].iloc[0].year
    assert any(f"its lines carry no year; {year} is taken from" in n and "--year" in n for n in case.notes)
    given = sarsleuth.load(corpus / "logs" / "messages-tcp-timewait-overflow-ratelimit.log", year=2015)
    assert not any("carry no year" in n for n in given.notes)
    assert given.events["timestamp"].iloc[0].year == 2015
