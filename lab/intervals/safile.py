"""The record structure of a sysstat data file (format 0x2175: sysstat
11.7.1 to 12.x), enough to keep some statistics records and drop others.

A file, as ``sadc`` writes it (sysstat's ``sa.h``, ``sadc.c`` and
``sa_common.c``):

- ``struct file_magic`` (whose ``header_size`` gives the next part's size);
- ``struct file_header`` (``sa_act_nr`` activities, ``act_size`` and
  ``rec_size``, ``extra_next``);
- ``sa_act_nr`` ``struct file_activity`` of ``act_size`` bytes each (id,
  magic, nr, nr2, has_nr, size...);
- the header's extra structures when its ``extra_next`` is set;
- then records, each a ``struct record_header`` of ``rec_size`` bytes
  whose ``record_type`` says what follows:

  - R_STATS (1): the header's extra structures, then for each activity in
    the file's order a 32-bit item count when ``has_nr`` (else the
    activity's ``nr``), then ``size * count * nr2`` bytes;
  - R_RESTART (2): the new number of CPUs (32 bits), then extras;
  - R_COMMENT (4): 64 bytes of comment, then extras;
  - R_EXTRA_MIN..MAX (5-15): extras only.

Extra structures: a ``struct extra_desc`` (extra_nr, extra_size,
extra_next, three type counts: 24 bytes) then ``extra_nr * extra_size``
bytes, repeated while ``extra_next``.

Only the layout is read here; no statistic is interpreted.  Files of
another byte order or format are refused, naming the file and offset.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

SYSSTAT_MAGIC = 0xD596
FORMAT_MAGIC = 0x2175
FILE_MAGIC_SIZE = 76        # 2+2+4 bytes, five 32-bit words, 48 bytes of padding
EXTRA_DESC_SIZE = 24
MAX_COMMENT_LEN = 64
R_STATS, R_RESTART, R_COMMENT, R_EXTRA_MIN, R_EXTRA_MAX = 1, 2, 4, 5, 15
_NR = struct.Struct("<i")


class SaFormatError(ValueError):
    """A file this reader cannot walk: the message names the file and the
    byte offset."""


@dataclass(frozen=True)
class Activity:
    id: int
    nr: int
    nr2: int
    has_nr: bool
    size: int


@dataclass(frozen=True)
class Record:
    type: int
    uptime_cs: int
    ust_time: int
    clock_s: int        # its local wall-clock time (hour, minute, second) in seconds of the day
    start: int          # byte offset of its record header
    end: int            # byte offset just past what follows it


@dataclass
class SaFile:
    name: str
    data: bytes
    head_end: int               # magic, header, activity list and header extras
    activities: list[Activity]
    records: list[Record]
    long_size: int

    def stats(self) -> list[Record]:
        return [r for r in self.records if r.type == R_STATS]


def _u32(data: bytes, at: int) -> int:
    return struct.unpack_from("<I", data, at)[0]


def _skip_extras(data: bytes, at: int, name: str) -> int:
    while True:
        if at + EXTRA_DESC_SIZE > len(data):
            return len(data) + 1
        extra_nr, extra_size, extra_next = struct.unpack_from("<III", data, at)
        at += EXTRA_DESC_SIZE + extra_nr * extra_size
        if not extra_next:
            return at


def _record_end(data: bytes, at: int, rtype: int, extra_next: int, activities: list[Activity],
                name: str) -> int:
    """Where what follows a record header (at ``at``) ends; past the end
    of ``data`` when it is cut short."""
    if rtype == R_STATS:
        if extra_next:
            at = _skip_extras(data, at, name)
        for act in activities:
            nr = act.nr
            if act.has_nr:
                if at + 4 > len(data):
                    return len(data) + 1
                nr = _NR.unpack_from(data, at)[0]
                if nr < 0:
                    raise SaFormatError(f"{name}: byte {at}: activity id {act.id} counts {nr} items")
                at += 4
            at += act.size * nr * act.nr2
        return at
    at += {R_RESTART: 4, R_COMMENT: MAX_COMMENT_LEN}.get(rtype, 0)
    return _skip_extras(data, at, name) if extra_next and at <= len(data) else at


def read(data: bytes, name: str = "sa file") -> SaFile:
    """Walk a whole file; a record cut short at the end (sadc was stopped
    while writing) ends the walk, as it ends sar's reading."""
    if len(data) < FILE_MAGIC_SIZE:
        raise SaFormatError(f"{name}: byte 0: shorter than a sysstat file's magic header")
    sysstat_magic, format_magic = struct.unpack_from("<HH", data, 0)
    if sysstat_magic != SYSSTAT_MAGIC:
        swapped = struct.unpack_from(">H", data, 0)[0] == SYSSTAT_MAGIC
        raise SaFormatError(f"{name}: byte 0: " + ("a sysstat file of the other byte order" if swapped
                                                   else "not a sysstat data file"))
    if format_magic != FORMAT_MAGIC:
        raise SaFormatError(f"{name}: byte 2: data file format {format_magic:#06x}, "
                            f"only {FORMAT_MAGIC:#06x} (sysstat 11.7.1 and later) is read")
    header_size = _u32(data, 8)
    hdr_types = struct.unpack_from("<3I", data, 16)
    at = FILE_MAGIC_SIZE
    header = data[at:at + header_size]
    if len(header) < header_size:
        raise SaFormatError(f"{name}: byte {at}: the file header is cut short")
    # struct file_header: its long long, long and int fields, in that order
    ints = at + hdr_types[0] * 8 + hdr_types[1] * 8
    act_nr, _year = _u32(data, ints + 4), _u32(data, ints + 8)
    act_types = struct.unpack_from("<3I", data, ints + 12)
    rec_types = struct.unpack_from("<3I", data, ints + 24)
    act_size, rec_size = struct.unpack_from("<2I", data, ints + 36)
    # extra_next came with sysstat 12.1.1: a header of 11 ints has none
    head_extra = _u32(data, ints + 44) if hdr_types[2] >= 12 else 0
    long_size = data[ints + 4 * hdr_types[2] + 2]
    if not (0 < act_nr <= 1024 and 36 <= act_size <= 1024 and 24 <= rec_size <= 512):
        raise SaFormatError(f"{name}: byte {at}: implausible header (activities {act_nr}, "
                            f"activity size {act_size}, record size {rec_size})")
    if act_types[:2] != (0, 0) or act_types[2] < 6:
        raise SaFormatError(f"{name}: byte {ints + 12}: activity descriptions of an unknown layout {act_types}")
    at += header_size
    activities = []
    for i in range(act_nr):
        if at + act_size > len(data):
            raise SaFormatError(f"{name}: byte {at}: the activity list is cut short")
        aid, _magic, nr, nr2, has_nr, size = struct.unpack_from("<IIiiii", data, at)
        if nr < 1 or nr2 < 1 or not 0 < size <= 1024:
            raise SaFormatError(f"{name}: byte {at}: activity {i + 1} (id {aid}) has nr {nr}, nr2 {nr2}, size {size}")
        activities.append(Activity(aid, nr, nr2, bool(has_nr), size))
        at += act_size
    if head_extra:
        at = _skip_extras(data, at, name)
    head_end = at
    # struct record_header: uptime_cs and ust_time (long long), extra_next
    # (int), then record_type, hour, minute, second (chars)
    chars = rec_types[0] * 8 + rec_types[1] * 8 + rec_types[2] * 4
    records = []
    while at + rec_size <= len(data):
        start = at
        uptime_cs, ust_time = struct.unpack_from("<QQ", data, at)
        extra_next = _u32(data, at + rec_types[0] * 8 + rec_types[1] * 8) if rec_types[2] else 0
        rtype, hour, minute, second = data[at + chars:at + chars + 4]
        if not (R_STATS <= rtype <= R_EXTRA_MAX) or rtype == 3 or hour > 23 or minute > 59 or second > 60:
            raise SaFormatError(f"{name}: byte {at}: record type {rtype} at {hour:02}:{minute:02}:{second:02}"
                                " is not a record sadc writes")
        at = _record_end(data, at + rec_size, rtype, extra_next, activities, name)
        if at > len(data):      # the last record is cut short: sar stops there too
            break
        records.append(Record(rtype, uptime_cs, ust_time, hour * 3600 + minute * 60 + second, start, at))
    return SaFile(name, data, head_end, activities, records, long_size)


def kept_at_interval(sa: SaFile, seconds: int) -> list[Record]:
    """The records a host's ``sadc`` would have written every ``seconds``
    instead of the file's interval.  A host's collector runs from a timer
    at round times of its interval (sysstat's ``sysstat-collect.timer``
    fires at ``*:00/10``; cron's ``sa1`` alike), each run writing one
    record: so the first record of each slot of ``seconds`` of local wall
    clock is kept (a partial first slot is not: its record is not at a
    round time), restarts and comments where they are.  ``seconds``
    divides a day (10, 60, 600)."""
    if 86400 % seconds:
        raise ValueError(f"an interval dividing a day, not {seconds} s")
    kept, last_slot = [], None
    for r in sa.records:
        if r.type != R_STATS:
            kept.append(r)
            continue
        local = r.ust_time + _local_offset(r)
        slot = local // seconds
        if slot != last_slot and (last_slot is not None or local % seconds == 0):
            kept.append(r)
        last_slot = slot
    return kept


def _local_offset(r: Record) -> int:
    """Seconds from UTC to the record's local time (sadc stamps each record
    with its hour, minute and second in the host's zone)."""
    return (r.clock_s - r.ust_time) % 86400


def at_interval(sa: SaFile, seconds: int) -> bytes:
    """The file as ``sadc`` would have written it at ``seconds``: its
    header unchanged, every record kept by :func:`kept_at_interval`
    byte for byte.  sadc's counters are cumulative, and its instantaneous
    values (memory, queue, sockets) are what it read at that moment, so
    dropping records is exactly a longer interval."""
    return sa.data[:sa.head_end] + b"".join(sa.data[r.start:r.end] for r in kept_at_interval(sa, seconds))
