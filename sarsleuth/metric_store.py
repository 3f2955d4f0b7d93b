"""The metrics of a source or a case, held compactly: one run per series.

A series is ``(host, section, device, metric)``; its run holds its sample
times and its values.  Time arrays are shared by every series sampled at
the same instants (the metrics of one device, the devices of one sa
record), and each run's values sit in the narrowest type that gives every
one of them back exactly (``int8`` for a counter that stays at 0,
``float32`` where float32 returns the same double, ``float64`` otherwise).
A one-second day of sa data so takes about its file size in memory, where
the long table (21 bytes a value) took nearly three times it.

The long table of the contract (``case.metrics``, ``source.metrics``,
``parse --format csv``) is built from the store when asked for, in time
order.  Detectors read series straight from the runs.

numpy and pandas are imported inside functions: the command line's
``--help`` and ``sniff`` import this module's users without them.
"""
from __future__ import annotations

from dataclasses import dataclass

#: Label columns of the long table, in the order of a series key.
KEY_COLUMNS = ("host", "section", "device", "metric")


@dataclass(eq=False)
class Run:
    """The values of one series with their times (int64 nanoseconds: UTC
    when ``tz`` is set, wall clock when it is None) and, for values read
    from a text file, the line each was read from."""

    stamps: object
    values: object
    tz: object = None
    lines: object = None

    @property
    def count(self) -> int:
        """Values held (NaN marks a time the writer recorded nothing for
        this series, and does not count); counted once."""
        counted = self.__dict__.get("_count")
        if counted is None or counted[0] is not self.values:
            v = self.values
            if v.dtype.kind != "f":
                n = len(v)
            else:
                import numpy as np
                n = int(len(v) - np.count_nonzero(np.isnan(v)))
            counted = self.__dict__["_count"] = (v, n)
        return counted[1]

    @property
    def nbytes(self) -> int:
        return self.values.nbytes


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
    def _distinct(self, attr: str = "stamps") -> list:
        seen: dict = {}
        for run in self.runs.values():
            arr = getattr(run, attr)
            if arr is not None:
                seen.setdefault(id(arr), (arr, run.tz))
        return list(seen.values())

    def span(self):
        """(first, last) sample time as Timestamps, or (None, None)."""
        import numpy as np
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
        import pandas as pd
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

    def sample_times(self, host=None):
        """Sorted distinct times at which ``host`` (every host: None)
        recorded anything, as a Series of timestamps."""
        import numpy as np
        import pandas as pd
        parts, tz = [], None
        seen: set = set()
        for (h, _s, _d, _m), run in self.runs.items():
            if host is not None and h != host or id(run.stamps) in seen:
                continue
            seen.add(id(run.stamps))
            parts.append(run.stamps)
            tz = run.tz
        if not parts:
            return pd.Series([], dtype="datetime64[ns]")
        stamps = np.unique(np.concatenate(parts)) if len(parts) > 1 else np.unique(parts[0])
        return pd.Series(_index(stamps, tz))

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

    def select(self, keep) -> "MetricStore":
        """The series whose key ``keep(key)`` accepts (arrays shared)."""
        return MetricStore({k: r for k, r in self.runs.items() if keep(k)})

    # ------------------------------------------------------------ long table
    def to_long(self, *, sort: bool = True, lines: bool | None = None):
        """The contract's long table (``METRIC_COLUMNS``, plus ``line`` when
        values came from a text file): one row per value, labels as
        categoricals, in time order (series in their stored order within a
        time)."""
        import numpy as np
        import pandas as pd

        runs = list(self.runs.items())
        with_lines = self.has_lines() if lines is None else lines
        if not runs:
            frame = empty_long()
            if with_lines:
                frame["line"] = pd.Series([], dtype="Int64")
            return frame
        keeps = [None if r.values.dtype.kind != "f" else ~np.isnan(r.values) for _k, r in runs]
        sizes = np.array([len(r.values) if keep is None else int(keep.sum()) for (_k, r), keep in zip(runs, keeps)],
                         dtype=np.int64)
        total = int(sizes.sum())

        def gather(part, keep):
            return part if keep is None or keep.all() else part[keep]

        stamps = np.empty(total, dtype=np.int64)
        values = np.empty(total, dtype=np.float64)
        line = np.full(total, -1, dtype=np.int64) if with_lines else None
        at = 0
        for ((_k, run), keep, n) in zip(runs, keeps, sizes):
            stamps[at:at + n] = gather(run.stamps, keep)
            values[at:at + n] = gather(run.values, keep)
            if line is not None and run.lines is not None:
                line[at:at + n] = gather(run.lines, keep)
            at += n
        zones = list(dict.fromkeys(str(r.tz) if r.tz is not None else None for _k, r in runs))
        order = np.argsort(stamps, kind="stable") if sort and len(zones) == 1 else None
        columns = {"timestamp": None}
        for pos, name in enumerate(KEY_COLUMNS):
            labels = [k[pos] for k, _r in runs]
            categories = list(dict.fromkeys(str(x) for x in labels if x is not None))
            code_of = {c: i for i, c in enumerate(categories)}
            codes = np.array([-1 if x is None else code_of[str(x)] for x in labels], dtype=np.int32)
            codes = np.repeat(codes, sizes)
            if order is not None:
                codes = codes[order]
            columns[name] = pd.Categorical.from_codes(codes.astype(_code_type(len(categories))),
                                                      categories=pd.Index(categories, dtype=object), validate=False)
        if order is not None:
            stamps, values = stamps[order], values[order]
            if line is not None:
                line = line[order]
        if len(zones) == 1:
            columns["timestamp"] = _index(stamps, runs[0][1].tz)
        else:   # sources on different clocks: each time keeps its own
            per_run = np.repeat(np.arange(len(runs)), sizes)
            columns["timestamp"] = pd.array([_timestamp(int(s), runs[i][1].tz) for s, i in zip(stamps, per_run)],
                                            dtype=object)
        columns["value"] = values
        if line is not None:
            columns["line"] = pd.arrays.IntegerArray(np.where(line < 0, 0, line), mask=line < 0)
        return pd.DataFrame(columns, copy=False)

    @classmethod
    def from_long(cls, frame) -> "MetricStore":
        """The store of a long table (``METRIC_COLUMNS``, ``line`` kept when
        present).  Rows with a NaN value are dropped, as the long table
        never held them for a time the writer did not record."""
        import numpy as np
        import pandas as pd
        if frame is None or not len(frame):
            return cls()
        ts = frame["timestamp"]
        tz = getattr(ts.dt, "tz", None) if hasattr(ts, "dt") else None
        if ts.dtype == object:       # mixed clocks: each row parsed on its own
            ts = pd.to_datetime(ts, utc=True)
            tz = ts.dt.tz
        raw = _stamps_of(ts)[0]
        values = frame["value"].to_numpy(dtype=np.float64, na_value=np.nan)
        has_lines = "line" in frame.columns
        lines = (frame["line"].to_numpy(dtype=np.float64, na_value=np.nan) if has_lines else None)
        labels = frame[list(KEY_COLUMNS)]
        groups = labels.groupby(list(KEY_COLUMNS), observed=True, sort=False, dropna=False).indices
        builder = StoreBuilder()
        for key, pos in groups.items():
            key = tuple(None if _missing(x) else str(x) for x in key)
            key = (key[0], key[1] or "", key[2] or "", key[3] or "")
            line = None
            if lines is not None:
                picked = lines[pos]
                line = None if np.isnan(picked).all() else np.where(np.isnan(picked), -1, picked).astype(np.int64)
            builder.put(key, raw[pos], values[pos], tz=tz, lines=line)
        return builder.finish()


# ------------------------------------------------------------------ building

class StoreBuilder:
    """A store built a piece at a time (a reader's slices of records):
    pieces of a series are narrowed as they come and joined once at the end,
    and time arrays equal in content are kept once.  ``ranks`` (key ->
    order), shared by the builders of consecutive slices, keeps the
    series of every slice in the order of the whole file, so that their
    long tables put end to end are the whole file's."""

    def __init__(self, ranks: dict | None = None):
        self.pieces: dict = {}
        self.ranks = {} if ranks is None else ranks

    def put(self, key, stamps, values, *, tz=None, lines=None) -> None:
        """Append times and values to series ``key``."""
        import numpy as np
        if not len(values):
            return
        entry = self.pieces.get(key)
        if entry is None:
            entry = self.pieces[key] = ([], [], [], tz)
            self.ranks.setdefault(key, len(self.ranks))
        entry[0].append(np.asarray(stamps, dtype=np.int64))
        entry[1].append(narrowest(np.asarray(values)))
        # arrays already of the right type are kept as given: pieces shared by
        # several series (a device's times and lines) are joined once
        entry[2].append(None if lines is None else np.asarray(lines, dtype=np.int32))

    def finish(self) -> MetricStore:
        import numpy as np
        shared: dict = {}

        def once(arr):
            if arr is None:
                return None
            digest = (len(arr), arr.dtype.str, hash(arr.tobytes()))
            for seen in shared.get(digest, ()):
                if np.array_equal(seen, arr):
                    return seen
            shared.setdefault(digest, []).append(arr)
            return arr

        joined: dict = {}         # the same list of time pieces joins once
        runs = {}
        for key in sorted(self.pieces, key=self.ranks.__getitem__):
            stamp_parts, value_parts, line_parts, tz = self.pieces.pop(key)
            ids = tuple(id(p) for p in stamp_parts)
            stamps = joined.get(ids)
            if stamps is None:
                stamps = once(stamp_parts[0] if len(stamp_parts) == 1 else np.concatenate(stamp_parts))
                joined[ids] = stamps
            values = value_parts[0] if len(value_parts) == 1 else narrowest(np.concatenate(value_parts))
            if values.dtype.kind == "f" and np.isnan(values).all():
                continue          # a figure this writer never recorded: no series
            lines = None
            if any(p is not None for p in line_parts):
                ids = ("lines",) + tuple(id(p) for p in line_parts)
                lines = joined.get(ids)
                if lines is None:
                    lines = once(np.concatenate([np.full(len(v), -1, dtype=np.int32) if p is None else p
                                                 for p, v in zip(line_parts, value_parts)]))
                    joined[ids] = lines
            runs[key] = Run(stamps=stamps, values=values, tz=tz, lines=lines)
        return MetricStore(runs)


def combine(stores) -> tuple:
    """(one store of all, values counted once): a series held by several
    stores (the same sample from ``sa06`` and its ``sar -A`` rendering) keeps
    one value per time, the first store's."""
    import numpy as np
    stores = [s for s in stores if s]
    if len(stores) == 1:
        return stores[0], 0
    owners: dict = {}
    for store in stores:
        for key, run in store.runs.items():
            owners.setdefault(key, []).append(run)
    runs, merged = {}, 0
    for key, parts in owners.items():
        if len(parts) == 1:
            runs[key] = parts[0]
            continue
        # a time held by an earlier store counts once (that store's value);
        # a time repeated within one store (an autumn hour on a wall clock) stays
        stamps, values, lines = [], [], []
        seen = np.empty(0, dtype=np.int64)
        for part in parts:
            s, v = part.stamps, part.values.astype(np.float64)
            ln = part.lines if part.lines is not None else np.full(len(v), -1, dtype=np.int64)
            keep = ~np.isnan(v)
            new = keep & ~np.isin(s, seen)
            merged += int(keep.sum() - new.sum())
            stamps.append(s[new]), values.append(v[new]), lines.append(ln[new])
            seen = np.union1d(seen, s[new])
        stamps, values, lines = np.concatenate(stamps), np.concatenate(values), np.concatenate(lines)
        order = np.argsort(stamps, kind="stable")
        with_lines = any(p.lines is not None for p in parts)
        runs[key] = Run(stamps=stamps[order], values=narrowest(values[order]), tz=parts[0].tz,
                        lines=lines[order] if with_lines else None)
    return MetricStore(runs), merged


# ------------------------------------------------------------------ helpers

def empty_long():
    """The long table with no rows (its columns typed)."""
    import pandas as pd
    return pd.DataFrame({
        "timestamp": pd.Series([], dtype="datetime64[ns]"),
        "host": pd.Series([], dtype=object),
        "section": pd.Series([], dtype=object),
        "device": pd.Series([], dtype=object),
        "metric": pd.Series([], dtype=object),
        "value": pd.Series([], dtype="float64"),
    })


def joined_series(parts):
    """Pieces of one series (from several sources or hosts) as one, in time
    order, one value per time (the first piece's)."""
    import pandas as pd
    out = pd.concat(parts)
    return out[~out.index.duplicated(keep="first")].sort_index(kind="stable")



def narrowest(values):
    """``values`` in the narrowest type that gives back every value exactly:
    small integers as int8/int16/int32, then float32, else float64.  -0.0
    (sar can print ``-0.00``) and NaN keep a float type."""
    import numpy as np
    v = values
    if v.dtype.kind in "iu" and v.dtype.itemsize <= 4:
        return v
    if v.dtype != np.float64:
        v = v.astype(np.float64)
    if not len(v):
        return v
    finite = np.isfinite(v)
    if finite.all() and not np.signbit(v[v == 0]).any() and (v == np.trunc(v)).all():
        lo, hi = v.min(), v.max()
        for t in (np.int8, np.int16, np.int32):
            info = np.iinfo(t)
            if info.min <= lo and hi <= info.max:
                return v.astype(t)
    with np.errstate(over="ignore", invalid="ignore"):     # beyond float32: inf, then kept as float64
        single = v.astype(np.float32)
        back = single.astype(np.float64)
    same = (back == v) | (np.isnan(back) & np.isnan(v))
    if same.all() and (np.signbit(back) == np.signbit(v)).all():
        return single
    return v


def run_series(run):
    """A run as a float64 Series on a DatetimeIndex named ``timestamp``:
    in time order, one value per time (the first seen), NaN left out."""
    import numpy as np
    import pandas as pd
    stamps, values = run.stamps, run.values
    if values.dtype.kind == "f":
        keep = ~np.isnan(values)
        if not keep.all():
            stamps, values = stamps[keep], values[keep]
    if len(stamps) > 1 and not (np.diff(stamps) > 0).all():
        order = np.argsort(stamps, kind="stable")
        ordered = stamps[order]
        first = np.concatenate(([True], ordered[1:] != ordered[:-1]))
        order = order[first]
        stamps, values = stamps[order], values[order]
    index = _index(stamps, run.tz)
    index.name = "timestamp"
    return pd.Series(values.astype(np.float64), index=index, name="value")


def _index(stamps, tz):
    import pandas as pd
    index = pd.DatetimeIndex(stamps.view("M8[ns]"))
    if tz is not None:
        index = index.tz_localize("UTC").tz_convert(tz)
    return index


def _stamps_of(times) -> tuple:
    """(int64 ns, tz) of a Series or index of timestamps: UTC for aware
    times, the wall clock for naive ones."""
    import numpy as np
    import pandas as pd
    index = pd.DatetimeIndex(times)
    if index.unit != "ns":
        index = index.as_unit("ns")
    return np.asarray(index.asi8, dtype=np.int64), index.tz


def _timestamp(ns: int, tz):
    import pandas as pd
    ts = pd.Timestamp(ns, unit="ns")
    return ts.tz_localize("UTC").tz_convert(tz) if tz is not None else ts


def _code_type(count: int):
    import numpy as np
    return np.int8 if count < 127 else np.int16 if count < 32767 else np.int32


def _missing(value) -> bool:
    return value is None or value != value
