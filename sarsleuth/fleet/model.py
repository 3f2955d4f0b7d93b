"""What a fleet analysis holds: per-host results as the workers send them
back (findings, incidents and compact summaries, never metric tables) and
the fleet incidents correlated across hosts."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from sarsleuth.inputs.bundles.facts import Limit
from sarsleuth.detectors import registry
from sarsleuth.model import SEVERITY_RANK, iso
from sarsleuth.render.fleet_html import fleet_fragment
from sarsleuth.version import __version__


@dataclass
class HostResult:
    """One host's analysis, as small as a worker can send it."""

    host: str
    files: list
    ok: bool = True
    error: str = ""                  # why the host could not be analysed (ok False)
    facts: dict = field(default_factory=dict)    # kernel, ncpu, zone, span, counts
    host_facts: dict | None = None   # the host's bundle facts (HostFacts.to_dict(): limits with file:line)
    sources: list = field(default_factory=list)  # dicts: path, kind, start, end, records, warnings
    skipped: list = field(default_factory=list)  # (path, reason)
    findings: list = field(default_factory=list)  # list[Finding]
    incidents: list = field(default_factory=list)  # list[Incident]
    summary: Any = None              # DataFrame: per (section, device, metric) count, mean, max, time of max
    warnings: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    seconds: float = 0.0             # wall time of the host's pipeline on its worker
    #: {"host": [...], "user": [...]}: the names its files give as such (what --redact learns first)
    names: dict = field(default_factory=dict)

    def limit(self, name: str):
        """A limit of the host's bundle as :class:`~sarsleuth.inputs.bundles.facts.Limit`
        (a sysctl name, or an nginx directive: its last value), else None."""
        b = self.host_facts or {}
        found = b.get("limits", {}).get(name) or (b.get("nginx", {}).get(name) or [None])[-1]
        if found is None:
            return None
        return Limit(name, found["value"], found["path"], found.get("line"), found.get("text", ""), found.get("conf"))

    def to_dict(self) -> dict:
        """The JSON ``hosts`` entry: the host facts of the single-case
        document (what its bundle says, limits with file and line; empty
        for a host known from loose files only) plus the fleet's view."""
        out = {"bundle": None, "hostname": None, "kernel": self.facts.get("kernel"),
               "ncpu": self.facts.get("ncpu"), "mem_total_kb": None, "timezone": None, "timezone_from": None,
               "collected": None, "limits": {}, "nginx": {}, "processes": {}, "meminfo": {}}
        out.update(self.host_facts or {})
        out.update({"host": self.host, "ok": self.ok, "error": self.error or None, "facts": self.facts,
                    "worst_severity": self.worst, "files": list(self.files),
                    "incidents": [i.to_dict() for i in self.incidents], "notes": list(self.notes)})
        return out

    @property
    def worst(self) -> str | None:
        if not self.findings:
            return None
        return max((f.severity for f in self.findings), key=SEVERITY_RANK.__getitem__)


@dataclass
class FleetIncident:
    """Findings of one kind (or kinds seen together) on several hosts within
    the fleet tolerance."""

    rank: int
    id: str
    title: str
    kinds: list                      # detector ids
    category: str
    severity: str
    score: float
    start: Any                       # UTC when every host's clock is known
    end: Any
    hosts: list                      # hosts that saw it
    hosts_without: list              # analysed hosts that did not
    findings: list                   # list[Finding], across hosts
    score_components: dict = field(default_factory=dict)
    wall_clock: bool = False         # some host's times are its wall clock, zone unknown
    #: [{host, entries, score, largest}]: the hosts that departed from their own
    #: baseline in its window, most first (whether they saw it or not)
    departed: list = field(default_factory=list)

    @property
    def breadth(self) -> str:
        return f"{len(self.hosts)} of {len(self.hosts) + len(self.hosts_without)} hosts"

    def to_dict(self) -> dict:
        return {
            "rank": self.rank, "id": self.id, "title": self.title, "kinds": list(self.kinds),
            "category": self.category, "severity": self.severity, "score": round(float(self.score), 4),
            "score_components": {k: round(float(v), 4) for k, v in self.score_components.items()},
            "start": iso(self.start), "end": iso(self.end), "breadth": self.breadth,
            "hosts": list(self.hosts), "hosts_without": list(self.hosts_without),
            "wall_clock": self.wall_clock,
            "hosts_departed": [{"host": d["host"], "entries": int(d["entries"]), "score": round(float(d["score"]), 4),
                                "largest": d["largest"]} for d in self.departed],
            "findings": [f.to_dict() for f in self.findings],
        }


@dataclass
class Fleet:
    """Every host of a fleet, analysed; fleet incidents first."""

    hosts: list                      # list[HostResult], by host name
    incidents: list = field(default_factory=list)   # list[FleetIncident], ranked
    unplaced: list = field(default_factory=list)    # (path, reason): files given to no host
    warnings: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    tolerance_seconds: float = 600.0
    workers: int = 0
    scheduler: str = ""
    redactor: object = field(default=None, repr=False, compare=False)   # its stand-ins, when redacted

    @property
    def analysed(self) -> list:
        return [h for h in self.hosts if h.ok]

    @property
    def named(self) -> list:
        """The hosts proper (not the group of files naming no host)."""
        return [h for h in self.hosts if h.host]

    def host(self, name: str) -> HostResult:
        for h in self.hosts:
            if h.host == name:
                return h
        raise KeyError(f"no host {name!r} in this fleet")

    @property
    def findings(self) -> list:
        return [f for h in self.hosts for f in h.findings]

    def headline(self) -> str:
        n = len(self.named)
        failed = n - len([h for h in self.named if h.ok])
        tail = f" ({failed} could not be read)" if failed else ""
        if not self.incidents:
            own = [i for h in self.hosts for i in h.incidents]
            if not own:
                return f"{n} host(s){tail}: no incident found."
            worst = max(own, key=lambda i: (SEVERITY_RANK[i.severity], i.score))
            return (f"{n} host(s){tail}: no incident across hosts; {len(own)} on one host each, the worst: "
                    f"{worst.title} ({worst.severity}).")
        top = self.incidents[0]
        return f"{n} host(s){tail}, {len(self.incidents)} fleet incident(s); first: {top.title} ({top.severity})."

    def to_json(self) -> dict:
        """The contract's analysis document (every host's sources, incidents
        and findings; incidents ranked across hosts) plus the fleet:
        ``fleet_incidents`` with the hosts that saw each and those that did
        not, and ``hosts`` with each host's own story."""
        incidents = sorted((i for h in self.hosts for i in h.incidents),
                           key=lambda i: (-i.score, -SEVERITY_RANK[i.severity], str(iso(i.start))))
        ranked = [dict(i.to_dict(), rank=n) for n, i in enumerate(incidents, 1)]
        findings = sorted(self.findings, key=lambda f: (iso(f.start) or "~", f.host or "", f.detector))
        skipped = [{"path": p, "reason": r} for p, r in self.unplaced]
        skipped += [{"path": p, "reason": r} for h in self.hosts for p, r in h.skipped]
        zones = {h.facts.get("zone") for h in self.analysed}
        return {
            "sarsleuth_version": __version__,
            "timezone": next(iter(zones)) if len(zones) == 1 else None,
            "sources": [dict(s) for h in self.hosts for s in h.sources],
            "skipped": skipped,
            "summary": self.headline(),
            "incidents": ranked,
            "findings": [f.to_dict() for f in findings],
            "warnings": list(self.warnings) + [f"{h.host}: {w}" for h in self.hosts for w in h.warnings],
            "notes": list(self.notes),
            "checked": list(registry()),
            "tolerance_seconds": self.tolerance_seconds,
            "fleet_incidents": [i.to_dict() for i in self.incidents],
            "hosts": [h.to_dict() for h in self.hosts],
        }

    def _repr_html_(self) -> str:
        return fleet_fragment(self)

    def __repr__(self) -> str:
        return f"<Fleet {len(self.hosts)} hosts, {len(self.incidents)} fleet incidents>"


def metric_summary(store):
    """Per (section, device, metric): samples, mean, max and when the max
    was reached: a few hundred rows however long the host recorded.  Read
    from a :class:`~sarsleuth.metric_store.MetricStore`, series by series."""
    cols = ["section", "device", "metric", "samples", "mean", "max", "max_at"]
    keys: dict = {}
    for key in (store.runs if store else ()):
        keys.setdefault((key[1] or "", key[2] or "", key[3] or ""), []).append(key)
    out = []
    # one label's series at a time: a day of one-second samples is never held as series all at once
    for (section, device, metric), of_label in sorted(keys.items()):
        parts = [s for s in (store.series(k) for k in of_label) if s is not None and len(s)]
        if not parts:
            continue
        values = pd.concat(parts) if len(parts) > 1 else parts[0]
        at = values.idxmax()
        out.append({"section": section, "device": device, "metric": metric, "samples": int(len(values)),
                    "mean": float(values.mean()), "max": float(values.max()), "max_at": at})
    if not out:
        return pd.DataFrame(columns=cols)
    return pd.DataFrame(out, columns=cols)
