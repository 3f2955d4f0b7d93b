"""A case: every input of one post-mortem, parsed, aligned, analysed.

This is the Python API the notebooks use and the object every output is
rendered from.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sarsleuth import __version__
from sarsleuth.errors import InputError, UsageError
from sarsleuth.model import Finding, empty_events, empty_metrics, iso

#: Kinds read first: their dates help place syslog lines that carry no year.
_DATED_FIRST = ("sa", "sar-text", "sadf-csv", "sadf-json", "sadf-xml", "nginx-error", "journal", "tsar")


@dataclass
class Skipped:
    path: str
    reason: str


@dataclass
class Case:
    sources: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    metrics: object = None
    events: object = None
    reports: list = field(default_factory=list)
    findings: list = field(default_factory=list)
    incidents: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    tz: str | None = None
    checked: list = field(default_factory=list)

    # ------------------------------------------------------------------ load
    @classmethod
    def load(cls, *paths, tz=None, year=None, window=None, link_speed=None, config=None,
             progress=False, date_order=None, min_severity=None) -> "Case":
        from sarsleuth.config import load_config
        from sarsleuth.parsers import ParseOptions, parse, sniff
        from sarsleuth.textio import walk_inputs

        if len(paths) == 1 and isinstance(paths[0], (list, tuple)):
            paths = tuple(paths[0])
        if tz is not None:
            _check_tz(tz)
        cfg = load_config(config)
        options = ParseOptions(tz=tz, year=year, window=_parse_window(window, tz),
                               link_speed_bps=_parse_link_speed(link_speed) or cfg.link_speed_bps,
                               date_order=date_order)
        case = cls(tz=tz)
        files = []
        for p in paths:
            if not Path(p).exists():
                case.skipped.append(Skipped(str(p), "no such file or directory"))
                continue
            files.extend(walk_inputs([p]))
        kinds = []
        for f in files:
            kind, reason = sniff(f)
            if kind is None:
                case.skipped.append(Skipped(str(f), reason))
            else:
                kinds.append((f, kind))
        kinds.sort(key=lambda fk: 0 if fk[1] in _DATED_FIRST else 1)
        bar = _progress(progress, len(kinds))
        for f, kind in kinds:
            if options.year_hint is None:
                options.year_hint = case._date_hint()
            try:
                src = parse(f, kind, options)
            except InputError as exc:
                case.skipped.append(Skipped(str(f), exc.one_line()))
                continue
            finally:
                bar(str(f))
            case.sources.append(src)
            case.warnings.extend(src.warnings)
        case._align(options)
        case._combine()
        case._analyse(cfg, options, min_severity)
        return case

    def _date_hint(self):
        for s in self.sources:
            start, _ = s.span()
            if start is not None:
                return start
        return None

    def _align(self, options):
        try:
            from sarsleuth.timebase.align import align_sources
        except ImportError:  # clock alignment lives beside the log parsers
            return
        self.notes.extend(align_sources(self.sources, options))

    # --------------------------------------------------------------- combine
    def _combine(self):
        import pandas as pd
        zone = self._case_zone()
        metrics = [s.metrics for s in self.sources if s.metrics is not None and len(s.metrics)]
        events = [s.events for s in self.sources if s.events is not None and len(s.events)]
        if len(metrics) == 1:
            # one source: its rows are already in time order within each
            # series; sorting or deduplicating millions of rows buys nothing
            self.metrics = _on_clock(metrics[0], zone).reset_index(drop=True)
        elif metrics:
            m = pd.concat([_on_clock(x, zone) for x in metrics], ignore_index=True)
            if _hosts_overlap(metrics):
                before = len(m)
                # the same sample from two renderings (sa06 and sar06.txt) counts once
                m = m.drop_duplicates(["timestamp", "host", "section", "device", "metric"], keep="first")
                if len(m) < before:
                    self.notes.append(f"{before - len(m)} metric values appeared in more than one source "
                                      "and were counted once")
            self.metrics = m.sort_values("timestamp", kind="stable").reset_index(drop=True)
        else:
            self.metrics = empty_metrics()
        if events:
            e = pd.concat([_on_clock(x, zone) for x in events], ignore_index=True)
            self.events = e.sort_values(["timestamp", "file", "line"], kind="stable", na_position="last").reset_index(drop=True)
        else:
            self.events = empty_events()
        for s in self.sources:
            for r in s.reports:
                r.setdefault("path", s.path)
                for key in ("start", "end"):
                    if r.get(key) is not None:
                        r[key] = _ts_on_clock(r[key], zone)
                self.reports.append(r)
        self.tz = zone

    def _case_zone(self):
        """The zone all times are shown in: --tz, else the one offset the
        sources agree on (e.g. sa files record it), else wall clock."""
        if self.tz:
            return self.tz
        zones = set()
        for s in self.sources:
            for frame in (s.metrics, s.events):
                if frame is not None and len(frame):
                    tzinfo = getattr(frame["timestamp"].dt, "tz", None)
                    if tzinfo is not None:
                        zones.add(str(tzinfo))
        # sadf and journal JSON stamp UTC: an absolute clock, not the host's
        # zone; a local offset recorded elsewhere (sa records, RFC 3339
        # logs) says more about the host
        local = {z for z in zones if z not in ("UTC", "UTC+00:00", "tzutc()")}
        if len(local) == 1 or len(zones) == 1:
            zone = (local or zones).pop()
            self.notes.append(f"times without a zone are taken to be in {zone}, the zone recorded by the other sources")
            return zone
        if len(zones) > 1:
            self.notes.append("sources disagree on the time zone (" + ", ".join(sorted(zones))
                              + "); times are shown as UTC")
            return "UTC"
        self.notes.append("no source carries a time zone: times are the host's wall clock (use --tz to set it)")
        return None

    # --------------------------------------------------------------- analyse
    def _analyse(self, cfg, options, min_severity):
        from sarsleuth.correlate import correlate
        from sarsleuth.detectors import Context, registry, run_all
        ctx = Context(metrics=self.metrics, events=self.events, reports=self.reports, sources=self.sources,
                      params=cfg.params, link_speed_bps=options.link_speed_bps)
        findings, warns = run_all(ctx)
        self.warnings.extend(warns)
        if options.window is not None:
            findings = [f for f in findings if _in_window(f, options.window)]
        if min_severity:
            from sarsleuth.model import SEVERITY_RANK
            findings = [f for f in findings if SEVERITY_RANK[f.severity] >= SEVERITY_RANK[min_severity]]
        self.findings = findings
        self.incidents = correlate(list(findings))
        self.checked = list(registry())

    # ------------------------------------------------------------------- API
    def sar(self, section: str, host=None, device=None):
        """Wide frame of one sar section: tz-aware DatetimeIndex when the zone
        is known, one column per metric (device "all"/"" by default; pass
        ``device=None`` to get a (device, metric) column MultiIndex when the
        section has devices)."""
        m = self.metrics
        part = m[m["section"] == section]
        if host is not None:
            part = part[part["host"] == host]
        if not len(part):
            raise KeyError(f"no sar section {section!r} in this case "
                           f"(have: {', '.join(sorted(m['section'].unique())) or 'none'})")
        devices = part["device"].unique()
        if device is None and len(devices) == 1:
            device = devices[0]
        if device is None and "all" in devices:
            device = "all"
        if device is not None:
            part = part[part["device"] == device]
            wide = part.pivot_table(index="timestamp", columns="metric", values="value", aggfunc="first", observed=True)
        else:
            wide = part.pivot_table(index="timestamp", columns=["device", "metric"], values="value", aggfunc="first", observed=True)
        wide.columns.name = None
        return wide.sort_index()

    def to_json(self) -> dict:
        sources = []
        for s in self.sources:
            start, end = s.span()
            sources.append({"path": s.path, "kind": s.kind, "host": s.host, "start": iso(start), "end": iso(end),
                            "records": int(s.records), "warnings": list(s.warnings)})
        return {
            "sarsleuth_version": __version__,
            "timezone": str(self.tz) if self.tz else None,
            "sources": sources,
            "skipped": [{"path": k.path, "reason": k.reason} for k in self.skipped],
            "summary": self.headline(),
            "incidents": [i.to_dict() for i in self.incidents],
            "findings": [f.to_dict() for f in sorted(self.findings, key=lambda f: (iso(f.start) or "~", f.detector))],
            "warnings": list(self.warnings),
            "notes": list(self.notes),
            "checked": list(self.checked),
        }

    def headline(self) -> str:
        """One line on the whole case: the top incident, or that no incident
        was found and what was checked."""
        from sarsleuth.narrative import quiet_summary
        if not self.incidents:
            return quiet_summary(self)
        top = self.incidents[0]
        return f"{len(self.incidents)} incident(s); most important: {top.title} ({top.severity})."

    def report(self, path, plots: bool = True) -> str:
        from sarsleuth.render.html import write_html
        return write_html(self, path, plots=plots)

    def plot(self, section: str, metric: str, host=None, device=None, ax=None, events: bool = True):
        from sarsleuth.plots import plot_metric
        return plot_metric(self, section, metric, host=host, device=device, ax=ax, events=events)

    def _repr_html_(self) -> str:
        from sarsleuth.render.html import case_fragment
        return case_fragment(self)

    def __repr__(self) -> str:
        return (f"<Case {len(self.sources)} sources, {len(self.metrics)} metric values, {len(self.events)} events, "
                f"{len(self.findings)} findings, {len(self.incidents)} incidents>")


def _hosts_overlap(frames) -> bool:
    """Do two metric frames describe the same host (so may repeat samples)?"""
    seen: set = set()
    for f in frames:
        hosts = set(f["host"].astype(object).dropna().unique()) or {None}
        if hosts & seen:
            return True
        seen |= hosts
    return False


def _on_clock(frame, zone):
    current = getattr(frame["timestamp"].dt, "tz", None)
    if (zone is None and current is None) or (current is not None and zone is not None and str(current) == str(zone)):
        return frame   # already on the case's clock: no copy of a big table
    frame = frame.copy()
    frame["timestamp"] = _series_on_clock(frame["timestamp"], zone)
    return frame


def _series_on_clock(ts, zone):
    import pandas as pd
    ts = pd.to_datetime(ts)
    aware = getattr(ts.dt, "tz", None) is not None
    if zone is None:
        return ts.dt.tz_localize(None) if aware else ts
    if aware:
        return ts.dt.tz_convert(zone)
    return ts.dt.tz_localize(zone, nonexistent="shift_forward", ambiguous=False)


def _ts_on_clock(ts, zone):
    import pandas as pd
    ts = pd.Timestamp(ts)
    if zone is None:
        return ts.tz_localize(None) if ts.tzinfo else ts
    return ts.tz_convert(zone) if ts.tzinfo else ts.tz_localize(zone, nonexistent="shift_forward", ambiguous=False)


def _in_window(f: Finding, window) -> bool:
    import pandas as pd
    if f.start is None or pd.isna(f.start):
        return True
    start, end = window
    try:
        return not (f.end is not None and not pd.isna(f.end) and f.end < start) and not (f.start > end)
    except TypeError:
        return True


def _check_tz(tz: str):
    try:
        from zoneinfo import ZoneInfo
        ZoneInfo(tz)
    except Exception:
        raise UsageError(f"--tz {tz!r}: not a known IANA time zone (e.g. Asia/Shanghai, Europe/Paris, UTC)") from None


def _parse_window(window, tz):
    """``START..END`` (ISO 8601 or anything pandas reads) into Timestamps."""
    if window is None or isinstance(window, tuple):
        return window
    import pandas as pd
    if ".." not in window:
        raise UsageError(f"--window {window!r}: expected START..END, e.g. 2014-05-06T15:00..2014-05-06T15:10")
    a, b = window.split("..", 1)
    try:
        start, end = pd.Timestamp(a), pd.Timestamp(b)
    except ValueError as exc:
        raise UsageError(f"--window {window!r}: {exc}") from None
    if tz:
        start = start.tz_localize(tz) if start.tzinfo is None else start
        end = end.tz_localize(tz) if end.tzinfo is None else end
    if end < start:
        raise UsageError(f"--window {window!r}: end is before start")
    return (start, end)


def _parse_link_speed(value):
    """``20G``, ``10Gbit``, ``1000M`` or a number of bits/s."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    import re
    m = re.fullmatch(r"\s*([\d.]+)\s*([kKmMgGtT]?)(?:bit|b|bps|bit/s)?\s*", str(value))
    if not m:
        raise UsageError(f"--link-speed {value!r}: expected e.g. 10G, 20Gbit, 1000M")
    mult = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}[m.group(2).lower()]
    return float(m.group(1)) * mult


def _progress(enabled: bool, total: int):
    """A callback advancing a rich progress bar on stderr (no-op when off)."""
    if not enabled or total < 2:
        return lambda _name: None
    import sys
    if not sys.stderr.isatty():
        return lambda _name: None
    from rich.progress import Progress
    prog = Progress(transient=True)
    task = prog.add_task("reading", total=total)
    prog.start()
    done = [0]

    def advance(name):
        done[0] += 1
        prog.update(task, advance=1, description=f"reading {Path(name).name}")
        if done[0] >= total:
            prog.stop()
    return advance
