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


@dataclass
class Peeling:
    """What a paste is wrapped in."""

    quote: bool = False
    fences: bool = False
    numbered: re.Pattern | None = None
    indent: int = 0
    walls: bool = False
    truncated_at: int | None = None     # the column lines were cut at
    done: dict = field(default_factory=dict)   # what was stripped -> lines

    def __bool__(self) -> bool:
        return bool(self.quote or self.fences or self.numbered or self.indent or self.walls or self.truncated_at)


def detect(text: str) -> Peeling | None:
    """The wrapping of a pasted log, judged on its first lines; None for a
    file as the program wrote it."""
    lines = [ln for ln in text.splitlines()[:400]]
    filled = [ln for ln in lines if ln.strip()]
    if len(filled) < 2:
        return None
    p = Peeling()
    p.quote = sum(bool(_QUOTE.match(ln)) for ln in filled) >= 0.8 * len(filled)
    if p.quote:
        filled = [_QUOTE.sub("", ln) for ln in filled]
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
    p.truncated_at = _cut_column(body)
    return p if p else None


def _cut_column(body: list[str]) -> int | None:
    """Lines cut by an editor all end at the same width with a mark."""
    marked = [len(ln) for ln in body if _TRUNCATED.search(ln) and len(ln) >= 60]
    if len(marked) < max(2, len(body) // 5):
        return None
    width = max(set(marked), key=marked.count)
    return width if marked.count(width) >= 0.8 * len(marked) else None


def peel_lines(lines, p: Peeling):
    """Cleaned lines, one per input line (line numbers unchanged)."""
    pending_wall = None
    for raw in lines:
        line = raw.rstrip("\r\n")
        end = raw[len(line):]
        if p.quote:
            stripped = _QUOTE.sub("", line, count=1)
            _count(p, "markdown quote marks", stripped != line)
            line = stripped
        if p.fences and _FENCE.match(line):
            _count(p, "code fences", True)
            yield end
            continue
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
