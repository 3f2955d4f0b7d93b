"""A single case (``sarsleuth.load``, ``analyze --save`` without a fleet)
saved the way a fleet is: split by the hosts it names into host results,
one partition of metrics and events per host, and the fleet's small
tables (:mod:`sarsleuth.saved_cases`)."""
from __future__ import annotations

from sarsleuth.fleet.model import Fleet, HostResult, metric_summary
from sarsleuth.redaction.check import refuse_folder_leak
from sarsleuth.saved_cases import prepare_case_dir, source_row, write_fleet_tables, write_host_tables
from sarsleuth.saved_cases.folder import writing


def save_case(case, path, inputs=()) -> str:
    """Write ``case`` into the folder ``path`` (refused inside one of
    ``inputs``), whole or not at all; returns where it is."""
    staging = prepare_case_dir(path, inputs)
    try:
        with writing(path):
            _save_case(case, staging.dir)
        # a redacted case's last look, before it is put in place
        refuse_folder_leak(getattr(case, "redactor", None), staging.dir, path)
        with writing(path):
            staging.commit()
    finally:
        staging.discard()
    return str(staging.target)


def _save_case(case, base) -> None:
    hosts = {str(h) for h in case.store.hosts()} if case.store else set()
    if case.events is not None and len(case.events):
        hosts |= {str(h) for h in case.events["host"].astype(object).dropna().unique()}
    hosts |= {f.host for f in case.findings if f.host}
    results = []
    for host in sorted(hosts) or [""]:
        metrics = case.store.select(lambda key: (key[0] or "") == host) if case.store else case.store
        events = _rows_of(case.events, host)
        write_host_tables(base, host, metrics, events)
        own = [s for s in case.sources if (s.host or s.meta.get("assigned_host") or "") == host]
        results.append(HostResult(
            host=host, files=[s.path for s in own], facts={"zone": str(case.tz) if case.tz else None,
                                                           "wall_clock": case.tz is None,
                                                           "metric_values": len(metrics or ()), "events": len(events)},
            host_facts=_case_host_facts(case, host),
            sources=[source_row(s) for s in own], findings=[f for f in case.findings if (f.host or "") == host],
            incidents=[i for i in case.incidents if host in i.hosts or (not i.hosts and not host)],
            summary=metric_summary(metrics)))
    write_fleet_tables(base, Fleet(hosts=results, warnings=list(case.warnings), notes=list(case.notes)))


def _case_host_facts(case, host):
    facts = case.host_facts(host) if host and hasattr(case, "host_facts") else None
    return facts.to_dict() if facts is not None else None


def _rows_of(frame, host):
    if frame is None or not len(frame):
        return frame.iloc[0:0] if frame is not None else frame
    names = frame["host"].astype(object).fillna("")
    return frame[(names == host).to_numpy()]
