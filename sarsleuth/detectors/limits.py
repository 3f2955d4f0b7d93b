"""Per-process and per-cgroup limits a workload runs into: process and
thread slots (pids.max, RLIMIT_NPROC, pid_max), file descriptors
(RLIMIT_NOFILE, fs.file-max) and local ports (ip_local_port_range)."""
from __future__ import annotations

import pandas as pd

from sarsleuth.detectors.event_bursts import bursts, lines_of, writer
from sarsleuth.detectors.figures import Figures, given, measure
from sarsleuth.detectors.series import fmt_time, severity_for
from sarsleuth.detectors.base import Detector
from sarsleuth.detectors.context import Context
from sarsleuth.detectors.evidence import evidence_from_events, limit_evidence
from sarsleuth.knowledge.signatures import fields_of



#: programs whose descriptors follow their connections (not leaks)
_PROXIES = {"nginx", "tengine", "openresty", "haproxy", "envoy", "a process"}


def _setting(limit) -> str:
    """A limit as it is set: ``Max open files 1024`` (the soft value of
    /proc/PID/limits), ``LimitNOFILE=65536``, ``worker_rlimit_nofile 256``."""
    if limit.name.startswith("Max "):
        return f"{limit.name} {limit.value.split()[0]}"
    if limit.name[:1].isupper():
        return f"{limit.name}={limit.value}"
    return f"{limit.name} {limit.value}"


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
                n = lines_of(r)
                if f.get("cgroup"):
                    cgroups.add(f["cgroup"])
                    continue
                if f.get("threads") or f.get("have"):
                    threads += n
                who = writer(r) or f.get("program", "").rsplit("/", 1)[-1] or "a process"
                writers[who] = writers.get(who, 0) + n
            parts = [f"{who} {n} x" for who, n in sorted(writers.items(), key=lambda kv: -kv[1])[:4]]
            if cgroups:
                parts.append(f"cgroup {', '.join(sorted(cgroups))} at its pids.max")
            if writers:
                title = f"{b.lines} x new process or thread refused: {'; '.join(parts)}"
            else:
                # the kernel logs a pids cgroup's first refusal only (its
                # pids.events "max" counts them all): a count would mislead
                title = f"New processes or threads refused: {'; '.join(parts)}"
            metrics = {"lines": b.lines, "programs": len(writers), "cgroups": len(cgroups), "thread_failures": threads}
            evidence = evidence_from_events(ctx.clock, b.rows, 6)
            figs = Figures()
            tasks = self._tasks(ctx, b, figs)
            if tasks is not None:
                peak, before = tasks
                title += f" (sar -q plist-sz {peak.text()} at {fmt_time(peak.at)}" + (
                    f", {before.text()} before)" if before is not None else ")")
            if not writers:
                title += "; the kernel logs only a cgroup's first refusal"
            limit = ctx.limit(b.host, "kernel.pid_max")
            if limit is not None:
                metrics["pid_max"] = limit.number()
                evidence.append(limit_evidence(limit))
            out.append(self.finding(
                title=title, severity=severity_for(b.lines, [(10, "high")], "medium" if not cgroups else "high"),
                start=b.start, end=b.end, host=b.host, aligned=b.aligned, metrics=metrics, evidence=evidence,
                figures=figs, refs={"programs": sorted(writers), "cgroups": sorted(cgroups),
                      **({"program": max(writers, key=writers.get)} if writers else {}),
                      **({"cgroup": sorted(cgroups)[0]} if cgroups else {})},
            ))
        return out

    def _tasks(self, ctx: Context, b, figs):
        """(peak plist-sz around the burst, its usual level before the burst
        or None) as figures (added to ``figs``), or None."""
        if not b.aligned or b.host not in ctx.hosts("queue"):
            return None
        s = ctx.series("queue", "plist-sz", host=b.host)
        if s is None or not len(s):
            return None
        margin = pd.Timedelta(seconds=self.params["context_seconds"])
        key = ("queue", "plist-sz", "")
        try:
            around = s[(s.index >= b.start - margin) & (s.index <= b.end + margin)]
        except TypeError:               # naive and aware clocks
            return None
        if not len(around):
            return None
        peak = figs.add(measure(ctx, "peak_tasks", "max", b.host, key, around.index[0], around.index[-1], fmt=".0f"))
        # the median before the burst, in its stretch of records
        seg = ctx.segments(s, b.host)
        at = int(s.index.get_loc(around.index[0]))
        before = s.index[(seg == seg[at]) & (s.index < b.start)]
        level = measure(ctx, "tasks_before", "median", b.host, key, before[0], before[-1], fmt=".0f") \
            if len(before) else None
        return peak, figs.add(level)


class TooManyOpenFiles(Detector):
    """Out of file descriptors, from any program: nginx ``accept4() failed
    (24: Too many open files)``, Python ``[Errno 24]``, Java's
    ``IOException: Too many open files``, Node's ``EMFILE``; per program,
    with the limit it ran with where the case records it (its
    /proc/PID/limits, nginx's ``worker_rlimit_nofile``, its unit's
    ``LimitNOFILE``).  Errno 23 (ENFILE) and ``VFS: file-max limit N
    reached`` are the host's limit, fs.file-max, and are told apart.

    Why it matters: a process at its RLIMIT_NOFILE cannot accept a
    connection, open a socket to its upstream or a file: requests fail
    while the host has descriptors to spare.
    """

    id = "too-many-open-files"
    summary = "'Too many open files' from any program: EMFILE (the process's limit, named) or ENFILE / file-max (the host's)"
    inputs = ("events:too-many-open-files",)
    category = "fd-exhaustion"
    defaults = {"burst_gap_seconds": 600.0}

    def run(self, ctx: Context):
        out = []
        for b in bursts(ctx.events_of(self.id), self.params["burst_gap_seconds"]):
            writers: dict = {}
            calls: dict = {}
            system = 0
            file_max = None
            for r in b.rows.itertuples(index=False):
                f = fields_of(self.id, str(r.message)) or {}
                n = lines_of(r)
                if f.get("file_max") or f.get("in_system") or f.get("errno") == "23" or f.get("errno_name") == "ENFILE":
                    system += n
                    file_max = int(f["file_max"]) if f.get("file_max") else file_max
                    continue
                who = writer(r) or "a process"
                writers[who] = writers.get(who, 0) + n
                if f.get("call"):
                    calls.setdefault(who, set()).add(f["call"])
            per_process = sum(writers.values())
            metrics = {"lines": b.lines, "per_process": per_process, "system_wide": system, "programs": len(writers)}
            refs: dict = {"programs": sorted(writers)}
            evidence = evidence_from_events(ctx.clock, b.rows, 5)
            parts = []
            for who, n in sorted(writers.items(), key=lambda kv: -kv[1])[:4]:
                limit = ctx.process_limit(b.host, who, "Max open files")
                parts.append(f"{who} {n} x" + (f" in {', '.join(sorted(calls[who])[:4])}" if who in calls else "")
                             + (f" (`{_setting(limit)}`)" if limit is not None else ""))
                if limit is not None:
                    evidence.append(limit_evidence(limit))
                    if "nofile_setting" not in refs:
                        refs.update(program=who, nofile_setting=_setting(limit))
                        metrics["nofile"] = limit.number()
            if writers:
                refs.setdefault("program", max(writers, key=writers.get))
                # a service's own leak is worth a look; nginx holds what its connections need
                leakers = [w for w in sorted(writers, key=writers.get, reverse=True) if w not in _PROXIES]
                if leakers:
                    refs["leaker"] = leakers[0]
            if system:
                parts.append(f"the host's limit {system} x" + (f" (file-max {file_max})" if file_max else ""))
                host_limit = ctx.limit(b.host, "fs.file-max")
                if host_limit is not None:
                    metrics["file_max"] = host_limit.number()
                    evidence.append(limit_evidence(host_limit))
            what = "EMFILE" if per_process and not system else "ENFILE" if system and not per_process else "EMFILE, ENFILE"
            span = (b.end - b.start).total_seconds() if b.aligned else None
            out.append(self.finding(
                title=f"{b.lines} x Too many open files ({what}): {'; '.join(parts)}"
                      + (f" over {span:.0f} s" if span else ""),
                severity=severity_for(b.lines, [(10, "high")], "medium"),
                start=b.start, end=b.end, host=b.host, aligned=b.aligned, metrics=metrics, evidence=evidence,
                refs=refs,
            ))
        return out


class PortExhaustion(Detector):
    """Outgoing connections failing for want of a local port (EADDRNOTAVAIL,
    errno 99): nginx ``connect() to ... failed (99: Cannot assign requested
    address) while connecting to upstream``, Python ``[Errno 99]``, Go
    ``connect: cannot assign requested address``, HAProxy ``no free
    ports``; per program and destination.

    Why it matters: a proxy that opens one upstream connection per request
    holds each local port for 60 s in TIME_WAIT after closing it; with the
    default ``net.ipv4.ip_local_port_range`` (32768-60999, 28232 ports) that
    caps it near 470 new connections per second per upstream address, and
    past that every new request fails with 502 (report 003's 60 000 client
    connections from one host ran into the same wall).
    """

    id = "port-exhaustion"
    summary = "ephemeral ports exhausted: connect() failed (99: Cannot assign requested address)"
    inputs = ("events", "metrics")
    category = "connection-limit"
    defaults = {"burst_gap_seconds": 600.0, "local_ports": 28232, "context_seconds": 300.0}

    def _ports(self, ctx: Context, host, figs):
        """(figure, words) of the local ports a host may use: its
        ``net.ipv4.ip_local_port_range`` when its bundle records it, the
        config's ``local_ports``, else the kernel default's, said as assumed."""
        lim = ctx.limit(host, "net.ipv4.ip_local_port_range")
        parts = lim.value.split() if lim is not None else []
        if len(parts) == 2 and all(x.isdigit() for x in parts) and int(parts[1]) >= int(parts[0]):
            n = figs.add(given("local_ports", int(parts[1]) - int(parts[0]) + 1, origin=f"{lim.path}:{lim.line}",
                               host=host))
            return n, f"the {n.text()} local ports of ip_local_port_range {parts[0]}-{parts[1]}"
        if self.params["local_ports"] != self.defaults["local_ports"]:
            n = figs.add(given("local_ports", self.params["local_ports"], origin="config", host=host))
            return n, f"the {n.text()} local ports the config gives"
        n = figs.add(given("assumed_local_ports", self.params["local_ports"], origin="assumed", host=host))
        return n, f"the local ports (the kernel default, {n.text()}, assumed)"

    def run(self, ctx: Context):
        out = []
        for b in bursts(ctx.events_of("port-exhaustion"), self.params["burst_gap_seconds"]):
            n = b.lines
            dsts: dict = {}
            writers: dict = {}
            for r in b.rows.itertuples(index=False):
                m = fields_of(self.id, str(r.message)) or {}
                d = (m.get("destination") or m.get("upstream_host") or m.get("backend")
                     or (f"{m['host']}:{m['port']}" if m.get("host") else None))
                if d:
                    dsts[d] = dsts.get(d, 0) + 1
                who = writer(r) or "a process"
                writers[who] = writers.get(who, 0) + 1
            metrics = {"lines": n, "destinations": len(dsts), "programs": len(writers)}
            figs = Figures()
            tw_text = ""
            if b.aligned:
                tw = ctx.series("net-sock", "tcp-tw", host=b.host) if b.host in ctx.hosts("net-sock") else \
                    (ctx.series("net-sock", "tcp-tw") if len(ctx.hosts("net-sock")) == 1 else None)
                if tw is not None and len(tw):
                    margin = pd.Timedelta(seconds=self.params["context_seconds"])
                    try:
                        w = tw[(tw.index >= b.start - margin) & (tw.index <= b.end + margin)]
                    except TypeError:  # naive vs aware clocks
                        w = tw.iloc[0:0]
                    if len(w):
                        host = b.host if b.host in ctx.hosts("net-sock") else ctx.hosts("net-sock")[0]
                        peak = figs.add(measure(ctx, "peak_tcp_tw", "max", host, ("net-sock", "tcp-tw", ""),
                                                w.index[0], w.index[-1], fmt=".0f"))
                        many, said = self._ports(ctx, b.host, figs)
                        share = figs.add(measure(ctx, "tcp_tw_over_local_ports", "ratio", b.host,
                                                 of=("peak_tcp_tw", many.name), known=figs.by_name(),
                                                 fmt=".0f", scale=100))
                        tw_text = (f"; TIME_WAIT sockets peaked at {peak.text()} at {fmt_time(peak.at)} "
                                   f"({share.text()} % of {said})")
            span = (b.end - b.start).total_seconds() if b.aligned else None
            over = f" over {span:.0f} s" if span else ""
            top = sorted(dsts.items(), key=lambda kv: -kv[1])[:3]
            to = f" to {', '.join(f'{d} ({c})' for d, c in top)}" if top else ""
            by = (f" by {', '.join(f'{w} ({c})' for w, c in sorted(writers.items(), key=lambda kv: -kv[1])[:3])}"
                  if set(writers) != {"a process"} else "")
            out.append(self.finding(
                title=f"{n:,} x no free local port for outgoing connections (99: Cannot assign requested address)"
                      f"{over}{to}{by}",
                severity=severity_for(n, [(1000, "critical"), (10, "high")], "medium"),
                start=b.start, end=b.end, host=b.host, aligned=b.aligned, metrics=metrics, figures=figs,
                evidence=evidence_from_events(ctx.clock, b.rows, 5),
                explanation=("Every local port of net.ipv4.ip_local_port_range was in use or held in TIME_WAIT "
                             "towards the same destination, so connect() failed with EADDRNOTAVAIL and the "
                             "requests failed (502 from nginx)" + tw_text + "."),
                refs={"destinations": sorted(dsts), "programs": sorted(writers)},
            ))
        return out
