"""Binary journal files (kind ``journal-file``): ``system.journal``,
``user-1000.journal``, rotated ``system@...journal`` and an unclean
shutdown's ``.journal~``, read without journalctl
(:mod:`~sarsleuth.inputs.parsers.logs.journal_file` reads the format).

Events cite an entry by its file, its number in the file (1-based, file
order: the ``line`` of the contract) and the byte offset of its ENTRY
object; evidence is quoted back from there (:func:`quoted_entries`) as
journalctl's ``short-iso-precise`` output prints the entry, in UTC.

The journal files of one host (a ``/var/log/journal/<machine-id>/`` folder:
its boots, rotated files, user journals) are one source: :func:`gather`
groups the files of a case by the host their first entries name (else the
machine id of their header), and :func:`read_files` reads each group as one
stream, entries interleaved by time and each entry once (one entry in two
files has the same boot id, monotonic time and XOR hash of its fields).
"""
from __future__ import annotations

import contextlib
import datetime as dt
import os
from collections import Counter, deque
from pathlib import Path

from sarsleuth.errors import InputError
from sarsleuth.inputs.parsers.base import ParseOptions, Parser
from sarsleuth.inputs.parsers.logs import journal_fields, journal_file
from sarsleuth.inputs.parsers.logs.journal_file import MAGIC, JournalFile
from sarsleuth.inputs.reading import compression_of, read_head, spool_decompressed

#: Entries read of a file's head for its host name.
HEAD_ENTRIES = 50
#: Largest compressed journal file decompressed to be read.
MAX_DECOMPRESSED = 8 << 30
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def looks_like_journal_file(head: bytes) -> bool:
    """The magic, then binary bytes (a text note that starts with the magic
    is no journal file)."""
    return head[:8] == MAGIC and b"\0" in head[8:4096]


@contextlib.contextmanager
def opened(path, wanted=journal_fields.WANTED):
    """A :class:`JournalFile` of ``path``, decompressed first into a
    private copy when the file is compressed (a journal in a bundle's
    ``.tar.xz`` member gzipped again)."""
    path = os.fspath(path)
    if compression_of(path) is None:
        with JournalFile(path, wanted) as jf:
            yield jf
        return
    with spool_decompressed(path, MAX_DECOMPRESSED) as spool:
        with JournalFile(path, wanted, fh=spool) as jf:
            yield jf


def _entries(path: str, warnings: list, where: dict):
    """The entries of one file as :class:`StreamEntry`s (the file open
    while they are read), its warnings added to ``warnings`` once read."""
    # imported here: the registry loads this module to sniff, the scan only to read
    from sarsleuth.inputs.parsers.logs.journal_stream import StreamEntry
    with opened(path) as jf:
        try:
            for e in jf.entries():
                boot = e.boot_id.hex()
                line = journal_fields.entry_line(e.fields, str(e.realtime).encode(), boot.encode())
                where[path] = e.offset
                yield StreamEntry(e.realtime, (e.boot_id, e.monotonic, e.xor_hash), line,
                                  (path, e.number, e.offset), boot, e.monotonic)
        finally:
            where[path] = jf.size
            warnings.extend(jf.warnings)
            warnings.extend(jf.codec_warnings())


def _lanes(files: list) -> list[list]:
    """The files in runs whose times do not overlap (a host's rotated
    system files one after another, its user files beside them): each run
    is read one file at a time, the runs are interleaved, so only a few
    files are open at once however many there are.  ``files``: (path,
    header); a file still being written (online) may end at any time."""
    lanes: list[list] = []
    for path, h in sorted(files, key=lambda f: f[1].head_realtime):
        end = float("inf") if h.state == 1 or not h.tail_realtime else h.tail_realtime
        for lane in lanes:
            if lane[-1][1] <= h.head_realtime:
                lane.append((path, end))
                break
        else:
            lanes.append([(path, end)])
    return [[path for path, _ in lane] for lane in lanes]


def _lane(paths: list, warnings: list, where: dict):
    for path in paths:
        yield from _entries(path, warnings, where)


def read_files(paths: list, options: ParseOptions | None = None, kind: str = "journal-file"):
    """One source of the journal files ``paths`` (one host's)."""
    from sarsleuth.inputs.parsers.logs import journal_stream
    options = options or ParseOptions()
    paths = [os.fspath(p) for p in paths]
    warnings: list = []
    where: dict = {}
    files, refused, total = [], [], 0
    for p in paths:
        try:
            with opened(p) as jf:       # each header checked before any entry is read
                files.append((jf.path, jf.header))
                total += jf.size
        except InputError as exc:
            if len(paths) == 1:
                raise
            refused.append(exc.one_line())
    if not files:
        raise InputError(journal_stream.label(paths), "no readable journal file: " + "; ".join(refused))
    warnings.extend(f"{r} (left out)" for r in refused)
    told = options.progress

    def progress():
        if told is not None:
            told(sum(where.values()), total)

    heads = [h for _, h in files]
    meta = {"machine_ids": sorted({h.machine_id.hex() for h in heads}),
            "states": dict(Counter(journal_file.STATES[h.state] for h in heads))}
    read = [path for path, _ in files]
    if len(files) > 1:
        meta["files"] = read
    return journal_stream.read_entries(journal_stream.label(read), kind, "binary",
                                       [_lane(lane, warnings, where) for lane in _lanes(files)], options, warnings,
                                       progress, meta)


def shown_name(unit, names: dict) -> str:
    """How the user knows a file, or a group of journal files (``names``:
    {private copy: name})."""
    if not isinstance(unit, tuple):
        return names.get(str(unit), str(unit))
    from sarsleuth.inputs.parsers.logs.journal_stream import label
    return label([names.get(str(p), str(p)) for p in unit])


def unit_size(paths: tuple) -> int:
    """Bytes of a group of files, for progress."""
    total = 0
    for p in paths:
        with contextlib.suppress(OSError):
            total += os.path.getsize(p)
    return total


def read_named(paths: tuple, names: dict, options: ParseOptions | None = None):
    """:func:`read_files` of files the user knows by ``names`` ({private
    copy: name}, archive members); an error names the group as the user
    knows it."""
    from sarsleuth.inputs import named_paths as streams
    try:
        src = read_files(list(paths), options)
    except InputError as exc:
        raise InputError(shown_name(paths, names), exc.one_line()) from None
    for p in paths:
        if str(p) in names:
            streams.relabel(src, str(p), names[str(p)])
    src.path = shown_name(paths, names)
    if "files" in src.meta:
        src.meta["files"] = [names.get(p, p) for p in src.meta["files"]]
    return src


def host_key(path) -> str | None:
    """The host a journal file's first entries name (else its header's
    machine id); None when it is no readable journal file."""
    try:
        with opened(path) as jf:
            hosts: Counter = Counter()
            for k, e in enumerate(jf.entries()):
                name = e.fields.get(b"_HOSTNAME")
                if name:
                    hosts[name.decode("utf-8", "replace")] += 1
                if k + 1 >= HEAD_ENTRIES:
                    break
            return hosts.most_common(1)[0][0] if hosts else jf.header.machine_id.hex()
    except (InputError, OSError):
        return None


def host_units(files: list) -> list:
    """``files`` with the journal files of one host grouped: each group of
    two or more is a tuple of paths at the place of its first file."""
    keys = {}
    for f in files:
        if _journal_head(f):
            key = host_key(f)
            if key is not None:
                keys[str(f)] = key
    groups: dict = {}
    for f in files:
        key = keys.get(str(f))
        if key is not None:
            groups.setdefault(key, []).append(f)
    out, placed = [], set()
    for f in files:
        key = keys.get(str(f))
        if key is None or len(groups[key]) == 1:
            out.append(f)
        elif key not in placed:
            placed.add(key)
            out.append(tuple(groups[key]))
    return out


def is_journal(path) -> bool:
    """Is ``path`` a journal file (compressed or not)?"""
    try:
        return looks_like_journal_file(read_head(Path(path), 4096))
    except (InputError, OSError):
        return False


def _journal_head(path) -> bool:
    """A plain journal file (compressed ones are read alone, decompressed)."""
    try:
        with open(path, "rb") as fh:
            return looks_like_journal_file(fh.read(4096))
    except OSError:
        return False


def render(e) -> str:
    """An entry as ``journalctl -o short-iso-precise`` prints it, in UTC."""
    f = e.fields

    def text(name: bytes) -> str:
        return (f.get(name) or b"").decode("utf-8", "replace")
    when = ""
    if 0 < e.realtime < journal_fields.END_OF_TIME_US:
        when = (_EPOCH + dt.timedelta(microseconds=e.realtime)).strftime("%Y-%m-%dT%H:%M:%S.%f+0000 ")
    kernel = f.get(b"_TRANSPORT") == b"kernel"
    tag = "kernel" if kernel else text(b"SYSLOG_IDENTIFIER") or text(b"_COMM") or "unknown"
    pid = "" if kernel else text(b"_PID") or text(b"SYSLOG_PID")
    host = text(b"_HOSTNAME")
    return f"{when}{host + ' ' if host else ''}{tag}{f'[{pid}]' if pid else ''}: {text(b'MESSAGE')}"


def quoted_entries(path, asks: list) -> tuple[dict, set]:
    """The entries around each ask ``(offset, number, before, after)`` of a
    journal file, as :func:`render` prints them: {number: text}, and the
    offsets where no entry is (the file changed since it was read)."""
    out: dict = {}
    missed: set = set()
    try:
        with opened(path) as jf:
            for offset, number, _before, after in asks:
                got = 0
                for e in jf.entries(start=offset, number=number - 1):
                    if got == 0 and e.offset != offset:
                        break
                    out[e.number] = render(e)
                    got += 1
                    if got > after:
                        break
                if not got:
                    missed.add(offset)
            _before_entries(jf, asks, out)
    except (InputError, OSError):
        return out, {a[0] for a in asks if a[1] not in out}
    return out, missed


def _before_entries(jf: JournalFile, asks: list, out: dict) -> None:
    """The entries just before each ask, found through the file's entry
    array chain (one pass over it, whatever the number of asks)."""
    wanted = {offset: (number, before) for offset, number, before, _ in asks if number in out and before}
    if not wanted:
        return
    last = deque(maxlen=max(before for _, before in wanted.values()))
    for off in jf.entry_offsets():
        if off in wanted:
            number, before = wanted.pop(off)
            for k, prev in enumerate(reversed(last), start=1):
                if k > before or number - k < 1:
                    break
                e = jf.entry_at(prev, number - k)
                if e is not None:
                    out.setdefault(number - k, render(e))
            if not wanted:
                return
        last.append(off)


class JournalFileParser(Parser):
    kind = "journal-file"
    binary = True            # its head is sniffed as bytes (NULs and all)
    priority = 3
    description = "systemd journal files (system.journal, rotated and .journal~ files), read without journalctl"
    anchors_uptime = True    # the kernel's entries keep their uptime
    shape = "records"

    @classmethod
    def hosts_in(cls, path, head: bytes) -> tuple[tuple, dict]:
        key = host_key(path)
        return ((key,) if key and not _is_machine_id(key) else ()), {}

    @classmethod
    def sniff(cls, head: bytes, text: str) -> float:
        return 1.0 if looks_like_journal_file(head) else 0.0

    @classmethod
    def parse(cls, path, options: ParseOptions):
        return read_files([path], options, cls.kind)


def _is_machine_id(key: str) -> bool:
    return len(key) == 32 and all(c in "0123456789abcdef" for c in key)
