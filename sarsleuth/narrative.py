"""The plain-English paragraph of an incident.

It reads like the field reports' own conclusions: when (on one clock, with
the zone), the likely cause with its peak numbers, the effects in causal
order, the decisive log lines quoted with file and line, and what to do.
"""
from __future__ import annotations

import os

from .model import Finding, Incident


def when(ts, with_date: bool = True) -> str:
    import pandas as pd
    if ts is None or pd.isna(ts):
        return "at an unknown time"
    ts = pd.Timestamp(ts)
    text = ts.strftime("%Y-%m-%d %H:%M:%S" if with_date else "%H:%M:%S")
    return text


def zone_of(ts) -> str:
    import pandas as pd
    if ts is None or pd.isna(ts):
        return ""
    ts = pd.Timestamp(ts)
    if ts.tzinfo is None:
        return "host wall clock, zone unknown"
    name = str(ts.tzinfo)
    off = ts.strftime("%z")
    off = f"{off[:3]}:{off[3:]}" if off else ""
    return off if name in ("UTC", off) or name.startswith("UTC") or name.startswith("pytz.FixedOffset") else f"{name}, UTC{off}"


def quote(finding: Finding, limit: int = 1) -> str:
    parts = []
    for ev in finding.evidence[:limit]:
        loc = os.path.basename(ev.path) if ev.path else ""
        if ev.line:
            loc += f":{ev.line}"
        text = ev.text if len(ev.text) <= 160 else ev.text[:157] + "..."
        parts.append(f"\"{text}\"" + (f" ({loc})" if loc else ""))
    return "; ".join(parts)


def _span(f: Finding) -> str:
    import pandas as pd
    if not f.aligned or f.start is None or pd.isna(f.start):
        return "(time not on the shared clock)"
    if f.end is None or pd.isna(f.end) or f.end == f.start:
        return f"at {when(f.start, False)}"
    return f"from {when(f.start, False)} to {when(f.end, False)}"


def narrate(inc: Incident, cause: Finding, chain: dict | None) -> str:
    where = f" on {', '.join(inc.hosts)}" if inc.hosts else ""
    if inc.start is not None:
        zone = zone_of(inc.start)
        head = (f"Between {when(inc.start)} and {when(inc.end, inc.end is not None and str(inc.end)[:10] != str(inc.start)[:10])}"
                f" ({zone}){where}")
    else:
        head = f"At a time not on the shared clock{where}"
    what = chain["name"] if chain else cause.detector.replace("-", " ")
    sentences = [f"{head}: {what}."]
    cause_text = f"Likely cause: {cause.title} {_span(cause)}"
    q = quote(cause)
    if q:
        cause_text += f" [{q}]"
    sentences.append(cause_text + ".")
    if cause.explanation:
        sentences.append(cause.explanation)
    import pandas as pd
    precursors = [f for f in inc.findings if f is not cause and f.aligned and inc.start is not None
                  and f.start is not None and not pd.isna(f.start) and f.start < inc.start]
    if precursors:
        sentences.append("Before it: " + "; ".join(f"{f.title} {_span(f)}" for f in precursors[:4]) + ".")
    effects = [f for f in inc.findings if f is not cause and f not in precursors]
    if effects:
        label = "Effects, in causal order" if chain else "Also seen"
        items = []
        for f in effects[:8]:
            item = f"{f.title} {_span(f)}"
            q = quote(f)
            if q and f.evidence and f.evidence[0].line:
                item += f" [{q}]"
            items.append(item)
        sentences.append(f"{label}: " + "; ".join(items) + ".")
        if len(effects) > 8:
            sentences.append(f"({len(effects) - 8} more findings in the evidence list.)")
    unaligned = [f for f in inc.findings if not f.aligned]
    if unaligned:
        sentences.append(f"{len(unaligned)} finding(s) come from sources without a time on the shared clock "
                         "and were attached by PID or causal chain, not by time.")
    if inc.recommendations:
        sentences.append("What to do: " + inc.recommendations[0])
    return " ".join(s.strip() for s in sentences if s.strip())
