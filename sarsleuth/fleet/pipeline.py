"""One host's analysis on a worker: the same code as a single-host case
(:meth:`sarsleuth.case.Case.load`), then only what the fleet needs goes back:
findings, incidents, facts and a compact summary of the metrics.  With a
case directory the worker writes its own metrics and events there, so the
tables never travel."""
from __future__ import annotations

import time

from sarsleuth.fleet.model import HostResult, metric_summary
from sarsleuth.model import iso


def analyse_host(group, options: dict, save_dir: str | None = None) -> HostResult:
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
        text = str(exc) if isinstance(exc, SarsleuthError) else f"{type(exc).__name__}: {exc}"
        result.ok, result.error = False, text.splitlines()[0] if text else type(exc).__name__
    result.seconds = time.perf_counter() - began
    return result


def _run(group, options, save_dir, result) -> None:
    from sarsleuth.case import Case
    from sarsleuth.correlate import correlate
    case = Case.load(*group.files, **options)
    result.skipped = [(s.path, s.reason) for s in case.skipped]
    if not case.sources:
        reasons = "; ".join(r for _p, r in result.skipped[:2]) or "no input files"
        raise _NoInput(f"no usable input: {reasons}")
    findings = case.findings
    if group.shared:
        # a file naming several hosts (a central syslog) was read whole:
        # keep this host's part only
        findings = [f for f in findings if f.host in (None, group.host)]
        result.notes.append(f"{len(group.shared)} file(s) also name other hosts; only {group.host}'s lines count")
    for f in findings:
        f.host = f.host or group.host or None
    result.findings = findings
    result.incidents = correlate(list(findings)) if group.shared else case.incidents
    result.warnings = list(case.warnings)
    result.notes += list(case.notes)
    metrics, events = _own_rows(case.metrics, group), _own_rows(case.events, group)
    from sarsleuth.store import source_row
    result.sources = [source_row(s) for s in case.sources]
    result.facts.update(_facts(case, metrics, events))
    result.summary = metric_summary(metrics)
    if save_dir is not None:
        from sarsleuth.store import write_host_tables
        write_host_tables(save_dir, group.host, metrics, events)


class _NoInput(Exception):
    pass


def _own_rows(frame, group):
    if frame is None or not len(frame) or not group.shared:
        return frame
    host = frame["host"].astype(object)
    return frame[(host == group.host) | host.isna()]


def _facts(case, metrics, events) -> dict:
    facts = {"zone": str(case.tz) if case.tz else None, "wall_clock": case.tz is None,
             "metric_values": int(len(metrics)) if metrics is not None else 0,
             "events": int(len(events)) if events is not None else 0}
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
