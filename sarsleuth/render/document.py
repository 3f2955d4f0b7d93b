"""The report for a ticket, told once as plain blocks (headings, paragraphs,
tables, lists, verbatim lines) that each ticket format writes in its own
markup (:mod:`~sarsleuth.render.formats.markdown`, :mod:`~sarsleuth.render.formats.jira`).

Inline text is a list of :class:`Span`: plain text (from an input or not,
escaped by the format only where its markup would take it), code (shown
literally: identifiers, configuration lines the story quotes in
backticks), bold or italic.  Evidence lines are :class:`Verbatim` blocks,
the lines as the files have them, never escaped but for control
characters.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from sarsleuth.render.table import number
from sarsleuth.render.listed_times import ListedTimes
from sarsleuth.render.view import (EVIDENCE_LINES, MAX_UNJOINED, MAX_WARNINGS, TIMELINE_ROWS, View, code_spans,
                                   host_lines, left_out, unjoined_findings)
from sarsleuth.timebase.clock import zone_of

#: Incidents listed in the summary table unless --all.
MAX_LISTED = 30


@dataclass(frozen=True)
class Span:
    text: str
    style: str = ""          # "" (text) or "code"


@dataclass(frozen=True)
class Strong:
    spans: tuple             # Spans shown bold (code inside stays code)


@dataclass(frozen=True)
class Emph:
    spans: tuple             # Spans shown in italics


@dataclass
class Heading:
    level: int
    spans: list


@dataclass
class Para:
    spans: list


@dataclass
class Items:
    items: list              # each a list of spans
    ordered: bool = False


@dataclass
class Grid:
    header: list             # column titles
    rows: list               # each a list of cells, each a list of spans
    numeric: list = field(default_factory=list)   # per column: right-aligned


@dataclass
class Verbatim:
    lines: list              # text shown as it is (evidence lines)


def text(value) -> list:
    return [Span(str(value))]


def rich(value) -> list:
    """A sentence whose `backticked` parts are code (recommendations, the
    story's quotes of configuration lines)."""
    return [Span(part, "code" if is_code else "") for part, is_code in code_spans(str(value))]


def _italic(sentence: str) -> Para:
    return Para([Emph(tuple(rich(sentence)))])


def short_path(path) -> str:
    """A file as evidence names it in a ticket: an archive member by its
    own path (after the last ``!``), any other file as given."""
    return str(path).rsplit("!", 1)[-1]


def case_blocks(case, view: View | None = None) -> list:
    """The whole analysis of a case."""
    view = view or View()
    told = view.incidents(case)
    out = [Heading(1, text("sarsleuth incident summary"))]
    if case.incidents:
        # the list across hosts on the clock it states: its incidents' one clock, else each its own with its offset
        times = ListedTimes.of_incidents(case)
        zone = times.heading(case.incidents[0].start)
        out.append(Para(text(f"{len(case.incidents):,} incident(s) from {len(case.sources)} source(s), "
                             f"{len(told)} told below; times: {zone or 'unknown'}.")))
    elif case.empty_window:
        out.append(Para(text(case.empty_window + ".")))
    else:
        out.append(Para(text(f"No incident found in {len(case.sources)} source(s). "
                             f"Checked: {', '.join(case.checked)}.")))
        found = unjoined_findings(case)
        if found:
            out.append(Para(text("Found, in no incident (nothing in these files they follow from or lead to):")))
            listed = view.rows(found, MAX_UNJOINED)
            out.append(Items([rich(line) for line in listed]))
            more = left_out(len(found), len(listed), "finding(s)", "`--all` lists them")
            if more:
                out.append(_italic(more))
    if getattr(case, "redacted", None):
        out.append(_italic(case.redacted))
    hosts = host_lines(getattr(case, "hosts", []))
    if hosts:
        out.append(Items([text(f"Host: {h}") for h in hosts]))
    if case.incidents:
        listed = view.rows(case.incidents, max(MAX_LISTED, len(told)))
        out.append(Grid(["#", "severity", "start", "end", "incident", "score"],
                        [[text(inc.rank), text(inc.severity), text(times.when(inc.start, inc.zone)),
                          text(times.when(inc.end, inc.zone)), rich(inc.title), text(f"{inc.score:.2f}")]
                         for inc in listed], numeric=[True, False, False, False, False, True]))
        for note in (left_out(len(case.incidents), len(listed), "incident(s)", "`--all` lists every one"),
                     left_out(len(case.incidents), len(told), "incident(s)",
                              f"`--top {len(case.incidents)}` or `--all` tells every one")):
            if note:
                out.append(_italic(note))
    for inc in told:
        out += _incident(inc, view)
    if case.notes:
        out += [Heading(2, text("Notes")), Items([text(n) for n in case.notes])]
    if case.skipped:
        out += [Heading(2, text("Skipped")), Items([text(f"{s.path}: {s.reason}") for s in case.skipped])]
    if case.warnings:
        shown_w = view.rows(case.warnings, MAX_WARNINGS)
        items = [text(w) for w in shown_w]
        more = left_out(len(case.warnings), len(shown_w), "warning(s)", "`--all` or `--format json` lists every one")
        if more:
            items.append([Emph(tuple(rich(more)))])
        out += [Heading(2, text("Warnings")), Items(items)]
    return out


def _incident(inc, view: View) -> list:
    story = inc.story or {}
    out = [Heading(2, text(f"{inc.rank}. ") + rich(inc.title)),
           Para([Strong((Span(inc.severity),)), Span(f", {inc.category}, score {inc.score:.2f}")]),
           Para([Strong(tuple(rich(story.get("headline") or inc.summary)))])]
    rows = story.get("timeline") or []
    if rows:
        shown_rows = view.rows(rows, TIMELINE_ROWS)
        out += [Heading(3, text(f"Timeline ({zone_of(inc.start) or 'times as recorded'})")),
                Grid(["time", "role", "what", "evidence"],
                     [[text(r["clock"]), text(r["role"] or ""), rich(r["what"]), text(r["where"])]
                      for r in shown_rows])]
        more = left_out(len(rows), len(shown_rows), "timeline row(s)", "`--all` shows them")
        if more:
            out.append(_italic(more))
    out += [Heading(3, text("Cause")), Para(rich(story.get("cause", "")))]
    if story.get("explanation"):
        out.append(Para(rich(story["explanation"])))
    if story.get("why"):
        out.append(Para([Strong((Span("Why:"),)), Span(" ")] + rich(story["why"])))
    for label, key in (("Effects", "effects"), ("Context", "context")):
        if story.get(key):
            out += [Heading(3, text(label)), Items([rich(item) for item in story[key]])]
    if story.get("unaligned"):
        out.append(_italic(story["unaligned"]))
    if story.get("changed"):
        out += [Heading(3, text("What else changed")), Items([rich(item) for item in story["changed"]])]
    if inc.recommendations:
        out += [Heading(3, text("What to do")), Items([rich(r) for r in inc.recommendations], ordered=True)]
    if inc.why_first:
        out.append(_italic(inc.why_first))
    out.append(Heading(3, text("Evidence")))
    hidden = 0
    for f in inc.findings:
        nums = ", ".join(f"{k} {number(v)}" for k, v in f.metrics.items() if _numeric(v))
        out.append(Para([Strong(tuple(rich(f.title))), Span(" ("), Span(f.detector, "code"),
                         Span(f", {f.role or 'finding'}, {f.severity})" + (f": {nums}" if nums else ""))]))
        lines = view.rows(f.evidence, EVIDENCE_LINES)
        hidden += len(f.evidence) - len(lines)
        if lines:
            out.append(Verbatim([evidence_line(e) for e in lines]))
    if hidden:
        out.append(_italic(left_out(hidden, 0, "evidence line(s)", "`--all` or `--format json` shows them")))
    return out


def evidence_line(e) -> str:
    """``var/log/messages:11  May  6 15:04:13 ...``: where, then the line
    as the file has it."""
    where = short_path(e.path) + (f":{e.line}" if e.line else "") if e.path else ""
    line = f"{where}  {e.text}" if where else str(e.text)
    # a line printed again and again is quoted once, with how often
    return f"{line}  {e.note()}" if getattr(e, "repeated", None) else line


def _numeric(v) -> bool:
    if isinstance(v, bool) or v is None:
        return False
    try:
        f = float(v)
    except (TypeError, ValueError):
        return False
    return f == f and f not in (float("inf"), float("-inf"))


def table_blocks(table) -> list:
    """A :class:`~sarsleuth.render.table.Table` (detectors, compare)."""
    out = [Para([Strong((Span(table.title),))])] if table.title else []
    out.append(Grid([c.header for c in table.columns],
                    [[[Span(cell, "code")] if col.code and cell else text(cell)
                      for col, cell in zip(table.columns, row)] for row in table.rows()],
                    numeric=[c.numeric for c in table.columns]))
    if table.note:
        out.append(Para(text(table.note)))
    return out
