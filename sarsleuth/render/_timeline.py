"""The cross-source timeline of the HTML report, as inline SVG.

One lane per source (and its host): the time the source covers as a thin
bar, its log events as ticks, the findings it backs as coloured blocks
(cause, effect, context), and every incident's window shaded across all
lanes.  Only three kinds of text are drawn, each placed so that none
overlaps another: lane names in their own column, time ticks at least
``MIN_TICK_PX`` apart, and incident numbers stacked in rows above the lanes.
Everything from an input is escaped; the SVG carries no script.
"""
from __future__ import annotations

import os
from html import escape

import pandas as pd

from sarsleuth.knowledge import unmarked_event_kinds
from sarsleuth.timebase.clock import on_clock

WIDTH = 1040
LABEL_W = 230
LANE_H = 22
TICK_ROW = 14
MIN_TICK_PX = 90
CHAR_PX = 6.6            # width of one character at the 11 px label font, generously
ROLE_COLOUR = {"cause": "#c62828", "effect": "#ef6c00", "context": "#78909c"}

_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400]


def _ts(value):
    if value is None:
        return None
    try:
        t = pd.Timestamp(value)
    except (TypeError, ValueError):
        return None
    return None if pd.isna(t) else t


def _in_view(start, end, lo, hi):
    """``(start, end)`` as timestamps when the span shows between ``lo`` and
    ``hi``, else None (untimed, outside, or on another clock)."""
    a, b = _ts(start), _ts(end) or _ts(start)
    if a is None:
        return None
    try:
        return None if b < lo or a > hi else (a, b)
    except TypeError:
        return None


def _range(case):
    """The span drawn: every incident's window and findings (context
    included), widened by a tenth on each side (at least 30 s); without
    incidents, what the sources cover."""
    times = []
    for inc in case.incidents:
        times += [_ts(inc.start), _ts(inc.end)]
        for f in inc.findings:
            if f.aligned:
                times += [_ts(f.start), _ts(f.end)]
    times = [t for t in times if t is not None]
    try:
        if times:
            lo, hi = min(times), max(times)
            pad = max((hi - lo) / 10, pd.Timedelta(seconds=30))
            lo, hi = lo - pad, hi + pad
        else:
            spans = [tuple(_ts(x) for x in s.span()) for s in case.sources]
            spans = [(a, b) for a, b in spans if a is not None and b is not None]
            if not spans:
                return None
            lo, hi = min(a for a, _ in spans), max(b for _, b in spans)
    except TypeError:     # wall clock beside aware times: nothing shared to draw on
        return None
    if hi <= lo:
        hi = lo + pd.Timedelta(minutes=1)
    # incidents carry their hosts' clocks: the axis across them is the case's
    return on_clock(lo, case.tz), on_clock(hi, case.tz)


def _ticks(lo, hi, width: float) -> tuple[list, int]:
    """Tick times at round steps at least ``MIN_TICK_PX`` apart, and the step in seconds."""
    seconds = (hi - lo).total_seconds()
    step = next((s for s in _STEPS if width * s / seconds >= MIN_TICK_PX), _STEPS[-1])
    first = lo.floor(f"{step}s") if step < 86400 else lo.normalize()
    out = []
    t = first
    while t <= hi:
        if t >= lo:
            out.append(t)
        t = t + pd.Timedelta(seconds=step)
    return out, step


def timeline_svg(case) -> str:
    """The SVG, or '' when nothing shares a clock."""
    bounds = _range(case)
    if bounds is None:
        return ""
    lo, hi = bounds
    span_s = max((hi - lo).total_seconds(), 1.0)
    plot_w = WIDTH - LABEL_W - 10

    def x(t) -> float:
        return LABEL_W + max(0.0, min(1.0, (t - lo).total_seconds() / span_s)) * plot_w

    lanes = list(case.sources)
    # incident numbers above the lanes, stacked so that none overlaps another
    labels, rows_end = [], []
    for inc in case.incidents:
        span = _in_view(inc.start, inc.end, lo, hi)
        if span is None:
            continue
        a, b = span
        text = f"#{inc.rank}"
        lx = x(a) + 2
        w = len(text) * CHAR_PX + 4
        row = next((i for i, end in enumerate(rows_end) if lx >= end), len(rows_end))
        if row == len(rows_end):
            rows_end.append(0.0)
        rows_end[row] = lx + w
        labels.append((inc, a, b, text, lx, row))
    top = 6 + TICK_ROW * max(1, len(rows_end))
    height = top + LANE_H * len(lanes) + 28
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="{WIDTH}" height="{height}" '
           f'viewBox="0 0 {WIDTH} {height}" role="img" aria-label="timeline of every source">']
    out.append('<style>text{font:11px sans-serif;fill:#1d232a}.tick{fill:#5b6570}</style>')
    # incident windows, shaded over every lane
    for inc, a, b, text, lx, row in labels:
        xa, xb = x(a), x(b)
        out.append(f'<a href="#incident-{escape(inc.id)}"><rect class="window" x="{xa:.1f}" y="{top - 2}" '
                   f'width="{max(xb - xa, 2):.1f}" height="{LANE_H * len(lanes) + 4}" fill="#ffb74d" '
                   f'fill-opacity="0.22"><title>{escape(inc.title)}</title></rect>'
                   f'<text x="{lx:.1f}" y="{4 + TICK_ROW * (row + 1) - 3}">{escape(text)}</text></a>')
    events = case.events
    for i, s in enumerate(lanes):
        y = top + i * LANE_H
        if i % 2:
            out.append(f'<rect x="0" y="{y}" width="{WIDTH}" height="{LANE_H}" fill="#f6f8fa"/>')
        name = f"{os.path.basename(s.path)} ({s.kind})" + (f" {s.host}" if s.host else "")
        cut = int((LABEL_W - 8) / CHAR_PX)
        shown_name = name if len(name) <= cut else name[:cut - 1] + "\u2026"
        out.append(f'<text x="4" y="{y + 15}"><title>{escape(s.path)}</title>{escape(shown_name)}</text>')
        a, b = (_ts(v) for v in s.span())
        if a is not None and b is not None:
            try:
                if b >= lo and a <= hi:
                    out.append(f'<rect x="{x(a):.1f}" y="{y + 10}" width="{max(x(b) - x(a), 1):.1f}" height="2" '
                               f'fill="#90a4ae"/>')
            except TypeError:
                pass
        out += _event_ticks(events, s.path, y, lo, hi, x)
        out += _finding_blocks(case, s.path, y, lo, hi, x)
    axis_y = top + LANE_H * len(lanes) + 4
    ticks, step = _ticks(lo, hi, plot_w)
    fmt = "%H:%M:%S" if step < 60 else "%H:%M"
    out.append(f'<line x1="{LABEL_W}" y1="{axis_y}" x2="{WIDTH - 10}" y2="{axis_y}" stroke="#5b6570"/>')
    for t in ticks:
        tx = x(t)
        half = len(t.strftime(fmt)) * CHAR_PX / 2
        if tx - half < LABEL_W - 4 or tx + half > WIDTH:
            continue      # a label cut at the edge reads as another time
        out.append(f'<line x1="{tx:.1f}" y1="{axis_y}" x2="{tx:.1f}" y2="{axis_y + 4}" stroke="#5b6570"/>'
                   f'<text class="tick" x="{tx:.1f}" y="{axis_y + 16}" text-anchor="middle">{t.strftime(fmt)}</text>')
    out.append("</svg>")
    return "".join(out)


def _event_ticks(events, path, y, lo, hi, x) -> list:
    """A tick per pixel column that has events from this file."""
    if events is None or not len(events) or "file" not in events.columns:
        return []
    ev = events[(events["file"] == path) & events["timestamp"].notna()]
    if "aligned" in ev.columns:
        ev = ev[ev["aligned"].fillna(True).astype(bool)]
    ev = ev[~ev["kind"].isin(sorted(unmarked_event_kinds()))]
    try:
        ev = ev[(ev["timestamp"] >= lo) & (ev["timestamp"] <= hi)]
    except TypeError:
        return []
    columns = sorted({round(x(t)) for t in ev["timestamp"]})
    return [f'<rect x="{c - 0.5}" y="{y + 4}" width="1.5" height="14" fill="#37474f"/>' for c in columns]


def _finding_blocks(case, path, y, lo, hi, x) -> list:
    out = []
    # context first, the cause last: on top where they overlap
    order = {"context": 0, "effect": 1, "cause": 2}
    pairs = sorted(((inc, f) for inc in case.incidents for f in inc.findings),
                   key=lambda p: order.get(p[1].role or "", 0))
    for inc, f in pairs:
        if not f.aligned or not any(e.path == path for e in f.evidence[:1]):
            continue
        span = _in_view(f.start, f.end, lo, hi)
        if span is None:
            continue
        a, b = span
        colour = ROLE_COLOUR.get(f.role or "", "#78909c")
        out.append(f'<rect x="{x(a):.1f}" y="{y + 6}" width="{max(x(b) - x(a), 3):.1f}" height="10" '
                   f'fill="{colour}" fill-opacity="0.75"><title>#{inc.rank} {escape(f.role or "")}: '
                   f'{escape(f.title)}</title></rect>')
    return out
