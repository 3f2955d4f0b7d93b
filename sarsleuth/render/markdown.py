"""A ticket-ready markdown summary.  Everything that came from an input is
escaped so a hostile log line cannot inject markdown or HTML."""
from __future__ import annotations

import re

from sarsleuth.render._fleet import fleet_text
from sarsleuth.render._safe import shown
from sarsleuth.render._table import number
from sarsleuth.render._view import EVIDENCE_LINES, TIMELINE_ROWS, View, code_spans, left_out
from sarsleuth.timebase.clock import when, zone_of

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|~])")
#: Incidents listed in the summary table unless --all.
MAX_LISTED = 30

def md_code(text) -> str:
    """An identifier as inline code when it is plainly one (code spans show
    backslashes literally, so anything else is escaped text instead)."""
    text = str(text)
    return f"`{text}`" if re.fullmatch(r"[\w.:/+%-]+", text) else md_escape(text)


def md_escape(text) -> str:
    """Text from an input, made inert in markdown: control characters shown
    escaped, HTML metacharacters as entities (renderers show them as text),
    markdown syntax backslashed."""
    text = shown(str(text).replace("\r", " ").replace("\n", " "))
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", text)


def write_case(case, out, view: View | None = None) -> None:
    out.write(render_markdown(case, view=view) + "\n")


def md_rich(text) -> str:
    """A recommendation: its `code` parts as code spans, the rest escaped."""
    out = []
    for part, is_code in code_spans(str(text)):
        out.append(md_code(part) if is_code and "`" not in part else md_escape(part))
    return "".join(out)


def render_markdown(case, max_incidents: int | None = None, view: View | None = None) -> str:
    view = view or View(top=max_incidents)
    told = view.incidents(case)
    out = ["# sarsleuth incident summary", ""]
    if case.incidents:
        # the list across hosts is on one stated zone, the case's; each
        # incident below on its hosts' clock
        zone = zone_of(case.incidents[0].start, case.tz)
        out.append(f"{len(case.incidents):,} incident(s) from {len(case.sources)} source(s), {len(told)} told below; "
                   f"times: {md_escape(zone or 'unknown')}.")
    else:
        out.append(f"No incident found in {len(case.sources)} source(s). Checked: {md_escape(', '.join(case.checked))}.")
    out.append("")
    for h in getattr(case, "hosts", []):
        out.append(f"Host: {md_escape(h.summary())}  ")
    if getattr(case, "hosts", []):
        out.append("")
    if case.incidents:
        listed = view.rows(case.incidents, max(MAX_LISTED, len(told)))
        out += ["| # | severity | start | end | incident | score |", "|---|---|---|---|---|---|"]
        for inc in listed:
            out.append(f"| {inc.rank} | {inc.severity} | {md_escape(when(inc.start, zone=case.tz))} | {md_escape(when(inc.end, zone=case.tz))} | "
                       f"{md_escape(inc.title)} | {inc.score:.2f} |")
        out.append("")
        for note in (left_out(len(case.incidents), len(listed), "incident(s)", "`--all` lists every one"),
                     left_out(len(case.incidents), len(told), "incident(s)",
                              f"`--top {len(case.incidents)}` or `--all` tells every one")):
            if note:
                out += [f"*{note}*", ""]
    for inc in told:
        out += _incident(inc, view)
    if case.notes:
        out += ["## Notes", ""] + [f"- {md_escape(n)}" for n in case.notes] + [""]
    if case.skipped:
        out += ["## Skipped", ""] + [f"- {md_escape(s.path)}: {md_escape(s.reason)}" for s in case.skipped] + [""]
    if case.warnings:
        shown_w = view.rows(case.warnings, 20)
        out += ["## Warnings", ""] + [f"- {md_escape(w)}" for w in shown_w]
        more = left_out(len(case.warnings), len(shown_w), "warning(s)", "`--all` or `--format json` lists every one")
        if more:
            out.append(f"- {more}")
        out.append("")
    return "\n".join(out)


def _incident(inc, view: View) -> list:
    story = inc.story or {}
    out = [f"## {inc.rank}. {md_escape(inc.title)}", "",
           f"**{inc.severity}**, {inc.category}, score {inc.score:.2f}", "",
           f"**{md_escape(story.get('headline') or inc.summary)}**", ""]
    rows = story.get("timeline") or []
    if rows:
        out += [f"### Timeline ({md_escape(zone_of(inc.start) or 'times as recorded')})", "",
                "| time | role | what | evidence |", "|---|---|---|---|"]
        shown_rows = view.rows(rows, TIMELINE_ROWS)
        for r in shown_rows:
            out.append(f"| {md_escape(r['clock'])} | {r['role'] or ''} | {md_escape(r['what'])} | {md_escape(r['where'])} |")
        out.append("")
        more = left_out(len(rows), len(shown_rows), "timeline row(s)", "`--all` shows them")
        if more:
            out += [f"*{more}*", ""]
    out += ["### Cause", "", md_escape(story.get("cause", "")), ""]
    if story.get("explanation"):
        out += [md_escape(story["explanation"]), ""]
    if story.get("why"):
        out += [f"**Why:** {md_escape(story['why'])}", ""]
    for label, key in (("Effects", "effects"), ("Context", "context")):
        if story.get(key):
            out += [f"### {label}", ""] + [f"- {md_escape(item)}" for item in story[key]] + [""]
    if story.get("unaligned"):
        out += [f"*{md_escape(story['unaligned'])}*", ""]
    if inc.recommendations:
        out += ["### What to do", ""] + [f"{i}. {md_rich(r)}" for i, r in enumerate(inc.recommendations, 1)] + [""]
    if inc.why_first:
        out += [f"*{md_escape(inc.why_first)}*", ""]
    out += ["### Evidence", ""]
    hidden = 0
    for f in inc.findings:
        nums = ", ".join(f"{md_escape(k)} {md_escape(number(v))}" for k, v in f.metrics.items() if _numeric(v))
        out.append(f"- **{md_escape(f.title)}** ({md_code(f.detector)}, {f.role or 'finding'}, {f.severity})"
                   + (f": {nums}" if nums else ""))
        lines = view.rows(f.evidence, EVIDENCE_LINES)
        hidden += len(f.evidence) - len(lines)
        for e in lines:
            loc = md_escape(e.path) + (f":{e.line}" if e.line else "")
            out.append(f"  - {loc}: {md_escape(e.text)}" + (f" *{md_escape(e.note())}*" if e.repeated else ""))
    if hidden:
        out.append(f"- *{left_out(hidden, 0, 'evidence line(s)', '`--all` or `--format json` shows them')}*")
    out.append("")
    return out


def _numeric(v) -> bool:
    if isinstance(v, bool) or v is None:
        return False
    try:
        f = float(v)
    except (TypeError, ValueError):
        return False
    return f == f and f not in (float("inf"), float("-inf"))


def write_table(table, out) -> None:
    """A pipe table (GitHub-flavoured markdown), cells escaped."""
    lines = [f"**{md_escape(table.title)}**", ""] if table.title else []
    lines.append("| " + " | ".join(md_escape(c.header) for c in table.columns) + " |")
    lines.append("|" + "|".join("---:" if c.numeric else "---" for c in table.columns) + "|")
    for row in table.rows():
        cells = [md_code(cell) if col.code and cell else md_escape(cell) for col, cell in zip(table.columns, row)]
        lines.append("| " + " | ".join(cells) + " |")
    if table.note:
        lines += ["", md_escape(table.note)]
    out.write("\n".join(lines) + "\n")


def write_fleet(fleet, out) -> None:
    out.write(fleet_text(fleet, md_escape))
