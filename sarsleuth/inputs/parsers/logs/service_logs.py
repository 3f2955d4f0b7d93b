"""The logs two services write themselves, read with the log scan the
other logs share:

* PostgreSQL's stderr log (kind ``postgresql-log``): ``log_line_prefix``
  ``'%m [%p] '`` (the default since 10: ``2024-01-05 10:00:00.123 UTC
  [1234] FATAL:  sorry, too many clients already``), Debian's ``'%m [%p]
  %q%u@%d '`` (``... [1234] app@shop FATAL:  ...``), ``'%t [%p-%l] '`` and
  Red Hat's ``'< %m >'``: the time and its zone as ``%m``/``%t`` print it
  (``UTC`` or ``GMT``, an offset, or a zone abbreviation, which is kept as
  the host's wall clock), the backend's pid, the severity (``LOG``,
  ``FATAL``, ``PANIC``...); ``DETAIL:``, ``HINT:`` and ``STATEMENT:`` lines,
  and tab-indented ones, continue the message before them.
* MySQL's and MariaDB's error log (kind ``mysql-log``, sql/log.cc and
  the log sinks of MySQL 8): ``2021-11-08T15:47:07.889528Z 1 [ERROR]
  [MY-012640] [InnoDB] ...`` (5.7 and 8: UTC, or the host's offset with
  ``log_timestamps = SYSTEM``), MariaDB's ``2021-11-08 15:47:07 0 [ERROR]
  InnoDB: ...`` and 5.x's ``211108 15:47:07 [ERROR] ...`` (the host's wall
  clock): the number after the time is the server's thread, not a host;
  the crash report's ``15:47:07 UTC - mysqld got signal 11 ;`` and the
  lines without a time continue the message before them.
* PHP-FPM's own log (kind ``php-fpm-log``, sapi/fpm/fpm/zlog.c
  ``zlog_print_time``): ``[05-Jan-2024 10:00:00] WARNING: [pool www] ...``,
  ``.%06d`` microseconds after the seconds at ``log_level = debug`` (then
  ``WARNING: pid 811, fpm_children_bury(), line 256: ...``): the host's
  wall clock with its year.
"""
from __future__ import annotations

import datetime as dt
import re

from sarsleuth.inputs.parsers.base import ParseOptions, Parser
from sarsleuth.inputs.parsers.logs.lines import LineInfo, head_lines
from sarsleuth.inputs.parsers.logs.syslog import MOST, _zone as syslog_zone

PG_LEVELS = ("LOG|FATAL|ERROR|WARNING|PANIC|NOTICE|INFO|DEBUG[1-5]?|DETAIL|HINT|STATEMENT|CONTEXT|QUERY|"
             "LOCATION")
RE_PG = re.compile(
    r"^(?:< )?(?P<Y>\d{4})-(?P<mo>\d\d)-(?P<d>\d\d) (?P<H>\d\d):(?P<M>\d\d):(?P<S>\d\d)(?:\.(?P<frac>\d{1,6}))? "
    r"(?P<zone>[A-Za-z][A-Za-z0-9/_+-]{0,31}|[+-]\d\d(?::?\d\d)?)(?: >)?\s*"
    r"(?:\[(?P<pid>\d+)(?:-\d+)?\]:? )?(?:\[\d+-\d+\] )?(?:\S+@\S* |(?:[a-z]+=\S*,?)+ )?"
    rf"(?P<msg>(?P<level>{PG_LEVELS}):  ?.*)$", re.S)
#: ``%l-1``, the session's line number (pgBadger's ``'%t [%p]: [%l-1] '``),
#: and ``user=%u,db=%d`` are the prefixes logs add most often after the pid.
#: The lines that belong to the message before them (errdetail, errhint, the statement)
PG_FOLLOWERS = ("DETAIL", "HINT", "STATEMENT", "CONTEXT", "QUERY", "LOCATION")
_PG_VOLUME = rb"^(?:< )?(\d{4}-\d\d-\d\d \d\d:\d\d):\d\d\S* "
_UTC = {"UTC", "GMT", "Etc/UTC", "UCT", "Z"}

RE_MYSQL = re.compile(
    r"^(?:(?P<Y>\d{4})-(?P<mo>\d\d)-(?P<d>\d\d)[T ]|(?P<yy>\d\d)(?P<mo2>\d\d)(?P<d2>\d\d) {1,2})"
    r"(?P<H>\d{1,2}):(?P<M>\d\d):(?P<S>\d\d)(?:\.(?P<frac>\d{1,6}))?(?P<tz>Z|[+-]\d\d:\d\d)? "
    r"(?:(?P<thread>\d+) )?\[(?P<level>ERROR|Error|Warning|Note|System|Info)\] "
    r"(?:\[MY-\d+\] )?(?:\[(?P<subsystem>[A-Za-z]+)\] )?(?P<msg>.*)$", re.S)
#: a crash report's first line (sql/signal_handler.cc): "15:47:07 UTC - mysqld got signal 11 ;"
RE_MYSQL_CRASH = re.compile(r"^(?:\d{4}-\d\d-\d\dT)?\d\d:\d\d:\d\dZ? UTC - (?P<msg>mysqld got (?:signal|exception) .*)$")
_MYSQL_LEVELS = {"ERROR": "err", "Error": "err", "Warning": "warning", "Note": "notice", "System": "notice",
                 "Info": "info"}
_MYSQL_VOLUME = rb"^(\d{4}-\d\d-\d\d[T ]\d\d:\d\d|\d{6} {1,2}\d{1,2}:\d\d):\d\d"

RE_FPM = re.compile(r"^\[(?P<d>\d\d)-(?P<mon>[A-Z][a-z]{2})-(?P<Y>\d{4}) (?P<H>\d\d):(?P<M>\d\d):(?P<S>\d\d)"
                    r"(?:\.(?P<us>\d{6}))?\] (?P<level>DEBUG|NOTICE|WARNING|ERROR|ALERT): "
                    r"(?:pid (?P<pid>\d+), )?(?P<msg>.*)$", re.S)
_FPM_VOLUME = rb"^\[(\d\d-[A-Z][a-z]{2}-\d{4} \d\d:\d\d):\d\d"
_MONTHS = {m: i for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov",
                                        "Dec"), 1)}


def _pg_stamp(m):
    when = dt.datetime(int(m["Y"]), int(m["mo"]), int(m["d"]), int(m["H"]), int(m["M"]), int(m["S"]),
                       int((m["frac"] or "0").ljust(6, "0")))
    zone = m["zone"]
    if zone in _UTC:
        return ("aware", when.replace(tzinfo=dt.timezone.utc))
    if zone[0] in "+-":
        hours, minutes = int(zone[1:3]), int(zone[-2:]) if len(zone) > 3 else 0
        offset = dt.timedelta(hours=hours, minutes=minutes) * (1 if zone[0] == "+" else -1)
        return ("aware", when.replace(tzinfo=dt.timezone(offset)))
    return ("abs", when)        # an abbreviation (CET, EST): many zones share one


def pg_line(text: str) -> LineInfo:
    m = RE_PG.match(text)
    if not m:
        return LineInfo(text, tag="postgres", prefixed=False)      # a statement's next lines
    try:
        stamp = _pg_stamp(m)
    except ValueError:
        stamp = None
    # errdetail() and the statement are lines of their own: the message before them goes on
    return LineInfo(m["msg"], stamp=stamp, tag="postgres", level=m["level"].lower(),
                    pid=int(m["pid"]) if m["pid"] else None, prefixed=m["level"] not in PG_FOLLOWERS)


def pg_minute(raw: bytes):
    try:
        return ("abs", dt.datetime.strptime(raw.decode(), "%Y-%m-%d %H:%M"))
    except ValueError:
        return None


def mysql_line(text: str) -> LineInfo:
    m = RE_MYSQL.match(text)
    if not m:
        crash = RE_MYSQL_CRASH.match(text)
        # the crash report's lines and a message's own next lines go on the message before them
        return LineInfo(crash["msg"] if crash else text, tag="mysqld", prefixed=bool(crash),
                        level="crit" if crash else None)
    try:
        year = int(m["Y"]) if m["Y"] else 2000 + int(m["yy"])
        when = dt.datetime(year, int(m["mo"] or m["mo2"]), int(m["d"] or m["d2"]), int(m["H"]), int(m["M"]),
                           int(m["S"]), int((m["frac"] or "0").ljust(6, "0")))
    except ValueError:
        return LineInfo(text, tag="mysqld", prefixed=False)
    # log_timestamps = UTC writes Z, = SYSTEM the host's offset; MariaDB and 5.x the wall clock
    stamp = ("aware", when.replace(tzinfo=syslog_zone(m["tz"]))) if m["tz"] else ("abs", when)
    message = f"{m['subsystem']}: {m['msg']}" if m["subsystem"] else m["msg"]
    return LineInfo(message, stamp=stamp, tag="mysqld", level=_MYSQL_LEVELS[m["level"]])


def mysql_minute(raw: bytes):
    text = raw.decode().replace("T", " ")
    for layout in ("%Y-%m-%d %H:%M", "%y%m%d %H:%M", "%y%m%d  %H:%M"):
        try:
            return ("abs", dt.datetime.strptime(text, layout))
        except ValueError:
            continue
    return None


def fpm_line(text: str) -> LineInfo:
    m = RE_FPM.match(text)
    if not m:
        return LineInfo(text, tag="php-fpm", prefixed=False)
    try:
        when = dt.datetime(int(m["Y"]), _MONTHS[m["mon"]], int(m["d"]), int(m["H"]), int(m["M"]), int(m["S"]),
                           int(m["us"] or 0))
    except (KeyError, ValueError):
        when = None
    return LineInfo(m["msg"], stamp=("abs", when) if when else None, tag="php-fpm", level=m["level"].lower(),
                    pid=int(m["pid"]) if m["pid"] else None)


def fpm_minute(raw: bytes):
    try:
        return ("abs", dt.datetime.strptime(raw.decode(), "%d-%b-%Y %H:%M"))
    except ValueError:
        return None


def _read(path, options: ParseOptions, kind: str, parse_line, volume: bytes, minute_key):
    # the scan (and the signatures it loads) when a file is read: sniffing stays light
    from sarsleuth.inputs.parsers.logs import scan
    from sarsleuth.inputs.parsers.logs.volumes import VolumeSpec
    fmt = scan.LogFormat(source=kind, parse_line=parse_line, volume=VolumeSpec(regex=volume))
    result = scan.scan(path, fmt, progress=options.progress, user_signatures=options.signatures)
    source = scan.build_source(path, kind, fmt, result, options, minute_key)
    source.host = None
    return source


def _share(text: str, pattern) -> float:
    lines = head_lines(text)
    return sum(1 for ln in lines if pattern.match(ln)) / len(lines) if lines else 0.0


class _ServiceLogParser(Parser):
    """A service's own log: its lines' layout (``pattern``) sniffs it, its
    line reader, volume key and minute key read it with the log scan."""

    reads_utf16 = True      # the log scan decodes it (parsers/logs/blocks.py)
    shape = "log"
    pattern: re.Pattern
    volume: bytes

    @classmethod
    def sniff(cls, head: bytes, text: str) -> float:
        share = _share(text, cls.pattern)
        return min(0.95, 0.4 + 0.55 * share) if share >= MOST else 0.0

    @classmethod
    def parse(cls, path, options: ParseOptions):
        return _read(path, options or ParseOptions(), cls.kind, cls.line, cls.volume, cls.minute)


class PostgresLogParser(_ServiceLogParser):
    kind = "postgresql-log"
    # its lines also read as ISO-stamped syslog (the zone taken for a host):
    # the closer reading wins a tie
    priority = 2
    description = "PostgreSQL's stderr log (log_line_prefix '%m [%p] ' and Debian's, Red Hat's)"
    pattern, volume = RE_PG, _PG_VOLUME
    line, minute = staticmethod(pg_line), staticmethod(pg_minute)


class MysqlLogParser(_ServiceLogParser):
    kind = "mysql-log"
    # its lines also read as ISO-stamped syslog (the thread taken for a host)
    priority = 2
    description = "MySQL's and MariaDB's error log (log_error)"
    pattern, volume = RE_MYSQL, _MYSQL_VOLUME
    line, minute = staticmethod(mysql_line), staticmethod(mysql_minute)


class PhpFpmLogParser(_ServiceLogParser):
    kind = "php-fpm-log"
    description = "PHP-FPM's own log (error_log of php-fpm.conf)"
    pattern, volume = RE_FPM, _FPM_VOLUME
    line, minute = staticmethod(fpm_line), staticmethod(fpm_minute)
