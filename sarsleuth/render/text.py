"""The terminal narrative (rich): a one-screen summary, then each incident.

Nothing is parsed as rich markup or emoji codes: every string (titles
included) goes in as plain :class:`~rich.text.Text`, so ``[critical]`` or
``:fire:`` in a title is shown as written, and input text has its control
characters escaped (:func:`~sarsleuth.render._safe.shown`) before it reaches
the terminal.
"""
from __future__ import annotations

import os

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from sarsleuth.render._time import when, zone_of
from sarsleuth.render._safe import shown

SEVERITY_STYLE = {"low": "dim", "medium": "yellow", "high": "bold red", "critical": "bold white on red"}
#: Incidents given a panel; the rest are counted, and named in the JSON.
MAX_INCIDENTS = 10


def console_for(out) -> Console:
    """A console writing to ``out`` that never interprets markup, emoji
    codes or highlighting in what it prints."""
    return Console(file=out, markup=False, emoji=False, highlight=False)


def write_case(case, out) -> None:
    render_text(case, console_for(out))


def render_text(case, console: Console | None = None, max_incidents: int = MAX_INCIDENTS) -> None:
    console = console or console_for(None)
    console.print(_summary(case, max_incidents) if case.incidents else _quiet(case))
    for inc in case.incidents[:max_incidents]:
        console.print(_incident_panel(inc))
    if len(case.incidents) > max_incidents:
        console.print(Text(f"{len(case.incidents) - max_incidents} more incident(s) not shown: "
                           "--format json or markdown lists every one.", style="dim"))
    _footer(case, console)


def _summary(case, max_incidents: int) -> Table:
    t = Table(title=Text("sarsleuth: incidents, most important first"), title_justify="left", expand=True)
    t.add_column("#", justify="right", width=3)
    t.add_column("severity", width=9)
    t.add_column("when", no_wrap=True)
    t.add_column("incident")
    t.add_column("score", justify="right", width=5)
    for inc in case.incidents[:max_incidents]:
        t.add_row(str(inc.rank), Text(inc.severity, style=SEVERITY_STYLE.get(inc.severity, "")),
                  when(inc.start) if inc.start is not None else "unaligned",
                  Text(shown(inc.title)), f"{inc.score:.2f}")
    zone = zone_of(case.incidents[0].start)
    shown_count = min(len(case.incidents), max_incidents)
    more = f" (showing {shown_count} of {len(case.incidents)})" if shown_count < len(case.incidents) else ""
    t.caption = Text((f"times: {shown(zone)}  |  " if zone else "")
                     + f"{len(case.sources)} sources, {len(case.findings)} findings, "
                     f"{len(case.incidents)} incident(s){more}")
    return t


def _quiet(case) -> Panel:
    checked = ", ".join(case.checked)
    return Panel(Text(f"No incident found in {len(case.sources)} source(s).\nChecked: {shown(checked)}"),
                 title=Text("all quiet"), border_style="green")


def _incident_panel(inc) -> Panel:
    parts = [Text(shown(inc.summary))]
    ev = Table.grid(padding=(0, 1))
    ev.add_column(style="dim", no_wrap=True)
    ev.add_column()
    for f in inc.findings:
        mark = "cause" if f.detector == inc.cause else ("effect" if inc.cause else "")
        ev.add_row(Text(f"[{f.severity}]", style=SEVERITY_STYLE.get(f.severity, "")),
                   Text(shown(f"{f.title}  ({f.detector}{', ' + mark if mark else ''})")))
        for e in f.evidence[:3]:
            loc = os.path.basename(e.path) + (f":{e.line}" if e.line else "") if e.path else ""
            ev.add_row("", Text(shown(f"  {loc}  {e.text}"[:220]), style="dim"))
    parts += [Text(""), ev]
    if inc.recommendations:
        parts.append(Text("\nWhat to do:", style="bold"))
        for r in inc.recommendations[:5]:
            parts.append(Text(shown(f"  - {r}")))
    if inc.why_first:
        parts.append(Text(shown(inc.why_first), style="italic dim"))
    title = Text(f"#{inc.rank} [{inc.severity}] {shown(inc.title)}")
    return Panel(Group(*parts), title=title, title_align="left",
                 border_style="red" if inc.severity in ("high", "critical") else "yellow")


def _footer(case, console: Console) -> None:
    for h in getattr(case, "hosts", []):
        console.print(Text(f"host: {shown(h.summary())}", style="dim"))
    if case.skipped:
        console.print(Text(f"skipped {len(case.skipped)} file(s):", style="dim"))
        for s in case.skipped[:10]:
            console.print(Text(f"  {shown(s.path)}: {shown(s.reason)}", style="dim"))
        if len(case.skipped) > 10:
            console.print(Text(f"  and {len(case.skipped) - 10} more (--format json lists every one)", style="dim"))
    for n in case.notes[:6]:
        console.print(Text(f"note: {shown(n)}", style="dim"))
    if len(case.notes) > 6:
        console.print(Text(f"{len(case.notes) - 6} more note(s) in --format json", style="dim"))


def write_table(table, out) -> None:
    t = Table(title=Text(shown(table.title)), title_justify="left")
    for col in table.columns:
        t.add_column(col.header, justify="right" if col.numeric else "left", no_wrap=col.numeric,
                     style="bold" if col.code else None, overflow="fold")
    for row in table.rows():
        t.add_row(*(Text(shown(cell)) for cell in row))
    if table.note:
        t.caption = Text(shown(table.note))
    console_for(out).print(t)
