"""One decoded log line: what a format's prefix parser makes of it."""
from __future__ import annotations

import datetime as _dt
import re
from collections import Counter

from sarsleuth.inputs.parsers.base import HEAD_LINES

#: Characters of one line that are decoded; the middle of a huge line is cut.
MAX_DECODED_CHARS = 16 * 1024
#: Of a line cut when decoded, the bytes kept from its end: the fields a
#: message ends with (an OOM kill's rss after a huge process name) still read.
KEPT_TAIL = 4 * 1024

_BOM = "\ufeff"
#: A log naming several hosts in its head (a central syslog server) belongs to
#: each host that has at least this share of those lines.
MIN_HOST_SHARE = 0.05
#: ... unless hosts below that share write more than this share of them:
#: then the head cannot say which hosts the file is about.
MANY_HOSTS_SHARE = 0.2


class LineInfo:
    """One decoded line, split by a format's prefix parser.

    ``stamp`` is None or a tuple whose first item says its kind:
    ``("md", month, day, h, m, s, us)`` (syslog, no year), ``("abs", datetime)``
    (naive wall clock) or ``("aware", datetime)``.  ``prefixed`` is False for
    lines without the format's prefix (continuations, pasted fragments).
    """

    __slots__ = ("stamp", "host", "tag", "pid", "level", "message", "uptime", "prefixed", "conn", "unit", "boot",
                 "dated")

    def __init__(self, message: str, stamp=None, host=None, tag=None, pid=None, level=None,
                 uptime=None, prefixed=True, conn=None):
        self.stamp, self.host, self.tag, self.pid = stamp, host, tag, pid
        self.level, self.message, self.uptime, self.prefixed = level, message, uptime, prefixed
        self.conn = conn
        #: the systemd unit and boot id a journal entry names (None elsewhere)
        self.unit = self.boot = None
        #: the date and time the message itself carries, year included (an
        #: nginx error.log line forwarded through syslog: "2025/06/28
        #: 09:08:38"): a clue to the year
        self.dated = None


_EPOCH = _dt.datetime(1970, 1, 1)


def stamp_seconds(stamp) -> float | None:
    """Seconds on a scale good for comparing two stamps of one file."""
    if stamp is None:
        return None
    if stamp[0] == "md":
        _, mon, day, h, m, s, us = stamp
        return (((mon * 32 + day) * 24 + h) * 60 + m) * 60 + s + us / 1e6
    if stamp[0] == "aware":
        return stamp[1].timestamp()
    return (stamp[1] - _EPOCH).total_seconds()   # naive wall clock: no local-zone guess


def unescape_rsyslog(text: str) -> str:
    """rsyslog writes control characters as ``#ooo`` octal escapes."""
    if "#0" not in text:
        return text
    return re.sub(r"#0(1[0-7]|[0-7]{2})", lambda m: chr(int(m.group(1), 8)), text)


def decode_line(data: bytes, start: int, end: int) -> tuple[str, bool]:
    """Decode one line leniently; True when it had to be cut.  A line
    longer than :data:`MAX_DECODED_CHARS` keeps its head and its last
    :data:`KEPT_TAIL` bytes around a mark saying how much was cut, so a
    message is read as the same message (a process name of 20,000
    characters is cut, the OOM kill it is in still counts)."""
    cut = end - start > MAX_DECODED_CHARS
    if cut:
        head = MAX_DECODED_CHARS - KEPT_TAIL
        raw = (data[start:start + head] + f"[\u2026{end - start - MAX_DECODED_CHARS} bytes cut\u2026]".encode()
               + data[end - KEPT_TAIL:end])
    else:
        raw = data[start:end]
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    if b"\x00" in raw:
        raw = raw.replace(b"\x00", b"")
    return raw.decode("utf-8", errors="replace"), cut


def head_lines(text: str, limit: int = 300) -> list[str]:
    """The first non-empty lines of a sniffed head (the last, maybe cut,
    line of the head is dropped when there are others).  CR, CRLF and LF
    all end a line; byte order marks are not part of a line."""
    # every log format's sniffer asks for the same head in turn: it is split once
    if _last_head[0] is not text:
        _last_head[:] = [text, _filled_lines(text)]
    return _last_head[1][:limit]


#: The head :func:`head_lines` split last, and its non-empty lines.
_last_head: list = [None, []]


def _filled_lines(text: str) -> list[str]:
    if _BOM in text:
        text = text.replace(_BOM, "")
    lines = text.splitlines()
    if len(lines) > 1 and not text.endswith(("\n", "\r")):
        lines = lines[:-1]
    return [ln for ln in lines if ln.strip()]


def hosts_named(text: str, parse_line) -> tuple:
    """The hosts the first :data:`HEAD_LINES` lines of a log name, by
    ``parse_line``: each that has at least :data:`MIN_HOST_SHARE` of the
    dated lines that name one, most first."""
    counts: Counter = Counter()
    lines = text.splitlines()[:HEAD_LINES]
    for line in lines[:-1] if len(lines) > 1 else lines:   # the last may be cut
        try:
            info = parse_line(line)
        except (ValueError, TypeError):
            continue
        if info is not None and info.host and info.stamp is not None:
            counts[info.host] += 1
    total = sum(counts.values())
    named = tuple(h for h, n in counts.most_common() if n >= MIN_HOST_SHARE * total)
    if total - sum(counts[h] for h in named) > MANY_HOSTS_SHARE * total:
        # a central log of many hosts, each a small share: none is named
        # firmly, the file is read whole and told per host (a fleet splits it)
        return ()
    return named
