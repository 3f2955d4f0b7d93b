"""What a detector is, and the context it reads.

A detector is a small class with an ``id`` (the contract's detector id), the
inputs it needs, its thresholds as named parameters (overridable from a config
file), and a ``run(ctx)`` method returning a list of findings.  Detectors
never read files and never talk to each other: they see the normalized frames
through :class:`Context` only.
"""
from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

from sarsleuth.knowledge import kb_entry
from sarsleuth.model import Evidence, Finding, quoted
from sarsleuth.timebase.clock import Clock, on_clock


@dataclass
class Context:
    """The normalized inputs of a case, as detectors see them.

    Metrics come as a :class:`~sarsleuth.metric_store.MetricStore` (a long
    DataFrame given instead is stored first): a series is read straight
    from its run, so it costs its own length, whatever the size of the
    case."""

    metrics: Any                 # MetricStore of all sources (deduplicated), or a long DataFrame
    events: Any                  # events DataFrame (all log sources)
    reports: list                # load-test report dicts
    sources: list                # parsed Source objects (for meta: ncpu, ps tables...)
    params: dict = field(default_factory=dict)   # {detector_id: {param: value}}
    link_speed_bps: float | None = None
    user_signatures: tuple = ()  # the case's own [[signature]] entries (config file)
    host_facts: list = field(default_factory=list)  # HostFacts read from bundles (sarsleuth.bundles.facts)
    #: the case's clock: a host's series are indexed on the clock its story
    #: is told on, so the times detectors write into titles and evidence
    #: are the host's wall clock (same instants)
    clock: Clock = field(default_factory=Clock)
    _series_cache: dict = field(default_factory=dict)
    _sections: dict = field(default_factory=dict)
    _paths: dict | None = None
    _kinds: frozenset | None = None

    def __post_init__(self):
        from sarsleuth.metric_store import MetricStore, from_long
        if not isinstance(self.metrics, MetricStore):
            self.metrics = from_long(self.metrics)

    # ---------------------------------------------------------------- inputs
    def available(self, name: str) -> bool:
        """Is an input a detector declares present?  ``metrics``,
        ``metrics:<section>``, ``events``, ``events:<kind>``, ``reports``, ``ps``,
        ``facts`` (a support bundle's host facts)."""
        what, _, detail = name.partition(":")
        if what == "metrics":
            return bool(self.metrics) and (not detail or self._section(detail) is not None)
        if what == "events":
            ev = self.events
            if ev is None or not len(ev):
                return False
            if not detail:
                return True
            if self._kinds is None:
                self._kinds = frozenset(ev["kind"].astype(str).unique())
            return detail in self._kinds
        if what == "reports":
            return bool(self.reports)
        if what == "ps":
            return bool(self.sources_of("ps"))
        if what == "facts":
            return bool(self.host_facts)
        raise ValueError(f"unknown detector input {name!r}")

    # --------------------------------------------------------------- metrics
    def _section(self, section: str):
        """``{(metric, device, host): series key}`` of one section, built
        once; None when the section is absent."""
        if section not in self._sections:
            self._sections[section] = self.metrics.section_index(section) or None
        return self._sections[section]

    def hosts(self, section: str | None = None) -> list:
        if section is None:
            return sorted(str(h) for h in self.metrics.hosts())
        index = self._section(section) or {}
        return sorted({k[2] for k in index if k[2] is not None})

    def series(self, section: str, metric: str, device: str = "", host=None):
        """One metric as a time-indexed Series for one host and device
        (sorted, duplicates dropped), or None when absent."""
        key = (section, metric, device, host)
        if key in self._series_cache:
            return self._series_cache[key]
        out = None
        if host is not None:
            found = (self._section(section) or {}).get((metric, device, host))
            out = self.metrics.series(found) if found is not None else None
            if out is not None and len(out):
                out.index = self.clock.on_host_clock(out.index, host)
            else:
                out = None
        elif self._section(section):
            out = self.metrics.grouped(section, lambda key: 0, metric=metric, device=device).get(0)
        self._series_cache[key] = out
        return out

    def devices(self, section: str, metric: str, host=None) -> list:
        index = self._section(section) or {}
        return sorted({dev for (mt, dev, h) in index if mt == metric and (host is None or h == host)})

    def sample_times(self, host):
        """Sorted distinct times at which the host's sar recorded anything."""
        key = ("__times__", host)
        if key not in self._series_cache:
            self._series_cache[key] = self.metrics.sample_times(host)
        return self._series_cache[key]

    def path_for(self, section: str, host) -> str:
        """The file a host's sar section came from (for evidence), or the
        host's first metric source, or ''."""
        if self._paths is None:
            paths: dict = {}
            for s in self.sources:
                if not s.store:
                    continue
                hosts = [s.host] if s.host is not None else s.store.hosts()
                for h in hosts:
                    for sec in s.store.sections():
                        paths.setdefault((h, str(sec)), s.path)
                    paths.setdefault((h, None), s.path)
            self._paths = paths
        return self._paths.get((host, section)) or self._paths.get((host, None), "")

    def source_with(self, section: str, host) -> str:
        """The path of the first source of ``host`` holding ``section``, or ''
        (unlike :meth:`path_for`, no other source of the host instead)."""
        self.path_for(section, host)            # builds the table of paths once
        return self._paths.get((host, section), "")

    def row_line(self, section: str, host, ts, *, device: str | None = None,
                 metric: str | None = None):
        """``(path, line, text)`` of the file line a sar row at ``ts`` was
        read from (the given device, else the all-CPU/device-less row, else
        the first device), or None when the value did not come from a text
        file (a binary sa file) or the line cannot be read again."""
        store = self.metrics
        if not store.has_lines():
            return None
        index = self._section(section) or {}
        keys = [k for k in index
                if (host is None or k[2] == host) and (device is None or k[1] == device)
                and (metric is None or k[0] == metric)]
        if not keys:
            return None
        keys.sort(key=lambda k: (k[1] not in ("all", ""), k[1], k[0]))
        import numpy as np
        import pandas as pd
        try:
            when = pd.Timestamp(ts)
        except (TypeError, ValueError):
            return None
        for key in keys[:8]:
            run = store.runs[index[key]]
            if run.lines is None:
                continue
            if (when.tzinfo is None) != (run.tz is None):
                return None          # naive and aware times never name the same row
            stamp = (when.tz_convert("UTC").tz_localize(None) if when.tzinfo is not None else when).as_unit("ns").value
            for p in np.flatnonzero(run.stamps == stamp)[:1]:
                line = int(run.lines[p])
                if line < 0:
                    continue
                found = self._quote_line(key[2], line, float(run.values[p]))
                if found is not None:
                    return found
        return None

    def _quote_line(self, host, line: int, value: float):
        """The line of a text source of ``host`` that holds ``value`` (the
        line column does not say which file a row came from when several
        files cover the host, so the line is checked against the value)."""
        for s in self.sources:
            index = s.meta.get("line_index")
            if index is None or (host is not None and s.host != host and host not in s.meta.get("hosts", ())):
                continue
            key = ("__line__", s.path, line)
            if key not in self._series_cache:
                self._series_cache[key] = index.read_line(line)
            text = self._series_cache[key]
            if text is not None and _holds(text, value):
                return s.path, line, quoted(text)
        return None
    def facts(self, host):
        """The HostFacts of ``host`` (any name it goes by), or None."""
        for h in self.host_facts:
            if host is not None and host in h.names():
                return h
        if host is None and len(self.host_facts) == 1:
            return self.host_facts[0]
        return None

    def limit(self, host, name: str):
        """A limit of the host as its bundle recorded it: a sysctl
        (``net.ipv4.tcp_max_tw_buckets``) or an nginx directive
        (``proxy_buffers``), as a :class:`~sarsleuth.bundles.facts.Limit`
        (value, path, line, the line verbatim), or None when unknown."""
        facts = self.facts(host)
        return facts.limit(name) if facts is not None else None

    def process_limit(self, host, program: str, row: str = "Max open files"):
        """The limit ``program`` ran with on ``host`` for a row of
        /proc/PID/limits, as its bundle recorded it (its /proc/PID/limits,
        nginx's ``worker_rlimit_nofile``, its systemd unit's
        ``LimitNOFILE``...), or None."""
        facts = self.facts(host)
        return facts.process_limit(program, row) if facts is not None else None

    def ncpu(self, host) -> int | None:
        for s in self.sources:
            if s.host == host and s.meta.get("ncpu"):
                return int(s.meta["ncpu"])
        facts = self.facts(host)
        if facts is not None and facts.ncpu:
            return int(facts.ncpu)
        cpus = [d for d in self.devices("cpu", "%idle", host) if d not in ("all", "")]
        return len(cpus) or None

    # ---------------------------------------------------------------- events
    def events_of(self, *kinds: str):
        ev = self.events
        if ev is None or not len(ev):
            return ev
        return ev[ev["kind"].isin(kinds)]

    def sources_of(self, kind: str) -> list:
        return [s for s in self.sources if s.kind == kind]


def _holds(text: str, value: float) -> bool:
    """Does a printed row hold ``value`` among its fields (as sar/sadf print
    it: two decimals, comma decimals, ``;`` separated)?"""
    if value != value:
        return False
    return (_among(text.replace(";", " ").split(), value)
            # sadf -j and -x lines: "iowait": 0.12,  iowait="0.12"  <memfree>1437740</memfree>
            or _among((t.strip(",:") for t in _MARKUP_RE.split(text)), value))


_MARKUP_RE = re.compile(r'[\s;"=<>{}\[\]]+')


def _among(tokens, value: float) -> bool:
    for token in tokens:
        try:
            printed = float(token.replace(",", "."))
        except ValueError:
            continue
        if abs(printed - value) <= max(0.0051, abs(value) * 1e-9):
            return True
    return False


class Detector(ABC):
    """Base class of every detector."""

    id: ClassVar[str] = ""
    #: One line for ``sarsleuth detectors``.
    summary: ClassVar[str] = ""
    #: What it reads (see :meth:`Context.available`): "metrics",
    #: "metrics:<section>", "events", "events:<kind>", "reports", "ps".  A
    #: detector none of whose inputs the case has is not run.
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
            category=self.category, recommendations=[r["text"] for r in kb.get("recommendation", [])],
            sources=sorted(set(sources or [e.path for e in (evidence or [])])), aligned=aligned,
            refs=refs or {},
        )


def metric_evidence(ctx: Context, section: str, host, ts, text: str, *, device: str | None = None,
                    metric: str | None = None) -> Evidence:
    """Evidence for a sar value at ``ts``: the row of the file it was read
    from, ``path:line`` and the line verbatim (sar text, sadf -d); for a
    binary sa file, which has no lines, the file and ``text``, a sentence
    with the numbers."""
    found = ctx.row_line(section, host, ts, device=device, metric=metric)
    if found is not None:
        return Evidence(path=found[0], line=found[1], text=found[2])
    return Evidence(path=ctx.path_for(section, host), line=None, text=text)


def limit_evidence(limit) -> Evidence:
    """Evidence quoting the configuration line a limit was read from."""
    return Evidence(path=limit.path, line=limit.line, text=limit.text)


def evidence_from_events(clock, rows, limit: int = 8) -> list[Evidence]:
    """Evidence lines from event rows (first ``limit``): the file's line
    quoted verbatim (see ``_events.quote_event``), else the message, after
    its time on its host's clock (``clock``: the case's
    :class:`~sarsleuth.timebase.clock.Clock`)."""
    from sarsleuth.detectors._events import quote_event
    out = []
    for r in rows.head(limit).itertuples(index=False):
        line = None if r.line is None or (hasattr(r.line, "__class__") and str(r.line) == "<NA>") else int(r.line)
        verbatim = quote_event(r) if line is not None else None
        if verbatim is not None:
            out.append(Evidence(path=str(r.file), line=verbatim[0], text=verbatim[1]))
        else:
            out.append(Evidence(path=str(r.file), line=line, text=_quote(r, clock)))
    return out


def _quote(row, clock) -> str:
    ts = getattr(row, "timestamp", None)
    msg = str(row.message)
    proc = getattr(row, "process", None)
    prefix = ""
    try:
        import pandas as pd
        if ts is not None and not pd.isna(ts):
            host = getattr(row, "host", None)
            zone = clock.story_zone([host]) if host is not None and host == host else None
            prefix = pd.Timestamp(on_clock(ts, zone)).strftime("%Y-%m-%d %H:%M:%S") + " "
    except (TypeError, ValueError):
        prefix = ""
    if proc and isinstance(proc, str) and proc not in ("", "None") and not msg.startswith(proc):
        return f"{prefix}{proc}: {msg}"
    return f"{prefix}{msg}"
