"""The terminal narrative (rich): a one-screen summary, then each incident.

Nothing is parsed as rich markup or emoji codes: every string (titles
included) goes in as plain :class:`~rich.text.Text`, so ``[critical]`` or
``:fire:`` in a title is shown as written, and input text has its control
characters escaped (:func:`~sarsleuth.safe_text.shown`) before it reaches
the terminal.
"""
from __future__ import annotations

import os

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from sarsleuth.render.fleet_text import fleet_text
from sarsleuth.safe_text import shown
from sarsleuth.render.table import Column, cells, number
from sarsleuth.render.table import Table as Rows
from sarsleuth.model import SEVERITY_RANK, shortened
from sarsleuth.render.listed_times import ListedTimes
from sarsleuth.render.view import (EVIDENCE_LINES, MAX_UNJOINED, MAX_WARNINGS, TIMELINE_ROWS, View, code_spans,
                                   host_lines, left_out, unjoined_findings)
from sarsleuth.render.formats.json import plain
from sarsleuth.timebase.clock import zone_of

SEVERITY_STYLE = {"low": "dim", "medium": "yellow", "high": "bold red", "critical": "bold white on red"}
ROLE_STYLE = {"cause": "bold", "effect": "", "context": "dim"}
#: Incidents listed in the summary table unless --all.
MAX_LISTED = 20


#: The narrowest text report: a terminal or ``COLUMNS`` saying less
#: (``COLUMNS=0``) would give an empty or unreadable one.
MIN_WIDTH = 60


def console_for(out) -> Console:
    """A console writing to ``out`` that never interprets markup, emoji
    codes or highlighting in what it prints, at least :data:`MIN_WIDTH`
    columns wide."""
    console = Console(file=out, markup=False, emoji=False, highlight=False)
    if console.width < MIN_WIDTH:
        console = Console(file=out, markup=False, emoji=False, highlight=False, width=MIN_WIDTH)
    return console


def write_case(case, out, view: View | None = None) -> None:
    render_text(case, console_for(out), view=view)


def render_text(case, console: Console | None = None, max_incidents: int | None = None,
                view: View | None = None) -> None:
    console = console or console_for(None)
    view = view or View(top=max_incidents)
    told = view.incidents(case)
    if getattr(case, "redacted", None):
        console.print(Text(shown(case.redacted), style="bold"))
    console.print(_summary(case, view, told) if case.incidents else _quiet(case, view))
    for inc in told:
        console.print(_incident_panel(inc, view))
    note = left_out(len(case.incidents), len(told), "incident(s)",
                    f"--top {len(case.incidents)} or --all tells every one")
    if note:
        console.print(Text(note, style="bold"))
    _footer(case, console, view)


def _summary(case, view: View, told: list) -> Table:
    t = Table(title=Text("sarsleuth: incidents, most important first"), title_justify="left", expand=True)
    t.add_column("#", justify="right", width=3)
    t.add_column("severity", width=9)
    t.add_column("when", no_wrap=True)
    t.add_column("incident")
    t.add_column("score", justify="right", width=5)
    listed = view.rows(case.incidents, max(MAX_LISTED, len(told)))
    times = ListedTimes.of_incidents(case)
    for inc in listed:
        t.add_row(str(inc.rank), Text(inc.severity, style=SEVERITY_STYLE.get(inc.severity, "")),
                  times.when(inc.start, inc.zone) if inc.start is not None else "unaligned",
                  _code_text(inc.title), f"{inc.score:.2f}")
    # one table across hosts: on the clock its caption names, the one its incidents are told on
    zone = times.heading(case.incidents[0].start)
    caption = ((f"times: {shown(zone)}  |  " if zone else "")
               + f"{len(case.sources)} sources, {len(case.findings):,} findings, {len(case.incidents):,} incident(s); "
               f"{len(told)} told below")
    more = left_out(len(case.incidents), len(listed), "incident(s)", "--all lists every one")
    t.caption = Text(caption + (f"; {more}" if more else ""))
    return t


def _quiet(case, view: View) -> Panel:
    if case.empty_window:
        return Panel(Text(shown(case.empty_window) + "."), title=Text("no data in the window"), border_style="yellow")
    checked = ", ".join(case.checked)
    found = unjoined_findings(case)
    body = Text(f"No incident found in {len(case.sources)} source(s)"
                + (f", but {len(found):,} finding(s) below" if found else "") + f".\nChecked: {shown(checked)}")
    if found:
        body.append("\nFound, in no incident (nothing in these files they follow from or lead to):", style="bold")
        listed = view.rows(found, MAX_UNJOINED)
        for line in listed:
            body.append("\n  - ")
            body.append_text(_code_text(line))
        more = left_out(len(found), len(listed), "finding(s)", "--all lists them")
        if more:
            body.append("\n" + more, style="dim")
    if not found:
        return Panel(body, title=Text("all quiet"), border_style="green")
    # findings that joined no incident are no all-clear: the title says they are there
    worst = max((f.severity for f in case.findings if not f.role), key=lambda s: SEVERITY_RANK.get(s, 0))
    return Panel(body, title=Text(f"no incident, {len(found):,} finding(s) on their own (worst: {worst})"),
                 border_style="yellow" if SEVERITY_RANK.get(worst, 0) >= SEVERITY_RANK["medium"] else "green")


def _code_text(text: str, prefix: str = "", style: str = "") -> Text:
    """Story text as the terminal shows it: `code` in colour, without its
    backticks (never raw markdown), control characters escaped."""
    out = Text(prefix, style=style)
    for part, is_code in code_spans(shown(text)):
        out.append(part, style="cyan" if is_code else style)
    return out


def _incident_panel(inc, view: View) -> Panel:
    story = inc.story or {}
    parts = [_code_text(story.get("headline") or inc.summary, style="bold")]
    rows = story.get("timeline") or []
    if rows:
        parts.append(Text(f"\nTimeline ({shown(zone_of(inc.start) or 'times as recorded')})", style="bold"))
        tl = Table.grid(padding=(0, 1))
        tl.add_column(no_wrap=True)
        tl.add_column(no_wrap=True)
        tl.add_column()
        tl.add_column(style="dim", no_wrap=True)
        for r in view.rows(rows, TIMELINE_ROWS):
            tl.add_row(shown(r["clock"]), Text(r["role"] or "", style=ROLE_STYLE.get(r["role"], "")),
                       _code_text(shortened(r["what"], 150)), Text(shown(r["where"])))
        parts.append(tl)
        more = left_out(len(rows), len(view.rows(rows, TIMELINE_ROWS)), "timeline row(s)", "--all shows them")
        if more:
            parts.append(Text(more, style="dim"))
    parts.append(Text("\nCause: ", style="bold") + _code_text(story.get("cause", "")))
    if story.get("explanation"):
        parts.append(_code_text(story["explanation"]))
    if story.get("why"):
        parts.append(Text("Why: ", style="bold") + _code_text(story["why"]))
    for label, key in (("Effects", "effects"), ("Context", "context")):
        items = story.get(key) or []
        if items:
            parts.append(Text(f"{label}:", style="bold"))
            for item in items:
                parts.append(_code_text(item, "  - "))
    if story.get("unaligned"):
        parts.append(Text(shown(story["unaligned"]), style="dim"))
    if story.get("changed"):
        parts.append(Text("What else changed:", style="bold"))
        for item in story["changed"]:
            parts.append(Text(shown(f"  - {item}")))
    if inc.recommendations:
        parts.append(Text("What to do:", style="bold"))
        for i, r in enumerate(inc.recommendations, 1):
            parts.append(_code_text(r, f"  {i}. "))
    parts += [Text("\nEvidence", style="bold"), _evidence(inc, view)]
    if inc.why_first:
        parts.append(Text(shown(inc.why_first), style="italic dim"))
    title = _code_text(inc.title, f"#{inc.rank} [{inc.severity}] ")
    return Panel(Group(*parts), title=title, title_align="left",
                 border_style="red" if inc.severity in ("high", "critical") else "yellow")


def _evidence(inc, view: View) -> Table:
    ev = Table.grid(padding=(0, 1))
    ev.add_column(style="dim", no_wrap=True)
    ev.add_column()
    hidden = 0
    for f in inc.findings:
        ev.add_row(Text(f"[{f.severity}]", style=SEVERITY_STYLE.get(f.severity, "")),
                   _code_text(f.title) + Text(shown(f"  ({f.detector}, {f.role or 'finding'})")))
        lines = view.rows(f.evidence, EVIDENCE_LINES)
        hidden += len(f.evidence) - len(lines)
        for e in lines:
            loc = os.path.basename(e.path) + (f":{e.line}" if e.line else "") if e.path else ""
            ev.add_row("", Text(shown(shortened(f"  {loc}  {e.text}", 220) + (f"  {e.note()}" if e.repeated else "")),
                                style="dim"))
    if hidden:
        ev.add_row("", Text(left_out(hidden, 0, "evidence line(s)", "--all or --format json shows them"), style="dim"))
    return ev


def _footer(case, console: Console, view: View) -> None:
    for line in host_lines(getattr(case, "hosts", [])):
        console.print(Text(f"host: {shown(line)}", style="dim"))
    if case.skipped:
        console.print(Text(f"skipped {len(case.skipped)} file(s):", style="dim"))
        for s in view.rows(case.skipped, 10):
            console.print(Text(f"  {shown(s.path)}: {shown(s.reason)}", style="dim"))
        more = left_out(len(case.skipped), len(view.rows(case.skipped, 10)), "skipped file(s)",
                        "--all or --format json lists every one")
        if more:
            console.print(Text(f"  {more}", style="dim"))
    # what could not be read, or was read twice and disagrees, travels with the story
    for w in view.rows(case.warnings, MAX_WARNINGS):
        console.print(Text(f"warning: {shown(w)}", style="yellow"))
    more = left_out(len(case.warnings), len(view.rows(case.warnings, MAX_WARNINGS)), "warning(s)",
                    "--all or --format json lists every one")
    if more:
        console.print(Text(more, style="yellow"))
    # guesses (a year, a zone) are said every time, whatever else is cut
    for n in case.notes:
        console.print(Text(f"note: {shown(n)}", style="dim"))


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


def write_fleet(fleet, out) -> None:
    out.write(fleet_text(fleet))


def write_result(frame, out, terminal: bool = False) -> None:
    """A query's result as a table people read: numbers as
    :func:`~sarsleuth.render.table.number` says, lists joined, the count of
    rows under it."""
    frame = cells(frame)

    def cell(name):
        def show(record):
            value = record.get(name)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return number(value)
            if isinstance(value, list):
                return ", ".join(str(v) for v in value)
            return "" if value is None else str(plain(value))
        return show
    columns = [Column(str(c), cell(c), numeric=frame[c].dtype.kind in "iuf") for c in frame.columns]
    write_table(Rows(title="", columns=columns, records=frame.to_dict(orient="records"), note=f"{len(frame)} row(s)"),
                out)
