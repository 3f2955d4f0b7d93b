"""Native reader of binary sysstat ``sa`` files (kind ``sa``).

Reads every format sysstat has written since 9.1 (magics 0x2170, 0x2171,
0x2173, 0x2175), in either byte order and from 32- or 64-bit writers,
without running sysstat.  Counters are turned into the figures ``sadf -d``
prints, with sysstat's own formulas, into the long metrics table; restart
and comment records become events.

Times: records carry UTC epoch seconds and the writer's local wall clock;
the difference gives the host's UTC offset, in which timestamps are shown
(``options.tz`` converts them to another zone instead).

Damaged files yield what is readable, with a warning naming the byte offset
where reading stopped; a file with nothing usable raises InputError.
"""
from __future__ import annotations

import datetime as dt
import mmap
import os

import numpy as np

from ..errors import InputError, located
from ..model import Source
from ..textio import compression_of, read_all_bytes
from . import _sa_activities as A
from ._sa_compute import Context, ItemTable, Rows, cpu_rows, generic_rows, pair_rows, softnet_rows
from ._sa_format import FORMAT_MAGICS, FileLayout, read_layout, sniff_magic
from ._sa_records import RecordIndex, Walker
from .base import ParseOptions, Parser, events_frame

#: Compressed sa files are decompressed in memory; refuse absurd sizes.
MAX_DECOMPRESSED = 8 << 30


class SaBinaryParser(Parser):
    kind = "sa"
    priority = 10
    description = "sysstat binary activity file (sa01..sa31), any format since sysstat 9"

    @classmethod
    def sniff(cls, head: bytes, text: str) -> float:
        found = sniff_magic(head)
        if found is None:
            return 0.0
        return 1.0 if found[1] in FORMAT_MAGICS else 0.6

    @classmethod
    def parse(cls, path, options: ParseOptions) -> Source:
        buf, closer = _open(path)
        try:
            return read_source(path, buf, options or ParseOptions())
        finally:
            closer()


def _open(path):
    """The file's bytes: a read-only map for plain files, decompressed bytes
    otherwise.  Returns (buffer, close function)."""
    path = os.fspath(path)
    try:
        kind = compression_of(path)
    except FileNotFoundError:
        raise InputError(path, "no such file") from None
    except IsADirectoryError:
        raise InputError(path, "is a directory") from None
    except OSError as exc:
        raise InputError(path, f"cannot open: {exc.strerror or exc}") from None
    if kind is not None:
        data = read_all_bytes(path, MAX_DECOMPRESSED)
        return memoryview(data), lambda: None
    fh = open(path, "rb")
    if os.fstat(fh.fileno()).st_size == 0:
        fh.close()
        raise InputError(path, "empty file", offset=0)
    mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)

    def close():
        try:
            mapped.close()
        except BufferError:      # a numpy view still alive: the map closes with it
            pass
        fh.close()
    return mapped, close


def read_source(path, buf, options: ParseOptions) -> Source:
    """Parse an sa file held in ``buf`` (bytes-like)."""
    path = str(path)
    layout = read_layout(path, buf)
    warnings = list(layout.warnings)
    index = Walker(path, buf, layout, warnings).walk()
    if index.count == 0 and not index.specials:
        raise InputError(path, "no statistics records in the file", offset=layout.data_offset)
    offset = _utc_offset(index)
    tz = _zone(offset, options.tz)
    u8 = np.frombuffer(buf, dtype=np.uint8)
    blocks = _activity_blocks(path, u8, layout, index, warnings)
    metrics = _metrics_frame(blocks, index, layout.host, tz)
    events = _events(path, index, layout, tz)
    return Source(path=path, kind="sa", host=layout.host, metrics=metrics, events=events, warnings=warnings,
                  tz=_tz_name(tz), records=int(index.count), meta=_meta(layout, index, offset))


# --- time ---------------------------------------------------------------------------

def _utc_offset(index: RecordIndex) -> int | None:
    """The writer's UTC offset in seconds, from local hour:minute:second
    against UTC epoch time (most common value, rounded to 15 minutes)."""
    if index.count:
        ust, hms = index.ust, index.hms.astype(np.int64)
    elif index.specials:
        ust = np.array([s.ust for s in index.specials], dtype=np.int64)
        hms = np.array([s.hms for s in index.specials], dtype=np.int64)
    else:
        return None
    local = hms[:, 0] * 3600 + hms[:, 1] * 60 + np.minimum(hms[:, 2], 59)
    diff = (local - ust % 86400 + 86400 + 12 * 3600) % 86400 - 12 * 3600
    diff = np.round(diff / 900.0).astype(np.int64) * 900
    values, counts = np.unique(diff, return_counts=True)
    best = int(values[np.argmax(counts)])
    return best if -12 * 3600 <= best <= 14 * 3600 else 0


def _zone(offset, tz_option):
    if tz_option:
        return tz_option
    return dt.timezone(dt.timedelta(seconds=offset or 0))


def _tz_name(tz) -> str:
    if isinstance(tz, str):
        return tz
    seconds = int(tz.utcoffset(None).total_seconds())
    sign = "+" if seconds >= 0 else "-"
    seconds = abs(seconds)
    return f"{sign}{seconds // 3600:02d}:{seconds % 3600 // 60:02d}"


def _timestamps(ust: np.ndarray, tz):
    import pandas as pd
    stamps = pd.to_datetime(ust.astype("int64"), unit="s", utc=True).as_unit("ns")
    return stamps.tz_convert(tz)


# --- activities -------------------------------------------------------------------------

def _activity_blocks(path, u8, layout: FileLayout, index: RecordIndex, warnings) -> list:
    """[(section, Rows)] for every activity sarsleuth can read."""
    family = "2175" if layout.format_magic == 0x2175 else "old"
    prev_rec = _previous_records(index.segment)
    itv = _intervals(index.uptime, prev_rec, layout)
    blocks = []
    skipped = []
    for pos, act in enumerate(layout.activities):
        spec = A.SPECS.get(act.id)
        item_layout = A.resolve_layout(spec, family, act.magic, act.size, act.types) if spec else None
        if item_layout is None:
            name = A.ACTIVITY_NAMES.get(act.id, f"activity {act.id}")
            skipped.append(f"{name} (magic 0x{act.magic:x})")
            continue
        nr = index.act_nr[pos]
        if not nr.any():
            continue
        per_cpu_irq = spec.id == A.A_IRQ and bool(item_layout.strings)
        table = ItemTable(u8, item_layout, act, index.act_off[pos], nr, layout.long_size, layout.endian,
                          keep_first_nr2=per_cpu_irq)
        if per_cpu_irq:
            # per-CPU interrupt tables: keep the CPU "all" part (first nr2 items)
            table.subset(table.pos < act.nr2)
        blocks.extend(_rows_for(spec, table, prev_rec, itv, index, nr))
    if skipped:
        warnings.append(located(path, "activities with a layout sarsleuth does not know were skipped: "
                                + ", ".join(skipped), offset=layout.data_offset))
    return blocks


def _rows_for(spec, table, prev_rec, itv, index, nr):
    if spec.id == A.A_CPU:
        return [("cpu", cpu_rows(table, prev_rec, index.segment, nr))]
    if spec.id == A.A_NET_SOFT:
        return [("softnet", softnet_rows(spec, table, prev_rec, index.segment, itv))]
    rows = generic_rows(spec, table, prev_rec, itv)
    if spec.id == A.A_MEMORY:
        # one sysstat activity, two sar reports (-r and -S): two sections
        cur_idx, prev_idx = pair_rows(table.rec, np.zeros(len(table.rec), dtype=np.int64), prev_rec, False)
        ctx = Context(table, cur_idx, prev_idx, itv[table.rec[cur_idx]])
        swap_rows = Rows(table.rec[cur_idx], np.full(len(cur_idx), "", dtype=object), A.compute_swap(ctx))
        return [("memory", rows), ("swap", swap_rows)]
    return [(spec.section, rows)]


def _previous_records(segment: np.ndarray) -> np.ndarray:
    """Index of the record each statistics record is compared with (-1 for
    the first record of a segment)."""
    prev = np.arange(len(segment), dtype=np.int64) - 1
    if len(segment):
        prev[0] = -1
        prev[1:][segment[1:] != segment[:-1]] = -1
    return prev


def _intervals(uptime: np.ndarray, prev_rec: np.ndarray, layout: FileLayout) -> np.ndarray:
    """Interval of each record in 1/100 s (sysstat uses 1 when it is 0)."""
    prev_up = uptime[np.maximum(prev_rec, 0)]
    diff = (uptime - prev_up).astype(np.float64)
    if layout.record.uptime_in_jiffies and layout.hz not in (0, 100):
        diff = diff * 100.0 / layout.hz
    diff = np.where(prev_rec < 0, 1.0, diff)
    return np.where(diff == 0, 1.0, diff)


# --- frames --------------------------------------------------------------------------

def _metrics_frame(blocks, index: RecordIndex, host: str, tz):
    """The long table, filled column by column into preallocated arrays;
    categorical strings keep it small (a day at one-second interval makes
    tens of millions of rows).  NaN values (figures the writer did not
    record) are left out."""
    import pandas as pd
    parts = []                      # (section code, device codes, rows, [(metric code, keep, values)])
    section_names, metric_names, device_names = [], [], {}
    total = 0
    for section, rows in blocks:
        if not len(rows.rec):
            continue
        sec_code = _code_of(section_names, section)
        dev_codes = _device_codes(rows.device, device_names)
        metrics = []
        for metric, values in rows.metrics:
            values = np.asarray(values, dtype=np.float64)
            keep = None if not np.isnan(values).any() else ~np.isnan(values)
            total += len(values) if keep is None else int(keep.sum())
            metrics.append((_code_of(metric_names, metric), keep, values))
        parts.append((sec_code, dev_codes, rows.rec, metrics))
    if not total:
        from ..model import empty_metrics
        frame = empty_metrics()
        frame["timestamp"] = frame["timestamp"].dt.tz_localize("UTC").dt.tz_convert(tz)
        return frame
    rec = np.empty(total, dtype=np.int32 if index.count < 2**31 else np.int64)
    dev = np.empty(total, dtype=np.int32)
    sec = np.empty(total, dtype=np.int16)
    met = np.empty(total, dtype=np.int16)
    val = np.empty(total, dtype=np.float64)
    at = 0
    blocks.clear()                      # let each block go once copied
    while parts:
        sec_code, dev_codes, rows_rec, metrics = parts.pop(0)
        while metrics:
            met_code, keep, values = metrics.pop(0)
            if keep is None:
                n = len(values)
                rec[at:at + n], dev[at:at + n], val[at:at + n] = rows_rec, dev_codes, values
            else:
                n = int(keep.sum())
                rec[at:at + n], dev[at:at + n], val[at:at + n] = rows_rec[keep], dev_codes[keep], values[keep]
            sec[at:at + n] = sec_code
            met[at:at + n] = met_code
            at += n
            del values
    stamps = _timestamps(index.ust, tz)
    timestamp = stamps.take(rec)
    del rec
    return pd.DataFrame({
        "timestamp": timestamp,
        "host": pd.Categorical.from_codes(np.zeros(total, dtype=np.int8), categories=[host]),
        "section": pd.Categorical.from_codes(sec, categories=section_names),
        "device": pd.Categorical.from_codes(dev, categories=list(device_names)),
        "metric": pd.Categorical.from_codes(met, categories=metric_names),
        "value": val,
    }, copy=False)


def _device_codes(labels: np.ndarray, names: dict) -> np.ndarray:
    """Codes of device labels in the file-wide ``names`` table (label ->
    code, insertion ordered)."""
    uniq, inverse = np.unique(labels.astype(str), return_inverse=True)
    mapping = np.array([names.setdefault(label, len(names)) for label in uniq], dtype=np.int32)
    return mapping[inverse.reshape(-1)]


def _code_of(names: list, name: str) -> int:
    try:
        return names.index(name)
    except ValueError:
        names.append(name)
        return len(names) - 1


def _events(path, index: RecordIndex, layout: FileLayout, tz):
    if not index.specials:
        return events_frame([])
    stamps = _timestamps(np.array([s.ust for s in index.specials], dtype=np.int64), tz)
    rows = []
    for special, stamp in zip(index.specials, stamps):
        if special.kind == "restart":
            cpus = special.ncpu if special.ncpu is not None else layout.ncpu + 1
            message = f"LINUX RESTART ({max(cpus - 1, 1)} CPU)"
            kind = "sar-restart"
        else:
            message = special.text
            kind = "sar-comment"
        rows.append({"timestamp": stamp, "host": layout.host, "source": "sa", "kind": kind, "pid": None,
                     "process": None, "message": message, "file": path, "line": None,
                     "detail": f"byte offset {special.offset}"})
    return events_frame(rows)


def _meta(layout: FileLayout, index: RecordIndex, offset) -> dict:
    year, month, day = layout.file_date
    try:
        file_date = dt.date(year, month, day).isoformat()
    except ValueError:
        file_date = None
    return {
        "format_magic": f"0x{layout.format_magic:04x}",
        "sysstat_version": layout.version,
        "kernel": layout.kernel,
        "sysname": layout.sysname,
        "machine": layout.machine,
        "ncpu": layout.ncpu,
        "file_date": file_date,
        "hz": layout.hz,
        "byte_order": "little" if layout.endian == "<" else "big",
        "long_size": layout.long_size,
        "utc_offset": _tz_name(dt.timezone(dt.timedelta(seconds=offset or 0))) if offset is not None else None,
        "restarts": sum(1 for s in index.specials if s.kind == "restart"),
        "comments": sum(1 for s in index.specials if s.kind == "comment"),
        "activities": [A.ACTIVITY_NAMES.get(a.id, str(a.id)) for a in layout.activities],
    }
