"""Logs as they reach an operator: pasted into a ticket or seen on a terminal.

What gets wrapped around log lines on the way, and is peeled off here:

* markdown quotes (``> `` on every line, nested or not) and code fences;
* line-number prefixes (``cat -n``, ``grep -n``, ``nl``: ``  12\\t``,
  ``12:``, ``12 |``);
* common indentation (a block indented by the same amount);
* editor truncation marks (a line cut at the screen's edge ending in ``$``
  or ``>``): the line is kept, its lost end is said in the warning;
* wall broadcasts, the way emergencies reach a terminal: rsyslog's
  ``Message from syslogd@HOST at Apr 15 10:22:13 ...`` followed by
  `` kernel:MESSAGE``, and journald's ``Broadcast message from
  systemd-journald@HOST (Sat 2023-04-15 10:22:13 UTC):`` followed by
  ``TAG[PID]: MESSAGE``; each becomes the syslog line it came from.
* lines wrapped in two by a terminal or a mail client (a line no longer
  than the wrap width, then the rest of it with no prefix): the rest joins
  its line (no space between them when every first part is exactly the
  width: a hard wrap in the middle of a word), and its own line is left empty;
* log lines quoted in single backticks inside prose (`` `2024/01/05 ...
  [alert] ...` ``): the line quoted is kept, the prose dropped;
* ``dmesg -H``: a ``[Feb 5 06:51]`` header each minute and ``[  +0.000012]``
  gaps between the lines after it (util-linux dmesg.c, the relative time
  format): each line gets its wall clock, to the minute's start plus the
  gaps printed (the header prints no seconds: said in the warning).

:func:`detect` decides from a file's head whether it is such a paste;
:func:`peel` writes the cleaned text, one output line per input line, so
line numbers stay those of the file the user has.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

_QUOTE = re.compile(r"^(?:[ \t]{0,3}>[ \t]?)+")
_FENCE = re.compile(r"^\s*(?:```|~~~)")
_NUMBERED = [
    re.compile(r"^\s*\d{1,9}\t"),                 # cat -n, nl
    re.compile(r"^\s*\d{1,9}\s*\|\s?"),           # editors, pastebins
    re.compile(r"^\d{1,9}[:-](?=\S)"),            # grep -n
]
_WALL_SYSLOGD = re.compile(
    r"^\s*Message from syslogd@(?P<host>[^\s]+) at (?P<stamp>(?:[A-Z][a-z]{2} )?[^\s]{3,9} {1,2}\d{1,2} "
    r"\d\d:\d\d:\d\d(?: \d{4})?) \.\.\.\s*$")
_WALL_JOURNALD = re.compile(
    r"^\s*Broadcast message from systemd-journald@(?P<host>[^\s]+) \((?:\w{2,3} )?"
    r"(?P<date>\d{4}-\d\d-\d\d) (?P<time>\d\d:\d\d:\d\d)(?: [A-Z]{2,5}| [+-]\d{4})?\):\s*$")
_WALL_BODY_SYSLOGD = re.compile(r"^\s?(?P<tag>[^\s:]+):\s?(?P<msg>.*)$")
_WALL_BODY_JOURNALD = re.compile(r"^(?P<tag>[^\s:\[]+)(?:\[(?P<pid>\d+)\])?: (?P<msg>.*)$")
_TRUNCATED = re.compile(r"[$>]$")
#: Where a log line of a known layout starts (syslog, ISO 8601, nginx,
#: dmesg and dmesg -T): a line with none of these after one that has one
#: may be its wrapped end.
_LOG_START = re.compile(
    r"^(?:\S{1,12}\.? {1,2}\d{1,2}日? \d\d:\d\d:\d\d |\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d|\d{4}/\d\d/\d\d \d\d:\d\d:\d\d "
    r"|\[ *\d+\.\d+\] |\[[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\] )")
#: A time of day near a line's start: a log line of some layout, never
#: the end of a wrapped one.
_STAMPED = re.compile(r"\d\d:\d\d:\d\d")
#: Narrowest wrap width taken for one (a shorter first part is a line of its own).
_MIN_WRAP = 40
_BACKTICKED = re.compile(r"`([^`]+)`")
#: dmesg -H (util-linux print_record, DMESG_TIMEFTM_RELTIME): "[%b%e %H:%M] "
#: when the minute changes, else "[  %+8.06f] " (or "[ %+9.06f] ") since the line before
_RELATIVE_HEAD = re.compile(r"^\[(?P<mon>[^\W\d_]{3,12}) ?(?P<day>\d{1,2}) (?P<H>\d\d):(?P<M>\d\d)\] ?(?P<msg>.*)$")
_RELATIVE_GAP = re.compile(r"^\[ *(?P<gap>[+-]\d+[.,]\d{6})\] ?(?P<msg>.*)$")     # (a locale's decimal comma too)
#: ``docker logs -t``: each line behind the time docker received it (RFC 3339, nanoseconds)
_DOCKER_STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d) (?=\S)")
#: dmesg -r and /dev/kmsg: each line behind its syslog priority, ``<3>[   12.078408] ...``
_PRIORITY = re.compile(r"^<\d{1,3}>(?=\[)")


@dataclass
class Peeling:
    """What a paste is wrapped in."""

    quote: bool = False
    quoted_lines: bool = False          # a quote mark before some log lines only (the first one quoted)
    priorities: bool = False            # dmesg -r's <N> before each line
    docker: bool = False                # docker logs -t's stamp before the program's own line
    fences: bool = False
    numbered: re.Pattern | None = None
    indent: int = 0
    walls: bool = False
    truncated_at: int | None = None     # the column lines were cut at
    wrapped_at: int | None = None       # the width lines were wrapped at
    hard_wrap: bool = False             # cut in the middle of words: joined without a space
    backticks: bool = False             # log lines quoted in backticks inside prose
    relative: bool = False              # dmesg -H's minute headers and gaps
    done: dict = field(default_factory=dict)   # what was stripped -> lines

    def __bool__(self) -> bool:
        return bool(self.quote or self.quoted_lines or self.priorities or self.docker or self.fences or self.numbered
                    or self.indent or self.walls or self.truncated_at or self.wrapped_at or self.backticks
                    or self.relative)

    @property
    def rewrites(self) -> bool:
        """Does peeling change what a reader of the lines would make of them
        (a message joined again, a time computed), whatever the sniff of
        the file as it is?"""
        return self.walls or bool(self.wrapped_at) or self.relative or self.quoted_lines or self.docker


def detect(text: str) -> Peeling | None:
    """The wrapping of a pasted log, judged on its first lines; None for a
    file as the program wrote it."""
    lines = text.splitlines()
    if len(lines) > 1 and not text.endswith(("\n", "\r")):
        lines = lines[:-1]      # the head's last line may be cut: it says nothing of the paste
    lines = lines[:400]
    filled = [ln for ln in lines if ln.strip()]
    if len(filled) < 2 and not (filled and _dockered(filled[0])):
        return None
    p = Peeling()
    p.quote = sum(bool(_QUOTE.match(ln)) for ln in filled) >= 0.8 * len(filled)
    if p.quote:
        filled = [_QUOTE.sub("", ln) for ln in filled]
    else:
        p.quoted_lines = any(_QUOTE.match(ln) and _LOG_START.match(_QUOTE.sub("", ln, count=1)) for ln in filled)
        filled = [_unquoted(ln) for ln in filled] if p.quoted_lines else filled
    # the program's own stamp after docker's: the program's line is what the file is
    p.docker = sum(_dockered(ln) for ln in filled) >= 0.8 * len(filled)
    if p.docker:
        filled = [_DOCKER_STAMP.sub("", ln, count=1) for ln in filled]
    p.priorities = sum(bool(_PRIORITY.match(ln)) for ln in filled) >= 0.8 * len(filled)
    if p.priorities:
        filled = [_PRIORITY.sub("", ln) for ln in filled]
    p.fences = any(_FENCE.match(ln) for ln in filled)
    body = [ln for ln in filled if not _FENCE.match(ln) and ln.strip()]
    if not body:
        return None
    for pattern in _NUMBERED:
        if sum(bool(pattern.match(ln)) for ln in body) >= 0.9 * len(body) and len(body) >= 3:
            p.numbered = pattern
            body = [pattern.sub("", ln, count=1) for ln in body]
            break
    p.walls = any(_WALL_SYSLOGD.match(ln) or _WALL_JOURNALD.match(ln) for ln in body)
    indents = {len(ln) - len(ln.lstrip(" \t")) for ln in body}
    if min(indents) >= 2 and not p.walls:
        p.indent = min(indents)
        body = [ln[p.indent:] for ln in body]
    p.truncated_at = _cut_column(body)
    p.backticks = _quoted_in_prose(body)
    relative = sum(1 for ln in body if _RELATIVE_GAP.match(ln))
    heads = sum(1 for ln in body if _RELATIVE_HEAD.match(ln))
    p.relative = heads >= 1 and heads + relative >= 0.5 * len(body)
    if not p.truncated_at and not p.backticks:
        p.wrapped_at, p.hard_wrap = _wrap_width(body)
    return p if p else None


def _quoted_in_prose(body: list[str]) -> bool:
    """Log lines in single backticks among prose: at least one, and no
    line of the paste a log line as it is."""
    quoted = sum(1 for ln in body if any(_LOG_START.match(q.strip()) for q in _BACKTICKED.findall(ln)))
    return quoted >= 1 and not any(_LOG_START.match(ln) for ln in body)


def _wrap_width(body: list[str]) -> tuple[int | None, bool]:
    """(the width a paste's log lines were wrapped at, whether they were
    cut inside words), or (None, False).  A line that starts no log line,
    is not indented and follows one that does (or another such end) is a
    wrapped end when, for one width W that no line of the paste exceeds,
    every first part either fills W or would have overflowed W with the
    end's first word."""
    logs = [bool(_LOG_START.match(ln)) for ln in body]
    if sum(logs) < 2:
        return None, False
    pairs = []              # (the part before, the end)
    part = None
    for ln, is_log in zip(body, logs):
        if is_log:
            part = ln
        elif part is not None and ln[:1] not in (" ", "\t", "-") and not _FENCE.match(ln) \
                and not _STAMPED.search(ln[:40]):
            pairs.append((part, ln))
            part = ln       # an end wrapped again goes on from itself
        else:
            part = None
    if not pairs:
        return None, False
    width = max(len(ln) for ln in body)
    if width < _MIN_WRAP or any(len(a) < _MIN_WRAP for a, _ in pairs):
        return None, False
    hard = all(len(a) == width for a, _ in pairs)
    fits = all(len(a) == width or len(a) + 1 + len(b.split()[0]) > width for a, b in pairs)
    return (width, hard) if fits else (None, False)


def _cut_column(body: list[str]) -> int | None:
    """Lines cut by an editor all end at the same width with a mark."""
    marked = [len(ln) for ln in body if _TRUNCATED.search(ln) and len(ln) >= 60]
    if len(marked) < max(2, len(body) // 5):
        return None
    width = max(set(marked), key=marked.count)
    return width if marked.count(width) >= 0.8 * len(marked) else None


def peel_lines(lines, p: Peeling):
    """Cleaned lines, one per input line (line numbers unchanged)."""
    lines = _stripped(lines, p)
    if p.relative:
        lines = _timed(lines, p)
    if p.wrapped_at:
        lines = _unwrapped(lines, p)
    yield from lines


def _dockered(line: str) -> bool:
    """A program's log line behind docker's own stamp (``docker logs -t``)."""
    return bool(_DOCKER_STAMP.match(line) and _LOG_START.match(_DOCKER_STAMP.sub("", line, count=1)))


def _unquoted(line: str) -> str:
    """A log line behind a quote mark, without it; any other line as it is."""
    rest = _QUOTE.sub("", line, count=1)
    return rest if rest != line and _LOG_START.match(rest) else line


def _peeled(p: Peeling, what: str, line: str, stripped: str) -> str:
    """``stripped``, counted under ``what`` when it took something off ``line``."""
    _count(p, what, stripped != line)
    return stripped


def _stripped(lines, p: Peeling):
    pending_wall = None
    in_fence = False
    for raw in lines:
        line = raw.rstrip("\r\n")
        end = raw[len(line):]
        if p.quote or p.quoted_lines:
            line = _peeled(p, "markdown quote marks", line,
                           _QUOTE.sub("", line, count=1) if p.quote else _unquoted(line))
        if p.docker:
            line = _peeled(p, "docker logs -t stamps (the program's own kept)", line,
                           _DOCKER_STAMP.sub("", line, count=1))
        if p.priorities:
            line = _peeled(p, "kernel priority prefixes (dmesg -r)", line, _PRIORITY.sub("", line, count=1))
        if p.fences and _FENCE.match(line):
            _count(p, "code fences", True)
            in_fence = not in_fence
            yield end
            continue
        if p.backticks and not in_fence:
            quoted = [q.strip() for q in _BACKTICKED.findall(line) if _LOG_START.match(q.strip())]
            _count(p, "backticks around log lines" if quoted else "prose lines", bool(quoted) or bool(line.strip()))
            line = quoted[0] if quoted else ""
        if p.numbered is not None:
            stripped = p.numbered.sub("", line, count=1)
            _count(p, "line numbers", stripped != line)
            line = stripped
        if p.indent and line[:p.indent].strip() == "":
            line = line[p.indent:]
            _count(p, "indentation", True)
        if p.truncated_at and len(line) == p.truncated_at and _TRUNCATED.search(line):
            line = line[:-1]
            _count(p, f"editor cut marks (lines cut at column {p.truncated_at}: their ends are lost)", True)
        if p.walls:
            line, pending_wall = _unwall(line, pending_wall, p)
        yield line + (end or "")


def _unwrapped(lines, p: Peeling):
    """Each wrapped end joined to the line it was cut from; its own line
    left empty (the line numbers stay the file's)."""
    held = None                      # [text, line end, empties owed]
    for line in lines:
        text = line.rstrip("\r\n")
        end = line[len(text):]
        if held is not None and text and not _LOG_START.match(text) and text[:1] not in (" ", "\t", "-") \
                and not _STAMPED.search(text[:40]):
            held[0] = held[0] + text if p.hard_wrap else held[0].rstrip() + " " + text
            held[2] += 1
            _count(p, f"line breaks of lines wrapped at {p.wrapped_at} columns (joined again)", True)
            continue
        if held is not None:
            yield held[0] + held[1]
            yield from ["\n"] * held[2]
            held = None
        if _LOG_START.match(text):
            held = [text, end or "\n", 0]
        else:
            yield line
    if held is not None:
        yield held[0] + held[1]
        yield from ["\n"] * held[2]


def _timed(lines, p: Peeling):
    """dmesg -H's lines with their wall clock: ``[Feb  5 06:51:00.000012]``
    (month, day, time to the microsecond, no year)."""
    base, gaps = None, 0.0
    for line in lines:
        text = line.rstrip("\r\n")
        end = line[len(text):]
        head = _RELATIVE_HEAD.match(text)
        gap = _RELATIVE_GAP.match(text) if head is None else None
        if head is not None:
            base, gaps = (head["mon"], int(head["day"]), int(head["H"]), int(head["M"])), 0.0
            msg = head["msg"]
        elif gap is not None and base is not None:
            gaps += float(gap["gap"].replace(",", "."))
            msg = gap["msg"]
        elif gap is not None:
            # before the first minute's header: nothing to count its gap from, a message without a time
            _count(p, "dmesg -H relative times before the first minute's header (read without a time)", True)
            yield gap["msg"] + (end or "")
            continue
        else:
            yield line
            continue
        # a new header comes with each new minute: the gaps stay inside it
        seconds = min(max(gaps, 0.0), 59.999999)
        whole = int(seconds)
        micros = int(round((seconds - whole) * 1e6))
        mon, day, hour, minute = base
        _count(p, "dmesg -H relative times (each minute's header prints no seconds: times are the minute's "
                  "start plus the gaps printed)", True)
        yield f"[{mon} {day:2d} {hour:02d}:{minute:02d}:{whole:02d}.{micros:06d}] {msg}" + (end or "")


def _unwall(line: str, pending, p: Peeling):
    """A wall header is kept as an empty line; the next non-empty line is
    rebuilt as the syslog line the broadcast came from."""
    m = _WALL_SYSLOGD.match(line)
    if m:
        _count(p, "wall broadcast headers", True)
        return "", ("syslogd", m.group("host"), m.group("stamp"))
    m = _WALL_JOURNALD.match(line)
    if m:
        _count(p, "wall broadcast headers", True)
        return "", ("journald", m.group("host"), f"{m.group('date')} {m.group('time')}")
    if pending is None or not line.strip():
        return line, pending
    style, host, stamp = pending
    body = (_WALL_BODY_SYSLOGD if style == "syslogd" else _WALL_BODY_JOURNALD).match(line)
    if not body:
        return line, None
    return f"{stamp} {host} {body.group('tag')}: {body.group('msg')}", None


def _count(p: Peeling, what: str, happened: bool) -> None:
    if happened:
        p.done[what] = p.done.get(what, 0) + 1


def describe(p: Peeling) -> str:
    """One warning: what was stripped, how often."""
    parts = [f"{what} ({n} line{'s' if n != 1 else ''})" for what, n in p.done.items()]
    return "pasted text: stripped " + ", ".join(parts) if parts else "pasted text"
