"""The statistics of what changed, over many series at once.

Series sampled at the same instants are rows of one matrix (NaN where a
series has no value); every statistic is taken along the rows with numpy,
never with a Python loop over samples.

For each series and each part of its baseline:

- the window's level is its average (what sar's ``Average:`` line would
  print for those rows);
- the baseline's level is the median of the averages of baseline stretches
  as long as the window (at most a third of the baseline, so that there
  are several), and their spread the median absolute deviation of those
  averages, scaled to a standard deviation.  Comparing an average with
  averages of the same length makes a spiky series (mostly 0, bursts now
  and then) as ordinary in the window as it was before, and lets the
  spread follow the sampling interval: 86,400 one-second samples and six
  ten-minute ones are each compared with what they are;
- the spread of single samples (robustly, on at most a few thousand of
  them) bounds that spread from below, so that averaging over a long
  window never makes a tiny shift look certain.

The departure of the window is then ``z`` (how many spreads its level is
from the baseline's) and ``change``: ``asinh(window / c) - asinh(baseline
/ c)`` with ``c`` the series' noise (its spread, or the floor of its
unit).  ``change`` is linear within the noise and logarithmic beyond it (a
doubling counts the same at 2 and at 2,000, as pmdiff's ratio), and a
series leaving zero is measured against its noise instead of dividing by
zero.  See docs/what-changed.md.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Elements of a matrix handled at once (rows x samples): bounds memory.
CHUNK_ELEMENTS = 1 << 22


@dataclass
class Level:
    """One part's baseline, per row: its level, the spread of averages as
    long as the window, the spread of single samples, and its samples."""

    level: np.ndarray
    spread: np.ndarray
    sample_spread: np.ndarray
    samples: np.ndarray


@dataclass
class Window:
    """The window, per row: its average, samples, and its highest and
    lowest values with their positions (in the window's rows)."""

    mean: np.ndarray
    samples: np.ndarray
    high: np.ndarray
    high_at: np.ndarray
    low: np.ndarray
    low_at: np.ndarray


def row_medians(a):
    """Row medians, NaN ignored (rows all NaN give NaN); numpy's nanmedian
    goes through masked arrays on short rows, many times slower than a
    plain median, and most rows hold no NaN."""
    if not a.shape[1]:
        return np.full(a.shape[0], np.nan)
    if not np.isnan(a).any():
        return np.median(a, axis=1)
    with np.errstate(all="ignore"):
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.nanmedian(a, axis=1)


def _mad(a, center, scale: float):
    return scale * row_medians(np.abs(a - center[:, None]))


def window_stats(matrix, lo: int, hi: int) -> Window:
    """The window's average and extremes, per row of ``matrix[:, lo:hi]``."""
    part = matrix[:, lo:hi]
    k = matrix.shape[0]
    present = ~np.isnan(part)
    samples = present.sum(axis=1)
    filled = np.where(present, part, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = filled.sum(axis=1) / samples
    if not part.shape[1]:
        empty = np.full(k, np.nan)
        return Window(mean, samples, empty, np.zeros(k, int), empty, np.zeros(k, int))
    high_at = np.argmax(np.where(present, part, -np.inf), axis=1)
    low_at = np.argmin(np.where(present, part, np.inf), axis=1)
    rows = np.arange(k)
    high, low = part[rows, high_at], part[rows, low_at]
    return Window(mean, samples, high, high_at, low, low_at)


def new_change(stats: dict) -> float:
    """The change of a series that is new in the window (a message kind
    never logged in its baseline, an error counter that never counted):
    the largest the scale gives, a level of 1 over a noise of
    ``relative_noise`` of it."""
    return float(np.arcsinh(1.0 / float(stats["relative_noise"])))


def none_before(matrix, pieces: list, lo: int, hi: int, least: int) -> np.ndarray:
    """Per row: nothing but zeros in every present baseline sample (at
    least ``least`` of them), and something in most of the window's rows
    (half of them, two at least): a counter that never counted, counting
    now, not a sporadic one."""
    k = matrix.shape[0]
    counted, nonzero = np.zeros(k, dtype=int), np.zeros(k, dtype=bool)
    for a, b in pieces:
        part = matrix[:, a:b]
        counted += (~np.isnan(part)).sum(axis=1)
        nonzero |= (np.nan_to_num(part) != 0).any(axis=1)
    quiet = (counted >= least) & ~nonzero
    window = matrix[:, lo:hi]
    held = (np.nan_to_num(window) != 0).sum(axis=1)
    samples = (~np.isnan(window)).sum(axis=1)
    return quiet & (held >= np.maximum(2, (samples + 1) // 2))


def block_length(window_rows: int, baseline_rows: int) -> int:
    """Rows in each baseline stretch: the window's, at most a third of the baseline."""
    return max(1, min(window_rows, baseline_rows // 3))


def baseline_level(matrix, pieces: list, length: int, stats: dict) -> Level:
    """Level and spreads of one baseline part (``pieces`` of rows), per row."""
    k = matrix.shape[0]
    scale = float(stats["robust_scale"])
    blocks, singles = [], []
    room = sum(max(0, b - a - length + 1) for a, b in pieces)
    stride = max(1, -(-room // int(stats["max_blocks"])))
    total = sum(b - a for a, b in pieces)
    every = max(1, -(-total // int(stats["max_spread_samples"])))
    for a, b in pieces:
        values = matrix[:, a:b]
        present = ~np.isnan(values)
        sums = np.zeros((k, b - a + 1))
        counts = np.zeros((k, b - a + 1))
        np.cumsum(np.where(present, values, 0.0), axis=1, out=sums[:, 1:])
        np.cumsum(present, axis=1, out=counts[:, 1:])
        starts = np.arange(0, b - a - length + 1, stride)
        if len(starts):
            with np.errstate(invalid="ignore", divide="ignore"):
                blocks.append((sums[:, starts + length] - sums[:, starts]) / (counts[:, starts + length]
                                                                             - counts[:, starts]))
        singles.append(values[:, ::every])
    means = np.concatenate(blocks, axis=1) if blocks else np.full((k, 1), np.nan)
    samples = np.concatenate(singles, axis=1) if singles else np.full((k, 1), np.nan)
    level = row_medians(means)
    spread = _mad(means, level, scale)
    sample_level = row_medians(samples)
    return Level(level=level, spread=np.nan_to_num(spread), sample_spread=np.nan_to_num(_mad(samples, sample_level,
                                                                                               scale)),
                 samples=(~np.isnan(samples)).sum(axis=1) * every)


def departure(window_mean, level: Level, floors, bounded, stats: dict) -> tuple:
    """``(z, change)`` of a window's averages against one baseline part.
    ``bounded`` rows are shares of a whole (sar's percentages): measured
    from both ends, the share used and the share left, the larger change
    counts (90 % to 100 % used is the room left going from 10 % to none)."""
    spread = np.maximum.reduce([level.spread, float(stats["min_block_share"]) * level.sample_spread,
                                np.full(len(floors), float(stats["resolution"]))])
    noise = np.maximum.reduce([floors, level.spread,
                               float(stats["relative_noise"]) * np.maximum(np.abs(level.level), np.abs(window_mean))])
    with np.errstate(invalid="ignore", divide="ignore"):
        z = (window_mean - level.level) / spread
        change = np.arcsinh(window_mean / noise) - np.arcsinh(level.level / noise)
        # the room left is none past the bound (%commit runs over 100 %)
        left = (np.arcsinh(np.maximum(100.0 - level.level, 0.0) / noise)
                - np.arcsinh(np.maximum(100.0 - window_mean, 0.0) / noise))
    change = np.where(bounded & (np.abs(left) > np.abs(change)), left, change)
    return z, change


def row_chunks(count: int, width: int):
    """Slices of rows so that each chunk holds at most CHUNK_ELEMENTS values."""
    step = max(1, CHUNK_ELEMENTS // max(1, width))
    for start in range(0, count, step):
        yield slice(start, min(count, start + step))
