"""journalctl exports."""
from __future__ import annotations

import json

import pandas as pd

from sarsleuth.inputs.parsers import parse, registry, sniff


def _record(us, message, transport="kernel", mono=None, ident="kernel", pid=None, prio="3"):
    rec = {"__REALTIME_TIMESTAMP": str(us), "_BOOT_ID": "901c1e96f7bd44a28a0d69d9933a9a75",
           "_TRANSPORT": transport, "PRIORITY": prio, "SYSLOG_IDENTIFIER": ident,
           "MESSAGE": message, "_HOSTNAME": "compute4"}
    if mono is not None:
        rec["_SOURCE_MONOTONIC_TIMESTAMP"] = str(mono)
    if pid is not None:
        rec["_PID"] = str(pid)
    return json.dumps(rec, ensure_ascii=False)


def test_journal_json(tmp_path):
    path = tmp_path / "journal.json"
    path.write_text("\n".join([
        _record(1644509953546078, "nginx invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), order=0",
                mono=63666546078),
        _record(1644509953546100, "CPU: 3 PID: 4242 Comm: nginx Not tainted 5.4.0-97-generic", mono=63666546100),
        _record(1644509953600000, "Out of memory: Killed process 4242 (nginx) total-vm:4194304kB, "
                "anon-rss:4000000kB, file-rss:0kB, shmem-rss:0kB", mono=63666600000),
        _record(1644509960000000, "nginx.service: Main process exited, code=killed, status=9/KILL",
                transport="journal", ident="systemd", pid=1, prio="6"),
        json.dumps({"__REALTIME_TIMESTAMP": "1644509961000000", "_TRANSPORT": "stdout", "_COMM": "nginx",
                    "_PID": "4300", "MESSAGE": [84, 111, 111, 32, 109, 97, 110, 121, 32, 111, 112, 101, 110,
                                                32, 102, 105, 108, 101, 115]}),
    ]) + "\n")
    assert sniff(path)[0] == "journal"
    src = parse(path)
    assert src.host == "compute4" and src.tz == "UTC" and src.meta["format"] == "json"
    ev = src.events
    assert list(ev["kind"]) == ["oom-invoked", "oom-kill", "service-exit", "too-many-open-files"]
    assert ev.iloc[0]["timestamp"] == pd.Timestamp("2022-02-10 16:19:13.546078", tz="UTC")
    assert (ev.iloc[0]["pid"], ev.iloc[0]["uptime"]) == (4242, 63666.546078)
    assert (ev.iloc[1]["pid"], ev.iloc[1]["process"], ev.iloc[1]["level"]) == (4242, "nginx", "err")
    assert (ev.iloc[3]["process"], ev.iloc[3]["pid"], ev.iloc[3]["message"]) == ("nginx", 4300, "Too many open files")
    assert src.meta["volume"].sum() == 5
    from sarsleuth.timebase import settle
    settle([src], registry(), tz="Asia/Shanghai")
    shanghai = src.events
    assert shanghai["timestamp"].iloc[0] == pd.Timestamp("2022-02-11 00:19:13.546078", tz="Asia/Shanghai")


def test_journal_short_with_header_year(tmp_path):
    path = tmp_path / "journalctl.txt"
    path.write_text(
        "-- Logs begin at Fri 2022-02-04 09:34:04 UTC, end at Thu 2022-02-10 16:19:27 UTC. --\n"
        "Feb 10 16:19:13 compute4 kernel: nginx invoked oom-killer: gfp_mask=0x100cca, order=0\n"
        "Feb 10 16:19:13 compute4 kernel: CPU: 3 PID: 4242 Comm: nginx Not tainted 5.4.0-97-generic\n"
        "Feb 10 16:19:13 compute4 kernel: Out of memory: Killed process 4242 (nginx) total-vm:4194304kB, "
        "anon-rss:4000000kB, file-rss:0kB, shmem-rss:0kB\n"
        "-- Boot 901c1e96f7bd44a28a0d69d9933a9a75 --\n"
        "Feb 10 16:20:00 compute4 systemd[1]: nginx.service: Main process exited, code=killed, status=9/KILL\n")
    assert sniff(path)[0] == "journal"
    src = parse(path)
    assert src.meta["year_from"] == "file" and src.host == "compute4"
    kernel = src.events[src.events["kind"] != "service-exit"]
    # the header says the lines are UTC (journalctl --utc, or a host on UTC)
    assert list(kernel["timestamp"]) == [pd.Timestamp("2022-02-10 16:19:13", tz="UTC")] * 2
    assert list(kernel["pid"]) == [4242, 4242]


def _short(header_zones: tuple) -> str:
    first, last = header_zones
    return (f"-- Logs begin at Sat 2020-04-04 12:49:26 {first}, end at Thu 2020-06-04 21:29:13 {last}. --\n"
            "Jun 04 21:28:55 PC kernel: Out of memory: Killed process 4242 (nginx) total-vm:4194304kB, "
            "anon-rss:4000000kB, file-rss:0kB, shmem-rss:0kB\n")


def test_the_zone_journalctl_s_header_names_for_sure_places_its_lines(tmp_path):
    path = tmp_path / "journalctl.txt"
    path.write_text(_short(("+09", "+09")))         # a zone with no abbreviation (Asia/Yakutsk)
    (when,) = parse(path).events["timestamp"]
    assert when == pd.Timestamp("2020-06-04 21:28:55+09:00")
    path.write_text(_short(("GMT", "GMT")))
    assert parse(path).events["timestamp"].iloc[0] == pd.Timestamp("2020-06-04 21:28:55", tz="UTC")
    # short-full prints the same zone on each line: read the same way (it stopped the file)
    path.write_text("Thu 2020-06-04 21:28:55 +09 PC kernel: Out of memory: Killed process 4242 (nginx) "
                    "total-vm:4194304kB, anon-rss:4000000kB, file-rss:0kB, shmem-rss:0kB\n")
    assert parse(path).events["timestamp"].iloc[0] == pd.Timestamp("2020-06-04 21:28:55+09:00")


def test_an_abbreviation_naming_several_zones_leaves_the_wall_clock(tmp_path):
    # near misses: CST is China's and America's; CET at one end and CEST at the other is no one offset
    path = tmp_path / "journalctl.txt"
    for zones in (("CST", "CST"), ("CET", "CEST")):
        path.write_text(_short(zones))
        (when,) = parse(path).events["timestamp"]
        assert when == pd.Timestamp("2020-06-04 21:28:55") and when.tzinfo is None


def test_a_json_journal_without_an_event_still_places_the_case_in_utc(tmp_path):
    import sarsleuth
    path = tmp_path / "journal.json"
    path.write_text(_record(1481223210387056, "GET /ping 200", transport="stdout", ident="docker", prio="6") + "\n")
    case = sarsleuth.load(path)
    assert case.clock.zone == "UTC" and len(case.events) == 0
    assert not any("no source carries a time zone" in n for n in case.notes)


def test_journal_short_iso_and_full(tmp_path):
    iso = tmp_path / "iso.txt"
    iso.write_text("-- Journal begins at Mon 2023-01-02 10:00:00 CET, ends at Mon 2023-01-02 11:00:00 CET. --\n"
                   "2023-01-02T10:15:00+0100 web kernel: TCP: time wait bucket table overflow\n")
    ev = parse(iso).events
    assert ev["timestamp"].iloc[0] == pd.Timestamp("2023-01-02T09:15:00Z")
    full = tmp_path / "full.txt"
    full.write_text("-- No entries --\n"
                    "Thu 2022-02-10 16:19:13 UTC compute4 kernel: nf_conntrack: table full, dropping packet\n")
    ev = parse(full).events
    assert list(ev["kind"]) == ["conntrack-full"]
    assert ev["timestamp"].iloc[0] == pd.Timestamp("2022-02-10 16:19:13", tz="UTC")


def test_journalctl_x_with_its_catalog_text_is_read(tmp_path):
    """What users paste after "See journalctl -xe for details": the entries,
    each followed by the catalog's explanation behind "-- "."""
    catalog = ["-- Subject: Unit process exited", "-- Defined-By: systemd", "-- Support: https://lists.example.org/",
               "-- ", "-- An ExecStart= process belonging to unit {u} has exited.", "-- ",
               "-- The process' exit code is 'killed' and its exit status is 11."]
    lines = ["Mar 02 07:41:19 nas-2 systemd[1]: mediaserver.service: Main process exited, code=killed, "
             "status=11/SEGV", *[c.format(u="mediaserver.service") for c in catalog],
             "Mar 02 07:41:19 nas-2 systemd[1]: mediaserver.service: Failed with result 'signal'.",
             "-- Subject: Unit failed", "-- Defined-By: systemd", "-- ",
             "-- The unit mediaserver.service has entered the 'failed' state with result 'signal'."]
    path = tmp_path / "paste.log"
    path.write_text("\n".join(lines) + "\n")
    assert sniff(path)[0] == "journal"
    import sarsleuth
    case = sarsleuth.load(path)
    (failed,) = [f for f in case.findings if f.detector == "service-failure"]
    assert failed.title == "mediaserver.service failed 1 x (result 'signal', status=11/SEGV)"
    assert "gave up" not in failed.explanation and "restarted" not in failed.explanation
    assert [e.line for e in failed.evidence] == [1, 9]
