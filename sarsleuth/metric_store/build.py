"""Building stores: a reader's pieces, a long table, several sources' stores."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from sarsleuth.knowledge.metric_names import current_of
from sarsleuth.metric_store.runs import KEY_COLUMNS, Run, _stamps_of
from sarsleuth.metric_store.store import MetricStore


def from_long(frame) -> MetricStore:
    """The store of a long table (``METRIC_COLUMNS``, ``line`` kept when
    present).  Rows with a NaN value are dropped, as the long table
    never held them for a time the writer did not record."""
    if frame is None or not len(frame):
        return MetricStore()
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
        self._current_names()
        once = Interner()

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


    def _current_names(self) -> None:
        """One name per figure: a series under an older sysstat's name
        (``rd_sec/s``, ``avgrq-sz`` in sectors, ``avgqu-sz``, ``rxbyt/s``)
        takes the name sysstat prints now, its values converted to that
        name's unit as sysstat converts them (sectors / 2 = kB); where the
        writer printed both names (sadf -x of 11.x-12.x), the current one
        is kept and the older one dropped."""
        for key in [k for k in self.pieces if current_of(k[1], k[3]) is not None]:
            name, factor = current_of(key[1], key[3])
            stamps, values, lines, tz = self.pieces.pop(key)
            target = (key[0], key[1], key[2], name)
            if target in self.pieces:
                continue
            if factor != 1.0:
                values = [np.asarray(v, dtype=np.float64) * factor for v in values]
            self.pieces[target] = (stamps, values, lines, tz)
            self.ranks.setdefault(target, self.ranks[key])


#: Two renderings of one sample agree when they differ by no more than half
#: a unit of the two decimals sar prints (with room for float rounding), or
#: half a unit when the other rendering printed a whole number.
PRINTED_TOLERANCE = 0.0051


@dataclass
class Disagreement:
    """A series two sources both hold whose values differ at common times:
    the time they differ most (relative to the values' size), both values
    there, and how many times differ."""

    key: tuple            # (host, section, device, metric)
    stamp: int            # the time they differ most, as the store keeps it
    tz: object
    kept: float           # the value of the store that is used
    dropped: float        # the other store's
    kept_store: int       # index of each store in the list given to combine
    dropped_store: int
    count: int = 1
    gap: float = 0.0      # |kept - dropped| / max(1, |kept|, |dropped|)


class Interner:
    """One array for equal arrays: series sampled at the same instants
    share their times, which is how the store keeps them small and how
    the analyses find the series to take as rows of one matrix."""

    def __init__(self):
        self._seen: dict = {}

    def __call__(self, arr):
        if arr is None:
            return None
        digest = (len(arr), arr.dtype.str, hash(arr.tobytes()))
        for seen in self._seen.get(digest, ()):
            if np.array_equal(seen, arr):
                return seen
        self._seen.setdefault(digest, []).append(arr)
        return arr


def combine(stores) -> tuple:
    """(one store of all, values counted once, disagreements): a series
    held by several stores (the same sample from ``sa06`` and its ``sar
    -A`` rendering) keeps one value per time, the first store's; where the
    other store says something else at that time (an edited paste, another
    host of the same name), it is kept as a :class:`Disagreement`."""
    stores = [s for s in stores if s]
    if len(stores) == 1:
        return stores[0], 0, []
    owners: dict = {}
    for index, store in enumerate(stores):
        for key, run in store.runs.items():
            owners.setdefault(key, []).append((index, run))
    runs, merged, disagreements = {}, 0, []
    once = Interner()
    for key, indexed in owners.items():
        parts = [run for _, run in indexed]
        if len(parts) == 1:
            run = parts[0]
            stamps = once(run.stamps)
            runs[key] = run if stamps is run.stamps else Run(stamps=stamps, values=run.values, tz=run.tz,
                                                             lines=run.lines)
            continue
        # a time held by an earlier store counts once (that store's value);
        # a time repeated within one store (an autumn hour on a wall clock) stays
        stamps, values, lines = [], [], []
        seen = np.empty(0, dtype=np.int64)
        seen_values = np.empty(0, dtype=np.float64)
        seen_owner = np.empty(0, dtype=np.int64)
        for index, part in indexed:
            s, v = part.stamps, part.values.astype(np.float64)
            ln = part.lines if part.lines is not None else np.full(len(v), -1, dtype=np.int64)
            keep = ~np.isnan(v)
            new = keep & ~_held(seen, s)
            merged += int(keep.sum() - new.sum())
            _compare(key, part, index, keep & ~new, seen, seen_values, seen_owner, disagreements)
            stamps.append(s[new]), values.append(v[new]), lines.append(ln[new])
            order = np.argsort(np.concatenate([seen, s[new]]), kind="stable")
            seen = np.concatenate([seen, s[new]])[order]
            seen_values = np.concatenate([seen_values, v[new]])[order]
            seen_owner = np.concatenate([seen_owner, np.full(int(new.sum()), index)])[order]
        stamps, values, lines = np.concatenate(stamps), np.concatenate(values), np.concatenate(lines)
        order = np.argsort(stamps, kind="stable")
        with_lines = any(p.lines is not None for p in parts)
        runs[key] = Run(stamps=once(stamps[order]), values=narrowest(values[order]), tz=parts[0].tz,
                        lines=once(lines[order]) if with_lines else None)
    return MetricStore(runs), merged, disagreements


def _held(seen, stamps):
    """Which of ``stamps`` the sorted ``seen`` holds (a binary search: the
    times of a day's series are met once per store that has them)."""
    if not len(seen):
        return np.zeros(len(stamps), dtype=bool)
    at = np.minimum(np.searchsorted(seen, stamps), len(seen) - 1)
    return seen[at] == stamps


def _compare(key, part, index: int, repeated, seen, seen_values, seen_owner, out: list) -> None:
    """Note where ``part`` says something else than the values already
    kept at the same times."""
    if not repeated.any():
        return
    s, v = part.stamps[repeated], part.values.astype(np.float64)[repeated]
    at = np.searchsorted(seen, s)
    kept = seen_values[at]
    scale = np.maximum(1.0, np.abs(kept)) * 1e-9
    # a whole number may have been printed without decimals (sadf's MBfsused)
    tolerance = np.where(v == np.trunc(v), 0.5, PRINTED_TOLERANCE) + scale
    differ = np.abs(kept - v) > tolerance
    if not differ.any():
        return
    # the widest gap (relative to the values' size) is the one worth showing
    gap = np.where(differ, np.abs(kept - v) / np.maximum(1.0, np.maximum(np.abs(kept), np.abs(v))), -1.0)
    worst = int(np.argmax(gap))
    out.append(Disagreement(key=key, stamp=int(s[worst]), tz=part.tz, kept=float(kept[worst]),
                            dropped=float(v[worst]), kept_store=int(seen_owner[at[worst]]), dropped_store=index,
                            count=int(differ.sum()), gap=float(gap[worst])))


def narrowest(values):
    """``values`` in the narrowest type that gives back every value exactly:
    small integers as int8/int16/int32, then float32, else float64.  -0.0
    (sar can print ``-0.00``) and NaN keep a float type."""
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


def _missing(value) -> bool:
    return value is None or value != value
