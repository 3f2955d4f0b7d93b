"""syslog files: /var/log/messages, kern.log, syslog (kind ``syslog``).

Layouts recognised, line by line (a file may mix them):

* RFC 3164 as written by syslogd/rsyslog: ``May  6 15:04:13 host tag[pid]: msg``
  with or without the host (router syslogs), zero- or space-padded day,
  ``host/relay`` hosts, tags like ``sshd(pam_unix)[123]``, an optional
  ``<PRI>``, fractional seconds, a weekday and year (OpenWrt ``logread``:
  ``Sun Jan 15 21:18:04 2023 kern.info kernel: ...``; ``date``'s with a
  zone's name before it, read as wall clock: CST is China's and America's),
  a severity word after the host (SONiC; its newer template writes the year
  first), and localized month names (``août``, ``Mär``).
* rsyslog high precision (RFC 3339): ``2023-03-14T17:02:01.552031+08:00 host
  tag: msg`` (zone kept: timestamps are tz-aware).
* RFC 5424: ``<34>1 2003-10-11T22:14:15.003Z host app procid msgid [sd] msg``.
* Lines without a stamp (``kernel: msg``, a kernel line whose stamp a paste
  cut, ``obs kernel: [uptime] msg``: read by its uptime, its cut host word
  not taken for a host; tab-indented continuations) are kept as
  continuation or time-less lines.

Kernel messages lose their ``[uptime]`` stamp (kept in ``uptime``); rsyslog
``#012`` escapes are unescaped; an nginx error.log line forwarded through
syslog is split into its level, pid, message and own date (a clue to the
year).  Lines without a year get one from :mod:`sarsleuth.timebase.align`.
"""
from __future__ import annotations

import datetime as dt
import re
from functools import lru_cache
from typing import TYPE_CHECKING

from sarsleuth.knowledge import locales
from sarsleuth.inputs.parsers.logs import stamp_names
from sarsleuth.inputs.parsers.logs.lines import LineInfo, head_lines, hosts_named
from sarsleuth.inputs.parsers.wall_clock import leap, wall_time
from sarsleuth.inputs.reading import decode, read_head
from sarsleuth.inputs.parsers.base import ParseOptions, Parser

if TYPE_CHECKING:
    from sarsleuth.inputs.parsers.logs.volumes import VolumeSpec

SEVERITIES = ["emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"]
_FACILITY_LEVELS = {"emerg", "alert", "crit", "err", "error", "warning", "warn", "notice", "info", "debug"}
_SEVERITY_WORDS = {"EMERG", "ALERT", "CRIT", "ERR", "ERROR", "WARNING", "WARN", "NOTICE", "INFO", "DEBUG"}

#: A month as strftime("%b") writes it: a word in any script (``Apr``,
#: ``avril``, ``Mär``, ``апр``) or a number with the CJK month sign (``4月``,
#: padded `` 4月`` in ja_JP).
MONTH_TOKEN = r"(?P<mon>[^\W\d_]{2,12}|\d{1,2}[月월])"
RE_3164 = re.compile(
    r"^(?:<(?P<pri>\d{1,3})>)?(?:(?P<year0>(?:19|20)\d\d) )?(?:(?P<wday>[^\W\d_]{1,12})\.?,? {1,2})? ?"
    + MONTH_TOKEN + r"\.? {1,2}(?P<day>\d{1,2}) (?P<H>\d\d):(?P<M>\d\d):(?P<S>\d\d)"
    r"(?:[.,](?P<frac>\d{1,9}))?(?: (?:[A-Z]{2,5} )?(?P<year>(?:19|20)\d\d)(?= |$))?(?P<rest>(?:\s.*)?)$", re.S)
RE_ISO = re.compile(
    r"^(?:<(?P<pri>\d{1,3})>)?(?P<v5424>1 )?(?P<Y>\d{4})-(?P<mo>\d\d)-(?P<d>\d\d)[T ]"
    r"(?P<H>\d\d):(?P<M>\d\d):(?P<S>\d\d)(?:[.,](?P<frac>\d{1,9}))?"
    r"(?P<tz>Z|[+-]\d\d:?\d\d)?(?P<rest>(?:\s.*)?)$", re.S)
RE_HOST_TAG = re.compile(
    r"^\s*(?:(?P<fac>[a-z0-9]+)\.(?P<sev>emerg|alert|crit|err|error|warning|warn|notice|info|debug)\s+)?"
    r"(?:(?P<host>[^\s:\[\]]{1,255})\s+)??"
    r"(?:(?P<sevword>EMERG|ALERT|CRIT|ERR|ERROR|WARNING|WARN|NOTICE|INFO|DEBUG)\s+)?"
    r"(?P<tag>[^\s\[\]:]{1,128}(?:\([^)\s]{0,64}\))?)(?:\[(?P<pid>\d+)\])?:(?:\s|$)(?P<msg>.*)$", re.S)
RE_HOST_ONLY = re.compile(r"^\s*(?P<host>\S+)\s+(?P<msg>.*)$", re.S)
RE_5424_REST = re.compile(
    r"^\s*(?P<host>\S+) (?P<app>\S+) (?P<procid>\S+) (?P<msgid>\S+) "
    r"(?P<sd>-|(?:\[(?:[^\]\\]|\\.)*\])+)(?: (?P<msg>.*))?$", re.S)
RE_BARE_KERNEL = re.compile(
    r"^\s*(?:(?P<fac>[a-z0-9]+)\.(?P<sev>[a-z]+)\s+)?kernel(?:\[\d+\])?: (?P<msg>.*)$", re.S)
RE_CUT_KERNEL = re.compile(r"^\S{1,64} kernel: (?P<msg>\[\s*\d+\.\d+\].*)$", re.S)
RE_UPTIME = re.compile(r"^\[\s*(?P<up>\d+\.\d+)\]\s?(?P<msg>.*)$", re.S)
RE_NGINX_EMBEDDED = re.compile(
    r"(?:^|\s)(?P<date>\d{4}/\d\d/\d\d \d\d:\d\d:\d\d) \[(?P<level>emerg|alert|crit|error|warn|notice|info|debug)\] "
    r"(?P<pid>\d+)#\d+: (?:\*(?P<conn>\d+) )?(?P<msg>.*)$", re.S)

#: Volume keys, when stamps are not at a fixed position.
_VOLUME_REGEX = (rb"^(?:<\d{1,3}>)?(?:1 )?(?:(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) )? ?"
                 rb"((?:[^\s:\[\]]{1,48} {1,4}){1,4}?\d{1,2} \d\d:\d\d|\d{4}-\d\d-\d\d[T ]\d\d:\d\d)"
                 rb"(?::\d\d(?:[.,]\d+)?( (?:[A-Z]{2,5} )?(?:19|20)\d\d)(?= ))?")
_FIXED_3164 = re.compile(rb"^[A-Z][a-z]{2} [ 0-3]\d \d\d:\d\d:\d\d[ .]")
_FIXED_ISO = re.compile(rb"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
_JOURNAL_MARKER = re.compile(r"^-- (?:Logs begin at|Journal begins at|Boot [0-9a-f]{32}|Reboot|No entries)")


def month_number(word: str, settled: dict | None = None) -> int | None:
    """Month 1-12 from a month name of any locale (CLDR, see
    :mod:`sarsleuth.knowledge.locales`); ``settled`` holds the file's own
    reading of ambiguous names."""
    return locales.month_of(word, settled)


def file_months(text: str) -> dict:
    """The month names of a file's head, ambiguous ones settled by the
    others (``{}`` for an English file: CLDR is not loaded)."""
    return locales.settle(month_tokens(text))


def month_tokens(text: str, limit: int = 2000) -> list[str]:
    """The month tokens of the stamps of a file's head, in order."""
    return [t for t in map(stamp_token, text.split("\n")[:limit]) if t is not None]


def stamp_token(line: str) -> str | None:
    """The month token of a line's syslog stamp, or None."""
    m = RE_3164.match(line)
    if m and (locales.english_month(m.group("mon")) is not None or locales.is_month(m.group("mon"))):
        return m.group("mon")
    split = stamp_names.loose_names(line)
    return split[1][1] if split else None


def _frac_us(frac: str | None) -> int:
    return int((frac or "0")[:6].ljust(6, "0"))


def _zone(text: str | None):
    if not text or text == "Z":
        return dt.timezone.utc if text else None
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    return dt.timezone(sign * dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:4] or 0)))   # "+09" too


def parse_line(text: str, months: dict | None = None) -> LineInfo:
    """Split one syslog line into stamp, host, tag, pid and message
    (``months``: the file's settled month names, see :func:`file_months`)."""
    m = RE_3164.match(text)
    if m:
        mon = month_number(m.group("mon"), months)
        wday = m.group("wday")
        if mon is not None and (wday is None or locales.is_weekday(wday)):
            # in a file of another language "de gen." is one name, not a
            # weekday "de" and a month "gen"
            whole = _loose_stamp(text, months) if wday is not None and months else None
            stamp = _md_stamp(m, mon)
            if whole is not None:
                return whole
            if stamp is not None:
                return _with_rest(m.group("rest"), stamp, m.group("pri"))
    m = RE_ISO.match(text)
    if m:
        try:
            when = wall_time(m.group("Y"), m.group("mo"), m.group("d"), m.group("H"), m.group("M"), m.group("S"),
                             _frac_us(m.group("frac")), tzinfo=_zone(m.group("tz")))
        except ValueError:
            when = None
        if when is not None:
            stamp = ("aware" if when.tzinfo else "abs", when)
            if m.group("v5424"):
                return _rfc5424_rest(m.group("rest"), stamp, m.group("pri"))
            return _with_rest(m.group("rest"), stamp, m.group("pri"))
    if text[:1] not in _NO_NAME_STARTS:
        loose = _loose_stamp(text, months)
        if loose is not None:
            return loose
    return bare_line(text)


#: First characters no month name starts with: the loose stamp is not tried there.
_NO_NAME_STARTS = frozenset("-#*\t[{(\"'/=+|>")


def _loose_stamp(text: str, months: dict | None):
    """The LineInfo of a line whose stamp only :data:`~sarsleuth.inputs.parsers.logs.stamp_names.RE_LOOSE` reads."""
    found = stamp_names.loose_names(text)
    if found is None:
        return None
    m, (_wday, token) = found
    mon = month_number(token, months)
    stamp = _md_stamp(m, mon) if mon is not None else None
    return _with_rest(m.group("rest"), stamp, m.group("pri")) if stamp is not None else None


def _md_stamp(m, mon: int):
    day, h, mi, s = int(m.group("day")), int(m.group("H")), int(m.group("M")), int(m.group("S"))
    if not (1 <= day <= 31 and h < 24 and mi < 60 and s < 61):
        return None
    s, us = leap(s, _frac_us(m.group("frac")))
    year = m.group("year") or m.groupdict().get("year0")     # SONiC writes it first
    if not year:
        return ("md", mon, day, h, mi, s, us)
    try:
        return ("abs", dt.datetime(int(year), mon, day, h, mi, s, us))
    except ValueError:
        return None


def _level_from_pri(pri: str | None) -> str | None:
    return SEVERITIES[int(pri) % 8] if pri is not None and int(pri) < 192 else None


#: The common case ``host tag[pid]: msg``, tried before the general form.
RE_COMMON = re.compile(r"^ (?P<host>[^\s:\[\]]{1,255}) (?P<tag>[^\s\[\]:(]{1,128})(?:\[(?P<pid>\d+)\])?: (?P<msg>.*)$",
                       re.S)


def _with_rest(rest: str, stamp, pri) -> LineInfo:
    level = _level_from_pri(pri)
    m = RE_COMMON.match(rest)
    if m and m.group("host") not in _SEVERITY_WORDS and m.group("host").partition(".")[2] not in _FACILITY_LEVELS:
        host, tag, pid, msg = m.groups()
        info = LineInfo(msg, stamp=stamp, host=host.split("/")[0], tag=tag,
                        pid=int(pid) if pid else None, level=level)
        return _refine(info)
    m = RE_HOST_TAG.match(rest)
    if m:
        host = m.group("host")
        if host:
            host = host.split("/")[0]
        level = (m.group("sev") or (m.group("sevword") or "").lower() or level) or None
        info = LineInfo(m.group("msg"), stamp=stamp, host=host, tag=m.group("tag"),
                        pid=int(m.group("pid")) if m.group("pid") else None, level=_norm_level(level))
        return _refine(info)
    m = RE_HOST_ONLY.match(rest)
    if m:
        return _refine(LineInfo(m.group("msg"), stamp=stamp, host=m.group("host"), level=level))
    return LineInfo(rest.strip(), stamp=stamp, level=level)


def _norm_level(level: str | None) -> str | None:
    if not level:
        return None
    level = level.lower()
    return {"error": "err", "warn": "warning"}.get(level, level)


def _rfc5424_rest(rest: str, stamp, pri) -> LineInfo:
    m = RE_5424_REST.match(rest)
    if not m:
        return LineInfo(rest.strip(), stamp=stamp, level=_level_from_pri(pri))

    def nil(v):
        return None if v == "-" else v
    msg = (m.group("msg") or "").lstrip("\ufeff")
    procid = nil(m.group("procid"))
    info = LineInfo(msg, stamp=stamp, host=nil(m.group("host")), tag=nil(m.group("app")),
                    pid=int(procid) if procid and procid.isdigit() else None, level=_level_from_pri(pri))
    return _refine(info)


def bare_line(text: str) -> LineInfo:
    """A line without a syslog stamp: ``kernel: msg`` fragments, dmesg-style
    ``[uptime] msg`` lines, or continuation text."""
    m = RE_BARE_KERNEL.match(text)
    if m:
        info = LineInfo(m.group("msg"), tag="kernel", level=_norm_level(m.group("sev")))
        info.prefixed = True
        return _refine(info)
    m = RE_UPTIME.match(text) or RE_UPTIME.match((RE_CUT_KERNEL.match(text) or {"msg": ""})["msg"])
    if m:
        return LineInfo(m.group("msg"), tag="kernel", uptime=float(m.group("up")))
    return LineInfo(text, prefixed=False)


def _refine(info: LineInfo) -> LineInfo:
    """Kernel lines lose their ``[uptime]``; forwarded nginx lines are split."""
    if info.tag and info.tag.startswith("kernel"):
        m = RE_UPTIME.match(info.message)
        if m:
            info.uptime = float(m.group("up"))
            info.message = m.group("msg")
        return info
    m = RE_NGINX_EMBEDDED.search(info.message)
    if m and (info.tag is None or "nginx" in info.tag or "error" in info.tag):
        info.tag, info.pid, info.level = "nginx", int(m.group("pid")), m.group("level")
        info.conn = int(m.group("conn")) if m.group("conn") else None
        info.message, info.dated = m.group("msg"), m.group("date")
    return info


# ------------------------------------------------------------- volume keys

_KEY_RE = re.compile(
    r"^(?:(?:(?P<year0>(?:19|20)\d\d) )? ?" + MONTH_TOKEN + r"\.? {1,2}(?P<day>\d{1,2}) (?P<H>\d\d):(?P<M>\d\d)(?: (?P<year>\d{4}))?"
    r"|(?P<Y>\d{4})-(?P<mo>\d\d)-(?P<d>\d\d)[T ](?P<H2>\d\d):(?P<M2>\d\d))$")


@lru_cache(maxsize=65536)
def minute_key(raw: bytes) -> tuple | None:
    """A raw volume key (``May  6 15:04`` or ``2023-03-14T17:02``) read into
    ``("md", mon, day, h, m)`` or ``("abs", datetime)``."""
    return _minute_key(raw, None)


def minute_key_for(months: dict, unsettled: dict | None = None):
    """:func:`minute_key` reading month names as one file settled them;
    ``unsettled`` collects the names met that the file's head did not
    settle and that stand for more than one month (for a warning)."""
    if not months and unsettled is None:
        return minute_key
    return lru_cache(maxsize=65536)(lambda raw: _minute_key(raw, months, unsettled))


_LOOSE_KEY_RE = re.compile(r"^(?P<names>.+?) {1,4}(?P<day>\d{1,2}) (?P<H>\d\d):(?P<M>\d\d)(?: (?P<year>\d{4}))?$")


def _minute_key(raw: bytes, months: dict | None, unsettled: dict | None = None) -> tuple | None:
    text = raw.decode("utf-8", "replace")
    m = _KEY_RE.match(text)
    token = m.group("mon") if m and not m.group("Y") else None
    if m is None or (token is not None and month_number(token, months) is None):
        # a name of several words, marks or padding; a dmesg -T key's weekday
        m = _LOOSE_KEY_RE.match(text)
        split = locales.split_stamp_names(m.group("names")) if m else None
        if split is None:
            return None
        token = split[1]
    try:
        if "Y" in m.re.groupindex and m.group("Y"):
            return ("abs", dt.datetime(int(m.group("Y")), int(m.group("mo")), int(m.group("d")),
                                       int(m.group("H2")), int(m.group("M2"))))
        mon = month_number(token, months)
        if unsettled is not None and mon is not None and token not in unsettled:
            stamp_names.note_unsettled(token, months, unsettled)
        day, h, mi = int(m.group("day")), int(m.group("H")), int(m.group("M"))
        if mon is None or not (1 <= day <= 31 and h < 24 and mi < 60):
            return None
        year = m.group("year") or m.groupdict().get("year0")
        return ("abs", dt.datetime(int(year), mon, day, h, mi)) if year else ("md", mon, day, h, mi)
    except ValueError:
        return None


def volume_spec(head: bytes) -> tuple[str, VolumeSpec]:
    """Pick the fastest way to read minute keys for this file: a fixed slice
    when every stamped head line has the English RFC 3164 or the ISO stamp
    at the start, a regex otherwise."""
    # here, not at the top: sniff loads this module
    from sarsleuth.inputs.parsers.logs.volumes import VolumeSpec
    lines = [ln for ln in head.split(b"\n")[:200] if ln.strip()]
    fixed_3164 = sum(1 for ln in lines if _FIXED_3164.match(ln))
    fixed_iso = sum(1 for ln in lines if _FIXED_ISO.match(ln))
    stamped = sum(1 for ln in lines if re.match(_VOLUME_REGEX, ln))
    if stamped and fixed_3164 == stamped:
        return "rfc3164", VolumeSpec(regex=_VOLUME_REGEX, fixed=(0, 12))
    if stamped and fixed_iso == stamped:
        return "rfc3339", VolumeSpec(regex=_VOLUME_REGEX, fixed=(0, 16))
    return "mixed", VolumeSpec(regex=_VOLUME_REGEX)


#: Share of a head's lines that must read as a kind for the file to be it:
#: a document quoting a few log lines is not a log.
MOST = 0.5


def stamped_fraction(lines: list[str], kinds: list | None = None) -> float:
    """Share of head lines carrying a syslog stamp and tag (``kinds``:
    :func:`_line_kinds` of the lines, when already known)."""
    kinds = _line_kinds(lines) if kinds is None else kinds
    return sum(k == "stamped" for k in kinds) / len(lines) if lines else 0.0


def readable_fraction(lines: list[str], kinds: list | None = None) -> float:
    """Share of head lines that read as syslog: stamped lines, kernel
    fragments (``kernel: msg``, ``[uptime] msg``), and the indented
    continuation lines that follow one (a report's body)."""
    if not lines:
        return 0.0
    kinds = _line_kinds(lines) if kinds is None else kinds
    hits, in_log = 0, False
    for line, kind in zip(lines, kinds):
        if kind:
            hits, in_log = hits + 1, True
        elif in_log and line[:1] in (" ", "\t"):
            hits += 1
        else:
            in_log = False
    return hits / len(lines)


def _line_kinds(lines: list[str]) -> list[str | None]:
    """"stamped", "fragment" or None for each line."""
    parse = line_parser(file_months("\n".join(lines)))
    out = []
    for ln in lines:
        info = parse(ln)
        if info.stamp is not None and (info.tag or info.host):
            out.append("stamped")
        elif info.tag == "kernel" and (info.prefixed or info.uptime is not None):
            out.append("fragment")
        else:
            out.append(None)
    return out


# ------------------------------------------------------------ entry points

def read_events(path, options: ParseOptions | None = None, all_lines: bool = False,
                engine: str | None = None, progress=None, kind: str = "syslog"):
    """Parse a syslog file into a Source; with ``all_lines`` every line
    becomes a row (kind ``log`` when no signature matches)."""
    # the scanner (and the signatures it loads) is imported only to read a file
    from sarsleuth.inputs.parsers.logs import scan as logscan
    from sarsleuth.inputs.parsers.logs.scan import LogFormat
    options = options or ParseOptions()
    head = read_head(path)
    variant, spec = volume_spec(head)
    months = file_months(head.decode("utf-8", "replace"))
    fmt = LogFormat(source=kind, parse_line=line_parser(months), volume=spec, variant=variant)
    result = logscan.scan(path, fmt, all_lines=all_lines, engine=engine, sample_every=12,
                          progress=progress or options.progress,
                          user_signatures=options.signatures)
    unsettled: dict = {}
    source = logscan.build_source(path, kind, fmt, result, options, minute_key_for(months, unsettled))
    text = head.decode("utf-8", "replace")
    source.warnings.extend(stamp_names.ambiguous_months(path, text, stamp_token))
    source.warnings.extend(stamp_names.unsettled_warnings(path, unsettled, text))
    return source


def line_parser(months: dict, parse=None):
    """``parse`` (default :func:`parse_line`) bound to one file's month names."""
    parse = parse or parse_line
    if not months:
        return parse
    return lambda text: parse(text, months)


class SyslogParser(Parser):
    kind = "syslog"
    foldable = True
    reads_utf16 = True      # the log scan decodes it (parsers/logs/blocks.py)
    priority = 1
    description = "syslog files (RFC 3164, RFC 3339 high precision, RFC 5424): messages, kern.log"
    carries_year = False    # RFC 3164: "May  6 15:04:13"
    anchors_uptime = True   # kern.log keeps the kernel's [uptime]
    shape = "log"

    @classmethod
    def hosts_in(cls, path, head: bytes) -> tuple[tuple, dict]:
        return hosts_named(decode(head), parse_line), {}

    @classmethod
    def sniff(cls, head: bytes, text: str) -> float:
        lines = head_lines(text)
        if not lines:
            return 0.0
        if any(_JOURNAL_MARKER.match(ln) for ln in lines[:50]):
            return 0.2
        kinds = _line_kinds(lines)
        frac = stamped_fraction(lines, kinds)
        if frac > 0 and readable_fraction(lines, kinds) >= MOST:
            return min(0.95, 0.4 + 0.55 * frac)
        kernel_tagged = sum(1 for ln in lines if RE_BARE_KERNEL.match(ln)) / len(lines)
        return 0.3 + 0.15 * kernel_tagged if kernel_tagged >= MOST else 0.0

    @classmethod
    def parse(cls, path, options: ParseOptions):
        return read_events(path, options)
