"""Evidence as the files have it.

Detectors cite an event's file and first line (:class:`~sarsleuth.model.
Evidence` with ``find``: the message to quote); once the findings are
known, :func:`quote` reads each cited file again, once, and sets every
evidence line to the line the file has at that number, verbatim (a report
told in several lines, an OOM kill from its constraint line to its
``Killed process`` line, quotes the line that holds its message), and
keeps the lines around it for the outputs that fold them under the quote.

The case calls it while the private copies of streams and archive members
still exist, so ``<stdin>:11`` and ``ARCHIVE!var/log/messages:11`` quote
the line as piped or archived, not a line rebuilt from the parsed message.
Where the scan noted a line's byte offset, the lines are read there: a
plain file around each offset, a compressed one decompressed once from its
start to the last offset cited.  Lines without an offset (a file
re-encoded on the way) are counted: a plain file's through an index of
line starts, a compressed one's block by block.
"""
from __future__ import annotations

import bisect
import os
import stat
from contextlib import closing

import numpy as np

from sarsleuth.errors import InputError
from sarsleuth.model import QUOTE_CHARS
from sarsleuth.safe_text import cut_words
from sarsleuth.inputs.reading import DECOMPRESSION_ERRORS, MAX_LINE_BYTES, compression_of, decode, read_chunks

#: Lines shown either side of an evidence line (folded under it in HTML).
AROUND = 5
#: How far after an event's first line its quoted message may sit (a merged
#: OOM kill starts at its constraint line and quotes its "Killed process").
MESSAGE_WINDOW = 40
#: Bytes between two remembered line starts of a plain file.
_INDEX_STEP = 256 * 1024
#: A message is looked for by its first characters (the line may cut it).
_NEEDLE_CHARS = 80


def cut(text: str, limit: int = QUOTE_CHARS) -> str:
    """``text`` as it is, or its first ``limit`` characters and an ellipsis."""
    return cut_words(text, limit)


def quote(findings, copies: dict | None = None) -> None:
    """Quote every evidence line of ``findings`` from its file, in place.
    ``copies``: {name in outputs: the private copy it was read from}.  A
    file that cannot be read again leaves its evidence as the detector
    wrote it (the parsed message)."""
    copies = copies or {}
    cited: dict[str, list] = {}
    for f in findings:
        for e in f.evidence:
            if isinstance(e.line, int) and e.line > 0:
                cited.setdefault(copies.get(e.path, e.path), []).append(e)
    for path, evidence in cited.items():
        # where the scan noted the line's byte offset, read there: no pass
        # over a large file to count its lines
        asks = [(e.offset, e.line, AROUND, _last(e) - e.line + AROUND) for e in evidence if e.offset is not None]
        lines, missed = _lines_at_offsets(path, asks) if asks else ({}, set())
        wanted: set[int] = set()
        for e in evidence:
            if e.offset is None or e.offset in missed:
                wanted.update(range(max(1, e.line - AROUND), _last(e) + AROUND + 1))
        lines.update(read_lines(path, wanted - set(lines)))
        for e in evidence:
            _settle(e, lines)


def _last(e) -> int:
    """The last line that may hold the evidence's message."""
    return e.line + (MESSAGE_WINDOW if e.find is not None else 0)


#: Bytes read back before an offset for the lines above an evidence line,
#: and read at a time after it.
_BACK_BYTES = 64 * 1024
#: ``_around``'s answer when the bytes given end before the lines asked for.
_SHORT = object()


def _lines_at_offsets(path: str, asks: list) -> tuple[dict[int, str], set]:
    """The lines around each ask ``(offset, line, before, after)``: lines
    ``line-before .. line+after`` where line ``line`` starts at byte
    ``offset`` of the file's content (decompressed, for a compressed file),
    and the offsets that are no line start there (the file changed since
    the scan) or could not be read."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return {}, {a[0] for a in asks}      # a pipe gives its bytes once: never opened again
        if compression_of(path) is None:
            return _plain_near(path, asks)
        return _compressed_near(path, sorted(asks))
    except (OSError, InputError, *DECOMPRESSION_ERRORS):
        return {}, {a[0] for a in asks}


def _plain_near(path: str, asks: list) -> tuple[dict[int, str], set]:
    """A plain file read around each offset (a seek each)."""
    out: dict[int, str] = {}
    missed = set()
    with open(path, "rb") as fh:
        for offset, line, before, after in asks:
            start = max(0, offset - _BACK_BYTES)
            fh.seek(start)
            data = fh.read(offset - start + _BACK_BYTES)
            ended = len(data) < offset - start + _BACK_BYTES
            while (got := _around(data, offset - start, start == 0, line, before, after, ended)) is _SHORT:
                more = fh.read(_BACK_BYTES)
                data, ended = data + more, len(more) < _BACK_BYTES
            if got is None:
                missed.add(offset)
            else:
                out.update(got)
    return out, missed


def _compressed_near(path: str, asks: list) -> tuple[dict[int, str], set]:
    """A compressed file decompressed once, from its start to the lines of
    the last offset asked (``asks`` in the order of their offsets): only
    the blocks holding an offset are looked into (counting the lines of a
    500 MB log instead took longer than its scan)."""
    out: dict[int, str] = {}
    missed: set = set()
    window, base, i = b"", 0, 0          # window: the content from byte ``base`` on

    def settle(ended: bool) -> None:
        nonlocal i
        while i < len(asks):
            offset, line, before, after = asks[i]
            got = _around(window, offset - base, base == 0, line, before, after, ended)
            if got is _SHORT:
                return
            if got is None:
                missed.add(offset)
            else:
                out.update(got)
            i += 1

    with closing(read_chunks(path, _COMPRESSED_BLOCK, [])) as chunks:
        for chunk in chunks:
            end = base + len(window) + len(chunk)
            if asks[i][0] >= end:        # nothing asked in this block: keep its tail for the lines above
                window = chunk[-_BACK_BYTES:] if len(chunk) >= _BACK_BYTES else (window + chunk)[-_BACK_BYTES:]
                base = end - len(window)
                continue
            window = window + chunk if window else chunk
            settle(False)
            if i == len(asks):
                return out, missed
            keep = max(0, min(len(window) - _BACK_BYTES, asks[i][0] - base - _BACK_BYTES))
            window, base = window[keep:], base + keep
    settle(True)
    return out, missed


def _around(data: bytes, pos: int, whole: bool, line: int, before: int, after: int, ended: bool):
    """Lines ``line-before .. line+after`` from ``data``, where line
    ``line`` starts at ``data[pos]`` (``whole``: ``data`` starts at the
    file's start; ``ended``: the file ends where ``data`` does).  None
    when no line starts at ``pos``, :data:`_SHORT` when ``data`` ends
    before the lines asked for."""
    if pos > len(data):
        return None if ended else _SHORT
    if pos and data[pos - 1] != 10:
        return None             # the file changed since the scan: count lines instead
    lo = max(0, pos - _BACK_BYTES)
    above = data[lo:pos].split(b"\n")[:-1]
    if lo > 0 or not whole:
        above = above[1:]       # the first piece may be a line's tail
    out = {line - k: decode(raw.rstrip(b"\r")) for k, raw in zip(range(1, before + 1), reversed(above))
           if line - k >= 1}
    at = pos
    for k in range(after + 1):
        nl = data.find(b"\n", at, at + MAX_LINE_BYTES + 1)
        if nl < 0:
            if len(data) - at > MAX_LINE_BYTES:
                # longer than any line the scan keeps (a bomb of zeros): cut,
                # and nothing after it waits to be read
                out[line + k] = decode(data[at:at + MAX_LINE_BYTES].rstrip(b"\r"))
                break
            if not ended:
                return _SHORT
            if at < len(data):
                out[line + k] = decode(data[at:].rstrip(b"\r"))
            break
        out[line + k] = decode(data[at:nl].rstrip(b"\r"))
        at = nl + 1
    return out


def _settle(e, lines: dict) -> None:
    if e.find is not None:
        first = lines.get(e.line)
        # journal JSON (sadf -j likewise) is structured: the message is the quote
        if first is not None and not first.lstrip().startswith("{"):
            needle = e.find[:_NEEDLE_CHARS]
            at = next((n for n in range(e.line, e.line + MESSAGE_WINDOW)
                       if needle and needle in lines.get(n, "")), e.line)
            e.line, e.text = at, cut(lines[at])
        e.find = None
    if e.line in lines:
        e.around = [(n, cut(lines[n])) for n in range(e.line - AROUND, e.line + AROUND + 1) if n in lines]


def read_lines(path: str, wanted: set) -> dict[int, str]:
    """{number: text} of the ``wanted`` lines (1-based, as the parsers
    number them) that the file has; {} when it cannot be read again."""
    if not wanted:
        return {}
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            return {}      # a pipe gives its bytes once: never opened again
        if compression_of(path) is not None:
            return _compressed_lines(path, sorted(wanted))
        return _plain_lines(path, st.st_size, st.st_mtime_ns, sorted(wanted))
    except (OSError, InputError, *DECOMPRESSION_ERRORS):
        return {}


#: Decompressed bytes looked at a time when a compressed file is read again.
_COMPRESSED_BLOCK = 8 << 20


def _compressed_lines(path: str, wanted: list) -> dict[int, str]:
    """The wanted lines of a compressed file, read from its start to the
    last of them: the newlines of each decompressed block are counted in C,
    and only a block holding a wanted line is cut into lines (a line-by-line
    loop over a 500 MB log took longer than the scan itself).  A damaged
    tail ends the reading where the scan's reading ended."""
    out: dict[int, str] = {}
    i, first = 0, 1          # first: the number of the line starting at the block's start
    carry = b""              # a line whose end is not read yet (its first MAX_LINE_BYTES)
    cut = False              # the carried line was cut: its rest is skipped
    for chunk in read_chunks(path, _COMPRESSED_BLOCK, []):
        ends = chunk.count(b"\n")
        if not ends:
            if not cut:
                carry += chunk[:MAX_LINE_BYTES - len(carry)]
                cut = len(carry) >= MAX_LINE_BYTES
            continue
        if wanted[i] < first + ends:
            newlines = np.flatnonzero(np.frombuffer(chunk, dtype=np.uint8) == 10)
            while i < len(wanted) and wanted[i] < first + ends:
                k = wanted[i] - first
                if k == 0:
                    raw = carry + chunk[:min(int(newlines[0]), MAX_LINE_BYTES)]
                else:
                    start = int(newlines[k - 1]) + 1
                    raw = chunk[start:min(int(newlines[k]), start + MAX_LINE_BYTES)]
                out[wanted[i]] = decode(raw[:MAX_LINE_BYTES].rstrip(b"\r"))
                i += 1
            if i == len(wanted):
                return out
        first += ends
        tail = chunk.rfind(b"\n") + 1
        carry, cut = chunk[tail:tail + MAX_LINE_BYTES], len(chunk) - tail >= MAX_LINE_BYTES
    if carry and wanted[i] == first:      # the last line, without a newline
        out[first] = decode(carry.rstrip(b"\r"))
    return out


def _plain_lines(path: str, size: int, mtime: int, wanted: list) -> dict[int, str]:
    """The wanted lines of a plain file, each stretch read from the line
    start remembered before it."""
    starts = _line_index(path, size, mtime)
    numbers = [s[0] for s in starts]
    out: dict[int, str] = {}
    with open(path, "rb") as fh:
        i = 0
        while i < len(wanted):
            k = max(bisect.bisect_right(numbers, wanted[i]) - 1, 0)
            number, offset = starts[k]
            fh.seek(offset)
            stop = numbers[k + 1] if k + 1 < len(numbers) else None
            for raw in fh:
                if number == wanted[i]:
                    out[number] = decode(raw.rstrip(b"\r\n"))
                    i += 1
                    if i == len(wanted) or (stop is not None and wanted[i] >= stop):
                        break
                number += 1
            else:
                break          # the file ends before the lines wanted
    return out


_INDEXES: dict = {}


def _line_index(path: str, size: int, mtime: int) -> list[tuple[int, int]]:
    """(line number, byte offset) of a line start every ~256 KiB: one pass
    counting newlines, kept while the file is unchanged."""
    key = (path, size, mtime)
    if key in _INDEXES:
        return _INDEXES[key]
    starts, number, offset = [(1, 0)], 1, 0
    with open(path, "rb") as fh:
        while True:
            chunk = fh.read(_INDEX_STEP)
            if not chunk:
                break
            end = chunk.rfind(b"\n")
            if end < 0:
                offset += len(chunk)
                continue
            # resume at the line start after the chunk's last newline
            number += chunk.count(b"\n")
            starts.append((number, offset + end + 1))
            offset += len(chunk)
    if len(_INDEXES) > 64:
        _INDEXES.clear()
    _INDEXES[key] = starts
    return starts
