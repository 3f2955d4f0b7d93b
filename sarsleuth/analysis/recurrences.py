"""Incidents that are one failure recurring: findings of a detector kb
marks ``recurs`` (a link that flaps), about the same resource
(``refs.resource``), hours apart, each alone in its group of findings,
become one incident (:func:`join_recurrences`, called by
:mod:`sarsleuth.analysis.correlate` on its groups)."""
from __future__ import annotations

from sarsleuth.knowledge import kb_entry


def join_recurrences(groups: list) -> list:
    """A failure that recurs hours apart on the same resource (a link that
    flaps all night: kb ``recurs``) is one incident, not one per time,
    when nothing else happened with it: a named resource links them where
    time does not."""
    out: list = []
    first: dict = {}
    for g in groups:
        key = _recurrence_of(g)
        if key is not None and key in first:
            home = first[key]
            home.findings.extend(g.findings)
            home.end = max(home.end, g.end) if home.end is not None and g.end is not None else home.end
            continue
        if key is not None:
            first[key] = g
        out.append(g)
    return out


def _recurrence_of(g):
    """``(host, detector, resource)`` of a group made only of one recurring
    detector's findings about one resource, else None."""
    detectors = {f.detector for f in g.findings}
    resources = {tuple(f.refs.get("resource") or ()) for f in g.findings}
    if len(detectors) != 1 or len(resources) != 1 or resources == {()}:
        return None
    detector = next(iter(detectors))
    return (g.host, detector, next(iter(resources))) if kb_entry(detector).get("recurs") else None
