"""Per-process and per-cgroup limits a workload runs into: process and
thread slots (pids.max, RLIMIT_NPROC, pid_max)."""
from __future__ import annotations

from sarsleuth.detectors._events import bursts
from sarsleuth.detectors._series import fmt_time, severity_for
from sarsleuth.detectors.base import Context, Detector, evidence_from_events, limit_evidence
from sarsleuth.knowledge.signatures import fields_of


def _writer(row) -> str:
    """Who logged a line: its syslog tag (the kernel's lines name no program)."""
    proc = getattr(row, "process", None)
    if isinstance(proc, str) and proc and proc not in ("None", "kernel"):
        return proc
    return "nginx" if str(getattr(row, "source", "")) == "nginx-error" else ""


class ForkRejected(Detector):
    """New processes and threads refused (EAGAIN from fork/clone): the
    kernel's ``fork rejected by pids controller in <cgroup>``, bash's
    ``fork: retry: Resource temporarily unavailable``, Python's ``can't
    start new thread``, Java's ``unable to create native thread``, Go's
    ``failed to create new OS thread``, nginx's ``fork() failed while
    spawning``: per program and cgroup, with the task count sar -q saw.

    Why it matters: at its pids.max (systemd TasksMax), RLIMIT_NPROC or the
    host's pid_max a service cannot start the thread or process a request
    needs, so requests fail while CPU and memory look fine.
    """

    id = "fork-rejected"
    summary = "processes/threads refused (pids.max, RLIMIT_NPROC, pid_max): 'fork rejected', 'can't start new thread'"
    inputs = ("events:fork-rejected",)
    category = "pid-exhaustion"
    defaults = {"burst_gap_seconds": 600.0, "context_seconds": 120.0}

    def run(self, ctx: Context):
        out = []
        for b in bursts(ctx.events_of(self.id), self.params["burst_gap_seconds"]):
            writers: dict = {}
            cgroups, threads = set(), 0
            for r in b.rows.itertuples(index=False):
                f = fields_of(self.id, str(r.message)) or {}
                n = int(r.count) if r.count == r.count and r.count else 1
                if f.get("cgroup"):
                    cgroups.add(f["cgroup"])
                    continue
                if f.get("threads") or f.get("have"):
                    threads += n
                who = _writer(r) or f.get("program", "").rsplit("/", 1)[-1] or "a process"
                writers[who] = writers.get(who, 0) + n
            parts = [f"{who} {n} x" for who, n in sorted(writers.items(), key=lambda kv: -kv[1])[:4]]
            if cgroups:
                parts.append(f"cgroup {', '.join(sorted(cgroups))} at its pids.max")
            title = f"{b.lines} x new process or thread refused: {'; '.join(parts)}"
            metrics = {"lines": b.lines, "programs": len(writers), "cgroups": len(cgroups), "thread_failures": threads}
            evidence = evidence_from_events(b.rows, 6)
            tasks = self._tasks(ctx, b)
            if tasks is not None:
                peak, when, before = tasks
                metrics.update(peak_tasks=peak, tasks_before=before)
                title += f" (sar -q plist-sz {peak:.0f} at {fmt_time(when)}" + (
                    f", {before:.0f} before)" if before is not None else ")")
            limit = ctx.limit(b.host, "kernel.pid_max")
            if limit is not None:
                metrics["pid_max"] = limit.number()
                evidence.append(limit_evidence(limit))
            out.append(self.finding(
                title=title, severity=severity_for(b.lines, [(10, "high")], "medium" if not cgroups else "high"),
                start=b.start, end=b.end, host=b.host, aligned=b.aligned, metrics=metrics, evidence=evidence,
                refs={"programs": sorted(writers), "cgroups": sorted(cgroups),
                      **({"program": max(writers, key=writers.get)} if writers else {}),
                      **({"cgroup": sorted(cgroups)[0]} if cgroups else {})},
            ))
        return out

    def _tasks(self, ctx: Context, b):
        """(peak plist-sz around the burst, its time, its median before the
        burst) or None."""
        import pandas as pd
        if not b.aligned or b.host not in ctx.hosts("queue"):
            return None
        s = ctx.series("queue", "plist-sz", host=b.host)
        if s is None or not len(s):
            return None
        margin = pd.Timedelta(seconds=self.params["context_seconds"])
        try:
            around = s[(s.index >= b.start - margin) & (s.index <= b.end + margin)]
            before = s[s.index < b.start]
        except TypeError:               # naive and aware clocks
            return None
        if not len(around):
            return None
        return float(around.max()), around.idxmax(), (float(before.median()) if len(before) else None)
