"""What a failed service said before it died.

An operator's first look at a failed unit is its last lines: `journalctl
-u UNIT` shows the program's own error just before systemd's "Main
process exited" (vault's "Error initializing storage of type mysql: ...
dial tcp 127.0.0.1:3306: connect: connection refused").  Once every cited
line has been read again from its file with the lines around it
(:func:`sarsleuth.inputs.evidence_lines.quote`), for the findings of a
detector whose knowledge says ``last_words`` (units: ``refs.unit``), the
program's last line before the unit's first failure line that says
something went wrong is that error: the finding quotes it in its title,
cites it, and keeps it as ``refs.last_words``.
"""
from __future__ import annotations

import re

from sarsleuth.inputs.parsers.logs.syslog import parse_line
from sarsleuth.knowledge import kb_entry
from sarsleuth.model import Evidence
from sarsleuth.safe_text import cut_words

#: How much of a line a title quotes.
QUOTED = 150
#: A line that says something went wrong (a program's "...done." before it exits is no reason).
_ERROR = re.compile(r"(?i)\b(?:error|errno|fail\w*|fatal|critical|crit|cannot|can't|could not|couldn't|unable|"
                    r"refused|denied|no such|not found|invalid|panic\w*|exception|abort\w*|timed out|timeout|"
                    r"killed|missing|unreachable|bad|illegal|segmentation)\b")
#: A program's summary of a failure it said just before ("nginx:
#: configuration file /etc/nginx/nginx.conf test failed" after its [emerg]
#: line): the line before names the reason.
_SUMMARY = re.compile(r"configuration file \S+ test failed")
#: systemd's own words, never a program's last ones.
_SYSTEMD = re.compile(r"^(?:systemd|init)(?:\[\d+\])?$")


def _program_of(unit: str) -> str:
    """``vault.service`` -> ``vault``; ``php8.2-fpm.service`` -> ``php8.2-fpm``; ``getty@tty1`` -> ``getty``."""
    return re.sub(r"(?:@[^.]*)?\.(?:service|socket)$", "", unit)


def _said_by(tag: str | None, program: str) -> bool:
    if not tag or _SYSTEMD.match(tag):
        return False
    tag = tag.split("[", 1)[0]
    return tag == program or tag.startswith(program) or program.startswith(tag)


def last_words(findings: list) -> None:
    """Quote, for each failed unit, its program's last line before the
    unit's first failure line that says what went wrong, when the lines
    read around that line hold one (in place)."""
    for f in findings:
        unit = (f.refs or {}).get("unit")
        if not kb_entry(f.detector).get("last_words") or not unit or not unit.endswith(".service") or not f.evidence:
            continue
        first = f.evidence[0]
        program = _program_of(unit)
        said = None
        for number, text in sorted(first.around or [], reverse=True):
            if number >= first.line:
                continue
            info = parse_line(text)
            if _said_by(info.tag, program) and _ERROR.search(info.message) and not _SUMMARY.search(info.message):
                said = (number, text, info.message.strip())
                break
        if said is None:
            continue
        number, text, message = said
        f.refs["last_words"] = message
        f.title += f"; it said: '{cut_words(message, QUOTED, '…')}'"
        f.evidence.insert(0, Evidence(path=first.path, line=number, text=text))
