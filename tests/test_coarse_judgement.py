"""What a recording sampled every minute (one row, no row before it) and a
CPU quota show: sa files as sadc writes them, each with its near miss.

- retransmitted segments as a share of the segments sent, in a row with no
  usual share before it: judged on the absolute share alone;
- swap in use at a row's end written out within the row itself (pswpout/s
  over its seconds): RAM ran out in it;
- TIME_WAIT in a row far under what a load test against the host itself,
  a connection a request, must have left (each held 60 s): a full table;
- tasks waiting for a CPU (PSI) while the CPUs stay mostly idle: a cgroup
  held by its CPU quota (CFS bandwidth), the cause of the slow answers.
"""
from __future__ import annotations

import datetime as dt
import os

import pandas as pd
import pytest

import sarsleuth
from sarsleuth.inputs.parsers.sa.writer import write_sa

T0 = dt.datetime(2026, 11, 24, 18, 33, 0, tzinfo=dt.timezone.utc)
HZ = 100


def _records(rows: list[dict], seconds: int) -> list[dict]:
    """Records every ``seconds`` of a 2-CPU host: the first one, then one
    per row; each row gives its CPUs' busy share (``busy`` %), TCP
    segments sent and retransmitted a second (``oseg``, ``retrans``) and
    the share of time tasks waited for a CPU (``scpu`` %), as the kernel's
    cumulative counters."""
    cpu = [[1000, 0, 500, 90000, 100, 0, 0, 0, 0, 0] for _ in range(2)]
    tcp = {"ActiveOpens": 100, "PassiveOpens": 100, "InSegs": 10000, "OutSegs": 10000}
    etcp = {"AttemptFails": 0, "EstabResets": 0, "RetransSegs": 10, "InErrs": 0, "OutRsts": 0}
    psi = {"some_cpu_total": 5_000_000, "some_acpu_10": 100, "some_acpu_60": 100, "some_acpu_300": 100}
    sock = {"sock_inuse": 7, "tcp_inuse": 1, "tcp_tw": 1, "udp_inuse": 0, "raw_inuse": 0, "frag_inuse": 0}
    swapping = {"pswpin": 1000, "pswpout": 5000}
    paging = {"pgpgin": 1000, "pgpgout": 1000, "pgfault": 10000, "pgmajfault": 100, "pgfree": 10000,
              "pgscan_kswapd": 0, "pgscan_direct": 0, "pgsteal": 0}
    memory = {"frmkb": 20_000_000, "bufkb": 8000, "camkb": 2_000_000, "tlmkb": 24_603_856, "frskb": 4_194_300,
              "tlskb": 4_194_300, "caskb": 0, "comkb": 3_000_000, "activekb": 2_000_000, "inactkb": 1_000_000,
              "dirtykb": 100, "anonpgkb": 1_500_000, "slabkb": 200_000, "kstackkb": 10_000, "pgtblkb": 20_000,
              "vmusedkb": 50_000, "availablekb": 22_000_000}

    disk = {"nr_ios": 5000, "rd_sect": 8000, "wr_sect": 20000, "dc_sect": 0, "rd_ticks": 900, "wr_ticks": 1500,
            "tot_ticks": 2000, "rq_ticks": 2400, "major": 252, "minor": 0, "dc_ticks": 0, "part_nr": 0}

    fs = {"fs_name": "/dev/vdb", "mountp": "/srv/backup", "f_blocks": 2 << 30, "f_bfree": 1 << 30,
          "f_bavail": 1 << 30, "f_files": 131072, "f_ffree": 131000}

    def record(k):
        return {"filesystem": [dict(fs)], "time": T0 + dt.timedelta(seconds=k * seconds),
                "uptime_cs": 360000 + k * seconds * HZ,
                "cpu": [[sum(col) for col in zip(*cpu)]] + [c[:] for c in cpu], "net-tcp": dict(tcp),
                "net-etcp": dict(etcp), "psi-cpu": dict(psi), "net-sock": dict(sock), "swapping": dict(swapping),
                "paging": dict(paging), "memory": dict(memory), "disk": {(252, 0): dict(disk)}}

    out = [record(0)]
    for k, row in enumerate(rows, 1):
        jiffies = seconds * HZ
        for c in cpu:
            busy = int(round(jiffies * row.get("busy", 2.0) / 100))
            iowait = int(round(jiffies * row.get("iowait", 0.0) / 100))
            c[0] += busy
            c[4] += iowait
            c[3] += jiffies - busy - iowait
        ios = int(row.get("tps", 10) * seconds)
        disk.update(nr_ios=disk["nr_ios"] + ios, wr_sect=disk["wr_sect"] + ios * 8,
                    tot_ticks=disk["tot_ticks"] + int(seconds * 1000 * row.get("util", 0.1) / 100),
                    rq_ticks=disk["rq_ticks"] + int(seconds * 1000 * row.get("aqu", 0.0)),
                    wr_ticks=disk["wr_ticks"] + int(seconds * 1000 * row.get("aqu", 0.0)))
        tcp["OutSegs"] += int(round(row.get("oseg", 900.0) * seconds))
        tcp["InSegs"] += int(round(row.get("oseg", 900.0) * seconds))
        etcp["RetransSegs"] += int(round(row.get("retrans", 0.0) * seconds))
        psi["some_cpu_total"] += int(round(row.get("scpu", 1.0) / 100 * seconds * 1_000_000))
        tcp["ActiveOpens"] += int(round(row.get("active", 0.3) * seconds))
        tcp["PassiveOpens"] += int(round(row.get("active", 0.3) * seconds))
        sock["tcp_tw"] = int(row.get("tw", 20))
        swapping["pswpout"] += int(round(row.get("pswpout", 0.0) * seconds))
        if row.get("fs_full"):
            fs.update(f_bfree=0, f_bavail=0)
        for name, per_s in row.get("paging", {}).items():
            paging[name] += int(round(per_s * seconds))
        if "swpused_kb" in row:
            memory.update(frskb=memory["tlskb"] - row["swpused_kb"], frmkb=169_928, camkb=40_120, bufkb=8356,
                          availablekb=0)
        memory.update({k: row[k] for k in ("frmkb", "camkb", "availablekb") if k in row})
        out.append(record(k))
    return out


def _case(folder, rows, seconds=60, files=()):
    folder.mkdir()
    write_sa(folder / "sa24", host="web-lab-09", kernel="6.1.0-13-amd64", ncpu=2, records=_records(rows, seconds))
    for name, text, second in files:
        (folder / name).write_text(text)
        stamp = (T0 + dt.timedelta(seconds=second)).timestamp()
        os.utime(folder / name, (stamp, stamp))
    return sarsleuth.load(folder, tz="UTC")


# ------------------------------------------------------------ retransmissions
def test_one_row_of_a_minute_retransmitting_a_fifth_of_a_percent_is_packet_loss(tmp_path):
    """net-loss-10pct at 60 s: retrans/s 2.07 of oseg/s 942.89 in the one
    row a minute's sampling kept (0.22 % of the segments sent), no row before
    it to compare with."""
    case = _case(tmp_path / "loss", [{"oseg": 942.89, "retrans": 2.07}])
    (f,) = [f for f in case.findings if f.detector == "tcp-retransmits"]
    assert f.metrics["retransmitted"] == pytest.approx(124) and f.metrics["segments_sent"] == pytest.approx(56573)
    assert f.metrics["retrans_share_pct"] == pytest.approx(100 * 124 / 56573)
    assert f.title == "TCP retransmissions at 0.22 % of segments sent (2.1/s; no sample before it to compare)"
    assert f.refs["sample_seconds"] == 60.0 and f.severity == "low"
    top = case.incidents[0]
    assert (top.category, top.cause) == ("network-failure", "tcp-retransmits")
    assert "between 2026-11-24 18:33:00 and 18:34:00 (UTC)" in top.story["headline"]


@pytest.mark.parametrize("row, why", [
    ({"oseg": 942.89, "retrans": 1.8}, "0.19 % of the segments sent: under the 0.2 % bound"),
    ({"oseg": 200.0, "retrans": 0.45}, "0.23 %, but fewer than 0.5 retransmissions a second"),
])
def test_one_row_just_under_the_absolute_bound_is_no_loss(tmp_path, row, why):
    case = _case(tmp_path / "under", [row])
    assert not [f for f in case.findings if f.detector == "tcp-retransmits"], why


def test_a_host_that_always_retransmits_as_much_is_judged_against_its_usual_share(tmp_path):
    """An hour of rows at 0.22 %: the host's usual share, no loss of its own."""
    case = _case(tmp_path / "usual", [{"oseg": 942.89, "retrans": 2.07}] * 60)
    assert not [f for f in case.findings if f.detector == "tcp-retransmits"]


def test_the_same_share_in_one_second_rows_needs_its_usual_share(tmp_path):
    """Two 1-second rows are no coarse row: the baseline rule as before (too short to judge)."""
    case = _case(tmp_path / "second", [{"oseg": 942.89, "retrans": 2.07}] * 2, seconds=1)
    assert not [f for f in case.findings if f.detector == "tcp-retransmits"]


# ------------------------------------------------------- who burnt the CPUs
PS_BURN = """\
USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND
root           1  0.0  0.1 168000 11800 ?        Ss   Nov23   0:04 /sbin/init
root        4410 99.1  0.0  12880  6100 ?        R    18:33   0:19 openssl speed -multi 2 -seconds 35
root        4411 98.6  0.0  12880  6100 ?        R    18:33   0:19 openssl speed -multi 2 -seconds 35
www-data     880  0.3  0.2  55300  9800 ?        S    Nov23   2:01 nginx: worker process
"""

PS_AFTER = """\
USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND
root           1  0.0  0.1 168000 11800 ?        Ss   Nov23   0:04 /sbin/init
www-data     880  0.3  0.2  55300  9800 ?        S    Nov23   2:01 nginx: worker process
"""


def test_the_snapshot_that_shows_the_burn_names_it_not_a_later_one_in_the_same_row(tmp_path):
    """cpu-openssl-speed at 60 s: the row of 18:34:00 is 83.6 % busy; of the
    two snapshots in the minute it covers, the one at 18:33:20 shows openssl
    on both CPUs, the one at 18:34:00 was taken after it ended."""
    files = (("ps-aux-183320.txt", PS_BURN, 20), ("ps-aux-183400.txt", PS_AFTER, 60))
    case = _case(tmp_path / "openssl", [{"busy": 83.6}], files=files)
    (cpu,) = [f for f in case.findings if f.detector == "cpu-saturation"]
    assert cpu.refs["responsible_names"] == ["openssl"]
    assert cpu.refs["responsible"].endswith("in ps at 18:33:20 (ps-aux-183320.txt)")
    assert "openssl" in case.incidents[0].story["headline"]


def test_a_row_whose_snapshots_show_no_burn_names_none(tmp_path):
    files = (("ps-aux-183320.txt", PS_AFTER, 20), ("ps-aux-183400.txt", PS_AFTER, 60))
    case = _case(tmp_path / "nobody", [{"busy": 83.6}], files=files)
    (cpu,) = [f for f in case.findings if f.detector == "cpu-saturation"]
    assert "responsible" not in cpu.refs


PS_YOUNG = """\
USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND
root           1  0.0  0.1 168000 11800 ?        Ss   Nov23   0:04 /sbin/init
root        7876 98.7  0.0  77312  6548 ?        R    18:33   0:19 stress-ng-cpu [run]
root        7877 94.9  0.0  77312  6552 ?        R    18:33   0:18 stress-ng-cpu [run]
root        7871  2.7  0.0 251604  5256 ?        Ssl  18:33   0:01 wrk -t2 -c50 -d80s --latency http://127.0.0.1:8080/
www-data     880  0.3  0.2  55300  9800 ?        S    Nov23   2:01 nginx: worker process
"""


def test_a_burn_half_a_row_long_is_seen_by_the_snapshot_taken_in_it(tmp_path):
    """cpu-stress-ng-web-latency at 60 s: its one row averages 50.1 % busy
    (the burn began half way through the minute), too little to call the
    CPUs saturated; the ps snapshot taken 9 s before the row's end shows two
    stress-ng workers at 98.7 % and 94.9 % with 19 s and 18 s of CPU time:
    each that young (19.8 s and 19.5 s), together 1.92 of the 2 CPUs since
    18:33:31."""
    case = _case(tmp_path / "young", [{"busy": 50.1}], files=(("ps-aux-183351.txt", PS_YOUNG, 51),))
    (cpu,) = [f for f in case.findings if f.detector == "cpu-saturation"]
    assert cpu.title == ("CPUs saturated for the 20 s before a ps snapshot: 2 process(es) started since used 1.92 of "
                         "the 2 CPUs; the 1-minute sample around it averages 50.1 % busy")
    # 18:33:51 less the older worker's age, (19 s + half TIME's second) / 98.7 % = 19.76 s, to the second
    assert cpu.start == pd.Timestamp("2026-11-24 18:33:31", tz="UTC")
    assert cpu.end == pd.Timestamp("2026-11-24 18:33:51", tz="UTC") and cpu.severity == "high"
    assert cpu.metrics["cpus_used"] == pytest.approx(1.923, abs=0.002)
    assert [e.line for e in cpu.evidence[:2]] == [3, 4]
    top = case.incidents[0]
    assert (top.category, top.cause) == ("cpu-saturation", "cpu-saturation")
    assert "stress-ng-cpu" in top.story["headline"]


@pytest.mark.parametrize("rows, ps, why", [
    ([{"busy": 50.1}], PS_YOUNG.replace(" 94.9 ", "  4.9 ").replace("   0:18 stress", "   0:01 stress"),
     "one worker on one of the two CPUs: half of them"),
    ([{"busy": 50.1}], PS_YOUNG.replace("   0:19 stress", "  45:10 stress").replace("   0:18 stress", "  44:01 stress"),
     "workers 46 minutes old: their %CPU is their rate over a life longer than the row"),
    ([{"busy": 10.0}], PS_YOUNG, "40 s of CPU time where the row holds 12: ps and sar disagree"),
    ([{"busy": 50.1}], PS_YOUNG.replace("stress-ng-cpu [run]", "/usr/bin/python3 /usr/sbin/sos report --batch"),
     "the collector that gathered the files"),
])
def test_a_young_process_that_did_not_fill_the_cpus_is_no_burn(tmp_path, rows, ps, why):
    case = _case(tmp_path / "near", rows, files=(("ps-aux-183351.txt", ps, 51),))
    assert not [f for f in case.findings if f.detector == "cpu-saturation"], why


PS_ZSTD = """\
USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND
root           1  0.0  0.1 168000 11800 ?        Ss   Nov23   0:04 /sbin/init
root       26698  190  0.4 401220 98104 ?        Rl   18:34   1:35 zstd -19 -T2 -f -q /srv/data/access.log -o /srv/data/access.log.zst
www-data     880  0.3  0.2  55300  9800 ?        S    Nov23   2:01 nginx: worker process
"""


def test_a_snapshot_dates_a_burn_that_a_first_diluted_row_hid(tmp_path):
    """cpu-zstd-archive-job at 60 s: the job began at 18:34:34, 26 s before
    the row of 18:35:00 (44.1 % busy: not saturated on average); the row of
    18:36:00 is 99.2 %.  The rows date the burn from 18:35:00; the snapshot
    at 18:35:24, zstd at 190 % with 1:35 of CPU (50 s old), dates it from
    18:34:34."""
    rows = [{"busy": 5.0}, {"busy": 44.1}, {"busy": 99.2}]
    case = _case(tmp_path / "zstd", rows, files=(("ps-aux-183524.txt", PS_ZSTD, 144),))
    burns = sorted((f for f in case.findings if f.detector == "cpu-saturation"), key=lambda f: f.start)
    assert [f.refs.get("seen_by") for f in burns] == ["ps", None]
    assert burns[0].start == pd.Timestamp("2026-11-24 18:34:34", tz="UTC")
    top = case.incidents[0]
    assert (top.category, top.cause) == ("cpu-saturation", "cpu-saturation")
    assert top.start == pd.Timestamp("2026-11-24 18:34:34", tz="UTC")
    assert "zstd" in top.story["headline"]


def test_one_second_rows_leave_the_cpus_to_sar(tmp_path):
    """At 1 s the rows show the burn themselves: no second finding from ps."""
    case = _case(tmp_path / "fine", [{"busy": 2.0}] * 60, seconds=1, files=(("ps-aux-183351.txt", PS_YOUNG, 51),))
    assert not [f for f in case.findings if f.detector == "cpu-saturation"]


# ------------------------------------------------------------------- disk full
def _backup_log(second: int) -> str:
    return (f"Nov 24 18:{33 + second // 60:02d}:{second % 60:02d} web-lab-09 backup[4242]: dd: error writing "
            "'/srv/backup/db.dump': No space left on device\n")


def test_writes_failing_within_the_row_that_shows_the_filesystem_full_are_its_effects(tmp_path):
    """/srv/backup half used at 18:34:00, full at 18:35:00: it filled within
    that minute, and dd's write failing at 18:34:40 is its effect, naming
    the backup job."""
    case = _case(tmp_path / "full", [{}, {"fs_full": True}], files=(("messages", _backup_log(100), 130),))
    top = case.incidents[0]
    assert (top.category, top.cause) == ("disk-full", "filesystem-full")
    fs = next(f for f in top.findings if f.detector == "filesystem-full")
    assert fs.refs["sample_seconds"] == 60.0 and "began_before_records" not in fs.refs
    (enospc,) = [f for f in top.findings if f.detector == "enospc"]
    assert enospc.role == "effect" and "backup" in top.story["headline"]


def test_writes_failing_before_the_row_s_interval_stay_context(tmp_path):
    """The same failure logged at 18:33:50, while the row of 18:34:00 still
    showed the filesystem half used: not what filling it caused."""
    case = _case(tmp_path / "before", [{}, {"fs_full": True}], files=(("messages", _backup_log(50), 130),))
    top = case.incidents[0]
    (enospc,) = [f for f in top.findings if f.detector == "enospc"]
    assert enospc.role == "context"


def test_a_filesystem_full_at_the_first_sample_has_nothing_before_it(tmp_path):
    """diskfull-backup-dd at 60 s: full already in the first row (18:34:00),
    the write failing at 18:32:50: it filled before the records began, when
    is unknown, and the failure is its effect, the incident's start."""
    case = _case(tmp_path / "first", [{"fs_full": True}], files=(("messages", _backup_log(-10), 70),))
    top = case.incidents[0]
    fs = next(f for f in top.findings if f.detector == "filesystem-full")
    assert fs.refs["began_before_records"] is True
    (enospc,) = [f for f in top.findings if f.detector == "enospc"]
    assert enospc.role == "effect" and str(top.start).startswith("2026-11-24 18:32:50")


# ------------------------------------------------------------------- I/O wait
HUNG = "Nov 24 18:33:50 web-lab-09 kernel: INFO: task dd:7178 blocked for more than 30 seconds.\n"


def test_io_wait_on_a_disk_busy_longer_than_the_wait_is_its_cause(tmp_path):
    """io-fio-randwrite-fsync at 60 s: fio's fsyncs from 16:39:22 in the row
    of 16:40:00, %iowait 31.77 with vda 43.67 %util (both diluted alike by
    the 22 s before fio started), 19,722 tiny writes a second; a task hung
    behind them."""
    case = _case(tmp_path / "fsync", [{"busy": 21.7, "iowait": 31.77, "util": 43.67, "aqu": 1.07, "tps": 19722}],
                 files=(("messages", HUNG, 70),))
    (f,) = [f for f in case.findings if f.detector == "iowait-spike"]
    assert f.metrics["busiest_disk_util_pct"] == pytest.approx(43.67, abs=0.01)
    assert f.metrics["busiest_disk_util_over_iowait"] == pytest.approx(43.67 / 31.77, abs=0.01)
    top = case.incidents[0]
    assert (top.category, top.cause) == ("io-saturation", "iowait-spike")


def test_io_wait_longer_than_the_disk_was_busy_is_not_the_disk(tmp_path):
    """A writer held by its cgroup's io.max: the CPUs wait 31.77 % of the
    time, the disk has I/O in flight 30 % of it: the wait is on the throttle."""
    case = _case(tmp_path / "throttled", [{"busy": 1.0, "iowait": 31.77, "util": 30.0, "aqu": 0.3, "tps": 200}],
                 files=(("messages", HUNG, 70),))
    (f,) = [f for f in case.findings if f.detector == "iowait-spike"]
    assert f.metrics["busiest_disk_util_over_iowait"] == pytest.approx(30.0 / 31.77, abs=0.01)
    assert case.incidents[0].cause == "hung-task"


# ----------------------------------------------------------------------- swap
def test_swap_in_use_written_within_its_one_row_is_ram_running_out(tmp_path):
    """mem-swap-grower at 60 s: pswpout/s 9,428.28 over the minute is
    2,262,787 kB swapped out, and 2,264,296 kB in use at 19:56:00 (53.99 %)."""
    # the row's paging as sar printed it: reclaim scanning efficiently (%vmeff 62.85), few major faults
    paging = {"pgmajfault": 16.35, "pgscan_kswapd": 28751.42, "pgscan_direct": 1954.93, "pgsteal": 19297.47,
              "pgfault": 54496.25, "pgfree": 11359.87}
    case = _case(tmp_path / "grower", [{"pswpout": 9428.28, "swpused_kb": 2_264_296, "busy": 36.6,
                                        "paging": paging}])
    (f,) = [f for f in case.findings if f.detector == "swap-climb"]
    assert f.metrics["peak_swpused_pct"] == pytest.approx(100 * 2_264_296 / 4_194_300)
    assert f.metrics["swapped_out_kb"] == pytest.approx(565_697 * 4)
    assert f.title == ("Swap 53.99 % used at 18:34:00, written within its 1-minute sample: at least 2,262,788 kB "
                       "swapped out in it (pswpout/s 9428.28), 2,264,296 kB in use at its end")
    top = case.incidents[0]
    assert (top.category, top.cause) == ("memory-exhaustion", "swap-climb")


@pytest.mark.parametrize("row, why", [
    ({"pswpout": 100.0, "swpused_kb": 2_264_296}, "swap held from before: 24,000 kB written in the row"),
    ({"pswpout": 9428.28, "swpused_kb": 1_200_000}, "28.6 % of swap in use: under the 30 % level"),
])
def test_swap_in_use_not_written_within_the_row_is_no_finding(tmp_path, row, why):
    case = _case(tmp_path / "held", [row])
    assert not [f for f in case.findings if f.detector == "swap-climb"], why


# ------------------------------------------------------------------ TIME_WAIT
def _wrk(header: str, requests: int = 1128384) -> str:
    return f"""\
$ wrk -t2 -c100 -d40s {header}--latency http://127.0.0.1:8080/
Running 40s test @ http://127.0.0.1:8080/
  2 threads and 100 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     2.06ms    1.66ms  17.46ms   68.79%
    Req/Sec    14.15k     1.27k   22.23k    73.37%
  Latency Distribution
     50%    1.71ms
     75%    3.04ms
     90%    4.36ms
     99%    7.05ms
  {requests} requests in 40.10s, 2.43GB read
Requests/sec:  28140.21
Transfer/sec:     61.97MB
"""


def _tw_case(tmp_path, name, header="-H 'Connection: close' ", tw=8000, requests=1128384):
    """tw-overflow-wrk-close at 60 s: wrk from 18:33:09 to 18:33:49 against
    the host's own nginx, a connection a request; one row at 18:34:00."""
    rows = [{"active": requests / 60, "tw": tw, "busy": 67.0}]
    return _case(tmp_path / name, rows, files=(("wrk-close.txt", _wrk(header, requests), 49),))


def test_time_wait_far_under_what_a_local_run_closed_is_a_full_table(tmp_path):
    case = _tw_case(tmp_path, "full")
    (f,) = [f for f in case.findings if f.detector == "tcp-timewait"]
    assert f.metrics["peak_tcp_tw"] == 8000 and f.metrics["run_timewait_expected"] == pytest.approx(1128384)
    assert f.title == ("TIME_WAIT sockets at 8,000 at 18:34:00 where the load test's connections to this host in "
                       "the 60 s before would have left 1,128,384: a table full at its cap (tcp_max_tw_buckets is "
                       "likely 8,000; not recorded: inferred)")
    assert f.severity == "high" and f.refs["sample_seconds"] == 60.0
    top = case.incidents[0]
    assert (top.category, top.cause) == ("socket-exhaustion", "tcp-timewait")


@pytest.mark.parametrize("header, tw, requests, why", [
    ("", 8000, 1128384, "keep-alive: a few connections for every request, no TIME_WAIT each"),
    ("-H 'Connection: close' ", 600000, 1128384, "more than half what the run closed is in TIME_WAIT"),
    ("-H 'Connection: close' ", 800, 1600, "under a thousand sockets: no table of any size is full"),
])
def test_time_wait_the_run_accounts_for_is_no_full_table(tmp_path, header, tw, requests, why):
    case = _tw_case(tmp_path, "fine", header, tw, requests)
    assert not [f for f in case.findings if f.detector == "tcp-timewait"], why


# ------------------------------------------------------------------ CPU quota
PS_BEFORE = """\
USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND
root       24830 18.7  0.0 173728 19748 ?        Ss   18:31   0:15 /usr/bin/python3 /srv/app/backend.py --port 9001 --name shop-api
root       24831  0.0  0.0   6380  2996 ?        S    18:31   0:00 logger -t shop-api[24830]
www-data   24835  0.6  0.0  12100  4616 ?        S    18:31   0:00 nginx: worker process
"""

PS_DURING = """\
USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND
root       24830 22.5  0.0 599776 21092 ?        Rsl  18:31   0:33 /usr/bin/python3 /srv/app/backend.py --port 9001 --name shop-api
root       24831  0.0  0.0   6380  2996 ?        S    18:31   0:00 logger -t shop-api[24830]
www-data   24835  0.6  0.0  12224  4768 ?        S    18:31   0:00 nginx: worker process
"""

SYSLOG = """\
Nov 24 18:31:40 web-lab-09 shop-api[24830]: listening on 127.0.0.1:9001 (pid 24830)
Nov 24 18:35:12 web-lab-09 shop-api[24830]: BrokenPipeError: [Errno 32] Broken pipe
"""

ERROR_LOG = "".join(
    f"2026/11/24 18:35:{s:02d} [error] 24835#24835: *{700 + s} upstream timed out (110: Connection timed out) "
    "while reading response header from upstream, client: 127.0.0.1, server: shop, request: \"GET /api/ "
    "HTTP/1.1\", upstream: \"http://127.0.0.1:9001/api/\", host: \"127.0.0.1:8080\"\n" for s in range(6, 50, 3))

QUIET = {"busy": 10.0, "scpu": 1.3}


def _quota(tmp_path, name, during: dict):
    """10-second rows: two quiet minutes, 90 s of the API throttled
    (``during``), a quiet minute; ps at 18:34:36 and 18:35:46, the proxy's
    timeouts from 18:35:06."""
    rows = [QUIET] * 12 + [during] * 9 + [QUIET] * 6
    files = (("ps-aux-183436.txt", PS_BEFORE, 96), ("ps-aux-183546.txt", PS_DURING, 166),
             ("messages", SYSLOG, 200), ("error.log", ERROR_LOG, 200))
    return _case(tmp_path / name, rows, seconds=10, files=files)


def test_tasks_waiting_for_a_cpu_while_the_cpus_idle_is_a_cpu_quota_with_its_service(tmp_path):
    case = _quota(tmp_path, "quota", {"busy": 16.0, "scpu": 52.0})
    (stall,) = [f for f in case.findings if f.detector == "cpu-stall"]
    assert stall.metrics["mean_some_pct"] == pytest.approx(52.0)
    assert stall.metrics["mean_busy_pct"] == pytest.approx(16.0)
    assert stall.title == ("Tasks stalled on the CPU 52.0 % of the time (PSI some, peak 52.0 %), while the CPUs "
                           "were only 16.0 % busy: held back by a CPU quota (cgroup cpu.max, CPUQuota=) or pinned "
                           "to busy CPUs, a guess from the idle CPUs")
    top = case.incidents[0]
    assert (top.category, top.cause) == ("cpu-saturation", "cpu-stall")
    roles = {f.detector: f.role for f in top.findings}
    assert roles["upstream-timeout"] == "effect"
    # the API's process: 18 s of CPU in the 70 s between the snapshots, a quarter of one CPU
    assert stall.refs["responsible"].startswith(
        "shop-api (as its log lines tag it; backend.py in ps, PID 24830: 25.7 % CPU)")
    # the service as its own log lines name it, the name its operators know
    assert "by shop-api" in top.story["headline"]
    assert any("cpu.max" in r for r in top.recommendations)


def test_tasks_waiting_for_busy_cpus_are_no_quota(tmp_path):
    """The same stall with the CPUs 60 % busy: the CPUs' own saturation seen
    from the waiting side, no quota said and none advised."""
    case = _quota(tmp_path, "busy", {"busy": 60.0, "scpu": 52.0})
    (stall,) = [f for f in case.findings if f.detector == "cpu-stall"]
    assert stall.title.endswith("(PSI some, peak 52.0 %), the CPUs 60.0 % busy")
    assert not any("cpu.max" in r for i in case.incidents for r in i.recommendations)
    assert not any(i.cause == "cpu-stall" and i.category == "cpu-saturation" and "quota" in i.title
                   for i in case.incidents)


def test_a_stall_just_under_a_quarter_of_the_time_is_no_finding(tmp_path):
    """With the CPUs mostly idle a stall counts from a quarter of the time
    (held_back_some_pct); just under it, and just under half the time with
    the CPUs busy, there is none."""
    case = _quota(tmp_path, "under", {"busy": 16.0, "scpu": 24.0})
    assert not [f for f in case.findings if f.detector == "cpu-stall"]
    case = _quota(tmp_path, "busy-under", {"busy": 60.0, "scpu": 49.0})
    assert not [f for f in case.findings if f.detector == "cpu-stall"]


# ---------------------------------------------------------- swap and a tmpfs
#: mem-tmpfs-render-frames at 60 s: the row after the render job began
#: (page cache 3.7 GiB, the database holding most of RAM), then the row
#: after the kernel killed the database: RAM free again, the cache at 7.4
#: GiB, swap full.  kbavail rose: only swap shows where the memory went.
TMPFS_ROWS = [{"frmkb": 1_655_628, "camkb": 3_829_432, "availablekb": 2_568_852},
              {"swpused_kb": 2_097_148, "pswpout": 2_097_148 / 4 / 60, "frmkb": 16_614_856, "camkb": 7_770_356,
               "availablekb": 16_429_776}]


def test_cache_that_pushed_the_processes_into_swap_is_told_as_a_tmpfs(tmp_path):
    case = _case(tmp_path / "tmpfs", TMPFS_ROWS)
    (swap,) = [f for f in case.findings if f.detector == "swap-climb"]
    assert swap.refs["shared_memory"] is True
    assert swap.title.endswith("; page cache (kbcached) up from 3.7 GiB to 7.4 GiB while swap in use rose from 0.0 "
                               "GiB to 2.0 GiB and the processes' memory (kbmemused) did not grow: most likely files "
                               "in a tmpfs or /dev/shm, held by no process's RSS, that no OOM kill frees")


def test_swap_filled_by_a_process_that_grew_is_no_tmpfs(tmp_path):
    """The same swap, with the cache where it was and the memory in use
    grown: a process took it."""
    rows = [TMPFS_ROWS[0], {**TMPFS_ROWS[1], "frmkb": 169_928, "camkb": 3_900_000, "availablekb": 0}]
    case = _case(tmp_path / "process", rows)
    (swap,) = [f for f in case.findings if f.detector == "swap-climb"]
    assert "shared_memory" not in swap.refs and "tmpfs" not in swap.title


# ------------------------------------------------------ TIME_WAIT at its cap
def test_a_table_held_at_its_cap_in_ten_second_rows(tmp_path):
    """tw-close-loadtest-busy at 10 s: ab opened 13,416 connections a
    second in the row of 06:21:40 and 6,586 in the next, TIME_WAIT holds at
    6,000 for a minute: the table at its cap, though no bundle gives it.
    The connections opened while it held are counted over each row's own
    ten seconds (the first row inside it too)."""
    rows = ([{"tw": 20}] * 6 + [{"tw": 5999, "active": 13416.0}, {"tw": 6000, "active": 6586.0}]
            + [{"tw": 6000}] * 4 + [{"tw": 5978}, {"tw": 0}, {"tw": 0}])
    case = _case(tmp_path / "tw10", rows, seconds=10)
    (tw,) = [f for f in case.findings if f.detector == "tcp-timewait"]
    assert tw.title.startswith("TIME_WAIT sockets held at 6,000 for 50 s (6 samples): a table full at its cap")
    assert (case.incidents[0].category, case.incidents[0].cause) == ("socket-exhaustion", "tcp-timewait")


def test_a_burst_of_sockets_that_held_still_without_connections_opening_is_no_cap(tmp_path):
    """The same plateau with almost no connections opened while it held:
    sockets of a burst that ended hold still until they expire together."""
    rows = [{"tw": 20}] * 6 + [{"tw": 5999, "active": 13416.0}, {"tw": 6000, "active": 30.0}] + [{"tw": 6000}] * 4
    case = _case(tmp_path / "still", rows, seconds=10)
    assert not [f for f in case.findings if f.detector == "tcp-timewait" and "held at" in f.title]


# ------------------------------------------------------- a stopped service
PS_FROZEN = """\
USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND
root           1  0.0  0.1 168000 11800 ?        Ss   Nov23   0:04 /sbin/init
root       17271  0.4  0.0 173732 19668 ?        Ts   18:32   0:00 /usr/bin/python3 /srv/app/backend.py --port 9001 --name search-api
www-data     880  0.3  0.2  55300  9800 ?        S    Nov23   2:01 nginx: worker process
"""

FROZEN_SYSLOG = "Nov 24 18:32:10 web-lab-09 search-api[17271]: listening on 127.0.0.1:9001\n"


def _frozen_error_log(first: int, count: int) -> str:
    return "".join(
        f"2026/11/24 18:{33 + (first + k) // 60:02d}:{(first + k) % 60:02d} [error] 880#880: *{100 + k} upstream "
        "timed out (110: Connection timed out) while reading response header from upstream, client: 10.0.0.7, "
        'server: _, request: "GET /search?q=a HTTP/1.1", upstream: "http://127.0.0.1:9001/search?q=a", '
        'host: "search.example.com"\n' for k in range(count))


def test_a_service_stopped_in_ps_is_the_cause_of_its_clients_timeouts_and_retransmissions(tmp_path):
    """upstream-frozen-backend-sos: the search API frozen by SIGSTOP; its
    listen queue full, the proxy's SYNs are retransmitted from the row of
    18:33:50, nginx's first timeout (proxy_read_timeout 5 s) is logged at
    18:33:53; the ps snapshot at 18:34:20 shows the API in state T:
    stopped, the cause of both, though seen after them."""
    rows = [{}] * 4 + [{"oseg": 28.0, "retrans": 4.4}] * 5 + [{}] * 3
    files = (("ps-aux-183420.txt", PS_FROZEN, 80), ("messages", FROZEN_SYSLOG, 120),
             ("error.log", _frozen_error_log(53, 30), 120))
    case = _case(tmp_path / "frozen", rows, seconds=10, files=files)
    (stopped,) = [f for f in case.findings if f.detector == "process-stopped"]
    assert stopped.title == ("search-api (PID 17271, backend.py) stopped in ps at 18:34:20 (STAT Ts): stopped by a "
                             "signal (SIGSTOP or SIGTSTP: an operator, a script, a frozen container); it answers "
                             "nothing")
    top = case.incidents[0]
    assert (top.category, top.cause) == ("service-failure", "process-stopped")
    roles = {f.detector: f.role for f in top.findings}
    assert roles["tcp-retransmits"] == "effect" and roles["upstream-timeout"] == "effect"
    assert top.start == pd.Timestamp("2026-11-24 18:33:50", tz="UTC")
    assert "search-api" in top.story["headline"]


@pytest.mark.parametrize("row, why", [
    ("root       17271  0.0  0.0  12000  3000 pts/0    T    18:32   0:00 vim /etc/nginx/nginx.conf",
     "an editor suspended with Ctrl-Z in its terminal"),
    ("root       17271  0.4  0.0 173732 19668 ?        Ss   18:32   0:00 /usr/bin/python3 /srv/app/backend.py",
     "a daemon sleeping, as they do"),
    ("root       17271  9.0  0.1 300000 40000 ?        T    18:32   0:02 /usr/bin/python3 /usr/sbin/sos report",
     "the collector that gathered the files, stopped while it ran"),
])
def test_a_process_that_is_not_a_stopped_daemon_is_no_finding(tmp_path, row, why):
    ps = PS_FROZEN.replace(PS_FROZEN.splitlines()[2], row)
    case = _case(tmp_path / "near", [{}] * 4, seconds=10, files=(("ps-aux-183420.txt", ps, 30),))
    assert not [f for f in case.findings if f.detector == "process-stopped"], why


# ------------------------------------------------ a kill after the last sample
_GROWERS = """USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND
root           1  0.0  0.0  21788 12852 ?        Ss   Nov23   0:02 /sbin/init
root       31104  1.9 75.4 20585060 18614548 ?   Ss   18:20   0:53 python3 /srv/app/grower.py --name search-index --rate-mb 3000 --hold 7200
root        5073  0.4 22.4 5557264 5547744 ?     Ss   18:50   0:08 python3 /srv/app/grower.py --name session-cache --rate-mb 3 --hold 3000
root        1201  0.1  0.1  31000 12000 ?        Ss   18:00   0:01 telemetry-agent --interval 10
"""


def _kill(at: str) -> str:
    return (f"2026-11-24T{at}.000000+00:00 web-lab-09 kernel: Out of memory: Killed process 31104 (search-index) "
            "total-vm:20585060kB, anon-rss:18502912kB, file-rss:164kB, shmem-rss:0kB, UID:0 pgtables:40328kB "
            "oom_score_adj:0\n")


def test_a_kill_within_the_interval_after_a_ten_minute_swap_climb_is_its_effect(tmp_path):
    """Swap written full in the row stamped 19:03:00 (a 10-minute sample);
    the kernel kills the biggest process at 19:09:05, before the next
    sample; the only ps, at 19:07:42, shows one script run as two services.
    One incident, and both instances told apart: no earlier snapshot says
    which of them grew."""
    rows = [{}, {}, {"pswpout": 1000.0, "swpused_kb": 2_264_296}]
    case = _case(tmp_path / "coarse", rows, seconds=600,
                 files=(("messages", _kill("19:09:05"), 2145), ("ps-aux-190742.txt", _GROWERS, 2082)))
    assert len(case.incidents) == 1
    top = case.incidents[0]
    assert (top.category, top.cause) == ("memory-exhaustion", "swap-climb")
    assert "oom-kill" in {f.detector for f in top.findings if f.role == "effect"}
    climb = next(f for f in top.findings if f.detector == "swap-climb")
    assert climb.refs["responsible"] == (
        "grower.py (2 processes: RSS 23.0 GiB; PID 31104: RSS 17.8 GiB, started 18:20, run as `grower.py --name "
        "search-index --rate-mb 3000 --hold 7200`; PID 5073: RSS 5.3 GiB, started 18:50, run as `grower.py --name "
        "session-cache --rate-mb 3 --hold 3000` (no earlier snapshot says which of them grew)) in ps at 19:07:42, "
        "282 s after it (ps-aux-190742.txt)")


def test_a_kill_six_minutes_after_a_one_minute_sample_is_an_incident_of_its_own(tmp_path):
    """The same climb sampled every minute: the row after it would have
    shown anything still going, and six minutes are beyond the grouping's
    five."""
    rows = [{}, {}, {"pswpout": 9428.28, "swpused_kb": 2_264_296}]
    case = _case(tmp_path / "fine", rows, seconds=60, files=(("messages", _kill("18:42:00"), 540),))
    assert sorted((i.cause for i in case.incidents)) == ["oom-kill", "swap-climb"]


# ------------------------------------------------------------ the backstop on a minute of ten-second rows
def _unexplained(case):
    """The backstop alone, as if no detector had a rule for what happened."""
    from sarsleuth.analysis.unexplained import unexplained
    return unexplained(case.store, case.events, case.sources, [], case.clock)


def test_a_stall_after_a_minute_and_a_half_of_ten_second_rows_is_an_unexplained_change(tmp_path):
    """Nine ordinary rows, then a minute in which the disk's queue grows to
    eight requests, the CPUs wait on it 40 % of their time and tasks wait
    for a CPU: two groups strain against a baseline shorter than a full
    one's ten samples, and that is enough."""
    stall = {"busy": 30.0, "iowait": 40.0, "tps": 2000, "util": 95.0, "aqu": 8.0, "scpu": 20.0}
    case = _case(tmp_path / "stall", [{}] * 9 + [stall] * 6, seconds=10)
    (found,) = _unexplained(case)
    assert found.title.startswith("unexplained change on host web-lab-09: ") and found.category == "other"
    leads = [c["series"] for c in found.refs["changes"]]
    assert leads == ["%util of disk dev252-0", "%iowait of cpu all", "%scpu of psi-cpu"]
    assert "aqu-sz of disk dev252-0" in found.refs["changes"][0]["with"]
    iowait = found.refs["changes"][1]
    assert (iowait["baseline"], iowait["window"], iowait["baseline_samples"]) == (0.0, 40.0, 9)
    assert found.metrics["strain_series"] == 3 and found.refs["sample_seconds"] == 10.0
    # the first stalled row is stamped at the end of its ten seconds
    assert found.start == pd.Timestamp(T0 + dt.timedelta(seconds=100))


def test_a_routine_job_against_the_same_short_baseline_is_not(tmp_path):
    """Near miss: a job reading and compressing (more CPU and disk work,
    tasks waiting for a CPU a little) strains one group only: against nine
    rows that is no change the host went through; against a full baseline
    of twelve rows, one straining group is enough."""
    job = {"busy": 45.0, "tps": 600, "util": 35.0, "scpu": 12.0}
    case = _case(tmp_path / "short", [{}] * 9 + [job] * 6, seconds=10)
    assert _unexplained(case) == []
    case = _case(tmp_path / "full", [{}] * 12 + [job] * 6, seconds=10)
    (found,) = _unexplained(case)
    assert [c["series"] for c in found.refs["changes"]] == ["%util of disk dev252-0", "%usr of cpu all",
                                                            "%scpu of psi-cpu"]
    assert found.metrics["strain_series"] == 1
