"""A burst of one task waiting on its own I/O is no incident: a backup
reading cold files on a quiet 2-CPU web host keeps one CPU's worth of time
waiting (%iowait up to 46 %, PSI io "full" as high: the backup was all
that ran) for 20 s, then less as its reads hit the cache; the disk serves
one request at a time.  The near misses: two tasks waiting at once (I/O
wait above one CPU's share, on 2 CPUs or on 4), one task kept waiting for
minutes, and the same lone reader on a disk it saturated."""
from __future__ import annotations

import datetime as dt

import pytest

import sarsleuth
from sarsleuth.inputs.parsers.sa.writer import write_sa

T0 = dt.datetime(2026, 11, 27, 11, 50, 0, tzinfo=dt.timezone.utc)
HZ = 100
QUIET = {"user": 1, "system": 1, "iowait": 0, "util": 0.5, "aqu": 0.0, "stall": 0.0}


def _records(rows: list[dict], ncpu: int = 2) -> list[dict]:
    """1-second records of a host from each row's shares: CPU {user,
    system, iowait} % of every CPU, the disk's {util, aqu} and the share of
    the second tasks stalled on I/O ({stall}, PSI some and full alike)."""
    cpu = [[1000, 0, 500, 90000, 100, 0, 0, 0, 0, 0] for _ in range(ncpu)]
    disk = {"nr_ios": 5000, "rd_sect": 8000, "wr_sect": 20000, "dc_sect": 0, "rd_ticks": 900, "wr_ticks": 1500,
            "tot_ticks": 2000, "rq_ticks": 2400, "major": 254, "minor": 0, "dc_ticks": 0, "part_nr": 0}
    psi = {"some_io_total": 10_000, "full_io_total": 8_000}
    out = []
    for k, row in enumerate([QUIET] + rows):
        if k:
            for c in cpu:
                user, system, iowait = (int(HZ * row[n] / 100) for n in ("user", "system", "iowait"))
                c[0] += user
                c[2] += system
                c[4] += iowait
                c[3] += HZ - user - system - iowait
            disk["nr_ios"] += int(4 * row["util"]) + 3
            disk["rd_sect"] += int(200 * row["util"])
            disk["tot_ticks"] += int(10 * row["util"])
            disk["rq_ticks"] += int(1000 * row["aqu"])
            disk["rd_ticks"] += int(1000 * row["aqu"])
            psi["some_io_total"] += int(1_000_000 * row["stall"])
            psi["full_io_total"] += int(900_000 * row["stall"])
        cpus = [[sum(col) for col in zip(*cpu)]] + [c[:] for c in cpu]
        out.append({"time": T0 + dt.timedelta(seconds=k), "uptime_cs": 360000 + k * HZ, "cpu": cpus,
                    "disk": {(254, 0): dict(disk)},
                    "psi-io": {**psi, **{f"{w}_aio_{n}": 0 for w in ("some", "full") for n in (10, 60, 300)}}})
    return out


def _case(tmp_path, burst: list, ncpu: int = 2):
    folder = tmp_path / "host"
    folder.mkdir(parents=True)
    rows = [QUIET] * 120 + burst + [QUIET] * 60
    write_sa(folder / "sa27", host="web-prod-09", kernel="6.1.0-13-amd64", ncpu=ncpu, records=_records(rows, ncpu))
    return sarsleuth.load(folder, tz="UTC")


#: the backup: one CPU's worth of time waiting at most, the disk busy with
#: one request in flight, for 20 s, then tapering for 15 s as its reads hit the cache
READING = {"user": 10, "system": 3, "iowait": 46, "util": 60, "aqu": 0.7, "stall": 0.45}
TAPER = {"user": 40, "system": 4, "iowait": 12, "util": 20, "aqu": 0.2, "stall": 0.12}
BACKUP = [READING] * 20 + [TAPER] * 15


def test_one_task_waiting_on_its_own_reads_is_context_not_an_incident(tmp_path):
    case = _case(tmp_path, BACKUP)
    (wait,) = [f for f in case.findings if f.detector == "iowait-spike"]
    # the finding stays on the timeline, with its reason
    assert wait.metrics["peak_iowait_pct"] == pytest.approx(46.0)
    assert wait.metrics["one_cpu_pct"] == pytest.approx(50.0) and wait.metrics["cpus_waiting"] == pytest.approx(0.92)
    # 20 s at 46 % and 15 s at 12 % of 2 CPUs: 22 CPU-seconds of waiting
    assert wait.metrics["cpu_seconds_waiting"] == pytest.approx(22.0)
    assert ("no more than one CPU's share of the time (50.0 % of 2 CPUs)" in wait.explanation
            and "22.0 s in all" in wait.explanation)
    assert wait.metrics["waited_over_least"] == pytest.approx(22.0 / 30.0)
    # PSI: 45 % of 20 s and 12 % of 15 s, 10.8 s stalled in all, under the detector's least 20 s
    (stall,) = [f for f in case.findings if f.detector == "io-stall"]
    assert stall.metrics["stalled_seconds"] == pytest.approx(10.8) and stall.metrics["stalled_over_least"] < 1
    assert case.incidents == []


def test_the_same_stall_alone_is_a_burst_and_a_longer_one_an_incident(tmp_path):
    """PSI without the I/O wait (sar -q PSI beside a host that counts no
    iowait, a throttled cgroup): stalled 10.8 s in all is a burst; the same
    share held 100 s, 45 s stalled, is an incident."""
    quiet_cpu = {"iowait": 0}
    burst = _case(tmp_path / "burst", [{**r, **quiet_cpu} for r in BACKUP])
    assert [f.detector for f in burst.findings] == ["io-stall"] and burst.incidents == []
    held = _case(tmp_path / "held", [{**READING, **quiet_cpu}] * 100)
    (top,) = held.incidents
    assert top.cause == "io-stall" and top.findings[0].metrics["stalled_seconds"] == pytest.approx(45.0)


@pytest.mark.parametrize("burst, ncpu, cpus_waiting, why", [
    ([{**READING, "iowait": 70, "util": 75, "aqu": 1.9, "stall": 0.6}] * 20 + [TAPER] * 15, 2, 1.4, "two tasks waiting at once"),
    (BACKUP, 4, 1.84, "46 % of 4 CPUs is nearly two CPUs waiting"),
    ([READING] * 100, 2, 0.92, "one task kept waiting for 100 s: a restore writing for minutes"),
])
def test_more_than_one_task_s_burst_is_an_incident(tmp_path, burst, ncpu, cpus_waiting, why):
    case = _case(tmp_path, burst, ncpu=ncpu)
    (top,) = case.incidents
    assert (top.category, top.cause) == ("io-saturation", "iowait-spike"), why
    (wait,) = [f for f in top.findings if f.detector == "iowait-spike"]
    assert wait.metrics["cpus_waiting"] == pytest.approx(cpus_waiting)


def test_a_lone_reader_that_saturated_the_disk_is_its_saturation(tmp_path):
    case = _case(tmp_path, [{**READING, "util": 98, "aqu": 1.6}] * 25 + [TAPER] * 15)
    (top,) = case.incidents
    assert (top.category, top.cause) == ("io-saturation", "disk-saturation")
    (wait,) = [f for f in top.findings if f.detector == "iowait-spike"]
    assert wait.role == "effect"
