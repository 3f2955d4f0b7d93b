"""Package manager logs (kind ``package-log``): what was installed,
upgraded or removed on a host, and when.

``dpkg.log`` (Debian, Ubuntu): ``2025-06-24 14:36:25 upgrade
libsystemd0:amd64 252.36-1~deb12u1 252.38-1~deb12u1``, the host's wall
clock; the actions that change a package are ``install``, ``upgrade``,
``remove`` and ``purge`` (``status``, ``configure``, ``trigproc`` and
``startup`` lines are dpkg's own steps).  ``dnf.rpm.log`` (RHEL 8+, Fedora):
``2024-01-15T10:23:45+0000 SUBDEBUG Upgrade: nginx-1:1.20.1-14.el9.x86_64``,
an instant with its offset; ``Install``, ``Upgrade``, ``Downgrade``,
``Reinstall``, ``Erase`` and ``Obsolete`` change a package (the ``-ed``
lines that follow are the old version being cleaned up).  Each change is a
``package`` event, its message the line after its time stamp.
"""
from __future__ import annotations

import datetime as dt
import re

from sarsleuth.errors import InputError
from sarsleuth.inputs.parsers.base import ParseOptions, Parser, events_frame
from sarsleuth.inputs.reading import decode, iter_lines

RE_DPKG = re.compile(r"^(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) (?P<action>startup|status|configure|trigproc|install|"
                     r"upgrade|remove|purge|conffile)\b(?P<rest>.*)$")
RE_DNF = re.compile(r"^(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?P<off>Z|[+-]\d\d:?\d\d) (?P<level>[A-Z]+) (?P<rest>.*)$")
RE_DNF_CHANGE = re.compile(r"^(?P<action>Install|Upgrade|Downgrade|Reinstall|Erase|Obsolete): \S")
DPKG_CHANGES = {"install", "upgrade", "remove", "purge"}
#: share of a file's first lines that must be in a layout for it to be one
MOST = 0.8


def _layout(line: str) -> str | None:
    if RE_DPKG.match(line):
        return "dpkg"
    if RE_DNF.match(line):
        return "dnf"
    return None


class PackageLogParser(Parser):
    """dpkg.log and dnf.rpm.log."""

    kind = "package-log"
    priority = 2
    description = "package manager logs: dpkg.log, dnf.rpm.log (installs, upgrades, removals)"

    @classmethod
    def sniff(cls, head: bytes, text: str) -> float:
        lines = [ln for ln in text.splitlines()[:50] if ln.strip()]
        if len(lines) > 1 and len(text) >= len(head) > 4096:
            lines = lines[:-1]                  # the head may cut the last line
        if not lines:
            return 0.0
        known = sum(1 for ln in lines if _layout(ln))
        # before syslog, which reads "DATE TIME word ..." as its own ISO layout
        return 0.98 if known >= MOST * len(lines) else 0.0

    @classmethod
    def parse(cls, path, options: ParseOptions):
        # here, not at the top: sniff loads this module
        from sarsleuth.model import Source
        warnings: list = []
        events, read, skipped, first_skipped, layout = [], 0, 0, None, None
        for n, raw in iter_lines(path, warnings):
            line = decode(raw)
            if not line.strip():
                continue
            layout = layout or _layout(line)
            event = _event(line, layout)
            if event is None:
                skipped += 1
                first_skipped = first_skipped or n
                continue
            read += 1
            if event is not True:
                events.append({**event, "file": str(path), "line": n})
        if not read:
            raise InputError(path, "no dpkg.log or dnf.rpm.log line found", line=1)
        if skipped:
            warnings.append(f"{path}: {skipped} line(s) in no package log layout skipped (first at line {first_skipped})")
        return Source(path=str(path), kind=cls.kind, events=events_frame(events), warnings=warnings,
                      records=read, tz=None)


def _event(line: str, layout: str | None):
    """The event of a line that changes a package, True for a line of the
    file's layout that changes none, None for a line of no layout (or of
    the other one, or a date that does not exist)."""
    try:
        return _read(line, layout)
    except ValueError:
        return None


def _read(line: str, layout: str | None):
    m = RE_DPKG.match(line) if layout == "dpkg" else None
    if m:
        if m.group("action") not in DPKG_CHANGES:
            return True
        when = dt.datetime.strptime(m.group("ts"), "%Y-%m-%d %H:%M:%S")
        return _record(when, "dpkg", line[len(m.group("ts")) + 1:])
    m = RE_DNF.match(line) if layout == "dnf" else None
    if m:
        rest = m.group("rest")
        if not RE_DNF_CHANGE.match(rest):
            return True
        off = m.group("off")
        zone = dt.timezone.utc if off == "Z" else dt.timezone(
            (1 if off[0] == "+" else -1) * dt.timedelta(hours=int(off[1:3]), minutes=int(off[-2:])))
        when = dt.datetime.strptime(m.group("ts"), "%Y-%m-%dT%H:%M:%S").replace(tzinfo=zone)
        return _record(when.astimezone(dt.timezone.utc), "dnf", rest)
    return None


def _record(when, process: str, message: str) -> dict:
    # here, not at the top: sniff loads this module
    import pandas as pd
    return {"timestamp": pd.Timestamp(when), "host": None, "source": "package-log", "kind": "package",
            "pid": None, "process": process, "message": message, "level": "info"}
