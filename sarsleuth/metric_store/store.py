"""Runs of every series of a source or a case, keyed by host, section, device and metric."""
from __future__ import annotations

import numpy as np
import pandas as pd

from sarsleuth.metric_store.runs import (KEY_COLUMNS, _index, _stamps_of, _timestamp, empty_long, joined_series,
                                         run_series)


class MetricStore:
    """Runs keyed by ``(host, section, device, metric)`` (host None when
    the source names none; device "" for a section without devices), in
    the order the reader wrote them."""

    def __init__(self, runs: dict | None = None):
        self.runs: dict = dict(runs or {})

    # ------------------------------------------------------------------ size
    def __len__(self) -> int:
        return sum(run.count for run in self.runs.values())

    def __bool__(self) -> bool:
        return bool(self.runs)

    def __repr__(self) -> str:
        return f"<MetricStore {len(self.runs)} series, {self.nbytes / 1e6:.1f} MB>"

    @property
    def nbytes(self) -> int:
        """Bytes held: values, plus each distinct time and line array once."""
        seen: dict = {}
        total = 0
        for run in self.runs.values():
            total += run.values.nbytes
            for arr in (run.stamps, run.lines):
                if arr is not None and id(arr) not in seen:
                    seen[id(arr)] = arr
                    total += arr.nbytes
        return total

    # ---------------------------------------------------------------- labels
    def sections(self) -> list:
        return list(dict.fromkeys(k[1] for k in self.runs))

    def hosts(self) -> list:
        """Hosts named by the series (None not included)."""
        return list(dict.fromkeys(k[0] for k in self.runs if k[0] is not None))

    def has_lines(self) -> bool:
        return any(run.lines is not None for run in self.runs.values())

    def zones(self) -> list:
        return list(dict.fromkeys(run.tz for run in self.runs.values()))

    # ----------------------------------------------------------------- times
    def _distinct(self, host=None) -> list:
        """[(time array, zone)] of the runs of ``host`` (None: every host),
        each shared array once."""
        seen: dict = {}
        for key, run in self.runs.items():
            if host is None or key[0] == host:
                seen.setdefault(id(run.stamps), (run.stamps, run.tz))
        return list(seen.values())

    def span(self):
        """(first, last) sample time as Timestamps, or (None, None)."""
        lows, highs = [], []
        for stamps, tz in self._distinct():
            real = stamps[stamps != np.iinfo(np.int64).min]     # NaT
            if len(real):
                lows.append(_timestamp(int(real.min()), tz))
                highs.append(_timestamp(int(real.max()), tz))
        if not lows:
            return None, None
        try:
            return min(lows), max(highs)
        except TypeError:      # naive and aware times: compared on the wall clock
            walls = [t.tz_localize(None) if t.tzinfo else t for t in lows + highs]
            return min(walls), max(walls)

    def map_times(self, fn) -> None:
        """Replace every time by ``fn(times)``, ``times`` a Series of
        timestamps; each distinct time array is converted once and stays
        shared."""
        done: dict = {}
        for run in self.runs.values():
            key = (id(run.stamps), str(run.tz))
            if key not in done:
                out = fn(pd.Series(_index(run.stamps, run.tz)))
                done[key] = _stamps_of(out)
            run.stamps, run.tz = done[key]

    def fill_host(self, host) -> None:
        """Series that named no host belong to ``host``."""
        if not any(k[0] is None for k in self.runs):
            return
        runs = {}
        for (h, sec, dev, met), run in self.runs.items():
            runs.setdefault((host if h is None else h, sec, dev, met), run)
        self.runs = runs

    def rename_hosts(self, rename: dict) -> None:
        """Series of a host named ``old`` belong to ``rename[old]`` (one
        host spelled two ways); where both hold a series, the first kept."""
        runs = {}
        for (h, sec, dev, met), run in self.runs.items():
            runs.setdefault((rename.get(h, h), sec, dev, met), run)
        self.runs = runs

    def sample_times(self, host=None):
        """Sorted distinct times at which ``host`` (every host: None)
        recorded anything, as a Series of timestamps."""
        parts = self._distinct(host)
        if not parts:
            return pd.Series([], dtype="datetime64[ns]")
        stamps = np.unique(np.concatenate([s for s, _tz in parts]))
        return pd.Series(_index(stamps, parts[-1][1]))

    def sections_at(self, host, when) -> set:
        """The sections (tables) of ``host`` with a sample at ``when``, a
        time of :meth:`sample_times`."""
        out, checked = set(), {}
        for (h, section, _device, _metric), run in self.runs.items():
            if h != host or section in out:
                continue
            key = id(run.stamps)
            if key not in checked:
                # a wall clock beside an instant cannot be compared: taken as sampled there
                checked[key] = (run.tz is None) != (when.tzinfo is None) or bool(
                    (run.stamps == int(_stamps_of([when])[0][0])).any())
            if checked[key]:
                out.add(section)
        return out

    # ---------------------------------------------------------------- series
    def section_index(self, section: str) -> dict:
        """``{(metric, device, host): key}`` of one section."""
        return {(k[3], k[2], k[0]): k for k in self.runs if k[1] == section}

    def series(self, key):
        """One series as a float64 Series on a DatetimeIndex, in time order,
        one value per time (the first seen), times without a value left
        out; None when absent."""
        run = self.runs.get(key)
        return None if run is None else run_series(run)

    def grouped(self, section: str, by, *, host=None, metric=None, device=None) -> dict:
        """``{by(key): Series}`` of the section's series of ``host`` (None:
        every host), ``metric`` and ``device`` (None: any); the pieces of one
        label (several hosts or sources) joined in time order, one value per
        time (the first piece's)."""
        found: dict = {}
        for key in self.runs:
            if key[1] != section or host is not None and key[0] != host:
                continue
            if metric is not None and key[3] != metric or device is not None and key[2] != device:
                continue
            series = self.series(key)
            if series is not None and len(series):
                found.setdefault(by(key), []).append(series)
        return {label: parts[0] if len(parts) == 1 else joined_series(parts) for label, parts in found.items()}

    def select(self, keep) -> "MetricStore":
        """The series whose key ``keep(key)`` accepts (arrays shared)."""
        return MetricStore({k: r for k, r in self.runs.items() if keep(k)})

    # ------------------------------------------------------------ long table
    def to_long(self, *, lines: bool | None = None):
        """The contract's long table (``METRIC_COLUMNS``, plus ``line`` when
        values came from a text file): one row per value, labels as
        categoricals, in time order (series in their stored order within a
        time)."""
        runs = list(self.runs.items())
        with_lines = self.has_lines() if lines is None else lines
        if not runs:
            frame = empty_long()
            if with_lines:
                frame["line"] = pd.Series([], dtype="Int64")
            return frame
        zones = list(dict.fromkeys(str(r.tz) if r.tz is not None else None for _k, r in runs))
        rows = _rows_in_time_order(runs, with_lines, len(zones) == 1)
        stamps, values, which, line = rows
        columns = {"timestamp": None}
        for pos, name in enumerate(KEY_COLUMNS):
            labels = [k[pos] for k, _r in runs]
            categories = list(dict.fromkeys(str(x) for x in labels if x is not None))
            code_of = {c: i for i, c in enumerate(categories)}
            codes = np.array([-1 if x is None else code_of[str(x)] for x in labels],
                             dtype=_code_type(len(categories)))
            columns[name] = pd.Categorical.from_codes(codes[which], categories=pd.Index(categories, dtype=object),
                                                      validate=False)
        if len(zones) == 1:
            columns["timestamp"] = _index(stamps, runs[0][1].tz)
        else:   # sources on different clocks: each time keeps its own
            columns["timestamp"] = pd.array([_timestamp(int(s), runs[i][1].tz) for s, i in zip(stamps, which)],
                                            dtype=object)
        columns["value"] = values
        if line is not None:
            columns["line"] = pd.arrays.IntegerArray(np.where(line < 0, 0, line).astype(np.int64), mask=line < 0)
        return pd.DataFrame(columns, copy=False)


def _rows_in_time_order(runs, with_lines: bool, sort: bool):
    """(times, values, run index, lines or None) of every value, in time
    order with the runs in their order within a time (``sort`` False, for
    runs on different clocks: run after run).  Runs sharing one sorted time array (the usual sa file) are
    laid side by side as a matrix read row by row: no sort, no gather."""
    first = runs[0][1]
    shared = all(r.stamps is first.stamps and r.tz is first.tz for _k, r in runs)
    k = len(runs)
    if sort and shared and (len(first.stamps) < 2 or bool((first.stamps[1:] >= first.stamps[:-1]).all())):
        n = len(first.stamps)
        values = np.empty((n, k), dtype=np.float64)
        for j, (_k, run) in enumerate(runs):
            values[:, j] = run.values
        values = values.ravel()
        stamps = np.repeat(first.stamps, k)
        which = np.tile(np.arange(k, dtype=_code_type(k)), n)
        line = None
        if with_lines:
            line = np.full((n, k), -1, dtype=np.int32)
            for j, (_k, run) in enumerate(runs):
                if run.lines is not None:
                    line[:, j] = run.lines
            line = line.ravel()
        if any(r.values.dtype.kind == "f" for _k, r in runs):
            keep = ~np.isnan(values)
            if not keep.all():
                stamps, values, which = stamps[keep], values[keep], which[keep]
                line = line[keep] if line is not None else None
        return stamps, values, which, line
    keeps = [None if r.values.dtype.kind != "f" else ~np.isnan(r.values) for _k, r in runs]
    sizes = np.array([len(r.values) if keep is None else int(keep.sum()) for (_k, r), keep in zip(runs, keeps)],
                     dtype=np.int64)
    total = int(sizes.sum())
    stamps = np.empty(total, dtype=np.int64)
    values = np.empty(total, dtype=np.float64)
    line = np.full(total, -1, dtype=np.int32) if with_lines else None
    at = 0
    for ((_k, run), keep, n) in zip(runs, keeps, sizes):
        every = keep is None or keep.all()
        stamps[at:at + n] = run.stamps if every else run.stamps[keep]
        values[at:at + n] = run.values if every else run.values[keep]
        if line is not None and run.lines is not None:
            line[at:at + n] = run.lines if every else run.lines[keep]
        at += n
    which = np.repeat(np.arange(k, dtype=_code_type(k)), sizes)
    if sort:
        order = np.argsort(stamps, kind="stable")
        stamps, values, which = stamps[order], values[order], which[order]
        line = line[order] if line is not None else None
    return stamps, values, which, line


def _code_type(count: int):
    """The code type pandas gives a categorical of ``count`` categories."""
    return np.int8 if count < 127 else np.int16 if count < 32767 else np.int32
