"""Walking the records of an sa file and gathering activity items, vectorized.

Records follow each other without an index: a record header, then (for a
statistics record) each activity's items, some activities prefixed by a
32-bit item count.  Walking them one by one in Python would be slow on a
day sampled every second, so the walker decodes one record, then assumes the
next ones repeat its shape (same item counts, hence the same size) and
checks that guess for a whole run at once with numpy; the first record that
breaks the pattern is decoded alone, and a new run starts from it.

The result, :class:`RecordIndex`, lists for every statistics record its time
stamps and segment (a restart starts a new one), and for every run of
records of one shape the offset and item count of each activity's data.
A ``release`` callback is told which bytes the walk is done with, so that the
pages of a memory-mapped file need not stay resident.  Items are then read
field by field with one gather per field (:func:`gather`).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

from sarsleuth.errors import located
from sarsleuth.inputs.parsers.sa.layout import (ACTIVITY_NR_MAX, COMMENT_LEN, MAX_EXTRA_NR, MAX_EXTRA_SIZE, NR_CPUS_MAX, NR_MAX,
                                         R_COMMENT, R_EXTRA_MAX, R_EXTRA_MIN, R_RESTART, FileLayout, map_size)

#: Record times beyond this (year 2242) can only come from damage.
MAX_EPOCH = 1 << 33

#: Largest run checked in one numpy pass (bounded so a damaged tail costs
#: little).
MAX_RUN = 1 << 16

#: After damage: bytes scanned at a time for a record header, headers
#: tried, how far (seconds) a record found again may be from the last good
#: one, and how many times a file may be resynchronised.
RESYNC_SCAN = 1 << 20
MAX_RESYNC_TRIES = 4096
MAX_RESYNC_GAP = 7 * 86400
MAX_RESYNCS = 1000

#: Bytes of records looked at in one numpy pass: bounds how much of a
#: memory-mapped file is resident at once (see ``release``).
PASS_BYTES = 16 << 20


@dataclass
class Special:
    """A restart or comment record."""

    kind: str            # "restart" or "comment"
    ust: int
    hms: tuple
    offset: int
    text: str = ""
    ncpu: int | None = None


@dataclass
class RecordIndex:
    """Where everything is, for the statistics records of one file.

    Per record: start offset, uptime, time stamps and segment.  Activity
    data is kept per *run* of records sharing one shape (same item counts,
    so the same offsets relative to the record start): a day sampled every
    second is a handful of runs, not tens of thousands of rows per activity.
    :meth:`activity` expands them for a range of records."""

    offsets: list = field(default_factory=list)      # chunks of int64 arrays (record start)
    uptime: list = field(default_factory=list)       # chunks of uint64 arrays (1/100 s)
    ust: list = field(default_factory=list)          # chunks of int64 arrays (epoch s)
    hms: list = field(default_factory=list)          # chunks of (n, 3) uint8 arrays
    segment: list = field(default_factory=list)      # chunks of int32 arrays
    run_start: list = field(default_factory=list)    # first record of each run
    run_rel: list = field(default_factory=list)      # per run: data offset of each activity, from record start
    run_nr: list = field(default_factory=list)       # per run: item count of each activity
    specials: list = field(default_factory=list)
    count: int = 0

    def add(self, offsets, uptime, ust, hms, segment, rel_offsets, nrs):
        """A run of records sharing one shape: ``rel_offsets`` and ``nrs``
        give, per activity, where its data starts relative to the record and
        how many items it has."""
        self.offsets.append(offsets)
        self.uptime.append(uptime)
        self.ust.append(ust)
        self.hms.append(hms)
        self.segment.append(np.full(len(offsets), segment, dtype=np.int32))
        self.run_start.append(self.count)
        self.run_rel.append(list(rel_offsets))
        self.run_nr.append(list(nrs))
        self.count += len(offsets)

    def finish(self, n_acts: int):
        """Concatenate the chunks into flat arrays."""
        def cat(chunks, dtype, shape=(0,)):
            return np.concatenate(chunks) if chunks else np.zeros(shape, dtype=dtype)
        self.offsets = cat(self.offsets, np.int64)
        self.uptime = cat(self.uptime, np.uint64)
        self.ust = cat(self.ust, np.int64)
        self.hms = cat(self.hms, np.uint8, (0, 3))
        self.segment = cat(self.segment, np.int32)
        self.run_start = np.array(self.run_start, dtype=np.int64)
        self.run_rel = np.array(self.run_rel, dtype=np.int64).reshape(len(self.run_start), n_acts)
        self.run_nr = np.array(self.run_nr, dtype=np.int64).reshape(len(self.run_start), n_acts)
        return self

    def activity(self, pos: int, start: int = 0, stop: int | None = None):
        """(data offset, item count) of activity ``pos`` in records
        ``start``..``stop``, as int64 arrays."""
        stop = self.count if stop is None else stop
        run = np.searchsorted(self.run_start, np.arange(start, stop, dtype=np.int64), side="right") - 1
        return self.offsets[start:stop] + self.run_rel[run, pos], self.run_nr[run, pos]

    def items_per_record(self) -> np.ndarray:
        """Item count of every activity, largest over the runs."""
        if not len(self.run_nr):
            return np.zeros(self.run_nr.shape[1], dtype=np.int64)
        return self.run_nr.max(axis=0)


class _Damage(Exception):
    """Raised inside the walk when the rest of the file cannot be trusted."""

    def __init__(self, reason, offset):
        super().__init__(reason)
        self.reason = reason
        self.offset = offset


class Walker:
    """Walks the record area of one file (see module docstring)."""

    def __init__(self, path, buf, layout: FileLayout, warnings: list, release=None):
        self.path = path
        self.release = release or (lambda upto: None)   # told when bytes before an offset are done with
        self.buf = buf
        self.u8 = np.frombuffer(buf, dtype=np.uint8)
        self.layout = layout
        self.warnings = warnings
        self.e = layout.endian
        self.rec = layout.record
        self.acts = layout.activities
        self.nr_now = [a.nr for a in self.acts]     # item counts of activities without their own count
        self.index = RecordIndex()
        self.segment = 0
        self.last_size = 0            # bytes of the last statistics record read
        self.resyncs = 0

    # -- small readers --------------------------------------------------------
    def _u32(self, off):
        return struct.unpack_from(self.e + "I", self.buf, off)[0]

    def _i32(self, off):
        return struct.unpack_from(self.e + "i", self.buf, off)[0]

    def _header(self, pos):
        rec = self.rec
        if pos + rec.size > len(self.buf):
            raise _Damage("file ends inside a record header", pos)
        up = struct.unpack_from(self.e + "Q", self.buf, pos + rec.uptime_off)[0]
        if rec.uptime_alt_off is not None:
            alt = struct.unpack_from(self.e + "Q", self.buf, pos + rec.uptime_alt_off)[0]
            up = alt or up       # uptime0 is what sysstat uses; zero on single-CPU writers
        if rec.ust_is_long and self.layout.long_size == 4:
            ust = self._u32(pos + rec.ust_off)
        else:
            ust = struct.unpack_from(self.e + "Q", self.buf, pos + rec.ust_off)[0]
        rtype, hh, mm, ss = self.buf[pos + rec.type_off:pos + rec.type_off + 4]
        extra = self._u32(pos + rec.extra_next_off) if rec.extra_next_off is not None else 0
        return up, ust, rtype, (hh, mm, ss), extra

    def _skip_extra(self, off):
        for _ in range(64):
            if off + 24 > len(self.buf):
                raise _Damage("file ends inside an extra structure", off)
            nr, size, nxt = self._u32(off), self._u32(off + 4), self._u32(off + 8)
            types = (self._u32(off + 12), self._u32(off + 16), self._u32(off + 20))
            if map_size(types) > size or nr > MAX_EXTRA_NR or size > MAX_EXTRA_SIZE:
                raise _Damage("inconsistent extra structure", off)
            off += 24 + nr * size
            if not nxt:
                return off
        raise _Damage("endless chain of extra structures", off)

    # -- the walk ---------------------------------------------------------------
    def walk(self) -> RecordIndex:
        """Index every record; after a damaged one, go on from the next
        place a record header is found again, saying what was skipped."""
        pos = self.layout.data_offset
        end = len(self.buf)
        while pos < end:
            try:
                pos = self._step(pos)
                self.release(pos)
                continue
            except _Damage as dmg:
                damaged_at = pos
                found = self._resync(pos)
                if found is None:
                    self.warnings.append(located(self.path, f"{dmg.reason}; records from here on skipped "
                                                 f"({end - damaged_at} bytes)", offset=dmg.offset))
                    break
                skipped = found - damaged_at
                about = max(1, round(skipped / self.last_size)) if self.last_size else None
                count = f", about {about} record{'s' if about != 1 else ''}" if about else ""
                self.warnings.append(located(self.path, f"{dmg.reason}; {skipped} bytes skipped{count}, "
                                             f"reading again at byte {found}", offset=dmg.offset))
                self.resyncs += 1
                pos = found
        return self.index.finish(len(self.acts))

    # -- finding records again after damage ---------------------------------------
    def _resync(self, pos):
        """Offset of the first statistics record after ``pos`` whose header
        is sane, whose time follows the last good one and whose data ends
        where another record header (or the file) begins; None if none."""
        rec = self.rec
        if self.resyncs >= MAX_RESYNCS:
            return None
        last = int(self.index.ust[-1][-1]) if self.index.ust else None
        limit = len(self.buf) - rec.size
        start = pos + 1
        while start <= limit:
            stop = min(limit + 1, start + RESYNC_SCAN)
            cand = np.arange(start, stop, dtype=np.int64)
            kind = self.u8[cand + rec.type_off]
            ok = ((kind == 1) | (kind == 3)) & (self.u8[cand + rec.type_off + 1] <= 23)
            ok &= (self.u8[cand + rec.type_off + 2] <= 59) & (self.u8[cand + rec.type_off + 3] <= 60)
            cand = cand[ok]
            if len(cand):
                _up, usts, _hms = self._headers_of(cand)
                good = (usts > 0) & (usts < MAX_EPOCH)
                if last is not None:
                    good &= (usts >= last) & (usts <= last + MAX_RESYNC_GAP)
                for c in cand[good][:MAX_RESYNC_TRIES]:
                    if self._record_fits(int(c)):
                        return int(c)
            self.release(stop)          # a long damaged stretch is never resident at once
            start = stop
        return None

    def _record_fits(self, pos) -> bool:
        try:
            if self.rec.extra_next_off is not None and self._u32(pos + self.rec.extra_next_off):
                return False
            end = self._decode_stats(pos + self.rec.size)[3]
        except _Damage:
            return False
        if end == len(self.buf):
            return True
        if end + self.rec.size > len(self.buf):
            return False
        kind, hh, mm, ss = self.buf[end + self.rec.type_off:end + self.rec.type_off + 4]
        return 1 <= kind <= R_EXTRA_MAX and hh <= 23 and mm <= 59 and ss <= 60

    def _step(self, pos):
        up, ust, rtype, hms, extra = self._header(pos)
        if rtype == 0 or rtype > R_EXTRA_MAX or hms[0] > 23 or hms[1] > 59 or hms[2] > 60:
            raise _Damage(f"invalid record header (type {rtype}, time {hms[0]}:{hms[1]}:{hms[2]})", pos)
        if ust > MAX_EPOCH:
            raise _Damage(f"implausible record time ({ust} s after 1970)", pos)
        body = pos + self.rec.size
        if rtype == R_RESTART:
            return self._restart(pos, body, ust, hms, extra)
        if rtype == R_COMMENT:
            return self._comment(pos, body, ust, hms, extra)
        if extra:
            body = self._skip_extra(body)
        if R_EXTRA_MIN <= rtype <= R_EXTRA_MAX:
            return body
        return self._stats_run(pos, body, up, ust, hms)

    def _restart(self, pos, body, ust, hms, extra):
        fmt = self.layout.format_magic
        ncpu = None
        if fmt == 0x2175:
            if body + 4 > len(self.buf):
                raise _Damage("file ends inside a restart record", body)
            ncpu = self._i32(body)
            if ncpu < 1 or ncpu > NR_CPUS_MAX:
                raise _Damage(f"restart record with {ncpu} CPU lines (sysstat writes 1 to {NR_CPUS_MAX})", body)
            body += 4
            for i, act in enumerate(self.acts):
                if act.id == 1 and not act.has_nr:
                    self.nr_now[i] = ncpu
        elif fmt == 0x2173:
            for _ in range(self.layout.vol_act_nr):
                if body + 20 > len(self.buf):
                    raise _Damage("file ends inside a restart record", body)
                act_id, nr = self._u32(body), self._i32(body + 8)
                if act_id and not 0 < nr <= ACTIVITY_NR_MAX.get(act_id, NR_MAX):
                    raise _Damage(f"restart record: activity {act_id} with {nr} items", body + 8)
                if act_id:
                    for i, act in enumerate(self.acts):
                        if act.id == act_id:
                            self.nr_now[i] = nr
                    if act_id == 1:
                        ncpu = nr
                body += 20
        if extra:
            body = self._skip_extra(body)
        self.segment += 1
        self.index.specials.append(Special("restart", ust, hms, pos, ncpu=ncpu))
        return body

    def _comment(self, pos, body, ust, hms, extra):
        if body + COMMENT_LEN > len(self.buf):
            raise _Damage("file ends inside a comment record", body)
        raw = bytes(self.buf[body:body + COMMENT_LEN]).split(b"\0", 1)[0]
        text = "".join(ch if 32 <= ord(ch) < 127 else "." for ch in raw.decode("latin-1"))
        body += COMMENT_LEN
        if extra and self.layout.format_magic == 0x2175:
            body = self._skip_extra(body)
        self.index.specials.append(Special("comment", ust, hms, pos, text=text))
        return body

    def _decode_stats(self, body):
        """Item counts and data offsets of every activity in one record."""
        offsets, nrs, nr_fields = [], [], []
        off = body
        end = len(self.buf)
        for i, act in enumerate(self.acts):
            if act.has_nr:
                if off + 4 > end:
                    raise _Damage("file ends inside a statistics record", off)
                nr = self._i32(off)
                if nr < 0 or nr > ACTIVITY_NR_MAX.get(act.id, NR_MAX):
                    raise _Damage(f"activity {act.id}: item count {nr} out of range", off)
                nr_fields.append((off, nr))
                off += 4
            else:
                nr = self.nr_now[i]
            offsets.append(off)
            nrs.append(nr)
            off += nr * act.nr2 * act.size
            if off > end:
                raise _Damage("file ends inside a statistics record", offsets[-1])
        return offsets, nrs, nr_fields, off

    def _stats_run(self, pos, body, up, ust, hms):
        """Index the run of records that starts at ``pos`` and shares the
        shape of its first record; return where the run ends."""
        offsets, nrs, nr_fields, end_off = self._decode_stats(body)
        size = end_off - pos
        self.last_size = size
        parts = [(np.array([pos], dtype=np.int64), np.array([up], dtype=np.uint64),
                  np.array([ust], dtype=np.int64), np.array([hms], dtype=np.uint8).reshape(1, 3))]
        total = 1
        if self.rec.size <= size:
            step = 64
            per_pass = max(64, PASS_BYTES // size)      # bounds the bytes touched per pass
            while True:
                avail = (len(self.buf) - pos) // size - total
                k = min(step, avail, MAX_RUN, per_pass)
                if k <= 0:
                    break
                starts = pos + size * np.arange(total, total + k, dtype=np.int64)
                good = self._same_shape(starts, pos, nr_fields)
                ups, usts, hmss = self._headers_of(starts[:good])
                insane = np.flatnonzero(usts > MAX_EPOCH)
                if len(insane):
                    good = int(insane[0])
                    ups, usts, hmss = ups[:good], usts[:good], hmss[:good]
                if good:
                    parts.append((starts[:good], ups, usts, hmss))
                    total += good
                    self.release(int(starts[good - 1]))
                if good < k:
                    break
                step = min(step * 4, MAX_RUN)
        cat = np.concatenate
        self.index.add(cat([p[0] for p in parts]), cat([p[1] for p in parts]), cat([p[2] for p in parts]),
                       cat([p[3] for p in parts]), self.segment, [o - pos for o in offsets], nrs)
        return pos + size * total

    def _same_shape(self, starts, pos, nr_fields) -> int:
        """How many of the records at ``starts`` (in a row) look like
        statistics records with the item counts of the one at ``pos``."""
        rt = self.rec.type_off
        ok = np.isin(self.u8[starts + rt], (1, 3))
        ok &= (self.u8[starts + rt + 1] <= 23) & (self.u8[starts + rt + 2] <= 59) & (self.u8[starts + rt + 3] <= 60)
        if self.rec.extra_next_off is not None:
            ok &= gather(self.u8, starts + self.rec.extra_next_off, self.e + "u4") == 0
        for off, nr in nr_fields:
            ok &= gather(self.u8, starts + (off - pos), self.e + "i4") == nr
        bad = np.flatnonzero(~ok)
        return int(bad[0]) if len(bad) else len(starts)

    def _headers_of(self, starts):
        rec = self.rec
        up = gather(self.u8, starts + rec.uptime_off, self.e + "u8")
        if rec.uptime_alt_off is not None:
            alt = gather(self.u8, starts + rec.uptime_alt_off, self.e + "u8")
            up = np.where(alt != 0, alt, up)
        if rec.ust_is_long and self.layout.long_size == 4:
            ust = gather(self.u8, starts + rec.ust_off, self.e + "u4").astype(np.int64)
        else:
            ust = gather(self.u8, starts + rec.ust_off, self.e + "u8").astype(np.int64)
        hms = np.stack([self.u8[starts + rec.type_off + k] for k in (1, 2, 3)], axis=1)
        return up.astype(np.uint64), ust, hms


def _windows(u8: np.ndarray, width: int) -> np.ndarray:
    """A zero-copy (len - width + 1, width) view: row i is bytes i..i+width."""
    return np.lib.stride_tricks.as_strided(u8, shape=(max(len(u8) - width + 1, 0), width),
                                           strides=(u8.strides[0], u8.strides[0]), writeable=False)


def gather(u8: np.ndarray, offsets: np.ndarray, dtype: str) -> np.ndarray:
    """Values of ``dtype`` at the given byte offsets (any alignment), in
    native byte order.  Offsets must lie inside the buffer."""
    dt = np.dtype(dtype)
    if len(offsets) == 0:
        return np.zeros(0, dtype=dt.newbyteorder("="))
    raw = np.ascontiguousarray(_windows(u8, dt.itemsize)[offsets])
    return raw.view(dt).reshape(len(offsets)).astype(dt.newbyteorder("="), copy=False)


def gather_bytes(u8: np.ndarray, offsets: np.ndarray, length: int) -> np.ndarray:
    """(n, length) uint8 array of the bytes at each offset."""
    if len(offsets) == 0:
        return np.zeros((0, length), dtype=np.uint8)
    return np.ascontiguousarray(_windows(u8, length)[offsets])
