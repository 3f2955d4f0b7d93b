"""The timelines of the HTML report, as HTML (lanes are rows, marks are
positioned in per cent of their track), so that they reflow from a phone
to a wide screen and their text never scales with the drawing.

One lane per file (copies of one file read from two bundles are one lane),
lanes grouped under their host, each host named once: the time the file
covers (grey bar), its log events (ticks), the findings it backs (red:
cause, orange: effect, grey: context), incident windows shaded.  The
overview never puts distant times on one axis: incidents far apart in time
(a 2014 day and a 2026 one) are separate spans, each on its own axis, with
how much time lies between them said; each incident also gets its own span.

Time labels come in three levels of round steps (at most 3, 6 and 12 labels
over a span); the page shows the finer levels only where the track is wide
enough for them, so labels never touch.  Everything from an input is escaped.
"""
from __future__ import annotations

import os
from html import escape

import pandas as pd

from sarsleuth.analysis.charted import incident_frame, lead_up
from sarsleuth.knowledge import unmarked_event_kinds
from sarsleuth.render.clock_ticks import STEPS, epoch_seconds, time_ticks
from sarsleuth.timebase import timed_by_mtime
from sarsleuth.timebase.clock import on_clock, zone_of

ROLE_ORDER = {"context": 0, "effect": 1, "cause": 2}
#: Labels per level: every width shows level 1, wider tracks 2, the widest 3.
LEVEL_LABELS = (3, 6, 12)
#: Incident windows farther apart than this (and than twice their own
#: span) are told on separate spans.
MIN_GAP_SECONDS = 3600.0


def _ts(value):
    if value is None:
        return None
    try:
        t = pd.Timestamp(value)
    except (TypeError, ValueError):
        return None
    return None if pd.isna(t) else t


def _on(t, zone):
    return on_clock(t, zone) if t is not None else None


def _placed(thing, zone, lo, hi):
    """(start, end) of an incident or finding on the case's clock when it
    shows between ``lo`` and ``hi``, else None (untimed, outside, or on
    another clock)."""
    a, b = _ts(thing.start), _ts(thing.end) or _ts(thing.start)
    if a is None:
        return None
    try:
        a, b = _on(a, zone), _on(b, zone)
        return None if b < lo or a > hi else (a, b)
    except TypeError:
        return None


def _padded(lo, hi):
    pad = max((hi - lo) / 10, pd.Timedelta(seconds=30))
    return lo - pad, hi + pad


def spans(case) -> list:
    """The overview's spans: incidents from their lead-up to their end
    (:func:`~sarsleuth.analysis.charted.lead_up`), clustered in time
    (sources' spans when there is no incident), each padded; [] when times
    cannot share a clock."""
    windows = []
    try:
        for inc in case.incidents:
            a, b = _ts(inc.start), _ts(inc.end) or _ts(inc.start)
            a = _ts(lead_up(inc)) if a is not None else None
            if a is not None:
                windows.append((_on(a, case.tz), _on(b, case.tz)))
        if not windows:
            for s in case.sources:
                a, b = (_ts(v) for v in s.span())
                if a is not None and b is not None:
                    windows.append((_on(a, case.tz), _on(b, case.tz)))
        windows.sort()
        out = []
        for a, b in windows:
            if out:
                lo, hi = out[-1]
                gap = (a - hi).total_seconds()
                if gap <= max(MIN_GAP_SECONDS, 2 * (hi - lo).total_seconds()):
                    out[-1] = (lo, max(hi, b))
                    continue
            out.append((a, b))
    except TypeError:      # wall clock beside aware times: nothing shared to draw on
        return []
    return [_padded(lo, hi) for lo, hi in out]


def gap_text(seconds: float) -> str:
    days = seconds / 86400
    if days >= 730:
        return f"{days / 365.25:.0f} years later"
    if days >= 2:
        return f"{days:.0f} days later"
    return f"{seconds / 3600:.0f} hours later"


def untimed(source) -> str:
    """Why a source has no place on a time axis, or "" when it has one:
    its only time is its file's modification time (a ps snapshot, a
    load-test report), or it records no wall-clock time at all."""
    if timed_by_mtime(source):
        return "no time of its own (only the file's modification time)"
    if source.span()[0] is None:
        return "no wall-clock times"
    return ""


def _lanes(case, lo, hi, zone, paths=None, hosts=None) -> list:
    """[(host, [(name, kind, [sources], why untimed)])]: the files with data
    between ``lo`` and ``hi`` (or only ``paths``), one lane per file name,
    host and kind; then the files without a place in time (only ``paths``
    and the files of ``hosts``), each a lane saying so."""
    groups: dict = {}
    for s in case.sources:
        why = untimed(s)
        if why:
            if paths is not None and s.path not in paths and (hosts is None or (s.host or None) not in hosts):
                continue
        else:
            if paths is not None and s.path not in paths:
                continue
            a, b = (_ts(v) for v in s.span())
            try:
                if a is None or b is None or _on(b, zone) < lo or _on(a, zone) > hi:
                    continue
            except TypeError:
                continue
        key = (s.host or "", os.path.basename(s.path.rsplit("!", 1)[-1]), s.kind, why)
        groups.setdefault(key, []).append(s)
    out: dict = {}
    for (host, name, kind, why), sources in sorted(groups.items(), key=lambda kv: (kv[0][0], bool(kv[0][3]))):
        out.setdefault(host, []).append((name, kind, sources, why))
    return sorted(out.items(), key=lambda kv: kv[0])


def timeline_html(case, lo, hi, incidents, paths=None, caption: str = "", zone=None, hosts=None,
                  untimed_lanes: bool = True) -> str:
    """One span of the timeline on ``zone``'s clock (the case's when None):
    ``incidents`` shaded and their findings drawn; ``paths``: only these
    files' lanes (and the untimed files of ``hosts``)."""
    zone = case.tz if zone is None else zone
    span = max((hi - lo).total_seconds(), 1.0)

    def pct(t) -> float:
        return max(0.0, min(100.0, (t - lo).total_seconds() / span * 100))

    lanes = _lanes(case, lo, hi, zone, paths, hosts)
    if not untimed_lanes:
        lanes = [(host, [f for f in files if not f[3]]) for host, files in lanes]
        lanes = [(host, files) for host, files in lanes if files]
    if not any(not why for _host, files in lanes for *_rest, why in files):
        return ""
    out = ['<div class="tl">',
           f'<div class="tl-caption">{escape(caption)}{lo.strftime("%Y-%m-%d %H:%M:%S")} to '
           f'{hi.strftime("%Y-%m-%d %H:%M:%S")} ({escape(zone_of(lo) or "times as recorded")})</div>']
    marks, rows_end = [], []
    for inc in incidents:
        placed = _placed(inc, zone, lo, hi)
        if placed is None:
            continue
        a, b = placed
        x = min(pct(a), 92.0)
        # at the narrowest track (340 px) a label takes 8 %: later ones go a row down
        row = next((i for i, end in enumerate(rows_end) if x >= end), len(rows_end))
        rows_end[row:row + 1] = [x + 9.0]
        marks.append((inc, pct(a), pct(b), x, row))
    if marks:
        labels = "".join(f'<a class="tl-inc" href="#incident-{escape(inc.id)}" style="left:{x:.2f}%;top:{row * 1.4}em"'
                         f' title="#{inc.rank}: {escape(inc.category)}">#{inc.rank}</a>' for inc, _a, _b, x, row in marks)
        out.append(f'<div class="tl-row tl-labels"><div class="tl-name"></div><div class="tl-track" '
                   f'style="height:{1.4 * max(1, len(rows_end))}em">{labels}</div></div>')
    windows = "".join(f'<i class="win" style="left:{a:.2f}%;width:{max(b - a, 0.4):.2f}%"></i>'
                      for _inc, a, b, _x, _row in marks)
    for host, files in lanes:
        if host:
            out.append(f'<div class="tl-host">{escape(host)}</div>')
        for name, kind, sources, why in files:
            copies = f" \u00d7{len(sources)}" if len(sources) > 1 else ""
            label = f'<div class="tl-name">{escape(name)} <span class="kind">({escape(kind)}){copies}</span></div>'
            if why:
                out.append(f'<div class="tl-row tl-untimed">{label}<div class="tl-track"><span class="tl-why">'
                           f'{escape(why)}</span></div></div>')
                continue
            parts = [windows]
            for s in sources[:1]:
                a, b = (_on(_ts(v), zone) for v in s.span())
                parts.append(f'<i class="cov" style="left:{pct(max(a, lo)):.2f}%;'
                             f'width:{max(pct(min(b, hi)) - pct(max(a, lo)), 0.3):.2f}%"></i>')
            parts += _event_ticks(case, [s.path for s in sources], lo, hi, pct, zone)
            parts += _finding_marks(incidents, [s.path for s in sources], lo, hi, pct, zone)
            out.append(f'<div class="tl-row">{label}<div class="tl-track">{"".join(parts)}</div></div>')
    ticks = []
    steps = STEPS
    for level, most in enumerate(LEVEL_LABELS, 1):
        found, step = time_ticks(lo, hi, most, steps)
        for t, text in found:
            if step < 86400 and t == t.normalize():
                text = t.strftime("%m-%d")          # midnight says the new date
            if all(abs((t - u).total_seconds()) > 0 for u, _l, _v in ticks):
                ticks.append((t, text, level))
        # a finer level's labels fall between the coarser ones, never a few seconds beside them
        steps = [s for s in STEPS if s <= step and step % s == 0]
    axis = []
    for t, text, level in sorted(ticks):
        x = pct(t)
        anchor = "a-start" if x < 10 else "a-end" if x > 90 else "a-mid"
        axis.append(f'<span class="tick l{level} {anchor}" data-t="{epoch_seconds(t):.0f}" style="left:{x:.2f}%">'
                    f'{escape(text)}</span>')
    out.append(f'<div class="tl-row tl-axis"><div class="tl-name"></div><div class="tl-track">{"".join(axis)}'
               '</div></div></div>')
    return "".join(out)


def _event_ticks(case, paths, lo, hi, pct, zone) -> list:
    """A tick per tenth of a per cent of track that has events of these files."""
    events = case.events
    if events is None or not len(events) or "file" not in events.columns:
        return []
    ev = events[events["file"].isin(paths) & events["timestamp"].notna()]
    if "aligned" in ev.columns:
        ev = ev[ev["aligned"].fillna(True).astype(bool)]
    ev = ev[~ev["kind"].isin(sorted(unmarked_event_kinds()))]
    try:
        times = [_on(t, zone) for t in ev["timestamp"]]
        columns = sorted({round(pct(t), 1) for t in times if lo <= t <= hi})
    except TypeError:
        return []
    return [f'<i class="ev" style="left:{c:.1f}%"></i>' for c in columns]


def _finding_marks(incidents, paths, lo, hi, pct, zone) -> list:
    out = []
    pairs = sorted(((inc, i, f) for inc in incidents for i, f in enumerate(inc.findings, 1)),
                   key=lambda p: ROLE_ORDER.get(p[2].role or "", 0))     # the cause drawn last, on top
    for inc, i, f in pairs:
        placed = _placed(f, zone, lo, hi) if f.aligned and any(e.path in paths for e in f.evidence[:1]) else None
        if placed is None:
            continue
        a, b = placed
        # a link to the finding's row; no text from an input in an attribute
        out.append(f'<a class="fd {escape(f.role or "context")}" href="#finding-{escape(inc.id)}-{i}" '
                   f'style="left:{pct(a):.2f}%;width:{max(pct(b) - pct(a), 0.6):.2f}%" '
                   f'title="#{inc.rank} {escape(f.role or "")}: {escape(f.detector)}"></a>')
    return out


def overview_html(case) -> str:
    """Every span of the case, each on its own axis, the time between them said."""
    out, last = [], None
    for lo, hi in spans(case):
        incidents = []
        for inc in case.incidents:
            a = _ts(inc.start)
            try:
                if a is not None and lo <= _on(a, case.tz) <= hi:
                    incidents.append(inc)
            except TypeError:
                continue
        if last is not None:
            out.append(f'<p class="tl-gap">\u2026 {escape(gap_text((lo - last).total_seconds()))} \u2026</p>')
        # the files without a place in time: once, under the first span
        out.append(timeline_html(case, lo, hi, incidents, untimed_lanes=last is None))
        last = hi
    return "".join(out)


def incident_timeline_html(case, inc) -> str:
    """The incident's own span, from its lead-up to its end (as its charts,
    :func:`~sarsleuth.analysis.charted.incident_frame`), on the clock its
    story is told on: the files its findings cite, those of its hosts with
    data then, and their files without a time of their own."""
    frame = incident_frame(inc)
    if frame is None:
        return ""
    zone = inc.zone
    try:
        lo, hi = (_on(_ts(t), zone) for t in frame)
        lo, hi = lo - (hi - lo) / 20, hi + (hi - lo) / 20
    except TypeError:
        return ""
    paths = {e.path for f in inc.findings for e in f.evidence}
    paths |= {s.path for s in case.sources if s.host in inc.hosts and not untimed(s)}
    hosts = set(inc.hosts) | ({None} if len({s.host for s in case.sources if s.host}) <= 1 else set())
    return timeline_html(case, lo, hi, [inc], paths=paths, zone=zone if zone is not None else case.tz, hosts=hosts)
