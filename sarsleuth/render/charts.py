"""Small line charts for the HTML report, drawn as inline SVG by hand
(hundreds of them cost what one matplotlib figure does): one metric over
time, its peaks kept (min and max of each pixel column), time labelled on
every chart, the incident window shaded and log events marked.

Each chart is drawn for a box of :data:`WIDTH` x :data:`HEIGHT` units
that the page scales to its column (a grid cell of 300 to 600 pixels), so
its text stays between 9 and 18 pixels high at any screen width; labels
are placed apart by construction (at most :data:`TIME_LABELS` times, three
values)."""
from __future__ import annotations

import math
from html import escape

import numpy as np
import pandas as pd

from sarsleuth.render.table import number

WIDTH, HEIGHT = 360, 150
LEFT, RIGHT, TOP, BOTTOM = 46, 8, 8, 20
#: Time labels under a chart: at most this many, so that none touches the next.
TIME_LABELS = 4
#: Points of a line: two per pixel column (its min and max).
COLUMNS = 160
STEPS = [1, 2, 5, 10, 15, 20, 30, 60, 120, 180, 300, 600, 900, 1200, 1800, 3600, 7200, 10800, 14400, 21600,
         43200, 86400,
         2 * 86400, 7 * 86400, 14 * 86400, 30 * 86400, 91 * 86400, 182 * 86400, 365 * 86400]


def time_ticks(lo, hi, most: int, steps=None):
    """Round times between ``lo`` and ``hi``, at most ``most`` of them (one
    more where that many would leave fewer than two), as (time, label)
    pairs, and the step; the label says the date when the step is a day or
    more, the seconds when it is under a minute."""
    steps = steps or STEPS
    seconds = max((hi - lo).total_seconds(), 1.0)
    k = next((i for i, s in enumerate(steps) if seconds / s <= most), len(steps) - 1)
    out = _ticks_every(lo, hi, steps[k])
    if len(out) < 2 and k > 0:
        k -= 1
        out = _ticks_every(lo, hi, steps[k])
    return out[:most + 1], steps[k]


def _ticks_every(lo, hi, step: int) -> list:
    if step >= 86400:
        first = lo.normalize() + pd.Timedelta(days=1) if lo != lo.normalize() else lo
        fmt = "%Y-%m-%d" if step >= 30 * 86400 else "%m-%d"
    else:
        first = lo.ceil(f"{step}s")
        fmt = "%H:%M:%S" if step < 60 else "%H:%M"
    out, t = [], first
    while t <= hi and len(out) < 40:
        out.append((t, t.strftime(fmt)))
        t = t + pd.Timedelta(seconds=step)
    return out


def _nice(lo: float, hi: float) -> list[float]:
    """Three round values from at most ``lo`` to at least ``hi`` (the y labels)."""
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    mag = 10 ** math.floor(math.log10((hi - lo) / 2))
    for step in (m * mag for m in (1, 2, 2.5, 5, 10, 20, 25, 50, 100)):
        start = math.floor(lo / step) * step
        if start + 2 * step >= hi:
            return [start, start + step, start + 2 * step]
    return [lo, (lo + hi) / 2, hi]


def _number(v: float) -> str:
    if abs(v) >= 1e6:
        return f"{v / 1e6:g}M"
    if abs(v) >= 1e4:
        return f"{v / 1e3:g}k"
    return number(v)


def decimated(series, columns: int = COLUMNS):
    """(times, values) of a series kept to the min and max of each column."""
    values = series.to_numpy(dtype=float)
    index = series.index
    n = len(values)
    if n <= 2 * columns:
        return index, values
    edges = np.linspace(0, n, columns + 1).astype(int)
    keep = []
    for a, b in zip(edges[:-1], edges[1:]):
        chunk = values[a:b]
        if b <= a or np.all(np.isnan(chunk)):
            continue
        keep.extend(sorted({a + int(np.nanargmin(chunk)), a + int(np.nanargmax(chunk))}))
    return index[keep], values[keep]


def chart_svg(series, lo=None, hi=None, window=None, events=(), label: str = "") -> str:
    """One metric as an SVG line chart (its time axis labelled); ``window``:
    (start, end) shaded; ``events``: times marked by a thin line."""
    series = series.dropna()
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
    times, values = decimated(series)
    vmin, vmax = float(np.nanmin(values)), float(np.nanmax(values))
    ticks_y = _nice(min(vmin, 0.0) if vmin >= 0 else vmin, vmax)
    ylo, yhi = ticks_y[0], max(ticks_y[-1], vmax)
    if yhi <= ylo:
        yhi = ylo + 1

    def x(t) -> float:
        return LEFT + max(0.0, min(1.0, (t - lo).total_seconds() / span)) * pw

    def y(v) -> float:
        return TOP + ph - (v - ylo) / (yhi - ylo) * ph

    # the label (names from inputs) as the chart's <title>, never in an attribute
    out = [f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" role="img">'
           f'<title>{escape(label)}</title>',
           f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="#fbfcfd" stroke="#d9dee3"/>']
    if window is not None:
        try:
            a, b = x(pd.Timestamp(window[0])), x(pd.Timestamp(window[1]))
            out.append(f'<rect x="{a:.1f}" y="{TOP}" width="{max(b - a, 1.5):.1f}" height="{ph}" fill="#ffb74d" '
                       'fill-opacity="0.25"/>')
        except TypeError:
            pass
    for t in events:
        try:
            if lo <= t <= hi:
                out.append(f'<line x1="{x(t):.1f}" y1="{TOP}" x2="{x(t):.1f}" y2="{TOP + ph}" stroke="#8e24aa" '
                           'stroke-opacity="0.5"/>')
        except TypeError:
            continue
    for v in ticks_y:
        if ylo <= v <= yhi:
            out.append(f'<line x1="{LEFT}" y1="{y(v):.1f}" x2="{LEFT + pw}" y2="{y(v):.1f}" stroke="#e6e9ec"/>'
                       f'<text class="yt" x="{LEFT - 4}" y="{y(v) + 3.5:.1f}" text-anchor="end">{_number(v)}</text>')
    points = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in zip(times, values) if v == v)
    out.append(f'<polyline fill="none" stroke="#1565c0" stroke-width="1.3" points="{points}"/>')
    ticks, _step = time_ticks(lo, hi, TIME_LABELS)
    for i, (t, text) in enumerate(ticks):
        tx = x(t)
        # the labels at either end stay inside the chart
        anchor = "start" if tx - LEFT < 22 else "end" if LEFT + pw - tx < 22 else "middle"
        out.append(f'<line x1="{tx:.1f}" y1="{TOP + ph}" x2="{tx:.1f}" y2="{TOP + ph + 3}" stroke="#5b6570"/>'
                   f'<text class="xt" x="{tx:.1f}" y="{HEIGHT - 5}" text-anchor="{anchor}">{escape(text)}</text>')
    out.append("</svg>")
    return "".join(out)


CHART_STYLE = (".chart{display:block;width:100%;height:auto}.chart text{font:10px sans-serif;fill:#3b4550}")
