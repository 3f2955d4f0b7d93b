"""One clock for a case: dmesg uptime alignment, syslog years, zones per host,
DST folds and gaps, --tz and --window on the settled clock."""
from __future__ import annotations

import shutil

import pandas as pd

from sarsleuth.timebase import dmesg as dmesg_clock
from sarsleuth.timebase import settle
from sarsleuth.timebase.years import choose_base_year, rollover_segments
from sarsleuth.inputs.parsers import parse, registry
from sarsleuth.inputs.parsers.base import ParseOptions


def test_dmesg_aligned_to_kern_log_without_hand_anchor(corpus):
    logs = corpus / "logs"
    kern = parse(logs / "kernlog-ubuntu-5.4-two-boots-hotsos-compute4.log")
    dmesg = parse(logs / "dmesg-ubuntu-5.4-hotsos-compute4.log")
    assert dmesg.meta["volume_unit"] == "uptime-minute"
    notes = dmesg_clock.align([kern, dmesg], registry())
    assert len(notes) == 1 and "aligned" in notes[0] and "kernlog" in notes[0]
    clock = dmesg.meta["clock"]
    assert clock["absolute"] and clock["pairs"] >= 2 and clock["uncertainty_s"] <= 2.0
    # ground truth (clock-anchors file): the audit anchor puts boot 0 at 22:38:07.97 UTC,
    # journal boot 0 starts at 22:38:11
    assert abs((clock["boot"] - pd.Timestamp("2022-02-09 22:38:07.97")).total_seconds()) < 2.0
    # the last dmesg lines are in kern.log at 16:19:13 and 16:19:14
    vol = dmesg.meta["volume"]
    assert dmesg.meta["volume_unit"] == "minute" and vol.index.max() == pd.Timestamp("2022-02-10 16:19")
    for uptime, wall in ((63666.546078, "2022-02-10 16:19:13"), (63667.161082, "2022-02-10 16:19:14")):
        aligned = clock["boot"] + pd.Timedelta(seconds=uptime)
        assert abs((aligned - pd.Timestamp(wall)).total_seconds()) < 2.0


def test_dmesg_events_get_wall_clock(corpus, tmp_path):
    """An OOM report in both a kern.log and the dmesg of the same boot."""
    kern = tmp_path / "kern.log"
    kern.write_text(
        "Nov 15 06:46:39 ip-172-31-23-209 kernel: [65267.037327] Memory cgroup out of memory: Kill process 22232 "
        "(nginx) score 1182 or sacrifice child\n"
        "Nov 15 06:46:39 ip-172-31-23-209 kernel: [65267.042541] Killed process 22964 (nginx) total-vm:14136kB, "
        "anon-rss:844kB, file-rss:4kB, shmem-rss:0kB\n")
    dmesg = tmp_path / "dmesg"
    dmesg.write_text(
        "[65200.000001] e1000: eth0 NIC Link is Up 1000 Mbps Full Duplex, Flow Control: RX\n"
        "[65267.037327] Memory cgroup out of memory: Kill process 22232 (nginx) score 1182 or sacrifice child\n"
        "[65267.042541] Killed process 22964 (nginx) total-vm:14136kB, anon-rss:844kB, file-rss:4kB, shmem-rss:0kB\n"
        "[65300.500000] TCP: time wait bucket table overflow\n")
    k, d = parse(kern, options=ParseOptions(year=2019)), parse(dmesg)
    assert d.events["timestamp"].isna().all() and not d.events["aligned"].any()
    dmesg_clock.align([k, d], registry())
    ev = d.events[d.events["kind"] != "nic-link-up"]
    assert ev["aligned"].all()
    assert abs((ev["timestamp"].iloc[0] - pd.Timestamp("2019-11-15 06:46:39.5")).total_seconds()) < 1.0
    assert abs((ev["timestamp"].iloc[1] - pd.Timestamp("2019-11-15 06:47:12.96")).total_seconds()) < 1.0


def test_dmesg_alone_uses_its_audit_records(corpus):
    dmesg = parse(corpus / "logs" / "dmesg-ubuntu-5.4-hotsos-compute4.log")
    notes = dmesg_clock.align([dmesg], registry())
    assert "audit" in notes[0]
    boot = dmesg.meta["clock"]["boot"]
    assert str(boot.tz) == "UTC"
    assert abs((boot - pd.Timestamp("2022-02-09 22:38:07.97", tz="UTC")).total_seconds()) < 1.0


def test_dmesg_without_anchor_stays_unaligned(corpus):
    dmesg = parse(corpus / "logs" / "dmesg-syn-flooding-request-sock-4.4.log")
    notes = dmesg_clock.align([dmesg], registry())
    assert "unaligned" in notes[0]
    assert dmesg.events["timestamp"].isna().all() and not dmesg.events["aligned"].any()
    assert dmesg.meta["clock"]["anchor"] is None


def test_dmesg_aligned_from_a_dmesg_T_copy(tmp_path):
    raw = tmp_path / "dmesg"
    raw.write_text("[47082.653915] nginx invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE), order=0\n"
                   "[47090.000000] Out of memory: Killed process 604 (nginx) total-vm:1000kB, anon-rss:900kB\n")
    human = tmp_path / "dmesg-T"
    human.write_text("[Thu Jun 30 04:27:42 2022] nginx invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE), "
                     "order=0\n")
    r, h = parse(raw), parse(human)
    notes = dmesg_clock.align([r, h], registry())
    assert "dmesg -T" in notes[0]
    assert abs((r.events["timestamp"].iloc[1] - pd.Timestamp("2022-06-30 04:27:49.85")).total_seconds()) < 1.0


def test_syslog_year_taken_from_other_sources(corpus, tmp_path):
    syslog = tmp_path / "messages"
    shutil.copy(corpus / "logs" / "pair-A-syslog-segfault-statsd-2.6.32.log", syslog)
    s = parse(syslog)
    n = parse(corpus / "logs" / "pair-A-nginx-error-signal11-statsd-2.6.32.log")
    assert s.meta["year_from"] == "mtime" and s.events["timestamp"].iloc[0].year != 2012
    notes = settle([s, n], registry()).notes
    assert s.meta["year_from"] == "other-sources" and any("syslog year taken from the other sources" in x for x in notes)
    assert s.events["timestamp"].iloc[0] == pd.Timestamp("2012-12-12 01:25:56")
    assert s.meta["volume"].index[0] == pd.Timestamp("2012-12-12 01:25")
    assert n.events["timestamp"].iloc[0] == s.events["timestamp"].iloc[0]


def test_strong_year_is_kept(corpus):
    s = parse(corpus / "logs" / "pair-A-syslog-segfault-statsd-2.6.32.log", options=ParseOptions(year=2013))
    n = parse(corpus / "logs" / "pair-A-nginx-error-signal11-statsd-2.6.32.log")
    settle([s, n], registry())
    assert s.events["timestamp"].iloc[0].year == 2013


def test_rollover_rules():
    keys = [(12, 3, 9, 23), (12, 31, 23, 59), (1, 3, 9, 47), (1, 2, 8, 0), (5, 18, 15, 13), (4, 22, 10, 35)]
    assert rollover_segments(keys) == [0, 0, 1, 1, 1, 1]       # small steps back are disorder, not a new year
    year, source = choose_base_year(keys, rollover_segments(keys), mtime=pd.Timestamp("2007-11-03"))
    assert (year, source) == (2006, "mtime")             # Dec 2006, then Jan..May 2007
    feb29 = [(2, 29, 19, 54)]
    year, _ = choose_base_year(feb29, [0], mtime=pd.Timestamp("2026-03-01"))
    assert year == 2024


def _eighteen_months(path):
    """rsyslog lines every nine days from March 2023 to August 2024 (no
    year in them), OOM kills in July 2024, the file last written on
    2024-09-01."""
    import datetime as dt
    import os
    lines, d = [], dt.datetime(2023, 3, 1, 10, 0, 0)
    while d < dt.datetime(2024, 9, 1):
        stamp = f"{d:%b} {d.day:2d} {d:%H:%M:%S}"
        lines.append(f"{stamp} web1 CROND[100]: (root) CMD (run-parts /etc/cron.hourly)")
        if (d.year, d.month) == (2024, 7):
            lines.append(f"{stamp} web1 kernel: Out of memory: Killed process 4242 (nginx) total-vm:1021908kB, "
                         "anon-rss:524288kB, file-rss:4096kB, shmem-rss:0kB")
        d += dt.timedelta(days=9)
    path.write_text("\n".join(lines) + "\n")
    stamp = dt.datetime(2024, 9, 1).timestamp()
    os.utime(path, (stamp, stamp))


def test_yearless_lines_that_run_across_years_say_which_years_were_taken(tmp_path):
    """A syslog of eighteen months without years: its months turn back
    once, so it is read as 2023 to 2024; the note said only "2023 is taken
    from the file's modification time" (a file written in 2024), and with
    --year nothing at all."""
    import json

    from sarsleuth.render.formats.markdown import md_escape

    from .conftest import run_cli
    log = tmp_path / "messages"
    _eighteen_months(log)
    for args, note in (
        ((), f"{log}: its lines carry no year; 2024, the year of its last lines, is taken from the file's "
             "modification time, and its months turn back once, so it is read as 2023 to 2024 (a guess: give "
             "--year, the year of its first line, to be sure; a gap of a year or more between two lines cannot "
             "be seen)"),
        (("--year", "2023"), f"{log}: its lines carry no year and their months turn back once: read as 2023 to "
                             "2024, each turn a new year (--year 2023 is the year of its first lines; a gap of a "
                             "year or more between two lines cannot be seen)")):
        ran = run_cli("analyze", log, *args, "--format", "json")
        doc = json.loads(ran.stdout)
        assert note in doc["notes"], doc["notes"]
        assert (doc["sources"][0]["start"], doc["sources"][0]["end"]) == ("2023-03-01T10:00:00", "2024-08-31T10:00:59")
        assert [f["start"] for f in doc["findings"] if f["detector"] == "oom-kill"] == [
            "2024-07-08T10:00:00", "2024-07-17T10:00:00", "2024-07-26T10:00:00"]
        assert md_escape(note) in run_cli("analyze", log, *args, "--format", "markdown").stdout
