"""nginx error.log, also from Tengine and OpenResty (kind ``nginx-error``).

``2012/12/24 16:39:56 [alert] 13661#0: *42 worker process 13666 exited on
signal 11 (core dumped)``: the stamp is the host's wall clock (no zone), the
level one of emerg/alert/crit/error/warn/notice/info/debug, ``13661#0`` the
pid and thread id of the logging process (the master for worker exits), and
``*42`` the connection number.  NGINX Unit's log (src/nxt_log.c
``nxt_log_time_handler``) is the same but for the colon: ``2024/01/05
10:00:00 [alert] 4410#4412 process 4413 exited on signal 9`` (milliseconds
after the seconds at debug level); its lines are tagged ``unit``.  Lines without the prefix continue the line
before them (multi-line upstream stderr) and go into its ``detail``.
Copies captured through ``docker compose logs`` (``nginx_1 | 2019/...``) and
lines whose date was cut off by the reporter are read too.

An Apache ``error_log`` is not an nginx log and is not claimed.
"""
from __future__ import annotations

import datetime as dt
import re
from typing import TYPE_CHECKING

from sarsleuth.inputs.parsers.logs.lines import LineInfo, head_lines
from sarsleuth.inputs.parsers.logs.syslog import MOST
from sarsleuth.inputs.parsers.wall_clock import wall_time
from sarsleuth.inputs.reading import read_head
from sarsleuth.inputs.parsers.base import ParseOptions, Parser

if TYPE_CHECKING:
    from sarsleuth.inputs.parsers.logs.volumes import VolumeSpec

LEVEL_WORDS = "emerg|alert|crit|error|warn|notice|info|debug"
RE_LINE = re.compile(
    r"^(?P<docker>(?:[\w.\-]{1,64} *\| *){1,4})?"
    r"(?:(?P<Y>\d{4})/(?P<mo>\d\d)/(?P<d>\d\d) (?P<H>\d\d):(?P<M>\d\d):(?P<S>\d\d)(?:\.(?P<ms>\d{3}))? )?"
    rf"\[(?P<level>{LEVEL_WORDS})\] (?P<pid>\d+)#(?P<tid>\d+)(?P<colon>:)? (?:\*(?P<conn>\d+) )?(?P<msg>.*)$", re.S)
RE_DOCKER = re.compile(r"^(?:[\w.\-]{1,64} *\| *){1,4}")
_FIXED = re.compile(rb"^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d \[")
_VOLUME_REGEX = rb"^(?:[\w.\-]{1,64} *\| *){0,4}(\d{4}/\d\d/\d\d \d\d:\d\d):\d\d(?:\.\d{3})? \[(\w+)\]"
_KEY_RE = re.compile(rb"^(\d{4})/(\d\d)/(\d\d) (\d\d):(\d\d)$")
#: The level word from its first two letters (fixed-position counting).
LEVEL_BY_PREFIX = {w[:2]: w for w in LEVEL_WORDS.split("|")}


def parse_line(text: str) -> LineInfo:
    """Split one error.log line; lines without the prefix are continuations."""
    m = RE_LINE.match(text)
    if not m:
        text = RE_DOCKER.sub("", text, count=1)
        return LineInfo(text, tag="nginx", prefixed=False)
    stamp = None
    if m.group("Y"):
        try:
            stamp = ("abs", wall_time(m.group("Y"), m.group("mo"), m.group("d"), m.group("H"), m.group("M"),
                                      m.group("S")))
        except ValueError:
            stamp = None
    if stamp is not None and m.group("ms"):
        stamp = ("abs", stamp[1].replace(microsecond=int(m.group("ms")) * 1000))
    conn = int(m.group("conn")) if m.group("conn") else None
    # NGINX Unit writes "pid#tid " without nginx's colon (src/nxt_log.c)
    return LineInfo(m.group("msg"), stamp=stamp, tag="nginx" if m.group("colon") else "unit",
                    pid=int(m.group("pid")), level=m.group("level"), conn=conn)


def minute_key(raw: bytes) -> tuple | None:
    m = _KEY_RE.match(raw)
    if not m:
        return None
    try:
        return ("abs", dt.datetime(*(int(g) for g in m.groups())))
    except ValueError:
        return None


def volume_spec(head: bytes) -> tuple[str, VolumeSpec]:
    """Fixed-position counting when every head line starts with the date."""
    # here, not at the top: sniff loads this module
    from sarsleuth.inputs.parsers.logs.volumes import VolumeSpec
    lines = [ln for ln in head.split(b"\n")[:200] if ln.strip()]
    prefixed = [ln for ln in lines if RE_LINE.match(ln.decode("utf-8", "replace"))]
    if prefixed and all(_FIXED.match(ln) for ln in prefixed):
        return "nginx", VolumeSpec(regex=_VOLUME_REGEX, fixed=(0, 16), level_fixed=(21, 2))
    return "nginx-prefixed", VolumeSpec(regex=_VOLUME_REGEX, level_group=True)


def read_events(path, options: ParseOptions | None = None, all_lines: bool = False,
                engine: str | None = None, progress=None):
    """Parse an nginx error.log into a Source."""
    # the scanner (and the signatures it loads) is imported only to read a file
    from sarsleuth.inputs.parsers.logs import scan as logscan
    from sarsleuth.inputs.parsers.logs.scan import LogFormat
    options = options or ParseOptions()
    variant, spec = volume_spec(read_head(path))
    fmt = LogFormat(source="nginx-error", parse_line=parse_line, volume=spec, variant=variant)
    result = logscan.scan(path, fmt, all_lines=all_lines, engine=engine, sample_every=8,
                          progress=progress or options.progress,
                          user_signatures=options.signatures)
    names = {k.decode() if isinstance(k, bytes) else k: v for k, v in LEVEL_BY_PREFIX.items()}
    source = logscan.build_source(path, "nginx-error", fmt, result, options, minute_key, names)
    source.host = None
    return source


class NginxErrorParser(Parser):
    kind = "nginx-error"
    foldable = True
    reads_utf16 = True      # the log scan decodes it (parsers/logs/blocks.py)
    description = "nginx / Tengine / OpenResty error.log (docker-compose prefixes too), and NGINX Unit's log"
    shape = "log"

    @classmethod
    def sniff(cls, head: bytes, text: str) -> float:
        lines = head_lines(text)
        if not lines:
            return 0.0
        stamped = [bool(RE_LINE.match(ln)) for ln in lines]
        frac = sum(stamped) / len(lines)
        # most lines must read: stamped ones, and the indented or bare
        # continuation lines a multi-line message leaves after one
        readable, in_log = 0, False
        for line, ok in zip(lines, stamped):
            in_log = ok or (in_log and line[:1] in (" ", "\t"))
            readable += in_log
        return min(0.95, 0.35 + 0.6 * frac) if frac and readable >= MOST * len(lines) else 0.0

    @classmethod
    def parse(cls, path, options: ParseOptions):
        return read_events(path, options)
