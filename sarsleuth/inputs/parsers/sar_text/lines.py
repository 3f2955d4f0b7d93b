"""Lines of a sar text file as the reader sees them: chunks of the
(decompressed) file split into lines, colours and special spaces removed,
every line ending (LF, CRLF, CR) and a leading byte-order mark handled the
same way, so that line numbers are those an editor shows; and the patterns
that recognise banners, clocks and prompts."""
from __future__ import annotations

import bisect
import re

from sarsleuth.errors import InputError, located
from sarsleuth.inputs.reading import DECOMPRESSION_ERRORS, MAX_LINE_BYTES, decode, open_binary

# The date is sar's ``%x``: one token in most locales, several where the
# locale writes it out (en_IN once printed ``Thursday 04 September 2014``).
BANNER_RE = re.compile(
    r"^\s*Linux\s+(?P<kernel>\S+)\s+\((?P<host>[^)]*)\)\s+(?P<date>\S+(?:[ \t]+(?!_\S+?_(?:\s|$))"
    r"(?!\(\d+\s+CPU\))\S+){0,4})"
    r"(?:\s+_(?P<arch>\S+?)_(?=\s|$))?(?:\s+\((?P<ncpu>\d+)\s+CPU\))?")
DATE_TOKEN_RE = re.compile(r"^\d{1,4}[/.\-]\d{1,2}[/.\-]\d{1,4}\.?$|^\d{4}年\d{1,2}月\d{1,2}日$")
#: A daily file sadc and sa2 write, ``saDD`` / ``sarDD`` (DD: the day of
#: the month), as a pasted command or a file's own name gives it.
DAILY_FILE_RE = re.compile(r"(?:^|[\s/=])sar?(0[1-9]|[12]\d|3[01])(?:\.(?:txt|log|gz|xz|bz2|zst))*(?=\s|$|[|;)])")
CJK_TIME_RE = re.compile(r"^(\d{1,2})[時时](\d{1,2})分(\d{1,2})秒$")
CLOCK_RE = re.compile(r"^(\d{1,2}):(\d\d):(\d\d)$")
ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
PROMPT_RE = re.compile(r"^\s*(?:\S*[$#>%]\s|\$|#|.*\bsar\b.*\|)")
AM_PM = {"AM": 0, "PM": 12, "am": 0, "pm": 12}


#: Bytes read at a time; lines are handed out in batches of one chunk.
CHUNK_BYTES = 4 << 20
BOM = b"\xef\xbb\xbf"


def strip_bom(text: str) -> str:
    """Text without a leading UTF-8 byte-order mark (editors on Windows add
    one; it would hide the banner's first word)."""
    return text[1:] if text.startswith("\ufeff") else text


def _last_break(buf: bytes, end: int | None = None) -> int:
    end = len(buf) if end is None else end
    return max(buf.rfind(b"\n", 0, end), buf.rfind(b"\r", 0, end))


def _first_break(buf: bytes) -> int:
    found = [i for i in (buf.find(b"\n"), buf.find(b"\r")) if i >= 0]
    return min(found) if found else -1


def line_batches(path, warnings: list, spans: list | None = None):
    """Lists of decoded lines, one chunk of the (decompressed) file at a
    time, with colours stripped and narrow/no-break spaces made plain:
    streaming, and without a Python call per line.  LF, CRLF and CR alone
    all end a line; a UTF-8 byte-order mark at the start is dropped.

    ``spans`` (when given) receives ``(offset, size)`` of each batch's bytes
    in the decompressed stream (None when an over-long line was cut inside
    it), so that :func:`read_line` can find a line again without reading
    the whole file."""
    fh = open_binary(path)
    carry = b""
    carry_start = 0           # stream offset of carry[0], None if not contiguous
    skipping = False          # inside the unread tail of an over-long line
    cut_lines = 0
    offset = 0
    first = True
    try:
        while True:
            try:
                chunk = fh.read(CHUNK_BYTES)
            except DECOMPRESSION_ERRORS as exc:
                warnings.append(located(path, f"compressed stream damaged ({exc}); the rest was skipped",
                                        offset=offset))
                chunk = b""
            if not chunk:
                break
            chunk_start = offset
            offset += len(chunk)
            if first:
                first = False
                if chunk.startswith(BOM):
                    chunk, chunk_start = chunk[3:], chunk_start + 3
            if skipping:
                nl = _first_break(chunk)
                if nl < 0:
                    continue
                chunk, skipping = chunk[nl:], False
                chunk_start = None
            if carry:
                buf, start = carry + chunk, carry_start
            else:
                buf, start = chunk, chunk_start
            cut = _last_break(buf)
            if cut == len(buf) - 1 and buf[cut:] == b"\r":
                cut = _last_break(buf, cut)     # the \n of a CRLF may be in the next chunk
            if cut < 0:
                # no end of line in sight: keep a bounded head of the line only
                carry, carry_start = buf, start
                if len(carry) > MAX_LINE_BYTES:
                    carry, skipping = carry[:MAX_LINE_BYTES], True
                    carry_start = None
                    cut_lines += 1
                continue
            carry = buf[cut + 1:]
            carry_start = None if start is None else start + cut + 1
            if len(carry) > MAX_LINE_BYTES:
                carry, skipping = carry[:MAX_LINE_BYTES], True
                cut_lines += 1
            body = buf[:cut - 1] if cut and buf[cut - 1:cut + 1] == b"\r\n" else buf[:cut]
            if spans is not None:
                spans.append(None if start is None else (start, len(body)))
            yield clean_text(decode(body)).split("\n")
        if carry:
            if spans is not None:
                spans.append(None if carry_start is None else (carry_start, len(carry)))
            yield clean_text(decode(carry)).split("\n")
    finally:
        fh.close()
    if cut_lines:
        warnings.append(located(path, f"{cut_lines} line(s) longer than {MAX_LINE_BYTES} bytes were cut"))


class LineIndex:
    """Where each batch of lines starts in the file: line ``n`` is found
    again by reading one batch (a few MB), not the file up to it."""

    def __init__(self, path):
        self.path = str(path)
        self.first_lines: list[int] = []     # line number of each batch's first line
        self.spans: list = []                # (offset, size) or None per batch

    def _scan(self):
        """Index a file its reader did not index (one pass, once)."""
        lineno = 0
        try:
            for batch in line_batches(self.path, [], self.spans):
                self.first_lines.append(lineno + 1)
                lineno += len(batch)
        except (OSError, InputError, *DECOMPRESSION_ERRORS):
            self.first_lines, self.spans = [], []

    def read_line(self, lineno: int) -> str | None:
        """The text of line ``lineno`` (1-based) as the reader saw it
        (colours removed), or None when it cannot be found again."""
        if not self.first_lines:
            self._scan()
        k = bisect.bisect_right(self.first_lines, lineno) - 1
        if k < 0 or k >= len(self.spans) or self.spans[k] is None:
            return None
        start, size = self.spans[k]
        try:
            with open_binary(self.path) as fh:
                fh.seek(start)
                raw = fh.read(size)
        except (OSError, ValueError, InputError, *DECOMPRESSION_ERRORS):
            return None
        lines = clean_text(decode(raw)).split("\n")
        i = lineno - self.first_lines[k]
        return lines[i] if 0 <= i < len(lines) else None


def clean_text(text: str) -> str:
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\x1b" in text:
        text = ANSI_RE.sub("", text)
    if "\u202f" in text or "\xa0" in text:
        text = text.replace("\u202f", " ").replace("\xa0", " ")
    return text


def long_date(text: str):
    """``(year, month, day)`` of a date written with its month's name in any
    language (``Thursday 04 September 2014``, ``jeudi 4 septembre 2014``,
    ``September 4, 2014``), or None.  Weekday names are passed over."""
    from sarsleuth.knowledge.locales import is_weekday, month_of   # locale tables only when needed
    year = month = day = None
    for token in re.split(r"[\s,]+", text.strip()):
        token = token.strip(".")
        if not token:
            continue
        if token.isdigit():
            if len(token) == 4 and year is None:
                year = int(token)
            elif len(token) <= 2 and day is None and 1 <= int(token) <= 31:
                day = int(token)
            else:
                return None
        elif month is None and (named := month_of(token)) is not None:
            month = named
        elif not is_weekday(token):
            return None
    return (year, month, day) if None not in (year, month, day) else None


def banner_date(match) -> str | None:
    """The date a banner's match holds (its first token when that is a
    numeric date; else the words, when they make a date), or None."""
    text = match.group("date")
    first = text.split()[0]
    if DATE_TOKEN_RE.match(first):
        return first
    return text if len(text.split()) > 1 and long_date(text) is not None else None


def numeric_start(token: str) -> bool:
    c = token[0]
    return c.isdigit() or (c in "-+." and len(token) > 1 and token[1].isdigit())

