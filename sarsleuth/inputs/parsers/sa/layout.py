"""Headers of binary sysstat ``sa`` files, every format since sysstat 9.

A file starts with a *magic* block (sysstat magic 0xd596, a format magic and
the sysstat version), then a *file header* (host name, kernel, date, number
of CPUs...), then one *activity descriptor* per collected activity, then the
records.  Five format magics exist:

* 0x2170 (sysstat 9.1.5 and older 9.x; Red Hat's 9.0.4 of RHEL 6.5+ writes
  the same layout under 0x1170), 0x2171 (9.1.6 to 10.2.x): a short
  magic block, a fixed file header, activity descriptors without field
  counts, 48-byte record headers counting uptime in jiffies.
* 0x2173 (10.3.1 to 11.6.x): the magic block carries the header size; after
  a restart record come the descriptors of the "volatile" activities (CPU).
* 0x2175 (11.7.1 and later): every structure is described by its own counts
  of 64-bit, long and 32-bit fields, so newer files with extra fields remain
  readable; records carry uptime in 1/100 s.

The byte order is the writer's (the sysstat magic reads 0x96d5 when it
differs from little-endian) and ``long`` fields are 4 or 8 bytes wide
depending on the writer's word size.  This module turns all of that into one
:class:`FileLayout`; nothing here trusts a count without bounding it first.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

from sarsleuth.errors import InputError
from sarsleuth.inputs.parsers.sa.magic import sniff_magic  # noqa: F401 (the readers import it from here)

#: Red Hat's sysstat 9.0.4 of RHEL 6.5 to 6.10 writes 0x1170 over the layout
#: of 0x2170 (same header, descriptors and structures: its I/O and disk
#: figures add up only when read that way), so that older sar refuses it.
RED_HAT_0x1170 = 0x1170

#: Record types.
R_STATS, R_RESTART, R_LAST_STATS, R_COMMENT = 1, 2, 3, 4
R_EXTRA_MIN, R_EXTRA_MAX = 5, 15

#: Width in bytes of one field of each group (64-bit, long, 32-bit) in the
#: 0x2175 layout: longs always take an 8-byte slot.
GROUP_WIDTH = (8, 8, 4)

#: Sanity bounds, the same spirit as sysstat's own.
MAX_NR_ACT = 256
MAX_FILE_HEADER_SIZE = 8192
MAX_FILE_ACTIVITY_SIZE = 1024
MAX_RECORD_HEADER_SIZE = 512
MAX_ITEM_STRUCT_SIZE = 1024
NR_MAX = 65536 * 4096
NR2_MAX = 4096
MAX_EXTRA_NR = 8192
MAX_EXTRA_SIZE = 1024
COMMENT_LEN = 64
UTSNAME_LEN = 65
#: sysstat's NR_CPUS + 1 (CPU "all" and each CPU): NR_CPUS is the C
#: library's __CPU_SETSIZE, else 8192; a restart record's CPU count is
#: bounded by it (sa_common.c, read_nr_value).
NR_CPUS_MAX = 8192 + 1
#: Items each known activity may hold (activity.c's ``nr_max``), the largest
#: any release allowed for that activity: counts per CPU are NR_CPUS + 1,
#: interrupts NR_IRQS + 1 (4097) before 12.5.6 made them per CPU.  Activities
#: not listed are unknown here (NR_MAX bounds them).
ACTIVITY_NR_MAX = {
    1: NR_CPUS_MAX, 3: NR_CPUS_MAX, 10: 65536, 11: 65536 * 4096, 12: 65536, 13: 65536,
    30: NR_CPUS_MAX, 31: 4096, 32: 4096, 33: 4096, 35: NR_CPUS_MAX, 36: 65536, 37: 65536 * 4096,
    38: 65536, 39: NR_CPUS_MAX, 43: 4096,
    **{single: 1 for single in (2, 4, 5, 6, 7, 8, 9, *range(14, 30), 34, 40, 41, 42)},
}
#: ``sa_sizeof_long``: the writer's C long, 4 or 8 bytes.
LONG_SIZES = (4, 8)
#: ``sa_hz`` (sysconf(_SC_CLK_TCK)): 100 on every Linux but alpha's 1024.
MAX_HZ = 100_000
#: Years a file header may carry (sysstat writes years since 1900; a few
#: writers the full year), within what a timestamp can hold.
FILE_YEARS = (1970, 2261)


def map_size(types) -> int:
    """Bytes covered by the numeric fields of a structure described by
    (count of 64-bit, count of long, count of 32-bit) fields."""
    return types[0] * GROUP_WIDTH[0] + types[1] * GROUP_WIDTH[1] + types[2] * GROUP_WIDTH[2]


@dataclass
class FileActivity:
    """One activity descriptor as the file declares it."""

    id: int
    magic: int
    nr: int            # items per record (for has_nr activities: at creation)
    nr2: int           # sub-items per item
    size: int          # bytes of one item structure
    has_nr: bool = False           # a 32-bit item count precedes the data
    types: tuple = (0, 0, 0)       # field counts (0x2175 only)


@dataclass
class RecordHeaderLayout:
    """Where the fields of a record header lie (relative offsets)."""

    size: int
    uptime_off: int          # 64-bit uptime (1/100 s, or jiffies in old formats)
    uptime_alt_off: int | None   # old formats: uptime0 (the one sysstat uses)
    ust_off: int             # epoch seconds
    ust_is_long: bool        # old formats store it as a C long
    extra_next_off: int | None
    type_off: int            # record_type, then hour, minute, second bytes
    uptime_in_jiffies: bool


@dataclass
class FileLayout:
    """Everything needed to walk the records of one file."""

    format_magic: int
    endian: str                      # "<" or ">"
    long_size: int                   # 4 or 8
    version: str                     # sysstat version that wrote the file
    hz: int
    ncpu: int
    host: str
    sysname: str
    kernel: str
    machine: str
    tzname: str
    file_time: int                   # epoch seconds of file creation
    file_date: tuple                 # (year, month, day)
    activities: list = field(default_factory=list)
    data_offset: int = 0
    record: RecordHeaderLayout | None = None
    vol_act_nr: int = 0              # 0x2173: descriptors after a restart record
    extra_next: bool = False         # 0x2175: extra structures follow the header
    warnings: list = field(default_factory=list)


def _cstr(raw: bytes) -> str:
    """A NUL-terminated C string, non-printable characters replaced by '.'
    the way sysstat shows them."""
    text = raw.split(b"\0", 1)[0].decode("latin-1")
    return "".join(ch if 32 <= ord(ch) < 127 else "." for ch in text)


class _Reader:
    """Bounds-checked reads of the bytes of the file."""

    def __init__(self, path, buf, endian: str):
        self.path = path
        self.buf = buf
        self.endian = endian

    def need(self, offset: int, size: int, what: str) -> None:
        if offset < 0 or offset + size > len(self.buf):
            raise InputError(self.path, f"file ends inside the {what} (needs {size} bytes)", offset=offset)

    def u16(self, off):
        return struct.unpack_from(self.endian + "H", self.buf, off)[0]

    def u32(self, off):
        return struct.unpack_from(self.endian + "I", self.buf, off)[0]

    def i32(self, off):
        return struct.unpack_from(self.endian + "i", self.buf, off)[0]

    def u64(self, off):
        return struct.unpack_from(self.endian + "Q", self.buf, off)[0]

    def ulong(self, off, long_size):
        """A C long stored in an 8-byte slot (value in the first 4 bytes of the
        slot when the writer was 32-bit, whatever the byte order)."""
        return self.u32(off) if long_size == 4 else self.u64(off)


def read_layout(path, buf) -> FileLayout:
    """Parse magic, file header and activity list; raise InputError (with the
    byte offset) on anything inconsistent."""
    found = sniff_magic(bytes(buf[:4]))
    if found is None:
        raise InputError(path, "not a sysstat binary file (bad sysstat magic)", offset=0)
    endian, fmt = found
    rd = _Reader(path, buf, endian)
    rd.need(0, 8, "file magic")
    version = ".".join(str(b) for b in bytes(buf[4:7]))
    if fmt == 0x2175:
        return _read_2175(rd, version)
    if fmt == 0x2173:
        return _read_2173(rd, version)
    if fmt in (0x2170, 0x2171, RED_HAT_0x1170):
        return _read_217x(rd, version, fmt)
    raise InputError(path, f"unsupported sa format magic 0x{fmt:04x} (sysstat {version})", offset=2)


# --- 0x2175 -----------------------------------------------------------------

_MAGIC_2175_SIZE = 76    # u16 x2, 4 bytes of version, 5 u32, 48 bytes of padding


def _read_2175(rd: _Reader, version: str) -> FileLayout:
    path = rd.path
    rd.need(0, _MAGIC_2175_SIZE, "file magic")
    header_size = rd.u32(8)
    hdr_types = (rd.u32(16), rd.u32(20), rd.u32(24))
    if not 0 < header_size <= MAX_FILE_HEADER_SIZE:
        raise InputError(path, f"file header size {header_size} out of range", offset=8)
    if map_size(hdr_types) > header_size or hdr_types[0] < 1 or hdr_types[1] < 1 or hdr_types[2] < 9:
        raise InputError(path, f"file header field counts {hdr_types} inconsistent with its size {header_size}",
                         offset=16)
    base = _MAGIC_2175_SIZE
    rd.need(base, header_size, "file header")
    chars = base + map_size(hdr_types)
    if chars + 3 + 4 * UTSNAME_LEN > base + header_size:
        raise InputError(path, "file header too small for its strings", offset=base)
    long_size = _long_size(rd, chars + 2)
    ints = base + hdr_types[0] * 8 + hdr_types[1] * 8
    u = [rd.u32(ints + 4 * i) for i in range(min(hdr_types[2], 12))]
    cpu_nr, act_nr, year = u[0], u[1], _signed(u[2])
    if not 1 <= cpu_nr <= NR_CPUS_MAX:
        raise InputError(path, f"file header claims {cpu_nr} CPU lines (sysstat writes 1 to {NR_CPUS_MAX})",
                         offset=ints)
    hz = int(rd.ulong(base + 8, long_size))
    if not 1 <= hz <= MAX_HZ:
        raise InputError(path, f"file header claims {hz} clock ticks a second (HZ; 100 on Linux)", offset=base + 8)
    _check_date(path, year, ints + 8, buf_byte(rd, chars + 1), buf_byte(rd, chars), chars)
    act_types, rec_types = tuple(u[3:6]), tuple(u[6:9])
    act_size, rec_size = u[9], u[10]
    extra_next = bool(u[11]) if len(u) > 11 else False
    if act_nr > MAX_NR_ACT:
        raise InputError(path, f"{act_nr} activities declared (max {MAX_NR_ACT})", offset=ints + 4)
    if act_size > MAX_FILE_ACTIVITY_SIZE or map_size(act_types) > act_size or act_types[2] < 9:
        raise InputError(path, f"activity descriptor size {act_size} / field counts {act_types} inconsistent",
                         offset=ints + 12)
    if rec_size > MAX_RECORD_HEADER_SIZE or map_size(rec_types) > rec_size or rec_types[0] < 2:
        raise InputError(path, f"record header size {rec_size} / field counts {rec_types} inconsistent",
                         offset=ints + 24)
    if map_size(rec_types) + 4 > rec_size:
        raise InputError(path, f"record header size {rec_size} too small", offset=ints + 40)
    layout = FileLayout(
        format_magic=0x2175, endian=rd.endian, long_size=long_size, version=version,
        hz=hz, ncpu=max(cpu_nr - 1, 1) if cpu_nr > 1 else 1,
        sysname=_cstr(bytes(rd.buf[chars + 3:chars + 3 + UTSNAME_LEN])),
        host=_cstr(bytes(rd.buf[chars + 3 + UTSNAME_LEN:chars + 3 + 2 * UTSNAME_LEN])),
        kernel=_cstr(bytes(rd.buf[chars + 3 + 2 * UTSNAME_LEN:chars + 3 + 3 * UTSNAME_LEN])),
        machine=_cstr(bytes(rd.buf[chars + 3 + 3 * UTSNAME_LEN:chars + 3 + 4 * UTSNAME_LEN])),
        tzname=_cstr(bytes(rd.buf[chars + 3 + 4 * UTSNAME_LEN:min(chars + 3 + 4 * UTSNAME_LEN + 8,
                                                                 base + header_size)])),
        file_time=int(rd.u64(base)),
        file_date=(_year(year), buf_byte(rd, chars + 1) + 1, buf_byte(rd, chars)),
        extra_next=extra_next,
    )
    off = base + header_size
    for i in range(act_nr):
        rd.need(off, act_size, f"descriptor of activity #{i + 1}")
        v = [rd.u32(off + 4 * k) for k in range(9)]
        if v[4] not in (0, 1):
            raise InputError(path, f"activity {v[0]}: has_nr is {v[4]} (0 or 1)", offset=off + 16)
        act = FileActivity(id=v[0], magic=v[1], nr=_signed(v[2]), nr2=_signed(v[3]), has_nr=bool(v[4]),
                           size=_signed(v[5]), types=(v[6], v[7], v[8]))
        _check_activity(path, act, off)
        if map_size(act.types) > act.size:
            raise InputError(path, f"activity {act.id}: field counts {act.types} exceed its item size {act.size}",
                             offset=off + 24)
        layout.activities.append(act)
        off += act_size
    rt_off = map_size(rec_types)
    layout.record = RecordHeaderLayout(
        size=rec_size, uptime_off=0, uptime_alt_off=None, ust_off=8, ust_is_long=False,
        extra_next_off=rec_types[0] * 8 + rec_types[1] * 8 if rec_types[2] >= 1 else None,
        type_off=rt_off, uptime_in_jiffies=False)
    layout.data_offset = off
    if extra_next:
        layout.data_offset = skip_extra(rd, off, "file header")
    return layout


def buf_byte(rd: _Reader, off: int) -> int:
    return int(rd.buf[off])


def _signed(v: int) -> int:
    return v - (1 << 32) if v >= 1 << 31 else v


def _year(raw: int) -> int:
    """sysstat stores years since 1900; a few writers stored the full year."""
    return raw if raw >= 1900 else 1900 + raw


def _long_size(rd: _Reader, off: int) -> int:
    size = buf_byte(rd, off)
    if size not in LONG_SIZES:
        raise InputError(rd.path, f"file header says a C long is {size} bytes (4 or 8)", offset=off)
    return size


def _check_date(path, year: int, year_off: int, month: int, day: int, day_off: int) -> None:
    """The file header's date: bytes day and month (0-11) at ``day_off``,
    the year (since 1900) at ``year_off``."""
    if not FILE_YEARS[0] <= _year(year) <= FILE_YEARS[1]:
        raise InputError(path, f"file header dated in the year {_year(year)}", offset=year_off)
    if month > 11:
        raise InputError(path, f"file header dated in month {month + 1}", offset=day_off + 1)
    if not 1 <= day <= 31:
        raise InputError(path, f"file header dated on day {day} of a month", offset=day_off)


def _check_activity(path, act: FileActivity, off: int) -> None:
    if act.nr < 1 or act.nr > NR_MAX:
        raise InputError(path, f"activity {act.id}: item count {act.nr} out of range", offset=off + 8)
    most = ACTIVITY_NR_MAX.get(act.id)
    if most is not None and act.nr > most:
        raise InputError(path, f"activity {act.id}: item count {act.nr} above the {most} sysstat allows it",
                         offset=off + 8)
    if act.nr2 < 1 or act.nr2 > NR2_MAX:
        raise InputError(path, f"activity {act.id}: sub-item count {act.nr2} out of range", offset=off + 12)
    if act.size <= 0 or act.size > MAX_ITEM_STRUCT_SIZE:
        raise InputError(path, f"activity {act.id}: item size {act.size} out of range", offset=off)


def skip_extra(rd: _Reader, off: int, where: str) -> int:
    """Skip the chain of unknown "extra" structures that may follow a header;
    return the offset after it."""
    for _ in range(64):
        rd.need(off, 24, f"extra structure after the {where}")
        extra_nr, extra_size, extra_next = rd.u32(off), rd.u32(off + 4), rd.u32(off + 8)
        types = (rd.u32(off + 12), rd.u32(off + 16), rd.u32(off + 20))
        if map_size(types) > extra_size or extra_nr > MAX_EXTRA_NR or extra_size > MAX_EXTRA_SIZE:
            raise InputError(rd.path, f"extra structure after the {where} is inconsistent", offset=off)
        off += 24 + extra_nr * extra_size
        if not extra_next:
            return off
    raise InputError(rd.path, f"too many extra structures after the {where}", offset=off)


# --- 0x2173 / 0x2171 / 0x2170 ----------------------------------------------------

_OLD_RECORD = RecordHeaderLayout(size=48, uptime_off=0, uptime_alt_off=16, ust_off=32, ust_is_long=True,
                                 extra_next_off=None, type_off=40, uptime_in_jiffies=True)


def _old_header(rd: _Reader, off: int, with_cpu_fields: bool):
    """The pre-11.7 file header: a long time, counts, then date bytes and
    strings (64-bit writers and 32-bit writers share the layout since every
    field is explicitly aligned)."""
    rd.need(off, 16 + 4 * UTSNAME_LEN + (8 if with_cpu_fields else 0), "file header")
    chars = off + (24 if with_cpu_fields else 16) - 4
    long_size = _long_size(rd, chars + 3)
    ust = rd.ulong(off, long_size)
    if with_cpu_fields:
        last_cpu, act_nr, vol_nr = rd.u32(off + 8), rd.u32(off + 12), rd.u32(off + 16)
    else:
        last_cpu, act_nr, vol_nr = 0, rd.u32(off + 8), 0
    day, month, year = buf_byte(rd, chars), buf_byte(rd, chars + 1), buf_byte(rd, chars + 2)
    _check_date(rd.path, year, chars + 2, month, day, chars)
    strings = [_cstr(bytes(rd.buf[chars + 4 + k * UTSNAME_LEN:chars + 4 + (k + 1) * UTSNAME_LEN]))
               for k in range(4)]
    return long_size, ust, last_cpu, act_nr, vol_nr, (_year(year), month + 1, day), strings


def _read_2173(rd: _Reader, version: str) -> FileLayout:
    path = rd.path
    rd.need(0, 76, "file magic")
    header_size = rd.u32(8)
    if not 0 < header_size <= MAX_FILE_HEADER_SIZE:
        raise InputError(path, f"file header size {header_size} out of range", offset=8)
    base = 76        # u16 x2, version bytes, u32 header_size, 64 bytes of padding
    long_size, ust, _last_cpu, act_nr, vol_nr, date, strings = _old_header(rd, base, True)
    layout = _old_layout(0x2173, rd, version, long_size, ust, date, strings)
    if vol_nr > act_nr:
        raise InputError(path, f"{vol_nr} volatile activities declared, more than the {act_nr} activities "
                               "of the file", offset=base + 16)
    layout.vol_act_nr = vol_nr
    layout.data_offset = _old_activities(rd, layout, base + header_size, act_nr, 20)
    return layout


def _read_217x(rd: _Reader, version: str, fmt: int) -> FileLayout:
    base = 8
    long_size, ust, _last_cpu, act_nr, _vol, date, strings = _old_header(rd, base, False)
    header_size = (16 + 4 * UTSNAME_LEN + 7) // 8 * 8
    layout = _old_layout(fmt, rd, version, long_size, ust, date, strings)
    layout.data_offset = _old_activities(rd, layout, base + header_size, act_nr, 20 if fmt == 0x2171 else 12)
    return layout


def _old_layout(fmt, rd, version, long_size, ust, date, strings) -> FileLayout:
    return FileLayout(format_magic=fmt, endian=rd.endian, long_size=long_size, version=version, hz=100,
                      ncpu=1, sysname=strings[0], host=strings[1], kernel=strings[2], machine=strings[3],
                      tzname="", file_time=int(ust), file_date=date, record=_OLD_RECORD)


def _old_activities(rd: _Reader, layout: FileLayout, off: int, act_nr: int, desc_size: int) -> int:
    if act_nr > MAX_NR_ACT:
        raise InputError(rd.path, f"{act_nr} activities declared (max {MAX_NR_ACT})", offset=off - 1)
    for i in range(act_nr):
        rd.need(off, desc_size, f"descriptor of activity #{i + 1}")
        if desc_size == 12:       # 0x2170: id, nr, size (one magic per activity then)
            act = FileActivity(id=rd.u32(off), magic=0x8A, nr=rd.i32(off + 4), nr2=1, size=rd.i32(off + 8))
        else:
            act = FileActivity(id=rd.u32(off), magic=rd.u32(off + 4), nr=rd.i32(off + 8), nr2=rd.i32(off + 12),
                               size=rd.i32(off + 16))
        _check_activity(rd.path, act, off)
        layout.activities.append(act)
        off += desc_size
    # the CPU activity lists CPU "all" then each CPU
    cpu = next((a for a in layout.activities if a.id == 1), None)
    layout.ncpu = max(cpu.nr - 1, 1) if cpu else 1
    return off
