"""What the resources findings name tell the correlation
(:mod:`sarsleuth.analysis.correlate`): one failure recurring hours apart
on the same resource (a detector kb marks ``recurs``, a link that flaps:
``refs.resource``) is one incident (:func:`join_recurrences`); one unit's
failure beside another unit's is not its effect (:func:`another_unit`)."""
from __future__ import annotations

from sarsleuth.knowledge import kb_entry


def join_recurrences(groups: list, context_by_itself) -> list:
    """A failure that recurs hours apart on the same resource (a link that
    flaps all night: kb ``recurs``) is one incident, not one per time,
    when nothing else happened with it but what is context by itself
    (``context_by_itself``: a restart, a gap in sar's samples): a named
    resource links them where time does not."""
    out: list = []
    first: dict = {}
    for g in groups:
        key = _recurrence_of(g, context_by_itself)
        if key is not None and key in first:
            home = first[key]
            home.findings.extend(g.findings)
            home.end = max(home.end, g.end) if home.end is not None and g.end is not None else home.end
            continue
        if key is not None:
            first[key] = g
        out.append(g)
    return out


def _recurrence_of(g, context_by_itself):
    """``(host, detector, resource)`` of a group made only of one recurring
    detector's findings about one resource (and context), else None."""
    own = [f for f in g.findings if not context_by_itself(f)]
    detectors = {f.detector for f in own}
    resources = {tuple(f.refs.get("resource") or ()) for f in own}
    if len(detectors) != 1 or len(resources) != 1 or resources == {()}:
        return None
    detector = next(iter(detectors))
    return (g.host, detector, next(iter(resources))) if kb_entry(detector).get("recurs") else None


def another_unit(f, cause) -> bool:
    """A finding of the cause's own detector about another unit (one
    service failing beside another): the same kind of failure, not its
    effect, unless something else ties them."""
    unit, cause_unit = (f.refs or {}).get("unit"), (cause.refs or {}).get("unit")
    return f is not cause and f.detector == cause.detector and bool(unit) and bool(cause_unit) and unit != cause_unit
