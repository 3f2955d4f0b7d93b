"""Journal entries (from binary files or an export stream) through the log
scan, into one :class:`~sarsleuth.model.Source`.

Each entry becomes one line (:func:`~sarsleuth.inputs.parsers.logs.journal_fields.
entry_line`) in blocks of a few MB that the log scan reads as it reads any
log; each line remembers the file, the number and the byte offset it
stands for (an entry of a binary file: its number in the file and its ENTRY
object; of an export stream: the line of its MESSAGE field), so events cite
what the file holds.  Several files of one host are read as one stream:
their entries interleaved by time, and an entry found in two files (a
rotated file and a copy of it, a ``.journal~`` beside the file that
replaced it) counted once.  Boots are counted from the entries' boot ids:
``meta["boots"]`` lists each boot's id, its first and last entry times and
the time it began (realtime minus monotonic time).
"""
from __future__ import annotations

import datetime as dt
import heapq
import os

from sarsleuth.errors import InputError, located
from sarsleuth.inputs.parsers.base import ParseOptions
from sarsleuth.inputs.parsers.logs import journal_fields
from sarsleuth.inputs.parsers.logs.blocks import Block
from sarsleuth.inputs.parsers.logs.scan import LogFormat, VolumeSpec, build_source, scan

#: Bytes of entry lines handed to the scan at a time.
BLOCK_BYTES = 4 << 20
#: Entry identities remembered to find an entry read twice (the merged
#: stream is in time order: a copy comes right after its original).
RECENT_IDENTITIES = 65_536
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


class StreamEntry:
    """One entry on its way to the scan."""

    __slots__ = ("realtime", "identity", "line", "origin", "boot", "monotonic")

    def __init__(self, realtime: int, identity, line: bytes, origin: tuple, boot: str | None, monotonic: int | None):
        self.realtime, self.identity, self.line, self.origin = realtime, identity, line, origin
        self.boot, self.monotonic = boot, monotonic

    def __lt__(self, other: "StreamEntry") -> bool:
        return self.realtime < other.realtime


class _Tally:
    """What the stream counts on its way: entries, copies, untimed ones, boots."""

    def __init__(self):
        self.entries = self.copies = self.untimed = 0
        self.first_untimed = None
        self.boots: dict = {}            # boot id -> [first µs, last µs, start µs, entries]

    def add(self, e: StreamEntry) -> None:
        self.entries += 1
        timed = 0 < e.realtime < journal_fields.END_OF_TIME_US
        if not timed:
            self.untimed += 1
            if self.first_untimed is None:
                self.first_untimed = e.origin
        if e.boot and timed:
            boot = self.boots.get(e.boot)
            start = e.realtime - e.monotonic if e.monotonic is not None and e.monotonic <= e.realtime else None
            if boot is None:
                self.boots[e.boot] = [e.realtime, e.realtime, start, 1]
            else:
                boot[0], boot[1] = min(boot[0], e.realtime), max(boot[1], e.realtime)
                boot[2] = boot[2] if boot[2] is not None else start
                boot[3] += 1

    def boot_list(self) -> list[dict]:
        def when(us):
            return None if us is None else (_EPOCH + dt.timedelta(microseconds=us)).isoformat()
        return [{"boot_id": boot, "first": when(first), "last": when(last), "began": when(start), "entries": n}
                for boot, (first, last, start, n) in sorted(self.boots.items(), key=lambda kv: kv[1][0])]


def merged(streams: list, tally: _Tally):
    """The entries of several files in time order, each entry once."""
    recent: dict = {}
    source = heapq.merge(*streams) if len(streams) > 1 else streams[0]
    for e in source:
        if e.identity is not None:
            if e.identity in recent:
                tally.copies += 1
                continue
            if len(recent) >= RECENT_IDENTITIES:
                for old in list(recent)[:RECENT_IDENTITIES // 2]:
                    del recent[old]
            recent[e.identity] = True
        tally.add(e)
        yield e


def blocks_of(entries, progress=None):
    """Blocks of entry lines, each line's origin kept (``progress()``:
    told ``(done, total)`` after each block)."""
    parts, origins, held, offset = [], [], 0, 0
    for e in entries:
        parts.append(e.line)
        origins.append(e.origin)
        held += len(e.line)
        if held >= BLOCK_BYTES:
            data = b"".join(parts)
            yield Block(data, 0, len(data), offset, origins=origins)
            offset += len(data)
            parts, origins, held = [], [], 0
            if progress is not None:
                progress()
    if parts:
        data = b"".join(parts)
        yield Block(data, 0, len(data), offset, origins=origins)
        if progress is not None:
            progress()


def read_entries(path: str, kind: str, variant: str, streams: list, options: ParseOptions | None,
                 warnings: list, progress=None, meta: dict | None = None):
    """Scan the entries of ``streams`` (iterators of :class:`StreamEntry`,
    each in its file's order) as one log named ``path``."""
    options = options or ParseOptions()
    tally = _Tally()
    fmt = LogFormat(source=kind, parse_line=journal_fields.parse_entry_line,
                    volume=VolumeSpec(regex=journal_fields.ENTRY_VOLUME), variant=variant)
    result = scan(path, fmt, sample_every=12, user_signatures=options.signatures,
                  blocks=blocks_of(merged(streams, tally), progress))
    result.warnings[:0] = warnings
    if not tally.entries:
        first = next((w for w in warnings), None)
        raise InputError(path, f"no readable journal entry{f' ({first})' if first else ''}")
    if tally.untimed:
        file, line, _ = tally.first_untimed
        result.warnings.append(located(file, f"{tally.untimed:,} entr{'y' if tally.untimed == 1 else 'ies'} with "
                                             "a time outside the years 1970-9999 (kept without a time)", line=line))
    source = build_source(path, kind, fmt, result, options, journal_fields.minute_key)
    source.meta.update(meta or {})
    source.meta["entries"] = tally.entries
    source.meta["boots"] = tally.boot_list()
    if tally.copies:
        source.meta["copies"] = tally.copies      # entries read in more than one file, counted once
    return source


def label(paths: list[str]) -> str:
    """The name of a source read from several files: their folder and how many."""
    if len(paths) == 1:
        return paths[0]
    folders = {os.path.dirname(p) for p in paths}
    try:
        folder = folders.pop() if len(folders) == 1 else os.path.commonpath(sorted(folders)) or "."
    except ValueError:
        folder = "."
    return f"{folder}/ ({len(paths)} files)"
