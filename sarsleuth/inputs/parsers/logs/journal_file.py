"""The systemd journal's binary files (``system.journal``,
``user-1000.journal``, rotated ``system@...journal``, an unclean
shutdown's ``.journal~``), read natively as systemd documents the format
(``docs/JOURNAL_FILE_FORMAT.md``, ``sd-journal/journal-def.h``).

A file is a header (``LPKSHHRH``, flags, ids, sizes) and objects appended
after it, each aligned to 8 bytes: DATA (one ``FIELD=value`` of an entry,
shared by every entry that has it, maybe compressed), FIELD, ENTRY (its
sequence number, realtime and monotonic times, boot id and the offsets of
its DATA objects), hash tables, entry arrays and seals.  Entries are read
by walking the objects in file order, which is sequence-number order, in a
window of the file read ahead: memory stays flat whatever the file's size,
an entry written but not yet linked into the indexes (an online file, a
``.journal~``) is still read, and a file cut short or partly overwritten
yields every entry before the damage, with a warning naming the byte
offset.  DATA objects are read where an entry points (most are just before
it); the ones many entries share (the host name, the unit) are held in a
small cache.  The file is read, never mapped: a file that shrinks under the
reader cannot kill it.

Header flags: compact mode (32-bit offsets) and the keyed hash are read;
an incompatible flag this reader does not know refuses the file (as
journalctl would).  XZ-compressed fields are decompressed with the
standard library; ZSTD with ``compression.zstd`` (Python 3.14) or the
``zstd`` extra; LZ4 with the ``lz4`` extra.  A field whose decompressor is
missing is left out, with one warning naming the file, the offset and the
extra to install.
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

from sarsleuth.errors import InputError, located
from sarsleuth.inputs.parsers.logs.journal_codecs import CODECS, COMPRESSED, MAX_VALUE_BYTES, MissingCodec, decompressed

MAGIC = b"LPKSHHRH"

#: The header up to ``tail_entry_monotonic``: present in every file version.
_HEADER = struct.Struct("<8sIIB7x16s16s16s16s15Q")
HEADER_MIN = _HEADER.size            # 208 bytes
_OBJECT = struct.Struct("<BB6xQ")    # type, flags, size
_LE64 = struct.Struct("<Q")
_ENTRY = struct.Struct("<QQQ16sQ")
_ENTRY_START = bytes((3, 0, 0, 0, 0, 0, 0, 0))   # seqnum, realtime, monotonic, boot id, xor hash (after the object header)
OBJECT_HEADER = _OBJECT.size
ENTRY_HEADER = OBJECT_HEADER + _ENTRY.size     # 64: the items follow

OBJECT_DATA, OBJECT_FIELD, OBJECT_ENTRY, OBJECT_DATA_HASH_TABLE, OBJECT_FIELD_HASH_TABLE, \
    OBJECT_ENTRY_ARRAY, OBJECT_TAG = range(1, 8)
INCOMPATIBLE_COMPACT = 1 << 4
#: The incompatible flags of systemd 246-257: XZ, LZ4, keyed hash, ZSTD, compact.
INCOMPATIBLE_KNOWN = 0x1f
STATES = {0: "offline", 1: "online", 2: "archived"}

#: Bytes read ahead of the walk at a time.
WINDOW_BYTES = 4 << 20
#: Bytes a window keeps before the offset it is read for.
BACK_BYTES = 256 << 10
#: DATA objects (offset -> field) held for the entries that share them.
CACHE_FIELDS = 65_536
#: A cached field's value is at most this long (longer ones are read again,
#: unless several entries share them and :data:`CACHE_BIG_BYTES` allow).
CACHE_VALUE_BYTES = 4096
CACHE_BIG_BYTES = 8 << 20
#: Smallest sizes of the objects a walk reads.
_MIN_SIZE = {OBJECT_DATA: 64, OBJECT_FIELD: 40, OBJECT_ENTRY: ENTRY_HEADER, OBJECT_DATA_HASH_TABLE: 16,
             OBJECT_FIELD_HASH_TABLE: 16, OBJECT_ENTRY_ARRAY: 24, OBJECT_TAG: 64}


@dataclass
class Header:
    compatible: int
    incompatible: int
    state: int
    file_id: bytes
    machine_id: bytes
    seqnum_id: bytes
    header_size: int
    arena_size: int
    n_entries: int
    head_realtime: int
    tail_realtime: int

    @property
    def compact(self) -> bool:
        return bool(self.incompatible & INCOMPATIBLE_COMPACT)


@dataclass
class Entry:
    """One entry: where it is, its times and ids, and the fields read
    (``fields``: name -> value bytes, the first value of a field given
    several times)."""

    offset: int
    number: int              # 1-based, in file order
    seqnum: int
    realtime: int            # µs since the epoch (0: none)
    monotonic: int           # µs since the boot
    boot_id: bytes
    xor_hash: int
    fields: dict = field(default_factory=dict)


def read_header(path, fh, size: int) -> Header:
    """The header of an open journal file of ``size`` bytes, checked; raises
    :class:`InputError` for a file that cannot be a journal this reader
    reads."""
    raw = os.pread(fh.fileno(), HEADER_MIN, 0)
    if len(raw) < HEADER_MIN or raw[:8] != MAGIC:
        raise InputError(path, f"not a systemd journal file (its header is cut: {len(raw)} of {HEADER_MIN} bytes)"
                         if raw[:8] == MAGIC else "not a systemd journal file", offset=0)
    (_, compatible, incompatible, state, file_id, machine_id, _tail_boot, seqnum_id, header_size, arena_size,
     *rest) = _HEADER.unpack(raw)
    n_entries, head_realtime, tail_realtime = rest[7], rest[10], rest[11]
    if incompatible & ~INCOMPATIBLE_KNOWN:
        raise InputError(path, f"a systemd journal with incompatible flags 0x{incompatible:x} this reader does not "
                               "know (written by a newer systemd); read it with that journalctl "
                               "(journalctl --file FILE -o export)", offset=12)
    if state not in STATES:
        raise InputError(path, f"not a systemd journal file (state {state} in its header)", offset=16)
    if header_size < HEADER_MIN or header_size % 8 or header_size > max(size, HEADER_MIN):
        raise InputError(path, f"not a systemd journal file (header size {header_size})", offset=88)
    return Header(compatible, incompatible, state, file_id, machine_id, seqnum_id, header_size, arena_size,
                  n_entries, head_realtime, tail_realtime)


def _align(n: int) -> int:
    return (n + 7) & ~7


class JournalFile:
    """One journal file open for reading (``with JournalFile(path) as j``)."""

    def __init__(self, path, wanted: frozenset | None = None, fh=None):
        self.path = os.fspath(path)
        #: field names read (None: every field)
        self.wanted = wanted
        #: ``fh``: the file already open (a private copy), left open on close
        self.owned = fh is None
        self.fh = open(self.path, "rb") if fh is None else fh
        try:
            self.size = os.fstat(self.fh.fileno()).st_size
            self.header = read_header(self.path, self.fh, self.size)
        except BaseException:
            self.close()
            raise
        h = self.header
        arena_end = h.header_size + h.arena_size
        #: where objects may be: the arena the header claims, no further than the file
        self.end = min(self.size, arena_end) if h.arena_size else self.size
        self.item_size = 4 if h.compact else 16
        self.data_payload = 72 if h.compact else 64
        self.warnings: list[str] = []
        self.damaged_entries = self.lost_fields = 0
        self.first_damage: int | None = None
        self.missing_codecs: dict = {}   # codec -> first offset of a field it would decompress
        self._cache: dict = {}
        self._big_cached = 0             # bytes of the large values in the cache
        self._win_base, self._win = 0, b""
        if arena_end > self.size and not self._only_space_cut():
            self.warnings.append(located(self.path, f"cut short: its header says {arena_end:,} bytes, the file has "
                                                    f"{self.size:,} (entries up to the cut are read)",
                                         offset=self.size))

    def _only_space_cut(self) -> bool:
        """Is what the file lacks of its arena only the space after its last
        object (a copy without the zeros journald allocates ahead)?"""
        raw = self._pread(136, 8)
        tail = _LE64.unpack(raw)[0] if len(raw) == 8 else 0
        if not tail or tail % 8 or tail + OBJECT_HEADER > self.size:
            return False
        kind, _flags, size = _OBJECT.unpack(self._pread(tail, OBJECT_HEADER))
        return OBJECT_DATA <= kind <= OBJECT_TAG and tail + size <= self.size

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self.owned:
            self.fh.close()

    # -- reading bytes ------------------------------------------------------
    def _pread(self, offset: int, n: int) -> bytes:
        return os.pread(self.fh.fileno(), n, offset)

    def _window(self, offset: int, n: int) -> tuple[bytes, int]:
        """(buffer, position of ``offset`` in it) holding ``n`` bytes from
        ``offset`` (fewer at the end of the file)."""
        pos = offset - self._win_base
        if pos < 0 or pos + n > len(self._win):
            # the window keeps some bytes before ``offset``: the fields an entry points to were written just before it
            base = max(0, offset - BACK_BYTES)
            self._win_base, self._win = base, self._pread(base, offset - base + max(n, WINDOW_BYTES))
            pos = offset - base
        return self._win, pos

    # -- the walk -----------------------------------------------------------
    def entries(self, start: int | None = None, number: int = 0):
        """Every readable entry from byte ``start`` (the first object by
        default) in file order; ``number``: entries before ``start``.

        From the start, the entries the file's entry array chain links are
        read first (no object between them is looked at); the walk of the
        objects then goes on after the last of them, for entries written
        but not linked (an online file, a ``.journal~``) and past damage."""
        if start is None:
            pos = self.header.header_size
            for off in self.entry_offsets():
                if off < pos:
                    break                # the chain goes back: damaged, the walk reads on
                raw, at = self._window(off, OBJECT_HEADER)
                if len(raw) - at < OBJECT_HEADER:
                    break
                kind, _flags, size = _OBJECT.unpack_from(raw, at)
                if kind != OBJECT_ENTRY or size < ENTRY_HEADER or off + size > self.size:
                    break
                entry = self._entry(off, size, number + 1)
                if entry is not None:
                    number += 1
                    yield entry
                pos = off + _align(size)
        else:
            pos = start
        yield from self._walk(pos, number)

    def _walk(self, pos: int, number: int):
        while pos + OBJECT_HEADER <= self.end:
            buf, at = self._window(pos, OBJECT_HEADER)
            if len(buf) - at < OBJECT_HEADER:
                break
            kind, _flags, size = _OBJECT.unpack_from(buf, at)
            if kind == 0 and size == 0:
                break                    # the space after the last object written
            if not (OBJECT_DATA <= kind <= OBJECT_TAG) or size < _MIN_SIZE[kind]:
                pos = self._damaged(pos, f"no journal object at byte {pos} (type {kind}, size {size})")
                continue
            if pos + size > self.size:
                self.warnings.append(located(self.path, f"cut short inside an object at byte {pos:,} "
                                                        f"({number:,} entries read before it)", offset=pos))
                break
            if kind == OBJECT_ENTRY:
                entry = self._entry(pos, size, number + 1)
                if entry is not None:
                    number += 1
                    yield entry
            pos += _align(size)

    def _damaged(self, pos: int, why: str) -> int:
        """Note damage at ``pos``; return where the next plausible entry
        object starts (the end when there is none)."""
        if self.first_damage is None:
            self.first_damage = pos
            self.warnings.append(located(self.path, f"damaged: {why}; the walk goes on at the next entry object",
                                         offset=pos))
        nxt = pos + 8
        while nxt + ENTRY_HEADER <= self.end:
            buf, at = self._window(nxt, OBJECT_HEADER)
            if len(buf) - at < OBJECT_HEADER:
                break
            # an entry object's first 8 bytes: its type, no flags, 6 reserved zeros (found in C, not 8 bytes a turn)
            hit = buf.find(_ENTRY_START, at)
            if hit < 0:
                nxt += max(8, (len(buf) - at - OBJECT_HEADER) & ~7)
                continue
            nxt += hit - at
            if nxt % 8:
                nxt = (nxt + 7) & ~7
                continue
            size = _LE64.unpack_from(buf, hit + 8)[0] if len(buf) - hit >= OBJECT_HEADER else None
            if size is not None and ENTRY_HEADER <= size <= self.end - nxt and \
                    (size - ENTRY_HEADER) % self.item_size == 0:
                return nxt
            nxt += 0 if size is None and hit > at else 8     # a header cut by the window's end: read again from it
        return self.end

    def _entry(self, pos: int, size: int, number: int) -> Entry | None:
        if size > WINDOW_BYTES:
            return self._bad_entry(pos, f"its size ({size:,} bytes) is no entry's")
        buf, at = self._window(pos, size)
        n = (size - ENTRY_HEADER) // self.item_size
        if len(buf) - at < size or (size - ENTRY_HEADER) % self.item_size or n == 0:
            return self._bad_entry(pos, "its item list is not whole")
        seqnum, realtime, monotonic, boot_id, xor_hash = _ENTRY.unpack_from(buf, at + OBJECT_HEADER)
        if self.item_size == 4:
            offsets = struct.unpack_from(f"<{n}I", buf, at + ENTRY_HEADER)
        else:
            offsets = struct.unpack_from(f"<{2 * n}Q", buf, at + ENTRY_HEADER)[::2]
        entry = Entry(pos, number, seqnum, realtime, monotonic, boot_id, xor_hash)
        fields = entry.fields
        cache = self._cache
        lost = 0
        for off in offsets:
            item = cache.get(off)
            if item is _UNWANTED:
                continue
            if item is None:
                item = self._field(off, pos)
                if item is None:    # the field is lost (overwritten): the entry keeps the others
                    lost += 1
                    continue
                if item is _UNWANTED:
                    continue
            name, value = item
            if name not in fields:
                fields[name] = value
        if lost:
            if lost == n:
                return self._bad_entry(pos, "none of its items points to a field")
            self._lost_field(pos)
        return entry

    def _lost_field(self, pos: int) -> None:
        self.lost_fields += 1
        if self.lost_fields == 1:
            self.warnings.append(located(self.path, "an entry points to fields that are not there (overwritten): "
                                                    "those are left out, the entries kept", offset=pos))

    def _bad_entry(self, pos: int, why: str) -> None:
        self.damaged_entries += 1
        if self.damaged_entries == 1:
            self.warnings.append(located(self.path, f"an entry not read whole ({why}): left out", offset=pos))

    def _field(self, off: int, before: int):
        """(name, value) of the DATA object at ``off``, which must lie before
        the entry at ``before``; :data:`_UNWANTED` for a field not read,
        None when no DATA object is there.  A field more than one entry
        has is kept in the cache (its object counts the entries)."""
        if off % 8 or not self.header.header_size <= off < before:
            return None
        head = self.data_payload + 64
        buf, at = self._window(off, head) if off >= self._win_base else (self._pread(off, head), 0)
        if len(buf) - at < max(self.data_payload, 64):
            return None
        kind, flags, size = _OBJECT.unpack_from(buf, at)
        if kind != OBJECT_DATA or size < self.data_payload or off + size > self.size:
            return None
        shared = _LE64.unpack_from(buf, at + 56)[0] > 1
        length = size - self.data_payload
        start = off + self.data_payload
        compressed = flags & COMPRESSED
        if compressed:
            payload = self._decompressed(compressed, self._read(start, min(length, 4 * MAX_VALUE_BYTES)), off)
            if payload is None:
                return _UNWANTED
        else:
            # the name first (it is in the bytes read), the value only when wanted
            eq = buf.find(b"=", at + self.data_payload, at + min(size, head))
            if eq > 0 and self.wanted is not None and buf[at + self.data_payload:eq] not in self.wanted:
                return self._keep(off, _UNWANTED) if shared else _UNWANTED
            payload = self._read(start, min(length, MAX_VALUE_BYTES + 256))
        eq = payload.find(b"=")
        name = bytes(payload[:eq]) if eq > 0 else None
        if name is None or (self.wanted is not None and name not in self.wanted):
            item = _UNWANTED
        else:
            item = (name, bytes(payload[eq + 1:eq + 1 + MAX_VALUE_BYTES]))
        if not shared:
            return item
        if len(payload) > CACHE_VALUE_BYTES and item is not _UNWANTED:
            # a large value many entries share (or a damaged size): kept while the budget lasts
            if self._big_cached + len(payload) > CACHE_BIG_BYTES:
                return item
            self._big_cached += len(payload)
        return self._keep(off, item)

    def _read(self, offset: int, n: int) -> bytes:
        if offset >= self._win_base and offset + n <= self._win_base + len(self._win):
            pos = offset - self._win_base
            return self._win[pos:pos + n]
        if n > CACHE_VALUE_BYTES:
            return self._pread(offset, n)      # a large field is read alone: the window stays where the walk is
        buf, pos = self._window(offset, n) if offset >= self._win_base else (self._pread(offset, n), 0)
        return buf[pos:pos + n]

    def _keep(self, off: int, item):
        cache = self._cache
        if len(cache) >= CACHE_FIELDS:
            for old in list(cache)[:CACHE_FIELDS // 2]:
                del cache[old]
        cache[off] = item
        return item

    def _decompressed(self, flag: int, raw: bytes, off: int) -> bytes | None:
        try:
            return decompressed(flag, raw)
        except MissingCodec as missing:
            self.missing_codecs.setdefault(missing.args[0], off)
        except Exception:        # a damaged compressed field: the field is left out, the entry kept
            self.missing_codecs.setdefault("damaged", off)
        return None

    def codec_warnings(self) -> list[str]:
        out = []
        for codec, off in self.missing_codecs.items():
            if codec == "damaged":
                out.append(located(self.path, "a compressed field that does not decompress: left out", offset=off))
            else:
                name, extra = CODECS[codec]
                out.append(located(self.path, f"{name}-compressed fields are left out: install the '{extra}' extra "
                                              f"(pip install sarsleuth[{extra}])", offset=off))
        return out

    # -- around an entry (evidence) ------------------------------------------
    def entry_at(self, offset: int, number: int = 1) -> Entry | None:
        """The entry whose ENTRY object starts at ``offset``, or None."""
        if offset % 8 or not self.header.header_size <= offset < self.end:
            return None
        raw = self._pread(offset, OBJECT_HEADER)
        if len(raw) < OBJECT_HEADER:
            return None
        kind, _flags, size = _OBJECT.unpack(raw)
        if kind != OBJECT_ENTRY or size < ENTRY_HEADER or offset + size > self.size:
            return None
        return self._entry(offset, size, number)

    def entry_offsets(self):
        """The offsets of the entries the file's entry array chain links, in
        order (the index a reader seeks with); stops at damage."""
        h = self.header
        raw = self._pread(176, 8)
        offset = struct.unpack("<Q", raw)[0] if len(raw) == 8 else 0
        item, fmt = (4, "I") if h.compact else (8, "Q")
        seen = 0
        while offset and offset % 8 == 0 and h.header_size <= offset < self.end and seen < h.n_entries:
            head = self._pread(offset, 24)
            if len(head) < 24:
                return
            kind, _flags, size = _OBJECT.unpack_from(head)
            if kind != OBJECT_ENTRY_ARRAY or size < 24 or offset + size > self.size:
                return
            nxt = struct.unpack_from("<Q", head, 16)[0]
            n = (size - 24) // item
            for off in struct.unpack(f"<{n}{fmt}", self._pread(offset + 24, n * item)):
                if not off or seen >= h.n_entries:
                    return
                seen += 1
                yield off
            if nxt <= offset:
                return
            offset = nxt


#: A field not read (not wanted, or not readable), as the cache holds it.
_UNWANTED = ("", None)
