"""From findings to ranked incidents.

Grouping: findings on the same host whose time windows overlap (with a
tolerance) become one incident; unaligned findings (no time on the shared
clock) join the incident they share identifiers with (PIDs) or whose causal
chain they belong to.  The causal chains in the knowledge base name the
likely cause; the rest are effects.  Ranking is an explainable weighted score
whose components are kept in the output.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from sarsleuth.knowledge import causal_chains
from sarsleuth.model import SEVERITY_RANK, Finding, Incident, iso

SEVERITY_WEIGHT = {"low": 0.25, "medium": 0.5, "high": 0.75, "critical": 1.0}

#: Weights of the score components (they sum to 1).
SCORE_WEIGHTS = {"severity": 0.40, "breadth": 0.20, "impact": 0.20, "chain": 0.10, "duration": 0.10}

CATEGORY_TITLES = {
    "memory-exhaustion": "Memory exhaustion", "io-saturation": "I/O saturation",
    "cpu-saturation": "CPU saturation", "network-saturation": "Network link saturation",
    "socket-exhaustion": "Socket table exhaustion", "connection-limit": "Connection limit reached",
    "fd-exhaustion": "File descriptors exhausted", "worker-crash": "nginx worker crashes",
    "load-test-failure": "Load test failures", "other": "Anomaly",
}


def _effect_lead():
    import pandas as pd
    return pd.Timedelta(minutes=3)


@dataclass
class _Group:
    host: object
    findings: list = field(default_factory=list)
    start: object = None
    end: object = None


def _tolerance():
    import pandas as pd
    return pd.Timedelta(minutes=5)


def correlate(findings: list[Finding], tolerance=None) -> list[Incident]:
    """Group findings into incidents, name causes, score and rank them."""
    if not findings:
        return []
    tol = tolerance if tolerance is not None else _tolerance()
    hosts = {f.host for f in findings if f.host}
    if len(hosts) == 1:  # hostless sources (error.log, ab) belong to the one host there is
        only = next(iter(hosts))
        for f in findings:
            if f.host is None:
                f.host = only
    timed = [f for f in findings if f.aligned and _has_time(f)]
    untimed = [f for f in findings if not (f.aligned and _has_time(f))]
    groups = _group_in_time(timed, tol)
    for f in untimed:
        target = _home_for(f, groups)
        if target is None:
            groups.append(_Group(f.host, [f]))
        else:
            target.findings.append(f)
    groups = _split_by_chain(groups)
    incidents = [_incident(g) for g in groups]
    incidents.sort(key=lambda i: (-i.score, -SEVERITY_RANK[i.severity], str(iso(i.start))))
    for rank, inc in enumerate(incidents, 1):
        inc.rank = rank
    if len(incidents) > 1:
        incidents[0].why_first = _why_first(incidents[0], incidents[1])
    elif incidents:
        incidents[0].why_first = f"It is the only incident found (score {incidents[0].score:.2f})."
    return incidents


def _split_by_chain(groups: list[_Group]) -> list[_Group]:
    """Overlap in time is not causation: a finding that belongs to a causal
    chain other than the one its group's likely cause heads (workers dying
    on SIGSEGV while connections run out) becomes an incident of its own.
    Findings on no chain at all stay as context."""
    out: list[_Group] = []
    pending = list(groups)
    while pending:
        g = pending.pop(0)
        _cause_finding, chain = _cause(g.findings)
        if chain is None:
            out.append(g)
            continue
        stray = [f for f in g.findings if f.detector not in chain["order"] and _chain_of(f.detector)]
        if stray and len(stray) < len(g.findings):
            g.findings = [f for f in g.findings if f not in stray]
            pending.append(_Group(g.host, stray))
        out.append(g)
    return out


def _has_time(f: Finding) -> bool:
    import pandas as pd
    return f.start is not None and not pd.isna(f.start)


def _group_in_time(findings: list[Finding], tol) -> list[_Group]:
    groups: list[_Group] = []
    by_host: dict = {}
    for f in findings:
        by_host.setdefault(f.host, []).append(f)
    for host, fs in by_host.items():
        fs.sort(key=lambda f: f.start)
        current = None
        for f in fs:
            end = f.end if f.end is not None and _has_time_end(f) else f.start
            if current is not None and f.start <= current.end + tol:
                current.findings.append(f)
                current.end = max(current.end, end)
            else:
                current = _Group(host, [f], f.start, end)
                groups.append(current)
    return groups


def _has_time_end(f):
    import pandas as pd
    return not pd.isna(f.end)


def _chain_of(detector: str) -> list[dict]:
    return [c for c in causal_chains() if detector in c["order"]]


def _home_for(f: Finding, groups: list[_Group]):
    """The incident an unaligned finding belongs to: one sharing PIDs, else
    the only one on its causal chain."""
    pids = set(f.refs.get("pids") or [])
    if pids:
        for g in groups:
            if any(pids & set(o.refs.get("pids") or []) | pids & set(o.refs.get("respawn_pids") or [])
                   for o in g.findings):
                return g
    related = {d for c in _chain_of(f.detector) for d in c["order"]} - {f.detector}
    homes = [g for g in groups if any(o.detector in related for o in g.findings)
             and (f.host is None or g.host is None or g.host == f.host)]
    return homes[0] if len(homes) == 1 else None


def _cause(findings: list[Finding]) -> tuple[Finding, dict | None]:
    present = {f.detector for f in findings}
    best, best_key = None, None
    for chain in causal_chains():
        hits = [d for d in chain["order"] if d in present]
        if not hits:
            continue
        key = (len(hits), -chain["order"].index(hits[0]))
        if best_key is None or key > best_key:
            best, best_key = chain, key
    if best is not None:
        first = next(d for d in best["order"] if d in present)
        cands = [f for f in findings if f.detector == first]
        return min(cands, key=lambda f: (-SEVERITY_RANK[f.severity], _sort_time(f))), best
    top = max(findings, key=lambda f: (SEVERITY_RANK[f.severity], -_sort_ts(f)))
    return top, None


def _sort_time(f):
    return iso(f.start) or "9999"


def _sort_ts(f):
    import pandas as pd
    try:
        return pd.Timestamp(f.start).value if _has_time(f) else 0
    except (TypeError, ValueError):
        return 0


#: Detectors whose findings mean requests or packets were refused or lost.
_REFUSING = ("nic-rx-alloc-failure", "socket-memory", "tcp-tw-bucket-overflow", "conntrack-full",
             "worker-connections-exhausted", "too-many-open-files", "syn-flood", "port-exhaustion")


def _impact(findings: list[Finding]) -> float:
    """User impact in [0, 1]: failed requests, killed or crashed processes,
    dropped packets.  A process seen dying from two sides (the kernel's
    segfault or OOM kill and nginx's ``exited on signal``, same PID) counts
    once."""
    score = 0.0
    oom_pids: set = set()
    for f in findings:
        if f.detector == "oom-kill":
            score += 0.5
            oom_pids |= set(f.refs.get("pids") or [])
    crash_pids: set = set()
    unnamed = 0
    for f in findings:
        m = f.metrics
        if f.detector in ("worker-signal-exit", "segfault"):
            pids = set(f.refs.get("pids") or [])
            if pids:
                crash_pids |= pids - oom_pids
            else:
                unnamed = max(unnamed, int(m.get("exits") or m.get("segfaults") or 1))
        elif f.detector == "loadtest-errors":
            score += min(0.5, float(m.get("error_fraction") or 0) * 2 + (0.3 if m.get("aborted") else 0))
        elif f.detector in _REFUSING:
            score += 0.25
        elif f.detector in ("page-allocation-failure", "loadtest-link-saturation", "nic-saturation"):
            score += 0.2
    if crash_pids or unnamed:
        score += min(0.5, 0.1 * (len(crash_pids) + unnamed))
    return min(1.0, score)


def _recommendations(cause: Finding, findings: list[Finding]) -> list[str]:
    """The cause's recommendations first, then the effects'; when the
    evidence names nginx, advice about nginx comes first (it is the one the
    operator can act on)."""
    recs: list[str] = []
    for f in [cause] + [f for f in findings if f is not cause]:
        for r in f.recommendations:
            if r not in recs:
                recs.append(r)
    text = " ".join([f.title for f in findings] + [e.text for f in findings for e in f.evidence[:3]])
    if "nginx" in text.lower():
        recs.sort(key=lambda r: 0 if "nginx" in r.lower() else 1)
    return recs


def _incident(g: _Group) -> Incident:
    import pandas as pd
    findings = g.findings
    cause, chain = _cause(findings)
    category = chain["category"] if chain else cause.category
    order = chain["order"] if chain else []
    # causes before effects: chain order, then time
    findings.sort(key=lambda f: (order.index(f.detector) if f.detector in order else len(order),
                                 _sort_time(f)))
    severity = max((f.severity for f in findings), key=lambda s: SEVERITY_RANK[s])
    timed = [f for f in findings if f.aligned and _has_time(f)]
    # low-severity context (a load already high before, a small TIME_WAIT
    # rise) joins the incident but does not stretch its window
    framing = [f for f in timed if SEVERITY_RANK[f.severity] >= SEVERITY_RANK["medium"]] or timed
    start = min((f.start for f in framing), default=None)
    if cause.aligned and _has_time(cause) and start is not None and cause.start > start:
        # the incident begins when its likely cause does; what came before
        # (a load test already running, say) is told as a precursor.  Effects
        # on the cause's chain that show up to one sampling step earlier (a
        # kernel line at 14:19:52 before the 14:20:01 sar sample that first
        # shows the memory gone) are effects, and start the incident.
        after = set(order[order.index(cause.detector) + 1:]) if cause.detector in order else set()
        start = min([cause.start] + [f.start for f in framing if f.detector in after
                                     and f.start >= cause.start - _effect_lead()])
    end = max(((f.end if _has_time_end(f) else f.start) for f in framing), default=None)
    sources = {p for f in findings for p in f.sources}
    detectors = {f.detector for f in findings}
    duration = (pd.Timestamp(end) - pd.Timestamp(start)).total_seconds() if start is not None and end is not None else 0
    components = {
        "severity": SEVERITY_WEIGHT[severity],
        "breadth": min(1.0, (len(sources) - 1) * 0.25 + (len(detectors) - 1) * 0.15 + 0.1),
        "impact": _impact(findings),
        "chain": (len([d for d in order if d in detectors]) / 3.0 if chain else 0.0),
        "duration": min(1.0, duration / 1800.0),
    }
    components["chain"] = min(1.0, components["chain"])
    score = sum(SCORE_WEIGHTS[k] * v for k, v in components.items())
    hosts = sorted({f.host for f in findings if f.host})
    title = _title(category, cause, findings, hosts)
    ident = hashlib.sha1(f"{category}|{','.join(hosts)}|{iso(start)}|{cause.detector}".encode()).hexdigest()[:12]
    recs = _recommendations(cause, findings)
    inc = Incident(rank=0, id=ident, title=title, category=category, severity=severity, score=score,
                   start=start, end=end, hosts=hosts, summary="", findings=findings,
                   recommendations=recs[:6], cause=cause.detector, score_components=components)
    from sarsleuth.narrative import narrate
    inc.summary = narrate(inc, cause, chain)
    return inc


def _title(category, cause, findings, hosts) -> str:
    head = CATEGORY_TITLES.get(category, "Anomaly")
    where = f" on {', '.join(hosts)}" if hosts else ""
    effects = []
    for f in findings:
        if f is cause:
            continue
        name = f.detector.replace("-", " ")
        if name not in effects:
            effects.append(name)
    name = cause.refs.get("signature") or cause.detector.replace("-", " ")
    tail = f": {name}" + (f" -> {', '.join(effects[:4])}" if effects else "")
    return f"{head}{where}{tail}"


def _why_first(first: Incident, second: Incident) -> str:
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
        return len({p for f in inc.findings for p in f.sources}), len({f.detector for f in inc.findings})

    if component == "severity":
        return f"it is {first.severity} where #2 is {second.severity}"
    if component == "breadth":
        (s1, d1), (s2, d2) = count(first), count(second)
        return f"more evidence agrees on it ({s1} source(s), {d1} detector(s) against {s2} and {d2})"
    if component == "impact":
        return "it hurt users more (processes killed, requests refused or packets dropped)"
    if component == "chain":
        return "its findings form a known cause-and-effect chain"
    if component == "duration":
        return "it lasted longer"
    return f"its {component} is higher"
