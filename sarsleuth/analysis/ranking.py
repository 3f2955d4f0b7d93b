"""How incidents are ranked: an explainable weighted score whose
components are kept in the output, how users were hurt (from the
knowledge base's ``impact`` of each detector), and one sentence on why
rank 1 beats rank 2."""
from __future__ import annotations

from sarsleuth.knowledge import impact_weights, kb_entry
from sarsleuth.model import SEVERITY_RANK, Finding, Incident

SEVERITY_WEIGHT = {"low": 0.25, "medium": 0.5, "high": 0.75, "critical": 1.0}

#: Weights of the score components (they sum to 1).
SCORE_WEIGHTS = {"severity": 0.40, "breadth": 0.20, "impact": 0.20, "chain": 0.10, "duration": 0.10}


def impact(findings: list[Finding]) -> tuple[float, list[str]]:
    """User impact in [0, 1] and how users were hurt (``killed``,
    ``crashed``, ``refused``...), from the knowledge base's ``impact`` of
    each detector.  A process seen dying from two sides (the kernel's kill
    or segfault and nginx's ``exited on signal``, same PID) counts once."""
    w = impact_weights()
    score = 0.0
    kinds: list[str] = []
    killed: set = set()
    for f in findings:
        if kb_entry(f.detector).get("impact") == "killed":
            score += w.get("killed", 0.5)
            killed |= set(f.refs.get("pids") or [])
            kinds.append("killed")
    crashed: set = set()
    unnamed = 0
    for f in findings:
        kb = kb_entry(f.detector)
        kind = kb.get("impact")
        if kind == "crashed":
            pids = set(f.refs.get("pids") or [])
            if pids:
                crashed |= pids - killed
            else:
                unnamed = max(unnamed, int(f.metrics.get(kb.get("process_deaths", "")) or 1))
        elif kind == "failed":
            frac = float(f.metrics.get("error_fraction") or 0)
            if frac > 0 or f.metrics.get("aborted"):
                score += min(0.5, frac * w.get("failed", 2.0) + (0.3 if f.metrics.get("aborted") else 0))
                kinds.append("failed")
        elif kind in ("refused", "dropped", "slowed"):
            score += w.get(kind, 0.2)
            kinds.append(kind)
    if crashed or unnamed:
        score += min(0.5, w.get("crashed", 0.1) * (len(crashed) + unnamed))
        kinds.append("crashed")
    return min(1.0, score), list(dict.fromkeys(kinds))


_IMPACT_WORDS = {"killed": "processes killed", "crashed": "processes crashed", "refused": "requests refused",
                 "dropped": "packets dropped", "failed": "load-test requests failed",
                 "slowed": "traffic held back by a full link"}


def why_first(first: Incident, second: Incident) -> str:
    """One sentence on why rank 1 beats rank 2, in words, from the score
    components that gave it the largest lead."""
    a, b = first.score_components, second.score_components
    lead = sorted(((a.get(k, 0) - b.get(k, 0)) * SCORE_WEIGHTS[k], k) for k in SCORE_WEIGHTS)
    reasons = []
    for d, k in reversed(lead):
        if d <= 0 or len(reasons) == 2:
            break
        reasons.append(_reason(k, first, second))
    if not reasons:  # equal scores: the tie-break was severity, then time
        reasons.append(f"it is at least as severe ({first.severity}) and started earlier")
    return (f"Ranked first (score {first.score:.2f} against {second.score:.2f} for #2, "
            f"\"{second.title}\") because " + " and ".join(reasons) + ".")


def _reason(component: str, first: Incident, second: Incident) -> str:
    def count(inc):
        own = [f for f in inc.findings if f.role != "context"]
        return len({p for f in own for p in f.sources}), len({f.detector for f in own})

    if component == "severity":
        return f"it is {first.severity} where #2 is {second.severity}"
    if component == "breadth":
        (s1, d1), (s2, d2) = count(first), count(second)
        return f"more evidence agrees on it ({s1} source(s), {d1} detector(s) against {s2} and {d2})"
    if component == "impact":
        hurt = [_IMPACT_WORDS[k] for k in getattr(first, "impact", []) if k in _IMPACT_WORDS]
        return "it hurt users more (" + (", ".join(hurt) or "more of them affected") + ")"
    if component == "chain":
        return "its findings form a known cause-and-effect chain"
    if component == "duration":
        return "it lasted longer"
    return f"its {component} is higher"


def headline_of(findings: list, cause: Finding) -> str:
    """What an incident's title and headline tell: its cause's title, or,
    when the cause recurs (episodes cut by gaps or restarts in the
    records, each a cause), its worst episode's, the first of them; a
    recurrence its detector tells as one (``refs.recurring``: a link that
    flaps, a unit that keeps failing) is told so when the incident holds
    more than one of its times."""
    own = [f for f in findings if f.role == "cause" and f.detector == cause.detector] or [cause]
    worst = max(own, key=lambda f: SEVERITY_RANK[f.severity])
    told = (worst.refs or {}).get("recurring")
    if told and sum(1 for f in own if (f.refs or {}).get("recurring") == told) > 1:
        return told
    return worst.title
