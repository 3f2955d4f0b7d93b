"""One host's analysis on a worker: the same code as a single-host case
(:meth:`sarsleuth.case.Case.load`), then only what the fleet needs goes back:
findings, incidents, facts and a compact summary of the metrics.  With a
case directory the worker writes its own metrics and events there, so the
tables never travel."""
from __future__ import annotations

import time

from sarsleuth.case import Case
from sarsleuth.analysis.correlate import correlate
from sarsleuth.fleet.model import HostResult, metric_summary
from sarsleuth.model import iso
from sarsleuth.options import Options
from sarsleuth.redaction.case import names_given
from sarsleuth.saved_cases import source_row


def analyse_host(group, options: Options, save_dir: str | None = None) -> HostResult:
    """Analyse one host's files; a failure is the host's result, not an
    exception (one unreadable host never stops the fleet)."""
    began = time.perf_counter()
    result = HostResult(host=group.host, files=list(group.files), facts=dict(group.facts))
    try:
        _run(group, options, save_dir, result)
    except MemoryError:
        result.ok, result.error = False, "ran out of memory on its worker"
    except Exception as exc:  # noqa: BLE001 - any failure of one host is reported, never raised
        from sarsleuth.errors import SarsleuthError
        text = str(exc) if isinstance(exc, (SarsleuthError, _NoInput)) else f"{type(exc).__name__}: {exc}"
        result.ok, result.error = False, text.splitlines()[0] if text else type(exc).__name__
    result.seconds = time.perf_counter() - began
    return result


def _run(group, options, save_dir, result) -> None:
    # archives are read in place here, on the worker; of a collect archive
    # only this host's node
    case = Case.load(*group.files, select=group.select, options=options)
    result.skipped = [(s.path, s.reason) for s in case.skipped]
    if not case.sources:
        # a bundle cut before its data says so in a warning, not as a skipped file
        reasons = "; ".join(r for _p, r in result.skipped[:2]) or "; ".join(case.warnings[:2]) or "no input files"
        raise _NoInput(f"no usable input: {reasons}")
    findings = case.findings
    if group.shared:
        # a file naming several hosts (a central syslog) was read whole:
        # keep this host's part only
        findings = [f for f in findings if f.host is None or str(f.host).casefold() == str(group.host).casefold()]
        result.notes.append(f"{len(group.shared)} file(s) also name other hosts; only {group.host}'s lines count")
    for f in findings:
        f.host = f.host or group.host or None
    result.findings = findings
    if group.shared:
        # told on this host's clock, as a single-host analysis tells it
        result.incidents = correlate(list(findings), case.clock)
    else:
        result.incidents = case.incidents
    result.warnings = list(case.warnings)
    result.notes += list(case.notes)
    metrics, events = _own_series(case.store, group), _own_rows(case.events, group)
    result.sources = [source_row(s) for s in case.sources]
    result.names = {kind: sorted(found) for kind, found in names_given(case).items()}
    result.facts.update(_facts(case, metrics, events, group.host))
    own = _host_facts(case, group.host)
    if own is not None:
        result.host_facts = own.to_dict()
    result.summary = metric_summary(metrics)
    if save_dir is not None:
        from sarsleuth.saved_cases import write_host_tables
        write_host_tables(save_dir, group.host, metrics, events)


class _NoInput(Exception):
    pass


def _own_series(store, group):
    if not store or not group.shared:
        return store
    return store.select(lambda key: key[0] in (group.host, None))


def _own_rows(frame, group):
    if frame is None or not len(frame) or not group.shared:
        return frame
    host = frame["host"].astype(object)
    return frame[(host == group.host) | host.isna()]


def _host_facts(case, host):
    """The bundle facts of this host (any name it goes by); a host-less
    group of one bundle keeps that bundle's."""
    if not case.hosts:
        return None
    if host:
        return case.host_facts(host)
    return case.hosts[0] if len(case.hosts) == 1 else None


def _facts(case, metrics, events, host) -> dict:
    own = _host_facts(case, host)
    zone = (own.timezone if own is not None else None) or case.clock.host_zones.get(host) or case.tz
    facts = {"zone": str(zone) if zone else None, "wall_clock": zone is None,
             "metric_values": int(len(metrics)) if metrics is not None else 0,
             "events": int(len(events)) if events is not None else 0}
    if own is not None:
        # what the bundle says of the machine comes before what a data file records
        for key, value in (("hostname", own.hostname), ("kernel", own.kernel), ("ncpu", own.ncpu),
                           ("mem_total_kb", own.mem_total_kb), ("bundle", own.bundle)):
            if value is not None:
                facts[key] = value
        if own.timezone:
            facts["zone_from"] = own.timezone_from
    for s in case.sources:
        for key in ("kernel", "ncpu"):
            if s.meta.get(key) is not None:
                facts.setdefault(key, s.meta[key])
    spans = [t for s in case.sources for t in s.span() if t is not None]
    if spans:
        try:
            facts["start"], facts["end"] = iso(min(spans)), iso(max(spans))
        except TypeError:
            pass
    return facts


def host_departures(group, windows, options: Options) -> list:
    """How far this host departed from its own baseline in each of
    ``windows`` (the fleet incidents' spans): per window {"entries",
    "score", "largest"} (see :func:`sarsleuth.analysis.what_changed.hosts_departed`),
    or None where it departed nowhere or its clock cannot place the
    window.  The host is read again without its detectors: only the
    fleet's windows tell which spans to rank, and they are known once
    every host is done.  A host that cannot be read departs nowhere."""
    from sarsleuth.analysis.what_changed import hosts_departed, user_ranking
    try:
        case = Case.load(*group.files, select=group.select, options=options, analyse=False)
    except Exception:  # noqa: BLE001 - its first pass already said why it could not be read
        return [None] * len(windows)
    own = None
    if group.shared and group.host:
        own = [h for h in (case.store.hosts() if case.store else ()) if str(h).casefold() == str(group.host).casefold()]
    out = []
    for window in windows:
        try:
            found = hosts_departed(user_ranking(case.store, case.events, case.sources, case.clock, window, hosts=own))
        except (TypeError, ValueError):       # a wall-clock host beside a window in UTC
            found = None
        if found is None or not len(found):
            out.append(None)
            continue
        out.append({"entries": int(found["entries"].sum()), "score": float(found["score"].sum()),
                    "largest": str(found.iloc[0]["largest"])})
    return out
