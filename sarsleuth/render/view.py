"""What an output shows and what it leaves out, decided once for text,
markdown and HTML: how many incidents are told in full (``--top N``, or
``--all``), how many timeline rows and evidence lines each gets, and the
sentence that says what was left out and how to get it."""
from __future__ import annotations

import re
from dataclasses import dataclass

from sarsleuth.model import SEVERITY_RANK

#: Incidents told in full unless --top or --all says otherwise.
DEFAULT_TOP = 5
#: Timeline rows and evidence lines per finding shown unless --all.
TIMELINE_ROWS = 14
EVIDENCE_LINES = 3
#: Warnings listed unless --all (every output lists them; JSON all of them).
MAX_WARNINGS = 20
#: Findings outside every incident listed when there is no incident, unless --all.
MAX_UNJOINED = 10


@dataclass(frozen=True)
class View:
    top: int | None = None        # incidents told in full; None: the output's default
    everything: bool = False      # --all: nothing left out

    def incidents(self, case, default: int = DEFAULT_TOP) -> list:
        if self.everything:
            return list(case.incidents)
        return list(case.incidents[: (self.top if self.top is not None else default)])

    def rows(self, items: list, limit: int) -> list:
        return list(items) if self.everything else list(items[:limit])


def left_out(total: int, shown: int, what: str, how: str = "") -> str:
    """``3 more incident(s) not told here: --top 8 or --all shows them.``"""
    more = total - shown
    if more <= 0:
        return ""
    how = how or f"--top {total} or --all shows them"
    return f"{more:,} more {what} not shown here: {how}."


_CODE = re.compile(r"`([^`]+)`")


def code_spans(text: str) -> list[tuple[str, bool]]:
    """A recommendation split into (text, is_code) parts at its backticks,
    so each output shows code as code instead of raw backticks."""
    parts, pos = [], 0
    for m in _CODE.finditer(text):
        if m.start() > pos:
            parts.append((text[pos:m.start()], False))
        parts.append((m.group(1), True))
        pos = m.end()
    if pos < len(text):
        parts.append((text[pos:], False))
    return parts


def plain(text: str) -> str:
    """A recommendation without its backticks (the terminal shows code as is)."""
    return "".join(t for t, _code in code_spans(text))


def host_lines(hosts) -> list[str]:
    """One line per host, however many bundles told about it (a host's
    sosreport given alone and again inside a collect archive is one host,
    its bundles named together)."""
    groups: dict = {}
    for h in hosts:
        groups.setdefault(h.host or h.hostname or id(h), []).append(h)
    return [g[0].summary(also=[x.bundle for x in g[1:]]) for g in groups.values()]


#: How notes are grouped for a reader: (group title, words that put a note in it), first match wins.
NOTE_GROUPS = (
    ("window", ("--window",)),
    ("copies not read", (" not read: ",)),
    ("duplicates counted once", ("counted once", "read once", "is the same file as")),
    ("clocks aligned", ("aligned to wall clock", "uptime", "clock")),
    ("years assumed", ("year",)),
    ("zones", ("zone",)),
)


def note_groups(notes) -> list[tuple[str, list]]:
    """Notes in groups a reader can skim (copies not read, clocks,
    years...), each group in the order its notes came."""
    groups: dict = {}
    for n in notes:
        title = next((t for t, words in NOTE_GROUPS if any(w in n for w in words)), "other")
        groups.setdefault(title, []).append(n)
    order = [t for t, _ in NOTE_GROUPS] + ["other"]
    return sorted(groups.items(), key=lambda kv: order.index(kv[0]))


def unjoined_findings(case) -> list[str]:
    """When no incident was found, what was found all the same: each
    finding that joined no incident (a load test's failed requests with
    nothing in the files they could stem from, a load that rose while
    most CPUs idled), most severe first, with its detector and the first
    place its evidence is (``file:line``)."""
    alone = [f for f in case.findings if not f.role]
    alone.sort(key=lambda f: -SEVERITY_RANK.get(f.severity, 0))
    lines = []
    for f in alone:
        where = next((f"{e.path}:{e.line}" if e.line else str(e.path) for e in f.evidence or []), "")
        lines.append(f"[{f.severity}] {f.title} ({f.detector}{'; ' + where if where else ''})")
    return lines
