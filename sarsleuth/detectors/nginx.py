"""nginx detectors: workers dying on signals, PID gaps from respawns (its
connection, memory and shared-memory limits are counted as declared in
``knowledge/kb.toml``)."""
from __future__ import annotations

import re

from sarsleuth.detectors.crossref import close_in_time, evidence_of, oom_victims, where
from sarsleuth.detectors.event_bursts import bursts
from sarsleuth.detectors.series import severity_for
from sarsleuth.detectors.base import Detector
from sarsleuth.detectors.context import Context
from sarsleuth.detectors.evidence import evidence_from_events
from sarsleuth.detectors.kernel import parse_segfault
from sarsleuth.knowledge.signatures import fields_of
from sarsleuth.model import Evidence
from sarsleuth.inputs.evidence_lines import cut

SIGNAL_NAMES = {1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT", 7: "SIGBUS",
                8: "SIGFPE", 9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2", 13: "SIGPIPE",
                14: "SIGALRM", 15: "SIGTERM", 24: "SIGXCPU", 25: "SIGXFSZ", 31: "SIGSYS"}
CRASH_SIGNALS = {4, 6, 7, 8, 11, 31}



def _started_pid(message: str) -> int | None:
    """The PID a ``start worker process N`` line names."""
    f = fields_of("worker-start", message)
    return int(f["pid"]) if f else None


def _int_or_none(v):
    try:
        return None if v is None or str(v) == "<NA>" else int(v)
    except (TypeError, ValueError):
        return None



#: nginx's processes that are not workers (ngx_process.c names each one)
_NGINX_HELPERS = {"cache manager", "cache loader", "helper"}


def _whose(rows, roles=frozenset()) -> str:
    """Whose workers a burst of exits is about: NGINX Unit's (its log reads
    as an error.log), PHP-FPM's children, nginx's helpers when the master
    named only those (``cache manager process 3986 exited on signal 11``),
    else nginx's workers."""
    if roles and set(roles) <= _NGINX_HELPERS:
        return "nginx " + " and ".join(sorted(roles)) + " process" + ("es" if len(roles) > 1 else "")
    writers = set(rows["process"].astype(str))
    if writers == {"unit"}:
        return "NGINX Unit processes"
    if writers and all(w.startswith("php-fpm") or w.startswith("php") for w in writers):
        return "PHP-FPM children"
    return "nginx workers"

class WorkerSignalExit(Detector):
    """nginx ``worker process N exited on signal S``: how many, which signal,
    core dumped or not, which PIDs, the respawned PIDs, and the kernel's
    segfault line (or OOM kill) for the same PID when the bundle has it.

    Why it matters: each exit drops the worker's connections; signal 11 is a
    bug to chase with a core dump, signal 9 usually the OOM killer.
    """

    id = "worker-signal-exit"
    summary = "nginx workers exiting on signals: count, signal name, core dumped, PIDs, respawns"
    inputs = ("events",)
    category = "worker-crash"
    # crashes hours apart under one master are one problem, not several
    defaults = {"burst_gap_seconds": 172800.0, "respawn_window_seconds": 5.0, "match_window_seconds": 120.0}

    def run(self, ctx: Context):
        out = []
        exits = ctx.events_of("worker-signal-exit", "worker-fatal-exit")
        if exits is None or not len(exits):
            return out
        window = self.params["match_window_seconds"]
        starts = ctx.events_of("worker-start")
        segv = ctx.events_of("segfault")
        segv_by_pid = {}
        if segv is not None:
            for r in segv.itertuples(index=False):
                p = parse_segfault(f"{r.message} {r.detail if isinstance(r.detail, str) else ''}")
                if p:
                    segv_by_pid.setdefault(p["pid"], (r, p))
        oom_by_pid = oom_victims(ctx)
        for b in bursts(exits, self.params["burst_gap_seconds"]):
            signals, cores, pids, respawns, roles = {}, 0, [], [], set()
            fatal = 0
            matched, oom_matched = [], []
            for r in b.rows.itertuples(index=False):
                m = fields_of("worker-signal-exit", str(r.message))
                if not m:
                    f = fields_of("worker-fatal-exit", str(r.message))
                    if f:  # exited with fatal code: the master does not respawn it
                        fatal += 1
                        pids.append(int(f["pid"]))
                    continue
                sig, pid = int(m["signal"]), int(m["pid"])
                roles.add(m.get("role") or "")
                signals[sig] = signals.get(sig, 0) + 1
                cores += bool(m.get("core"))
                pids.append(pid)
                if sig == 11 and pid in segv_by_pid and close_in_time(r, segv_by_pid[pid][0], window):
                    matched.append((pid, segv_by_pid[pid]))
                if sig == 9 and pid in oom_by_pid and close_in_time(r, oom_by_pid[pid][0], window):
                    oom_matched.append((pid, oom_by_pid[pid]))
                nxt = self._respawn(starts, r, self.params["respawn_window_seconds"])
                if nxt is not None:
                    respawns.append(nxt)
            if not pids:
                continue
            sig_text = ", ".join([f"{n:,} x signal {s} ({SIGNAL_NAMES.get(s, '?')})" for s, n in sorted(signals.items())]
                                 + ([f"{fatal} x fatal exit (not respawned)"] if fatal else []))
            crash = any(s in CRASH_SIGNALS for s in signals) or bool(fatal)
            n = len(pids)
            all_oom = bool(oom_matched) and len(oom_matched) == n
            who = _whose(b.rows, roles)
            if all_oom:
                title = f"{who} killed {n} time(s) by the OOM killer: {sig_text}"
            elif crash:
                title = f"{who} crashed {n} time(s): {sig_text}"
            else:
                title = f"{who} killed {n} time(s): {sig_text}"
            if cores:
                title += f", {cores} core dumped"
            if oom_matched and not all_oom:
                title += f" ({len(oom_matched)} by the OOM killer)"
            evidence = evidence_from_events(ctx.clock, b.rows, 6)
            for pid, (row, seg) in matched[:4]:
                evidence.append(evidence_of(row, str(row.message)))
            for pid, (row, comm) in oom_matched[:4]:
                evidence.append(evidence_of(row, str(row.message)))
            parts = []
            if matched:
                seg = matched[0][1][1]
                parts.append(f"{len(matched)} of these exits are the crashes the kernel logged as segfaults of the "
                             f"same PID ({', '.join(where(r) for _, (r, _) in matched[:3])}; faulting ip {seg['ip']}"
                             + (f" in {seg['lib']}" if seg["lib"] else "") + "): the same crashes, not more of them.")
            if oom_matched:
                parts.append(f"{len(oom_matched)} signal 9 exit(s) are the OOM killer's kills of the same PID "
                             f"({', '.join(f'{p} at {where(r)}' for p, (r, _) in oom_matched[:3])}): "
                             "memory ran out; the worker did not crash on its own.")
            elif 9 in signals:
                parts.append("Signal 9 exits are usually the OOM killer: check the kernel log for the same PIDs.")
            if not cores and 11 in signals:
                parts.append("No core was dumped: set `worker_rlimit_core` and a writable `working_directory`.")
            finding = self.finding(
                title=title,
                severity=(severity_for(n, [(10, "critical"), (1, "high")]) if crash else "high"),
                start=b.start, end=b.end, host=b.host, aligned=b.aligned,
                metrics={"exits": n, "core_dumped": cores, "respawned": len(respawns),
                         "signal_11": signals.get(11, 0), "signal_9": signals.get(9, 0), "fatal_exits": fatal,
                         "matched_kernel_segfaults": len(matched), "matched_oom_kills": len(oom_matched)},
                evidence=evidence, explanation=" ".join(parts) or None,
                refs={"pids": pids, "respawn_pids": respawns, "signals": sorted(signals),
                      "segfault_pids": [p for p, _ in matched], "oom_killed_pids": [p for p, _ in oom_matched]},
            )
            if all_oom:
                finding.category = "memory-exhaustion"
            out.append(finding)
        return out

    @staticmethod
    def _respawn(starts, row, window):
        """PID of the worker the master started right after this exit."""
        if starts is None or not len(starts) or row.timestamp is None:
            return None
        try:
            same_file = starts[(starts["file"] == row.file) & (starts["line"] > row.line)]
            same_file = same_file[(same_file["timestamp"] - row.timestamp).dt.total_seconds() <= window]
        except TypeError:
            return None
        if not len(same_file):
            return None
        return _started_pid(str(same_file.iloc[0]["message"]))


def _ps_rows(path, masters, workers, limit: int = 8) -> list:
    """The master's and workers' ps rows, each at its line, verbatim."""
    rows = [r for part in (masters.head(1), workers) for r in part.itertuples(index=False)][:limit]
    out = []
    for r in rows:
        line = getattr(r, "line", None)
        line = int(line) if line is not None and str(line) != "<NA>" else None
        out.append(Evidence(path, line, cut(str(getattr(r, "text", None) or f"pid {r.pid} ({r.role})"))))
    return out


class WorkerPidGaps(Detector):
    """nginx worker PIDs that are not one consecutive run next to the master,
    or workers started later than the master, in ``ps`` snapshots; and, from
    error.log, workers started after the initial set (respawns).

    Why it matters: healthy workers are forked together (report 003: 7292..7301
    after master 7291); scattered PIDs and late start times prove workers died
    and were respawned even when error.log has been rotated away.
    """

    id = "worker-pid-gaps"
    summary = "nginx worker PIDs not consecutive / younger than the master (ps), respawns (error.log)"
    inputs = ("ps", "events")
    category = "worker-crash"
    defaults = {"min_gap": 2}

    def run(self, ctx: Context):
        out = []
        for src in ctx.sources_of("ps"):
            for label, table in _snapshots(src):
                f = self._from_snapshot(src, label, table)
                if f:
                    out.append(f)
        out.extend(self._from_error_log(ctx))
        return out

    def _from_snapshot(self, src, label, table):
        if table is None or not len(table) or "role" not in table:
            return None
        workers = table[table["role"] == "nginx-worker"]
        masters = table[table["role"] == "nginx-master"]
        if len(workers) < 2:
            return None
        pids = sorted(int(p) for p in workers["pid"])
        span = pids[-1] - pids[0] + 1
        gaps = [(a, b) for a, b in zip(pids, pids[1:]) if b - a >= self.params["min_gap"]]
        master_pid = int(masters["pid"].iloc[0]) if len(masters) else None
        if master_pid is not None and 0 < pids[0] - master_pid <= len(pids) and span <= 2 * len(pids):
            # forked together next to their master, a few PIDs taken in
            # between by whatever else forked at that moment: a start, not respawns
            gaps = []
        master_start = str(masters["start"].iloc[0]) if len(masters) and "start" in masters else None
        younger = []
        if master_start and "start" in workers:
            younger = [int(p) for p, s in zip(workers["pid"], workers["start"]) if _later(str(s), master_start)]
        if not gaps and not younger:
            return None
        mtime = src.meta.get("time_from") != "report"
        ts = None
        ev = src.events
        if ev is not None and len(ev):
            ts = ev["timestamp"].iloc[0]
        what = []
        if gaps:
            what.append(f"PIDs span {span} numbers for {len(pids)} workers ({', '.join(map(str, pids[:8]))}"
                        + ("..." if len(pids) > 8 else "") + ")")
        if younger:
            what.append(f"{len(younger)} worker(s) started after the master ({master_start})")
        return self.finding(
            title=f"nginx worker PIDs are scattered{f' in {label}' if label else ''}: " + "; ".join(what),
            severity="medium", start=ts, end=ts, host=src.host, aligned=not mtime and ts is not None,
            metrics={"workers": len(pids), "pid_span": span, "gaps": len(gaps), "younger_than_master": len(younger)},
            evidence=_ps_rows(src.path, masters, workers),
            explanation="Workers forked together at start have consecutive PIDs; these were respawned after dying.",
            refs={"pids": pids},
        )

    def _from_error_log(self, ctx: Context):
        out = []
        starts = ctx.events_of("worker-start")
        exits = ctx.events_of("worker-signal-exit")
        if starts is None or not len(starts) or exits is None or not len(exits):
            return out
        for path, part in starts.groupby("file"):
            pids = [p for p in map(_started_pid, part["message"].astype(str)) if p is not None]
            ex = exits[exits["file"] == path]
            if len(ex) == 0 or len(pids) < 2:
                continue
            first_exit_line = int(ex["line"].min())
            respawned = part[part["line"] > first_exit_line]
            if not len(respawned):
                continue
            r_pids = [p for p in map(_started_pid, respawned["message"].astype(str)) if p is not None]
            out.append(self.finding(
                title=f"{len(r_pids)} nginx worker(s) respawned with new PIDs ({', '.join(map(str, r_pids[:6]))}"
                      + ("..." if len(r_pids) > 6 else "") + ")",
                severity="medium", start=respawned["timestamp"].min(), end=respawned["timestamp"].max(),
                host=respawned["host"].dropna().iloc[0] if respawned["host"].notna().any() else None,
                metrics={"respawned": len(r_pids)},
                evidence=evidence_from_events(ctx.clock, respawned, 4), refs={"pids": r_pids},
            ))
        return out


def _later(worker_start: str, master_start: str, tolerance_min: int = 2) -> bool:
    """Did a worker start later than its master?  ps prints START as HH:MM
    today and as a date (Dec24) before; workers forked at start-up may show
    the next minute, hence the tolerance."""
    def minutes(s):
        m = re.fullmatch(r"(\d{1,2}):(\d{2})(?::\d{2})?", s)
        return int(m[1]) * 60 + int(m[2]) if m else None
    a, b = minutes(worker_start), minutes(master_start)
    if a is not None and b is not None:
        return a - b > tolerance_min
    return worker_start != master_start


def _snapshots(src):
    snaps = src.meta.get("snapshots")
    if snaps:
        return [(label, df) for label, df in snaps]
    table = src.meta.get("processes")
    if table is None or not len(table):
        return []
    if "snapshot" in table:
        return [(label, df) for label, df in table.groupby("snapshot", sort=False)]
    return [("", table)]
