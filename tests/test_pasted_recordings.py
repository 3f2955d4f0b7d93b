"""Pastes of sar output without their banner, beside a dated log, and the
long stretches they hold (sysstat 9's ``sar -d`` and ``sar -u`` layout, a
VM whose disk stalled for an hour, as posted in a public thread)."""
from __future__ import annotations

import pandas as pd

import sarsleuth

DISK_HEAD = "07:05:01 AM       DEV       tps  rd_sec/s  wr_sec/s  avgrq-sz  avgqu-sz     await     svctm     %util\n"
#: (time, tps, aqu-sz, await ms, %util) of the VM's disk: quiet, then its requests waiting seconds
DISK = [("07:15:01 AM", 4.33, 0.11, 26.44, 9.39), ("07:25:02 AM", 8.51, 0.07, 8.41, 3.80),
        ("07:35:01 AM", 2.60, 0.02, 8.02, 1.45), ("07:47:48 AM", 1.42, 7.55, 5322.78, 65.53),
        ("07:55:02 AM", 2.34, 2.25, 961.63, 40.80), ("08:05:47 AM", 0.77, 14.46, 18721.94, 87.95),
        ("08:15:01 AM", 3.25, 10.44, 2165.47, 75.44), ("08:25:01 AM", 4.62, 8.45, 2494.82, 52.87),
        ("08:35:01 AM", 1.01, 8.02, 7865.32, 65.60), ("08:45:01 AM", 1.76, 2.27, 1371.51, 20.98),
        ("08:55:01 AM", 1.92, 0.30, 153.40, 7.83)]
CPU_HEAD = "12:00:01 AM     CPU     %user     %nice   %system   %iowait    %steal     %idle\n"
#: the same VM's CPUs over the night before
CPU = [("12:05:02 AM", 0.84), ("12:15:01 AM", 2.84), ("12:25:01 AM", 0.71), ("12:35:02 AM", 0.79),
       ("12:45:01 AM", 3.72), ("12:55:01 AM", 1.36), ("01:05:01 AM", 0.86)]
SYSLOG = ("Aug  1 07:46:06 localhost kernel: [ 5220.349301] hv_storvsc vmbus_0_1: cmd 0x2a scsi status 0x2 "
          "srb status 0x4\n")


def _disk(rows=DISK) -> str:
    return DISK_HEAD + "".join(f"{t}    dev8-0 {tps:9.2f} {20.0:9.2f} {10.0:9.2f} {22.0:9.2f} {aqu:9.2f} {aw:9.2f} "
                               f"{100.0:9.2f} {util:9.2f}\n" for t, tps, aqu, aw, util in rows)


def _cpu() -> str:
    return CPU_HEAD + "".join(f"{t}     all      1.20      0.00      0.30 {w:9.2f}      0.00 {98.5 - w:9.2f}\n"
                              for t, w in CPU)


def test_a_disk_whose_requests_wait_seconds_is_saturated_for_as_long_and_high(tmp_path):
    path = tmp_path / "sar-d.txt"
    path.write_text(_disk())
    (disk,) = [f for f in sarsleuth.load(path).findings if f.detector == "disk-saturation"]
    # 10-minute rows: each measured against the level before the excursion, not one raised by it
    assert (str(disk.start)[11:], str(disk.end)[11:]) == ("07:47:48", "08:35:01")
    assert disk.severity == "high" and disk.metrics["median_await_ms"] >= 1000


def test_a_busy_disk_answering_in_time_is_no_stall(tmp_path):
    # near miss: the same %util with requests answered in 20 ms
    rows = [(t, tps, aqu, min(aw, 20.0), util) for t, tps, aqu, aw, util in DISK]
    path = tmp_path / "sar-d.txt"
    path.write_text(_disk(rows))
    found = [f for f in sarsleuth.load(path).findings if f.detector == "disk-saturation"]
    assert all(f.severity == "medium" for f in found)


def test_pastes_without_banner_take_the_day_of_a_log_whose_year_is_guessed(tmp_path):
    (tmp_path / "sar-d.txt").write_text(_disk())
    (tmp_path / "sar-u.txt").write_text(_cpu())
    (tmp_path / "syslog").write_text(SYSLOG)
    case = sarsleuth.load(tmp_path, year=2026)
    days = {s.path.rsplit("/", 1)[-1]: pd.Timestamp(s.span()[0]).date().isoformat() for s in case.sources}
    assert days == {"sar-d.txt": "2026-08-01", "sar-u.txt": "2026-08-01", "syslog": "2026-08-01"}
    assert not any("no sar banner, so the date is unknown" in w for w in case.warnings)
    assert any("no sar banner: rows dated 2026-08-01 from the other sources' dates" in n for n in case.notes)
    # the night's CPU paste and the morning's disk paste are two recordings, not one with a hole
    assert not [f for f in case.findings if f.detector == "sar-gap"]


def test_a_hole_inside_one_recording_is_still_a_gap(tmp_path):
    # near miss: the disk paste itself missing two hours
    rows = DISK[:3] + [(f"{t} AM",) + DISK[0][1:] for t in ("09:45:01", "09:55:01", "10:05:01", "10:15:01")]
    path = tmp_path / "sar-d.txt"
    path.write_text(_disk(rows))
    (gap,) = [f for f in sarsleuth.load(path).findings if f.detector == "sar-gap"]
    assert gap.metrics["gap_seconds"] == 7800


def test_nginx_lines_an_editor_cut_still_tell_refused_upstreams(tmp_path):
    """An error.log shown in nano and pasted: each line cut at 80 columns
    with nano's `$`, before its `upstream: "..."`."""
    lines = []
    for at, what in (("17:58:56", "connect() failed (111: Connection ref$"),
                     ("17:58:57", "connect() failed (111: Connection ref$"),
                     ("17:58:59", "no live upstreams while connecting to$"),
                     ("17:59:04", "no live upstreams while connecting to$")):
        lines.append(f"2020/09/08 {at} [error] 3089#3089: *3 {what}")
    path = tmp_path / "error.log"
    path.write_text("\n".join(lines) + "\n")
    (down,) = [f for f in sarsleuth.load(path).findings if f.detector == "upstream-down"]
    assert down.title == ("upstream servers down: an upstream the lines do not name refused 2 x; 2 x no live upstreams "
                          "over 8 s")
    assert (down.metrics["refused"], down.refs["upstreams"], down.refs["groups"]) == (2, [], [])
    assert "With every server of its upstream group marked failed" in down.explanation


def test_a_cut_line_of_another_error_is_no_refused_upstream(tmp_path):
    # near miss: a refused connect of nginx's resolver or mail proxy says so before the cut
    path = tmp_path / "error.log"
    path.write_text("2020/09/08 17:58:56 [error] 3087#3087: send() failed (111: Connection refused) while resol$\n")
    assert not [f for f in sarsleuth.load(path).findings if f.detector == "upstream-down"]


TWO_COMMANDS = """Linux 4.2.0-27-generic (ubuntu)         07/25/2016      _x86_64_        (2 CPU)

08:02:28 PM     CPU     %user     %nice   %system   %iowait    %steal     %idle
08:02:29 PM     all      0.00      0.00      0.50      0.00      0.00     99.50
08:02:30 PM     all      0.00      0.00      0.00      0.00      0.00    100.00

Linux 4.2.0-27-generic (ubuntu)         07/25/2016      _x86_64_        (2 CPU)

08:03:43 PM  pgpgin/s pgpgout/s   fault/s  majflt/s
08:03:44 PM      0.00      0.00    169.00      0.00
08:03:45 PM      0.00      0.00     20.00      0.00
"""


def test_two_sar_commands_pasted_one_after_the_other_are_no_gap(tmp_path):
    """`sar 1 2` then `sar -B 1 2` a minute later, each under its banner:
    two commands, not one recording that stalled for 74 s; nor is `sar 1 2`
    run twice."""
    (tmp_path / "two.txt").write_text(TWO_COMMANDS)
    assert not [f for f in sarsleuth.load(tmp_path / "two.txt").findings if f.detector == "sar-gap"]
    cpu = TWO_COMMANDS.split("\n\n")[:2]
    later = cpu[1].replace("08:02:28", "08:03:43").replace("08:02:29", "08:03:44").replace("08:02:30", "08:03:45")
    again = "\n\n".join(cpu + [cpu[0], later]) + "\n"
    (tmp_path / "again.txt").write_text(again)
    assert not [f for f in sarsleuth.load(tmp_path / "again.txt").findings if f.detector == "sar-gap"]


def test_a_hole_between_two_days_printed_one_after_the_other_is_a_gap(tmp_path):
    """Near miss: two daily outputs, the first ending at 02:00 and the next
    day's beginning at 20:00 with no restart between: the host recorded
    nothing for 42 hours (and the day after: a hole, not two commands)."""
    banner = "Linux 5.14.0-70.el9.x86_64 (db-9) \t03/0{}/2024 \t_x86_64_\t(4 CPU)\n\n"
    head = "{}     CPU     %user     %nice   %system   %iowait    %steal     %idle\n"
    row = "{}     all      2.00      0.00      1.00      0.00      0.00     97.00\n"
    day1 = banner.format(1) + head.format("00:00:01") + "".join(row.format(f"0{h}:{m}0:01") for h in (0, 1)
                                                               for m in range(6))
    day2 = banner.format(2) + head.format("20:00:01") + "".join(row.format(f"{h}:{m}0:01") for h in (20, 21)
                                                               for m in range(6))
    (tmp_path / "days.txt").write_text(day1 + "\n" + day2)
    (gap,) = [f for f in sarsleuth.load(tmp_path / "days.txt").findings if f.detector == "sar-gap"]
    assert gap.metrics["gap_seconds"] == 151_800          # 03/01 01:50:01 to 03/02 20:00:01


QUEUE_NO_BANNER = """\
                runq-sz  plist-sz   ldavg-1   ldavg-5  ldavg-15   blocked
05:10:01 PM         0       361      0.29      1.68      2.14         0
05:11:01 PM         0       363      1.18      1.61      2.08         2
05:12:01 PM         0       363      7.03      3.15      2.58         1
05:13:01 PM         0       365      8.12      4.15      2.96         1
05:14:01 PM         3       371      7.40      4.64      3.20         1
"""


def test_a_load_jump_without_the_cpu_count_does_not_claim_the_cpus(tmp_path):
    """`sar -q` pasted without its banner: the jump is told against its
    own baseline and its explanation says the CPU count is unknown; with
    the banner's 8 CPUs (near miss) the same rows are told against them."""
    (tmp_path / "q.txt").write_text(QUEUE_NO_BANNER)
    (f,) = [f for f in sarsleuth.load(tmp_path / "q.txt").findings if f.detector == "load-spike"]
    assert f.title == "Load average jumped to 8.12 (baseline 0.73)" and f.severity == "medium"
    assert "do not say how many CPUs" in f.explanation and "above the number of CPUs" not in f.explanation
    banner = "Linux 3.10.0-1160.el7.x86_64 (host2) \t05/06/2021 \t_x86_64_\t(8 CPU)\n\n"
    (tmp_path / "q8.txt").write_text(banner + QUEUE_NO_BANNER)
    (g,) = [f for f in sarsleuth.load(tmp_path / "q8.txt").findings if f.detector == "load-spike"]
    assert g.title == "Load average jumped to 8.12 (baseline 0.73, 8 CPUs)" and g.severity == "low"
    assert "above the number of CPUs" in g.explanation


def test_one_ten_minute_row_of_stolen_cpu_is_told(tmp_path):
    """`sar -u` pasted as one row (cPanel's example of steal): the header's
    time is the record before it, so the row averages the 10 minutes from
    14:00:02, a third of which the hypervisor took: told, high; the same
    row of a one-second `sar 1 1` (near miss) is one second, not judged."""
    paste = ("02:00:02 PM CPU %user %nice %system %iowait %steal %idle\n"
             "02:10:02 PM all 25.77 0.18 2.14 0.27 35.53 36.09\n")
    (tmp_path / "u.txt").write_text(paste)
    case = sarsleuth.load(tmp_path / "u.txt")
    (f,) = [f for f in case.findings if f.detector == "cpu-saturation"]
    assert f.title == "CPU lost up to 35.5 % to the hypervisor (%steal)" and f.severity == "high"
    assert case.sources[0].meta["first_row_seconds"] == {pd.Timestamp("1970-01-01 14:10:02").value: 600}
    (tmp_path / "one.txt").write_text(paste.replace("02:00:02 PM", "02:10:01 PM"))
    assert not [f for f in sarsleuth.load(tmp_path / "one.txt").findings if f.detector == "cpu-saturation"]
