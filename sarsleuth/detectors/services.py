"""Services that fail: a unit's process exiting with an error or killed,
systemd restarting it until it gives up (``Start request repeated too
quickly``), a server that cannot listen because another process holds its
port, a PostgreSQL backend whose death made the postmaster end every
session, a daemon a ps snapshot shows stopped."""
from __future__ import annotations

import re

import pandas as pd

from sarsleuth.analysis.logged_names import called, logged_names
from sarsleuth.analysis.ps_snapshots import program_name, snapshots_of, without_collectors
from sarsleuth.detectors.event_bursts import bursts, lines_of, listed, numbered, recurrences, writer
from sarsleuth.detectors.series import fmt_time
from sarsleuth.detectors.base import Detector
from sarsleuth.detectors.unit_dependencies import blocked_by_devices
from sarsleuth.detectors.context import Context
from sarsleuth.detectors.evidence import evidence_from_events, limit_evidence
from sarsleuth.knowledge import kb_entry
from sarsleuth.knowledge.signatures import fields_of
from sarsleuth.model import Evidence, iso

#: systemd's lines about units, as event kinds
_UNIT_KINDS = ("service-exit", "service-failed", "service-restart", "service-start-limit", "service-stopping",
               "service-watchdog")
#: How a process ends on the signal a stop sends (SIGTERM, or SIGINT):
#: killed by it, or exiting 128 + its number without saying that is success
_STOP_SIGNALED = re.compile(r"^status=(?:143|130|15/TERM|2/INT)\b")
#: a line naming no unit (``Failed to start DESCRIPTION.``, a forked child's
#: ``Failed at step EXEC``) belongs to the unit with lines this close to it
_SAME_MOMENT_S = 2.0
_PORT = re.compile(r"(\d+)$")


class _Unit:
    def __init__(self):
        self.rows: list[int] = []
        self.results: dict = {}
        self.states = 0
        self.failed_starts = 0
        self.failed_at: set = set()    # the seconds a failure was told in (one failure, up to four lines)
        self.exits: dict = {}
        self.restarts = 0
        self.counter = 0
        self.gave_up = None
        self.oom = False
        self.spawn: str | None = None
        self.stop_asked = None         # when systemd was asked to stop it ("Stopping ...")
        self.stop_rows: list[int] = []
        self.watchdog: str | None = None    # the keep-alive it stopped sending for ("limit 3min")
        self.device: str | None = None      # a device that never appeared ("Timed out waiting for device")
        self.blocked: list[str] = []        # the units that did not start for want of it

    def failures(self) -> int:
        # one failure is told in up to four lines (the result, "Unit entered
        # failed state", "UNIT failed.", "Failed to start") in one second:
        # the seconds they were told in, else the most telling kind's lines
        if self.failed_at:
            return len(self.failed_at)
        results = sum(n for r, n in self.results.items() if r != "start-limit-hit")
        return results or self.states or self.failed_starts or sum(self.exits.values())


class ServiceFailure(Detector):
    """A systemd unit that failed, per unit: how its process ended
    (``Main process exited, code=killed, status=9/KILL``), the result systemd
    gave (``Failed with result 'oom-kill'``, ``'exit-code'``, ``'signal'``,
    ``'core-dump'``, ``'timeout'``), the restarts (``Scheduled restart job,
    restart counter is at 5``) and whether systemd gave up (``Start request
    repeated too quickly``), in every systemd version's words (v219's
    ``Unit nginx.service entered failed state.`` too).

    Why it matters: while the unit is down its clients are refused (nginx
    answers 502 for a dead PHP-FPM); once systemd gives up it stays down
    until someone starts it.
    """

    id = "service-failure"
    summary = "systemd units that failed, restarted, and hit their start limit: per unit, how and how often"
    inputs = tuple(f"events:{k}" for k in _UNIT_KINDS)
    category = "service-failure"
    defaults = {"burst_gap_seconds": 600.0}

    def run(self, ctx: Context):
        out = []
        for b in bursts(ctx.events_of(*_UNIT_KINDS), self.params["burst_gap_seconds"]):
            rows = b.rows.reset_index(drop=True)
            units: dict = {}
            nameless = []
            for i, row in enumerate(rows.itertuples(index=False)):
                f = fields_of(row.kind, str(row.message)) or {}
                if f.get("unit") or f.get("device"):
                    self._read(units.setdefault(f.get("unit") or f["device"], _Unit()), i, row, f)
                else:
                    nameless.append((i, row, f))
            for i, row, f in nameless:
                key = self._unit_near(rows, units, row, i) or (
                    f"'{f['description']}'" if f.get("description") else "a unit")
                self._read(units.setdefault(key, _Unit()), i, row, f)
            blocked_by_devices(units, _SAME_MOMENT_S)
            for name, unit in units.items():
                if unit.failures() or unit.gave_up is not None or unit.restarts:
                    told = unit.rows + (unit.stop_rows if self._stopped_on_request(unit) else [])
                    out.append(self._finding(ctx, b, rows.iloc[sorted(set(told))], name, unit))
        _recurring(out)
        return out

    @staticmethod
    def _unit_near(rows, units: dict, row, at: int):
        """The unit a line naming none belongs to ("Dependency failed for
        /mnt/ssd."): of the units told within the same moment, the one whose
        line comes last before it (systemd says what failed, then what that
        stopped), else the nearest in time."""
        when = row.timestamp
        if when is None or pd.isna(when):
            return next(iter(units)) if len(units) == 1 else None
        best, key = None, None
        for name, unit in units.items():
            for i in unit.rows:
                other = rows["timestamp"].iloc[i]
                if other is None or pd.isna(other):
                    continue
                d = abs((other - when).total_seconds())
                if d > _SAME_MOMENT_S:
                    continue
                # before it, the closest line first; then after it, the nearest in time
                rank = (0, at - i) if i < at else (1, d, i - at)
                if key is None or rank < key:
                    best, key = name, rank
        return best

    @staticmethod
    def _read(unit: _Unit, i: int, row, f: dict) -> None:
        if row.kind == "service-stopping":
            # evidence only of a stop that explains the failure (see _stopped_on_request)
            unit.stop_asked = unit.stop_asked if unit.stop_asked is not None else row.timestamp
            unit.stop_rows.append(i)
            return
        unit.rows.append(i)
        n = lines_of(row)
        if row.kind == "service-exit":
            status = (f"status={f['status']}" + (f"/{f['status_name']}" if f.get("status_name") else "")
                      if f.get("status") else "its process exited")     # a message whose fields were not read
            unit.exits[status] = unit.exits.get(status, 0) + n
        elif row.kind == "service-restart":
            unit.restarts += n
            unit.counter = max(unit.counter, int(f.get("counter") or 0))
        elif row.kind == "service-watchdog":
            unit.watchdog = f.get("limit") or "its WatchdogSec"
        elif row.kind == "service-start-limit":
            unit.gave_up = unit.gave_up if unit.gave_up is not None else row.timestamp
        elif f.get("needed_by"):
            return                # "Dependency failed for DESCRIPTION": the unit's own line says it
        else:
            unit.device = f.get("device") or unit.device
            result = f.get("result")
            told_again = (unit.gave_up is not None and row.timestamp is not None and not pd.isna(row.timestamp)
                          and abs((row.timestamp - unit.gave_up).total_seconds()) <= _SAME_MOMENT_S)
            if told_again and not f.get("oom"):
                # systemd gives the last result again as it gives up: the same failure
                return
            if (result != "start-limit-hit" and not f.get("oom") and not f.get("step")
                    and row.timestamp is not None and not pd.isna(row.timestamp)):
                unit.failed_at.add(pd.Timestamp(row.timestamp).floor("s"))
            if result:
                unit.results[result] = unit.results.get(result, 0) + n
                if result == "start-limit-hit" and unit.gave_up is None:
                    unit.gave_up = row.timestamp
                unit.oom = unit.oom or result == "oom-kill"
            elif f.get("oom"):
                unit.oom = True
            elif f.get("state"):
                unit.states += n
            elif f.get("step"):
                unit.spawn = f"could not run {f.get('program')}: {f.get('error')}"
            else:
                unit.failed_starts += n

    def _finding(self, ctx, b, rows, name: str, unit: _Unit):
        failures = unit.failures()
        how = [f"result '{r}'" for r in sorted(unit.results, key=lambda r: -unit.results[r]) if r != "start-limit-hit"]
        if unit.watchdog:
            # hung, then killed by systemd: its own result (core-dump, signal) is what the kill did
            how.insert(0, f"no watchdog keep-alive for {unit.watchdog}")
        if unit.oom and not any("oom-kill" in h for h in how):
            how.append("a process killed by the OOM killer")
        how += sorted(unit.exits, key=lambda s: -unit.exits[s])[:2]
        if unit.spawn:
            how.append(unit.spawn)
        stayed_down = unit.gave_up is not None
        restarts = f"{unit.restarts:,} restart(s)" + (
            f" (restart counter at {unit.counter})" if unit.counter > unit.restarts else "")
        if stayed_down:
            at = unit.gave_up
            title = (f"{name} down after {failures:,} failure(s)" + (f" ({', '.join(how)})" if how else "")
                     + (f" and {restarts}" if unit.restarts else "")
                     + ": systemd gave up" + (f" at {fmt_time(at)}" if at is not None and not pd.isna(at) and b.aligned
                                               else "")
                     + " (start request repeated too quickly)")
        elif unit.device:
            title = f"{unit.device} did not appear in time (systemd gave up waiting for the device)" + (
                f": {', '.join(unit.blocked)} not started (result 'dependency')" if unit.blocked else "")
        else:
            title = (f"{name} failed {failures:,} x" if failures else f"{name} restarted") + (
                f" ({', '.join(how)})" if how else "") + (f", {restarts}" if unit.restarts else "")
        # one failure and nothing after it (a unit that failed once at boot) is said, not alarmed
        # (a restart whose failure these files do not hold is one failure, and it came back)
        severity = ("critical" if stayed_down else "high" if failures >= 2 or unit.oom or unit.restarts >= 2
                    or (failures and unit.restarts) or unit.blocked else "medium")
        stopped = self._stopped_on_request(unit)
        if stopped:
            severity = "low"
            title = (f"{name} stopped on request, counted failed by systemd: its process ended on the stop's "
                     f"signal ({', '.join(how)})")
        status = sorted(unit.exits, key=lambda s: -unit.exits[s])
        kb = kb_entry(self.id)
        return self.finding(
            title=title, severity=severity, start=rows["timestamp"].min() if b.aligned else b.start,
            end=rows["timestamp"].max() if b.aligned else b.end, host=b.host, aligned=b.aligned,
            metrics={"failures": failures, "restarts": unit.restarts, "restart_counter": unit.counter or None,
                     "start_limit_hit": stayed_down, "oom_kill": unit.oom, "stopped_on_request": int(stopped),
                     "device_timeout": int(bool(unit.device)), "units_blocked": len(unit.blocked)},
            evidence=evidence_from_events(ctx.clock, rows, 6),
            explanation=kb["explanation_device"] if unit.device else " ".join(filter(None, [
                kb["explanation"], kb["explanation_watchdog"] if unit.watchdog else "",
                kb["explanation_gave_up"] if stayed_down else kb["explanation_restarted"] if unit.restarts else ""])),
            refs={"unit": name, "units": [name] + unit.blocked, "results": sorted(unit.results), "resource": [name], "how": ", ".join(how),
                  **({"status": status[0]} if status else {}), **({"watchdog": unit.watchdog} if unit.watchdog else {})},
        )

    @staticmethod
    def _stopped_on_request(unit: _Unit) -> bool:
        """Asked to stop ("Stopping ..." among its lines) and ended
        on the stop's own signal, once, with no restart: a unit whose
        program does not count SIGTERM as success (SuccessExitStatus=), not
        one that failed."""
        if unit.stop_asked is None or pd.isna(unit.stop_asked) or unit.restarts or unit.oom or unit.gave_up is not None:
            return False
        if not unit.exits or not all(_STOP_SIGNALED.match(status) for status in unit.exits):
            return False
        return set(unit.results) <= {"exit-code", "signal"} and unit.failures() == 1


def _recurring(findings: list) -> None:
    """One unit failing again, bursts apart (hours of a daemon that keeps
    hanging): each burst says which of its failures it holds and over what
    span, and a unit that failed twice is as severe as two failures in one
    burst (kb ``recurs`` then tells them as one incident)."""
    def resource_of(f):
        return (f.refs["unit"],) if f.metrics["failures"] and not f.metrics["stopped_on_request"] else None

    def failures(f):
        return f.metrics["failures"]
    for (unit,), times, total, span in recurrences(findings, resource_of, failures, until="start"):
        told = f"{unit} failed {total} times {span}" + (f" ({times[0].refs['how']})" if times[0].refs.get("how") else "")
        for f, which, n in numbered(times, failures):
            f.title += f"; failure{'s' if n > 1 else ''} {which} of {total} {span}"
            f.refs["recurring"] = told
            f.metrics["failures_recurring"] = total
            if f.severity == "medium":
                f.severity = "high"


def _listeners(ctx: Context, host, port: str) -> list:
    """The bundle's listening sockets on ``port`` (from ``ss -ltnp`` or
    ``netstat -tlnp`` output), each a Limit naming the holder."""
    facts = ctx.facts(host)
    return list(facts.listeners.get(port, [])) if facts is not None else []


class PortInUse(Detector):
    """A server that could not listen because its port is taken: nginx
    ``bind() to 0.0.0.0:80 failed (98: Address already in use)`` and ``still
    could not bind()``, Apache ``make_sock: could not bind to address``, Go,
    Node, Python and Java's words for EADDRINUSE: per burst, the addresses,
    the programs, how often they gave up, and (where a bundle's ``ss -ltnp``
    or ``netstat`` output shows it) the process that holds the port.

    Why it matters: a service that cannot bind does not start (or, on an
    nginx reload, keeps serving the old configuration); a restart loop
    follows until the port is freed.
    """

    id = "port-in-use"
    summary = "servers that could not listen: 'Address already in use' (EADDRINUSE), and who holds the port"
    inputs = ("events:port-in-use",)
    category = "service-failure"
    defaults = {"burst_gap_seconds": 600.0}

    def run(self, ctx: Context):
        out = []
        for b in bursts(ctx.events_of(self.id), self.params["burst_gap_seconds"]):
            addresses: dict = {}
            programs: dict = {}
            gave_up = 0
            for row in b.rows.itertuples(index=False):
                f = fields_of(self.id, str(row.message)) or {}
                n = lines_of(row)
                if f.get("gave_up"):
                    gave_up += n
                    continue
                if f.get("address"):
                    addresses[f["address"]] = addresses.get(f["address"], 0) + n
                who = writer(row) or "a server"
                programs[who] = programs.get(who, 0) + n
            ports = sorted({m.group(1) for a in addresses for m in [_PORT.search(a)] if m}, key=int)
            holders = [h for p in ports for h in _listeners(ctx, b.host, p)]
            title = (f"port {', '.join(ports)} already in use" if ports else "address already in use")
            if addresses:
                title += f" ({listed(sorted(addresses, key=lambda a: -addresses[a]))})"
            tries = sum(programs.values())
            title += f": {listed(sorted(programs, key=lambda p: -programs[p]))} could not bind {tries:,} x"
            if gave_up:
                title += f", gave up {gave_up:,} x ('still could not bind()')"
            if holders:
                title += f"; held by {holders[0].value} on {holders[0].name}"
            refs = {"ports": ports, **({"port": ports[0]} if ports else {}),
                    "addresses": sorted(addresses), "programs": sorted(programs)}
            if holders:
                refs.update(holder=holders[0].value, cite=holders[0].where())
            out.append(self.finding(
                title=title + (f" over {(b.end - b.start).total_seconds():.0f} s"
                               if b.aligned and b.end != b.start else ""),
                severity="high", start=b.start, end=b.end, host=b.host, aligned=b.aligned,
                metrics={"lines": tries + gave_up, "gave_up": gave_up, "addresses": len(addresses),
                         "holder_known": bool(holders)},
                evidence=evidence_from_events(ctx.clock, b.rows, 5) + [limit_evidence(h) for h in holders[:2]],
                refs=refs,
            ))
        return out


#: ps's STAT letters of a stopped process, and what stopped it.
_STOPPED = {"T": "stopped by a signal (SIGSTOP or SIGTSTP: an operator, a script, a frozen container)",
            "t": "held by a debugger or tracer (ptrace)"}


class ProcessStopped(Detector):
    """A daemon a ps snapshot shows stopped: STAT ``T`` (stopped by a
    signal) or ``t`` (held by a debugger), with no terminal (a shell's job
    suspended with Ctrl-Z has one), named as its own log lines tag it.

    Why it matters: a stopped process runs nothing and answers nothing,
    yet its listening sockets still complete handshakes until their backlog
    is full: its clients wait, retransmit their SYNs and time out, and its
    own log says nothing.  When it stopped is unknown, before the first
    snapshot that shows it (kb.toml's ``held_before_line``)."""

    id = "process-stopped"
    summary = "daemons a ps snapshot shows stopped (STAT T or t, no terminal): SIGSTOP, a debugger, a freeze"
    inputs = ("ps",)
    category = "service-failure"

    def run(self, ctx: Context):
        seen: dict = {}          # (host, pid, start) -> [first snapshot, row, last snapshot]
        for src in ctx.sources_of("ps"):
            for snap in snapshots_of([src], None):
                frame = without_collectors(snap)
                stat = frame["stat"].fillna("").astype(str)
                tty = frame["tty"].fillna("?").astype(str)
                stopped = frame[stat.str[:1].isin(list(_STOPPED)) & tty.isin(["?", "", "-"])]
                for r in stopped.itertuples(index=False):
                    name = program_name(str(r.command))
                    if name.startswith("["):
                        continue        # a kernel thread
                    key = (src.host, int(r.pid), str(r.start))
                    if key in seen:
                        seen[key][2] = snap
                    else:
                        seen[key] = [snap, r, snap]
        if not seen:
            return []
        asked: dict = {}
        for host, pid, _start in seen:
            asked.setdefault(host, set()).add(pid)
        tags = logged_names(ctx.sources, asked)
        out = []
        for (host, pid, _start), (first, r, last) in seen.items():
            name = program_name(str(r.command))
            tag = tags.get((host, pid))
            who = called(pid, name, tag)
            when = fmt_time(first.time) if first.time is not None else "an unknown time"
            letter = str(r.stat)[:1]
            title = f"{who} stopped in ps at {when} (STAT {r.stat}): {_STOPPED[letter]}; it answers nothing"
            if last is not first and last.time is not None:
                title += f", still stopped at {fmt_time(last.time)}"
            out.append(self.finding(
                title=title, severity="high", start=first.time, end=last.time if last.time is not None else first.time,
                host=host, aligned=first.time is not None,
                metrics={"pid": pid, "traced": int(letter == "t")},
                refs={"pids": [pid], "responsible": f"{who} in ps at {when}", "responsible_names": [tag or name],
                      "responsible_pids": [pid], **({"peak_time": iso(first.time)} if first.time is not None else {})},
                evidence=[Evidence(path=first.path, line=int(r.line), text=str(r.text))],
            ))
        return out
