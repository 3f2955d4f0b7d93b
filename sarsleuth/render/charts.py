"""The HTML report's incident charts, drawn as inline SVG by hand (they
read without a script: printed, or in a viewer that runs none): one
metric over the incident and its lead-up, its extremes kept
(:mod:`sarsleuth.render.decimation`), the value axis fitted to the data and
labelled with the unit sar prints, the time axis on the clock of the
heading above it with the date under the first label and where it
changes, the incident window shaded and its log events marked.

Each chart is drawn for a box of :data:`WIDTH` x :data:`HEIGHT` units
that the page scales to its column (a grid cell of 280 to 600 pixels), so
its text stays between 9 and 18 pixels high at any screen width; labels
are placed apart by construction (at most :data:`TIME_LABELS` times, three
or four values).  Each time label carries its instant (``data-t``, seconds
since 1970; the wall clock read as UTC when the zone is unknown), so that
a check can read it again on the heading's clock."""
from __future__ import annotations

import math
from html import escape

import numpy as np
import pandas as pd

from sarsleuth.render.clock_ticks import dated_ticks, epoch_seconds
from sarsleuth.render.decimation import decimated
from sarsleuth.render.table import number
from sarsleuth.timebase.clock import on_clock

WIDTH, HEIGHT = 360, 164
LEFT, RIGHT, TOP, BOTTOM = 46, 10, 16, 32
#: Time labels under a chart: at most this many, so that none touches the next.
TIME_LABELS = 4
#: Points of a line: two per column of the plot (its lowest and highest sample).
COLUMNS = 160
#: Room left above and below the data, as a share of its range: a flat
#: line at the top or bottom of its range stays visible, off the frame.
PAD = 0.08


def _numbers(values) -> list[str]:
    """An axis' labels in one scale (``5k, 10k, 15k``, never ``5,000, 10k``)."""
    top = max((abs(v) for v in values), default=0.0)
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e4, "k")):
        if top >= size:
            return [f"{v / (size if suffix != 'k' else 1e3):g}{suffix}" if v else "0" for v in values]
    return [number(v) for v in values]


def value_range(vmin: float, vmax: float) -> tuple[float, float, list[float]]:
    """(bottom, top, labels) of a value axis fitted to data from ``vmin``
    to ``vmax``: round labels (two to four) inside, the data clear of the
    frame; data never below zero gets no label below zero."""
    if not (math.isfinite(vmin) and math.isfinite(vmax)):
        vmin = vmax = 0.0
    if vmax - vmin <= abs(vmax) * 1e-9:
        half = abs(vmax) * 0.05 or 0.5
        vmin, vmax = vmin - half, vmax + half
        if vmin < 0 <= vmax - half:
            vmin = 0.0
    span = vmax - vmin
    bottom, top = vmin - PAD * span, vmax + PAD * span
    mag = 10 ** math.floor(math.log10(span / 3))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10, 20, 25, 50) if span / (m * mag) <= 4)
    floor = 0.0 if vmin >= 0 else bottom
    first = math.ceil(max(bottom, floor) / step - 1e-9) * step
    labels = []
    v = first
    while v <= top + 1e-9 * abs(top) and len(labels) < 6:
        labels.append(round(v, 10))
        v += step
    return bottom, top, labels


def chart_svg(series, lo=None, hi=None, window=None, events=(), label: str = "", unit: str = "",
              zone=None, level: float | None = None) -> str:
    """One metric as an SVG line chart from ``lo`` to ``hi`` (its own span
    by default), on ``zone``'s clock (the series' own when None):
    ``window`` (start, end) shaded, ``events`` marked by thin lines,
    ``unit`` written above the value axis."""
    series = series.dropna()
    if zone is not None and getattr(series.index, "tz", None) is not None:
        series = series.tz_convert(str(zone))
        lo, hi = on_clock(lo, zone), on_clock(hi, zone)
    if lo is not None:
        series = series[(series.index >= lo) & (series.index <= hi)]
    if not len(series):
        return ""
    lo = series.index[0] if lo is None else lo
    hi = series.index[-1] if hi is None else hi
    if hi <= lo:
        hi = lo + pd.Timedelta(minutes=1)
    span = (hi - lo).total_seconds()
    pw, ph = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    shown = decimated(series, COLUMNS)
    times, values = shown.index, shown.to_numpy(dtype=float)
    low, high = float(np.nanmin(values)), float(np.nanmax(values))
    if level is not None and level == level:
        low, high = min(low, float(level)), max(high, float(level))
    ylo, yhi, ticks_y = value_range(low, high)

    def x(t) -> float:
        return LEFT + max(0.0, min(1.0, (t - lo).total_seconds() / span)) * pw

    def y(v) -> float:
        return TOP + ph - (v - ylo) / (yhi - ylo) * ph

    # the label (names from inputs) as the chart's <title>, never in an attribute
    out = [f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" role="img">'
           f'<title>{escape(label)}</title>',
           f'<rect class="plot" x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="#fbfcfd" stroke="#d9dee3"/>']
    if window is not None:
        try:
            a, b = x(pd.Timestamp(on_clock(window[0], zone))), x(pd.Timestamp(on_clock(window[1], zone)))
            out.append(f'<rect class="win" x="{a:.1f}" y="{TOP}" width="{max(b - a, 1.5):.1f}" height="{ph}" '
                       'fill="#ffb74d" fill-opacity="0.25"/>')
        except TypeError:
            pass
    for t in events:
        try:
            t = on_clock(t, zone)
            if lo <= t <= hi:
                out.append(f'<line x1="{x(t):.1f}" y1="{TOP}" x2="{x(t):.1f}" y2="{TOP + ph}" stroke="#8e24aa" '
                           'stroke-opacity="0.5"/>')
        except TypeError:
            continue
    for v, text in zip(ticks_y, _numbers(ticks_y)):
        out.append(f'<line x1="{LEFT}" y1="{y(v):.1f}" x2="{LEFT + pw}" y2="{y(v):.1f}" stroke="#e6e9ec"/>'
                   f'<text class="yt" x="{LEFT - 4}" y="{y(v) + 3.5:.1f}" text-anchor="end">{text}</text>')
    if unit:
        out.append(f'<text class="unit" x="{LEFT}" y="{TOP - 5}">{escape(unit)}</text>')
    if level is not None and level == level:        # a baseline's level, dashed
        out.append(f'<line class="level" x1="{LEFT}" y1="{y(level):.1f}" x2="{LEFT + pw}" y2="{y(level):.1f}" '
                   'stroke="#2e7d32" stroke-dasharray="4 3"/>')
    points = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in zip(times, values) if v == v)
    out.append(f'<polyline class="data" fill="none" stroke="#1565c0" stroke-width="1.3" points="{points}"/>')
    if len(times) == 1:        # one sample: a dot, or nothing would show
        out.append(f'<circle class="data" cx="{x(times[0]):.1f}" cy="{y(values[0]):.1f}" r="2" fill="#1565c0"/>')
    ticks = dated_ticks(lo, hi, TIME_LABELS)
    for i, tick in enumerate(ticks):
        tx = x(tick.at)
        # a date right before another (a label at 23:00, the next at 00:00) gives way to it
        dated = tick.date and not (i + 1 < len(ticks) and ticks[i + 1].date and x(ticks[i + 1].at) - tx < 70)
        # the labels at either end stay inside the chart
        anchor = "start" if tx - LEFT < 22 else "end" if LEFT + pw - tx < 22 else "middle"
        out.append(f'<line x1="{tx:.1f}" y1="{TOP + ph}" x2="{tx:.1f}" y2="{TOP + ph + 3}" stroke="#5b6570"/>'
                   f'<text class="xt" data-t="{epoch_seconds(tick.at):.0f}" x="{tx:.1f}" y="{TOP + ph + 14}" '
                   f'text-anchor="{anchor}">{escape(tick.label)}</text>')
        if dated:
            out.append(f'<text class="xd" x="{tx:.1f}" y="{TOP + ph + 26}" text-anchor="{anchor}">'
                       f'{escape(tick.date)}</text>')
    out.append("</svg>")
    return "".join(out)


CHART_STYLE = (".chart{display:block;width:100%;height:auto}.chart text{font:10px sans-serif;fill:#3b4550}"
               ".chart text.xd,.chart text.unit{fill:#5b6570}")
