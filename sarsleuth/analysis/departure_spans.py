"""Which records are the window and which are its baseline.

Times are int64 nanoseconds on one clock (a run's stamps: UTC for a zoned
run, the wall clock otherwise).  An sa row is stamped at the end of the
interval it averages: the window holds every row whose interval overlaps
it (the first row stamped at or after its start, through the row that
covers its end).  The baseline is, by default, the rows before the window
as far back as the lookback, never across a restart or a gap in the
records, and the same hours of the day before; where there is neither
(a recording that begins with the window), the rows after it; where
neither side alone holds enough rows (a few minutes kept every minute),
the rows on both sides together ("around"); or the span the user gave.
A part of the baseline is a list of pieces, each a run of rows with no
break inside, so that no average is taken across a restart or a gap.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

DAY_NS = 86_400 * 10**9
HOUR_NS = 3_600 * 10**9


@dataclass
class Rows:
    """The rows of one time array: the window ``[start, stop)``, the
    baseline's parts ({"before"|"day before"|"after"|"around"|"given": [(lo, hi), ...]}) and
    where the window was cut short by a restart or a gap (ns), if it was."""

    window: tuple
    parts: dict = field(default_factory=dict)
    cut_at: int | None = None

    @property
    def window_count(self) -> int:
        return self.window[1] - self.window[0]


@dataclass
class Breaks:
    """Where a time array's record breaks: ``ends`` the instants after
    which rows are comparable again (a restart, the first record after a
    gap), ``invalid`` the rows averaged across a gap."""

    starts: np.ndarray
    ends: np.ndarray
    invalid: np.ndarray
    step: int


def breaks_of(stamps, restarts, gap_steps: float) -> Breaks:
    """The breaks of a sorted time array: gaps (a step longer than
    ``gap_steps`` times the usual one) and ``restarts`` (ns instants)."""
    steps = np.diff(stamps)
    positive = steps[steps > 0]
    usual = int(np.median(positive)) if len(positive) else 0
    invalid = np.zeros(len(stamps), dtype=bool)
    starts, ends = [], []
    if usual > 0:
        at = np.flatnonzero(steps > gap_steps * usual)
        invalid[at + 1] = True
        starts += list(stamps[at])
        ends += list(stamps[at + 1])
    for r in restarts:
        starts.append(int(r))
        ends.append(int(r))
    order = np.argsort(np.asarray(starts, dtype=np.int64), kind="stable")
    return Breaks(starts=np.asarray(starts, dtype=np.int64)[order], ends=np.asarray(ends, dtype=np.int64)[order],
                  invalid=invalid, step=usual)


def _covering(stamps, start: int, end: int, step: int) -> tuple:
    """``[lo, hi)``: the rows whose interval overlaps ``[start, end]``."""
    lo = int(np.searchsorted(stamps, start, "left"))
    hi = int(np.searchsorted(stamps, end, "right"))
    if hi < len(stamps) and (stamps[hi - 1] < end if hi else stamps[0] - step < end):
        hi += 1          # the row after the end averages an interval that began inside it
    return lo, max(lo, hi)


def _pieces(stamps, lo: int, hi: int, breaks: Breaks, min_rows: int) -> list:
    """``[lo, hi)`` split at every break inside it, rows averaged across a
    gap left out; pieces shorter than ``min_rows`` dropped."""
    if hi <= lo:
        return []
    cuts = set()
    for end in breaks.ends:
        if stamps[lo] < end <= stamps[hi - 1]:
            cuts.add(int(np.searchsorted(stamps, end, "right")))
    bad = np.flatnonzero(breaks.invalid[lo:hi]) + lo
    edges = sorted({lo, hi} | cuts | set(bad.tolist()) | set((bad + 1).tolist()))
    out = []
    for a, b in zip(edges, edges[1:]):
        if a >= hi:
            break
        if breaks.invalid[a]:
            a += 1
        if b - a >= min_rows:
            out.append((a, b))
    return out


def row_spans(stamps, window: tuple, breaks: Breaks, rules: dict, baseline: tuple | None = None) -> Rows:
    """The window's rows and its baseline's pieces in a sorted time array."""
    min_rows = int(rules["min_samples"])
    w0, w1 = window
    lo, hi = _covering(stamps, w0, w1, breaks.step)
    while lo < hi and breaks.invalid[lo]:
        lo += 1
    cut_at = None
    if hi > lo:
        # the window stops at the first break inside it: after a restart the host is another one
        inside = [e for e in breaks.ends if stamps[lo] < e <= stamps[hi - 1]]
        if inside:
            cut_at = int(min(inside))
            hi = max(lo, int(np.searchsorted(stamps, cut_at, "left")))
    rows = Rows(window=(lo, hi), cut_at=cut_at)
    if baseline is not None:
        b_lo, b_hi = _covering(stamps, baseline[0], baseline[1], breaks.step)
        # a row of the window is never its own baseline (a row covering both ends)
        if b_lo < lo:
            b_hi = min(b_hi, lo)
        else:
            b_lo = max(b_lo, hi)
        parts = {"given": _pieces(stamps, b_lo, b_hi, breaks, min_rows)}
    else:
        parts = {"before": _before(stamps, lo, w0, breaks, rules, min_rows)}
        if rules.get("previous_day"):
            d_lo, d_hi = _covering(stamps, w0 - DAY_NS, w1 - DAY_NS, breaks.step)
            d_hi = min(d_hi, parts["before"][0][0] if parts["before"] else d_hi)
            parts["day before"] = _pieces(stamps, d_lo, d_hi, breaks, min_rows)
        if rules.get("after_when_none_before") and not any(parts.values()):
            # a recording that begins with the window: its calm after it is the one baseline there is
            parts["after"] = _after(stamps, hi, w1, breaks, rules, min_rows)
            if not parts["after"]:
                # a few minutes kept at a coarse interval: a row or so on each side, together
                parts["around"] = (_before(stamps, lo, w0, breaks, rules, 1)
                                   + _after(stamps, hi, w1, breaks, rules, 1))
    rows.parts = {name: pieces for name, pieces in parts.items()
                  if sum(b - a for a, b in pieces) >= min_rows}
    return rows


def _after(stamps, hi: int, w1: int, breaks: Breaks, rules: dict, min_rows: int) -> list:
    """The rows after the window, as far as the lookback reaches past it,
    stopping at the first break after it (a row averaged across a gap left
    out)."""
    stop = w1 + int(float(rules["lookback_hours"]) * HOUR_NS)
    for start in breaks.starts:
        if start >= (stamps[hi - 1] if hi else w1):
            stop = min(stop, int(start))
    b = int(np.searchsorted(stamps, stop, "right"))
    a = hi + 1 if hi < len(stamps) and breaks.invalid[hi] else hi
    return [(a, b)] if b - a >= min_rows else []


def _before(stamps, lo: int, w0: int, breaks: Breaks, rules: dict, min_rows: int) -> list:
    """The rows before the window back to the lookback, stopping at the
    last break before it."""
    start = w0 - int(float(rules["lookback_hours"]) * HOUR_NS)
    for end in breaks.ends:
        if end <= (stamps[lo] if lo < len(stamps) else w0):
            start = max(start, int(end))
    a = int(np.searchsorted(stamps, start, "right"))
    if a < lo and breaks.invalid[a]:
        a += 1
    return [(a, lo)] if lo - a >= min_rows else []


def time_spans(window: tuple, restarts, coverage: tuple, rules: dict, baseline: tuple | None = None) -> tuple:
    """For series of timed events (log lines): the window ``(start, end)``
    (cut at a restart inside it) and the baseline's parts as
    {name: [(start, end)]} in ns, within ``coverage`` (what the logs span)."""
    w0, w1 = window
    inside = [int(r) for r in restarts if w0 < r <= w1]
    if inside:
        w1 = min(inside)
    if baseline is not None:
        return (w0, w1), {"given": [(max(baseline[0], coverage[0]), min(baseline[1], coverage[1]))]}
    start = max(w0 - int(float(rules["lookback_hours"]) * HOUR_NS), coverage[0])
    for r in restarts:
        if r <= w0:
            start = max(start, int(r))
    parts = {"before": [(start, w0)]}
    if rules.get("previous_day") and coverage[0] <= w0 - DAY_NS:
        parts["day before"] = [(w0 - DAY_NS, min(w1 - DAY_NS, start))]
    return (w0, w1), {name: [(a, b) for a, b in spans if b > a] for name, spans in parts.items()}
