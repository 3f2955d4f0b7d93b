"""A ticket-ready markdown summary.  Everything that came from an input is
escaped so a hostile log line cannot inject markdown or HTML."""
from __future__ import annotations

import re

from sarsleuth.render._time import when, zone_of
from sarsleuth.render._safe import shown
from sarsleuth.render._table import number

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|~])")
#: Incidents told in full; every incident is in the table above them.
MAX_DETAILED = 5


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


def write_case(case, out) -> None:
    out.write(render_markdown(case) + "\n")


def render_markdown(case, max_incidents: int = MAX_DETAILED) -> str:
    out = ["# sarsleuth incident summary", ""]
    if case.incidents:
        zone = zone_of(case.incidents[0].start)
        out.append(f"{len(case.incidents)} incident(s) from {len(case.sources)} source(s); "
                   f"times: {md_escape(zone or 'unknown')}.")
    else:
        out.append(f"No incident found in {len(case.sources)} source(s). Checked: {md_escape(', '.join(case.checked))}.")
    out.append("")
    for h in getattr(case, "hosts", []):
        out.append(f"Host: {md_escape(h.summary())}  ")
    if getattr(case, "hosts", []):
        out.append("")
    if case.incidents:
        out += ["| # | severity | start | end | incident | score |", "|---|---|---|---|---|---|"]
        for inc in case.incidents:
            out.append(f"| {inc.rank} | {inc.severity} | {md_escape(when(inc.start))} | {md_escape(when(inc.end))} | "
                       f"{md_escape(inc.title)} | {inc.score:.2f} |")
        out.append("")
        if len(case.incidents) > max_incidents:
            out += [f"The first {max_incidents} are told below; `sarsleuth analyze --format json` gives "
                    f"every one of the {len(case.incidents)} in full.", ""]
    for inc in case.incidents[:max_incidents]:
        out += _incident(inc)
    if case.skipped:
        out += ["## Skipped", ""] + [f"- {md_escape(s.path)}: {md_escape(s.reason)}" for s in case.skipped] + [""]
    if case.notes:
        out += ["## Notes", ""] + [f"- {md_escape(n)}" for n in case.notes] + [""]
    if case.warnings:
        out += ["## Warnings", ""] + [f"- {md_escape(w)}" for w in case.warnings[:20]]
        if len(case.warnings) > 20:
            out.append(f"- and {len(case.warnings) - 20} more (`--format json` lists every one)")
        out.append("")
    return "\n".join(out)


def _incident(inc) -> list:
    out = [f"## {inc.rank}. {md_escape(inc.title)}", "",
           f"**{inc.severity}**, {inc.category}, score {inc.score:.2f}", "", md_escape(inc.summary), ""]
    if inc.why_first:
        out += [f"*{md_escape(inc.why_first)}*", ""]
    out += ["**Key numbers**", ""]
    for f in inc.findings:
        nums = ", ".join(f"{md_escape(k)} {md_escape(number(v))}" for k, v in f.metrics.items() if _numeric(v))
        out.append(f"- {md_escape(f.title)} ({md_code(f.detector)}, {f.severity})" + (f": {nums}" if nums else ""))
    out += ["", "**Evidence**", ""]
    for f in inc.findings:
        for e in f.evidence[:3]:
            loc = md_escape(e.path) + (f":{e.line}" if e.line else "")
            out.append(f"- {loc}: {md_escape(e.text)}")
    if inc.recommendations:
        out += ["", "**What to do**", ""] + [f"- {md_escape(r)}" for r in inc.recommendations]
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
