"""The sa format of sysstat 6.1 to 7.0 (format magic 0x2169, RHEL 5).

Before sysstat 9 a file had no activity list: a file header (epoch time, a
flag word of collected activities, counts of interrupts, disks, CPUs,
serial lines and interfaces, then the format magic at byte 0x24, the size
of the fixed statistics structure, the date and the host's strings), then
records.  A record is one fixed ``file_stats`` structure (every global
counter, 64-bit fields on 16-byte slots, C longs and 32-bit fields on
8-byte slots whatever the writer's word size, the record type and local
time last) followed, for statistics records, by the variable parts in a
fixed order: per-CPU counters, the per-IRQ table, serial lines, per-CPU
interrupt counts, interfaces, disks.  A restart record ("dummy") is the
fixed structure alone.

Figures follow sar 7.0: rates over the uptime of one CPU (``uptime0`` on
SMP), CPU "all" over the uptime summed over CPUs, each CPU over its own
ticks; counters that went backwards count as 0, 32-bit counters wrap.
"""
from __future__ import annotations

import struct

import numpy as np

from sarsleuth.errors import InputError, located
from sarsleuth.inputs.parsers.sa.layout import LONG_SIZES, NR_CPUS_MAX, FileLayout, RecordHeaderLayout, UTSNAME_LEN
from sarsleuth.inputs.parsers.sa.records import RecordIndex, Special, gather
# the header facts and the sniffer live in a module free of numpy (sniffing imports it)
from sarsleuth.inputs.parsers.sa.header_2169 import (FORMAT_MAGIC, INTS, INTS_AT, LONGS, LONGS_AT, MAGIC_OFFSET,  # noqa: F401
                                              TYPE_AT, ULL, sniff)

HEADER_SIZE = (0x2C + 3 * UTSNAME_LEN + 7) // 8 * 8
R_STATS, R_DUMMY, R_LAST_STATS = 1, 2, 3

#: Activity flags of the file header (sa.h of sysstat 6.x/7.0).
A_ONE_IRQ = 0x10
FLAG_NAMES = {0x000001: "tasks", 0x000002: "context switches", 0x000004: "cpu", 0x000008: "interrupts",
              0x000010: "per-IRQ interrupts", 0x000020: "swapping", 0x000040: "io", 0x000080: "memory",
              0x000100: "serial", 0x000200: "net-dev", 0x000400: "net-edev", 0x000800: "disk",
              0x004000: "net-nfs", 0x008000: "net-nfsd", 0x010000: "paging", 0x040000: "file",
              0x080000: "net-sock", 0x100000: "queue"}

CPU_FIELDS = ("idle", "iowait", "user", "nice", "system", "steal")     # 64-bit, 16-byte slots
#: Per-CPU structure sizes seen in these files (with or without a spare slot).
CPU_SIZES = (112, 96)
SERIAL_SIZE, IRQ_CPU_SIZE, NET_DEV_SIZE, DISK_SIZE, ONE_IRQ_SIZE = 32, 8, 144, 80, 4 * 256
NET_FIELDS = ("rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "rx_compressed", "tx_compressed", "multicast",
              "collisions", "rx_errors", "tx_errors", "rx_dropped", "tx_dropped", "rx_fifo_errors",
              "tx_fifo_errors", "rx_frame_errors", "tx_carrier_errors")


class _Header:
    def __init__(self, path, buf, endian):
        if len(buf) < HEADER_SIZE:
            raise InputError(path, "file ends inside the file header", offset=0)
        e = endian
        if buf[0x2B] not in LONG_SIZES:
            raise InputError(path, f"file header says a C long is {buf[0x2B]} bytes (4 or 8)", offset=0x2B)
        self.long_size = buf[0x2B]
        self.ust = struct.unpack_from(e + ("Q" if self.long_size == 8 else "I"), buf, 0)[0]
        (self.actflag, self.nr_pid, self.irqcpu, self.nr_disk, self.proc, self.serial,
         self.iface) = struct.unpack_from(e + "7I", buf, 8)
        self.st_size = struct.unpack_from(e + "H", buf, MAGIC_OFFSET + 2)[0]
        self.date = (1900 + buf[0x2A], buf[0x29] + 1, buf[0x28])
        self.strings = [_cstr(buf[0x2C + k * UTSNAME_LEN:0x2C + (k + 1) * UTSNAME_LEN]) for k in range(3)]
        for k, (name, value, bound) in enumerate((
                ("interrupts per CPU", self.irqcpu, 4096), ("disks", self.nr_disk, 65536),
                ("CPUs", self.proc, NR_CPUS_MAX), ("serial lines", self.serial, 65536),
                ("interfaces", self.iface, 65536))):
            if value > bound:
                raise InputError(path, f"file header declares {value} {name} (at most {bound})", offset=16 + 4 * k)


def _cstr(raw) -> str:
    text = bytes(raw).split(b"\0", 1)[0].decode("latin-1")
    return "".join(ch if 32 <= ord(ch) < 127 else "." for ch in text)


class _Shape:
    """Where the variable parts of a statistics record lie."""

    def __init__(self, hdr: _Header, cpu_units: int, cpu_size: int):
        self.cpu_units, self.cpu_size = cpu_units, cpu_size
        self.cpu_at = hdr.st_size
        self.serial_at = self.cpu_at + cpu_units * cpu_size + (ONE_IRQ_SIZE if hdr.actflag & A_ONE_IRQ else 0)
        self.irq_cpu_at = self.serial_at + hdr.serial * SERIAL_SIZE
        self.net_at = self.irq_cpu_at + (cpu_units * hdr.irqcpu * IRQ_CPU_SIZE if hdr.irqcpu else 0)
        self.disk_at = self.net_at + hdr.iface * NET_DEV_SIZE
        self.size = self.disk_at + hdr.nr_disk * DISK_SIZE


def read_layout_2169(path, buf, endian) -> tuple:
    hdr = _Header(path, buf, endian)
    layout = FileLayout(format_magic=FORMAT_MAGIC, endian=endian, long_size=hdr.long_size, version="6.1-7.0",
                        hz=100, ncpu=max(hdr.proc, 1), sysname=hdr.strings[0], host=hdr.strings[1],
                        kernel=hdr.strings[2], machine="", tzname="", file_time=int(hdr.ust), file_date=hdr.date,
                        data_offset=HEADER_SIZE,
                        record=RecordHeaderLayout(size=hdr.st_size, uptime_off=16, uptime_alt_off=None,
                                                  ust_off=LONGS_AT, ust_is_long=True, extra_next_off=None,
                                                  type_off=TYPE_AT, uptime_in_jiffies=True))
    return hdr, layout


def _valid_type(buf, pos, hdr) -> bool:
    if pos + hdr.st_size > len(buf):
        return False
    rtype, hh, mm, ss = buf[pos + TYPE_AT:pos + TYPE_AT + 4]
    return rtype in (R_STATS, R_DUMMY, R_LAST_STATS) and hh <= 23 and mm <= 59 and ss <= 60


def _guess_shape(buf, hdr, pos) -> _Shape:
    """The per-CPU part's size and count, as the next record confirms."""
    candidates = [_Shape(hdr, units, size) for units in (hdr.proc, hdr.proc + 1) for size in CPU_SIZES]
    candidates.append(_Shape(hdr, 0, CPU_SIZES[0]))       # a uniprocessor writer: no per-CPU part
    for shape in candidates:
        nxt = pos + shape.size
        if nxt == len(buf) or _valid_type(buf, nxt, hdr):
            return shape
    return candidates[0]


def walk(path, buf, hdr: _Header, endian, warnings):
    """Offsets of the statistics records, restarts as specials."""
    pos = HEADER_SIZE
    stats, specials = [], []
    shape = None
    segment, segments = 0, []
    while pos < len(buf):
        if not _valid_type(buf, pos, hdr):
            found = _resync(buf, hdr, endian, pos, shape, specials, stats)
            if found is None:
                warnings.append(located(path, "invalid or truncated record; records from here on skipped "
                                        f"({len(buf) - pos} bytes)", offset=pos))
                break
            about = max(1, round((found - pos) / shape.size)) if shape else None
            count = f", about {about} record{'s' if about != 1 else ''}" if about else ""
            warnings.append(located(path, f"invalid record; {found - pos} bytes skipped{count}, reading again "
                                    f"at byte {found}", offset=pos))
            pos = found
            continue
        rtype = buf[pos + TYPE_AT]
        hms = tuple(buf[pos + TYPE_AT + 1:pos + TYPE_AT + 4])
        ust = _long(buf, pos + LONGS_AT, endian, hdr.long_size)
        if rtype == R_DUMMY:
            specials.append(Special("restart", ust, hms, pos, ncpu=None))
            segment += 1
            pos += hdr.st_size
            continue
        if shape is None:
            shape = _guess_shape(buf, hdr, pos)
        if pos + shape.size > len(buf):
            warnings.append(located(path, "file ends inside a statistics record; the rest is skipped", offset=pos))
            break
        stats.append(pos)
        segments.append(segment)
        pos += shape.size
    return np.array(stats, dtype=np.int64), np.array(segments, dtype=np.int32), specials, shape


def _resync(buf, hdr, endian, pos, shape, specials, stats):
    """The next offset after ``pos`` where a statistics record with a sane
    type, clock and time (not before the last good record) begins and is
    followed by another record or the end of the file; None if none."""
    if shape is None:
        return None
    u8 = np.frombuffer(buf, dtype=np.uint8)
    last = _long(buf, stats[-1] + LONGS_AT, endian, hdr.long_size) if stats else 0
    limit = len(buf) - shape.size
    cand = np.arange(pos + 1, max(limit + 1, pos + 1), dtype=np.int64)
    if not len(cand):
        return None
    kind = u8[cand + TYPE_AT]
    ok = ((kind == R_STATS) | (kind == R_LAST_STATS)) & (u8[cand + TYPE_AT + 1] <= 23)
    ok &= (u8[cand + TYPE_AT + 2] <= 59) & (u8[cand + TYPE_AT + 3] <= 60)
    for c in cand[ok][:4096]:
        ust = _long(buf, int(c) + LONGS_AT, endian, hdr.long_size)
        nxt = int(c) + shape.size
        if last <= ust <= last + 7 * 86400 and (nxt == len(buf) or _valid_type(buf, nxt, hdr)):
            return int(c)
    return None


def _long(buf, off, endian, long_size):
    return struct.unpack_from(endian + ("Q" if long_size == 8 else "I"), buf, off)[0]


def build_index(buf, offsets, segments, specials, endian, long_size) -> RecordIndex:
    u8 = np.frombuffer(buf, dtype=np.uint8)
    index = RecordIndex()
    index.specials = specials
    index.count = len(offsets)
    index.offsets = offsets
    up0 = gather(u8, offsets + 16, endian + "u8")
    up = gather(u8, offsets, endian + "u8")
    index.uptime = np.where(up0 != 0, up0, up)
    index.ust = gather(u8, offsets + LONGS_AT, endian + ("u8" if long_size == 8 else "u4")).astype(np.int64)
    index.hms = np.stack([u8[offsets + TYPE_AT + k] for k in (1, 2, 3)], axis=1) if len(offsets) else \
        np.zeros((0, 3), dtype=np.uint8)
    index.segment = segments
    return index


def skipped_activities(hdr: _Header) -> list:
    """Activities the file holds that are not turned into figures."""
    out = []
    if hdr.actflag & A_ONE_IRQ:
        out.append("per-IRQ interrupts")
    if hdr.irqcpu:
        out.append("per-CPU interrupts")
    return out
