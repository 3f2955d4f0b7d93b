"""Kernel stall detectors: tasks hung in D state (and the lock holder the
kernel names), CPUs locked up, RCU grace periods that do not end, NFS
servers that stopped answering."""
from __future__ import annotations

import pandas as pd

from sarsleuth.detectors.event_bursts import bursts, tell_recurring
from sarsleuth.detectors.base import Detector
from sarsleuth.detectors.context import Context
from sarsleuth.detectors.evidence import evidence_from_events
from sarsleuth.detectors.kernel import IDLE_TASK
from sarsleuth.knowledge.signatures import all_fields_of, fields_of
from sarsleuth.model import iso


def _detail_lines(detail) -> list[str]:
    return detail.split("\n") if isinstance(detail, str) else []


def _count(into: dict, key, n: int = 1) -> None:
    into[key] = into.get(key, 0) + n


class HungTask(Detector):
    """Hung-task reports (``blocked for more than N seconds``), with the
    state their body's task line gives (``task:<comm> state:D`` on 5.x+,
    ``<comm> D ...`` before) and, on 6.14+ kernels, the task holding the
    lock they wait on (``blocked on a mutex likely owned by task dd:7178``).

    Why it matters: a task stuck in D state waits on I/O or a lock that does
    not complete; the lock's holder (a writer stuck on slow storage, a
    filesystem's journal thread) is the one to look at, not the waiter.
    """

    id = "hung-task"
    summary = "tasks blocked in D state longer than the hung-task timeout, and the lock holder the kernel names"
    inputs = ("events:hung-task",)
    category = "kernel-stall"
    defaults = {"burst_gap_seconds": 600.0}

    def run(self, ctx: Context):
        out = []
        for b in bursts(ctx.events_of(self.id), self.params["burst_gap_seconds"]):
            tasks = [f for f in (fields_of(self.id, msg) for msg in b.rows["message"].astype(str)) if f]
            names = sorted({t["comm"] for t in tasks})
            holders: dict = {}      # (owner, owner pid, lock) -> reports naming it
            states: dict = {}       # pid -> state of its task line in a report's body
            for detail in b.rows["detail"]:
                for line in _detail_lines(detail):
                    blocker = fields_of("hung-task-blocker", line)
                    if blocker:
                        _count(holders, (blocker["owner"], int(blocker["owner_pid"]), blocker["lock"]))
                        continue
                    body = fields_of(self.id, line)
                    if body and body.get("state"):
                        states[int(body["pid"])] = body["state"]
            title = f"{b.lines} hung task report(s)" + (f": {', '.join(names)}" if names else "")
            explanation = ""
            if holders:
                (owner, owner_pid, lock), _ = max(holders.items(), key=lambda kv: kv[1])
                title += f" blocked on {lock} held by {owner} (pid {owner_pid})"
                explanation = (f"The kernel names the holder of the lock the hung task(s) waited on: {owner} "
                               f"(pid {owner_pid})" + (", itself in D state (waiting on I/O)"
                                                       if states.get(owner_pid) == "D" else "")
                               + ". The holder is stuck, the waiters only queue behind it.")
            out.append(self.finding(
                title=title, severity="high", start=b.start, end=b.end, host=b.host, aligned=b.aligned,
                metrics={"reports": b.lines,
                         "blocked_seconds": max((int(t["seconds"]) for t in tasks if "seconds" in t), default=None),
                         "lock_holders": len({(o, p) for o, p, _ in holders})},
                evidence=evidence_from_events(ctx.clock, b.rows, 4), explanation=explanation,
                refs={"pids": sorted({int(t["pid"]) for t in tasks}),
                      "holder_pids": sorted({p for _, p, _ in holders})},
            ))
            if holders:
                out[-1].refs.update(holder=owner, holder_pid=owner_pid)
            out[-1].refs.update(_stuck_since(b, tasks))
        return out


def _stuck_since(b, tasks: list) -> dict:
    """Refs ``onset``: a task reported "blocked for more than N seconds" (a
    CPU "stuck for Ns") at T was stuck by T - N at the latest (the kernel
    prints the time it measured); the first report of a burst dates the
    stall."""
    first = tasks[0] if tasks else {}
    if not b.aligned or "seconds" not in first or b.start is None or pd.isna(b.start):
        return {}
    return {"onset": iso(pd.Timestamp(b.start) - pd.Timedelta(seconds=int(first["seconds"])))}


#: the kinds of watchdog report, as titles count them
_LOCKUP_NAMES = {"soft": "soft lockup(s)", "hard": "hard lockup(s)", "rcu": "RCU stall(s)",
                 "workqueue": "workqueue lockup(s)"}


def _lockup_kind(f: dict) -> str:
    if f.get("rcu"):
        return "rcu"
    if f.get("lockup") == "workqueue":
        return "workqueue"
    if f.get("lockup"):
        return "hard"
    return "soft"


#: Lines of one RCU stall report (each stalled CPU's, the summary) come this close.
_ONE_REPORT_SECONDS = 2.0


def _rcu_stalls(lines: list) -> int:
    """Grace periods that stalled, from the lines that report them
    (``[(fields, time)]`` in file order): the lines of one report (one per
    stalled CPU, then the summary) come together, and a report whose wait
    (``t=`` jiffies) is longer than the one before is that stall still
    going, printed again; the wait starting over is a new stall."""
    stalls, last_time, last_wait = 0, None, None
    for f, when in lines:
        wait = int(f["jiffies"]) if f.get("jiffies") else None
        together = (last_time is not None and not pd.isna(when) and not pd.isna(last_time)
                    and abs((pd.Timestamp(when) - pd.Timestamp(last_time)).total_seconds()) <= _ONE_REPORT_SECONDS)
        goes_on = wait is not None and last_wait is not None and wait > last_wait
        if not (together or goes_on) or stalls == 0:
            stalls += 1
        last_time, last_wait = when, wait if wait is not None else last_wait
    return stalls


class KernelLockup(Detector):
    """The kernel's watchdogs: soft lockups (a CPU that did not schedule),
    hard lockups (its timer interrupts stopped), RCU stalls and workqueue
    lockups, with the CPUs, the task stuck on them, for how long, and the
    panic they ended in when softlockup_panic/hardlockup_panic is set.

    Why it matters: while a CPU is stuck in the kernel nothing else runs on
    it; a few stuck CPUs stall the whole host (timeouts everywhere, hung
    tasks, gaps in sar), and a panic reboots it.
    """

    id = "kernel-lockup"
    summary = "soft and hard lockups, RCU stalls, workqueue lockups: CPUs, stuck task, seconds, panic"
    inputs = ("events:kernel-lockup",)
    category = "kernel-stall"
    defaults = {"burst_gap_seconds": 600.0}

    def run(self, ctx: Context):
        out = []
        for b in bursts(ctx.events_of(self.id), self.params["burst_gap_seconds"]):
            found, panic, stamps = [], False, []
            for msg, detail, stamp in zip(b.rows["message"].astype(str), b.rows["detail"], b.rows["timestamp"]):
                first = fields_of(self.id, msg)
                more = ([first] if first else []) + [f for line in _detail_lines(detail)
                                                     for f in [fields_of(self.id, line)] if f]
                found += more
                stamps += [stamp] * len(more)
                panic = panic or any((fields_of("kernel-oops", line) or {}).get("panic") is not None
                                     for line in _detail_lines(detail))
            kinds, tasks, cpus = {}, {}, set()
            rcu_stalls = _rcu_stalls([(f, t) for f, t in zip(found, stamps) if _lockup_kind(f) == "rcu"])
            if rcu_stalls:
                kinds["rcu"] = rcu_stalls
            for f in found:
                if _lockup_kind(f) != "rcu":
                    _count(kinds, _lockup_kind(f))
                if f.get("cpu"):
                    cpus.add(int(f["cpu"]))
                if f.get("comm"):
                    _count(tasks, (f["comm"], int(f["pid"])))
            seconds = max((int(f["seconds"]) for f in found if f.get("seconds")), default=None)
            what = ", ".join(f"{n} {_LOCKUP_NAMES[k]}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1]))
            title = (what or f"{b.lines} lockup report(s)") + (
                f" on CPU {', '.join(map(str, sorted(cpus)))}" if cpus else "")
            comms = sorted({c for c, _ in tasks if not IDLE_TASK.match(c)})
            idle = sorted({c for c, _ in tasks if IDLE_TASK.match(c)})
            stuck = " stuck" + (f" up to {seconds} s" if seconds else "")
            if comms:
                title += f": {', '.join(comms[:4])}{stuck}"
            elif idle:
                # the idle task: the CPU spun in interrupt context, for no program
                title += f": interrupt context on an idle CPU ({', '.join(idle[:4])}){stuck}"
            # where it spun, from the report's RIP line
            place = next((f for detail in b.rows["detail"] if isinstance(detail, str)
                          for f in all_fields_of("kernel-oops", detail) if f.get("function")), None)
            if place:
                title += f", in {place['function']}" + (f" [{place['module']}]" if place.get("module") else "")
            if panic:
                title += ", ending in a kernel panic"
            finding = self.finding(
                title=title, severity="critical" if panic else "high",
                start=b.start, end=b.end, host=b.host, aligned=b.aligned,
                metrics={"reports": b.lines, "panic": panic, "cpus": len(cpus) or None, "stuck_seconds": seconds,
                         **{k: n for k, n in kinds.items()}},
                evidence=evidence_from_events(ctx.clock, b.rows, 4),
                refs={"pids": sorted({p for _, p in tasks if p}), **_stuck_since(b, found),
                      **({"function": place["function"]} if place else {})},
            )
            if cpus:
                finding.refs["cpus"] = sorted(cpus)
            finding.refs["lockups"] = sorted(kinds)
            out.append(finding)
        # the same watchdog firing again, bursts apart, is one stall recurring
        tell_recurring(out, lambda f: tuple(f.refs["lockups"]) if f.refs["lockups"] and not f.metrics["panic"] else None,
                       lambda f: sum(f.metrics.get(k) or 0 for k in f.refs["lockups"]),
                       lambda kinds, times, count, span: f"{count} {' and '.join(_LOCKUP_NAMES[k] for k in kinds)} "
                                                         + (f"in {len(times)} bursts " if count > len(times) else "")
                                                         + span)
        return out


class NfsServerDown(Detector):
    """NFS (and lockd) servers that stopped answering: ``nfs: server X not
    responding, still trying`` until ``nfs: server X OK``, per server, with
    how long it lasted and whether the mount was soft (``timed out``: the
    calls failed with EIO) or hard (``still trying``: they wait).

    Why it matters: on a hard mount every process touching the mount waits
    in D state until the server answers: hung tasks, load without CPU use,
    requests stuck behind them.  The server (or the network to it), not the
    host that logs it, is where to look.
    """

    id = "nfs-server-down"
    summary = "NFS/lockd servers not responding ('still trying', 'timed out') until 'OK': per server, how long"
    inputs = ("events:nfs-server-down",)
    category = "network-storage"
    defaults = {"burst_gap_seconds": 900.0}

    def run(self, ctx: Context):
        out = []
        events = ctx.events_of(self.id)
        if events is None or not len(events):
            return out
        parsed = [fields_of(self.id, m) or {} for m in events["message"].astype(str)]
        events = events.assign(_server=[p.get("server") for p in parsed], _ok=[bool(p.get("ok")) for p in parsed],
                               _soft=[p.get("how") == "timed out" for p in parsed])
        for b in bursts(events[~events["_ok"]], self.params["burst_gap_seconds"]):
            servers = sorted(set(b.rows["_server"].dropna()))
            # each kind of line as often as it was logged (a folded repeat counts its lines)
            soft_lines = int(b.rows.loc[b.rows["_soft"], "count"].fillna(1).sum())
            soft, hard = soft_lines > 0, soft_lines < b.lines
            # the first "OK" of those servers after the outage began ends it
            back = events[events["_ok"] & events["_server"].isin(servers) & (events["host"].fillna("") == (b.host or ""))]
            ok_rows, lasted, recovered = self._answered_again(b, back)
            end = ok_rows["timestamp"].iloc[0] if b.aligned and len(ok_rows) else b.end
            hows = [f"{n} x {how}" for n, how in ((soft_lines, "timed out"), (b.lines - soft_lines, "still trying"))
                    if n]
            title = f"NFS server {', '.join(servers)} not responding ({', '.join(hows)})"
            if lasted is not None and (recovered or lasted >= 1):
                title += f" for {lasted:.0f} s" + (" until it answered again" if recovered else ", no 'OK' after")
            elif lasted is not None:
                title += ", no 'OK' after"
            rows = pd.concat([b.rows, ok_rows.head(1)]) if len(ok_rows) else b.rows
            explanation = ("The mount is soft: calls to the server failed with EIO, so applications saw I/O errors."
                           if soft and not hard else
                           "The mount is hard: every process touching it waited (D state) until the server answered."
                           if hard and not soft else
                           "Some of its mounts are soft (calls failed with EIO: 'timed out'), others hard (processes "
                           "waited in D state until the server answered: 'still trying').")
            out.append(self.finding(
                title=title, severity="high", start=b.start, end=end, host=b.host, aligned=b.aligned,
                metrics={"lines": b.lines, "servers": len(servers), "soft_mount": soft, "hard_mount": hard,
                         "timed_out_lines": soft_lines, "seconds": lasted, "recovered": recovered},
                evidence=evidence_from_events(ctx.clock, rows.drop(columns=["_server", "_ok", "_soft"]), 6),
                explanation=explanation,
                refs={"servers": servers, "server": ", ".join(servers)},
            ))
        return out

    @staticmethod
    def _answered_again(burst, back):
        """The "OK" lines after the outage began (never one before it), how
        long it lasted (to the first of them, else to its last complaint),
        and whether it was answered again: on the shared clock, or by the
        kernel's uptime stamps within one dmesg when the lines have no time."""
        if burst.aligned:
            after = back[back["timestamp"] >= burst.start].sort_values("timestamp")
            end = after["timestamp"].iloc[0] if len(after) else burst.end
            return after, (pd.Timestamp(end) - pd.Timestamp(burst.start)).total_seconds(), bool(len(after))
        if "uptime" not in burst.rows or burst.rows["uptime"].isna().all():
            return back.iloc[0:0], None, None
        first, last = float(burst.rows["uptime"].min()), float(burst.rows["uptime"].max())
        after = back[back["file"].isin(set(burst.rows["file"])) & (back["uptime"] >= first)].sort_values("uptime")
        end = float(after["uptime"].iloc[0]) if len(after) else last
        return after, end - first, bool(len(after))
