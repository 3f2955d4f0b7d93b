"""From findings to ranked incidents.

Grouping: findings on the same host whose time windows overlap (with a
tolerance) become one incident; unaligned findings (no time on the shared
clock) join the incident they share identifiers with (PIDs) or whose causal
chain they belong to.

Cause and roles follow the evidence: the causal chains in the knowledge base
give the order in which signals can explain each other, time gives the
order in which they happened.  The cause is the finding earliest on a chain
that can stand as a cause (a limit must be near before it explains
anything); findings later on its chain that start with or after it are its
effects; anything that started before it, or that its chain does not
explain, is context.  Co-occurring findings on another chain make an
incident of their own only when they carry evidence of their own.

Ranking is an explainable weighted score whose components are kept in the
output.  What each detector means for these steps (impact, whether it can be
a cause, its recommendations and the evidence they need) is data in
``knowledge/kb.toml``: no detector is named here.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import pandas as pd

from sarsleuth.knowledge import began_unseen, category_title, causal_chains, kb_entry
from sarsleuth.model import SEVERITY_RANK, Finding, Incident, iso, shortened
from sarsleuth.analysis.narrative import after_category, narrate, prose
from sarsleuth.analysis.ranking import SCORE_WEIGHTS, SEVERITY_WEIGHT, headline_of, impact, why_first
from sarsleuth.analysis.recommend import holds, recommend
from sarsleuth.analysis.resources import another_unit, join_recurrences
from sarsleuth.timebase.clock import Clock, on_clock

#: Recommendations an incident gets at most.
MAX_RECOMMENDATIONS = 5


@dataclass
class _Group:
    host: object
    findings: list = field(default_factory=list)
    start: object = None
    end: object = None


def _tolerance():
    return pd.Timedelta(minutes=5)


def correlate(findings: list[Finding], clock: Clock, tolerance=None) -> list[Incident]:
    """Group findings into incidents, name causes, score and rank them.
    Each incident is told on the clock ``clock`` (the case's
    :class:`~sarsleuth.timebase.clock.Clock`) says: its hosts' own, UTC
    across zones, the case's zone for hosts of no known zone."""
    if not findings:
        return []
    tol = tolerance if tolerance is not None else _tolerance()
    hosts = {f.host for f in findings if f.host}
    if len(hosts) == 1:  # hostless sources (error.log, ab) belong to the one host there is
        only = next(iter(hosts))
        for f in findings:
            if f.host is None:
                f.host = only
    timed = [f for f in findings if _on_clock(f)]
    untimed = [f for f in findings if not _on_clock(f)]
    groups = _group_in_time(timed, tol)
    for f in untimed:
        target = _home_for(f, groups)
        if target is None:
            groups.append(_Group(f.host, [f]))
        else:
            target.findings.append(f)
    groups = join_recurrences([g for g in _split_by_chain(groups) if not _only_context(g)], _context_by_itself)
    incidents = [_incident(g, clock) for g in groups]
    incidents.sort(key=lambda i: (-i.score, -SEVERITY_RANK[i.severity], str(iso(i.start))))
    for rank, inc in enumerate(incidents, 1):
        inc.rank = rank
    if len(incidents) > 1:
        incidents[0].why_first = why_first(incidents[0], incidents[1])
    elif incidents:
        incidents[0].why_first = f"It is the only incident found (score {incidents[0].score:.2f})."
    return incidents


# ------------------------------------------------------------------ grouping
def _has_time(f: Finding) -> bool:
    return f.start is not None and not pd.isna(f.start)


def _on_clock(f: Finding) -> bool:
    return bool(f.aligned) and _has_time(f)


def _end_of(f: Finding):
    return f.end if f.end is not None and not pd.isna(f.end) else f.start


def _group_in_time(findings: list[Finding], tol) -> list[_Group]:
    groups: list[_Group] = []
    by_host: dict = {}
    for f in findings:
        by_host.setdefault(f.host, []).append(f)
    for host, fs in by_host.items():
        fs.sort(key=lambda f: f.start)
        current, reach = None, tol
        for f in fs:
            end = _end_of(f)
            # a sample stamped at its end covers the interval before it, and
            # what came after a group's last sample is unknown until the
            # next one: at 10-minute samples a kill six minutes after the
            # last row of a swap climb is within the climb's reach
            if current is not None and f.start - f.resolution <= current.end + reach:
                current.findings.append(f)
                current.end = max(current.end, end)
                reach = max(reach, f.resolution)
            else:
                current, reach = _Group(host, [f], f.start, end), max(tol, f.resolution)
                groups.append(current)
    return groups


def _chains_of(detector: str) -> list[dict]:
    return [c for c in causal_chains() if detector in c["order"]]


def _home_for(f: Finding, groups: list[_Group]):
    """The incident an unaligned finding belongs to: one sharing PIDs,
    else the only one on its causal chain, unless that incident is about
    another load-test run (a run's latency tail and the link saturation of
    another run, in another file, are not one story because a chain could
    join them: such a finding is told beside the incident, as context)."""
    pids = set(f.refs.get("pids") or [])
    if pids:
        for g in groups:
            if any(pids & set(o.refs.get("pids") or []) | pids & set(o.refs.get("respawn_pids") or [])
                   for o in g.findings):
                return g
    related = {d for c in _chains_of(f.detector) for d in c["order"]} - {f.detector}
    homes = [g for g in groups if any(o.detector in related for o in g.findings)
             and (f.host is None or g.host is None or g.host == f.host)]
    if len(homes) != 1:
        return None
    home = homes[0]
    files = set(f.sources)
    if kb_entry(f.detector).get("run") and any(kb_entry(o.detector).get("run") and not files & set(o.sources)
                                              for o in home.findings):
        # another run's story: only a time could tie them, and there is
        # none; told beside it, on the same host, as context
        f.refs["beside"] = True
    return home


def _split_by_chain(groups: list[_Group]) -> list[_Group]:
    """Overlap in time is not causation: findings on a causal chain other
    than the one the group's cause heads (workers dying on SIGSEGV while
    connections run out) become an incident of their own, but only when
    they carry evidence of their own (a cause that can stand alone, at
    medium severity or more).  Otherwise they stay, as context."""
    out: list[_Group] = []
    pending = list(groups)
    while pending:
        g = pending.pop(0)
        cause, chain = cause_of(g.findings)
        if chain is None:
            out.append(g)
            continue
        stray = [f for f in g.findings if (f.detector not in chain["order"] or another_unit(f, cause))
                 and _chains_of(f.detector)]
        # each other chain among the strays is weighed on its own: a CPU
        # saturation that was already there does not keep worker crashes
        # that came later from making their own incident
        while stray and len(stray) < len(g.findings):
            own_cause, own_chain = cause_of(stray)
            if own_chain is None:
                break
            members = [f for f in stray if f is own_cause or (f.detector in own_chain["order"]
                                                              and not _before(f, own_cause))]
            # the same processes behind both (the CPUs burnt by the very
            # processes the OOM killer took): one incident, whatever the chains
            ours = set().union(*(_pids_of(f) for f in g.findings if not any(f is x for x in stray)))
            shared = any(_pids_of(f) & ours for f in members)
            if _stands_alone(stray, cause) and not shared:
                # what the strays' own cause explains leaves; the rest stays as context
                g.findings = [f for f in g.findings if not any(f is x for x in members)]
                pending.append(_Group(g.host, members))
            stray = [f for f in stray if not any(f is x for x in members)]
        out.append(g)
    return out


def _pids_of(f: Finding) -> set:
    """The processes a finding names: PIDs from its log lines, the busiest
    processes of the ps snapshot taken during it, respawned workers."""
    refs = f.refs or {}
    return {p for key in ("pids", "responsible_pids", "respawn_pids") for p in (refs.get(key) or [])
            if isinstance(p, int)}


def _stands_alone(findings: list[Finding], main_cause: Finding) -> bool:
    """Evidence of their own: a cause that can stand alone, at medium
    severity or more, that did not start before the group's own cause (one
    that did is told as context: what was already going on)."""
    cause, chain = cause_of(findings)
    return (chain is not None and kb_entry(cause.detector).get("alone", True)
            and SEVERITY_RANK[cause.severity] >= SEVERITY_RANK["medium"] and not _before(cause, main_cause))


# ------------------------------------------------------------- cause & roles
def _can_cause(f: Finding) -> bool:
    kb = kb_entry(f.detector)
    if kb.get("cause", True) is False or _meets_context_if(f) or f.metrics.get("during_shutdown"):
        return False
    if any(holds(c, f.metrics) for c in kb.get("cause_unless", [])):
        return False
    return all(holds(c, f.metrics) for c in kb.get("cause_if", []))


def _context_by_itself(f: Finding) -> bool:
    """A finding that never makes an incident alone: one that never does
    (a good reload, a restart; a load test's failures unless its
    ``alone_if`` holds: most of it failed), CPUs a load test on the host kept busy,
    what the host's own shutdown made (``during_shutdown``),
    or one whose metrics meet all of its ``context_if`` (I/O wait no
    larger than one task's own, and short)."""
    return ((kb_entry(f.detector).get("alone", True) is False and not _stands_anyway(f))
            or bool(f.metrics.get("loadtest_driven")) or bool(f.metrics.get("during_shutdown"))
            or _meets_context_if(f))


def _stands_anyway(f: Finding) -> bool:
    """Its metrics meet every one of its ``alone_if`` (it has some)."""
    alone_if = kb_entry(f.detector).get("alone_if", [])
    return bool(alone_if) and all(holds(c, f.metrics) for c in alone_if)


def _meets_context_if(f: Finding) -> bool:
    """Its metrics meet every one of its ``context_if`` (it has some)."""
    context_if = kb_entry(f.detector).get("context_if", [])
    return bool(context_if) and all(holds(c, f.metrics) for c in context_if)


def _only_context(g: _Group) -> bool:
    """A group no finding of which can be a cause, each of them context by
    itself (:func:`_context_by_itself`) or a symptom of such a finding
    (a stall the kernel measured while one task waited on its own I/O):
    they are on the timeline of whatever happens near them, not an
    incident.  Findings without a time that nothing else ties to an
    incident (a load-test run's latency tail) are near nothing: they are
    told on their own."""
    if not any(_has_time(f) for f in g.findings):
        # told on their own, unless their own figures make each context
        # (an OOM kill forced by hand)
        return all(_meets_context_if(f) for f in g.findings)
    if any(_can_cause(f) or _stands_anyway(f) for f in g.findings):
        return False
    own = [f for f in g.findings if _context_by_itself(f)]
    return bool(own) and all(f in own or kb_entry(f.detector).get("cause", True) is False for f in g.findings)


def _before(f: Finding, cause: Finding) -> bool:
    """Did ``f``'s anomaly take off before ``cause``'s could have, on the
    shared clock?  A cause seen in a sample may have begun anywhere in the
    interval that sample covers: hung tasks logged at 03:14:50 come after
    an I/O wait sar stamped 03:20:01 from a 10-minute interval.  A cause
    already there at the first sample of its records began before them, when
    is unknown: nothing is before it."""
    if began_unseen(cause):
        return False          # already there when first seen: when it began is unknown
    return _on_clock(f) and _on_clock(cause) and f.onset < cause.onset - cause.resolution


def cause_of(findings: list[Finding]) -> tuple[Finding, dict | None]:
    """The likely cause and the chain it heads.  For each chain, the cause
    candidate is the finding earliest on it (then earliest in time) that can
    be a cause; it explains the findings later on the chain that do not
    start before it.  The chain whose cause explains the most (weighted by
    severity) wins; on a tie, the one the cause heads most directly."""
    best, best_key = None, None
    for ci, chain in enumerate(causal_chains()):
        order = chain["order"]
        roots = set(chain.get("roots") or order[:1])
        on = [f for f in findings if f.detector in order]
        cands = [f for f in on if f.detector in roots and _can_cause(f)]
        if not cands:
            continue
        idx = min(order.index(f.detector) for f in cands)
        heads = [f for f in cands if order.index(f.detector) == idx]
        cause = min(heads, key=lambda f: (_sort_ts(f), -SEVERITY_RANK[f.severity]))
        # from where the chain's mechanism showed first: the cause, or its run-up
        since, anchor = run_up(on, cause, chain)
        explained = [f for f in on if f is not cause and order.index(f.detector) >= since
                     and not _before(f, anchor)]
        # one signal seen three times (three failed load-test runs) is one
        # piece of evidence: each detector counts once, at its worst; pure
        # symptoms (failed requests, respawned PIDs) follow from any chain,
        # so they only break ties
        worst: dict = {cause.detector: SEVERITY_WEIGHT[cause.severity]}
        for f in explained:
            worst[f.detector] = max(worst.get(f.detector, 0), SEVERITY_WEIGHT[f.severity])
        # so is a finding short of what would make it a cause (a CPU stall
        # while the CPUs were busy, TIME_WAIT far from its limit)
        short = {f.detector for f in [cause] + explained
                 if not all(holds(c, f.metrics) for c in kb_entry(f.detector).get("cause_if", []))}
        weight = sum(w for d, w in worst.items() if kb_entry(d).get("cause", True) is not False and d not in short)
        key = (weight, sum(worst.values()), -idx, -ci)
        if best_key is None or key > best_key:
            best, best_key = (cause, chain), key
    if best is not None:
        return best
    pool = [f for f in findings if _can_cause(f)] or findings
    top = min(pool, key=lambda f: (-SEVERITY_RANK[f.severity], _sort_ts(f)))
    return top, None


def run_up(on: list[Finding], cause: Finding, chain: dict) -> tuple[int, Finding]:
    """Where a chain's mechanism showed first, when its cause is a late
    sign of it: the chain's ``run_up`` symptoms (kb.toml: tasks stalled on
    memory) before the cause on it that were still going when the cause
    showed (a memory cgroup at its limit stalls its tasks and rereads their
    pages from disk, then the OOM killer ends it).  ``(chain position,
    finding)`` of the earliest run-up finding, else the cause's own."""
    order = chain["order"]
    at = order.index(cause.detector)
    signs = set(chain.get("run_up") or ())
    build = [f for f in on if f is not cause and f.detector in signs and order.index(f.detector) < at
             and _on_clock(f) and _on_clock(cause) and _still_going(f, cause)]
    if not build:
        return at, cause
    first = min(build, key=lambda f: (_sort_ts(f), order.index(f.detector)))
    return min(order.index(f.detector) for f in build), first


def _still_going(f: Finding, cause: Finding) -> bool:
    """Did ``f`` begin before ``cause`` showed and last until it?  A
    sample stamped at the end of its interval may have seen it begin
    anywhere in that interval, and last to its end."""
    try:
        return min(f.start, f.onset) - f.resolution <= cause.onset <= _end_of(f) + f.resolution
    except TypeError:
        return False


def _sort_ts(f):
    try:
        return pd.Timestamp(f.onset).value if _on_clock(f) else 2**62
    except (TypeError, ValueError):
        return 2**62


def assign_roles(findings: list[Finding], cause: Finding, chain: dict | None) -> None:
    """cause / effect / context on each finding (see the module docstring)."""
    order = chain["order"] if chain else []
    at = order.index(cause.detector) if cause.detector in order else 0
    for f in findings:
        if f is cause:
            f.role = "cause"
        elif (f.refs or {}).get("beside"):
            f.role = "context"
        elif _before(f, cause):
            # what was already going on, the cause's run-up included
            f.role = "context"
        elif f.detector == cause.detector:
            f.role = "cause"
        elif f.detector in order and order.index(f.detector) >= at:
            f.role = "effect"
        else:
            f.role = "context"


# ------------------------------------------------------------------- scoring
def _incident(g: _Group, clock: Clock) -> Incident:
    findings = g.findings
    cause, chain = cause_of(findings)
    assign_roles(findings, cause, chain)
    category = chain["category"] if chain else cause.category
    order = chain["order"] if chain else []
    rank_of_role = {"cause": 0, "effect": 1, "context": 2}
    findings.sort(key=lambda f: (rank_of_role[f.role], order.index(f.detector) if f.detector in order else len(order),
                                 _sort_ts(f)))
    own = [f for f in findings if f.role != "context"]
    severity = max((f.severity for f in own), key=lambda s: SEVERITY_RANK[s])
    timed = [f for f in own if _on_clock(f)]
    # low-severity effects (a small TIME_WAIT rise) do not stretch the window
    framing = [f for f in timed if SEVERITY_RANK[f.severity] >= SEVERITY_RANK["medium"]] or timed
    start = min((f.onset for f in timed), default=None)
    end = max((_end_of(f) for f in framing), default=None)
    if start is not None and end is not None and end < start:
        end = start
    sources = {p for f in own for p in f.sources}
    detectors = {f.detector for f in own}
    duration = (pd.Timestamp(end) - pd.Timestamp(start)).total_seconds() if start is not None and end is not None else 0
    impact_score, hurt = impact(own)
    components = {
        "severity": SEVERITY_WEIGHT[severity],
        "breadth": min(1.0, (len(sources) - 1) * 0.25 + (len(detectors) - 1) * 0.15 + 0.1),
        "impact": impact_score,
        "chain": min(1.0, len([d for d in order if d in detectors]) / 3.0) if chain else 0.0,
        "duration": min(1.0, duration / 1800.0),
    }
    score = sum(SCORE_WEIGHTS[k] * v for k, v in components.items())
    hosts = sorted({f.host for f in findings if f.host})
    title = _title(category, headline_of(findings, cause), hosts)
    inc = Incident(rank=0, id=incident_id(category, hosts, start, cause.detector), title=title, category=category,
                   severity=severity, score=score, start=start, end=end, hosts=hosts, summary="", findings=findings,
                   recommendations=recommend(findings, cause, chain, MAX_RECOMMENDATIONS),
                   cause=cause.detector, score_components=components)
    inc.impact = hurt
    _on_story_clock(inc, clock)
    narrate(inc, cause, chain, clock)
    return inc


def _on_story_clock(inc: Incident, clock: Clock) -> None:
    """The same instants, read on the clocks the story is told on: the
    incident's on its zone, each finding's on its host's (so that JSON
    times carry the host's offset)."""
    inc.zone = clock.story_zone(inc.hosts, otherwise=clock.zone)
    inc.start, inc.end = on_clock(inc.start, inc.zone), on_clock(inc.end, inc.zone)
    for f in inc.findings:
        zone = clock.story_zone([f.host], otherwise=inc.zone)
        f.start, f.end = on_clock(f.start, zone), on_clock(f.end, zone)


def incident_id(category: str, hosts, start, cause: str) -> str:
    """A stable id: the same case gives the same ids, run after run."""
    return hashlib.sha1(f"{category}|{','.join(hosts)}|{iso(start)}|{cause}".encode()).hexdigest()[:12]


def fleet_incident_id(kinds, start, hosts) -> str:
    """A fleet incident's stable id, from its kinds, start and hosts (a
    redacted fleet's from the stand-ins: no digest confirms a guessed name)."""
    return "fleet-" + hashlib.sha1(f"{' + '.join(kinds)}|{start}|{','.join(hosts)}".encode()).hexdigest()[:10]


def _title(category, told: str, hosts) -> str:
    """The category once, then what is specific: the numbers, the host."""
    head = category_title(category)
    where = f" on {', '.join(hosts)}" if hosts else ""
    what = prose(after_category(category, told, commands=False))
    what = shortened(what, 110)
    return f"{head}{where}: {what}" if what else f"{head}{where}"


