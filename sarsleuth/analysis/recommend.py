"""What to do about an incident, chosen by its evidence.

Every recommendation in the knowledge base states the evidence it needs
(the finding's role, its metrics, text in the incident's evidence, other
detectors present or absent).  The ones whose evidence is there are
deduplicated by meaning (their ``key``, then their normalized text),
ordered by expected effect (then cause before effects, then causal order),
phrased for this host (``{metric}`` placeholders filled from the findings,
configuration lines quoted where the evidence has them), and cut to a few.
"""
from __future__ import annotations

import os
import re

from sarsleuth.knowledge import recommendations_of
from sarsleuth.model import shortened

_PLACEHOLDER = re.compile(r"\{([\w%./-]+)\}")
_ROLE_ORDER = {"cause": 0, "effect": 1, "context": 2}


def normalized(text: str) -> str:
    """Text reduced to its words, for telling two phrasings of one thing apart."""
    return " ".join(re.findall(r"[a-z0-9_.]+", text.lower()))


def readable(value) -> str:
    """A number as people read it: thousands separators for whole numbers,
    two decimals otherwise (as sar prints); text (a port, a device, a unit
    read from a line) as it was written."""
    if isinstance(value, str):
        return value
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    if v != v:
        return "unknown"
    if v.is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    return f"{v:,.2f}"


_CONDITION = re.compile(r"^\s*([\w%./-]+)\s*(>=|<=|==|!=|>|<)\s*(-?[\d.]+(?:e-?\d+)?)\s*$")


def holds(condition: str, values: dict) -> bool:
    """``"fraction_of_limit >= 0.5"`` against a finding's metrics; an
    unknown metric does not hold."""
    m = _CONDITION.match(condition)
    if not m:
        raise ValueError(f"kb.toml: bad condition {condition!r}")
    name, op, limit = m.group(1), m.group(2), float(m.group(3))
    try:
        v = float(values.get(name))
    except (TypeError, ValueError):
        return False
    if v != v:
        return False
    return {">=": v >= limit, "<=": v <= limit, ">": v > limit, "<": v < limit,
            "==": v == limit, "!=": v != limit}[op]


def _applies(entry: dict, f, text: str, present: set) -> bool:
    if entry.get("if_role") and f.role != entry["if_role"]:
        return False
    if not all(holds(c, f.metrics) for c in entry.get("if_metric", [])):
        return False
    if entry.get("if_text") and not re.search(entry["if_text"], text, re.IGNORECASE):
        return False
    if entry.get("unless_text") and re.search(entry["unless_text"], text, re.IGNORECASE):
        return False
    if entry.get("if_present") and not present & set(entry["if_present"]):
        return False
    if entry.get("if_absent") and present & set(entry["if_absent"]):
        return False
    return True


def _phrase(entry: dict, f, findings) -> str | None:
    """The entry's text for this host: placeholders from the finding's
    metrics and refs (``fallback`` when one is unknown), and the evidence
    line that shows the setting, when there is one."""
    values = {**{k: v for k, v in (f.refs or {}).items() if isinstance(v, (str, int, float))}, **f.metrics}
    names = _PLACEHOLDER.findall(entry["text"])
    if all(values.get(n) is not None for n in names):
        text = _PLACEHOLDER.sub(lambda m: readable(values[m.group(1)]), entry["text"])
    elif entry.get("fallback"):
        text = entry["fallback"]
    else:
        return None
    if entry.get("cite"):
        pattern = re.compile(entry["cite"], re.IGNORECASE)
        for other in findings:
            for ev in other.evidence:
                if pattern.search(ev.text):
                    line = ev.text.strip().replace("`", "'")
                    # the line quoted as code, whole or cut at a word with the ellipsis outside the code
                    cut = shortened(line, 120)
                    line = f"`{line}`" if cut == line else f"`{cut[:-1].rstrip()}`…"
                    loc = os.path.basename(ev.path) + (f":{ev.line}" if ev.line else "")
                    return f"{text} Here: {line} ({loc})."
    return text


def recommend(findings, cause, chain: dict | None, limit: int) -> list[str]:
    """At most ``limit`` recommendations for the incident of ``findings``
    (roles assigned), most effective first: the chain's own (given for the
    cause), then each finding's."""
    order = chain["order"] if chain else []
    present = {f.detector for f in findings if f.role != "context"}
    text = " ".join([f.title for f in findings] + [e.text for f in findings for e in f.evidence[:8]])
    cands = []
    for entry in (chain or {}).get("recommendation", []):
        if _applies(entry, cause, text, present):
            phrased = _phrase(entry, cause, findings)
            if phrased:
                cands.append(((-int(entry.get("effect", 3)), -1, -1), entry.get("key"), phrased))
    for f in findings:
        if f.role == "context":
            continue        # not this incident's problem
        entries = recommendations_of(f.detector)
        known = {e["text"] for e in entries}
        # a user's own signature brings its own advice: unconditional
        entries = entries + [{"text": r, "key": normalized(r), "effect": 4}
                             for r in f.recommendations if r not in known]
        for entry in entries:
            if not _applies(entry, f, text, present):
                continue
            phrased = _phrase(entry, f, findings)
            if phrased:
                pos = order.index(f.detector) if f.detector in order else len(order)
                cands.append(((-int(entry.get("effect", 3)), _ROLE_ORDER[f.role], pos), entry.get("key"), phrased))
    cands.sort(key=lambda c: c[0])
    out, keys, seen = [], set(), set()
    for _rank, key, phrased in cands:
        norm = normalized(phrased)
        if (key and key in keys) or norm in seen:
            continue
        keys.add(key)
        seen.add(norm)
        out.append(phrased)
    return out[:limit]
