"""Log messages as series: each message kind of each program, counted as
lines a minute, compared with its own baseline as the sar series are
(:mod:`sarsleuth.analysis.departure_stats`), on the same clock.

The window's rate is its lines over its length; the baseline's level is the
median rate of baseline stretches as long as the window (at most a third of
the baseline), its spread their median absolute deviation.  A count of
lines is never known better than a Poisson count: the spread is at least
the square root of the lines the baseline's rate gives the window (and at
least one line), so that one line where there were none is not a
departure of its own, while hundreds are.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from sarsleuth.analysis.departure_stats import new_change
from sarsleuth.knowledge.departures import LOG_SECTION, LOG_UNIT, floor_of

MINUTE_NS = 60 * 10**9
#: A window shorter than this is counted over this long (a finding at one instant).
MIN_WINDOW_NS = 10**9


@dataclass
class EventSeries:
    """One message kind of one program: its times (ns) and lines at each."""

    key: tuple           # (host, "log", program, kind)
    times: np.ndarray
    lines: np.ndarray


def event_series(events, host, tz_aware: bool, not_messages) -> list:
    """Every message kind of every program of ``host`` in ``events`` (rows
    on the shared clock only)."""
    if events is None or not len(events):
        return []
    ev = events[(events["host"].astype(object) == host).to_numpy()]
    ev = ev[~ev["kind"].astype(str).isin(list(not_messages)) & ev["timestamp"].notna()]
    if "aligned" in ev.columns:
        ev = ev[ev["aligned"].fillna(True).astype(bool).to_numpy()]
    if not len(ev):
        return []
    stamps = instants(ev["timestamp"], tz_aware)
    lines = pd.to_numeric(ev["count"], errors="coerce") if "count" in ev.columns else None
    if lines is None or lines.isna().all():
        lines = pd.to_numeric(ev.get("repeats"), errors="coerce")
    lines = lines.fillna(1).to_numpy(dtype=float)
    process = ev["process"].astype(object)
    program = np.where(process.map(lambda p: isinstance(p, str) and bool(p)).to_numpy(dtype=bool),
                       process.to_numpy(), ev["source"].astype(object).to_numpy())
    frame = pd.DataFrame({"program": program.astype(str), "kind": ev["kind"].astype(str).to_numpy(),
                          "t": stamps, "n": lines})
    frame = frame[frame["t"] != np.iinfo(np.int64).min]
    out = []
    for (prog, kind), part in frame.groupby(["program", "kind"], sort=True):
        order = np.argsort(part["t"].to_numpy(), kind="stable")
        out.append(EventSeries(key=(host, LOG_SECTION, prog, kind), times=part["t"].to_numpy()[order],
                               lines=part["n"].to_numpy()[order]))
    return out


def instants(times, tz_aware: bool) -> np.ndarray:
    """Timestamps as int64 ns: UTC when ``tz_aware``, else the wall clock."""
    if isinstance(times.dtype, pd.DatetimeTZDtype):
        index = pd.DatetimeIndex(times)
        return (index.tz_convert("UTC") if tz_aware else index.tz_localize(None)).as_unit("ns").asi8
    if times.dtype.kind == "M":
        return pd.DatetimeIndex(times).as_unit("ns").asi8
    parsed = [pd.Timestamp(t) for t in times]
    return np.array([(t.tz_convert("UTC") if tz_aware else t.tz_localize(None)).value if t.tzinfo is not None
                     else t.value for t in parsed], dtype=np.int64)


def _lines_between(times, cumulative, start, end):
    """Lines of ``times`` in ``[start, end)``, for arrays of starts and ends."""
    return cumulative[np.searchsorted(times, end, "left")] - cumulative[np.searchsorted(times, start, "left")]


def rates(series: EventSeries, window: tuple, parts: dict, stats: dict) -> dict | None:
    """The series' departure: window and baseline rates (lines a minute),
    z and change against the part of the baseline it departs least from;
    None when no part holds any time."""
    w0, w1 = window
    span = max(w1 - w0, MIN_WINDOW_NS)
    cumulative = np.concatenate(([0.0], np.cumsum(series.lines)))
    # the window holds its last instant (an incident ends at its last line)
    in_window = float(_lines_between(series.times, cumulative, np.array([w0]), np.array([w0 + span + 1]))[0])
    rate = in_window / span * MINUTE_NS
    scale = float(stats["robust_scale"])
    floor = floor_of(LOG_UNIT)
    best = None
    for name, spans in parts.items():
        total = sum(b - a for a, b in spans)
        if total <= 0:
            continue
        length = min(span, max(total // 3, 1))
        counts = []
        for a, b in spans:
            room = b - a - length
            if room < 0:
                continue
            starts = np.linspace(a, a + room, num=min(int(stats["max_blocks"]), max(1, room // max(1, length // 4) + 1)),
                                 dtype=np.int64)
            counts.append(_lines_between(series.times, cumulative, starts, starts + length))
        if not counts:
            continue
        block = np.concatenate(counts) / length * MINUTE_NS
        level = float(np.median(block))
        spread = scale * float(np.median(np.abs(block - level)))
        lines = sum(float(_lines_between(series.times, cumulative, np.array([a]), np.array([b]))[0]) for a, b in spans)
        # Jeffreys' half line: a baseline without a line still allows some
        expected = (lines + 0.5) / total * span
        poisson = np.sqrt(expected) / span * MINUTE_NS
        z = (rate - level) / max(spread, poisson)
        noise = max(floor, spread, float(stats["relative_noise"]) * max(abs(level), abs(rate)))
        change = float(np.arcsinh(rate / noise) - np.arcsinh(level / noise))
        before = lines
        new = bool(in_window and not before and (total >= span or total >= float(stats["new_after_seconds"]) * 1e9))
        if new:
            change = new_change(stats)
        found = {"part": name, "baseline": level, "spread": spread, "z": z, "change": change, "new": new,
                 "baseline_from": spans[0][0], "baseline_to": spans[-1][1], "baseline_lines": before,
                 "baseline_samples": len(block)}
        if best is None or abs(change) < abs(best["change"]):
            best = found
    if best is None:
        return None
    peak_at = series.times[np.searchsorted(series.times, w0, "left")] if in_window else None
    return {**best, "window": rate, "window_lines": in_window, "window_samples": int(in_window),
            "window_from": w0, "window_to": w0 + span, "peak": rate, "peak_at": peak_at}
