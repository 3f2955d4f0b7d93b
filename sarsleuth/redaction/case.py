"""A case redacted in place, before anything is rendered from it.

Every output (text, JSON, markdown, Jira, HTML, plots, a saved case) is
drawn from the case, so each string the case holds is redacted once, here:
its sources, events, metric keys, findings and their evidence, incidents
and their stories, host facts, notes and warnings.  Two passes: the first
learns every name (those the files give as host and user names, then every
address and domain in any text), the second replaces them all, so a name
first seen in the last file is replaced in the first one too.  Only names
change: times, numbers, categories and ranks are as analysed.
"""
from __future__ import annotations

import dataclasses

import pandas as pd

from sarsleuth.analysis.correlate import fleet_incident_id, incident_id
from sarsleuth.redaction.names import Redactor


def redact_case(case, patterns=()) -> Redactor:
    """Redact ``case`` in place; returns the redactor (its ``mapping()``
    is what the private map file holds)."""
    r = Redactor(patterns)
    _learn_given(names_given(case), r)
    _walk(case, r.learn, rewrite=False, seen={})
    _walk(case, r.text, rewrite=True, seen={})
    case.__dict__.pop("_long", None)         # the long table is built again from the redacted store
    _renumber(case)
    case.redacted = r.sentence()
    return r


def redact_fleet(fleet, patterns=()) -> Redactor:
    """Redact a fleet's result in place (every host with the same stand-ins)."""
    r = Redactor(patterns)
    given: dict = {"host": set(), "user": set()}
    for h in fleet.hosts:
        given["host"].add(h.host)
        facts = h.host_facts or {}
        given["host"].update([facts.get("host"), facts.get("hostname")])
        given["host"].update(f.host for f in h.findings)
        # what each host's worker found given as names (its ps users too)
        for kind in given:
            given[kind].update(h.names.get(kind, ()))
    _learn_given(given, r)
    _walk(fleet, r.learn, rewrite=False, seen={})
    _walk(fleet, r.text, rewrite=True, seen={})
    for inc in fleet.incidents:
        inc.id = fleet_incident_id(inc.kinds, inc.start, inc.hosts)
    fleet.notes.insert(0, r.sentence())
    return r


def _learn_given(given: dict, r: Redactor) -> None:
    # the longer names first: "db1.example.com" before its first label alone
    for name in sorted((str(h) for h in given["host"] if h), key=len, reverse=True):
        r.host(name, own=True)
    for name in sorted(str(u) for u in given["user"] if u):
        r.user(name, given=True)


def names_given(case) -> dict:
    """{"host": names, "user": names} where the case's files give them as
    such (sar headers, syslog hosts, bundles, ps users...)."""
    hosts, users = set(), set()
    for s in case.sources:
        hosts.add(s.host)
        hosts.update(s.meta.get("hosts") or ())
        frame = s.meta.get("processes")
        if frame is not None and "user" in getattr(frame, "columns", ()):
            users.update(str(u) for u in frame["user"].dropna().unique())
        for rep in s.reports:
            hosts.add(rep.get("host"))
    for h in getattr(case, "hosts", []):
        hosts.update([h.host, h.hostname, *h.aliases])
    if case.store:
        hosts.update(case.store.hosts())
    if case.events is not None and len(case.events) and "host" in case.events.columns:
        hosts.update(case.events["host"].dropna().unique())
    hosts.update(case.host_zones)
    hosts.update(f.host for f in case.findings)
    return {"host": {str(h) for h in hosts if h}, "user": users}


def _walk(value, fn, rewrite: bool, seen: dict):
    """``value`` with ``fn`` applied to every string in it (containers and
    dataclasses changed in place, their identity kept); with ``rewrite``
    False, ``fn`` is only shown every string."""
    if isinstance(value, str):
        return fn(value) if rewrite else (fn(value), value)[1]
    if value is None or isinstance(value, (bool, int, float, bytes)):
        return value
    if id(value) in seen:
        # met before: a tuple or frozenset is new after its rewrite, and
        # every holder of the same object gets the same new one
        return seen[id(value)][1]
    seen[id(value)] = (value, value)        # the value kept alive: its id stays its own
    done = _walk_new(value, fn, rewrite, seen)
    seen[id(value)] = (value, done)
    return done


def _walk_new(value, fn, rewrite: bool, seen: dict):
    kind = type(value).__name__
    if isinstance(value, list):
        value[:] = [_walk(v, fn, rewrite, seen) for v in value]
    elif isinstance(value, tuple):
        new = tuple(_walk(v, fn, rewrite, seen) for v in value)
        return type(value)(*new) if hasattr(value, "_fields") else new
    elif isinstance(value, (set, frozenset)):
        # in a fixed order: stand-ins are numbered as names are first met
        new = {_walk(v, fn, rewrite, seen) for v in sorted(value, key=str)}
        if isinstance(value, set):
            value.clear()
            value.update(new)
            return value
        return frozenset(new)
    elif isinstance(value, dict):
        items = [(_walk(k, fn, rewrite, seen), _walk(v, fn, rewrite, seen)) for k, v in value.items()]
        if rewrite:
            value.clear()
            value.update(items)
    elif kind == "DataFrame":
        _frame(value, fn, rewrite)
    elif kind == "Series":
        return _series(value, fn, rewrite)
    elif kind == "MetricStore":
        runs = {tuple(_walk(part, fn, rewrite, seen) for part in key): run for key, run in value.runs.items()}
        if rewrite:
            value.runs = runs
    elif kind == "ndarray" and value.dtype == object:
        for i, v in enumerate(value.flat):
            value.flat[i] = _walk(v, fn, rewrite, seen)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            new = _walk(getattr(value, f.name), fn, rewrite, seen)
            if rewrite:
                object.__setattr__(value, f.name, new)       # frozen ones (Limit) too
    return value


def _strings(series) -> bool:
    dtype = series.dtype
    return (dtype == object or pd.api.types.is_string_dtype(dtype)
            or isinstance(dtype, pd.CategoricalDtype))


def _mapped(series, fn, rewrite: bool):
    done: dict = {}

    def one(v):
        if not isinstance(v, str):
            return v
        if v not in done:
            done[v] = fn(v)
        return done[v] if rewrite else v
    if str(series.dtype) == "category":
        series = series.astype(object)
    return series.map(one)


def _frame(frame, fn, rewrite: bool) -> None:
    for col in list(frame.columns):
        if _strings(frame[col]):
            new = _mapped(frame[col], fn, rewrite)
            if rewrite:
                frame[col] = new


def _series(series, fn, rewrite: bool):
    if not _strings(series):
        return series
    new = _mapped(series, fn, rewrite)
    return new if rewrite else series


def _renumber(case) -> None:
    """Incident ids are digests of their hosts' names: made again from the
    stand-ins, so that no digest can confirm a guessed name."""
    for inc in case.incidents:
        inc.id = incident_id(inc.category, inc.hosts, inc.start, inc.cause or "")
