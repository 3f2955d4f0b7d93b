"""Kernel socket-table detectors: TIME_WAIT overflow, orphans / socket
memory, SYN floods, conntrack table full."""
from __future__ import annotations

import re

from sarsleuth.detectors._events import bursts
from sarsleuth.detectors._series import severity_for
from sarsleuth.detectors.base import Detector
from sarsleuth.detectors.context import Context
from sarsleuth.detectors.evidence import evidence_from_events, limit_evidence


class _BurstCounter(Detector):
    """A detector that counts the lines of one event kind per burst."""

    event_kind = ""
    noun = ""
    severities: list = []
    #: the host limits (sysctl names) this message means were reached
    limit_names: tuple = ()

    defaults = {"burst_gap_seconds": 600.0}

    def describe(self, burst) -> tuple[str, dict]:
        """(title suffix, extra metrics) for a burst; subclasses refine."""
        return "", {}

    def run(self, ctx: Context):
        out = []
        for b in bursts(ctx.events_of(self.event_kind), self.params["burst_gap_seconds"]):
            n = b.lines
            extra_title, extra = self.describe(b)
            limits = [lim for lim in (ctx.limit(b.host, name) for name in self.limit_names) if lim is not None]
            if limits:
                # config values in backticks: quoted as written, never reformatted
                extra_title += " (" + ", ".join(f"`{lim.name} = {lim.value}`" for lim in limits) + ")"
                extra = {**extra, **{lim.name: lim.number() if lim.number() is not None else lim.value
                                     for lim in limits}}
            span = (b.end - b.start).total_seconds() if b.aligned else None
            over = f" over {span:.0f} s" if span else ""
            out.append(self.finding(
                title=f"{n} x {self.noun}{over}{extra_title}",
                severity=severity_for(n, self.severities, "medium"),
                start=b.start, end=b.end, host=b.host, aligned=b.aligned,
                metrics={"lines": n, **extra},
                evidence=evidence_from_events(ctx.clock, b.rows, 5) + [limit_evidence(lim) for lim in limits],
            ))
        return out


class TcpTwBucketOverflow(_BurstCounter):
    """Kernel ``TCP: time wait bucket table overflow``: the TIME_WAIT table
    (net.ipv4.tcp_max_tw_buckets) is full; the kernel then destroys
    TIME_WAIT sockets early."""

    id = "tcp-tw-bucket-overflow"
    summary = "kernel 'time wait bucket table overflow': net.ipv4.tcp_max_tw_buckets reached"
    inputs = ("events",)
    category = "socket-exhaustion"
    event_kind = "tcp-tw-bucket-overflow"
    noun = "'time wait bucket table overflow'"
    limit_names = ("net.ipv4.tcp_max_tw_buckets",)
    severities = [(10, "high")]


class SocketMemory(_BurstCounter):
    """``Out of socket memory`` / ``too many orphaned sockets``: orphans above
    net.ipv4.tcp_max_orphans or TCP memory above tcp_mem (seen in the field
    with orphans a few dozen above a tcp_max_orphans of 131072)."""

    id = "socket-memory"
    summary = "'Out of socket memory' / 'too many orphaned sockets': tcp_max_orphans or tcp_mem hit"
    inputs = ("events",)
    category = "socket-exhaustion"
    event_kind = "socket-memory"
    noun = "socket memory / orphan limit"
    limit_names = ("net.ipv4.tcp_max_orphans", "net.ipv4.tcp_mem")
    severities = [(5, "critical"), (1, "high")]

    def describe(self, burst):
        msgs = burst.rows["message"].astype(str)
        orphans = int(msgs.str.contains("orphan", case=False).sum())
        oom = int(msgs.str.contains("Out of socket memory").sum())
        parts = []
        if orphans:
            parts.append(f"{orphans} 'too many orphaned sockets'")
        if oom:
            parts.append(f"{oom} 'Out of socket memory'")
        return (f" ({', '.join(parts)})" if parts else ""), {"orphan_lines": orphans, "out_of_socket_memory_lines": oom}


_PORT_RE = re.compile(r"SYN flooding on port (?P<port>\d+)")


class SynFlood(_BurstCounter):
    """``Possible SYN flooding on port N``: the listen backlog overflowed."""

    id = "syn-flood"
    summary = "'Possible SYN flooding on port N': listen backlog overflow (attack or backlog too small)"
    inputs = ("events",)
    category = "socket-exhaustion"
    event_kind = "syn-flood"
    noun = "possible SYN flooding"
    limit_names = ("net.core.somaxconn", "net.ipv4.tcp_max_syn_backlog")
    severities = [(3, "high")]

    def describe(self, burst):
        ports = sorted({int(m["port"]) for m in (_PORT_RE.search(x) for x in burst.rows["message"].astype(str)) if m})
        return (f" on port {', '.join(map(str, ports))}" if ports else ""), {"ports": len(ports)}


class ConntrackFull(_BurstCounter):
    """``nf_conntrack: table full, dropping packet``."""

    id = "conntrack-full"
    summary = "'nf_conntrack: table full, dropping packet': net.netfilter.nf_conntrack_max reached"
    inputs = ("events",)
    category = "socket-exhaustion"
    event_kind = "conntrack-full"
    noun = "conntrack table full (packets dropped)"
    limit_names = ("net.netfilter.nf_conntrack_max",)
    severities = [(1, "high")]
