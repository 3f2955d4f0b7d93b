"""The story of an incident, as an experienced SRE writes it.

A one-sentence headline with the decisive numbers; a timeline across every
source (time, what, evidence file:line); the cause and why it is the cause;
its effects; what was already there before it; what to do.  The parts are
kept apart in ``Incident.story`` so that text, markdown and HTML tell the
same story the same way; ``Incident.summary`` is the paragraph form.
Every causal claim names the evidence it rests on.
"""
from __future__ import annotations

import os
import re

import pandas as pd

from sarsleuth.knowledge import category_title, kb_entry
from sarsleuth.model import SEVERITY_RANK, Finding, Incident, iso, shortened
from sarsleuth.safe_text import QUOTED
from sarsleuth.analysis.ranking import headline_of
from sarsleuth.timebase.clock import Clock, on_clock, when, zone_of


_BIG_NUMBER = re.compile(r"(?<![\w.:/\[#-])([1-9]\d{3,})(?![\w.:/\]-])")


def prose(text: str) -> str:
    """A detector's title as prose: counts with thousands separators (180,000 sockets),
    never a PID, year, address, port or sector, nor what it quotes."""
    def fix(part: str) -> str:
        def one(m):
            number = m.group(1)
            if re.search(r"\b(?:PID|pid)s?\b[^)]*$|\b(?:ports?|sectors?|LBAs?)\s+(?:\d+(?:, | and ))*$",
                         part[:m.start()]):
                return number
            unit = re.match(r"\s*(?:s|ms|[kKMG]i?B|x|%|sockets|failed|requests)\b", part[m.end():])
            if len(number) == 4 and 1900 <= int(number) <= 2099 and not unit:
                return number          # a year
            return f"{int(number):,}"
        return _BIG_NUMBER.sub(one, part)
    pieces = QUOTED.split(text)
    return "".join(p if p[:1] in "`'\"" and len(p) > 1 else fix(p) for p in pieces)


_WORD = re.compile(r"[A-Za-z0-9/]+")
#: Words a title's lead may hold beside the category's without saying more
#: ("nginx workers crashed 3 time(s)": the count follows after the colon).
_COUNT_WORDS = {"time", "s", "x"}


def _stem(word: str) -> str:
    """Enough of a word to match its other forms: CPUs/CPU, exhausted/
    exhaustion, crashes/crashed, workers/worker."""
    w = word.lower()
    if len(w) > 3 and w.endswith("s"):
        w = w[:-1]
    return w[:5]


def category_stems(category: str) -> list[str]:
    """The stems of a category's phrase ("Memory exhaustion": memor, exhau)."""
    return [_stem(w) for w in _WORD.findall(category_title(category))]


def _lead_split(title: str) -> tuple[str, str]:
    """``title`` cut at its first ": " outside `quoted commands`."""
    at = 0
    for piece in re.split(r"(`[^`]*`)", title):
        if not piece.startswith("`"):
            i = piece.find(": ")
            if i >= 0:
                return title[:at + i], title[at + i + 2:]
        at += len(piece)
    return title, ""


def after_category(category: str, title: str, commands: bool = True) -> str:
    """What a finding's title says beyond its incident's category phrase,
    for a headline that states the category once: a lead restating it
    ("Memory exhausted: ", "CPUs saturated: ") is dropped; a name before it
    stays ("nginx workers crashed 3 time(s): 3 x signal 11" -> "3 x signal
    11 in nginx").  Without ``commands``, `quoted command lines` in the lead
    are left out (the finding quotes them; a headline keeps its numbers)."""
    cat = category_stems(category)
    lead, rest = _lead_split(title)
    if not commands and "`" in lead:
        lead = without_code(lead)
        title = f"{lead}, {rest}" if lead and rest else lead or rest
    words = list(_WORD.finditer(lead))
    stems = [_stem(m.group()) for m in words]
    if not cat or not set(cat) <= set(stems):
        return title
    first = min(stems.index(c) for c in cat)
    if any(s not in cat and not s.isdigit() and s not in _COUNT_WORDS for s in stems[first:]):
        return title            # the lead says more than the category: kept whole
    name = lead[:words[first].start()].strip()
    if name and rest:
        # after the counts it names: "1 x signal 6 (SIGABRT), 2 x signal 11 (SIGSEGV) in nginx, 3 core dumped"
        cut = re.search(r", (?!\d[\d,]* x )", rest)
        at = cut.start() if cut else len(rest)
        return f"{rest[:at]} in {name}{rest[at:]}"
    return name or rest


def without_code(text: str) -> str:
    """``text`` without its `quoted code`, and without what held only code
    (a parenthesis of quoted settings, the commas between them)."""
    out = re.sub(r"`[^`]*`", "", text)
    out = re.sub(r"\(\s*(?:[,;]\s*)*\)", "", out)
    out = re.sub(r"\s+([,;)])", r"\1", out)
    return re.sub(r"\s{2,}", " ", out).strip(" ,;")


def _on_clock(f: Finding) -> bool:
    return bool(f.aligned) and f.start is not None and not pd.isna(f.start)


def where(finding: Finding) -> str:
    """``file:line`` of a finding's first evidence (``file`` for sar values)."""
    for ev in finding.evidence:
        if ev.path:
            return os.path.basename(ev.path) + (f":{ev.line}" if ev.line else "")
    return ""


def quote(finding: Finding, limit: int = 1) -> str:
    parts = []
    for ev in finding.evidence[:limit]:
        loc = os.path.basename(ev.path) if ev.path else ""
        if ev.line:
            loc += f":{ev.line}"
        text = shortened(ev.text, 160)
        parts.append(f"\"{text}\"" + (f" ({loc})" if loc else ""))
    return "; ".join(parts)


def _same_day(a, b) -> bool:
    try:
        return pd.Timestamp(a).date() == pd.Timestamp(b).date()
    except (TypeError, ValueError):
        return True


def _peak(f: Finding):
    peak = (f.refs or {}).get("peak_time")
    if not peak or not _on_clock(f):
        return None
    try:
        p = pd.Timestamp(peak)
        if p.tzinfo is None and pd.Timestamp(f.start).tzinfo is not None:
            p = p.tz_localize(pd.Timestamp(f.start).tzinfo)
        if p != pd.Timestamp(f.start) and (f.end is None or p != pd.Timestamp(f.end)):
            return p
    except (TypeError, ValueError):
        return None
    return None


def span(f: Finding, zone=None) -> str:
    """When a finding held: ``at T``, ``from A to B``, with its peak time
    when that is neither end, where it began or took off when that is
    neither, and dates when it crosses midnight; on ``zone``'s clock (the
    finding's own when None)."""
    if not _on_clock(f):
        if (f.refs or {}).get("nginx_exit_pids"):
            return "(kernel lines without a time on the shared clock, dated by the same PIDs' exits in error.log)"
        return "(time not on the shared clock)"
    onset = f.onset
    first = min(f.start, onset)
    began = sampled_from(f)
    if f.end is None or pd.isna(f.end) or f.end == first:
        text = (f"between {when(began, False, zone)} and {when(first, False, zone)}" if began is not None
                else f"at {when(first, False, zone)}")
    else:
        dated = not _same_day(on_clock(first, zone), on_clock(f.end, zone))
        text = (f"from between {when(began, dated, zone)} and {when(first, dated, zone)} to {when(f.end, dated, zone)}"
                if began is not None else f"from {when(first, dated, zone)} to {when(f.end, dated, zone)}")
    if onset < f.start:
        text += f", past its threshold from {when(f.start, False, zone)}"
    elif onset > f.start:
        text += f", taking off at {when(onset, False, zone)}"
    p = _peak(f)
    if p is not None and p != onset:
        text += f", peak at {when(p, False, zone)}"
    return text


#: A sample interval of this many seconds or more is said: what a sample
#: shows began up to one interval before the time sar stamped it with.
SAID_INTERVAL_SECONDS = 2.0


def sampled_from(f: Finding):
    """Where the interval of a finding's first sample began, when it is
    long enough to say (an sa row is stamped at the end of the interval
    it averages: an onset seen in the row stamped 08:54:32 of a one-minute
    file began between 08:53:32 and 08:54:32), else None."""
    if not _on_clock(f) or f.onset > f.start:
        return None
    return f.interval_began if f.resolution.total_seconds() >= SAID_INTERVAL_SECONDS else None


def _shared_processes(f: Finding, cause: Finding) -> int:
    """How many processes ``f`` shares with the cause (PIDs both name) when
    both count dead processes: the same crash or kill seen twice."""
    if not (kb_entry(f.detector).get("process_deaths") and kb_entry(cause.detector).get("process_deaths")):
        return 0
    return len(set(f.refs.get("pids") or []) & set(cause.refs.get("pids") or []))


def _cited(f: Finding) -> str:
    loc = where(f)
    return f" [{loc}]" if loc else ""


def _cause_onset(inc: Incident):
    """When the incident's cause may have begun: its onset, less the
    interval its first sample covers."""
    cause = next((f for f in inc.findings if f.role == "cause" and _on_clock(f)), None)
    return None if cause is None else cause.interval_began


def _rows_of(f: Finding, cause_from) -> list[tuple]:
    """``(time, role, what)`` rows of a finding on the timeline, each
    saying what held at its time: where it began (its onset, when the
    detector saw it grow before it crossed its threshold: the memory that
    began to fall), where it crossed, when it took off (a series already
    above its usual level before: context while that is before the
    cause's onset), its peak."""
    refs = f.refs or {}
    start, onset = f.start, f.onset
    title = prose(f.title)
    rows = []
    if onset < start and refs.get("onset_said"):
        rows += [(onset, f.role, prose(refs["onset_said"])), (start, f.role, title)]
    elif onset > start and refs.get("start_said"):
        early = "context" if f.role == "effect" and cause_from is not None and start < cause_from else f.role
        rows += [(start, early, prose(refs["start_said"])), (onset, f.role, title)]
    elif onset > start:
        rows.append((onset, f.role, title))          # told where it took off: nothing said of before
    else:
        rows.append((start, f.role, title))
    p = _peak(f)
    if p is not None and p not in (r[0] for r in rows):
        rows.append((p, f.role, f"peak: {title}"))
    return rows


def timeline(inc: Incident) -> list[dict]:
    """Every finding of the incident on one clock (the incident's zone): its
    start (and its onset, and its peak), what it was then, its role, and
    the evidence file:line; findings without a time on the shared clock
    last."""
    rows = []
    cause_from = _cause_onset(inc)
    for f in inc.findings:
        ev = f.evidence[0] if f.evidence else None
        base = {"detector": f.detector, "host": f.host,
                "where": where(f), "path": ev.path if ev else "", "line": ev.line if ev else None}
        if _on_clock(f):
            for t, role, what in _rows_of(f, cause_from):
                rows.append({"role": role, **base, "time": iso(t), "clock": when(t, False, inc.zone), "what": what,
                             "_key": t})
        else:
            rows.append({"role": f.role, **base, "time": None, "clock": "untimed", "what": prose(f.title),
                         "_key": None})
    timed = sorted((r for r in rows if r["_key"] is not None), key=lambda r: r["_key"])
    if timed and not _same_day(on_clock(timed[0]["_key"], inc.zone), on_clock(timed[-1]["_key"], inc.zone)):
        for r in timed:          # (over more than one day, a time of day alone says no day)
            r["clock"] = when(r["_key"], True, inc.zone)
    return [{k: v for k, v in r.items() if k != "_key"} for r in timed + [r for r in rows if r["time"] is None]]


def _headline(inc: Incident, cause: Finding, effects: list[Finding], clock: Clock) -> str:
    where_ = f" on {', '.join(inc.hosts)}" if inc.hosts else ""
    if inc.start is not None and not pd.isna(inc.start):
        dated = inc.end is not None and not _same_day(inc.start, inc.end)
        # the incident begins in its earliest finding's first sample: between that sample's start and its stamp
        first = min((f for f in inc.findings if f.role != "context" and _on_clock(f)),
                    key=lambda f: min(f.start, f.onset), default=None)
        began = sampled_from(first) if first is not None and min(first.start, first.onset) == inc.start else None
        since = (f"between {when(began)} and {when(inc.start, False)}" if began is not None else when(inc.start))
        period = (f" from {since} to {when(inc.end, dated)} ({zone_of(inc.start)}{_across_zones(inc, clock)})"
                  if inc.end is not None and inc.end != inc.start or began is None
                  else f" {since} ({zone_of(inc.start)}{_across_zones(inc, clock)})")
    else:
        period = " (time not on the shared clock)"
    # the decisive effects: medium or worse, on the shared clock first
    top = sorted((f for f in effects if SEVERITY_RANK[f.severity] >= SEVERITY_RANK["medium"]),
                 key=lambda f: (not _on_clock(f), -SEVERITY_RANK[f.severity]))
    picked, seen = [], {cause.detector}
    for f in top:
        if f.detector not in seen:
            picked.append(f)
            seen.add(f.detector)
        if len(picked) == 2:
            break
    what = prose(after_category(inc.category, headline_of(inc.findings, cause)))
    names = responsible_names(inc, cause)
    if names and what and not any(n in what for n in names):
        what += f", by {' and '.join(names)}"
    text = f"{category_title(inc.category)}{where_}{period}" + (f": {what}" if what else "")
    if picked:
        text += ", then " + " and ".join(prose(after_category(inc.category, f.title) or f.title) for f in picked)
    return text.rstrip(".") + "."


def _across_zones(inc: Incident, clock: Clock) -> str:
    """What says why an incident is told in UTC: its hosts keep different
    clocks."""
    return f": {', '.join(inc.hosts)} are in different time zones" if clock.zones_differ(inc.hosts) else ""


def _symptom_only(cause: Finding, chain: dict | None) -> bool:
    """An incident headed by a symptom (a failed load test): nothing in the files can have caused it."""
    return chain is None and kb_entry(cause.detector).get("cause", True) is False


def _why(cause: Finding, chain: dict | None, effects: list[Finding], context: list[Finding]) -> str:
    if _symptom_only(cause, chain):
        check = kb_entry(cause.detector).get("check") or []
        return (f"It is a symptom{_cited(cause)}, and no finding in these files can have caused it: the cause is on "
                "the other side (the server, what it waits on)" + (f"; check {'; '.join(check)}" if check else "")
                + ".")
    if chain is None:
        return (f"It is the most severe finding{_cited(cause)}; no known cause-and-effect chain links it "
                "to the others, so they are told as context." if effects or context else
                f"It is the incident's only finding{_cited(cause)}: nothing else in the case's files is tied to it.")
    order = chain["order"]
    named = []
    for f in [cause] + effects:
        if f.detector not in named:
            named.append(f.detector)
    named.sort(key=order.index)
    if not effects:
        text = (f"It heads the {chain['name']} chain ({' -> '.join(named)}){_cited(cause)}; nothing else in the "
                "case's files followed from it.")
    elif _on_clock(cause):
        text = (f"It comes first on the {chain['name']} chain ({' -> '.join(named)}) and in time{_cited(cause)}; "
                f"the {len(effects)} finding(s) below follow from it and none starts before it.")
    else:
        text = (f"It comes first on the {chain['name']} chain ({' -> '.join(named)}){_cited(cause)}; it has no "
                f"time on the shared clock, so its place comes from the chain (and the PIDs it shares with the "
                f"{len(effects)} finding(s) below), not from time.")
    before = [f for f in context if _on_clock(f) and _on_clock(cause) and f.onset < cause.onset]
    if before:
        text += f" {len(before)} finding(s) started earlier: they are context, not its effects."
    return text


def _responsible_finding(inc: Incident, cause: Finding) -> Finding | None:
    """The finding that names the processes behind the incident: the
    cause's own, else its first effect's (the CPU or memory they used)."""
    if (cause.refs or {}).get("responsible"):
        return cause
    return next((f for f in inc.findings if f.role == "effect" and (f.refs or {}).get("responsible")), None)


def responsible_names(inc: Incident, cause: Finding) -> list[str]:
    """The programs a story names as responsible (from ps snapshots)."""
    f = _responsible_finding(inc, cause)
    return list((f.refs or {}).get("responsible_names") or []) if f is not None else []


def narrate(inc: Incident, cause: Finding, chain: dict | None, clock: Clock) -> None:
    """Fill ``inc.story`` and ``inc.summary``, on the clock of ``inc.zone``
    (``clock``: the case's, to say why it is UTC across hosts)."""
    effects = [f for f in inc.findings if f.role == "effect" or (f.role == "cause" and f is not cause)]
    context = [f for f in inc.findings if f.role == "context"]
    cause_text = f"{prose(cause.title)} {span(cause, inc.zone)}"
    by = _responsible_finding(inc, cause)
    if by is not None:
        cause_text += f", by {by.refs['responsible']}"
    elif (cause.refs or {}).get("pid_commands"):
        commands = cause.refs["pid_commands"]
        pid, command = next(iter(commands.items()))
        more = f" (and {len(commands) - 1} more PID(s) ps shows)" if len(commands) > 1 else ""
        cause_text += f"; PID {pid} is `{command}` in ps{more}"
    q = quote(cause)
    if q:
        cause_text += f", evidence {q}"
    if _symptom_only(cause, chain):
        cause_text = f"not in these files, which show only what it did: {cause_text}"
    effect_lines = []
    for f in effects:
        item = f"{prose(f.title)} {span(f, inc.zone)}"
        same = _shared_processes(f, cause)
        if same:
            item += f" (the same {same} process(es) as the cause, matched by PID: not additional ones)"
        effect_lines.append(item + _cited(f))
    context_lines = []
    for f in context:
        if kb_entry(f.detector).get("driver"):
            why = "the load that drove it"
        elif (f.refs or {}).get("beside"):
            why = "another run, which no time ties to this incident"
        elif _on_clock(f) and _on_clock(cause) and f.onset < cause.onset:
            why = "already before the cause"
        else:
            why = "at the same time, not explained by the cause"
        context_lines.append(f"{prose(f.title)} {span(f, inc.zone)} ({why}){_cited(f)}")
    unaligned = [f for f in inc.findings if not _on_clock(f)]
    unaligned_note = ""
    if unaligned:
        names = ", ".join(sorted({f.detector for f in unaligned}))
        unaligned_note = (f"{len(unaligned)} finding(s) ({names}) come from sources without a time on the shared "
                          "clock and were attached by PID, causal chain or host, not by time.")
    inc.story = {
        "headline": _headline(inc, cause, effects, clock),
        "timeline": timeline(inc),
        "cause": cause_text,
        "explanation": cause.explanation,
        "why": _why(cause, chain, effects, context),
        "effects": effect_lines,
        "context": context_lines,
        "unaligned": unaligned_note,
        "actions": list(inc.recommendations),
    }
    parts = [inc.story["headline"], f"Cause: {cause_text}."]
    if cause.explanation:
        parts.append(cause.explanation)
    if effect_lines:
        parts.append("Effects: " + "; ".join(effect_lines[:8]) + "."
                     + (f" ({len(effect_lines) - 8} more in the findings.)" if len(effect_lines) > 8 else ""))
    if context_lines:
        parts.append("Context: " + "; ".join(context_lines[:4]) + "."
                     + (f" ({len(context_lines) - 4} more in the findings.)" if len(context_lines) > 4 else ""))
    if unaligned_note:
        parts.append(unaligned_note)
    if inc.recommendations:
        parts.append("What to do first: " + inc.recommendations[0])
    inc.summary = " ".join(p.strip() for p in parts if p.strip())


def quiet_summary(case) -> str:
    """What a case without incidents says: that nothing was found, in how
    many sources, and which detectors looked."""
    if getattr(case, "empty_window", None):
        return case.empty_window + "."
    n = len(case.sources)
    kinds = sorted({s.kind for s in case.sources})
    low = len(case.findings)
    text = f"No incident found in {n} source(s)" + (f" ({', '.join(kinds)})" if kinds else "") + "."
    if low:
        text += f" {low} finding(s) below the reporting threshold are listed in the findings."
    return text + f" Checked: {', '.join(case.checked)}."
