"""Series reduced for drawing, their extremes kept: the time drawn is cut
into equal columns (a pixel's worth each) and each column keeps, for
every series drawn together, the sample where it is lowest and the one
where it is highest.  A day at a one-second interval then draws the same
peaks and troughs as the raw data, and every point drawn is a real sample
(its time and every series' value there), so a value read off a chart is
one the file holds.

This is the one reduction: the HTML report's charts, its explorer and the
matplotlib plots all call it."""
from __future__ import annotations

import numpy as np
import pandas as pd


def extreme_rows(times, values, columns: int, lo=None, hi=None) -> np.ndarray:
    """The rows to draw of ``values`` (an array of shape (n,) or (n, k),
    NaN where a series has no value) at ``times`` (ascending numbers):
    every row when there are at most two per column, else the first and
    last row and, in each of ``columns`` equal spans of time from ``lo``
    to ``hi`` (the first and last time by default), the rows where each
    series is lowest and highest (the first such row of each)."""
    times = np.asarray(times, dtype=np.float64)
    n = len(times)
    if n <= 2 * columns:
        return np.arange(n)
    matrix = np.asarray(values, dtype=np.float64)
    # a series at a time: each in one run of memory
    matrix = np.asfortranarray(matrix[:, None] if matrix.ndim == 1 else matrix)
    lo = times[0] if lo is None else lo
    hi = times[-1] if hi is None else hi
    edges = np.linspace(lo, hi, columns + 1)
    starts = np.searchsorted(times, edges[:-1], side="left")
    ends = np.append(starts[1:], np.searchsorted(times, hi, side="right"))
    full = ends > starts
    starts, ends = starts[full], ends[full]
    keep = [np.array([0, n - 1])]
    if len(starts):
        a, b = int(starts[0]), int(ends[-1])
        column = np.repeat(np.arange(len(starts)), ends - starts)
        offsets = starts - a
        for j in range(matrix.shape[1]):
            keep += _extremes(matrix[a:b, j], column, offsets, a)
    out = np.unique(np.concatenate(keep))
    return out[out < n]


def _extremes(v, column, offsets, at: int) -> list:
    """Rows (from ``at``) of the lowest and highest value of one series in
    each column; a series that never changes: its first and last value."""
    present = np.flatnonzero(~np.isnan(v))
    if not len(present):
        return []
    if v[present].min() == v[present].max():
        return [at + present[[0, -1]]]
    out = []
    for reduce in (np.fmin, np.fmax):
        # NaN is no value: fmin/fmax skip it (a column of NaN stays NaN and matches nothing)
        best = reduce.reduceat(v, offsets)[column]
        rows = np.flatnonzero(v == best)
        first = np.flatnonzero(np.diff(column[rows], prepend=-1))     # the first such row of each column
        out.append(at + rows[first])
    return out


def decimated(series: pd.Series, columns: int) -> pd.Series:
    """One series (time-indexed, in time order) reduced to the lowest and
    highest sample of each of ``columns`` equal spans of its time."""
    if len(series) <= 2 * columns:
        return series
    times = series.index.asi8 if isinstance(series.index, pd.DatetimeIndex) else series.index.to_numpy()
    rows = extreme_rows(times, series.to_numpy(dtype=float), columns)
    return series.iloc[rows]
