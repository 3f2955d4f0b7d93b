"""Times and hosts at their edges, on inputs generated here: a leap
second, a --window in the hour a zone repeats, a sar text dated 9999, an
sa file whose CPU count changes at a restart, one host spelled in two
cases, a central log of many hosts under --fleet, and CSV cells that a
spreadsheet would run as formulas."""
from __future__ import annotations

import datetime as dt
import json
import sys

import pandas as pd
import pytest

import sarsleuth

from .conftest import SAMPLES, run_cli

KILL = ("Out of memory: Killed process {pid} (java) total-vm:1021908kB, anon-rss:524288kB, file-rss:4096kB, "
        "shmem-rss:0kB, UID:1000 pgtables:1200kB oom_score_adj:0")


@pytest.mark.parametrize("name, lines", [
    ("rsyslog ISO", ["2016-12-31T23:59:58.000000+00:00 web2 kernel: {k}", "2016-12-31T23:59:60.500000+00:00 web2 "
                     "kernel: {k}", "2017-01-01T00:00:01.000000+00:00 web2 kernel: {k}"]),
    ("syslog", ["Dec 31 23:59:58 web2 kernel: {k}", "Dec 31 23:59:60 web2 kernel: {k}",
                "Jan  1 00:00:01 web2 kernel: {k}"]),
    ("dmesg -T", ["[Sat Dec 31 23:59:58 2016] {k}", "[Sat Dec 31 23:59:60 2016] {k}",
                  "[Sun Jan  1 00:00:01 2017] {k}"]),
])
def test_a_leap_second_is_dated_and_keeps_its_episode_whole(tmp_path, name, lines):
    """The kernel's clock prints 23:59:60 during a leap second: the kill
    logged then is the last instant of 23:59:59, between its neighbours."""
    path = tmp_path / "log"
    path.write_text("".join(line.format(k=KILL.format(pid=4242 + i)) + "\n" for i, line in enumerate(lines)))
    case = sarsleuth.load(path, year=2016)
    times = [str(t)[:26] for t in case.events["timestamp"]]
    assert times[1].startswith("2016-12-31 23:59:59.999999"), (name, times)
    assert case.events["timestamp"].is_monotonic_increasing
    (kill,) = [f for f in case.findings if f.detector == "oom-kill"]
    assert kill.title.startswith("OOM killer killed 3 process(es)")


def test_a_window_in_the_repeated_hour_says_which_reading_it_took(tmp_path):
    """Paris turned its clocks back at 03:00 on 2024-10-27: 02:30 came
    twice.  A window inside that hour holds both readings (start as the
    first, end as the second) and says so; an explicit offset chooses."""
    path = tmp_path / "messages"
    path.write_text("".join(f"2024-10-27T{t} web1 kernel: {KILL.format(pid=pid)}\n" for t, pid in (
        ("02:35:00+02:00", 100), ("02:35:00+01:00", 101), ("03:40:00+01:00", 102))))
    case = sarsleuth.load(path, tz="Europe/Paris", window="2024-10-27T02:30..2024-10-27T02:50")
    kills = [f for f in case.findings if f.detector == "oom-kill"]
    assert sorted(p for f in kills for p in f.refs["pids"]) == [100, 101]      # both readings, not 03:40's
    said = [n for n in case.notes if n.startswith("--window")]
    assert said == [
        "--window start 2024-10-27T02:30:00 falls in the hour Europe/Paris repeats when summer time ends: read as "
        "2024-10-27T02:30:00+02:00 (the first time, so that the window holds both); give 2024-10-27T02:30:00+01:00 "
        "for the other",
        "--window end 2024-10-27T02:50:00 falls in the hour Europe/Paris repeats when summer time ends: read as "
        "2024-10-27T02:50:00+01:00 (the second time, so that the window holds both); give 2024-10-27T02:50:00+02:00 "
        "for the other"]
    second = sarsleuth.load(path, tz="Europe/Paris", window="2024-10-27T02:30+01:00..2024-10-27T02:50+01:00")
    assert not [n for n in second.notes if n.startswith("--window")]
    (only,) = [f for f in second.findings if f.detector == "oom-kill"]
    assert only.refs["pids"] == [101] and pd.Timestamp(only.start) == pd.Timestamp("2024-10-27T02:35:00+01:00")


def test_a_sar_text_dated_9999_is_never_told_as_1816(tmp_path):
    text = (SAMPLES / "nginx-proxy-oom" / "sar06.txt").read_text().replace("05/06/2014", "05/06/9999")
    (tmp_path / "sar06.txt").write_text(text)
    ran = run_cli("analyze", tmp_path / "sar06.txt", "--format", "json")
    assert ran.returncode == 0
    assert "sar06.txt:1: banner date 05/06/9999 is outside the years a time can be held in (1678 to 2261); its " \
           "rows are placed on 1970-01-01" in ran.stderr
    assert "1815" not in ran.stdout and "1816" not in ran.stdout and "9999" not in json.dumps(
        [i["start"] for i in json.loads(ran.stdout)["incidents"]])


def test_log_lines_dated_outside_pandas_years_are_counted(tmp_path):
    path = tmp_path / "messages"
    path.write_text(f"9999-12-31T23:59:58+00:00 web2 kernel: {KILL.format(pid=1)}\n"
                    f"2016-12-31T23:59:59+00:00 web2 kernel: {KILL.format(pid=2)}\n")
    case = sarsleuth.load(path)
    assert f"{path}: 1 event line(s) dated outside the years a time can be held in (1678 to 2261): kept without " \
           "a time" in case.warnings


def _sa_with_more_cpus_after_a_restart(path):
    """Written as sadc 12.6.1 writes a restart record (real sar reads it:
    ``LINUX RESTART (64 CPU)``): 2 CPUs at load 0.5, then 64 CPUs."""
    from sarsleuth.inputs.parsers.sa.writer import write_sa
    t0 = dt.datetime(2026, 11, 24, 10, 0, 0, tzinfo=dt.timezone.utc)

    def stats(k, uptime, ncpu, load):
        per = [[1000 + 600 * k, 0, 500 + 300 * k, 90000 + 5100 * k, 0, 0, 0, 0, 0, 0]]
        return {"time": t0 + dt.timedelta(minutes=k), "uptime_cs": uptime,
                "cpu": [[sum(c[i] for c in per * ncpu) for i in range(10)]] + per * ncpu,
                "queue": {"nr_running": 3, "procs_blocked": 0, "nr_threads": 300, "load_avg_1": int(load * 100),
                          "load_avg_5": int(load * 100), "load_avg_15": int(load * 100)}}
    records = [stats(k, 1000 + 6000 * k, 2, 0.5) for k in range(10)]
    records.append({"time": t0 + dt.timedelta(minutes=10, seconds=30), "type": "restart", "ncpu": 64})
    records += [stats(k, 500 + 6000 * (k - 11), 64, 60.0 if k > 14 else 1.0) for k in range(11, 25)]
    return write_sa(path, host="big1", kernel="6.1.0", ncpu=2, records=records)


def test_load_after_a_restart_is_judged_with_the_cpus_it_came_back_with(tmp_path):
    case = sarsleuth.load(_sa_with_more_cpus_after_a_restart(tmp_path / "sa24"))
    (load,) = [f for f in case.findings if f.detector == "load-spike"]
    # the baseline is the load since the restart (1.0), never the 2-CPU host's before it
    assert load.title == "Load average jumped to 60.00 (baseline 1.00, 64 CPUs)"
    assert load.metrics["ncpu"] == 64 and load.severity == "low"


def test_load_without_a_restart_is_judged_with_the_header_cpus(tmp_path):
    """The near miss: the same load on the 2 CPUs the file ran on all along."""
    from sarsleuth.inputs.parsers.sa.writer import write_sa
    t0 = dt.datetime(2026, 11, 24, 10, 0, 0, tzinfo=dt.timezone.utc)
    per = [[0] * 10]
    records = [{"time": t0 + dt.timedelta(minutes=k), "uptime_cs": 1000 + 6000 * k, "cpu": per * 3,
                "queue": {"nr_running": 3, "procs_blocked": 0, "nr_threads": 300,
                          "load_avg_1": 6000 if k > 14 else 100, "load_avg_5": 100, "load_avg_15": 100}}
               for k in range(25)]
    case = sarsleuth.load(write_sa(tmp_path / "sa24", host="small1", kernel="6.1.0", ncpu=2, records=records))
    (load,) = [f for f in case.findings if f.detector == "load-spike"]
    assert load.title == "Load average jumped to 60.00 (baseline 1.00, 2 CPUs)" and load.severity == "high"


def test_one_host_in_two_cases_is_one_host(tmp_path):
    """A central log writes WEB1 where the host's own log writes web1: the
    one kill is one event of one host, said in a note."""
    (tmp_path / "central").mkdir()
    (tmp_path / "web1").mkdir()
    (tmp_path / "central" / "messages").write_text(f"Nov 24 14:19:10 WEB1 kernel: {KILL.format(pid=4242)}\n"
                                                   "Nov 24 14:19:11 db2 kernel: eth0: link up\n")
    (tmp_path / "web1" / "messages").write_text(f"Nov 24 14:19:10 web1 kernel: {KILL.format(pid=4242)}\n")
    case = sarsleuth.load(tmp_path, year=2026)
    assert [i.hosts for i in case.incidents] == [["web1"]]
    assert case.merged["events"] == 1
    assert "WEB1 and web1 are one host (host names do not tell case apart): told as web1" in case.notes


def test_two_hosts_whose_names_differ_by_more_than_case_stay_two(tmp_path):
    path = tmp_path / "messages"
    path.write_text(f"Nov 24 14:19:10 web1 kernel: {KILL.format(pid=4242)}\n"
                    f"Nov 24 14:19:10 web10 kernel: {KILL.format(pid=4242)}\n")
    case = sarsleuth.load(path, year=2026)
    assert sorted(h for i in case.incidents for h in i.hosts) == ["web1", "web10"]
    assert not [n for n in case.notes if "are one host" in n]


@pytest.mark.parametrize("hosts", [32, 2000])
def test_a_central_log_of_many_hosts_counts_them_in_a_fleet(monkeypatch, tmp_path, hosts):
    """Each host writes a line or two, none a twentieth of the file: its
    head names none firmly.  The fleet still counts the hosts it names and
    tells the kill on one of them (it said "0 hosts: no incident found")."""
    for name in [m for m in list(sys.modules) if m == "distributed" or m.startswith("distributed.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "distributed", None)      # the hosts run in this process
    lines = [f"Nov 24 14:19:{i % 60:02d} node{i % hosts:05d} systemd[1]: Started session-{i}.scope."
             for i in range(max(hosts, 200))]
    lines.insert(20, f"Nov 24 14:20:10 node00007 kernel: {KILL.format(pid=4242)}")
    (tmp_path / "central.log").write_text("\n".join(lines) + "\n")
    ran = run_cli("analyze", tmp_path / "central.log", "--fleet", "--year", "2026", "--format", "json")
    assert ran.returncode == 0, ran.stderr
    doc = json.loads(ran.stdout)
    counted = len([h for h in doc["hosts"] if h["host"]])
    assert counted >= min(hosts, 32)
    assert doc["summary"].startswith(f"{counted} host(s), 1 fleet incident(s)")
    (top,) = doc["fleet_incidents"]
    assert top["severity"] == "critical" and top["hosts"] == ["node00007"]
    assert top["breadth"] == f"1 of {counted} hosts"


def test_a_central_log_of_a_few_hosts_is_still_shared_among_them():
    """The near miss: three hosts with their share of the head each."""
    from sarsleuth.inputs.parsers.logs.lines import hosts_named
    from sarsleuth.inputs.parsers.logs.syslog import parse_line
    text = "".join(f"Nov 24 14:19:{i:02d} {h} systemd[1]: Started x.\n" for i in range(30) for h in ("a1", "b2", "c3"))
    assert sorted(hosts_named(text, parse_line)) == ["a1", "b2", "c3"]


def test_csv_cells_that_start_like_formulas_are_shown_as_text(tmp_path):
    """OWASP's CSV injection: a process name or message starting with
    = + - @ (or a tab, a CR) gets a ' first; a plain number does not."""
    path = tmp_path / "messages"
    path.write_text("".join(f"Nov 24 14:19:{10 + i} web1 kernel: Out of memory: Killed process {4242 + i} ({name}) "
                            "total-vm:1021908kB, anon-rss:524288kB, file-rss:4096kB, shmem-rss:0kB\n"
                            for i, name in enumerate(["=HYPERLINK(1", "@SUM(1", "+cmd", "-1", "java"])) +
                    "Nov 24 14:19:20 web1 =cmd|calc[99]: -2+3 segfault at 0 ip 00007f sp 0 error 4 in libc.so.6\n")
    ran = run_cli("parse", path, "--year", "2026")
    assert ran.returncode == 0
    rows = [line.split(",")[5] for line in ran.stdout.splitlines()[1:]]
    assert rows == ["'=HYPERLINK(1", "'@SUM(1", "'+cmd", "-1", "java", "'=cmd|calc"]
    assert ",'-2+3 segfault" in ran.stdout


def test_sql_csv_cells_are_shown_as_text(tmp_path):
    pytest.importorskip("duckdb", reason="DuckDB (the sql extra) is in the test extra")
    ran = run_cli("analyze", SAMPLES / "nginx-proxy-oom", "--save", tmp_path / "case", "-q")
    assert ran.returncode == 0
    out = run_cli("sql", tmp_path / "case", "SELECT '=1+1' AS a, '-x' AS b, '-1' AS c, 'ok' AS d", "--format", "csv")
    assert out.returncode == 0 and out.stdout.splitlines() == ["a,b,c,d", "'=1+1,'-x,-1,ok"]
