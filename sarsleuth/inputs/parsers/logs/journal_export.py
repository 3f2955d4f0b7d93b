"""``journalctl -o export`` streams (kind ``journal-export``), as systemd
documents the format (``docs/JOURNAL_EXPORT_FORMATS.md``): an entry is
its fields, one ``NAME=value`` line each, or, for a value holding control
characters or bytes that are not UTF-8, the name on a line of its own, the
value's size as a little-endian 64-bit number, the value and a newline;
a blank line ends an entry.  journalctl adds ``__CURSOR``,
``__REALTIME_TIMESTAMP``, ``__MONOTONIC_TIMESTAMP`` (and ``__SEQNUM``,
``__SEQNUM_ID``) to each entry of a journal file; a stream written by hand
or for ``systemd-journal-remote`` may lack them.

The stream is read in blocks (compressed or not), never whole.  An entry's
events cite the line of its ``MESSAGE`` field (the name's line for a binary
one), whose byte offset the quotes read again.  A line that is no field
skips its entry, with a warning naming the line; a stream cut inside an
entry keeps the fields read before the cut.
"""
from __future__ import annotations

import os
import re
import struct
from collections import Counter

from sarsleuth.errors import located
from sarsleuth.inputs.parsers.base import ParseOptions, Parser
from sarsleuth.inputs.parsers.logs import journal_fields
from sarsleuth.inputs.reading import read_chunks

#: A field's name as journald accepts it (and journalctl's ``__`` fields).
RE_NAME = re.compile(rb"_{0,2}[A-Z0-9][A-Z0-9_]*\Z")
RE_FIELD_LINE = re.compile(rb"^_{0,2}[A-Z0-9][A-Z0-9_]*=", re.M)
#: Fields one of which an exported entry carries.
_MARKS = (b"__CURSOR=", b"__REALTIME_TIMESTAMP=", b"_BOOT_ID=", b"MESSAGE=", b"_TRANSPORT=")
#: Bytes read at a time.
CHUNK_BYTES = 4 << 20
#: A binary value larger than this is skipped, not held (a core dump).
MAX_VALUE_BYTES = 1 << 20
_SIZE = struct.Struct("<Q")


class _Reader:
    """The stream's bytes from a moving position, with line numbers."""

    def __init__(self, path: str, warnings: list):
        self.chunks = read_chunks(path, CHUNK_BYTES, warnings)
        self.buf, self.base, self.pos = b"", 0, 0     # buf holds the stream from byte ``base``
        self.line, self.counted = 1, 0                # line number of stream byte ``counted``
        self.ended = False

    def more(self) -> bool:
        if self.ended:
            return False
        chunk = next(self.chunks, None)
        if chunk is None:
            self.ended = True
            return False
        self._count(self.pos)
        drop = self.pos
        self.buf, self.base, self.pos = self.buf[drop:] + chunk, self.base + drop, 0
        self.counted -= drop
        return True

    def _count(self, pos: int) -> None:
        if pos > self.counted:
            self.line += self.buf.count(b"\n", self.counted, pos)
            self.counted = pos

    def line_number(self) -> int:
        self._count(self.pos)
        return self.line

    def offset(self) -> int:
        return self.base + self.pos

    def read_line(self) -> bytes | None:
        """The next line without its newline; None at the end (a last line
        without newline is a line)."""
        while True:
            nl = self.buf.find(b"\n", self.pos)
            if nl >= 0:
                line, self.pos = self.buf[self.pos:nl], nl + 1
                return line
            if not self.more():
                if self.pos < len(self.buf):
                    line, self.pos = self.buf[self.pos:], len(self.buf)
                    return line
                return None

    def read(self, n: int) -> bytes | None:
        """The next ``n`` bytes (None when the stream ends first); more than
        :data:`MAX_VALUE_BYTES` are skipped and b"" stands for them."""
        keep = n <= MAX_VALUE_BYTES
        while len(self.buf) - self.pos < n:
            if not keep and len(self.buf) - self.pos > 0:
                self._count(len(self.buf))
                n -= len(self.buf) - self.pos
                self.pos = len(self.buf)
            if not self.more():
                return None
        out = self.buf[self.pos:self.pos + n] if keep else b""
        self.pos += n
        return out


def iter_entries(path: str, warnings: list):
    """(fields {name: value}, the cited line, its byte offset) of each entry."""
    reader = _Reader(path, warnings)
    fields: dict = {}
    cited = first = None
    skipping = False
    bad = 0
    while True:
        at, number = reader.offset(), reader.line_number()
        line = reader.read_line()
        if line is None or not line:
            if fields and not skipping:
                yield fields, cited or first
            fields, cited, skipping = {}, None, False
            if line is None:
                break
            continue
        if skipping:
            continue
        if not fields:
            first = (number, at)
        eq = line.find(b"=")
        if eq > 0 and RE_NAME.match(line, 0, eq):
            name, value = line[:eq], line[eq + 1:]
        elif RE_NAME.match(line):
            raw = reader.read(8)
            value = None if raw is None or len(raw) < 8 else reader.read(_SIZE.unpack(raw)[0])
            if value is None:
                warnings.append(located(path, f"cut inside the binary field {line[:64].decode('ascii', 'replace')} "
                                              "(the entry's fields before it are kept)", offset=at))
                if fields:
                    yield fields, cited or first
                break
            name = line
            if reader.read(1) not in (b"\n", None):
                bad += 1
                skipping = True
                if bad == 1:
                    warnings.append(located(path, "a binary field not followed by a newline: its entry is left out",
                                            line=number))
                continue
        else:
            bad += 1
            skipping = True
            if bad == 1:
                warnings.append(located(path, "a line that is no journal field: its entry is left out", line=number))
            continue
        if name == b"MESSAGE":
            cited = (number, at)
        fields.setdefault(name, value)
    if bad > 1:
        warnings.append(located(path, f"{bad:,} entries left out in all (lines that are no journal field)"))


def _stream(path: str, warnings: list, where: dict):
    from sarsleuth.inputs.parsers.logs.journal_stream import StreamEntry
    for fields, (number, offset) in iter_entries(path, warnings):
        realtime = fields.get(b"__REALTIME_TIMESTAMP") or fields.get(b"_SOURCE_REALTIME_TIMESTAMP") or b""
        mono = fields.get(b"__MONOTONIC_TIMESTAMP")
        boot = fields.get(b"_BOOT_ID")
        where["at"] = offset
        yield StreamEntry(int(realtime) if realtime.isdigit() else 0, None, journal_fields.entry_line(fields),
                          (path, number, offset), boot.decode("ascii", "replace") if boot else None,
                          int(mono) if mono and mono.isdigit() else None)


def read_export(path, options: ParseOptions | None = None, kind: str = "journal-export"):
    from sarsleuth.inputs.parsers.logs import journal_stream
    options = options or ParseOptions()
    path = os.fspath(path)
    warnings: list = []
    where: dict = {"at": 0}
    try:
        total = os.path.getsize(path)
    except OSError:
        total = None
    told = options.progress

    def progress():
        if told is not None:
            told(min(where["at"], total) if total else where["at"], total)

    return journal_stream.read_entries(path, kind, "export", [_stream(path, warnings, where)], options, warnings,
                                       progress)


def _head_entries(head: bytes) -> list[dict]:
    """The text fields of the entries a head shows (for sniffing and hosts)."""
    entries, current = [], {}
    for line in head.split(b"\n")[:-1]:
        if not line:
            if current:
                entries.append(current)
            current = {}
            continue
        eq = line.find(b"=")
        if eq > 0:
            current.setdefault(line[:eq], line[eq + 1:])
    if current:
        entries.append(current)
    return entries


class JournalExportParser(Parser):
    kind = "journal-export"
    binary = True             # a binary field's size holds NUL bytes
    priority = 3
    description = "systemd journal export format (journalctl -o export, systemd-journal-remote's input)"
    anchors_uptime = True     # the kernel's entries keep their uptime
    shape = "log"

    @classmethod
    def hosts_in(cls, path, head: bytes) -> tuple[tuple, dict]:
        hosts = Counter(e[b"_HOSTNAME"].decode("utf-8", "replace") for e in _head_entries(head) if e.get(b"_HOSTNAME"))
        return tuple(h for h, _ in hosts.most_common()), {}

    @classmethod
    def sniff(cls, head: bytes, text: str) -> float:
        first = head[:head.find(b"\n")] if b"\n" in head else head
        if not (RE_FIELD_LINE.match(first) or (RE_NAME.match(first) and len(first) < 64)):
            return 0.0
        if not any(mark in head for mark in _MARKS):
            return 0.0
        fields = blank = other = 0
        for line in head[:16384].split(b"\n")[:-1]:
            if not line:
                blank += 1
            elif RE_FIELD_LINE.match(line):
                fields += 1
            else:
                other += 1            # a binary field's name, size and value, or no field
        return 0.98 if fields >= 3 and fields >= 4 * other else 0.0

    @classmethod
    def parse(cls, path, options: ParseOptions):
        return read_export(path, options, cls.kind)
