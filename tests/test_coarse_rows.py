"""One row of a minute is a clear state on its own: sa files as sadc
writes them at 60 s for a recording of a few minutes (one or two rows),
and the near misses (a 1-second row, a busy host all day, a disk busy
but serving in parallel)."""
from __future__ import annotations

import datetime as dt
import os

import pytest

import sarsleuth
from sarsleuth.inputs.parsers.sa.writer import write_sa

T0 = dt.datetime(2026, 11, 24, 15, 24, 0, tzinfo=dt.timezone.utc)
HZ = 100


def _cpu(cum: list[list[int]]) -> list[list[int]]:
    """CPU "all" (the sum) then each CPU, as /proc/stat's cumulative jiffies."""
    return [[sum(col) for col in zip(*cum)]] + cum


def _record(k: int, seconds: int, cpus: list[list[int]], disk=None, psi_us: int = 0) -> dict:
    rec = {"time": T0 + dt.timedelta(seconds=k * seconds), "uptime_cs": 360000 + k * seconds * HZ,
           "cpu": _cpu(cpus),
           "psi-cpu": {"some_cpu_total": psi_us, "some_acpu_10": 0, "some_acpu_60": 0, "some_acpu_300": 0}}
    if disk is not None:
        rec["disk"] = {(254, 0): disk}
    return rec


def _recording(rows: list[dict], seconds: int = 60) -> list[dict]:
    """Records every ``seconds`` of a 2-CPU host from counters and, for each
    row, the share of each CPU's jiffies as {user, system, iowait} % (idle the rest),
    the disk's {util, aqu, wMBps} and the share of the row tasks waited for a
    CPU ({waiting} %, PSI cpu some)."""
    cpu = [[1000, 0, 500, 90000, 100, 0, 0, 0, 0, 0] for _ in range(2)]
    disk = {"nr_ios": 5000, "rd_sect": 8000, "wr_sect": 20000, "dc_sect": 0, "rd_ticks": 900, "wr_ticks": 1500,
            "tot_ticks": 2000, "rq_ticks": 2400, "major": 254, "minor": 0, "dc_ticks": 0, "part_nr": 0}
    psi_us = 5_000_000
    records = [_record(0, seconds, [c[:] for c in cpu], dict(disk), psi_us)]
    for k, row in enumerate(rows, 1):
        jiffies = seconds * HZ
        for c in cpu:
            user, system, iowait = (int(jiffies * row.get(n, 0) / 100) for n in ("user", "system", "iowait"))
            c[0] += user
            c[2] += system
            c[4] += iowait
            c[3] += jiffies - user - system - iowait
        ms = seconds * 1000
        ios = int(row.get("wMBps", 0) * 2 * seconds) + 10
        disk["nr_ios"] += ios
        disk["wr_sect"] += int(row.get("wMBps", 0) * 2048 * seconds)
        disk["tot_ticks"] += int(ms * row.get("util", 0) / 100)
        disk["rq_ticks"] += int(ms * row.get("aqu", 0))
        disk["wr_ticks"] += int(ms * row.get("aqu", 0))
        psi_us += int(seconds * 1_000_000 * row.get("waiting", 0) / 100)
        records.append(_record(k, seconds, [c[:] for c in cpu], dict(disk), psi_us))
    return records


PS = """\
USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND
root           1  0.0  0.1 168000 11800 ?        Ss   Nov23   0:04 /sbin/init
root       32430 98.2  0.0  77504  2864 ?        R    15:24   0:14 stress-ng-matrix [run]
root       32431 98.7  0.0  77504  2864 ?        R    15:24   0:14 stress-ng-matrix [run]
www-data     880  0.3  0.2  55300  9800 ?        S    Nov23   2:01 nginx: worker process
"""


def _case(folder, rows, seconds=60, ps=True):
    folder.mkdir()
    write_sa(folder / "sa24", host="app1", kernel="6.1.0-13-amd64", ncpu=2, records=_recording(rows, seconds))
    if ps:
        path = folder / "ps-aux.txt"
        path.write_text(PS)
        stamp = (T0 + dt.timedelta(seconds=50)).timestamp()
        os.utime(path, (stamp, stamp))
    return sarsleuth.load(folder)


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    root = tmp_path_factory.mktemp("coarse")
    return {
        # a CPU burn of 100 % for 52 s of the minute: one row of 86 % busy
        "burn": _case(root / "burn", [{"user": 80, "system": 6}]),
        # the same shares in a 1-second row: no coarse row, too short to be a saturation
        "second": _case(root / "second", [{"user": 80, "system": 6}], seconds=1),
        # a busy host, all hour: 75 % busy is its usual level
        "busy-host": _case(root / "busy-host", [{"user": 70, "system": 5}] * 60, ps=False),
        # one row half busy
        "half": _case(root / "half", [{"user": 50, "system": 5}], ps=False),
        # fio writing 676 MB/s: the disk 53 % busy with 4 requests queued, CPUs waiting 16.9 %
        "disk": _case(root / "disk", [{"user": 3, "system": 4, "iowait": 16.9, "util": 53, "aqu": 4, "wMBps": 676}],
                      ps=False),
        # the disk as busy, serving in parallel (nothing queued), hardly any I/O wait
        "parallel": _case(root / "parallel", [{"user": 3, "system": 4, "iowait": 2, "util": 53, "aqu": 0.2,
                                               "wMBps": 676}], ps=False),
    }


def test_one_row_of_a_minute_at_86_percent_busy_is_the_cpu_burn_with_its_process(cases):
    case = cases["burn"]
    (top,) = case.incidents
    assert (top.category, top.cause) == ("cpu-saturation", "cpu-saturation")
    f = top.findings[0]
    assert f.title == "CPUs 86.0 % busy on average over a 1-minute sample, a burst within it averaged in"
    assert f.refs["sample_seconds"] == 60.0 and f.severity == "medium"
    # sar stamps the row at the end of the minute it averages: the story says where it may have begun
    assert "between 2026-11-24 15:24:00 and 15:25:00 (UTC)" in top.story["headline"]
    assert "stress-ng-matrix" in top.story["headline"]


@pytest.mark.parametrize("name", ["second", "busy-host", "half"])
def test_rows_that_are_no_burn_give_no_cpu_finding(cases, name):
    assert not [f for f in cases[name].findings if f.detector == "cpu-saturation"]


def test_one_row_of_a_disk_busy_with_requests_queued_is_its_saturation(cases):
    case = cases["disk"]
    top = case.incidents[0]
    assert (top.category, top.cause) == ("io-saturation", "disk-saturation")
    disk = top.findings[0]
    assert disk.metrics["peak_util_pct"] == pytest.approx(53.0) and disk.metrics["peak_aqu_sz"] == pytest.approx(4.0)
    assert disk.refs["sample_seconds"] == 60.0
    (iowait,) = [f for f in case.findings if f.detector == "iowait-spike"]
    assert iowait.title == "I/O wait 16.88 % on average over a 1-minute sample"  # 1,013 of 6,000 jiffies
    assert iowait.role == "effect"


def test_a_disk_as_busy_serving_in_parallel_is_no_saturation(cases):
    assert cases["parallel"].incidents == []


WRK = """\
$ wrk -t2 -c100 -d40s -H 'Connection: close' --latency http://127.0.0.1:8080/
Running 40s test @ http://127.0.0.1:8080/
  2 threads and 100 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     9.81ms    3.20ms  48.11ms   80.10%
    Req/Sec     5.10k   412.00     6.02k    71.00%
  Latency Distribution
     50%    9.40ms
     75%   11.02ms
     90%   13.61ms
     99%   21.93ms
  406123 requests in 40.01s, 329.12MB read
Requests/sec:  10150.41
Transfer/sec:      8.23MB
"""

PS_WRK = """\
USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND
root           1  0.0  0.1 168000 11800 ?        Ss   Nov23   0:04 /sbin/init
root        3754  112  0.0 251884  5592 ?        Ssl  15:24   0:28 wrk -t2 -c100 -d40s -H Connection: close --latency http://127.0.0.1:8080/
www-data    3749 17.2  0.0  11988  4832 ?        S    15:24   0:04 nginx: worker process
"""


def test_cpus_a_local_load_test_kept_busy_in_a_coarse_row_are_its_doing(tmp_path):
    """wrk against the host's own nginx from 15:24:05 to 15:24:45, the row
    stamped 15:25:00 averaging the minute it ran in: the load test's doing,
    no incident (the run ended before the row's stamp, not before the
    interval it covers)."""
    folder = tmp_path / "wrk"
    folder.mkdir()
    write_sa(folder / "sa24", host="app1", kernel="6.1.0-13-amd64", ncpu=2,
             records=_recording([{"user": 72, "system": 14}]))
    for name, text, second in (("ps-aux.txt", PS_WRK, 30), ("wrk.txt", WRK, 45)):
        (folder / name).write_text(text)
        stamp = (T0 + dt.timedelta(seconds=second)).timestamp()
        os.utime(folder / name, (stamp, stamp))
    case = sarsleuth.load(folder, tz="UTC")
    (cpu,) = [f for f in case.findings if f.detector == "cpu-saturation"]
    assert cpu.metrics["loadtest_driven"] == 1 and cpu.refs["driven_by"].startswith("wrk -t2 -c100")
    assert case.incidents == []


#: Rows of sysstat's default 10 minutes: a quiet disk, then a reindex that
#: kept it saturated about 5 minutes of one row (aqu-sz 5.87 averaged over
#: the row, %util 47.5), then quiet again.
QUIET = {"user": 2, "system": 1, "util": 0.5, "aqu": 0.01, "wMBps": 0.1}


def _ten_minute_rows(row: dict) -> list[dict]:
    return [QUIET, QUIET, row, QUIET]


def test_a_disk_saturated_for_half_a_ten_minute_row_is_its_saturation(tmp_path):
    case = _case(tmp_path / "reindex", _ten_minute_rows({"user": 6, "system": 9, "iowait": 11, "util": 47.5,
                                                         "aqu": 5.87, "wMBps": 140}), seconds=600, ps=False)
    top = case.incidents[0]
    assert (top.category, top.cause) == ("io-saturation", "disk-saturation")
    (disk,) = [f for f in top.findings if f.detector == "disk-saturation"]
    # 5.87 requests in flight on average over the row, busy 47.5 % of it: 12.36 while busy
    assert disk.metrics["in_flight_while_busy"] == pytest.approx(12.36, abs=0.01)
    assert disk.title.startswith("Disk dev254-0 saturated: busy 47.50 % of a 10-minute sample with 12.36 requests "
                                 "in flight while busy")
    assert disk.refs["sample_seconds"] == 600.0 and disk.severity == "medium"


BUSY_HALF = {"util": 47.5, "aqu": 5.87, "wMBps": 140}


@pytest.mark.parametrize("rows, why", [
    (_ten_minute_rows({"util": 47.5, "aqu": 0.6, "wMBps": 140}),
     "one request at a time, half the row: a busy disk, no queue"),
    (_ten_minute_rows({"util": 20.0, "aqu": 3.0, "wMBps": 60}), "busy a fifth of the row: under the part's bound"),
    ([BUSY_HALF] * 4, "that busy every row: its usual level"),
])
def test_rows_that_are_no_saturated_part_give_no_disk_finding(tmp_path, rows, why):
    case = _case(tmp_path / "row", rows, seconds=600, ps=False)
    assert not [f for f in case.findings if f.detector == "disk-saturation"], why


#: a runaway batch of 3 renderers on the 2 CPUs for 5 minutes of a 10-minute
#: row: 50.6 % busy, tasks waiting for a CPU 25.73 % of the row
RENDER = {"user": 49, "system": 1.6, "waiting": 25.73}


def test_cpus_saturated_for_half_a_ten_minute_row_with_tasks_waiting_is_the_burn(tmp_path):
    case = _case(tmp_path / "render", _ten_minute_rows(RENDER), seconds=600, ps=False)
    (top,) = case.incidents
    assert (top.category, top.cause) == ("cpu-saturation", "cpu-saturation")
    (cpu,) = [f for f in top.findings if f.detector == "cpu-saturation"]
    assert cpu.metrics["peak_busy_pct"] == pytest.approx(50.6)
    assert cpu.metrics["waiting_while_busy_pct"] == pytest.approx(100 * 25.73 / 50.6, abs=0.01)
    assert cpu.title == ("CPUs 50.6 % busy on average over a 10-minute sample, a burst within it averaged in, "
                         "tasks waiting for a CPU 25.73 % of the sample (50.8 % of the time the CPUs were busy)")


@pytest.mark.parametrize("rows, why", [
    (_ten_minute_rows({**RENDER, "waiting": 2.0}), "as busy, one task per CPU: nobody waited for one"),
    (_ten_minute_rows({"user": 18, "system": 2, "waiting": 15}), "busy a fifth of the row: under the part's bound"),
    ([RENDER] * 4, "that busy, with that much waiting, every row: its usual level"),
])
def test_rows_that_are_no_saturated_part_give_no_cpu_finding(tmp_path, rows, why):
    case = _case(tmp_path / "row", rows, seconds=600, ps=False)
    assert not [f for f in case.findings if f.detector == "cpu-saturation"], why
