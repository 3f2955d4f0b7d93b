"""Logs as operators paste them into tickets and threads: lines wrapped by
a terminal (coreutils fold) or a mail client, quoted in backticks, a bare
kernel message, util-linux's dmesg -H, sar rows without their header, a
load test cut short, NGINX Unit's log: each read for what it says."""
from __future__ import annotations

import os
import shutil
import subprocess

import pandas as pd
import pytest

import sarsleuth
from sarsleuth.inputs.parsers import parse, sniff

#: rsyslog's traditional lines of an OOM kill and systemd's words for it
LINES = [
    "Mar  3 10:00:01 web1 kernel: [ 8100.000001] nginx invoked oom-killer: gfp_mask=0x6200ca(GFP_HIGHUSER_MOVABLE), "
    "order=0, oom_score_adj=0",
    "Mar  3 10:00:01 web1 kernel: [ 8100.000002] Out of memory: Killed process 2817 (nginx) total-vm:9127840kB, "
    "anon-rss:7841220kB, file-rss:1024kB, shmem-rss:2048kB, UID:33 pgtables:15460kB oom_score_adj:0",
    "Mar  3 10:00:05 web1 systemd[1]: nginx.service: Main process exited, code=killed, status=9/KILL",
    "Mar  3 10:00:05 web1 systemd[1]: nginx.service: Failed with result 'oom-kill'.",
]


def _fold(tmp_path, *args) -> str:
    exe = shutil.which("fold")
    if exe is None:
        pytest.skip("fold (coreutils) is not installed")
    src = tmp_path / "orig.log"
    src.write_text("\n".join(LINES) + "\n")
    return subprocess.run([exe, *args, str(src)], capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("how, args, width", [("hard", ("-w", "80"), 80), ("soft", ("-s", "-w", "76"), 74)])
def test_lines_wrapped_by_a_terminal_or_at_words_are_joined_again(tmp_path, how, args, width):
    """`fold -w 80` cuts inside words, `fold -s -w 76` at spaces: either
    way the events are the ones of the lines unwrapped, at the lines where
    they start."""
    path = tmp_path / f"{how}.log"
    path.write_text(_fold(tmp_path, *args))
    assert sniff(path)[0] == "syslog"
    src = parse(path, options=sarsleuth.inputs.parsers.base.ParseOptions(year=2024))
    ev = src.events
    assert list(ev["kind"]) == ["oom-invoked", "oom-kill", "service-exit", "service-failed"]
    assert ev.iloc[1]["message"] == LINES[1].split("] ", 1)[1]
    assert ev.iloc[2]["message"] == "nginx.service: Main process exited, code=killed, status=9/KILL"
    assert any(f"wrapped at {width} columns" in w for w in src.warnings)
    starts = [n for n, line in enumerate(path.read_text().splitlines(), 1) if line.startswith("Mar")]
    assert list(ev["line"]) == starts


def test_lines_of_different_widths_are_not_taken_for_a_wrap(tmp_path):
    """A Java trace's unindented line after a short log line is not the
    end of a wrapped line: nothing is joined."""
    path = tmp_path / "app.log"
    path.write_text("Mar  3 10:00:01 web1 app[811]: request failed\n"
                    "java.io.IOException: Too many open files\n"
                    + "\n".join(LINES) + "\n")
    src = parse(path, options=sarsleuth.inputs.parsers.base.ParseOptions(year=2024))
    assert not any("wrapped" in w for w in src.warnings)


def test_log_lines_quoted_in_backticks_inside_prose(tmp_path):
    """A comment quoting nginx's lines in single backticks."""
    path = tmp_path / "comment.md"
    path.write_text("I see this in the error log:\n\n"
                    "`2024/01/05 10:00:00 [alert] 1234#1234: worker process 1240 exited on signal 11 (core dumped)`\n\n"
                    "and also `2024/01/05 10:00:05 [alert] 1234#1234: worker process 1241 exited on signal 11 "
                    "(core dumped)` right after.\n")
    assert sniff(path)[0] == "nginx-error"
    src = parse(path)
    assert list(src.events["line"]) == [3, 5]
    assert list(src.events["timestamp"]) == [pd.Timestamp("2024-01-05 10:00:00"), pd.Timestamp("2024-01-05 10:00:05")]
    assert any("backticks around log lines (2 lines)" in w for w in src.warnings)


def test_a_log_line_behind_a_lone_quote_mark_is_read(tmp_path):
    """A thread whose poster quoted only the first line of the paste."""
    path = tmp_path / "messages"
    path.write_text("> " + LINES[1] + "\n" + "\n".join(LINES[2:]) + "\n")
    src = parse(path, options=None)
    assert list(src.events["kind"]) == ["oom-kill", "service-exit", "service-failed"]
    assert list(src.events["line"]) == [1, 2, 3]
    assert any("markdown quote marks (1 line)" in w for w in src.warnings)
    # near miss: a quoted line of prose stays prose
    path.write_text("> this is what I see:\n" + "\n".join(LINES[2:]) + "\n")
    assert not any("quote marks" in w for w in parse(path).warnings)


def test_docker_logs_t_keeps_the_program_s_own_lines(tmp_path):
    """`docker logs -t` of an nginx container: docker's RFC 3339 stamp
    before each of nginx's own lines (nanoseconds, Z)."""
    path = tmp_path / "docker.log"
    path.write_text("".join(
        f"2017-05-10T06:50:0{i}.434167704Z 2017/05/10 06:50:0{i} [alert] 1#1: worker process {40 + i} exited on "
        "signal 11 (core dumped)\n" for i in range(3)))
    src = parse(path)
    assert src.kind == "nginx-error" and src.host is None
    assert list(src.events["kind"]) == ["worker-signal-exit"] * 3
    assert src.events["timestamp"].iloc[0] == pd.Timestamp("2017-05-10 06:50:00")
    assert any("docker logs -t stamps (the program's own kept) (3 lines)" in w for w in src.warnings)
    # near miss: an ISO-stamped program line (Python's logging, journalctl -o short-iso) is the program's own
    iso = tmp_path / "app.log"
    iso.write_text("2017-05-10T06:50:00+0000 web1 app[42]: worker restarted\n"
                   "2017-05-10T06:50:01+0000 web1 app[42]: worker restarted\n")
    assert not any("docker" in w for w in parse(iso).warnings)


def test_a_bare_kernel_message_is_an_untimed_event(tmp_path):
    """net/ipv4/tcp_input.c's line pasted alone, no prefix at all."""
    path = tmp_path / "paste.txt"
    path.write_text("TCP: request_sock_TCP: Possible SYN flooding on port 6987. Sending cookies.  "
                    "Check SNMP counters.\n")
    assert sniff(path)[0] == "dmesg"
    case = sarsleuth.load(path)
    (f,) = case.findings
    assert f.detector == "syn-flood" and f.title == "1 x possible SYN flooding on port 6987" and not f.aligned
    assert "time not on the shared clock" in case.incidents[0].summary


KBUF = ("<6>[    0.000000] Linux version 6.1.0-13-amd64 (debian-kernel@lists.debian.org)\n"
        "<4>[ 1800.000010] lact invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, "
        "oom_score_adj=0\n"
        "<3>[ 1800.000133] Out of memory: Killed process 4410 (lact) total-vm:9127840kB, anon-rss:7841220kB, "
        "file-rss:1024kB, shmem-rss:2048kB, UID:0 pgtables:15460kB oom_score_adj:0\n")


def test_dmesg_raw_with_its_priorities_is_read(tmp_path):
    """util-linux dmesg --raw (-r) prints each line behind its priority."""
    exe = shutil.which("dmesg")
    if exe is None:
        pytest.skip("dmesg (util-linux) is not installed")
    buffer = tmp_path / "kbuf"
    buffer.write_text(KBUF)
    raw = subprocess.run([exe, "--file", str(buffer), "--raw", "--nopager"], capture_output=True, text=True,
                         env={**os.environ, "LC_ALL": "C"}, check=True).stdout
    assert raw.splitlines()[2].startswith("<3>[ 1800.000133] Out of memory")
    path = tmp_path / "dmesg-r.txt"
    path.write_text(raw)
    src = parse(path)
    assert list(src.events["kind"]) == ["kernel-boot", "oom-invoked", "oom-kill"]
    assert list(src.events["uptime"])[2] == 1800.000133
    assert any("kernel priority prefixes (dmesg -r) (3 lines)" in w for w in src.warnings)


def test_dmesg_relative_times_with_decimal_commas_and_lines_before_the_first_header(tmp_path):
    """A paste of dmesg -H under a locale that wrote decimal commas, begun
    inside a minute: its first lines have no header to count from."""
    path = tmp_path / "dmesg-H.txt"
    path.write_text("[ +18,993611] lact invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), "
                    "order=0, oom_score_adj=0\n"
                    "[Apr19 18:52] Out of memory: Killed process 4410 (lact) total-vm:9127840kB, anon-rss:7841220kB, "
                    "file-rss:1024kB, shmem-rss:2048kB, UID:0 pgtables:15460kB oom_score_adj:0\n"
                    "[  +0,000508] Out of memory: Killed process 4411 (lact) total-vm:9127840kB, anon-rss:7841220kB, "
                    "file-rss:1024kB, shmem-rss:2048kB, UID:0 pgtables:15460kB oom_score_adj:0\n")
    src = parse(path, options=None)
    kills = src.events[src.events["kind"] == "oom-kill"]
    assert [t.strftime("%m-%d %H:%M:%S.%f") for t in kills["timestamp"]] == ["04-19 18:52:00.000000",
                                                                            "04-19 18:52:00.000508"]
    (invoked,) = src.events.loc[src.events["kind"] == "oom-invoked", "timestamp"]
    assert pd.isna(invoked)
    assert any("before the first minute's header (read without a time) (1 line)" in w for w in src.warnings)


def test_dmesg_human_relative_times_as_util_linux_prints_them(tmp_path):
    """util-linux dmesg --reltime (what -H shows) of a kernel buffer: a
    header each minute, gaps after; each line read to its minute, the
    gaps kept (against the same buffer's --ctime)."""
    exe = shutil.which("dmesg")
    if exe is None:
        pytest.skip("dmesg (util-linux) is not installed")
    buffer = tmp_path / "kbuf"
    buffer.write_text(
        "<6>[    0.000000] Linux version 6.1.0-13-amd64 (debian-kernel@lists.debian.org)\n"
        "<4>[ 1800.000010] lact invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, "
        "oom_score_adj=0\n"
        "<3>[ 1800.000133] Out of memory: Killed process 4410 (lact) total-vm:9127840kB, anon-rss:7841220kB, "
        "file-rss:1024kB, shmem-rss:2048kB, UID:0 pgtables:15460kB oom_score_adj:0\n")
    env = {**os.environ, "TZ": "UTC", "LC_ALL": "C"}
    rel = subprocess.run([exe, "--file", str(buffer), "--reltime", "--color=never", "--nopager"],
                         capture_output=True, text=True, env=env, check=True).stdout
    ctime = subprocess.run([exe, "--file", str(buffer), "--ctime", "--color=never", "--nopager"],
                           capture_output=True, text=True, env=env, check=True).stdout
    assert "[  +0.000123] Out of memory" in rel
    path = tmp_path / "dmesg-H.txt"
    path.write_text(rel)
    assert sniff(path)[0] == "dmesg"
    ev = parse(path).events.set_index("kind")["timestamp"]
    wall = {k: pd.Timestamp(" ".join(line[1:].split("]")[0].split()[1:])) for k, line in
            (("oom-invoked", ctime.splitlines()[1]), ("oom-kill", ctime.splitlines()[2]))}
    for kind in ("oom-invoked", "oom-kill"):
        assert ev[kind].floor("min") == wall[kind].floor("min") and ev[kind].year == wall[kind].year
    assert (ev["oom-kill"] - ev["oom-invoked"]) == pd.Timedelta(microseconds=123)


def test_sar_u_rows_pasted_without_their_header(tmp_path):
    """`sar -u` rows (sysstat 12, 12-hour clock) whose header line was not
    copied: read as sar -u because their percentages sum to 100, said so."""
    path = tmp_path / "cpu.txt"
    path.write_text("10:00:01 AM     all     12.50      0.00      3.25     45.10      0.00     39.15\n"
                    "10:10:01 AM     all     14.25      0.00      4.00     62.33      0.00     19.42\n"
                    "10:20:01 AM     all     11.00      0.00      3.10     20.00      0.00     65.90\n")
    assert sniff(path)[0] == "sar-text"
    src = parse(path)
    m = src.metrics
    iowait = m[(m["section"] == "cpu") & (m["metric"] == "%iowait")].set_index("timestamp")["value"]
    assert list(iowait) == [45.10, 62.33, 20.00]
    assert any("rows without a header line read as sar -u (CPU %user %nice %system %iowait %steal %idle)" in w
               for w in src.warnings)
    # a row whose values do not sum to 100 is no CPU row: not taken
    other = tmp_path / "other.txt"
    other.write_text("10:00:01 AM     all     12.50      0.00      3.25     45.10      0.00     30.15\n" * 3)
    assert sniff(other)[0] is None


def test_ab_aborted_tail_is_read_for_what_it_did(tmp_path):
    """ab.c's two lines when it gives up (apr_err(), then "Total of %d
    requests completed"), pasted alone: the run aborted after 2035."""
    path = tmp_path / "ab.txt"
    path.write_text("Benchmarking 10.0.0.5 (be patient)\napr_socket_recv: Connection reset by peer (104)\n"
                    "Total of 2035 requests completed\n")
    assert sniff(path)[0] == "ab"
    (f,) = sarsleuth.load(path).findings
    assert f.title == "ab: aborted after 2035 requests: apr_socket_recv: Connection reset by peer"


def test_wrk_with_no_answer_is_read_not_refused(tmp_path):
    """wrk 4.2 when every connection failed: '-nan%' in its stats (no
    sample to spread) is read as unknown, the socket errors counted."""
    path = tmp_path / "wrk.txt"
    path.write_text("Running 10s test @ http://127.0.0.1:8080/\n  2 threads and 100 connections\n"
                    "  Thread Stats   Avg      Stdev     Max   +/- Stdev\n"
                    "    Latency     0.00us    0.00us   0.00us    -nan%\n"
                    "    Req/Sec     0.00      0.00     0.00      -nan%\n"
                    "  0 requests in 10.01s, 0.00B read\n"
                    "  Socket errors: connect 100, read 0, write 0, timeout 0\n"
                    "Requests/sec:      0.00\nTransfer/sec:       0.00B\n")
    src = parse(path)
    (report,) = src.reports
    assert report["latency_within_stdev_pct"] is None and report["socket_errors"]["connect"] == 100
    assert src.warnings == []
    (f,) = sarsleuth.load(path).findings
    assert f.title == "wrk c=100: 100 socket errors and no request answered"


def test_nginx_unit_log(tmp_path):
    """NGINX Unit (src/nxt_log.c: "[%V] %PI#%PT " without nginx's colon)."""
    path = tmp_path / "unit.log"
    path.write_text("2024/01/05 10:00:00 [info] 4410#4410 unit 1.31.1 started\n"
                    "2024/01/05 10:00:07 [alert] 4410#4410 app process 4415 exited on signal 9\n"
                    "2024/01/05 10:00:07 [alert] 4410#4410 app process 4416 exited on signal 11 (core dumped)\n")
    assert sniff(path)[0] == "nginx-error"
    ev = parse(path).events
    assert list(ev["process"]) == ["unit", "unit"] and list(ev["pid"]) == [4410, 4410]
    (f,) = [f for f in sarsleuth.load(path).findings if f.detector == "worker-signal-exit"]
    assert f.title.startswith("NGINX Unit processes crashed 2 time(s): 1 x signal 9 (SIGKILL), 1 x signal 11")
