"""The normalized data model every layer shares.

Parsers turn files into :class:`Source` objects carrying two long tables
(metrics and events) and, for load-test reports, a list of report dicts.
Detectors read those tables and return :class:`Finding` objects; the
correlator groups findings into :class:`Incident` objects.  Start-up
(``--help``, ``sniff``) never loads it.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import re
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

import pandas as pd

from sarsleuth.metric_store import empty_long, from_long
from sarsleuth.safe_text import cut_words

#: Columns of the long metrics table (``parse --format csv`` on metric sources).
METRIC_COLUMNS = ["timestamp", "host", "section", "device", "metric", "value"]

#: Columns of the events table (``parse --format csv`` on event sources).
#: ``source`` is the kind of file the event came from (``syslog``, ``dmesg``,
#: ``nginx-error``...); ``kind`` is the signature id that classified the line
#: (``page-allocation-failure``, ``worker-signal-exit``...) or ``log``;
#: ``repeats`` the identical lines printed in a run, each at most a second
#: after the one before, that the row stands for (1: printed once).
EVENT_COLUMNS = ["timestamp", "host", "source", "kind", "pid", "process", "message", "file", "line", "repeats"]

#: Extra event columns kept in memory (not in the CSV contract):
#: ``level`` (syslog/nginx level), ``detail`` (continuation lines of a
#: multi-line report, joined by newlines), ``count`` (how many log lines the
#: event stands for, e.g. with ``callbacks suppressed``), ``uptime`` (seconds
#: since boot for dmesg lines), ``aligned`` (False when the time is not on the
#: shared clock), ``repeat_span`` (seconds from the first to the last of a
#: row's ``repeats``), ``per_minute`` (their lines in each minute from the
#: first's on, None unless repeated) and ``offset`` (byte offset of the line
#: in its file's content, decompressed for a compressed file, where evidence
#: reads it back; NA when the content was changed on the way: re-encoded,
#: line endings made uniform).
EVENT_EXTRA_COLUMNS = ["level", "detail", "count", "uptime", "aligned", "repeat_span", "per_minute", "offset"]

SEVERITIES = ["low", "medium", "high", "critical"]
SEVERITY_RANK = {name: i for i, name in enumerate(SEVERITIES)}


def empty_metrics():
    return empty_long()


def empty_events():
    cols = {c: pd.Series([], dtype=object) for c in EVENT_COLUMNS + EVENT_EXTRA_COLUMNS}
    cols["timestamp"] = pd.Series([], dtype="datetime64[ns]")
    cols["line"] = pd.Series([], dtype="Int64")
    cols["pid"] = pd.Series([], dtype="Int64")
    cols["count"] = pd.Series([], dtype="Int64")
    cols["uptime"] = pd.Series([], dtype="float64")
    cols["aligned"] = pd.Series([], dtype=bool)
    cols["repeats"] = pd.Series([], dtype="Int64")
    cols["repeat_span"] = pd.Series([], dtype="float64")
    cols["offset"] = pd.Series([], dtype="Int64")
    return pd.DataFrame(cols)


@dataclass
class Source:
    """One parsed input file.

    Its metrics are held in ``store`` (a :class:`~sarsleuth.metric_store.
    MetricStore`, compact); ``metrics`` is the contract's long table, built
    from the store each time it is read (the analysis never reads it), and
    a long table given to ``metrics`` is stored."""

    path: str
    kind: str
    host: str | None = None
    metrics: dataclasses.InitVar[Any] = None   # long DataFrame, METRIC_COLUMNS (see the property below)
    events: Any = None           # DataFrame, EVENT_COLUMNS + EVENT_EXTRA_COLUMNS
    reports: list = field(default_factory=list)   # load-test report dicts
    warnings: list = field(default_factory=list)
    tz: str | None = None        # zone the timestamps are in, None = wall clock
    records: int = 0             # samples (metric sources) or lines/events read
    meta: dict = field(default_factory=dict)  # kernel, ncpu, format magic, mtime...
    store: Any = None            # MetricStore of the metrics, None for a source without any

    def __post_init__(self, metrics):
        if metrics is not None and self.store is None:
            self.metrics = metrics

    def _long_metrics(self):
        return None if self.store is None else self.store.to_long()

    def _store_metrics(self, frame) -> None:
        self.store = None if frame is None else from_long(frame)

    def span(self):
        """(start, end) over metrics and events, or (None, None)."""
        times = []
        if self.store:
            lo, hi = self.store.span()
            if lo is not None:
                times.extend([lo, hi])
        frame = self.events
        if frame is not None and len(frame):
            ts = frame["timestamp"]   # min/max skip NaT without a copy
            lo, hi = ts.min(), ts.max()
            if lo is not None and not (lo != lo):
                times.extend([lo, hi])
        for rep in self.reports:
            for key in ("start", "end"):
                if rep.get(key) is not None:
                    times.append(rep[key])
        # a log's events are its few matching lines; its per-minute line
        # counts say what time the whole file covers
        volume = self.meta.get("volume")
        if volume is not None and len(volume) and self.meta.get("volume_unit") == "minute":
            times.extend([volume.index.min(), volume.index.max() + _minute()])
        if not times:
            return None, None
        try:
            return min(times), max(times)
        except TypeError:  # naive vs aware mix: compare on wall clock
            walls = [t.tz_localize(None) if getattr(t, "tzinfo", None) else t for t in times]
            return min(walls), max(walls)


# After the dataclass is made (its __init__ takes ``metrics=`` as above):
# reading ``metrics`` builds the long table, assigning one stores it.
Source.metrics = property(Source._long_metrics, Source._store_metrics)


def _minute():
    return pd.Timedelta(seconds=59)


#: Evidence quotes a line of an input up to this many characters.
QUOTE_CHARS = 240


def quoted(text: str) -> str:
    """A line as evidence quotes it: verbatim, trailing blanks dropped, cut
    with an ellipsis when long."""
    return cut_words(text.rstrip(), QUOTE_CHARS)


def shortened(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, at a space outside
    `code spans` (never inside a number, a time or quoted code), with an
    ellipsis; whole when it fits."""
    if len(text) <= limit:
        return text
    spans = [(m.start(), m.end()) for m in _CODE_SPAN.finditer(text)]
    cut = 0
    for i in range(min(limit, len(text)) - 1, 0, -1):
        if text[i] == " " and not any(a < i < b for a, b in spans):
            cut = i
            break
    if not cut:
        return text[:limit - 1] + "…" if not spans else text[:min(a for a, _b in spans)].rstrip() + "…"
    return text[:cut].rstrip(" ,;:(-") + "…"


_CODE_SPAN = re.compile(r"`[^`]*`")


@dataclass
class Evidence:
    path: str
    line: int | None
    text: str
    #: a line printed again and again, stored once (see :func:`repeated`)
    repeated: dict | None = None
    #: the lines around ``line`` as the file has them, [(number, text)]
    #: (the line itself included), when the file could be read again
    around: list = field(default_factory=list, compare=False, repr=False)
    #: the message an event's evidence quotes, at ``line`` or a few lines
    #: after it (a report told in several lines): set until the file is
    #: read again (sarsleuth.inputs.evidence_lines), ``text`` standing in until then
    find: str | None = field(default=None, compare=False, repr=False)
    #: the byte offset where ``line`` starts in the file's content (its
    #: decompressed bytes when compressed), when the scan read that content
    #: unchanged (quoting then reads there instead of counting lines)
    offset: int | None = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict:
        out = {"path": self.path, "line": self.line, "text": self.text}
        if self.repeated:
            out["repeated"] = {k: iso(v) if k in ("first", "last") else v for k, v in self.repeated.items()}
        return out

    def note(self) -> str:
        """What the quote leaves out: how often the line was printed, or ""."""
        rep = self.repeated
        if not rep:
            return ""
        first, last = iso(rep["first"]), iso(rep["last"])
        when = ""
        if first and last:
            same_day = first[:10] == last[:10]
            when = f" from {first.replace('T', ' ')[:19]} to {(last[11:19] if same_day else last.replace('T', ' ')[:19])}"
        peak = f", at most {rep['peak_per_minute']:,} a minute" if rep.get("peak_per_minute") else ""
        return f"(printed {rep['times']:,} times{when}{peak})"


def repeated(times, first, span_seconds, per_minute) -> dict | None:
    """How an event row's identical lines are told: ``times`` printed,
    ``first`` and ``last`` times (None when untimed), the most in one
    minute; None for a line printed once."""
    try:
        times = int(times)
    except (TypeError, ValueError):
        return None
    if times <= 1:
        return None
    timed = first is not None and not pd.isna(first)
    span = float(span_seconds) if span_seconds is not None and span_seconds == span_seconds else 0.0
    return {"times": times, "first": first if timed else None,
            "last": pd.Timestamp(first) + pd.Timedelta(seconds=span) if timed else None,
            "peak_per_minute": max(per_minute) if isinstance(per_minute, tuple) and per_minute else None}


@dataclass
class Finding:
    """What one detector concluded from one stretch of data."""

    detector: str
    title: str
    severity: str
    start: Any            # pandas Timestamp (aware or wall clock)
    end: Any
    host: str | None = None
    metrics: dict = field(default_factory=dict)
    evidence: list = field(default_factory=list)   # list[Evidence]
    explanation: str = ""        # one or two sentences in plain English
    category: str = "other"      # incident category this finding points to
    recommendations: list = field(default_factory=list)
    sources: list = field(default_factory=list)     # paths that backed it
    aligned: bool = True         # False when its time is not on the shared clock
    refs: dict = field(default_factory=dict)  # ids it is about (pids, ports...) for cross-source matching
    role: str | None = None      # in its incident: "cause", "effect" or "context"
    #: how each number it states was obtained: the series, the span, the
    #: statistic (sarsleuth.detectors.figures.Figure), for the audit
    figures: list = field(default_factory=list)

    def __post_init__(self):
        if self.severity not in SEVERITY_RANK:
            raise ValueError(f"bad severity {self.severity!r}")

    @property
    def onset(self):
        """When the anomaly took off: refs ``onset`` where a detector saw a
        series creep over its threshold well before it climbed (a load
        average a little high for minutes, then soaring with the swap),
        ``start`` otherwise.  Causes and roles follow onsets."""
        t = (self.refs or {}).get("onset")
        if t is None:
            return self.start
        return pd.Timestamp(t)

    @property
    def resolution(self):
        """How early before its onset the anomaly may have begun: the
        sampling interval of a metric finding (a 10-minute sar sample
        stamped 03:20:01 covers 03:10:01 onwards), nothing for a log line."""
        return pd.Timedelta(seconds=float((self.refs or {}).get("sample_seconds") or 0))

    @property
    def interval_began(self):
        """Where the interval of the finding's first sample began: the row
        before it, as the file stamped it (refs ``sampled_from``), else its
        onset less the sampling interval."""
        t = (self.refs or {}).get("sampled_from")
        if t is not None:
            began, start = pd.Timestamp(t), pd.Timestamp(self.start)
            # on the finding's own clock (the host's zone), as its start is
            return began.tz_convert(start.tzinfo) if began.tzinfo and start.tzinfo else began
        return min(self.start, self.onset) - self.resolution

    def to_dict(self) -> dict:
        return {
            "detector": self.detector,
            "title": self.title,
            "severity": self.severity,
            "start": iso(self.start),
            "end": iso(self.end),
            "host": self.host,
            "metrics": {k: _num(v) for k, v in self.metrics.items() if _num(v) is not None},
            "evidence": [e.to_dict() for e in self.evidence],
            "explanation": self.explanation,
            "aligned": self.aligned,
            "refs": self.refs,
            **({"role": self.role} if self.role else {}),
            **({"figures": [f.to_dict() for f in self.figures]} if self.figures else {}),
        }


@dataclass
class Incident:
    rank: int
    id: str
    title: str
    category: str
    severity: str
    score: float
    start: Any
    end: Any
    hosts: list
    summary: str
    findings: list                     # list[Finding]
    recommendations: list
    cause: str | None = None           # detector id named as the likely cause
    score_components: dict = field(default_factory=dict)
    why_first: str = ""
    #: the story as an SRE writes it: headline, timeline, cause and why,
    #: effects, context, what is left out (see :mod:`sarsleuth.analysis.narrative`)
    story: dict = field(default_factory=dict)
    #: how users were hurt: "killed", "crashed", "refused", "dropped", "failed", "slowed"
    impact: list = field(default_factory=list)
    #: the zone its story is told in: its host's, UTC across hosts of
    #: different zones, None on the hosts' wall clock (timebase.clock.Clock.story_zone)
    zone: str | None = None
    #: what else changed during it: the series that departed most from
    #: their own baseline (sarsleuth.analysis.what_changed), most first
    changes: list = field(default_factory=list)
    #: how a notebook shows an incident (HTML): filled in by the outputs
    #: when they load (``render/_templates.py``), since the data model sits
    #: below them and never imports them
    notebook_html: ClassVar[Callable[[Incident], str] | None] = None

    def to_dict(self) -> dict:
        return {
            "rank": self.rank,
            "id": self.id,
            "title": self.title,
            "category": self.category,
            "severity": self.severity,
            "score": round(float(self.score), 4),
            "score_components": {k: round(float(v), 4) for k, v in self.score_components.items()},
            "start": iso(self.start),
            "end": iso(self.end),
            "hosts": list(self.hosts),
            "cause": self.cause,
            "summary": self.summary,
            "why_first": self.why_first or None,
            "findings": [f.to_dict() for f in self.findings],
            "recommendations": list(self.recommendations),
            "impact": list(self.impact),
            "story": self.story,
            "changes": list(self.changes),
        }

    def _repr_html_(self) -> str | None:
        # None: the notebook falls back to the text repr
        return Incident.notebook_html(self) if Incident.notebook_html else None


def iso(ts) -> str | None:
    """ISO 8601 text: with offset when aware, wall clock otherwise."""
    if ts is None:
        return None
    try:
        if pd.isna(ts):
            return None
        ts = pd.Timestamp(ts)
        if ts.nanosecond == 0 and ts.microsecond == 0:
            return ts.isoformat(timespec="seconds")
        return ts.isoformat(timespec="microseconds" if ts.microsecond % 1000 else "milliseconds")
    except (TypeError, ValueError):
        if isinstance(ts, (_dt.datetime, _dt.date)):
            return ts.isoformat()
        return str(ts)


def _num(v):
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    if f != f or f in (float("inf"), float("-inf")):
        return None
    if f.is_integer() and abs(f) < 2**53:
        return int(f)
    return round(f, 6)


def replace(obj, **changes):
    return dataclasses.replace(obj, **changes)
