"""Findings and incidents as JSON lines: one event a line, in time order,
for log viewers and pipelines (``lnav`` reads them with the format shipped
in :mod:`sarsleuth.integrations`, beside the logs they came from).

Each line is an object with ``time`` (ISO 8601, the host's offset when its
zone is known), ``wall_clock`` (the same time on the host's clock, always
with microseconds and no offset: what lnav reads, so that findings sit
beside the host's logs, which carry no zone either), ``end``, ``type`` (``incident``, ``finding`` or, for a
fleet, ``fleet-incident``), ``host``, ``detector`` (an incident's: the
detector named as its cause), ``severity``, ``title``, ``evidence``
(``file:line`` of the first evidence; the file alone for a binary sa file)
and ``evidence_text``; ``incident`` and ``incident_id`` are the rank and id
of the incident the line is or belongs to (lnav's operation keys step
through the lines of one id), ``role`` a finding's role in it; an incident
adds ``category`` and ``summary``.  Keys that do not apply to a line (no
host, no incident) are left out.  A finding with no time of its own (a dmesg line that could
not be dated) is placed at its incident's start, or at the first time of
the case, and ``placed`` says so: a log viewer needs a
time on every line.  Text from inputs is escaped as in the JSON document
(control and bidirectional characters made visible), so a line never
breaks in two.
"""
from __future__ import annotations

import json

import pandas as pd

from sarsleuth.safe_text import visible_tree
from sarsleuth.render.formats.json import plain


def _dumps(record: dict) -> str:
    """One line; keys whose value is missing are left out (log viewers show
    a missing field as absent, a null as the word)."""
    line = {}
    for key, value in record.items():
        line[key] = value
        if key == "time" and _timed(value):
            line["wall_clock"] = wall_clock(value)
    present = {k: v for k, v in plain(line).items() if v is not None}
    return json.dumps(visible_tree(present), ensure_ascii=False, allow_nan=False)


def wall_clock(t) -> str:
    """The time as the host's clock read it, always in one shape
    (``2014-05-06T15:02:03.000000``): log viewers lock on to the first
    line's shape, and show a host's logs on its wall clock."""
    ts = pd.Timestamp(t)
    if ts.tzinfo is not None:
        ts = ts.tz_localize(None)
    return ts.strftime("%Y-%m-%dT%H:%M:%S.%f")


def _timed(t) -> bool:
    return t is not None and not pd.isna(t)


def _instant(t) -> int:
    """Nanoseconds for ordering: instants in UTC, wall clocks as they read."""
    ts = pd.Timestamp(t)
    return (ts.tz_convert("UTC").tz_localize(None) if ts.tzinfo is not None else ts).value


def _evidence(finding) -> dict:
    if finding is None or not finding.evidence:
        return {"evidence": None, "evidence_text": None}
    first = finding.evidence[0]
    where = first.path if first.line is None else f"{first.path}:{first.line}"
    return {"evidence": where, "evidence_text": first.text}


def finding_event(finding, incident=None) -> dict:
    return {"time": finding.start, "end": finding.end, "type": "finding", "host": finding.host,
            "detector": finding.detector, "severity": finding.severity, "title": finding.title,
            **_evidence(finding), "incident": incident.rank if incident is not None else None,
            "incident_id": incident.id if incident is not None else None,
            "role": finding.role if incident is not None else None, "placed": None}


def incident_event(incident) -> dict:
    """An incident: its evidence is its cause's (its first finding's when
    none is named)."""
    first = next((f for f in incident.findings if f.role == "cause"),
                 incident.findings[0] if incident.findings else None)
    return {"time": incident.start, "end": incident.end, "type": "incident",
            "host": ", ".join(str(h) for h in incident.hosts) or None, "detector": incident.cause,
            "severity": incident.severity, "title": incident.title, **_evidence(first),
            "incident": incident.rank, "incident_id": incident.id, "placed": None,
            "category": incident.category, "summary": incident.summary}


def case_events(findings, incidents) -> list:
    """Every incident and finding as an event, in time order (an incident
    before the findings of its time)."""
    incident_of = {}
    for inc in incidents:
        for f in inc.findings:
            incident_of.setdefault(id(f), inc)
    events = [incident_event(i) for i in incidents]
    events += [finding_event(f, incident_of.get(id(f))) for f in findings]
    timed = [e["time"] for e in events if _timed(e["time"])]
    first = min(timed, key=_instant) if timed else None
    by_rank = {i.rank: i for i in incidents}
    for e in events:
        if _timed(e["time"]):
            continue
        inc = by_rank.get(e["incident"])
        if inc is not None and _timed(inc.start):
            e["time"], e["placed"] = inc.start, f"no time of its own: placed at the start of incident {inc.rank}"
        elif first is not None:
            e["time"], e["placed"] = first, "no time of its own: placed at the first time of the case"
    return sorted(events, key=_order)


def _order(event):
    if not _timed(event["time"]):
        return (1, 0, False, "")
    return (0, _instant(event["time"]), event["type"] == "finding", event["detector"] or "")


def write_case(case, out) -> None:
    for event in case_events(case.findings, case.incidents):
        out.write(_dumps(event) + "\n")


def write_fleet(fleet, out) -> None:
    """A fleet: each fleet incident (its hosts joined), then every host's
    own incidents and findings, all in one time order."""
    events = []
    for inc in fleet.incidents:
        events.append({"time": inc.start, "end": inc.end, "type": "fleet-incident", "host": ", ".join(inc.hosts),
                       "detector": "+".join(inc.kinds), "severity": inc.severity, "title": inc.title,
                       **_evidence(inc.findings[0] if inc.findings else None), "incident": inc.rank,
                       "incident_id": inc.id, "placed": None, "category": inc.category,
                       "hosts_without": list(inc.hosts_without)})
    for host in fleet.hosts:
        events += case_events(host.findings, host.incidents)
    for event in sorted(events, key=_order):
        out.write(_dumps(event) + "\n")


def write_table(table, out) -> None:
    for record in table.records:
        out.write(_dumps(record) + "\n")
