"""What sarsleuth reads of a journal entry, whatever carried it (a binary
journal file, ``journalctl -o export``, ``-o json``/``json-seq``).

An entry is its fields; the ones read here are :data:`ENTRY_FIELDS`.  Any
value may be binary: journalctl writes a field holding non-UTF-8 or
control bytes as an array of byte values in JSON (``"_HOSTNAME": [119,
101, 98]``), as a length-prefixed blob in the export format, and a field
given several times as an array of its values.  :func:`text_of` makes each
one text; :func:`entry_info` the line the log scan reads: the realtime
stamp (UTC), host, identifier (``kernel`` for the kernel's lines, which
then keep their ``_SOURCE_MONOTONIC_TIMESTAMP`` as the uptime dmesg
prints), pid, priority, unit and boot id.

Binary files and export streams reach the log scan as one line per entry
(:func:`entry_line`: the fields in a fixed order, separated by US
characters, the message last, its newlines written ``#012`` as rsyslog
writes them so that the scan keeps a multi-line message's first line as
the message and the rest as its report's lines).
"""
from __future__ import annotations

import datetime as dt

from sarsleuth.inputs.parsers.logs.lines import LineInfo

#: The fields read, in the order of an entry's line; MESSAGE is last.
ENTRY_FIELDS = ("__REALTIME_TIMESTAMP", "_SOURCE_REALTIME_TIMESTAMP", "_BOOT_ID", "_HOSTNAME", "_TRANSPORT",
                "SYSLOG_IDENTIFIER", "_COMM", "_PID", "SYSLOG_PID", "PRIORITY", "UNIT", "_SYSTEMD_UNIT",
                "_SOURCE_MONOTONIC_TIMESTAMP", "MESSAGE")
#: The same names as bytes: binary entries and export streams give their
#: fields as ``{name bytes: value bytes}``.
FIELD_NAMES = tuple(name.encode() for name in ENTRY_FIELDS)
WANTED = frozenset(FIELD_NAMES)
_SEPARATOR = "\x1f"
_SEPARATOR_BYTE = b"\x1f"
#: Microseconds since the epoch of 10000-01-01: a realtime at or past it is no time.
END_OF_TIME_US = 253_402_300_800_000_000
_SEVERITIES = ("emerg", "alert", "crit", "err", "warning", "notice", "info", "debug")
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def text_of(value) -> str | None:
    """A JSON field's value as text: a string as it is, an array of byte
    values decoded (UTF-8, invalid bytes replaced), the first value of a
    field given several times, None for a value journalctl left out
    (``null``: larger than its limit)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        if value and all(isinstance(b, int) and not isinstance(b, bool) for b in value):
            return bytes(b & 0xFF for b in value).decode("utf-8", "replace")
        for item in value:        # several values: the first that is one
            text = text_of(item) if isinstance(item, (str, list)) else None
            if text is not None:
                return text
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return None


def realtime_stamp(value: str | None):
    """The ``("aware", UTC datetime)`` stamp of a realtime in µs, or None
    (no number, or a time outside years 1970-9999)."""
    if not value or not value.isdigit():
        return None
    us = int(value)
    if not 0 < us < END_OF_TIME_US:
        return None
    return ("aware", _EPOCH + dt.timedelta(microseconds=us))


def out_of_range(value: str | None) -> bool:
    """Is ``value`` a realtime that is a number but no time sarsleuth can
    hold (0, or year 10000 or later)?"""
    return bool(value) and value.isdigit() and not 0 < int(value) < END_OF_TIME_US


def entry_info(fields: dict) -> LineInfo:
    """The line the log scan reads for an entry of text ``fields``."""
    get = fields.get
    realtime = get("__REALTIME_TIMESTAMP") or get("_SOURCE_REALTIME_TIMESTAMP")
    kernel = get("_TRANSPORT") == "kernel"
    tag = "kernel" if kernel else get("SYSLOG_IDENTIFIER") or get("_COMM")
    pid = get("_PID") or get("SYSLOG_PID")
    uptime = None
    mono = get("_SOURCE_MONOTONIC_TIMESTAMP")
    if kernel and mono and mono.isdigit():
        uptime = int(mono) / 1e6
    prio = get("PRIORITY")
    level = _SEVERITIES[int(prio)] if prio and prio.isdigit() and int(prio) < 8 else None
    info = LineInfo(get("MESSAGE") or "", stamp=realtime_stamp(realtime), host=get("_HOSTNAME") or None,
                    tag=tag or None, pid=int(pid) if pid and pid.isdigit() and len(pid) < 10 else None,
                    level=level, uptime=uptime)
    info.unit = get("UNIT") or get("_SYSTEMD_UNIT") or None
    info.boot = get("_BOOT_ID") or None
    return info


def _clean(value: bytes) -> bytes:
    """A field's value on an entry's line: no separator, no newline."""
    return value.replace(b"\x1f", b" ").replace(b"\r", b" ").replace(b"\n", b" ")


def entry_line(fields: dict, realtime: bytes | None = None, boot: bytes | None = None) -> bytes:
    """One entry as one line for the log scan: the minute of its realtime
    (for the lines per minute), then its fields in the order of
    :data:`ENTRY_FIELDS` (``fields``: name bytes -> value bytes;
    ``realtime``, ``boot``: the entry's own, from a binary file's ENTRY
    object, when its fields have none)."""
    get = fields.get
    parts = [get(name) or b"" for name in FIELD_NAMES[:-1]]
    if not parts[0]:
        parts[0] = realtime or parts[1]
    if not parts[2] and boot:
        parts[2] = boot
    when = parts[0]
    minute = b""
    if when.isdigit() and len(when) < 19 and 0 < int(when) < END_OF_TIME_US:
        minute = b"%d" % (int(when) // 60_000_000)
    head = _SEPARATOR_BYTE.join(parts)
    if head.count(_SEPARATOR_BYTE) != len(parts) - 1 or b"\n" in head or b"\r" in head:
        head = _SEPARATOR_BYTE.join(_clean(p) for p in parts)
    message = get(b"MESSAGE") or b""
    if b"\n" in message:
        message = message.rstrip(b"\n").replace(b"\n", b"#012")
    if b"\r" in message:
        message = message.replace(b"\r", b" ")
    return minute + _SEPARATOR_BYTE + head + _SEPARATOR_BYTE + message + b"\n"


def parse_entry_line(text: str) -> LineInfo:
    """An entry's line (see :func:`entry_line`) back to what the scan reads."""
    values = text.split(_SEPARATOR, len(ENTRY_FIELDS))[1:]      # after the minute
    if len(values) != len(ENTRY_FIELDS):
        return LineInfo(text, prefixed=False)
    return entry_info({name: value for name, value in zip(ENTRY_FIELDS, values) if value})


#: The minute of an entry's line, for the lines per minute (minutes since the epoch).
ENTRY_VOLUME = rb"^(\d{1,12})\x1f"


def minute_key(raw: bytes) -> tuple | None:
    """``("aware", minute)`` of an entry line's minute."""
    if not raw.isdigit():
        return None
    return ("aware", _EPOCH + dt.timedelta(minutes=int(raw)))


def realtime_minute_key(raw: bytes) -> tuple | None:
    """``("aware", minute)`` of a realtime in µs, None outside years 1970-9999."""
    if not raw.isdigit() or len(raw) > 18:
        return None
    us = int(raw)
    if not 0 < us < END_OF_TIME_US:
        return None
    return ("aware", _EPOCH + dt.timedelta(minutes=us // 60_000_000))
