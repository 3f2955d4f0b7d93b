"""What a detector is, and the context it reads.

A detector is a small class with an ``id`` (the contract's detector id), the
inputs it needs, its thresholds as named parameters (overridable from a config
file), and a ``run(ctx)`` method returning a list of findings.  Detectors
never read files and never talk to each other: they see the normalized frames
through :class:`Context` only.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

from sarsleuth.knowledge import kb_entry
from sarsleuth.model import Evidence, Finding


@dataclass
class Context:
    """The normalized inputs of a case, as detectors see them."""

    metrics: Any                 # long metrics DataFrame (all sources, deduplicated)
    events: Any                  # events DataFrame (all log sources)
    reports: list                # load-test report dicts
    sources: list                # parsed Source objects (for meta: ncpu, ps tables...)
    params: dict = field(default_factory=dict)   # {detector_id: {param: value}}
    link_speed_bps: float | None = None
    _series_cache: dict = field(default_factory=dict)
    _paths: dict | None = None

    def hosts(self, section: str | None = None) -> list:
        m = self.metrics
        if m is None or not len(m):
            return []
        if section is not None:
            m = m[m["section"] == section]
        return sorted(m["host"].dropna().unique().tolist())

    def series(self, section: str, metric: str, device: str = "", host=None):
        """One metric as a time-indexed Series for one host and device
        (sorted, duplicates dropped), or None when absent."""
        key = (section, metric, device, host)
        if key in self._series_cache:
            return self._series_cache[key]
        m = self.metrics
        out = None
        if m is not None and len(m):
            sel = (m["section"] == section) & (m["metric"] == metric) & (m["device"] == device)
            if host is not None:
                sel &= m["host"] == host
            part = m.loc[sel, ["timestamp", "value"]]
            if len(part):
                out = part.drop_duplicates("timestamp").set_index("timestamp")["value"].sort_index()
        self._series_cache[key] = out
        return out

    def devices(self, section: str, metric: str, host=None) -> list:
        m = self.metrics
        if m is None or not len(m):
            return []
        sel = (m["section"] == section) & (m["metric"] == metric)
        if host is not None:
            sel &= m["host"] == host
        return sorted(m.loc[sel, "device"].unique().tolist())

    def path_for(self, section: str, host) -> str:
        """The file a host's sar section came from (for evidence), or the
        host's first metric source, or ''."""
        if self._paths is None:
            paths: dict = {}
            for s in self.sources:
                if s.metrics is None or not len(s.metrics):
                    continue
                # per-column uniques: no temporary copy of a big table
                hosts = [s.host] if s.host is not None else list(s.metrics["host"].dropna().unique())
                for h in hosts:
                    for sec in s.metrics["section"].unique():
                        paths.setdefault((h, str(sec)), s.path)
                    paths.setdefault((h, None), s.path)
            self._paths = paths
        return self._paths.get((host, section)) or self._paths.get((host, None), "")

    def ncpu(self, host) -> int | None:
        for s in self.sources:
            if s.host == host and s.meta.get("ncpu"):
                return int(s.meta["ncpu"])
        m = self.metrics
        if m is not None and len(m):
            cpus = m[(m["section"] == "cpu") & (m["host"] == host) & (m["device"] != "all")]["device"].unique()
            if len(cpus):
                return len(cpus)
        return None

    def events_of(self, *kinds: str):
        ev = self.events
        if ev is None or not len(ev):
            return ev
        return ev[ev["kind"].isin(kinds)]

    def sources_of(self, kind: str) -> list:
        return [s for s in self.sources if s.kind == kind]


class Detector(ABC):
    """Base class of every detector."""

    id: ClassVar[str] = ""
    #: One line for ``sarsleuth detectors``.
    summary: ClassVar[str] = ""
    #: Which frames it reads: "metrics", "events", "reports", "ps".
    inputs: ClassVar[tuple] = ()
    #: Incident category this detector's findings point to.
    category: ClassVar[str] = "other"
    #: Default thresholds; users override them per detector in a config file.
    defaults: ClassVar[dict] = {}

    def __init__(self, params: dict | None = None):
        self.params = dict(self.defaults)
        if params:
            unknown = set(params) - set(self.defaults)
            if unknown:
                raise ValueError(f"{self.id}: unknown parameter(s) {', '.join(sorted(unknown))}")
            self.params.update(params)

    @abstractmethod
    def run(self, ctx: Context) -> list[Finding]:
        """Look at the context and return findings (possibly none)."""

    def finding(self, *, title, severity, start, end, host=None, metrics=None, evidence=None,
                explanation="", aligned=True, sources=None, refs=None) -> Finding:
        """A Finding with this detector's id, category and knowledge-base
        recommendations filled in."""
        kb = kb_entry(self.id)
        return Finding(
            detector=self.id, title=title, severity=severity, start=start, end=end, host=host,
            metrics=metrics or {}, evidence=evidence or [], explanation=explanation or kb.get("explanation", ""),
            category=self.category, recommendations=list(kb.get("recommendations", [])),
            sources=sorted(set(sources or [e.path for e in (evidence or [])])), aligned=aligned,
            refs=refs or {},
        )


def metric_evidence(ctx: Context, section: str, host, ts, text: str) -> Evidence:
    """Evidence quoting a sar value: the file the section came from (sar
    rows have no line numbers worth citing) and a sentence with the numbers."""
    return Evidence(path=ctx.path_for(section, host), line=None, text=text)


def evidence_from_events(rows, limit: int = 8) -> list[Evidence]:
    """Evidence lines from event rows (first ``limit``), quoting the message."""
    out = []
    for r in rows.head(limit).itertuples(index=False):
        line = None if r.line is None or (hasattr(r.line, "__class__") and str(r.line) == "<NA>") else int(r.line)
        out.append(Evidence(path=str(r.file), line=line, text=_quote(r)))
    return out


def _quote(row) -> str:
    ts = getattr(row, "timestamp", None)
    msg = str(row.message)
    proc = getattr(row, "process", None)
    prefix = ""
    try:
        import pandas as pd
        if ts is not None and not pd.isna(ts):
            prefix = pd.Timestamp(ts).strftime("%Y-%m-%d %H:%M:%S") + " "
    except (TypeError, ValueError):
        prefix = ""
    if proc and isinstance(proc, str) and proc not in ("", "None") and not msg.startswith(proc):
        return f"{prefix}{proc}: {msg}"
    return f"{prefix}{msg}"
