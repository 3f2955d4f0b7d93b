"""Who used the CPUs during a finding, from ps snapshots whose %CPU is a
life-long average (procps: TIME over the seconds since the process
started): a process that started at the end of the window, a collector
and what it ran, a process idle between two snapshots are not named; a
program whose workers are killed and started again is."""
from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

import sarsleuth
from sarsleuth.analysis.attribution import attribute
from sarsleuth.analysis.process_cpu import cputime_seconds, window_share
from sarsleuth.model import Finding

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
WHEN = pd.Timestamp("2026-11-24 14:24:10", tz="UTC")

# as procps 4.0 prints `ps aux` (and `ps -ef` below), a burst of 60 s ending at the snapshot
_AUX = """USER       PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND
root         1  0.0  0.0 167712 11796 ?        Ss   Nov20   0:09 /sbin/init
root       812  0.3  0.1 221816  4400 ?        Ssl  Nov20  12:41 /usr/bin/python3 /usr/bin/agent.py --poll 10
root      9120 {late_cpu}  0.1  26480 10400 ?        R    14:24   {late_time} xz -9 -T1 /srv/backup/db.tar
root      9180  0.0  0.0   7060  2900 ?        R    14:24   0:00 ps aux
"""


def _snapshot(tmp_path: Path, text: str, when: pd.Timestamp, name: str = "ps-aux.txt") -> Path:
    path = tmp_path / name
    path.write_text(text)
    os.utime(path, (when.timestamp(), when.timestamp()))
    return path


def _cpu_finding(start, end) -> Finding:
    return Finding(detector="cpu-saturation", title="t", severity="high", start=start, end=end, host=None)


def test_ps_cpu_time_reads_every_layout_procps_prints():
    assert [cputime_seconds(t) for t in ("0:00", "12:41", "01:02:03", "3-04:05:06", "1:23.45")] == \
        [0.0, 761.0, 3723.0, 273906.0, 83.45]
    assert cputime_seconds("-") is None


@pytest.mark.parametrize("late_time,named", [("0:02", False), ("0:59", True)])
def test_a_process_is_named_only_for_the_part_of_the_window_it_lived(tmp_path, late_time, named):
    """xz at 95 % with 2 s of CPU has lived about 3 s: it cannot have kept
    the CPUs busy for the minute before; with 59 s it was there all along."""
    path = _snapshot(tmp_path, _AUX.format(late_cpu="95.0", late_time=late_time), WHEN)
    case = sarsleuth.load(path, tz="UTC")
    f = _cpu_finding(WHEN - pd.Timedelta(seconds=60), WHEN)
    attribute([f], case.sources)
    assert (f.refs.get("responsible_names") == ["xz"]) is named
    if named:
        assert f.refs["responsible"].startswith("xz (PID 9120: 95.0 % CPU)")


def test_the_collector_of_a_sosreport_is_never_named(tmp_path):
    """The sample sosreport of web07: sos's own ps shows sos at 36.6 %
    CPU, started after the CPUs were already saturated by the traffic: no
    story names it, nor advises to throttle it."""
    case = sarsleuth.load(SAMPLES / "bundles" / "sosreport-web07-2026-11-23-pvrqaru.tar.xz")
    cpu = [f for f in case.findings if f.detector == "cpu-saturation"]
    assert cpu and all("sos" not in (f.refs or {}).get("responsible", "") for f in cpu)
    told = str(case.to_json())
    assert "by sos" not in told and "sos (PID" not in told


def test_what_a_collector_started_is_not_named_either(tmp_path):
    """``ps -ef`` (with PPIDs) taken by a collector: its children (a
    compressor it piped its archive through) are the collector's too."""
    text = """UID          PID    PPID  C STIME TTY          TIME CMD
root           1       0  0 Nov20 ?        00:00:09 /sbin/init
root        9300       1 35 14:23 ?        00:00:21 /usr/bin/python3 /usr/bin/sos report --batch
root        9301    9300 97 14:23 ?        00:00:58 xz -9 -T1
root        9400       1 99 14:23 ?        00:00:59 stress-ng-cpu [run]
root        9480    9300  0 14:24 ?        00:00:00 ps -ef
"""
    case = sarsleuth.load(_snapshot(tmp_path, text, WHEN, "ps-ef.txt"), tz="UTC")
    f = _cpu_finding(WHEN - pd.Timedelta(seconds=60), WHEN)
    attribute([f], case.sources)
    assert f.refs["responsible_names"] == ["stress-ng-cpu"]


def test_between_two_snapshots_the_cpu_time_gained_is_the_rate(tmp_path):
    """A daemon at 40 % over its life whose TIME did not move between two
    snapshots used nothing in between; one whose TIME gained 30 s in 30 s
    used a whole CPU whatever its life-long %CPU says."""
    before = """USER       PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND
root       700 40.0  0.1 221816  4400 ?        Ssl  13:00   9:36 indexer --all
root       701  2.0  0.1 221816  4400 ?        Ssl  13:00   0:28 compactor --db /srv/db
"""
    after = before.replace("9:36 indexer", "9:36 indexer").replace(" 2.0  0.1 221816  4400 ?        Ssl  13:00   0:28",
                                                                   " 2.7  0.1 221816  4400 ?        Ssl  13:00   0:58")
    first = _snapshot(tmp_path, before, WHEN - pd.Timedelta(seconds=30), "ps-1.txt")
    second = _snapshot(tmp_path, after, WHEN, "ps-2.txt")
    case = sarsleuth.load(first, second, tz="UTC")
    f = _cpu_finding(WHEN - pd.Timedelta(seconds=20), WHEN)
    attribute([f], case.sources)
    assert f.refs["responsible_names"] == ["compactor"]
    assert f.refs["responsible"].startswith("compactor (PID 701: 100.0 % CPU)")


def test_a_program_whose_workers_are_killed_and_started_again_is_there_all_along():
    """Each worker young (its TIME 0:00), an older sibling of the same
    program idle: the program was busy the whole window."""
    row = pd.DataFrame([{"cpu_pct": 84.6, "time": "0:00"}]).itertuples(index=False)
    young = next(row)
    rate, alive = window_share(young, WHEN, WHEN - pd.Timedelta(seconds=30), WHEN)
    assert rate == 84.6 and alive < 0.05
    # the attribution keeps the longest life of the program's processes (see test above for its effect)
    old = next(pd.DataFrame([{"cpu_pct": 0.2, "time": "0:00"}]).itertuples(index=False))
    assert window_share(old, WHEN, WHEN - pd.Timedelta(seconds=30), WHEN)[1] == 1.0
    # a snapshot taken before the window says nothing of it
    assert window_share(young, WHEN - pd.Timedelta(minutes=5), WHEN - pd.Timedelta(seconds=30), WHEN) is None
