"""The logs PostgreSQL and PHP-FPM write themselves, lines as they write
them: PostgreSQL's elog.c with log_line_prefix '%m [%p] ' (the default
since 10), Debian's '%m [%p] %q%u@%d ' and Red Hat's '< %m >'; PHP-FPM's
zlog.c ("[%d-%b-%Y %H:%M:%S] LEVEL: ")."""
from __future__ import annotations

import pandas as pd

import sarsleuth
from sarsleuth.inputs.parsers import parse, sniff

PG = """\
2024-01-05 10:00:00.123 UTC [1234] LOG:  database system is ready to accept connections
2024-01-05 10:12:31.456 UTC [4410] app@shop FATAL:  sorry, too many clients already
2024-01-05 10:12:31.789 UTC [4411] app@shop FATAL:  remaining connection slots are reserved for non-replication superuser connections
2024-01-05 10:14:02.001 UTC [1234] LOG:  server process (PID 4420) was terminated by signal 9: Killed
2024-01-05 10:14:02.001 UTC [1234] DETAIL:  Failed process was running: SELECT * FROM orders
\tORDER BY created_at
2024-01-05 10:14:02.002 UTC [1234] LOG:  terminating any other active server processes
2024-01-05 10:14:02.150 UTC [1234] LOG:  all server processes terminated; reinitializing
"""


def test_postgresql_log_with_debian_prefix(tmp_path):
    path = tmp_path / "postgresql-15-main.log"
    path.write_text(PG)
    assert sniff(path)[0] == "postgresql-log"
    src = parse(path)
    assert (src.kind, src.tz, src.records) == ("postgresql-log", "UTC", 8)
    ev = src.events
    assert list(ev["kind"]) == ["db-connection-limit", "db-connection-limit", "db-backend-crash", "db-backend-crash",
                                "db-backend-crash"]
    first = ev.iloc[0]
    assert (first["pid"], first["level"], first["message"], first["line"]) == (
        4410, "fatal", "FATAL:  sorry, too many clients already", 2)
    assert first["timestamp"] == pd.Timestamp("2024-01-05 10:12:31.456", tz="UTC")
    crash = ev.iloc[2]
    assert crash["detail"].startswith("DETAIL:  Failed process was running: SELECT * FROM orders")
    found = {f.detector: f for f in sarsleuth.load(path).findings}
    assert found["db-backend-crash"].refs["pids"] == [4420]
    assert found["db-connection-limit"].metrics == {"lines": 2, "too_many_clients": 1, "reserved_slots": 1,
                                                    "mysql_1040": 0, "burst_seconds": 0.333}


def test_postgresql_red_hat_prefix_and_a_zone_abbreviation(tmp_path):
    """'< %m >' (Red Hat's default) in a zone named by its abbreviation:
    kept as the host's wall clock (CET is several zones' name)."""
    path = tmp_path / "postgresql-Fri.log"
    path.write_text("< 2024-01-05 10:12:31.456 CET >FATAL:  sorry, too many clients already\n"
                    "< 2024-01-05 10:12:32.001 CET >LOG:  could not fork new process for connection: "
                    "Cannot allocate memory\n")
    assert sniff(path)[0] == "postgresql-log"
    src = parse(path)
    assert src.tz is None and list(src.events["kind"]) == ["db-connection-limit", "enomem"]
    assert src.events.iloc[0]["timestamp"] == pd.Timestamp("2024-01-05 10:12:31.456")


def test_a_near_miss_is_no_postgresql_log(tmp_path):
    """ISO-stamped syslog (rsyslog's RFC 3339 template) stays syslog."""
    path = tmp_path / "messages"
    path.write_text("2024-01-05T10:12:31.456789+00:00 db1 postgres[4410]: [3-1] FATAL:  sorry, too many clients "
                    "already\n" * 3)
    assert sniff(path)[0] == "syslog"


def test_php_fpm_log(tmp_path):
    path = tmp_path / "php8.2-fpm.log"
    path.write_text("[05-Jan-2024 10:00:00] NOTICE: fpm is running, pid 811\n"
                    "[05-Jan-2024 10:00:00] NOTICE: ready to handle connections\n"
                    "[05-Jan-2024 10:12:31] WARNING: [pool www] server reached pm.max_children setting (5), "
                    "consider raising it\n"
                    "[05-Jan-2024 10:14:02] WARNING: [pool www] child 4410 exited on signal 9 (SIGKILL) after "
                    "312.412345 seconds from start\n"
                    "[05-Jan-2024 10:14:02] NOTICE: [pool www] child 4501 started\n")
    assert sniff(path)[0] == "php-fpm-log"
    ev = parse(path).events
    assert list(ev["kind"]) == ["fpm-pool-limit", "worker-signal-exit"]
    assert ev.iloc[1]["timestamp"] == pd.Timestamp("2024-01-05 10:14:02") and ev.iloc[1]["level"] == "warning"
    found = {f.detector: f for f in sarsleuth.load(path).findings}
    assert found["fpm-pool-limit"].title == "1 x PHP-FPM pool busy or at pm.max_children: pool www reached " \
                                             "pm.max_children = 5"
    assert found["worker-signal-exit"].title.startswith("PHP-FPM children killed 1 time(s): 1 x signal 9 (SIGKILL)")


def test_php_fpm_log_at_debug_level(tmp_path):
    """log_level = debug: microseconds, then "pid N, function(), line N"."""
    path = tmp_path / "fpm.log"
    path.write_text("[05-Jan-2024 10:14:02.512345] WARNING: pid 811, fpm_children_bury(), line 256: [pool www] "
                    "child 4411 exited on signal 11 (SIGSEGV - core dumped) after 0.512345 seconds from start\n" * 2)
    ev = parse(path).events
    assert ev.iloc[0]["timestamp"] == pd.Timestamp("2024-01-05 10:14:02.512345") and ev.iloc[0]["pid"] == 811


def test_postgresql_pgbadger_prefix_names_no_host(tmp_path):
    """'%t [%p]: [%l-1] ' (pgBadger's advice) and 'user=%u,db=%d ': the
    session's line number and the zone are no host."""
    path = tmp_path / "postgresql.log"
    path.write_text("2022-07-13 07:31:34.924 CEST [55023]: [1-1] user=monitor,db=postgres FATAL:  too many "
                    "connections for role \"pgautofailover_monitor\"\n"
                    "2022-07-13 07:32:04.922 CEST [58398]: [49-1] LOG:  could not fork new process for connection: "
                    "Cannot allocate memory\n")
    assert sniff(path)[0] == "postgresql-log"
    case = sarsleuth.load(path)
    assert case.sources[0].events["pid"].tolist() == [58398] and case.sources[0].records == 2
    assert case.hosts == [] and [f.detector for f in case.findings] == ["enomem"]


#: MySQL 8.0.26 stopping at start on a full disk (nextcloud-snap's report),
#: the threads 1 and 0 after the time; then MariaDB 10.6's and MySQL 5.5's layouts
MYSQL8 = """\
2021-11-08T15:47:07.889528Z 1 [ERROR] [MY-012640] [InnoDB] Error number 28 means 'No space left on device'
2021-11-08T15:47:07.890167Z 1 [ERROR] [MY-012267] [InnoDB] Could not set the file size of './ibtmp1'. Probably out of disk space
2021-11-08T15:47:07.947552Z 0 [ERROR] [MY-010020] [Server] Data Dictionary initialization failed.
2021-11-08T15:47:07.948874Z 0 [ERROR] [MY-010119] [Server] Aborting
2021-11-08T15:47:07.950441Z 0 [System] [MY-010910] [Server] /usr/sbin/mysqld: Shutdown complete (mysqld 8.0.26)  Source distribution.
"""


def test_mysql_error_log_threads_are_no_hosts_and_its_abort_is_told(tmp_path):
    path = tmp_path / "error.log"
    path.write_text(MYSQL8)
    assert sniff(path)[0] == "mysql-log"
    case = sarsleuth.load(path)
    src = case.sources[0]
    assert (src.kind, src.tz) == ("mysql-log", "UTC") and case.hosts == []
    assert src.events["kind"].tolist() == ["enospc", "db-server-abort"]
    assert src.events.iloc[1]["message"] == "Server: Aborting" and src.events.iloc[1]["level"] == "err"
    (incident,) = case.incidents
    assert incident.category == "disk-full" and incident.severity == "high"
    abort = next(f for f in case.findings if f.detector == "db-server-abort")
    assert abort.title == "mysqld aborted: the database server stopped" and abort.role == "effect"
    assert str(abort.start) == "2021-11-08 15:47:07.948874+00:00"


def test_mariadb_and_old_mysql_layouts_and_a_crash_report(tmp_path):
    path = tmp_path / "mariadb.err"
    path.write_text("2024-03-01 10:00:01 0 [Note] InnoDB: Starting crash recovery from checkpoint LSN=1234\n"
                    "2024-03-01 10:00:02 0 [ERROR] InnoDB: Page [page id: space=5, page number=3] log sequence "
                    "number is in the future\n"
                    "240301 10:00:03 [ERROR] mysqld got signal 11 ;\n"
                    "This could be because you hit a bug. It is also possible that this binary\n")
    assert sniff(path)[0] == "mysql-log"
    src = parse(path)
    assert src.tz is None and src.events["kind"].tolist() == ["db-server-abort"]
    assert src.events.iloc[0]["timestamp"] == pd.Timestamp("2024-03-01 10:00:03")
    (f,) = [f for f in sarsleuth.load(path).findings if f.detector == "db-server-abort"]
    assert f.title == "mysqld crashed on signal 11: the database server stopped" and f.metrics["signal"] == 11


def test_a_bare_aborting_of_another_program_is_no_database(tmp_path):
    """Near miss: an installer's "Aborting" in syslog."""
    path = tmp_path / "messages"
    path.write_text("Mar  1 10:00:01 web1 apt-helper[812]: Aborting\n"
                    "Mar  1 10:00:02 web1 mysqld[900]: 2024-03-01 10:00:02 0 [Note] Server socket created\n")
    assert not [f for f in sarsleuth.load(path, year=2024).findings if f.detector == "db-server-abort"]
