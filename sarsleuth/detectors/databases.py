"""Database servers that went down: a PostgreSQL backend killed (and every
session with it), a server that stopped itself on a fatal error."""
from __future__ import annotations

from sarsleuth.detectors.base import Detector
from sarsleuth.detectors.context import Context
from sarsleuth.detectors.event_bursts import bursts
from sarsleuth.detectors.evidence import evidence_from_events
from sarsleuth.knowledge.signatures import fields_of

#: The programs whose words a server's abort is: a bare "Aborting" of any
#: other program (an installer, a script) says nothing of a database.
DATABASE_SERVERS = ("mysqld", "mariadbd", "mysqld_safe", "postgres", "postmaster")


class DbBackendCrash(Detector):
    """PostgreSQL's postmaster telling that a server process died on a
    signal (``server process (PID 4410) was terminated by signal 9:
    Killed``), ended every other session (``terminating any other active
    server processes``) and reinitialized.

    Why it matters: one backend's death takes every connection of the
    cluster with it and puts the database through crash recovery; signal
    9 is usually the kernel's OOM killer (the same PID in its kill line).
    """

    id = "db-backend-crash"
    summary = "PostgreSQL backends killed by a signal, and the restart of every session that follows"
    inputs = ("events:db-backend-crash",)
    category = "worker-crash"
    defaults = {"burst_gap_seconds": 600.0}

    def run(self, ctx: Context):
        out = []
        for b in bursts(ctx.events_of(self.id), self.params["burst_gap_seconds"]):
            killed: dict = {}
            restarted = False
            for row in b.rows.itertuples(index=False):
                f = fields_of(self.id, str(row.message)) or {}
                if f.get("pid"):
                    killed[int(f["pid"])] = f"signal {f['signal']}" + (f" ({f['signame']})" if f.get("signame") else "")
                restarted = restarted or bool(f.get("terminating") or f.get("reinitializing"))
            if not killed and not restarted:
                continue
            title = ("PostgreSQL server process " + ", ".join(f"{p} killed by {s}" for p, s in sorted(killed.items()))
                     if killed else "PostgreSQL ended every session")
            if restarted and killed:
                title += ": the postmaster ended every other session and reinitialized (crash recovery)"
            out.append(self.finding(
                title=title, severity="high", start=b.start, end=b.end, host=b.host, aligned=b.aligned,
                metrics={"killed": len(killed), "reinitialized": restarted,
                         "signal_9": sum(1 for s in killed.values() if s.startswith("signal 9"))},
                evidence=evidence_from_events(ctx.clock, b.rows, 4),
                refs={"pids": sorted(killed)},
            ))
        return out


class DbServerAbort(Detector):
    """A database server that stopped itself: MySQL's and MariaDB's
    ``Aborting`` (sql/mysqld.cc unireg_abort, after the fatal error it
    names just before), its crash handler's ``mysqld got signal 11``, an
    InnoDB assertion.  (PostgreSQL's end of every session after a crash or
    a PANIC is ``db-backend-crash``'s.)

    Why it matters: every client of the database fails from that moment
    until it is started again; the error before it (a full disk, a
    damaged table space, memory) is the cause to fix."""

    id = "db-server-abort"
    summary = "database servers that stopped themselves: MySQL/MariaDB 'Aborting', 'mysqld got signal', assertions"
    inputs = ("events:db-server-abort",)
    category = "service-failure"
    defaults = {"burst_gap_seconds": 600.0}

    def run(self, ctx: Context):
        out = []
        events = ctx.events_of(self.id)
        if events is None or not len(events):
            return out
        programs = events["process"].fillna("").astype(str).str.split("[").str[0]
        events = events[programs.isin(DATABASE_SERVERS)]
        for b in bursts(events, self.params["burst_gap_seconds"]):
            program = str(b.rows["process"].iloc[0]).split("[")[0]
            said = [fields_of(self.id, str(m)) or {} for m in b.rows["message"]]
            signals = sorted({int(f["signal"]) for f in said if f.get("signal")})
            how = (f"crashed on signal {', '.join(map(str, signals))}" if signals
                   else "failed an assertion" if any(f.get("assertion") for f in said) else "aborted")
            out.append(self.finding(
                title=f"{program} {how}: the database server stopped", severity="high",
                start=b.start, end=b.end, host=b.host, aligned=b.aligned,
                metrics={"lines": len(b.rows), "signal": signals[0] if signals else None},
                evidence=evidence_from_events(ctx.clock, b.rows, 3), refs={"program": program},
            ))
        return out
