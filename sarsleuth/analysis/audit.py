"""The story audited against its own data.

Every figure a finding states is taken by its definition (the series, the
span, the statistic: :mod:`sarsleuth.detectors.figures`) and measured again
from the case's metric store, events and host facts, with the function the
detector used; then what the finding and the story say is held to those
figures:

- each figure's value, its place among the finding's metrics, its span
  (within one stretch of records: no gap, no restart), its value within
  the metric's physical bounds (:mod:`sarsleuth.detectors.bounds`), a limit
  said as assumed unless it was read from the inputs;
- each number a metric finding's title, binary-file evidence sentence or
  timeline sentence states is one of its figures, as printed (its digits);
- each time those state is one of the finding's own (its start, end, onset,
  peak, a figure's), on its host's clock;
- each row of an incident's timeline is on the incident's clock at the
  time of its finding it names, and no effect is told before its cause
  could have begun.

``sarsleuth analyze --audit`` prints one line per difference (exit 3) or
``N figures checked, 0 differences``; the test suite runs it over every
sample, lab case and corpus file.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import pandas as pd

from sarsleuth.detectors import Context, registry
from sarsleuth.detectors.bounds import bound_of
from sarsleuth.detectors.figures import evaluate, said, series_of
from sarsleuth.knowledge import began_unseen
from sarsleuth.timebase.clock import on_clock, when
from sarsleuth.safe_text import QUOTED

#: Statistics of a series over a span, and those that are a level before
#: an episode or where a climb started (a baseline or a trend never spans
#: a gap in the records or a restart).
_OVER_SPAN = frozenset({"max", "min", "mean", "median", "usual", "first", "last", "sum", "samples", "share"})
_LEVELS = frozenset({"median", "usual", "first"})

#: A number as stories print it, not part of a name (``em2``, ``dev253-5``,
#: ``ldavg-1``, ``0x20``, ``10-minute``), a time or a date.
_NUMBER = re.compile(r"(?<![\w.:/#\[-])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?![\w:/\]-]|\.\d)")
_TIME = re.compile(r"(?<![\d:])(\d{2}):(\d{2}):(\d{2})(?![\d:])")


@dataclass
class Difference:
    """One thing a story says that its data do not."""

    where: str
    what: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


@dataclass
class Audit:
    """What the audit checked and what it found."""

    figures: int = 0
    numbers: int = 0
    times: int = 0
    differences: list = field(default_factory=list)

    @property
    def checked(self) -> int:
        return self.figures + self.numbers + self.times

    def summary(self) -> str:
        n = len(self.differences)
        return (f"{self.checked:,} figures checked ({self.figures:,} measured again, {self.numbers:,} numbers and "
                f"{self.times:,} times of the story), {n:,} difference{'' if n == 1 else 's'}")

    def lines(self) -> list[str]:
        return [str(d) for d in self.differences]

    def told(self, say) -> bool:
        """Say each difference, then the summary, one line each through
        ``say``; True when there is a difference."""
        for line in self.lines() + [self.summary()]:
            say(line)
        return bool(self.differences)

    def to_dict(self) -> dict:
        return {"figures": self.figures, "numbers": self.numbers, "times": self.times, "checked": self.checked,
                "differences": self.lines()}


def audit(case) -> Audit:
    """Audit every finding and incident story of ``case`` (a
    :class:`sarsleuth.Case`, or anything with its ``store``, ``events``,
    ``reports``, ``sources``, ``hosts``, ``clock``, ``findings`` and
    ``incidents``) against the case's own data."""
    options = getattr(case, "options", None)
    ctx = Context(metrics=case.store, events=case.events, reports=case.reports, sources=case.sources,
                  host_facts=list(case.hosts), clock=case.clock,
                  link_speed_bps=getattr(options, "link_speed_bps", None))
    out = Audit()
    # a detector that reads only series (and host facts) states nothing but its figures
    metric_detectors = {d for d, cls in registry().items()
                        if cls.inputs and all(i.startswith("metrics") or i == "facts" for i in cls.inputs)}
    for f in case.findings:
        _finding(ctx, f, f.detector in metric_detectors, out)
    for inc in case.incidents:
        _story(inc, out)
    return out


# ---------------------------------------------------------------- findings
def _name(f) -> str:
    title = f.title if len(f.title) <= 60 else f.title[:59] + "…"
    return f"{f.detector} \"{title}\""


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is b
    a, b = float(a), float(b)
    return a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def _finding(ctx: Context, f, metric_finding: bool, out: Audit) -> None:
    where = _name(f)
    known = {fig.name: fig for fig in f.figures}
    for fig in f.figures:
        out.figures += 1
        value, _at, samples = evaluate(ctx, fig, known)
        if not _same(value, fig.value):
            out.differences.append(Difference(where, f"{fig.name} is {fig.text()} ({fig.stat} of "
                                                     f"{_series(fig)}), the data give {_said(value, fig)}"))
            continue
        if fig.name in f.metrics and not _same(f.metrics[fig.name], fig.value):
            out.differences.append(Difference(where, f"metric {fig.name} = {f.metrics[fig.name]} but its figure "
                                                     f"is {fig.value}"))
        if fig.stat in _LEVELS | {"elapsed"} and fig.series and fig.start is not None:
            gap = _gap_inside(ctx, fig)
            if gap:
                out.differences.append(Difference(where, f"{fig.name} ({fig.stat} of {_series(fig)} from "
                                                         f"{_clock(fig.start)} to {_clock(fig.end)}) spans {gap}"))
        bound = bound_of(fig.series[0], fig.series[1]) if len(fig.series) >= 2 and fig.stat in (
            _OVER_SPAN | {"at"}) - {"samples", "sum", "share"} else None
        if bound is not None and bound.outside([fig.value])[0]:
            out.differences.append(Difference(where, f"{fig.name} {fig.text()} lies outside {bound.said()}: "
                                                     "a counter anomaly used as evidence"))
        if fig.stat == "limit" and fig.origin == "assumed" and fig.text() in f.title and "assumed" not in f.title:
            out.differences.append(Difference(where, f"{fig.name} {fig.text()} is a default, not read from the "
                                                     "inputs, and the title does not say it is assumed"))
    if not metric_finding or not f.figures:
        return
    texts = [("title", f.title)] + [(key, f.refs[key]) for key in ("start_said", "onset_said") if f.refs.get(key)]
    texts += [("evidence", ev.text) for ev in f.evidence if ev.line is None and not _limit_line(ev, f)]
    times = _times_of(ctx, f)
    for what, text in texts:
        _numbers(text, f.figures, where, what, out)
        _times(text, times, where, what, out)


def _limit_line(ev, f) -> bool:
    """A configuration line quoted as evidence (a limit), not a sentence."""
    return any(fig.origin.startswith(f"{ev.path}:") for fig in f.figures if fig.stat == "limit")


def _series(fig) -> str:
    if len(fig.series) >= 2 and fig.series[0] == "limit":
        return fig.series[1]
    return " ".join(str(x) for x in (fig.series[1:2] + fig.series[2:3]) if x) or fig.stat


def _said(value, fig) -> str:
    if value is None:
        return "nothing"
    return said(value, fig.fmt, fig.scale) if fig.fmt != "d" else f"{value:g}"


def _clock(ts) -> str:
    return pd.Timestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


def _gap_inside(ctx: Context, fig) -> str:
    """A gap in the records or a restart inside a figure's span, said, or ''."""
    s = series_of(ctx, fig.host, fig.series)
    if s is None or not len(s):
        return ""
    ids = ctx.segments(s, fig.host)
    try:
        inside = (s.index >= fig.start) & (s.index <= fig.end)
    except TypeError:
        return ""
    seen = ids[inside]
    if len(seen) and seen.min() != seen.max():
        at = s.index[inside][list(seen).index(seen.min()) + int((seen == seen.min()).sum()) - 1]
        return f"a gap in the records or a restart after {_clock(at)}"
    return ""


# ----------------------------------------------------------------- numbers
def _candidates(figures) -> list[float]:
    out = []
    for fig in figures:
        if fig.value is not None and fig.fmt != "elapsed":
            out.append(float(fig.value) * fig.scale)
        if fig.samples:
            out.append(float(fig.samples))
    return out


def _numbers(text: str, figures, where: str, what: str, out: Audit) -> None:
    """Every number of ``text`` is one of ``figures`` as printed."""
    for fig in figures:
        if fig.fmt == "elapsed" and fig.value is not None:
            text = text.replace(fig.text(), " ")         # "5 min", "2 h 5 min"
    text = _TIME.sub(" ", QUOTED.sub(" ", text))     # a quoted line (configuration, message) says what its file says
    values = _candidates(figures)
    for m in _NUMBER.finditer(text):
        out.numbers += 1
        digits = len(m.group(2) or "")
        number = float(m.group(1).replace(",", "") + ("." + m.group(2) if m.group(2) else ""))
        if not any(abs(round(v, digits) - number) <= 0.5 * 10 ** -digits + 1e-9 for v in values):
            out.differences.append(Difference(where, f"the {what} says {m.group(0)}, which none of its figures "
                                                     "gives"))


# ------------------------------------------------------------------- times
def _times_of(ctx: Context, f) -> set:
    """The times a finding may state, as its host's clock shows them."""
    found = [f.start, f.end, f.onset]
    refs = f.refs or {}
    for key in ("peak_time", "busiest_disk_peak_time"):
        if refs.get(key):
            found.append(pd.Timestamp(refs[key]))
    for fig in f.figures:
        found += [fig.start, fig.end, fig.at]
    out = set()
    for t in found:
        if t is None or pd.isna(t):
            continue
        t = pd.Timestamp(t)
        out.add(pd.Timestamp(ctx.clock.on_host_clock(t, f.host) if t.tzinfo is not None else t).strftime("%H:%M:%S"))
    return out


def _times(text: str, times: set, where: str, what: str, out: Audit) -> None:
    for m in _TIME.finditer(text):
        out.times += 1
        if m.group(0) not in times:
            out.differences.append(Difference(where, f"the {what} says {m.group(0)}, none of its times"))


# ------------------------------------------------------------------- story
def _story(inc, out: Audit) -> None:
    """The incident's timeline rows on its clock, at times of the findings
    they name; no effect before its cause could have begun."""
    where = f"incident {inc.rank} \"{inc.title[:50]}{'…' if len(inc.title) > 50 else ''}\""
    cause = next((f for f in inc.findings if f.role == "cause" and f.aligned and f.start is not None
                  and not pd.isna(f.start)), None)
    # a cause already there when first seen began before it: no bound
    earliest = None if cause is None or began_unseen(cause) else cause.onset - cause.resolution
    times: dict = {}
    for f in inc.findings:
        if f.start is None or pd.isna(f.start):
            continue
        own = {f.start, f.onset}
        p = (f.refs or {}).get("peak_time")
        if p:
            own.add(pd.Timestamp(p))
        times.setdefault(f.detector, set()).update(_instant(t) for t in own)
    for row in inc.story.get("timeline") or []:
        if not row.get("time"):
            continue
        out.times += 1
        t = pd.Timestamp(row["time"])
        # (dated when the incident spans more than one day)
        if row.get("clock") not in (when(t, False, inc.zone), when(t, True, inc.zone)):
            out.differences.append(Difference(where, f"a timeline row says {row.get('clock')} for "
                                                     f"{when(t, True, inc.zone)} on the incident's clock"))
        if _instant(t) not in times.get(row.get("detector"), set()):
            out.differences.append(Difference(where, f"a timeline row at {row.get('clock')} is no time of its "
                                                     f"{row.get('detector')} finding"))
        if row.get("role") == "effect" and earliest is not None and t < earliest:
            out.differences.append(Difference(where, f"an effect at {row.get('clock')} ({row.get('what', '')[:60]}) "
                                                     f"is told before its cause could have begun "
                                                     f"({when(on_clock(earliest, inc.zone), False)})"))


def _instant(t):
    t = pd.Timestamp(t)
    return t.tz_convert("UTC") if t.tzinfo is not None else t
