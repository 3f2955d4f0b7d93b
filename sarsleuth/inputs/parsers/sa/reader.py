"""Native reader of binary sysstat ``sa`` files (kind ``sa``).

Reads every format sysstat has written since 6.1 (magics 0x2169, see
``format_2169``; 0x2170 and Red Hat's 0x1170, 0x2171, 0x2173, 0x2175), in
either byte order and from 32- or 64-bit writers, without running sysstat.  Counters are turned into the figures ``sadf -d``
prints, with sysstat's own formulas, into the long metrics table; restart
and comment records become events.

Times: records carry UTC epoch seconds and the writer's local wall clock;
the difference gives the host's UTC offset, in which timestamps are shown
(``options.tz`` converts them to another zone instead).

Damaged files yield what is readable, with a warning naming the byte offset
of the damage and what was skipped (reading resumes at the next record
header found); a file with nothing usable raises InputError.  See ``clock``
for dates, zones and clocks that go back.

Memory: a day sampled every second is hundreds of megabytes and tens of
millions of values.  Records are read a slice at a time, every activity of
a slice turned straight into pieces of the series of a
:class:`~sarsleuth.metric_store.MetricStore`, each narrowed to the smallest
exact type as it comes (a counter that stays at zero costs a byte a value;
times are shared by every device of a record).  The pages of a
memory-mapped file are dropped from the process once read.  Peak memory is
thus the store (a few bytes per value) plus one slice.
"""
from __future__ import annotations

import datetime as dt
import mmap
import os

import numpy as np

from sarsleuth.errors import InputError, located
from sarsleuth.model import Source
from sarsleuth.inputs.reading import compression_of, open_binary
from sarsleuth.inputs.parsers.sa import activities as A
from sarsleuth.inputs.parsers.sa import clock, format_2169, format_2169_figures
from sarsleuth.inputs.parsers.sa.compute import (SERIAL_LINE_AS_IS_SINCE, Context, ItemTable, Rows, generic_rows,
                                          pair_rows, writer_version)
from sarsleuth.inputs.parsers.sa.formulas import compute_swap
from sarsleuth.inputs.parsers.sa.per_cpu import cpu_rows, irq_rows_per_cpu, softnet_rows
from sarsleuth.inputs.parsers.sa.layout import FileLayout, read_layout, sniff_magic
from sarsleuth.inputs.parsers.sa.records import RecordIndex, Walker
from sarsleuth.inputs.parsers.sa.spool import snapshot, spool
from sarsleuth.inputs.parsers.sa.table import SeriesTable
from sarsleuth.inputs.parsers.base import ParseOptions, events_frame

#: Compressed sa files are decompressed in memory; refuse absurd sizes.
MAX_DECOMPRESSED = 8 << 30

#: Records are turned into rows a slice at a time: about this many items
#: (activity structures) per slice, within these bounds in records.
SLICE_ITEMS = 1 << 18
SLICE_RECORDS = (16, 8192)

#: Pages of a mapped file are given back once this many bytes are done with.
RELEASE_BYTES = 8 << 20


def read_file(path, options: ParseOptions) -> Source:
    """The Source of one sa file (see the module doc)."""
    damage: list = []
    buf, closer = _open(path, damage)
    try:
        pager = _Pager(buf) if isinstance(buf, mmap.mmap) else None
        source = read_source(path, buf, options or ParseOptions(), pager=pager)
    finally:
        closer()
    source.warnings[:0] = damage
    return source


class _Pager:
    """Gives back to the system the pages of a read-only file mapping that
    reading is done with, so a big file is never resident all at once (they
    are reread from the page cache if touched again).  Called with a byte
    offset: everything before it may go."""

    def __init__(self, mapped: mmap.mmap):
        self.mapped = mapped
        self.done = 0
        self.ok = hasattr(mapped, "madvise") and hasattr(mmap, "MADV_DONTNEED")

    def __call__(self, upto: int) -> None:
        end = int(upto) // mmap.PAGESIZE * mmap.PAGESIZE
        if not self.ok or end - self.done < RELEASE_BYTES:
            return
        try:
            self.mapped.madvise(mmap.MADV_DONTNEED, self.done, end - self.done)
        except (OSError, ValueError):
            self.ok = False
        self.done = end

    def restart(self) -> None:
        """A new pass over the file begins."""
        self(len(self.mapped))
        self.done = 0


def _open(path, damage: list):
    """The file's bytes as a read-only map, and a function closing it.
    Compressed files are first spooled to a temporary file on disk, so a big
    (or bomb) archive costs disk, bounded by MAX_DECOMPRESSED, not memory; a
    damaged or cut stream keeps what came before the damage (``damage``
    receives the warning, the records lost are counted by the walk)."""
    path = os.fspath(path)
    fh = open_binary(path)          # one-line InputError for missing/unreadable files
    if compression_of(path) is not None:
        fh.close()
        fh = spool(path, MAX_DECOMPRESSED, damage)
    else:
        # mapped from a private copy: the file cut while it is read never takes the process down
        copy = snapshot(fh, path, damage)
        if copy is not None:
            fh.close()
            fh = copy
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


def read_source(path, buf, options: ParseOptions, pager=None) -> Source:
    """Parse an sa file held in ``buf`` (bytes-like).  ``pager``, when
    given, is told which bytes are done with (see :class:`_Pager`)."""
    path = str(path)
    if sniff_magic(bytes(buf[:4])) is None and (endian := format_2169.sniff(bytes(buf[:64]))) is not None:
        return _read_2169(path, buf, endian)
    layout, index, warnings, offset, tz = _walk(path, buf, pager)
    u8 = np.frombuffer(buf, dtype=np.uint8)
    metrics = _read_metrics(path, u8, layout, index, warnings, tz, pager, options.progress)
    del u8
    return _source(path, layout, index, warnings, offset, tz, metrics)


def _walk(path, buf, pager):
    """(layout, record index, warnings, UTC offset, zone) of a file of
    format 0x1170 or later; the pager is rewound for the pass over values."""
    layout = read_layout(path, buf)
    warnings = list(layout.warnings)
    index = Walker(path, buf, layout, warnings, release=pager).walk()
    if index.count == 0 and not index.specials:
        raise InputError(path, "no statistics records in the file", offset=layout.data_offset)
    offset = clock.check_clock(path, index, layout, warnings)
    if pager is not None:
        pager.restart()
    return layout, index, warnings, offset, clock.zone(offset)


def _source(path, layout, index, warnings, offset, tz, store) -> Source:
    meta = _meta(layout, index, offset)
    meta["record_times"] = _record_times(layout, index)
    return Source(path=path, kind="sa", host=layout.host, store=store, events=_events(path, index, layout, tz),
                  warnings=warnings, tz=clock.tz_name(tz), records=int(index.count), meta=meta)


def _record_times(layout: FileLayout, index: RecordIndex) -> tuple:
    """(time in UTC ns, seconds since the record before, rounded as sadf
    prints them, stretch between restarts) of every statistics record."""
    itv = _intervals(index.uptime, _previous_records(index.segment), layout)
    # an uptime that went back starts a segment: that record is never printed
    itv = np.clip(np.nan_to_num(itv, nan=0.0, posinf=0.0, neginf=0.0), 0, 2.0 ** 62).astype(np.int64)
    seconds = itv // 100 + (itv % 100 >= 50)
    return index.ust.astype(np.int64) * 1_000_000_000, seconds, np.asarray(index.segment)


def _read_2169(path, buf, endian) -> Source:
    """A file of sysstat 6.1-7.0: no activity list, fixed record parts."""
    F = format_2169
    hdr, layout = F.read_layout_2169(path, buf, endian)
    warnings: list = []
    offsets, segments, specials, shape = F.walk(path, buf, hdr, endian, warnings)
    if not len(offsets) and not specials:
        raise InputError(path, "no statistics records in the file", offset=F.HEADER_SIZE)
    index = F.build_index(buf, offsets, segments, specials, endian, hdr.long_size)
    offset = clock.check_clock(path, index, layout, warnings)
    tz = clock.zone(offset)
    skipped = F.skipped_activities(hdr)
    if skipped:
        warnings.append(located(path, "recorded but not turned into figures: " + ", ".join(skipped), offset=8))
    blocks = format_2169_figures.blocks(buf, index, hdr, shape, endian) if shape is not None else []
    table = SeriesTable(layout.host, tz)
    stamps = index.ust * 1_000_000_000
    for section, rows in blocks:
        table.add(section, rows, stamps)
    meta = _meta(layout, index, offset)
    meta.update(sysstat_version="6.1-7.0", activities=[name for flag, name in sorted(F.FLAG_NAMES.items())
                                                      if hdr.actflag & flag])
    return Source(path=path, kind="sa", host=layout.host, store=table.store(),
                  events=_events(path, index, layout, tz), warnings=warnings, tz=clock.tz_name(tz),
                  records=int(index.count), meta=meta)


# --- activities -------------------------------------------------------------------------

class _Activity:
    """One activity of the file that sarsleuth reads."""

    def __init__(self, pos, act, spec, item_layout):
        self.pos, self.act, self.spec, self.layout = pos, act, spec, item_layout
        # per-CPU interrupt tables (sysstat 12.7): CPU "all", then each CPU,
        # nr2 interrupts each
        self.per_cpu_irq = spec.id == A.A_IRQ and bool(item_layout.strings)
        self.state = {}                # carried from one slice of records to the next
        self.outputs = []              # [(section, [metric, ...])]

    def table(self, u8, offsets, nr, layout: FileLayout) -> ItemTable:
        table = ItemTable(u8, self.layout, self.act, offsets, nr, layout.long_size, layout.endian)
        table.writer = writer_version(layout.version)
        table.cpu_block = self.act.nr2 if self.per_cpu_irq else 0
        if self.spec.id == A.A_DISK:
            # unused slots (device 0-0) sar never shows
            table.subset((table.get("major") != 0) | (table.get("minor") != 0))
        elif self.spec.id == A.A_SERIAL and table.writer < SERIAL_LINE_AS_IS_SINCE:
            table.subset(table.get("line") != 0)              # unused serial slots
        elif self.spec.id == A.A_FS:
            # preallocated slots past the last filesystem (writers before
            # 11.7): sar stops at the first with no blocks
            table.subset(table.get("f_blocks") != 0)
        elif self.spec.id in (A.A_NET_DEV, A.A_NET_EDEV):
            table.subset(table.byte("interface") != 0)       # unused interface slots
        return table

    def items_per_record(self, nr: np.ndarray) -> np.ndarray:
        return nr * self.act.nr2


def _readable_activities(path, layout: FileLayout, warnings) -> list:
    family = "2175" if layout.format_magic == 0x2175 else "old"
    found, skipped = [], []
    for pos, act in enumerate(layout.activities):
        spec = A.SPECS.get(act.id)
        item_layout = (A.resolve_layout(spec, family, act.magic, act.size, act.types, layout.version)
                       if spec else None)
        if item_layout is None:
            name = A.ACTIVITY_NAMES.get(act.id, f"activity {act.id}")
            skipped.append(f"{name} (magic 0x{act.magic:x})")
            continue
        activity = _Activity(pos, act, spec, item_layout)
        activity.outputs = _outputs_of(activity, layout)
        found.append(activity)
    if skipped:
        warnings.append(located(path, "activities with a layout sarsleuth does not know were skipped: "
                                + ", ".join(skipped), offset=layout.data_offset))
    return found


def _outputs_of(activity: _Activity, layout: FileLayout) -> list:
    """[(section, [metric...])] an activity yields, found by running its
    formulas on two records of zeros."""
    size = activity.act.size * activity.act.nr2
    u8 = np.zeros(2 * size + 8, dtype=np.uint8)
    nr = np.ones(2, dtype=np.int64)
    table = activity.table(u8, np.array([0, size], dtype=np.int64), nr, layout)
    with np.errstate(all="ignore"):
        blocks = _rows_for(activity.spec, table, np.array([-1, 0], dtype=np.int64), np.full(2, 100.0),
                           np.zeros(2, dtype=np.int32), nr, {})
    return [(section, [m for m, _v in rows.metrics]) for section, rows in blocks]


def _rows_for(spec, table, prev_rec, itv, segment, nr, state):
    """[(section, Rows)] of one activity over a slice of records."""
    if spec.id == A.A_CPU:
        return [("cpu", cpu_rows(table, prev_rec, segment, nr, state))]
    if spec.id == A.A_NET_SOFT:
        return [("softnet", softnet_rows(spec, table, prev_rec, segment, itv, state))]
    if table.cpu_block:
        return [("interrupts", rows) for rows in irq_rows_per_cpu(spec, table, prev_rec, itv)]
    rows = generic_rows(spec, table, prev_rec, itv)
    if spec.id == A.A_MEMORY:
        # one sysstat activity, two sar reports (-r and -S): two sections
        cur_idx, prev_idx = pair_rows(table.rec, np.zeros(len(table.rec), dtype=np.int64), prev_rec, False)
        ctx = Context(table, cur_idx, prev_idx, itv[table.rec[cur_idx]])
        swap_rows = Rows(table.rec[cur_idx], np.zeros(len(cur_idx), dtype=np.int64), np.array([""], dtype=object),
                         compute_swap(ctx))
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


# --- the long table ------------------------------------------------------------------

def _read_metrics(path, u8, layout: FileLayout, index: RecordIndex, warnings, tz, pager, progress):
    """The figures as a MetricStore, filled a slice of records at a time."""
    slices = _Slices(path, u8, layout, index, warnings, pager, progress)
    table = SeriesTable(layout.host, tz)
    if slices.activities and index.count:
        for start in slices.starts():
            slices.fill(table, start)
    return table.store()


class _Slices:
    """The records of a file a slice at a time, each turned into rows of
    the long table; the rows of consecutive slices, put end to end, are the
    whole table."""

    def __init__(self, path, u8, layout: FileLayout, index: RecordIndex, warnings, pager, progress):
        self.u8, self.layout, self.index, self.pager = u8, layout, index, pager
        self.progress = progress      # ParseOptions.progress
        self.activities = _readable_activities(path, layout, warnings)
        count = index.count
        self.prev_rec = _previous_records(index.segment)
        self.itv = _intervals(index.uptime, self.prev_rec, layout)
        self.stamps = index.ust * 1_000_000_000
        items_per_record = sum(int(a.items_per_record(index.run_nr[:, a.pos]).max()) if len(index.run_nr) else 0
                               for a in self.activities)
        self.step = int(np.clip(SLICE_ITEMS // max(items_per_record, 1), *SLICE_RECORDS))
        self.count = count

    def starts(self):
        return range(0, self.count, self.step)

    def fill(self, table: SeriesTable, start: int) -> None:
        """Add the rows of the slice of records beginning at ``start``."""
        index, layout = self.index, self.layout
        stop = min(self.count, start + self.step)
        base = max(start - 1, 0)          # the record before the slice, to compare with
        prev = self.prev_rec[base:stop] - base
        prev[prev < 0] = -1
        for activity in self.activities:
            offsets, nr = index.activity(activity.pos, base, stop)
            if not nr.any():
                continue
            items = activity.table(self.u8, offsets, nr, layout)
            for section, rows in _rows_for(activity.spec, items, prev, self.itv[base:stop],
                                           index.segment[base:stop], nr, activity.state):
                table.add(section, rows, self.stamps[base:stop])
            del items
        if self.pager is not None:
            self.pager(index.offsets[stop - 1])
        if self.progress is not None:
            self.progress(int(index.offsets[stop - 1]), len(self.u8))

    def stores(self, tz):
        """The figures a slice of records at a time, each slice a
        MetricStore (its long tables, end to end, are the whole table)."""
        ranks: dict = {}          # series in the whole file's order in every slice
        for start in self.starts():
            table = SeriesTable(self.layout.host, tz, ranks)
            self.fill(table, start)
            yield table.store()


def _events(path, index: RecordIndex, layout: FileLayout, tz):
    if not index.specials:
        return events_frame([])
    stamps = clock.timestamps(np.array([s.ust for s in index.specials], dtype=np.int64), tz)
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
        "utc_offset": clock.tz_name(clock.zone(offset)) if offset is not None else None,
        "restarts": sum(1 for s in index.specials if s.kind == "restart"),
        "comments": sum(1 for s in index.specials if s.kind == "comment"),
        "activities": [A.ACTIVITY_NAMES.get(a.id, str(a.id)) for a in layout.activities],
    }
