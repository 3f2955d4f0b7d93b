"""What ``sarsleuth collect`` takes and leaves, piece by piece: the window
(``--since``, ``--window`` on the host's clock), files chosen by day and
by rotation, each within its cap (a text log keeps its last part, a
compressed one is left out), commands stopped at their time or size cap,
nginx's configuration read as nginx -T prints it (checked against the
real nginx -T), and the one-line errors of the command line."""
from __future__ import annotations

import datetime as dt
import gzip
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from sarsleuth.errors import UsageError
from sarsleuth.inputs.collect import commands, host_files, nginx
from sarsleuth.inputs.collect.host_files import Host
from sarsleuth.inputs.collect.manifest import Budget, Manifest
from sarsleuth.inputs.collect.plan import Caps, span_seconds, size_bytes, window

from .conftest import run_cli

NOW = dt.datetime(2026, 11, 20, 15, 30).astimezone().timestamp()


def _host(tmp_path, span=None, root=None, **caps) -> Host:
    limits = dict(file_bytes=1 << 20, sa_file_bytes=1 << 20, output_bytes=1 << 20, total_bytes=1 << 30,
                  command_seconds=30, total_seconds=600, processes=8)
    limits.update(caps)
    stage = tmp_path / "bundle"
    stage.mkdir(parents=True, exist_ok=True)
    return Host(str(root or tmp_path / "root"), stage, span or window("1d"), Caps(**limits),
                Budget(limits["total_bytes"], time.monotonic() + limits["total_seconds"]), Manifest())


def _write(path: Path, data, mtime: float | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


# ------------------------------------------------------------------ the window
def test_since_counts_back_from_now():
    span = window("2h", now=NOW)
    assert span.end.timestamp() == NOW and span.start.timestamp() == NOW - 7200
    assert span.asked == "--since 2h"
    assert window(now=NOW).start.timestamp() == NOW - 86400          # the default day
    assert span_seconds("1d12h") == 129600 and span_seconds("90m") == 5400 and span_seconds("45s") == 45


def test_window_times_without_a_date_are_today_s_on_the_host_s_clock():
    span = window(between="15:00..15:20", now=NOW)
    assert (span.start.hour, span.start.minute, span.end.minute) == (15, 0, 20)
    assert span.start.date() == dt.date(2026, 11, 20) and span.start.utcoffset() is not None
    past_midnight = window(between="23:50..00:10", now=NOW)
    assert past_midnight.end - past_midnight.start == dt.timedelta(minutes=20)
    assert [d.isoformat() for d in past_midnight.days()] == ["2026-11-20", "2026-11-21"]
    dated = window(between="2026-11-18T10:00+08:00..2026-11-18T12:00+08:00", now=NOW)
    assert dated.start.isoformat() == "2026-11-18T10:00:00+08:00"
    # an end without a date is on the start's day
    assert window(between="2026-11-18T10:00..11:00", now=NOW).end.date() == dt.date(2026, 11, 18)


@pytest.mark.parametrize("since,between,says", [
    ("2x", None, "--since '2x': expected a span such as 2h"),
    ("0h", None, "longer than nothing"),
    (None, "15:00", "expected START..END"),
    (None, "noon..15:00", "expected an ISO 8601 time"),
    (None, "2026-11-18T12:00..2026-11-18T10:00", "end is before start"),
    ("2h", "15:00..16:00", "give one"),
])
def test_a_window_that_cannot_be_read_is_one_usage_error(since, between, says):
    with pytest.raises(UsageError, match=says.replace("(", r"\(").replace(")", r"\)")):
        window(since, between, now=NOW)


def test_sizes_as_people_write_them():
    assert size_bytes("2G") == 2 << 30 and size_bytes("500M") == 500 << 20 and size_bytes("1.5GiB") == 3 << 29
    assert size_bytes("100000") == 100000
    with pytest.raises(UsageError, match="--max-size 'lots'"):
        size_bytes("lots")


# ------------------------------------------------------------------ files
def test_a_text_log_past_its_cap_keeps_its_last_part_from_a_line_start(tmp_path):
    host = _host(tmp_path, file_bytes=1000)
    lines = [f"Nov 20 15:{k // 60:02d}:{k % 60:02d} web1 app[1]: line {k}\n" for k in range(100)]
    log = _write(tmp_path / "root/var/log/messages", "".join(lines), mtime=NOW)
    assert host_files.copy(host, "/var/log/messages", "syslog", is_input=True)
    kept = (host.stage / "var/log/messages").read_text()
    assert len(kept) <= 1000 and log.read_text().endswith(kept) and kept.startswith("Nov 20 ")
    assert kept.splitlines()[-1] == lines[-1].rstrip("\n")
    (item,) = host.manifest.items
    assert item.status == "cut" and item.bytes == len(kept)
    assert f"the first {log.stat().st_size - len(kept):,} are left out" in item.why
    assert os.stat(host.stage / "var/log/messages").st_mtime == NOW       # dated as the host's file


def test_a_compressed_or_binary_file_past_its_cap_is_left_out_saying_why(tmp_path):
    host = _host(tmp_path, file_bytes=1000, sa_file_bytes=2000)
    _write(tmp_path / "root/var/log/messages.2.gz", gzip.compress(os.urandom(5000), compresslevel=0))
    _write(tmp_path / "root/var/log/sa/sa20", b"\x96\xd5" + bytes(3000))
    assert not host_files.copy(host, "/var/log/messages.2.gz", "syslog", is_input=True)
    assert not host_files.copy(host, "/var/log/sa/sa20", "sysstat activity file", is_input=True, sa=True)
    gz_size = (tmp_path / "root/var/log/messages.2.gz").stat().st_size
    assert [(i.status, i.why) for i in host.manifest.items] == [
        ("not kept", f"{gz_size:,} bytes, over the cap of 1000 bytes"),
        ("not kept", "3,002 bytes, over the cap of 2000 bytes")]
    assert not (host.stage / "var").exists()


def test_the_collection_s_total_cap_leaves_out_what_would_pass_it(tmp_path):
    host = _host(tmp_path, total_bytes=1500, file_bytes=1 << 20)
    _write(tmp_path / "root/var/log/syslog", "x" * 1000 + "\n")
    _write(tmp_path / "root/var/log/kern.log", b"\x1f\x8b" + bytes(998))
    assert host_files.copy(host, "/var/log/syslog", "syslog", is_input=True)
    assert not host_files.copy(host, "/var/log/kern.log", "syslog", is_input=True)
    assert host.manifest.items[1].why == "1,000 bytes, more than the 499 bytes left of the collection's cap"


def test_a_named_pipe_is_never_waited_on(tmp_path):
    host = _host(tmp_path)
    (tmp_path / "root/var/log").mkdir(parents=True)
    os.mkfifo(tmp_path / "root/var/log/messages")          # no writer: a blocking open would never return
    assert not host_files.copy(host, "/var/log/messages", "syslog", is_input=True)
    assert host.manifest.items[0].why == "not a regular file"


def test_rotated_copies_are_kept_when_their_span_meets_the_window(tmp_path):
    day = 86400
    root = tmp_path / "root/var/log"
    _write(root / "messages", "now\n", NOW)
    _write(root / "messages.1", "two days ago\n", NOW - 2 * day)
    _write(root / "messages.2.gz", gzip.compress(b"five days ago\n"), NOW - 5 * day)
    _write(root / "messages.bak-notes", "not a rotated copy\n", NOW)
    _write(root / "messagesX", "another log\n", NOW)
    entry = {"what": "syslog", "paths": ["/var/log/messages*"]}
    last_day = _host(tmp_path, span=window("1d", now=NOW))
    host_files.rotated(last_day, entry)
    assert sorted(i.source for i in last_day.manifest.items) == ["/var/log/messages", "/var/log/messages.bak-notes"]
    three_days_ago = dt.datetime.fromtimestamp(NOW - 3 * day).astimezone()
    back_then = _host(tmp_path / "b", root=tmp_path / "root", span=window(
        between=f"{three_days_ago.isoformat()}..{(three_days_ago + dt.timedelta(hours=1)).isoformat()}", now=NOW))
    host_files.rotated(back_then, entry)
    assert [i.source for i in back_then.manifest.items] == ["/var/log/messages.1"]


def test_sa_files_of_the_days_covered_and_not_last_month_s(tmp_path):
    today = dt.datetime.fromtimestamp(NOW).astimezone()
    yesterday = today - dt.timedelta(days=1)
    sa = tmp_path / "root/var/log/sysstat"
    _write(sa / f"sa{today.day:02d}", b"\x96\xd5today", NOW)
    _write(sa / f"sa{yesterday.day:02d}", b"\x96\xd5last month", NOW - 32 * 86400)
    host = _host(tmp_path, span=window(between=f"{yesterday.date()}T23:00..{today.date()}T01:00", now=NOW))
    entry = {"what": "sysstat activity file", "paths": ["/var/log/sa/sa{dd}", "/var/log/sysstat/sa{dd}"],
             "select": "day", "sa": True}
    (sa / f"sa{today.strftime('%Y%m%d')}").symlink_to(f"sa{today.day:02d}")     # sadc -D beside the old name
    entry["paths"].append("/var/log/sysstat/sa{yyyymmdd}")
    host_files.by_day(host, entry, {})
    assert [i.source for i in host.manifest.items] == [f"/var/log/sysstat/sa{today.day:02d}"]
    assert host.manifest.notes == [f"/var/log/sysstat/sa{yesterday.day:02d}: last written before "
                                   f"{yesterday.date().isoformat()} (a month before): not that day's"]
    assert host.manifest.absent == [f"sysstat activity file: none for {yesterday.date().isoformat()} (looked for "
                                    f"/var/log/sa/sa{yesterday.day:02d}, /var/log/sysstat/sa{yesterday.day:02d}, "
                                    f"/var/log/sysstat/sa{yesterday.strftime('%Y%m%d')})"]


# ------------------------------------------------------------------ commands
def test_a_missing_tool_and_a_failing_command_are_said(tmp_path):
    host = _host(tmp_path)
    assert not commands.capture(host, ["no-such-tool-here", "-x"], "a tool", "sos_commands/x/tool")
    assert not commands.capture(host, ["sh", "-c", "echo 'cannot read /dev/kmsg' >&2; exit 3"], "ring", "sos_commands/k/d")
    assert [(i.source, i.status, i.why) for i in host.manifest.items] == [
        ("no-such-tool-here -x", "not kept", "no-such-tool-here is not installed (not on PATH)"),
        ("sh -c echo 'cannot read /dev/kmsg' >&2; exit 3", "not kept", "exit code 3: cannot read /dev/kmsg")]
    assert not (host.stage / "sos_commands").exists() or not any((host.stage / "sos_commands").rglob("*"))


def test_a_command_is_stopped_at_its_time_cap_keeping_what_it_printed(tmp_path):
    host = _host(tmp_path, command_seconds=0.5)
    began = time.monotonic()
    assert commands.capture(host, ["sh", "-c", "echo first line; exec sleep 60"], "slow", "sos_commands/s/slow")
    assert time.monotonic() - began < 10                  # not the minute it asked for
    (item,) = host.manifest.items
    assert item.status == "cut" and item.why.startswith("stopped after 0.5 s")
    assert (host.stage / "sos_commands/s/slow").read_text() == "first line\n"


def test_a_command_is_stopped_at_its_output_cap(tmp_path):
    host = _host(tmp_path, output_bytes=10000)
    assert commands.capture(host, ["yes"], "endless", "sos_commands/y/yes")
    assert (host.stage / "sos_commands/y/yes").stat().st_size == 10000
    assert host.manifest.items[0].why == "stopped at 10000 bytes (the cap of a command's output)"
    assert host.budget.used == 10000


def test_commands_run_in_the_c_locale_and_the_host_s_zone(monkeypatch):
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    monkeypatch.setenv("LANG", "fr_FR.UTF-8")
    env = commands.environment()
    assert env["LC_ALL"] == "C" and "TZ" not in env and "LANG" not in env and "/usr/sbin" in env["PATH"]


# ------------------------------------------------------------------ nginx
MAIN_CONF = """\
# main file
worker_processes 2;   # trailing comment with a ; inside
error_log logs/main-error.log warn;
events {
    worker_connections 512;
}
http {
    include conf.d/*.conf;
    log_format quoted '$remote_addr "quoted ; not a directive end" { }';
    error_log stderr;
}
"""


def test_the_configuration_is_what_nginx_T_prints_and_names_its_error_logs(tmp_path):
    if shutil.which("nginx") is None:
        pytest.skip("nginx is not installed (the CI script installs it)")
    prefix = tmp_path / "prefix"
    _write(prefix / "conf/nginx.conf", MAIN_CONF)
    _write(prefix / "conf/conf.d/b.conf", f"server {{ listen 127.0.0.1:1; error_log {prefix}/b/error.log; }}\n")
    _write(prefix / "conf/conf.d/a.conf", "upstream app { server 127.0.0.1:2; }\n")
    _write(prefix / "conf/conf.d/skipped.txt", "not included\n")
    (prefix / "logs").mkdir()
    (prefix / "b").mkdir()
    real = subprocess.run(["nginx", "-T", "-q", "-c", str(prefix / "conf/nginx.conf"), "-p", f"{prefix}/",
                           "-g", f"pid {prefix}/nginx.pid;"], capture_output=True, timeout=30)
    assert real.returncode == 0, real.stderr
    read = nginx.read_configuration(nginx.Nginx(str(prefix / "conf/nginx.conf"), "/", f"{prefix}/"), 100)
    assert nginx.dump(read.files) == real.stdout.decode()
    assert read.error_logs == ["logs/main-error.log", f"{prefix}/b/error.log", "stderr"] and read.main_has_error_log


def test_the_tokens_nginx_reads():
    text = "a 'b c' \"d\\\"e\" f\\ g; # comment ; {\nh { i; }"
    assert list(nginx._tokens(text)) == ["a", "b c", 'd"e', "f g", ";", "h", "{", "i", ";", "}"]


# ------------------------------------------------------------------ the command line
@pytest.mark.parametrize("args,says", [
    (["analyze", "--since", "2h", "x"], "--since chooses what --here collects: add --here"),
    (["analyze", "--root", "/", "x"], "--root chooses what --here collects: add --here"),
    (["collect", "--root", "/no/such/folder"], "--root /no/such/folder: not a folder"),
    (["collect", "--since", "two hours"], "--since 'two hours': expected a span"),
    (["collect", "--max-size", "big"], "--max-size 'big': expected a size"),
    (["collect", "-o", "/no/such/folder/x.tar.gz"], "cannot write: no such directory"),
])
def test_collect_s_bad_options_are_one_line_exit_2(args, says):
    ran = run_cli(*args)
    assert ran.returncode == 2
    assert ran.stderr.count("\n") == 1 and says in ran.stderr, ran.stderr
