"""``sadf -j``: one JSON document, read whole (bounded), a damaged one
closed at its last complete record.  Each value keeps the line of the
object it was read from (sadf writes an item, a CPU or an interface, on one
line), so that evidence quotes that line."""
from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

import numpy as np

from sarsleuth.errors import InputError, located
from sarsleuth.inputs.reading import decode, read_all_bytes
from sarsleuth.inputs.parsers.base import ParseOptions
from sarsleuth.inputs.parsers.sar_text.lines import LineIndex
from sarsleuth.inputs.parsers.sadf.assembly import (_Clock, _Collector, _event, _finish, _json_walk, _list,
                                            _structured_stamp)

if TYPE_CHECKING:
    from sarsleuth.model import Source

#: Upper bound on a JSON document read whole (json has no streaming reader
#: in the standard library, and the parsed document takes several times its
#: size); a day of ``sadf -j -- -A`` at 10-minute samples is a few MB.
#: ``sadf -d`` output, which is streamed, has no such bound.
JSON_LIMIT = 256 << 20


def read_json(parser, path, options: ParseOptions) -> Source:
    """A ``sadf -j`` document, as a Source of ``parser``'s kind."""
    options = options or ParseOptions()
    raw = read_all_bytes(path, JSON_LIMIT)
    text = decode(raw)
    if "\r" in text:        # line ends as the line index counts them (JSON reads them as blanks)
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    try:
        doc = _loads(text)
    except json.JSONDecodeError as exc:
        doc = _json_prefix(path, text, exc)
    except RecursionError:
        raise InputError(path, "JSON nested too deeply to be sadf -j output") from None
    hosts = (doc.get("sysstat") or {}).get("hosts") if isinstance(doc, dict) else None
    if not isinstance(hosts, list):
        raise InputError(path, "JSON without sysstat.hosts: not sadf -j output")
    clock = _Clock(path, options)
    out = _Collector()
    warnings: list[str] = []
    meta: dict = {"format": "sadf -j", "hosts": []}
    if isinstance(doc.get("sysstat"), dict) and doc["sysstat"].get("sysdata-version"):
        meta["sysdata_version"] = doc["sysstat"]["sysdata-version"]
    for host in hosts:
        _json_host(path, host, clock, out, meta)
    if out.too_deep:
        warnings.append(located(path, f"{out.too_deep} value(s) nested deeper than sadf ever writes "
                                      "were skipped"))
    meta["line_index"] = LineIndex(path)
    metrics = out.frame()
    first = hosts[0].get("nodename") if hosts and isinstance(hosts[0], dict) else None
    return _finish(parser, path, options, metrics, out.events, first, meta, warnings + _partial(doc), clock)


class _Object(dict):
    """A JSON object, the line its opening brace is on and, when it spans
    several lines (a reformatted file: one member a line), where it is."""

    __slots__ = ("line", "_span")

    def field_lines(self, keys):
        """{key: the line the member ``key`` is on}, or the object's line
        when it sits on one line (sadf's own layout)."""
        span = getattr(self, "_span", None)
        if span is None:
            return self.line
        text, begin, end = span
        found: dict = {}
        for i, row in enumerate(text[begin:end].split("\n")):
            member = _MEMBER.match(row)
            if member:
                found.setdefault(member.group(1), self.line + i)
        return {key: found.get(key, self.line) for key in keys}


#: A line that starts an object's member: ``"iowait": 0.12,``.
_MEMBER = re.compile(r'\s*[{,]?\s*"([^"\\]*)"\s*:')


#: A JSON string (escapes and all) or a brace: braces inside strings are text.
_STRING_OR_BRACE = re.compile(r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"|[{}]')


def _objects(text: str) -> list[tuple]:
    """``(line, start, end_line, end)`` of each object (its braces; offsets
    None when they are not character offsets), in the order the objects
    close: the order in which ``json`` hands them to ``object_hook``."""
    braces, offsets, lines = _structural_braces(text)
    opened: list = []
    closed: list = []
    for brace, at, line in zip(braces, offsets, lines):
        if brace == "{":
            opened.append((line, at))
        elif opened:
            closed.append(opened.pop() + (line, at))
    return closed


def _structural_braces(text: str) -> tuple[list, list, list]:
    """The braces outside strings, in order, their offsets in ``text``
    (None where not known) and the line of each."""
    data = np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    if 0x5C not in data:
        # no backslash, so no escaped quote: a brace is inside a string when
        # an odd number of quotes come before it (whole arrays, not a token loop)
        at = np.flatnonzero((data == 0x7B) | (data == 0x7D))
        quotes = np.flatnonzero(data == 0x22)
        at = at[np.searchsorted(quotes, at) % 2 == 0]
        braces = np.where(data[at] == 0x7B, "{", "}").tolist()
        newlines = np.flatnonzero(data == 0x0A)
        # byte offsets are character offsets when every character is one byte
        offsets = at.tolist() if len(data) == len(text) else [None] * len(braces)
    else:
        found = [(m.start(), m.group()) for m in _STRING_OR_BRACE.finditer(text) if m.group() in "{}"]
        braces = [b for _at, b in found]
        offsets = [a for a, _b in found]
        at = np.asarray(offsets, dtype=np.int64)
        newlines = np.asarray([m.start() for m in re.finditer("\n", text)], dtype=np.int64)
    return braces, offsets, (np.searchsorted(newlines, at) + 1).tolist()


def _loads(text: str):
    """``json.loads`` whose objects are :class:`_Object` with their line."""
    places = iter(_objects(text))

    def with_line(members: dict):
        obj = _Object(members)
        line, begin, end_line, end = next(places, (None, None, None, None))
        obj.line = line
        if end_line != line and begin is not None and end is not None:
            obj._span = (text, begin, end)
        return obj

    return json.loads(text, object_hook=with_line)


class _Partial(dict):
    """A JSON document recovered from a damaged file, with the warning."""

    warning: str = ""


def _partial(doc) -> list[str]:
    return [doc.warning] if isinstance(doc, _Partial) and doc.warning else []


#: Places a damaged ``sadf -j`` document is tried closed at (each try parses
#: the whole prefix again: the number of tries must stay small).
MAX_PREFIX_TRIES = 20


def _json_prefix(path, text: str, exc: json.JSONDecodeError):
    """A cut ``sadf -j`` file: keep the statistics before the damage."""
    text = text[: exc.pos]
    cut = text.rfind("\n\t\t\t\t}")
    tries = 0
    while cut > 0 and tries < MAX_PREFIX_TRIES:
        tries += 1
        candidate = text[: cut + 6] + "]}]}}"
        try:
            json.loads(candidate)            # cheap tries; the one that holds is read with lines
            doc = _Partial(_loads(candidate))
            doc.warning = located(path, f"JSON damaged at character {exc.pos} ({exc.msg}); "
                                        "statistics before it were kept", line=exc.lineno)
            return doc
        except (json.JSONDecodeError, RecursionError):
            cut = text.rfind("\n\t\t\t\t}", 0, cut)
    raise InputError(path, f"not valid JSON: {exc.msg}", line=exc.lineno)


def _json_host(path, host: dict, clock: _Clock, out: _Collector, meta: dict):
    if not isinstance(host, dict):
        return
    name = host.get("nodename")
    if name is not None and not isinstance(name, str):
        name = str(name)
    meta["hosts"].append(name)
    meta.setdefault("kernel", host.get("release"))
    meta.setdefault("arch", host.get("machine"))
    meta.setdefault("ncpu", host.get("number-of-cpus"))
    meta.setdefault("date", host.get("file-date"))
    for sample in _list(host.get("statistics")):
        if not isinstance(sample, dict) or not isinstance(sample.get("timestamp"), dict):
            continue
        ts = _structured_stamp(clock, sample["timestamp"])
        for key, value in sample.items():
            if key != "timestamp":
                _json_walk(key, value, None, ts, name, out)
    for item in _list(host.get("restarts")):
        boot = item.get("boot") if isinstance(item, dict) else None
        if isinstance(boot, dict):
            ts = _structured_stamp(clock, boot)
            n = boot.get("cpu_count")
            msg = f"LINUX RESTART ({n} CPU)" if n is not None else "LINUX RESTART"
            out.events.append(_event(ts, name, "sar-restart", msg, path, getattr(boot, "line", None)))
    for item in _list(host.get("comments")):
        com = item.get("comment") if isinstance(item, dict) else None
        if isinstance(com, dict):
            out.events.append(_event(_structured_stamp(clock, com), name, "sar-comment",
                                     str(com.get("com", "")), path, getattr(com, "line", None)))


