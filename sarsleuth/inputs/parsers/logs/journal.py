"""systemd journal exports (kind ``journal``).

* ``journalctl -o json`` (one JSON object per line): ``__REALTIME_TIMESTAMP``
  (µs since the epoch, so timestamps are tz-aware UTC, converted to
  ``--tz`` when given), ``_HOSTNAME``, ``SYSLOG_IDENTIFIER``/``_COMM``,
  ``_PID``, ``PRIORITY``; kernel records (``_TRANSPORT=kernel``) keep their
  ``_SOURCE_MONOTONIC_TIMESTAMP`` as ``uptime``.  ``MESSAGE`` given as a
  byte array is decoded.  (``-o json-pretty`` spreads objects over several
  lines and is not read.)
* the text outputs ``short`` (``Feb 04 00:07:12 host tag[pid]: msg``),
  ``short-precise``, ``short-iso``/``short-iso-precise`` (with offset) and
  ``short-full`` (``Thu 2022-02-10 16:19:13 UTC host ...``), recognised by
  journalctl's ``-- Logs begin at ... --``/``-- Boot <id> --`` marker lines
  (without them the same text is indistinguishable from syslog and sniffs
  as ``syslog``), and ``short-monotonic`` (``[  123.456789] host tag: msg``).
"""
from __future__ import annotations

import datetime as dt
import json
import re

from sarsleuth.errors import located
from sarsleuth.knowledge import locales
from sarsleuth.inputs.parsers.logs.lines import LineInfo, head_lines, hosts_named
from sarsleuth.inputs.reading import decode, read_head
from sarsleuth.inputs.parsers.logs import journal_fields, stamp_names, syslog
from sarsleuth.inputs.parsers.wall_clock import wall_time
from sarsleuth.inputs.parsers.base import ParseOptions, Parser

RE_MARKER = re.compile(r"^-- (?:Logs begin at|Journal begins at|Boot [0-9a-f]{32}|Reboot|No entries)")
#: ``journalctl -x`` prints the catalog's explanation after an entry, each
#: line behind ``-- `` (``-- Subject: Unit failed``, ``-- Defined-By:
#: systemd``, its prose, ``--`` alone between paragraphs).
RE_CATALOG = re.compile(r"^--(?: |$)")
#: short-full and the header print a weekday: English in systemd's own
#: formatter, the locale's (``jeu.``, ``Do``, ``木``) where strftime wrote it.
RE_SHORT_FULL = re.compile(
    r"^(?P<wday>[^\W\d_]{1,12})\.? (?P<Y>\d{4})-(?P<mo>\d\d)-(?P<d>\d\d) "
    r"(?P<H>\d\d):(?P<M>\d\d):(?P<S>\d\d)(?:\.(?P<frac>\d+))? (?P<zone>[A-Za-z+\-0-9]+)(?P<rest>\s.*)$", re.S)
RE_MONOTONIC = re.compile(r"^\[\s*(?P<up>\d+\.\d+)\](?P<rest>\s.*)$", re.S)
RE_BEGIN = re.compile(r"^-- (?:Logs begin at|Journal begins at) \S+ (?P<Y>\d{4})-(?P<mo>\d\d)-(?P<d>\d\d) "
                      r"(?P<H>\d\d):(?P<M>\d\d):(?P<S>\d\d)", re.M)
#: The header's zones: journalctl prints its lines and its header on one
#: clock (its own zone, or UTC with ``--utc``), ``%Z`` of strftime.
RE_BEGIN_ZONES = re.compile(r"^-- (?:Logs begin at|Journal begins at) .*? (?P<first>[A-Z]{3,5}|[+-]\d\d(?::?\d\d)?), "
                            r"ends? at .*? (?P<last>[A-Z]{3,5}|[+-]\d\d(?::?\d\d)?)\. --", re.M)
#: The fields that open a catalog entry in ``journalctl -x`` (v219 on).
CATALOG_FIELDS = ("-- Subject: ", "-- Defined-By: ", "-- Support: ", "-- Documentation: ")
_JSON_KEY = rb'"__REALTIME_TIMESTAMP"\s*:\s*"(\d+)"'
_SHORT_FULL_KEY = rb"^[^\s\d]{1,36} (\d{4}-\d\d-\d\d \d\d:\d\d)"


def parse_text_line(text: str, months: dict | None = None) -> LineInfo:
    """One line of a ``journalctl`` text output (``months``: the file's
    settled month names)."""
    if text.startswith("--") and RE_CATALOG.match(text):        # a marker, or the catalog's text
        return LineInfo(text, tag="journal")
    m = RE_SHORT_FULL.match(text)
    if m and locales.is_weekday(m.group("wday")):
        return _short_full(m)
    m = RE_MONOTONIC.match(text)
    if m:
        info = syslog._with_rest(m.group("rest"), None, None)
        if info.tag and info.tag.startswith("kernel"):
            info.uptime = float(m.group("up"))
        return info
    return syslog.parse_line(text, months)


def _named_zone(zone: str):
    """The zone journalctl printed (strftime's %Z), when it names one for
    sure: UTC, GMT or a numeric offset (``+09``, for a zone without an
    abbreviation).  An abbreviation such as CST or IST names several: None."""
    return dt.timezone.utc if zone in ("UTC", "GMT", "Z") else syslog._zone(zone) if zone[0] in "+-" else None


def _short_full(m) -> LineInfo:
    tzinfo = _named_zone(m.group("zone"))
    try:
        when = wall_time(m.group("Y"), m.group("mo"), m.group("d"), m.group("H"), m.group("M"), m.group("S"),
                         syslog._frac_us(m.group("frac")), tzinfo=tzinfo)
    except ValueError:
        return LineInfo(m.group(0), prefixed=False)
    # a zone abbreviation other than UTC (CET, EST...) is ambiguous: wall clock
    return syslog._with_rest(m.group("rest"), ("aware" if tzinfo else "abs", when), None)


def parse_json_line(text: str) -> LineInfo:
    """One ``journalctl -o json`` (or ``json-seq``) record; any field may
    be an array of byte values or of several values
    (:func:`~sarsleuth.inputs.parsers.logs.journal_fields.text_of`)."""
    try:
        rec = json.loads(text.lstrip("\x1e"))
    except ValueError:
        return LineInfo(text, prefixed=False)
    if not isinstance(rec, dict):
        return LineInfo(text, prefixed=False)
    info = journal_fields.entry_info({name: journal_fields.text_of(rec.get(name))
                                      for name in journal_fields.ENTRY_FIELDS})
    return info


def _is_entry(info: LineInfo) -> bool:
    return (info.stamp is not None or info.uptime is not None) and bool(info.tag or info.host)


def json_minute_key(raw: bytes) -> tuple | None:
    return journal_fields.realtime_minute_key(raw)


def text_minute_key(raw: bytes) -> tuple | None:
    return syslog.minute_key(raw)


def _is_json(head: bytes) -> bool:
    first = head.lstrip(b" \t\r\n\x1e")[:1]     # json-seq starts each record with RS
    return first == b"{" and b"__REALTIME_TIMESTAMP" in head[:65536]


def read_events(path, options: ParseOptions | None = None, all_lines: bool = False,
                engine: str | None = None, progress=None):
    """Parse a journalctl export (JSON or text) into a Source."""
    # the scanner (and the signatures it loads) is imported only to read a file
    from sarsleuth.inputs.parsers.logs import scan as logscan
    from sarsleuth.inputs.parsers.logs.scan import LogFormat, VolumeSpec
    options = options or ParseOptions()
    head = read_head(path)
    if _is_json(head):
        fmt = LogFormat(source="journal", parse_line=_split_json, variant="json",
                        volume=VolumeSpec(regex=_JSON_KEY), extra_candidates=(r'"MESSAGE" ?: ?\[',),
                        message_in_line=False)
        key = json_minute_key
    else:
        variant, spec = syslog.volume_spec(head)
        if re.search(_SHORT_FULL_KEY, head, re.M):
            spec = VolumeSpec(regex=_SHORT_FULL_KEY)
        months = syslog.file_months(head.decode("utf-8", "replace"))
        fmt = LogFormat(source="journal", parse_line=syslog.line_parser(months, parse_text_line), volume=spec,
                        variant=f"short-{variant}")
        unsettled: dict = {}
        key = syslog.minute_key_for(months, unsettled)
    result = logscan.scan(path, fmt, all_lines=all_lines, engine=engine, sample_every=12,
                          progress=progress or options.progress,
                          user_signatures=options.signatures)
    untimed = sum(n for raw, n in result.volume_keys.items() if key(raw) is None) if fmt.variant == "json" else 0
    source = logscan.build_source(path, "journal", fmt, result, options, key,
                                  first_line_time=_logs_begin_at(head),
                                  zone_named=None if fmt.variant == "json" else _header_zone(head))
    if untimed:
        source.warnings.append(located(path, f"{untimed:,} entr{'y' if untimed == 1 else 'ies'} with a time outside "
                                             "the years 1970-9999 (kept without a time)"))
    if fmt.variant != "json":
        text = head.decode("utf-8", "replace")
        source.warnings.extend(stamp_names.ambiguous_months(path, text, syslog.stamp_token))
        source.warnings.extend(stamp_names.unsettled_warnings(path, unsettled, text))
    return source


def _logs_begin_at(head: bytes) -> dt.datetime | None:
    """The start date journalctl prints in its header: a year for ``short``."""
    m = RE_BEGIN.search(head.decode("utf-8", "replace"))
    if not m:
        return None
    try:
        return dt.datetime(int(m.group("Y")), int(m.group("mo")), int(m.group("d")), int(m.group("H")),
                           int(m.group("M")), int(m.group("S")))
    except ValueError:
        return None


def _header_zone(head: bytes):
    """The zone journalctl's header names for the lines below it
    (:func:`_named_zone`), the same at both ends; else None."""
    m = RE_BEGIN_ZONES.search(head.decode("utf-8", "replace"))
    if not m or m.group("first") != m.group("last"):
        return None
    return _named_zone(m.group("first"))


def _split_json(text: str) -> LineInfo:
    """A JSON record; a multi-line MESSAGE keeps its first line as the
    message and the rest as an embedded report (``#012`` form)."""
    info = parse_json_line(text)
    if "\n" in info.message:
        first, rest = info.message.split("\n", 1)
        info.message = first + "".join("#012" + ln for ln in rest.split("\n"))
    return info


class JournalParser(Parser):
    kind = "journal"
    foldable = True
    reads_utf16 = True      # the log scan decodes it (parsers/logs/blocks.py)
    priority = 2
    description = "systemd journal: journalctl -o json, json-seq, short, short-iso, short-precise, short-full"
    carries_year = False    # journalctl's short format: "May 06 15:04:13"
    anchors_uptime = True   # the kernel's lines keep their [uptime]
    shape = "log"

    @classmethod
    def hosts_in(cls, path, head: bytes) -> tuple[tuple, dict]:
        text = decode(head)
        return hosts_named(text, parse_json_line if text.lstrip()[:1] == "{" else parse_text_line), {}

    @classmethod
    def sniff(cls, head: bytes, text: str) -> float:
        if _is_json(head):
            return 0.97
        lines = head_lines(text, 50)
        catalog = any(ln.startswith(CATALOG_FIELDS) for ln in lines)
        if not any(RE_MARKER.match(ln) for ln in lines) and not catalog:
            full = sum(1 for ln in lines if (m := RE_SHORT_FULL.match(ln)) and locales.is_weekday(m.group("wday")))
            return 0.9 if full > len(lines) / 2 else 0.0
        # the markers (and the catalog's text) alone do not make a journal: most lines must read
        others = [ln for ln in lines if not RE_CATALOG.match(ln)]
        if not others:
            return 0.97
        parse = syslog.line_parser(syslog.file_months("\n".join(others)), parse_text_line)
        readable = sum(1 for ln in others if RE_MONOTONIC.match(ln) or _is_entry(parse(ln)) or ln[:1] in (" ", "\t"))
        return 0.97 if readable >= syslog.MOST * len(others) else 0.0

    @classmethod
    def parse(cls, path, options: ParseOptions):
        return read_events(path, options)
