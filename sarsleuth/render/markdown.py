"""A ticket-ready markdown summary.  Everything that came from an input is
escaped so a hostile log line cannot inject markdown or HTML."""
from __future__ import annotations

import re

from sarsleuth.narrative import when, zone_of

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|~])")


def md_escape(text) -> str:
    """Text from an input, made inert in markdown: HTML metacharacters become
    entities (renderers show them as text), markdown syntax is backslashed."""
    from sarsleuth.render.text import inert
    text = inert(str(text).replace("\r", " ").replace("\n", " "))
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", text)


def render_markdown(case, max_incidents: int = 5) -> str:
    out = ["# sarsleuth incident summary", ""]
    if case.incidents:
        zone = zone_of(case.incidents[0].start)
        out.append(f"{len(case.incidents)} incident(s) from {len(case.sources)} source(s); times: {md_escape(zone or 'unknown')}.")
    else:
        out.append(f"No incident found in {len(case.sources)} source(s). Checked: {md_escape(', '.join(case.checked))}.")
    out.append("")
    if case.incidents:
        out += ["| # | severity | start | end | incident | score |", "|---|---|---|---|---|---|"]
        for inc in case.incidents[:max_incidents]:
            out.append(f"| {inc.rank} | {inc.severity} | {when(inc.start)} | {when(inc.end)} | "
                       f"{md_escape(inc.title)} | {inc.score:.2f} |")
        out.append("")
    for inc in case.incidents[:max_incidents]:
        out += [f"## {inc.rank}. {md_escape(inc.title)}", "",
                f"**{inc.severity}**, {inc.category}, score {inc.score:.2f}", "", md_escape(inc.summary), ""]
        if inc.why_first:
            out += [f"*{md_escape(inc.why_first)}*", ""]
        out.append("**Key numbers**")
        out.append("")
        for f in inc.findings:
            nums = ", ".join(f"{md_escape(k)} {_fmt(v)}" for k, v in f.metrics.items() if _fmt(v) is not None)
            out.append(f"- {md_escape(f.title)} (`{f.detector}`, {f.severity})" + (f": {nums}" if nums else ""))
        out += ["", "**Evidence**", ""]
        for f in inc.findings:
            for e in f.evidence[:3]:
                loc = md_escape(e.path) + (f":{e.line}" if e.line else "")
                out.append(f"- {loc}: {md_escape(e.text)}")
        if inc.recommendations:
            out += ["", "**What to do**", ""] + [f"- {md_escape(r)}" for r in inc.recommendations]
        out.append("")
    if case.warnings:
        out += ["## Warnings", ""] + [f"- {md_escape(w)}" for w in case.warnings[:20]] + [""]
    return "\n".join(out)


def _fmt(v):
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 1e6 else f"{v:.3e}"
    if isinstance(v, int):
        return str(v)
    return None
