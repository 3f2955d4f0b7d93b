"""Kernel ring buffer dumps (kind ``dmesg``).

Layouts: raw ``dmesg`` (``[  123.456789] msg``, seconds since boot, kept in
``uptime``; ``timestamp`` stays NaT until :func:`sarsleuth.timebase.align.align_sources`
finds an anchor), ``dmesg -T`` (``[Sat Jan 21 20:25:45 2017] msg``, the
host's wall clock as dmesg computed it, which drifts after suspend),
``dmesg -x`` (``kern  :info  : [..] msg``), and old kernels printing no
stamp at all (RHEL 6 ``printk.time=0``), whose lines have no time.  Syslog
lines pasted into a dmesg file are read as syslog lines.

An Apache ``error_log`` (``[Sun Dec 04 04:47:44 2005] [notice] ...``) looks
like ``dmesg -T`` but is not a kernel log: it is deliberately not claimed
(it sniffs as ``unknown``).
"""
from __future__ import annotations

import re

from sarsleuth.knowledge import locales
from sarsleuth.inputs.parsers.logs.lines import LineInfo, head_lines
from sarsleuth.inputs.reading import read_head
from sarsleuth.inputs.parsers.logs import stamp_names, syslog
from sarsleuth.inputs.parsers.wall_clock import wall_time
from sarsleuth.inputs.parsers.base import ParseOptions, Parser

RE_RAW = re.compile(r"^\[\s*(?P<up>\d+\.\d+)\]\s?(?P<msg>.*)$", re.S)
#: ``dmesg -T`` writes strftime("%a %b %e %H:%M:%S %Y") in the user's locale:
#: ``[Thu Jun 30 ...]``, ``[jeu. juin 30 ...]``, ``[木  6月 30 ...]``.
RE_HUMAN = re.compile(
    r"^\[(?P<wday>[^\W\d_]{1,12})\.? +" + syslog.MONTH_TOKEN + r"\.? +(?P<day>\d{1,2}) "
    r"(?P<H>\d\d):(?P<M>\d\d):(?P<S>\d\d)(?:[.,](?P<frac>\d+))? (?P<Y>\d{4})\]\s?(?P<msg>.*)$", re.S)
#: Any other ``-T`` stamp: the words before the day are a weekday and a
#: month of any script and number of words (vi ``[T2 Thg 6 10 ...]``, ca
#: ``[dl. de juny 10 ...]``), split by the locale tables.
RE_HUMAN_LOOSE = re.compile(
    r"^\[(?P<names>[^\]\d\s][^\]]{0,80}?) +(?P<day>\d{1,2}) "
    r"(?P<H>\d\d):(?P<M>\d\d):(?P<S>\d\d)(?:[.,](?P<frac>\d+))? (?P<Y>\d{4})\]\s?(?P<msg>.*)$", re.S)
#: ``dmesg -H`` read back (parsers/pastes.py gives each of its lines the
#: minute of its header plus the gaps printed): ``[Feb  5 06:51:00.000012]``,
#: no weekday and no year.
RE_YEARLESS = re.compile(r"^\[(?P<mon>[^\W\d_]{3,12}) +(?P<day>\d{1,2}) (?P<H>\d\d):(?P<M>\d\d):(?P<S>\d\d)\.(?P<us>\d{6})\]"
                         r"\s?(?P<msg>.*)$", re.S)
RE_DECODED = re.compile(
    r"^(?P<fac>kern|user|mail|daemon|auth|syslog|lpr|news|local\d)\s*:"
    r"(?P<lvl>emerg|alert|crit|err|warn|notice|info|debug)\s*: (?P<rest>.*)$", re.S)
#: systemd and its helpers (systemd-journald, systemd-fsck, systemd-shutdown)
#: write to /dev/kmsg as ``TAG[PID]: message``; the kernel's own
#: ``comm[pid]: segfault at ...`` lines name other programs.
RE_SYSTEMD_WRITER = re.compile(r"^(?P<tag>systemd(?:-[a-z][a-z0-9-]*)?)\[(?P<pid>\d+)\]: (?P<msg>.*)$", re.S)
RE_APACHE = re.compile(r"^\[[A-Z][a-z]{2} [A-Z][a-z]{2} \d\d \d\d:\d\d:\d\d(?:\.\d+)? \d{4}\] \[[\w:]+\]")
#: Words that only kernel reports print: evidence for a stamp-less dmesg.
#: A bare message pasted alone (``TCP: request_sock_TCP: Possible SYN
#: flooding on port 6987. Sending cookies.``) is read so, as an untimed event.
RE_KERNEL_VOCABULARY = re.compile(
    r"Call Trace:|\[<[0-9a-f]{8,16}>\]|^Mem-Info:|invoked oom-killer|page allocation failure|"
    r"segfault at|^Linux version \d|Pid: \d+, comm:|\bPID: \d+ +Comm:|^CPU\s+\d+: hi:|"
    r"Killed process \d+|\b(?:irq|IRQ) \d+|\bscsi\d|\beth\d|\bbonding:|time wait bucket|orphaned sockets|"
    # a message pasted bare starts with the kernel's own words (a note quoting
    # a syslog line holds them in its middle: no dmesg for that)
    r"^TCPv?6?: |^(?:possible )?SYN flooding on port|^nf_conntrack: |^(?:NMI )?(?:watchdog: )?BUG: soft lockup|"
    r"^INFO: task \S+ blocked for more than|^mce: |^\{\d+\}\[Hardware Error\]|^EDAC |^ata\d+(?:\.\d+)?: |"
    r"^sd \d+:\d+:\d+:\d+: |^nvme nvme\d|^(?:blk_update_request: |print_req_error: |end_request: )?"
    r"(?:I/O|critical medium) error, dev |^Buffer I/O error|^EXT[234]-fs |^XFS \(|^BTRFS |^Out of memory: |"
    r"^oom-kill:")
LEVELS = {"warn": "warning", "err": "err"}
#: Lines of a stamp-less file in the kernel's vocabulary, at least, for it
#: to be read as a dmesg (RHEL 6's printk.time=0 dumps hold a quarter).
MIN_VOCABULARY_SHARE = 0.2
_ASSIGNMENT = re.compile(r"^\s*(?:export\s+)?[A-Za-z_][A-Za-z0-9_]*=")

_VOLUME_REGEX = (rb"^(?:\w+\s*:\w+\s*: )?\[(?:\s*(\d+)\.\d+"
                 # dmesg -H read back: month, day, hour and minute
                 rb"|([^\s\]\d]{3,12} +\d{1,2} \d\d:\d\d):\d\d\.\d{6}"
                 rb"|[^\s\]]{1,36} +([^\s\]\d]{2,36} +\d{1,2} \d\d:\d\d):\d\d(?:[.,]\d+)? (\d{4})"
                 # names of several words: the weekday stays in the key
                 rb"|([^\]\d\s][^\]]{0,80}? +\d{1,2} \d\d:\d\d):\d\d(?:[.,]\d+)? (\d{4}))\]")


def parse_line(text: str, months: dict | None = None) -> LineInfo:
    """Split one dmesg line into stamp (uptime or wall clock) and message
    (``months``: the file's settled month names)."""
    level = None
    m = RE_DECODED.match(text)
    if m:
        text, level = m.group("rest"), LEVELS.get(m.group("lvl"), m.group("lvl"))
    m = RE_RAW.match(text)
    if m:
        return _writer(LineInfo(m.group("msg"), tag="kernel", uptime=float(m.group("up")), level=level))
    found = human_stamp(text)
    if found:
        m, token = found
        return _writer(LineInfo(m.group("msg"), stamp=_human_stamp(m, token, months), tag="kernel", level=level))
    m = RE_YEARLESS.match(text)
    if m:
        mon = syslog.month_number(m.group("mon"), months)
        if mon is not None:
            stamp = ("md", mon, int(m.group("day")), int(m.group("H")), int(m.group("M")), int(m.group("S")),
                     int(m.group("us")))
            return LineInfo(m.group("msg"), stamp=stamp, tag="kernel", level=level)
    if text[:1].isalpha() and syslog.RE_3164.match(text):
        info = syslog.parse_line(text, months)
        if info.stamp is not None:
            return info
    # printk.time=0 kernels and pasted fragments: a kernel line without time
    return LineInfo(text, tag="kernel", level=level, prefixed=False)


def _writer(info: LineInfo) -> LineInfo:
    """A line systemd wrote to the kernel's log (``log_target=kmsg``: while
    it boots and shuts down, or with no journald) is systemd's, as its
    syslog line would be: ``systemd[1]: nginx.service: Failed ...``."""
    m = RE_SYSTEMD_WRITER.match(info.message)
    if m:
        info.tag, info.pid, info.message = m.group("tag"), int(m.group("pid")), m.group("msg")
    return info


def human_match(text: str):
    """The ``dmesg -T`` stamp of a line, its weekday checked, or None."""
    found = human_stamp(text)
    return found[0] if found else None


def human_stamp(text: str):
    """(match, month token) of a line's ``dmesg -T`` stamp, its weekday and
    month known, or None."""
    m = RE_HUMAN.match(text)
    if m and locales.is_weekday(m.group("wday")) and (
            locales.english_month(m.group("mon")) is not None or locales.is_month(m.group("mon"))):
        return m, m.group("mon")
    if not text.startswith("[") or text[1:2].isdigit() or text[1:2] == " ":
        return None
    m = RE_HUMAN_LOOSE.match(text)
    split = locales.split_stamp_names(m.group("names")) if m else None
    return (m, split[1]) if split and split[0] is not None else None


def _human_stamp(m, token: str, months=None):
    mon = syslog.month_number(token, months)
    try:
        when = wall_time(m.group("Y"), mon, m.group("day"), m.group("H"), m.group("M"), m.group("S"),
                         syslog._frac_us(m.group("frac")))
    except (TypeError, ValueError):
        return None
    return ("abs", when)


def minute_key(raw: bytes) -> tuple | None:
    """``b"4301"`` (uptime seconds) -> ``("up", minute)``; a ``-T`` key ->
    wall-clock minute."""
    if raw.isdigit():
        return ("up", int(raw) // 60)
    return syslog.minute_key(raw)


def _minute_key_for(months: dict, unsettled: dict | None = None):
    if not months and unsettled is None:
        return minute_key
    wall = syslog.minute_key_for(months, unsettled)
    return lambda raw: ("up", int(raw) // 60) if raw.isdigit() else wall(raw)


def file_months(text: str) -> dict:
    """Month names of a dmesg head (``-T`` stamps and pasted syslog lines),
    ambiguous ones settled by the others."""
    return locales.settle(month_tokens(text)) or syslog.file_months(text)


def _month_token(line: str) -> str | None:
    found = human_stamp(line)
    return found[1] if found else syslog.stamp_token(line) if line[:1].isalpha() else None


def month_tokens(text: str, limit: int = 2000) -> list[str]:
    """The month tokens of a dmesg head's ``-T`` stamps, in order."""
    return [found[1] for found in map(human_stamp, text.split("\n")[:limit]) if found]


def read_events(path, options: ParseOptions | None = None, all_lines: bool = False,
                engine: str | None = None, progress=None):
    """Parse a dmesg dump into a Source (see the module docstring)."""
    # the scanner (and the signatures it loads) is imported only to read a file
    from sarsleuth.inputs.parsers.logs import scan as logscan
    from sarsleuth.inputs.parsers.logs.scan import LogFormat, VolumeSpec
    options = options or ParseOptions()
    head = read_head(path)
    text = head.decode("utf-8", "replace")
    human = sum(1 for ln in text.split("\n")[:100] if human_match(ln))
    months = file_months(text)
    fmt = LogFormat(source="dmesg", parse_line=syslog.line_parser(months, parse_line),
                    volume=VolumeSpec(regex=_VOLUME_REGEX),
                    variant="dmesg-T" if human else "dmesg")
    result = logscan.scan(path, fmt, all_lines=all_lines, engine=engine, sample_every=12,
                          progress=progress or options.progress,
                          user_signatures=options.signatures)
    unsettled: dict = {}
    source = logscan.build_source(path, "dmesg", fmt, result, options, _minute_key_for(months, unsettled),
                                  recognised=_kernel_like)
    source.host = None
    source.warnings.extend(stamp_names.ambiguous_months(path, text, _month_token))
    source.warnings.extend(stamp_names.unsettled_warnings(path, unsettled, text))
    events = source.events
    if len(events):
        # uptime-only events are not on any wall clock until aligned
        events["aligned"] = events["timestamp"].notna()
    source.meta["uptime_only"] = source.meta.get("volume_unit") == "uptime-minute"
    return source


def _kernel_like(info: LineInfo) -> bool:
    """A stamped kernel line, or a stamp-less one in kernel vocabulary."""
    return info.prefixed or bool(RE_KERNEL_VOCABULARY.search(info.message))


def stamp_fraction(lines: list[str]) -> float:
    return (sum(1 for ln in lines if RE_RAW.match(ln) or RE_YEARLESS.match(ln) or human_match(ln)) / len(lines)
            if lines else 0.0)


class DmesgParser(Parser):
    kind = "dmesg"
    reads_utf16 = True      # the log scan decodes it (parsers/logs/blocks.py)
    description = "kernel ring buffer dumps: dmesg, dmesg -T, dmesg -x, stamp-less RHEL 6 dmesg"
    carries_wall_clock = False      # "[  123.456789]": seconds since boot
    shape = "log"

    @classmethod
    def sniff(cls, head: bytes, text: str) -> float:
        lines = head_lines(text)
        if not lines:
            return 0.0
        apache = sum(1 for ln in lines if RE_APACHE.match(ln))
        if apache >= len(lines) / 2:
            return 0.0
        stripped = [RE_DECODED.sub(r"\g<rest>", ln) for ln in lines]
        frac = stamp_fraction(stripped)
        if frac >= syslog.MOST:
            return min(0.3 + 0.6 * frac, 0.92)
        # stamp-less kernel lines (printk.time=0, pasted fragments): the
        # kernel's own vocabulary decides (documents never get here, see
        # parsers.documents)
        # a file of KEY=VALUE settings (ifcfg-eth0, cbq-0000.example) is configuration
        if sum(1 for ln in lines if _ASSIGNMENT.match(ln)) * 2 >= len(lines):
            return 0.0
        vocabulary = sum(1 for ln in stripped if RE_KERNEL_VOCABULARY.search(ln))
        # a fifth of the lines at least: a config file or script naming
        # eth0 once (ifcfg-eth0, a ppp hook) is no kernel log
        share = vocabulary / len(lines)
        return 0.35 + 0.1 * min(share * 2, 1.0) if share >= MIN_VOCABULARY_SHARE else 0.0

    @classmethod
    def parse(cls, path, options: ParseOptions):
        return read_events(path, options)
