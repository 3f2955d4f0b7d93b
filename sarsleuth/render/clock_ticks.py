"""Time labels of every drawn axis (the HTML report's charts and
timelines, the ``--plots`` figures): round times on the clock the times
are given on, at most a given number of them, the seconds said when the
step is under a minute, the date said under the first label and wherever
it changes.  Times are Timestamps already on the clock of the heading
above the drawing (:func:`sarsleuth.timebase.clock.on_clock`)."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

#: Steps between labels, in seconds: round ones on a clock.
STEPS = [1, 2, 5, 10, 15, 20, 30, 60, 120, 180, 300, 600, 900, 1200, 1800, 3600, 7200, 10800, 14400, 21600,
         43200, 86400,
         2 * 86400, 7 * 86400, 14 * 86400, 30 * 86400, 91 * 86400, 182 * 86400, 365 * 86400]


@dataclass(frozen=True)
class Tick:
    """One label: its time, its text, and the date (``2014-05-06``) when it
    is the first label or the date changed since the one before."""

    at: pd.Timestamp
    label: str
    date: str = ""


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


def dated_ticks(lo, hi, most: int) -> list[Tick]:
    """:func:`time_ticks` with the date under the first label and under
    every label whose date differs from the label before it (labels that
    are dates already carry none)."""
    pairs, step = time_ticks(lo, hi, most)
    out, last = [], None
    for t, label in pairs:
        day = t.strftime("%Y-%m-%d")
        out.append(Tick(t, label, day if step < 86400 and day != last else ""))
        last = day
    return out


def _ticks_every(lo, hi, step: int) -> list:
    if step >= 86400:
        first = lo.normalize() + pd.Timedelta(days=1) if lo != lo.normalize() else lo
        fmt = "%Y-%m-%d" if step >= 30 * 86400 else "%m-%d"
    else:
        first = lo.ceil(f"{step}s", ambiguous=True, nonexistent="shift_forward") if lo.tzinfo else lo.ceil(f"{step}s")
        fmt = "%H:%M:%S" if step < 60 else "%H:%M"
    out, t = [], first
    while t <= hi and len(out) < 40:
        out.append((t, t.strftime(fmt)))
        t = t + pd.Timedelta(seconds=step)
    return out


def epoch_seconds(t) -> float:
    """Seconds since 1970 of a time: the instant when it knows its zone,
    its wall clock read as UTC when it does not (what a drawing's
    ``data-t`` says, so that a check can read the label again)."""
    t = pd.Timestamp(t)
    if t.tzinfo is not None:
        t = t.tz_convert("UTC").tz_localize(None)
    return (t - pd.Timestamp(0)).total_seconds()
