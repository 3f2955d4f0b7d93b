"""Fleet incidents: the same kind of finding on many hosts at about the same
time is one event of the fleet (shared storage stalling, a bad deploy, a
network partition), the same finding on one host is that host's own.

Findings of one detector whose starts lie within the tolerance of the first
one become a cluster; clusters of different detectors over nearly the same
hosts at the same time are one incident (an iowait storm and the hung tasks
it causes).  Breadth ranks: the score is the worst severity's weight times
``1 + log2(hosts)``, so ten hosts at high severity outrank one host at
critical, and a critical on one host outranks a low seen on two.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from sarsleuth.analysis.correlate import cause_of, fleet_incident_id
from sarsleuth.analysis.ranking import SEVERITY_WEIGHT
from sarsleuth.knowledge import category_title
from sarsleuth.fleet.model import FleetIncident
from sarsleuth.model import SEVERITY_RANK
from sarsleuth.timebase.clock import on_fleet_clock

#: Starts of findings of one kind this close (seconds) are one fleet event:
#: ten minutes, sa1's usual interval, since a metric finding starts at the
#: sample that closes the interval in which the trouble began.
DEFAULT_TOLERANCE_SECONDS = 600.0
#: Clusters of different kinds merge when their host sets overlap this much
#: (Jaccard index) and their starts are within the tolerance.
MERGE_OVERLAP = 0.5


@dataclass
class _Cluster:
    kinds: list
    start: object
    end: object
    findings: list = field(default_factory=list)
    hosts: set = field(default_factory=set)
    wall_clock: bool = False


def fleet_incidents(host_results, tolerance_seconds: float = DEFAULT_TOLERANCE_SECONDS) -> list:
    """Ranked fleet incidents from every analysed host's findings."""
    tol = pd.Timedelta(seconds=float(tolerance_seconds))
    hosts = [h for h in host_results if h.ok and h.host]   # files naming no host are no host
    analysed = sorted(h.host for h in hosts)
    by_kind: dict = {}
    for h in hosts:
        for f in h.findings:
            start, wall = on_fleet_clock(f.start)
            if start is None:
                continue        # untimed: it stays in the host's own story
            end, _ = on_fleet_clock(f.end)
            by_kind.setdefault(f.detector, []).append((start, end if end is not None else start, wall, h.host, f))
    clusters = []
    for kind in sorted(by_kind):
        clusters.extend(_clusters_of(kind, sorted(by_kind[kind], key=lambda r: (r[0], r[3])), tol))
    merged = _merge(clusters, tol)
    incidents = [_incident(c, analysed) for c in merged]
    incidents.sort(key=lambda i: (-i.score, -len(i.hosts), -SEVERITY_RANK[i.severity], i.start, i.title))
    for rank, inc in enumerate(incidents, 1):
        inc.rank = rank
    return incidents


def _clusters_of(kind, rows, tol) -> list:
    out: list = []
    for start, end, wall, host, f in rows:
        c = out[-1] if out else None
        if c is None or start - c.start > tol:
            c = _Cluster([kind], start, end)
            out.append(c)
        c.end = max(c.end, end)
        c.findings.append(f)
        c.hosts.add(host)
        c.wall_clock |= wall
    return out


def _merge(clusters, tol) -> list:
    clusters = sorted(clusters, key=lambda c: (c.start, -len(c.hosts)))
    out: list = []
    for c in clusters:
        home = next((o for o in out if abs(c.start - o.start) <= tol and _overlap(o.hosts, c.hosts) >= MERGE_OVERLAP
                     and not set(c.kinds) & set(o.kinds)), None)
        if home is None:
            out.append(c)
            continue
        home.kinds += c.kinds
        home.findings += c.findings
        home.hosts |= c.hosts
        home.end = max(home.end, c.end)
        home.start = min(home.start, c.start)
        home.wall_clock |= c.wall_clock
    return out


def _overlap(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def _incident(c: _Cluster, analysed: list) -> FleetIncident:
    severity = max((f.severity for f in c.findings), key=SEVERITY_RANK.__getitem__)
    # named as a host's incident of the same findings is: by the causal chain
    # whose cause explains the most of them
    cause, chain = cause_of(c.findings)
    category = chain["category"] if chain else cause.category
    hosts = sorted(c.hosts)
    without = [h for h in analysed if h not in c.hosts]
    breadth_factor = 1.0 + math.log2(len(hosts))
    score = SEVERITY_WEIGHT[severity] * breadth_factor
    span = _span(c.start, c.end)
    kinds = " + ".join(c.kinds)
    clock = " (host wall clocks)" if c.wall_clock else " UTC"
    title = (f"{category_title(category)} ({kinds}) on {len(hosts)} of {len(analysed)} hosts, "
             f"{span}{clock}")
    findings = sorted(c.findings, key=lambda f: (f.host or "", str(f.start)))
    return FleetIncident(rank=0, id=fleet_incident_id(c.kinds, c.start, hosts), title=title, kinds=list(c.kinds), category=category,
                         severity=severity, score=score, start=c.start, end=c.end, hosts=hosts,
                         hosts_without=without, findings=findings, wall_clock=c.wall_clock,
                         score_components={"severity": SEVERITY_WEIGHT[severity], "breadth": breadth_factor,
                                           "share_of_hosts": len(hosts) / max(len(analysed), 1)})


def _span(start, end) -> str:
    if end is None or end == start:
        return start.strftime("%Y-%m-%d %H:%M")
    if start.date() == end.date():
        return f"{start:%Y-%m-%d %H:%M}-{end:%H:%M}"
    return f"{start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M}"
