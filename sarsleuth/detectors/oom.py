"""The OOM killer's kills (the kernel's, systemd-oomd's, earlyoom's), its
runs whose kill is not in the log, and the kills forced by hand."""
from __future__ import annotations

import re

import pandas as pd

from sarsleuth.detectors.base import Detector
from sarsleuth.detectors.context import Context
from sarsleuth.detectors.crossref import (close_in_time, evidence_of, kills_of, nginx_exits, oom_context,
                                           oomd_usage, where)
from sarsleuth.detectors.event_bursts import bursts, printed, tell_recurring
from sarsleuth.detectors.evidence import evidence_from_events
from sarsleuth.detectors.kernel import kb_explanation
from sarsleuth.detectors.series import fmt_kib
from sarsleuth.knowledge.signatures import fields_of


class OomKill(Detector):
    """OOM killer victims: pid, comm, rss, constraint (host or memcg), and
    the user-space killers' victims (systemd-oomd units, earlyoom pids).

    Why it matters: the kernel killed a process because RAM and swap (or a
    cgroup's limit) ran out; for nginx the master respawns the worker.
    """

    id = "oom-kill"
    summary = "OOM killer victims: pid, comm, anon/file rss, constraint (host or memcg); systemd-oomd, earlyoom"
    inputs = ("events",)
    category = "memory-exhaustion"
    defaults = {"burst_gap_seconds": 600.0, "match_window_seconds": 120.0}

    def run(self, ctx: Context):
        out = []
        ev = ctx.events_of("oom-kill")
        unpaired = self._invoked_without_kill(ctx, ev)
        if ev is None or not len(ev):
            _recurring(unpaired)
            return unpaired
        usage = oomd_usage(ctx)
        for b in bursts(ev, self.params["burst_gap_seconds"]):
            victims, constraint, rss_kb, killed_rows, with_kill, chosen_only = {}, None, 0, {}, [], set()
            units, reasons, sacrificed = {}, set(), {}
            for i, r in enumerate(b.rows.itertuples(index=False)):
                kills = kills_of(r.message, r.detail)
                sacrificed.update(_sacrificed_children(r.message, r.detail))
                if kills:
                    with_kill.append(i)
                # the report's own "Killed process" line (in its detail) follows its choice
                reported = bool(kills_of("", r.detail))
                for kill in kills:
                    unit = str(kill.get("unit", "")).rstrip("/").rsplit("/", 1)[-1]
                    # a unit killed by systemd-oomd is named by its path there and by its name by systemd
                    key = int(kill["pid"]) if kill.get("pid") else unit or None
                    if key is None:
                        continue
                    name = kill.get("comm") or unit
                    rss = sum(int(kill.get(f, 0)) for f in ("anon_rss_kb", "file_rss_kb", "shmem_rss_kb"))
                    if key not in victims or rss:
                        victims[key] = (name, rss)
                    # the kernel's choice ("Kill process N ... or sacrifice
                    # child") whose "Killed process" line is not in the file
                    if kill.get("verb", "Killed") == "Killed" or reported:
                        chosen_only.discard(key)
                    elif key not in killed_rows:
                        chosen_only.add(key)
                    killed_rows.setdefault(key, r)
                    if unit:
                        units.setdefault(unit, usage.get((b.host, unit)))
                        if kill.get("reason"):
                            reasons.add(kill["reason"] + (f" {kill['pressure']} > {kill['pressure_limit']}"
                                                          if kill.get("pressure") else ""))
                constraint = oom_context(r.message, r.detail).get("constraint") or constraint
            if not victims:
                continue
            rss_kb = max(rss for _, rss in victims.values())
            comms = sorted({name for name, _ in victims.values()})
            # the process the kernel chose, when it killed a child of it instead
            parents = {pid: sacrificed[pid] for pid in victims if pid in sacrificed}
            chose = "; ".join(f"{victims[pid][0] if len(victims) > 1 else ''} sacrificed for its parent {comm} "
                              f"(PID {ppid}" + (f", score {score}" if score else "") + ")"
                              for pid, (ppid, comm, score) in sorted(parents.items())[:2]).strip()
            pids = sorted(k for k in victims if isinstance(k, int))
            scope = " in a memory cgroup" if constraint == "CONSTRAINT_MEMCG" else ""
            who = "OOM killer" if pids or not units else "systemd-oomd"
            noun = "unit(s)" if who == "systemd-oomd" else "process(es)"
            why = [r for r in sorted(reasons)] + [f"{u} used {m}" for u, m in sorted(units.items()) if m][:2]
            # the same kill printed again and again (a flood of one line) is one kill
            reports = printed(b.rows.iloc[with_kill])
            forced = _forced(ctx, b)
            killer = "OOM killer forced by hand (SysRq f: order=-1):" if forced else who
            out.append(self.finding(
                title=f"{killer} killed {len(victims)} {noun}{scope}: {', '.join(comms)}"
                      + (f", {chose}" if chose else "")
                      + (f" (largest rss {fmt_kib(rss_kb)})" if rss_kb else "")
                      + (f" ({'; '.join(why)})" if why else "")
                      + (f", reported {reports:,} times" if reports > len(victims) else "")
                      + (f" ({len(chosen_only)} of them chosen, "
                         + ("its kill line" if len(chosen_only) == 1 else "their kill lines") + " not in the file)"
                         if chosen_only else ""),
                severity="medium" if forced else "critical", start=b.start, end=b.end, host=b.host,
                aligned=b.aligned,
                metrics={"victims": len(victims), "victims_chosen_only": len(chosen_only), "kill_reports": reports,
                         "max_victim_rss_kb": rss_kb or None,
                         "memcg": constraint == "CONSTRAINT_MEMCG" if constraint else None,
                         **({"forced": 1} if forced else {})},
                evidence=evidence_from_events(ctx.clock, b.rows.iloc[with_kill], 6),
                explanation=("Someone (or a script) forced the OOM killer through SysRq f: its invocation says "
                             "order=-1. It kills the largest process whatever memory is free: no memory ran out."
                             if forced else
                             "A memory cgroup hit its limit: the host may have had memory to spare."
                             if constraint == "CONSTRAINT_MEMCG" else
                             "systemd-oomd killed the unit's whole cgroup before the kernel ran out of memory: "
                             "memory pressure (PSI) or swap use stayed above its limit (ManagedOOMMemoryPressure"
                             "Limit, SwapUsedLimit)." if who == "systemd-oomd" else ""),
            ))
            f = out[-1]
            f.refs["pids"] = pids
            # what to size is what the kernel chose, not the child it sacrificed
            f.refs["victim"] = ", ".join(comms[:3])
            if parents:
                sized = [parents[p][1] if p in parents else name for p, (name, _rss) in victims.items()]
                f.refs["victim"] = ", ".join(dict.fromkeys(sized))
                f.refs["chosen_pids"] = sorted({ppid for ppid, _c, _s in parents.values()})
                f.metrics["children_sacrificed"] = len(parents)
            # nginx's side of the same kill: "worker process N exited on signal 9"
            exits = nginx_exits(ctx, 9)
            same = [pid for pid in pids if pid in exits
                    and close_in_time(killed_rows.get(pid), exits[pid], self.params["match_window_seconds"])]
            f.metrics["matched_nginx_exits"] = len(same)
            if same:
                f.refs["nginx_exit_pids"] = same
                f.evidence.extend(evidence_of(exits[p], str(exits[p].message)) for p in same[:3])
                f.sources = sorted(set(f.sources) | {str(exits[p].file) for p in same})
                f.explanation = (f"nginx's error.log reports the same PID(s) exiting on signal 9 "
                                 f"({', '.join(f'{p} at {where(exits[p])}' for p in same[:3])}): "
                                 "the OOM killer killed nginx worker(s), which the master then respawned. "
                                 + (f.explanation or kb_explanation(self.id)))
        out += [f for f in unpaired if not _told_with_a_kill(f, out)]
        _recurring(out)
        return out

    def _invoked_without_kill(self, ctx: Context, kills):
        """OOM invocations whose kill is not in the log (a truncated paste, a
        ring buffer that wrapped, a second invocation that found nothing to
        kill): each invocation is paired with the first kill that follows it
        in the same file before the next invocation; the unpaired ones are
        reported, because the OOM killer still ran."""
        invoked = ctx.events_of("oom-invoked")
        if invoked is None or not len(invoked):
            return []
        unpaired = invoked[~_paired(invoked, kills)]
        out = []
        for b in bursts(unpaired, self.params["burst_gap_seconds"]):
            invokers = sorted({f["comm"] for f in (fields_of("oom-invoked", x) for x in b.rows["message"].astype(str))
                               if f})
            out.append(self.finding(
                title=f"OOM killer invoked {b.lines} time(s) by {', '.join(invokers) or 'a process'} (victim not in the log)",
                severity="critical", start=b.start, end=b.end, host=b.host, aligned=b.aligned,
                metrics={"invocations": b.lines}, evidence=evidence_from_events(ctx.clock, b.rows, 3),
                refs={"invokers": invokers},
            ))
        return out


def _sacrificed_children(message: str, detail) -> dict:
    """{killed PID: (chosen PID, its command, its score)} of one OOM report
    whose kill is a child of the process the kernel chose (4.x and before,
    mm/oom_kill.c oom_kill_process: "Kill process N (comm) score S or
    sacrifice child", then "Killed process M (child)")."""
    text = f"{message}\n{detail if isinstance(detail, str) else ''}"
    chosen = killed = None
    for line in text.split("\n"):
        f = fields_of("oom-kill", line) or {}
        if f.get("verb") in ("Kill", "kill") and f.get("pid"):
            score = re.search(r"\bscore (\d+)", line)
            chosen = (int(f["pid"]), f.get("comm", "?"), score.group(1) if score else None)
        elif f.get("verb") == "Killed" and f.get("pid") and chosen is not None:
            killed = int(f["pid"])
            break
    if chosen is None or killed is None or killed == chosen[0]:
        return {}
    return {killed: chosen}


def _recurring(findings: list) -> None:
    """The OOM killer killing the same program again, bursts apart (a
    service whose cgroup limit is too small, killed every few minutes for
    hours), or invoked again by the same program with its kills not in
    the file: one failure recurring."""
    def resource_of(f):
        who = f.refs.get("victim") or ", ".join(f.refs.get("invokers") or [])
        return None if f.metrics.get("forced") or not who else (
            "oom-kill" if "victims" in f.metrics else "oom-invoked", who)

    def told_of(resource, times, count, span):
        what, who = resource
        in_bursts = f"in {len(times)} bursts " if count > len(times) else ""
        scope = " in a memory cgroup" if all(f.metrics.get("memcg") for f in times) else ""
        return (f"OOM killer killed {who} {count} times{scope} {in_bursts}{span}" if what == "oom-kill" else
                f"OOM killer invoked {count} times by {who} {in_bursts}{span} (victims not in the log)")
    tell_recurring(findings, resource_of, lambda f: f.metrics.get("victims") or f.metrics.get("invocations") or 1,
                   told_of)


def _told_with_a_kill(invoked, kills: list) -> bool:
    """An invocation without time whose kill is missing, printed within an
    OOM report's length of a kill without time in the same file, is the
    same episode run again (a paste that ends inside the next report): it
    is said in that kill's finding, not as an incident of its own."""
    if invoked.aligned:
        return False
    for f in kills:
        if f.aligned or f.host != invoked.host:
            continue
        near = [e for e in invoked.evidence for k in f.evidence
                if e.path == k.path and e.line is not None and k.line is not None
                and abs(e.line - k.line) <= _REPORT_LINES]
        if near:
            times = int(invoked.metrics.get("invocations", 1))
            by = ", ".join(invoked.refs.get("invokers") or []) or "a process"
            f.title += f"; invoked again {times} time(s) by {by}, the kill not in the file"
            f.metrics["invocations_unpaired"] = times
            f.evidence.extend(invoked.evidence[:2])
            return True
    return False


#: Lines an OOM report prints at most between its invocation and its kill.
_REPORT_LINES = 400


def _forced(ctx: Context, burst) -> bool:
    """Were the OOM killer's runs of a burst forced (SysRq f, whose
    invocation has order -1: mm/oom_kill.c, drivers/tty/sysrq.c), every
    one of them?"""
    invoked = ctx.events_of("oom-invoked")
    if invoked is None or not len(invoked):
        return False
    if burst.aligned:
        try:
            near = invoked[(invoked["host"].astype(object) == burst.host)
                           & (invoked["timestamp"] >= burst.start - pd.Timedelta(seconds=5))
                           & (invoked["timestamp"] <= burst.end)]
        except TypeError:
            return False
    else:
        # no time: the invocations printed in the same file just before the kills
        near = invoked.iloc[0:0]
        for path, rows in burst.rows.groupby(burst.rows["file"].astype(str)):
            lo, hi = int(rows["line"].min()), int(rows["line"].max())
            same = invoked[(invoked["file"].astype(str) == path)]
            near = pd.concat([near, same[(same["line"] >= lo - _REPORT_LINES) & (same["line"] <= hi)]])
    orders = [(fields_of("oom-invoked", str(m)) or {}).get("order") for m in near["message"]]
    return bool(orders) and all(o == "-1" for o in orders)


def _paired(invoked, kills):
    """A boolean Series over ``invoked``: has the invocation its kill (the
    first oom-kill event after it in its file, before the next invocation)?"""
    paired = pd.Series(False, index=invoked.index)
    if kills is None or not len(kills):
        return paired
    for path, part in invoked.groupby(invoked["file"].astype(str), sort=False):
        kill_lines = sorted(int(x) for x in kills.loc[kills["file"].astype(str) == path, "line"].dropna())
        rows = part.assign(_line=part["line"].astype("float")).sort_values("_line", kind="stable")
        lines = [int(x) if x == x else None for x in rows["_line"]]
        for k, (idx, line) in enumerate(zip(rows.index, lines)):
            if line is None:
                continue
            nxt = next((x for x in lines[k + 1:] if x is not None and x > line), None)
            paired[idx] = any(line < kl and (nxt is None or kl < nxt) for kl in kill_lines)
    return paired
