"""The backstop over whole days: a real day of sar's ten-minute samples
(the corpus's RHEL 7 and RHEL 6 daily files) holds its own bumps (cron,
backups, log rotation) and must give no "unexplained change"; the same day
with a storage stall planted in several groups at once (the CPUs' I/O
wait, the run queue's blocked tasks, the disk's queue and wait) must."""
from __future__ import annotations

import re

import pandas as pd
import pytest

import sarsleuth
from sarsleuth.analysis.unexplained import unexplained

RHEL7_DAY = "sar-text/sarstats--el7_sar09"      # 2016-04-09, 12:00:01 AM to 11:50:01 PM, 2 CPUs
RHEL6_DAY = "sar-text/sarstats--el6_sar05"      # 2014-02-05, 00:00:01 to 23:50:01, s390x
_TIME = re.compile(r"^(\d\d:\d\d:\d\d(?: [AP]M)?)\s+(.*)$")
_NUMBER = re.compile(r"^-?[\d.]+$")
#: Sections whose first column names the device of each row.
_DEVICE_COLUMNS = {"CPU", "DEV", "IFACE", "TTY"}


def _planted(text: str, times: set, plants: dict) -> str:
    """The sar text with ``plants`` {(first column of the header, device or
    None): {column: value}} written into the rows of ``times``."""
    out, header = [], None
    for line in text.splitlines():
        m = _TIME.match(line)
        if not m:
            out.append(line)
            continue
        stamp, tokens = m.group(1), m.group(2).split()
        if tokens and not _NUMBER.match(tokens[-1]):      # a header: its last column is a name
            header = tokens
            out.append(line)
            continue
        if header is not None and stamp in times:
            device = tokens[0] if header[0] in _DEVICE_COLUMNS else None
            for column, value in plants.get((header[0], device), {}).items():
                tokens[header.index(column)] = f"{value:.2f}"
            line = f"{stamp} " + " ".join(f"{t:>9}" for t in tokens)
        out.append(line)
    return "\n".join(out) + "\n"


def _day(corpus, name, tmp_path, plants=None, times=()):
    source = corpus / name
    text = source.read_text("utf-8")
    path = tmp_path / source.name
    path.write_text(_planted(text, set(times), plants) if plants else text, "utf-8")
    return sarsleuth.load(path)


@pytest.mark.parametrize("name", [RHEL7_DAY, RHEL6_DAY])
def test_a_long_ordinary_day_has_no_unexplained_change(corpus, tmp_path, name):
    case = _day(corpus, name, tmp_path)
    cpu = case.sar("cpu", device="all")
    assert len(cpu) >= 130                    # a whole day of ten-minute samples
    assert not [i for i in case.incidents if i.category == "other"]
    # nor with every detector's finding taken away: nothing in the day departs as a stall does
    assert unexplained(case.store, case.events, case.sources, [], case.clock) == []


STALL = [f"04:{m}0:01 PM" for m in range(5)]


def test_a_stall_planted_in_several_groups_is_an_unexplained_change(corpus, tmp_path):
    """From 04:00 to 04:40 PM the CPUs wait on I/O (%iowait 38 % where the
    day ran at 0.02 %), tasks block (4 where there were none) and the disk
    queues (await 85 ms, 70 % busy): three groups, each strain."""
    plants = {("CPU", "all"): {"%iowait": 38.0, "%idle": 60.0},
              ("CPU", "0"): {"%iowait": 41.0, "%idle": 57.0},
              ("CPU", "1"): {"%iowait": 35.0, "%idle": 63.0},
              ("runq-sz", None): {"blocked": 4.0},
              ("DEV", "dev8-0"): {"avgqu-sz": 6.0, "await": 85.0, "%util": 70.0}}
    case = _day(corpus, RHEL7_DAY, tmp_path, plants, STALL)
    cpu = case.sar("cpu", device="all")
    stalled = cpu[cpu.index.strftime("%H:%M").isin(["16:00", "16:10", "16:20", "16:30", "16:40"])]
    assert list(stalled["%iowait"]) == [38.0] * 5
    (found,) = unexplained(case.store, case.events, case.sources, [], case.clock)
    assert found.category == "other" and found.host == "firewall.int.rhx"
    assert found.title.startswith("unexplained change on host firewall.int.rhx: ")
    told = {(c["section"], c["metric"]) for c in found.refs["changes"]}
    assert {("cpu", "%iowait"), ("queue", "blocked")} <= told and any(s == "disk" for s, _m in told)
    assert pd.Timestamp("2016-04-09 15:50") <= pd.Timestamp(found.start) <= pd.Timestamp("2016-04-09 16:00:01")
    assert found.metrics["series_departed"] >= 3 and found.metrics["strain_series"] >= 3
