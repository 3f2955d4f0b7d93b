"""Who holds a database's connections, as ps snapshots show it.

PostgreSQL serves each connection with a process of its own, whose title
names the role, the database and where the client connects from
(``postgres: USER DB [local] idle``, ``postgres: 15/main: USER DB
10.0.0.5(51234) SELECT``); its own workers (checkpointer, walwriter,
autovacuum) name none.  Counting those titles says how many connections
each role and database held when the server refused more.  ps does not say
which client process a backend serves: a client that is new beside them,
started in the same minute, and whose command line names that database is
told as the likely one, and said to be a guess.
"""
from __future__ import annotations

import re

import pandas as pd

from sarsleuth.analysis.logged_names import called, logged_names
from sarsleuth.detectors.series import fmt_time

#: a client backend's title: an optional cluster name, role, database, and a
#: client ([local], host(port)), then what it is doing
_BACKEND = re.compile(r"^\s*(?:postgres|postmaster):\s+(?:[\w./-]+:\s+)?(?!walsender\s)(?P<user>\S+)\s+(?P<db>\S+)\s+"
                      r"(?P<client>\[local\]|\S+\(\d+\))(?:\s|$)")
#: fewer client backends than this are ordinary use, not connections held
MIN_BACKENDS = 5
#: refused clients a story names at most
MAX_CLIENTS = 3


def backends(frame) -> pd.DataFrame:
    """The client backends among ps rows: pid, user, db, client, start."""
    rows = []
    for r in frame.itertuples(index=False):
        m = _BACKEND.match(str(r.command))
        if m:
            local = m["client"] == "[local]"
            rows.append({"pid": int(r.pid), "user": m["user"], "db": m["db"],
                         "client": "the local socket" if local else re.sub(r"\(\d+\)$", "", m["client"]),
                         "start": str(r.start), "line": int(r.line), "text": str(r.text)})
    return pd.DataFrame(rows, columns=["pid", "user", "db", "client", "start", "line", "text"])


def _names_database(command: str, db: str) -> bool:
    d = re.escape(db)
    return re.search(rf"\bdbname=['\"]?{d}\b|postgres(?:ql)?://\S*/{d}\b|(?:\s-d\s*|--dbname[= ]){d}\b",
                     command) is not None


def _logged_as(pid: int, sources) -> str:
    """The tag a process's own log lines carry (``nightly-report[11806]``)."""
    return logged_names(sources, {None: {pid}}).get((None, pid), "")


def _likely_client(snap, earlier, held: pd.DataFrame, db: str, sources, program_name) -> str:
    """The client a guess names: new beside the backends (absent from the
    earlier snapshot), started in their minute, naming their database;
    '' unless exactly one program is."""
    start = held["start"].mode().iloc[0]
    before = set(earlier.frame["pid"].dropna().astype(int)) if earlier is not None else set()
    found: dict = {}
    for r in snap.frame.itertuples(index=False):
        command = str(r.command)
        name = program_name(command)
        if (int(r.pid) in before or str(r.start) != start or name in ("postgres", "postmaster")
                or name.startswith("[") or not _names_database(command, db)):
            continue
        found.setdefault(name, []).append(int(r.pid))
    if len(found) != 1:
        return ""
    name, pids = next(iter(found.items()))
    who = called(pids[0], name, _logged_as(pids[0], sources))
    return (f"; their client is probably {who}, which started at {start} as they did and names database {db} "
            "on its command line (a guess: ps does not show which process a backend serves)")


def by_connections(inside: list, earlier, sources, program_name) -> tuple:
    """(the snapshot, the backends' pids, their ps rows, what to say) of
    the role and database holding the most client connections during the
    finding (the snapshots of ``sarsleuth.analysis.attribution``, whose
    ``program_name`` names a command); (None, ...) when none held many."""
    best = None
    for snap in inside:
        b = backends(snap.frame)
        if len(b) >= MIN_BACKENDS and (best is None or len(b) > len(best[1])):
            best = (snap, b)
    if best is None:
        return None, [], [], ""
    snap, b = best
    counts = b.groupby(["user", "db", "client"]).size().sort_values(ascending=False)
    (user, db, client), n = counts.index[0], int(counts.iloc[0])
    held = b[(b["user"] == user) & (b["db"] == db) & (b["client"] == client)]
    then = ""
    if earlier is not None:
        e = backends(earlier.frame)
        k = int(((e["user"] == user) & (e["db"] == db)).sum()) if len(e) else 0
        when = fmt_time(earlier.time) if earlier.time is not None else "an earlier time"
        then = f", {k if k else 'none'} in the snapshot at {when}"
    share = f" of the {len(b)} it served" if len(b) > n else ""
    said = (f"{n} client connections{share} as role {user} to database {db} over {client}{then}"
            + _likely_client(snap, earlier, held, db, sources, program_name))
    return snap, list(held["pid"]), list(zip(held["line"], held["text"])), said


def by_own_lines(f) -> None:
    """A server that logged its own refusals (a burst's ``servers``),
    named when no ps snapshot shows who held what it refused: its lines say
    who refused and who was refused, not who held the slots."""
    servers = (f.refs or {}).get("servers") or []
    if not servers:
        return
    logged, server = f.refs["logged_by"], servers[0]
    clients = [f"{p} ({n:,})" for p, n in logged.items() if p not in servers][:MAX_CLIENTS]
    said = f"{server} ({logged[server]:,} refusals in its own log lines"
    if clients:
        said += "; refused clients, with the lines each logged: " + ", ".join(clients)
    f.refs["responsible"] = said + "; no ps snapshot while they were refused says who held the slots)"
    f.refs["responsible_names"] = [server]
