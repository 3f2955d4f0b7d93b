"""Write binary sysstat ``sa`` files (format 0x2175, sysstat 12.6 layout).

The files are what Debian's sysstat 12.6.1 ``sadc`` writes on a 64-bit
little-endian machine, so real ``sar``/``sadf`` read them: used to build
samples that reproduce field reports, and test files with known values.

A file is described by plain data::

    write_sa("sa06", host="web1", kernel="2.6.32-358.el6.x86_64", ncpu=24,
             utc_offset_minutes=480, records=[
        {"time": datetime(...tz-aware...), "uptime_cs": 360000,
         "cpu": [[user, nice, sys, idle, iowait, steal, hardirq, softirq, guest, guest_nice], ...],
         "memory": {"frmkb": ..., "tlmkb": ..., "tlskb": ..., ...},
         "net-dev": {"em2": {"rx_bytes": ..., "speed": 10000, "duplex": 1}},
         "disk": {(8, 0): {"nr_ios": ..., "rd_sect": ...}}, ...},
        {"time": ..., "type": "comment", "text": "nginx reload"},
        {"time": ..., "type": "restart"},
    ])

Counters are cumulative, as the kernel reports them; ``cpu`` lists CPU "all"
first, then each CPU.  Sections are named as in sarsleuth's metrics table
(``tasks``, ``swapping``, ``paging``, ``io``, ``memory`` (holds swap too),
``hugepages``, ``file``, ``queue``, ``disk``, ``net-dev``, ``net-edev``,
``net-sock``, ``net-tcp``...) and fields as in sysstat's structures (see
``sarsleuth.inputs.parsers.sa.activities``).  The activities written are those of
the first statistics record.
"""
from __future__ import annotations

import datetime as dt
import struct
from pathlib import Path

from sarsleuth.inputs.parsers.sa import activities as A

FORMAT_MAGIC = 0x2175
SYSSTAT_MAGIC = 0xD596
VERSION = (12, 6, 1, 0)
R_STATS, R_RESTART, R_COMMENT = 1, 2, 4

#: Activities carrying a per-record item count (sysstat's counted ones).
COUNTED = {A.A_CPU, A.A_IRQ, A.A_SERIAL, A.A_DISK, A.A_NET_DEV, A.A_NET_EDEV, A.A_PWR_CPU, A.A_PWR_FAN,
           A.A_PWR_TEMP, A.A_PWR_IN, A.A_PWR_USB, A.A_FS, A.A_NET_FC, A.A_NET_SOFT}

#: sadc's order of activities in a file.
ORDER = [A.A_CPU, A.A_PCSW, A.A_IRQ, A.A_SWAP, A.A_PAGE, A.A_IO, A.A_MEMORY, A.A_HUGE, A.A_KTABLES, A.A_QUEUE,
         A.A_SERIAL, A.A_DISK, A.A_NET_DEV, A.A_NET_EDEV, A.A_NET_NFS, A.A_NET_NFSD, A.A_NET_SOCK, A.A_NET_IP,
         A.A_NET_EIP, A.A_NET_ICMP, A.A_NET_EICMP, A.A_NET_TCP, A.A_NET_ETCP, A.A_NET_UDP, A.A_NET_SOCK6,
         A.A_NET_IP6, A.A_NET_EIP6, A.A_NET_ICMP6, A.A_NET_EICMP6, A.A_NET_UDP6, A.A_PWR_CPU, A.A_PWR_FAN,
         A.A_PWR_TEMP, A.A_PWR_IN, A.A_PWR_USB, A.A_FS, A.A_NET_FC, A.A_NET_SOFT, A.A_PSI_CPU, A.A_PSI_IO,
         A.A_PSI_MEM]

#: Section name (as in records) -> activity id; "memory" also carries swap.
SECTION_IDS = {spec.section: spec.id for spec in A.SPECS.values()}

FILE_MAGIC_SIZE = 76
FILE_HEADER_SIZE = 336
FILE_ACTIVITY_SIZE = 36
RECORD_HEADER_SIZE = 24
COMMENT_LEN = 64
UTSNAME_LEN = 65


def item_size(spec: A.Spec) -> int:
    """sizeof() of the activity's structure as gcc lays it out on x86_64."""
    numeric = len(spec.ull) * 8 + len(spec.ul) * 8 + len(spec.u) * 4
    end = max([numeric] + [numeric + off + length for _name, off, length in spec.strings])
    align = 8 if (spec.ull or spec.ul) else 4
    return -(-end // align) * align


def pack_item(spec: A.Spec, values: dict) -> bytes:
    """One item structure; missing fields are zero."""
    out = bytearray(item_size(spec))
    pos = 0
    for name in spec.ull:
        value = values.get(name, 0)
        struct.pack_into("<d" if spec.dbl else "<Q", out, pos, float(value) if spec.dbl else int(value))
        pos += 8
    for name in spec.ul:
        struct.pack_into("<Q", out, pos, int(values.get(name, 0)))
        pos += 8
    for name in spec.u:
        struct.pack_into("<I", out, pos, int(values.get(name, 0)) & 0xFFFFFFFF)
        pos += 4
    for name, off, length in spec.strings:
        raw = values.get(name, b"")
        if isinstance(raw, int):
            raw = bytes([raw])
        elif isinstance(raw, str):
            raw = raw.encode()
        out[pos + off:pos + off + length] = raw[:length - 1 if length > 1 else 1].ljust(length, b"\0")
    return bytes(out)


def _items(act_id: int, record: dict) -> list:
    """The list of value dicts of one activity in one record."""
    spec = A.SPECS[act_id]
    if act_id == A.A_CPU:
        return [dict(zip(A.CPU_FIELDS, row)) for row in record["cpu"]]
    data = record.get(spec.section)
    if act_id == A.A_MEMORY:
        data = record.get("memory")
    if data is None:
        return []
    if act_id == A.A_DISK:
        return [dict(v, major=k[0], minor=k[1]) for k, v in data.items()]
    if act_id in (A.A_NET_DEV, A.A_NET_EDEV):
        return [dict(v, interface=k) for k, v in data.items()]
    if isinstance(data, dict):
        return [data]
    return list(data)


def _activities_of(record: dict) -> list:
    present = {A.A_CPU} if record.get("cpu") else set()
    for section in record:
        if section in SECTION_IDS:
            present.add(SECTION_IDS[section])
    return [a for a in ORDER if a in present]


def _local_hms(when: dt.datetime, offset_minutes: int):
    local = when.astimezone(dt.timezone(dt.timedelta(minutes=offset_minutes)))
    return local.hour, local.minute, local.second, local


def _cstr(text: str, length: int) -> bytes:
    return text.encode()[:length - 1].ljust(length, b"\0")


def _file_header(host, kernel, ncpu, first, acts, offset_minutes, sysname, machine, tzname) -> bytes:
    _h, _m, _s, local = _local_hms(first, offset_minutes)
    magic = struct.pack("<HH4BII3I", SYSSTAT_MAGIC, FORMAT_MAGIC, *VERSION, FILE_HEADER_SIZE, 0, 1, 1, 12)
    magic = magic.ljust(FILE_MAGIC_SIZE, b"\0")
    header = struct.pack("<QQIIi3I3IIII", int(first.timestamp()), 100, ncpu + 1, len(acts), local.year - 1900,
                         0, 0, 9, 2, 0, 1, FILE_ACTIVITY_SIZE, RECORD_HEADER_SIZE, 0)
    header += struct.pack("<BBB", local.day, local.month - 1, 8)
    header += b"".join(_cstr(s, UTSNAME_LEN) for s in (sysname, host, kernel, machine)) + _cstr(tzname, 8)
    return magic + header.ljust(FILE_HEADER_SIZE, b"\0")


def _activity_list(acts: list, first: dict) -> bytes:
    out = b""
    for act_id in acts:
        spec = A.SPECS[act_id]
        types = (len(spec.ull), len(spec.ul), len(spec.u))
        nr = max(len(_items(act_id, first)), 1)
        out += struct.pack("<IIiiii3I", act_id, spec.magics[0], nr, 1, int(act_id in COUNTED), item_size(spec),
                           *types)
    return out


def _record_header(record: dict, rtype: int, offset_minutes: int) -> bytes:
    when = record["time"]
    hh, mm, ss, _local = _local_hms(when, offset_minutes)
    return struct.pack("<QQIBBBB", int(record.get("uptime_cs", 0)), int(when.timestamp()), 0, rtype, hh, mm, ss)


def _stats_body(record: dict, acts: list) -> bytes:
    parts = []
    for act_id in acts:
        spec = A.SPECS[act_id]
        items = _items(act_id, record)
        if act_id in COUNTED:
            parts.append(struct.pack("<i", len(items)))
        elif not items:
            items = [{}]
        parts.extend(pack_item(spec, values) for values in items)
    return b"".join(parts)


def write_sa(path, *, host: str, kernel: str, ncpu: int, records: list, utc_offset_minutes: int = 0,
             sysname: str = "Linux", machine: str = "x86_64", tzname: str = "UTC") -> Path:
    """Write ``records`` (see module docstring) to ``path``; returns the path."""
    stats = [r for r in records if r.get("type", "stats") == "stats"]
    if not stats:
        raise ValueError("at least one statistics record is needed")
    for rec in records:
        if rec["time"].tzinfo is None:
            raise ValueError("record times must be timezone-aware")
    acts = _activities_of(stats[0])
    chunks = [_file_header(host, kernel, ncpu, records[0]["time"], acts, utc_offset_minutes, sysname, machine,
                           tzname),
              _activity_list(acts, stats[0])]
    for rec in records:
        kind = rec.get("type", "stats")
        if kind == "restart":
            chunks.append(_record_header(rec, R_RESTART, utc_offset_minutes))
            chunks.append(struct.pack("<i", rec.get("ncpu", ncpu) + 1))
        elif kind == "comment":
            chunks.append(_record_header(rec, R_COMMENT, utc_offset_minutes))
            chunks.append(_cstr(rec.get("text", ""), COMMENT_LEN))
        else:
            chunks.append(_record_header(rec, R_STATS, utc_offset_minutes))
            chunks.append(_stats_body(rec, acts))
    path = Path(path)
    path.write_bytes(b"".join(chunks))
    return path
