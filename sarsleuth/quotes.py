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
A compressed file is read once from its start to the last line cited; a
plain one is read only around the lines cited (an index of line starts).
"""
from __future__ import annotations

import bisect
import os
import stat

from sarsleuth.errors import InputError
from sarsleuth.model import QUOTE_CHARS
from sarsleuth.textio import DECOMPRESSION_ERRORS, compression_of, decode, iter_lines

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
    return text if len(text) <= limit else text[:limit - 1] + "…"


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
        wanted: set[int] = set()
        lines: dict[int, str] = {}
        for e in evidence:
            last = e.line + (MESSAGE_WINDOW if e.find is not None else 0)
            span = range(max(1, e.line - AROUND), last + AROUND + 1)
            # where the scan noted the line's byte offset, read there: no
            # pass over a large file to count its lines
            near = _lines_near(path, e.offset, e.line, AROUND, last - e.line + AROUND) \
                if e.offset is not None else None
            if near is not None:
                lines.update(near)
            else:
                wanted.update(span)
        lines.update(read_lines(path, wanted - set(lines)))
        for e in evidence:
            _settle(e, lines)


#: Bytes read back before an offset for the lines above an evidence line.
_BACK_BYTES = 64 * 1024


def _lines_near(path: str, offset: int, line: int, before: int, after: int) -> dict[int, str] | None:
    """Lines ``line-before .. line+after`` of a plain file whose line
    ``line`` starts at byte ``offset``; None when the file is not plain,
    cannot be read, or has no line start at that offset."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode) or compression_of(path) is not None:
            return None
        with open(path, "rb") as fh:
            start = max(0, offset - _BACK_BYTES)
            fh.seek(start)
            head = fh.read(offset - start)
            if offset and not head.endswith(b"\n"):
                return None     # the file changed since the scan: count lines instead
            above = head.split(b"\n")[:-1]
            if start > 0:
                above = above[1:]        # the first piece may be a line's tail
            out = {line - k: decode(raw.rstrip(b"\r")) for k, raw in
                   zip(range(1, before + 1), reversed(above)) if line - k >= 1}
            for k, raw in enumerate(fh):
                out[line + k] = decode(raw.rstrip(b"\r\n"))
                if k >= after:
                    break
            return out
    except OSError:
        return None


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
            last, out = max(wanted), {}
            for number, raw in iter_lines(path):
                if number in wanted:
                    out[number] = decode(raw)
                if number >= last:
                    break
            return out
        return _plain_lines(path, st.st_size, st.st_mtime_ns, sorted(wanted))
    except (OSError, InputError, *DECOMPRESSION_ERRORS):
        return {}


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
