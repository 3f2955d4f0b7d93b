"""The terminal narrative (rich): a one-screen summary, then each incident."""
from __future__ import annotations

import os
import re

from rich.console import Console, Group
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from sarsleuth.narrative import when, zone_of

#: C0 and C1 control characters (but newline and tab) and DEL: a log line's
#: escape sequences (set title, clear screen, hyperlinks) are shown, never run.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def inert(text) -> str:
    """Text from an input made safe for a terminal: control characters
    shown as ``\\xNN`` instead of being sent to it."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))


SEVERITY_STYLE = {"low": "dim", "medium": "yellow", "high": "bold red", "critical": "bold white on red"}


def render_text(case, console: Console | None = None, max_incidents: int = 10) -> None:
    console = console or Console()
    if case.incidents:
        console.print(_summary(case))
    else:
        console.print(_quiet(case))
    for inc in case.incidents[:max_incidents]:
        console.print(_incident_panel(inc))
    if len(case.incidents) > max_incidents:
        console.print(f"[dim]{len(case.incidents) - max_incidents} more incident(s): use --format json for all.[/dim]")
    _footer(case, console)


def _summary(case) -> Table:
    t = Table(title="sarsleuth: incidents, most important first", title_justify="left", expand=True)
    t.add_column("#", justify="right", width=3)
    t.add_column("severity", width=9)
    t.add_column("when", no_wrap=True)
    t.add_column("incident")
    t.add_column("score", justify="right", width=5)
    for inc in case.incidents[:10]:
        t.add_row(str(inc.rank), Text(inc.severity, style=SEVERITY_STYLE[inc.severity]),
                  f"{when(inc.start)}" if inc.start is not None else "unaligned",
                  escape(inert(inc.title)), f"{inc.score:.2f}")
    if case.incidents:
        zone = zone_of(case.incidents[0].start)
        t.caption = (f"times: {zone}" if zone else "") + f"  |  {len(case.sources)} sources, {len(case.findings)} findings"
    return t


def _quiet(case) -> Panel:
    checked = ", ".join(case.checked)
    return Panel(f"No incident found in {len(case.sources)} source(s).\nChecked: {escape(checked)}",
                 title="all quiet", border_style="green")


def _incident_panel(inc) -> Panel:
    parts = [Text(inert(inc.summary))]
    ev = Table.grid(padding=(0, 1))
    ev.add_column(style="dim", no_wrap=True)
    ev.add_column()
    for f in inc.findings:
        mark = "cause" if f.detector == inc.cause else ("effect" if inc.cause else "")
        ev.add_row(Text(f"[{f.severity}]", style=SEVERITY_STYLE[f.severity]),
                   Text(inert(f"{f.title}  ({f.detector}{', ' + mark if mark else ''})")))
        for e in f.evidence[:3]:
            loc = os.path.basename(e.path) + (f":{e.line}" if e.line else "") if e.path else ""
            ev.add_row("", Text(inert(f"  {loc}  {e.text}"[:220]), style="dim"))
    parts += [Text(""), ev]
    if inc.recommendations:
        parts.append(Text("\nWhat to do:", style="bold"))
        for r in inc.recommendations[:4]:
            parts.append(Text(inert(f"  - {r}")))
    if inc.why_first:
        parts.append(Text(inert(inc.why_first), style="italic dim"))
    title = f"#{inc.rank} [{inc.severity}] {escape(inert(inc.title))}"
    return Panel(Group(*parts), title=title, title_align="left",
                 border_style="red" if inc.severity in ("high", "critical") else "yellow")


def _footer(case, console: Console) -> None:
    if case.skipped:
        console.print(f"[dim]skipped {len(case.skipped)} file(s):[/dim]")
        for s in case.skipped[:10]:
            console.print(f"[dim]  {escape(inert(s.path))}: {escape(inert(s.reason))}[/dim]")
    for n in case.notes[:6]:
        console.print(f"[dim]note: {escape(inert(n))}[/dim]")
