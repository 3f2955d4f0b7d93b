"""The long metrics table of an sa file, written in place.

Columns are allocated once at an upper bound of the row count (pages never
written cost no memory) and cut to size at the end; section, device and
metric are small integer codes turned into categoricals without a copy.
"""
from __future__ import annotations

import numpy as np

from sarsleuth.parsers.sa.compute import Rows


class Table:
    """The columns of the long table, written in place: arrays allocated
    once at an upper bound of the row count (pages never written cost no
    memory) and cut to size at the end."""

    def __init__(self, host: str):
        self.host = host
        self.sections: list = []
        self.metrics: list = []
        self.devices: dict = {}
        self.n = 0

    def declare(self, section: str, metrics) -> None:
        code_of(self.sections, section)
        for m in metrics:
            code_of(self.metrics, m)

    def allocate(self, bound: int) -> None:
        self.cap = max(int(bound), 1)
        self.ts = np.empty(self.cap, dtype=np.int64)
        self.val = np.empty(self.cap, dtype=np.float64)
        self.sec = np.empty(self.cap, dtype=_code_dtype(len(self.sections)))
        self.met = np.empty(self.cap, dtype=_code_dtype(len(self.metrics)))
        self.dev = np.empty(self.cap, dtype=np.int8)      # widened when devices are many

    def add(self, section: str, rows: Rows, stamps: np.ndarray) -> None:
        if not len(rows.rec):
            return
        sec = code_of(self.sections, section)
        # file-wide codes of the device labels the rows use
        codes = np.full(len(rows.names), -1, dtype=np.int64)
        for i in np.flatnonzero(np.bincount(rows.device, minlength=len(rows.names))):
            codes[i] = self.devices.setdefault(rows.names[i], len(self.devices))
        self._fit("dev", len(self.devices))
        self._fit("sec", len(self.sections))
        ts = stamps[rows.rec]
        dev = codes[rows.device]
        for metric, values in rows.metrics:
            values = np.asarray(values, dtype=np.float64)
            met = code_of(self.metrics, metric)
            self._fit("met", len(self.metrics))
            nan = np.isnan(values)
            if nan.any():           # figures the writer did not record are left out
                keep = ~nan
                self._put(ts[keep], sec, dev[keep], met, values[keep])
            else:
                self._put(ts, sec, dev, met, values)

    def _put(self, ts, sec, dev, met, values) -> None:
        n = len(values)
        at = self.n
        if at + n > self.cap:           # the bound is an upper bound: only as a safeguard
            self._grow(at + n)
        end = at + n
        self.ts[at:end] = ts
        self.sec[at:end] = sec
        self.dev[at:end] = dev
        self.met[at:end] = met
        self.val[at:end] = values
        self.n = end

    def _fit(self, name: str, categories: int) -> None:
        """Widen a code column when its categories outgrow its type."""
        old = getattr(self, name)
        dtype = np.dtype(_code_dtype(categories))
        if dtype.itemsize > old.dtype.itemsize:
            new = np.empty(self.cap, dtype=dtype)
            new[:self.n] = old[:self.n]
            setattr(self, name, new)

    def _grow(self, need: int) -> None:
        self.cap = max(need, self.cap + self.cap // 2)
        for name in ("ts", "val", "sec", "met", "dev"):
            old = getattr(self, name)
            new = np.empty(self.cap, dtype=old.dtype)
            new[:self.n] = old[:self.n]
            setattr(self, name, new)

    def frame(self, tz):
        import pandas as pd
        n = self.n
        if not n:
            return empty_frame(tz)
        columns = {}
        for name in ("ts", "val", "sec", "met", "dev"):
            columns[name] = _cut(getattr(self, name), n)
            setattr(self, name, None)
        stamps = _aware(columns.pop("ts"), tz)
        # one host: zero codes, pages the system hands out only when read
        host = pd.Categorical.from_codes(np.zeros(n, dtype=np.int8), categories=[self.host], validate=False)
        return pd.DataFrame({
            "timestamp": stamps,
            "host": host,
            "section": _categorical(columns.pop("sec"), self.sections),
            "device": _categorical(columns.pop("dev"), list(self.devices)),
            "metric": _categorical(columns.pop("met"), self.metrics),
            "value": columns.pop("val"),
        }, copy=False)


def _code_dtype(count: int):
    """The code type pandas gives a categorical of ``count`` categories."""
    if count < 127:
        return np.int8
    if count < 32767:
        return np.int16
    return np.int32


def _cut(arr: np.ndarray, n: int) -> np.ndarray:
    """The first ``n`` values of ``arr``, giving the rest of its memory back
    (in place when the array owns its memory)."""
    if arr.flags.owndata and arr.flags.c_contiguous:
        try:
            arr.resize(n, refcheck=False)
            return arr
        except (ValueError, SystemError):
            pass
    return arr[:n].copy()


def _narrow(codes: np.ndarray, dtype) -> np.ndarray:
    """``codes`` as the narrower integer ``dtype``, converted in place slice
    by slice (no second full-size array)."""
    dtype = np.dtype(dtype)
    if codes.dtype.itemsize <= dtype.itemsize:
        return codes.astype(dtype, copy=False)
    n = len(codes)
    out = codes.view(np.uint8).view(dtype)
    piece = 1 << 20
    for i in range(0, n, piece):
        j = min(n, i + piece)
        out[i:j] = codes[i:j]          # writes only bytes not read any more
    ratio = codes.dtype.itemsize // dtype.itemsize
    codes = _cut(codes, -(-n // ratio))
    return codes.view(np.uint8).view(dtype)[:n]


def _categorical(codes: np.ndarray, categories: list):
    """A categorical over ``codes`` (reused in place) with only the
    categories that occur (sections or metrics declared for activities
    that turned out to have no rows are dropped)."""
    import pandas as pd
    piece = 1 << 20                     # bincount works on int64: a slice at a time
    used = np.zeros(len(categories), dtype=bool)
    for i in range(0, len(codes), piece):
        used |= np.bincount(codes[i:i + piece], minlength=len(categories)) > 0
    if not used.all():
        lut = (np.cumsum(used) - 1).astype(codes.dtype)
        for i in range(0, len(codes), piece):
            codes[i:i + piece] = lut[codes[i:i + piece]]
        categories = [c for c, u in zip(categories, used) if u]
    codes = _narrow(codes, _code_dtype(len(categories)))
    return pd.Categorical.from_codes(codes, categories=categories, validate=False)


def _aware(ns: np.ndarray, tz):
    """A tz-aware datetime array over int64 UTC nanoseconds, without a copy."""
    import pandas as pd
    dtype = pd.DatetimeTZDtype(unit="ns", tz=tz)
    try:
        return pd.arrays.DatetimeArray._simple_new(ns.view("M8[ns]"), dtype=dtype)
    except (AttributeError, TypeError):      # private constructor changed: copy instead
        return pd.DatetimeIndex(ns.view("M8[ns]")).tz_localize("UTC").tz_convert(tz).array


def empty_frame(tz):
    from sarsleuth.model import empty_metrics
    frame = empty_metrics()
    frame["timestamp"] = frame["timestamp"].dt.tz_localize("UTC").dt.tz_convert(tz)
    return frame


def code_of(names: list, name: str) -> int:
    try:
        return names.index(name)
    except ValueError:
        names.append(name)
        return len(names) - 1
