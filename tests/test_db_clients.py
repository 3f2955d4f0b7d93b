"""A database out of connections names who holds them: PostgreSQL's client
backends in the ps snapshots (role, database, client), against the snapshot
before; the new client that started with them and names their database is
the likely one, said as a guess."""
from __future__ import annotations

import os

import pandas as pd

import sarsleuth
from sarsleuth.analysis.db_clients import backends
from sarsleuth.inputs.parsers.ps import PROCESS_COLUMNS

_HEAD = "USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND\n"
_SERVER = """postgres   10245  0.5  0.0 144740 24188 ?        S    20:49   0:01 /usr/lib/postgresql/15/bin/postgres -D /srv/pgdata
postgres   10246  0.0  0.0 144740  6292 ?        Ss   20:49   0:00 postgres: checkpointer
postgres   10247  0.0  0.0 144740  6956 ?        Ss   20:49   0:00 postgres: background writer
postgres   10249  0.0  0.0 144740  8324 ?        Ss   20:49   0:00 postgres: walwriter
postgres   10250  0.0  0.0 146316  9244 ?        Ss   20:49   0:00 postgres: autovacuum launcher
root       10252  1.1  0.1 257140 25020 ?        Ss   20:50   0:01 /usr/bin/python3 /srv/app/api.py --port 9001 --db host=/run/postgresql dbname=shop user=shop
root       10261  0.3  0.1  31000 12000 ?        Ss   20:50   0:00 telemetry-agent --interval 10
postgres   10300  0.0  0.0 146720 13480 ?        Ss   20:50   0:00 postgres: shop shop [local] idle
postgres   10301  0.0  0.0 146720 13480 ?        Ss   20:50   0:00 postgres: shop shop [local] idle
"""


def _report(pid=11806, start="20:52", dbname="shop"):
    return (f"root       {pid}  0.1  0.0 1354364 23160 ?      Ssl  {start}   0:00 /usr/bin/python3 "
            f"/srv/app/export_job.py --db host=/run/postgresql dbname={dbname} user=reports\n")


def _held(count, first_pid=11811, start="20:52", user="reports", db="shop"):
    return "".join(f"postgres   {first_pid + i}  0.0  0.0 146720 13480 ?        Ss   {start}   0:00 "
                   f"postgres: {user} {db} [local] SELECT\n" for i in range(count))


def _ps(tmp_path, when: pd.Timestamp, body: str):
    path = tmp_path / f"ps-aux-{when:%H%M%S}.txt"
    path.write_text(_HEAD + body)
    os.utime(path, (when.timestamp(), when.timestamp()))


def _log(tmp_path, refusals: int, first: pd.Timestamp, every_s: float = 0.5, extra: list[str] = ()):
    lines = []
    for i in range(refusals):
        t = first + pd.Timedelta(seconds=i * every_s)
        stamp = t.strftime("%Y-%m-%dT%H:%M:%S.%f") + "+00:00"
        lines.append(f"{stamp} shop-db-01 postgres[{12000 + i}]: [5-1] [{12000 + i}] FATAL:  sorry, too many "
                     "clients already")
        lines.append(f"{stamp} shop-db-01 api[10252]: ERROR /api/items: database: connection to server on socket "
                     '"/run/postgresql/.s.PGSQL.5432" failed: FATAL:  sorry, too many clients already')
    (tmp_path / "syslog").write_text("\n".join(list(extra) + lines) + "\n")


T0 = pd.Timestamp("2026-11-26 20:51:46", tz="UTC")
T1 = pd.Timestamp("2026-11-26 20:52:46", tz="UTC")
FIRST = pd.Timestamp("2026-11-26 20:52:13", tz="UTC")


def _cause(tmp_path):
    top = sarsleuth.load(tmp_path, tz="UTC").incidents[0]
    assert (top.category, top.cause) == ("connection-limit", "db-connection-limit")
    return top, next(f for f in top.findings if f.detector == "db-connection-limit")


def test_the_backends_a_new_report_opened_are_named_with_their_likely_client(tmp_path):
    _ps(tmp_path, T0, _SERVER)
    _ps(tmp_path, T1, _SERVER + _report() + _held(38))
    # the report is refused too once it has taken every slot: its own line carries its tag
    _log(tmp_path, 60, FIRST, extra=["2026-11-26T20:52:13.100000+00:00 shop-db-01 export-report[11806]: segment 38: "
                                     'connection to server on socket "/run/postgresql/.s.PGSQL.5432" failed: '
                                     "FATAL:  sorry, too many clients already"])
    top, f = _cause(tmp_path)
    assert f.refs["responsible_names"] == ["postgres"]
    assert f.refs["responsible_pids"] == list(range(11811, 11811 + 16))
    assert f.refs["responsible"] == (
        "postgres (38 processes; 38 client connections of the 40 it served as role reports to database shop over "
        "the local socket, none in the snapshot at 20:51:46; their client is probably export-report (PID 11806, "
        "export_job.py), which started at 20:52 as they did and names database shop on its command line (a guess: "
        "ps does not show which process a backend serves)) in ps at 20:52:46 (ps-aux-205246.txt)")
    assert "by postgres (38 processes" in top.story["cause"]


def test_connections_held_all_along_have_no_new_client_to_guess(tmp_path):
    """The API itself holds the slots, from before the earlier snapshot:
    the backends are counted, no client is guessed."""
    busy = _SERVER + _held(30, first_pid=10400, start="20:50", user="shop")
    _ps(tmp_path, T0, busy)
    _ps(tmp_path, T1, busy)
    _log(tmp_path, 40, FIRST)
    _top, f = _cause(tmp_path)
    assert f.refs["responsible"] == (
        "postgres (32 processes; 32 client connections as role shop to database shop over the local socket, 32 in "
        "the snapshot at 20:51:46) in ps at 20:52:46, 14 s after it (ps-aux-205246.txt)")


def test_two_new_clients_of_the_database_leave_the_client_unguessed(tmp_path):
    _ps(tmp_path, T0, _SERVER)
    _ps(tmp_path, T1, _SERVER + _report() + _report(pid=11900).replace("export_job.py", "reindex.py")
        + _held(20))
    _log(tmp_path, 40, FIRST)
    _top, f = _cause(tmp_path)
    assert "probably" not in f.refs["responsible"]
    assert f.refs["responsible"].startswith("postgres (20 processes; 20 client connections of the 22 it served")


def test_a_few_backends_are_ordinary_use_and_name_nobody(tmp_path):
    _ps(tmp_path, T0, _SERVER)
    _ps(tmp_path, T1, _SERVER + _report() + _held(2))
    _log(tmp_path, 20, FIRST)
    _top, f = _cause(tmp_path)
    # the snapshot, 24 s after the last refusal, shows no connections held:
    # the server is named by its own refusals, no backend as a holder
    assert f.refs["responsible"].startswith("postgres (20 refusals in its own log lines; refused clients")
    assert "responsible_pids" not in f.refs


def test_backend_titles_are_read_and_the_server_s_own_workers_are_not_clients():
    titles = ["postgres: 15/main: app shop 10.0.0.5(51234) idle in transaction",
              "postgres: reports shop [local] SELECT",
              "postmaster: app shop 10.0.0.6(40001) idle",
              "postgres: checkpointer", "postgres: autovacuum worker shop",
              "postgres: walsender repl 10.0.0.9(40000) streaming 0/3000148",
              "postgres: parallel worker for PID 4242", "/usr/lib/postgresql/15/bin/postgres -D /srv/pgdata"]
    frame = pd.DataFrame([{**{c: None for c in PROCESS_COLUMNS}, "pid": 100 + i, "command": t, "start": "10:00",
                           "line": i + 2, "text": t} for i, t in enumerate(titles)])
    got = backends(frame)
    assert got[["pid", "user", "db", "client"]].values.tolist() == [
        [100, "app", "shop", "10.0.0.5"], [101, "reports", "shop", "the local socket"], [102, "app", "shop", "10.0.0.6"]]


def test_with_no_snapshot_while_refused_the_server_is_named_by_its_own_lines(tmp_path):
    """The only ps was taken after the report had ended: the refusals the
    server logged as its own name it, the clients' lines say who was
    refused, and the story says that nothing shows who held the slots."""
    _ps(tmp_path, FIRST + pd.Timedelta(minutes=20), _SERVER)
    _ps(tmp_path, FIRST + pd.Timedelta(seconds=90), _SERVER)      # just after: the report had ended
    _log(tmp_path, 60, FIRST, extra=["2026-11-26T20:52:13.100000+00:00 shop-db-01 export-report[11806]: segment 38: "
                                     'connection to server on socket "/run/postgresql/.s.PGSQL.5432" failed: '
                                     "FATAL:  sorry, too many clients already"])
    top, f = _cause(tmp_path)
    assert f.refs["logged_by"] == {"api": 60, "postgres": 60, "export-report": 1}
    assert f.refs["responsible_names"] == ["postgres"]
    assert f.refs["responsible"] == (
        "postgres (60 refusals in its own log lines; refused clients, with the lines each logged: api (60), "
        "export-report (1); no ps snapshot while they were refused says who held the slots)")
    assert "by postgres (60 refusals in its own log lines" in top.story["cause"]


def test_refusals_only_a_client_logged_name_no_server(tmp_path):
    """A database on another host: only the client's own errors are here,
    and no program of this host refused anything."""
    lines = [f"2026-11-26T20:52:{13 + i:02d}.000000+00:00 shop-db-01 api[10252]: ERROR /api/items: database: "
             'connection to server at "10.0.0.7", port 5432 failed: FATAL:  sorry, too many clients already'
             for i in range(30)]
    (tmp_path / "syslog").write_text("\n".join(lines) + "\n")
    _top, f = _cause(tmp_path)
    assert f.refs["logged_by"] == {"api": 30} and f.refs["servers"] == []
    assert "responsible" not in f.refs
