"""Writing a case's tables: each host's metrics and events (on its worker),
then the small tables of the case and the marker."""
from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import quote

import pandas as pd

from sarsleuth.errors import UsageError
from sarsleuth.metric_store import MetricStore
from sarsleuth.model import iso
from sarsleuth.saved_cases.folder import Staging, place_problem, write_marker
from sarsleuth.saved_cases.layout import TABLES
from sarsleuth.version import __version__

#: Values of a host's metrics written at a time (a row group): the long
#: table of a case is never held whole, so memory does not grow with it.
METRIC_BATCH = 1 << 18
LIMIT_COLUMNS = ["host", "source", "name", "value", "number", "path", "line", "text", "conf", "pid"]
EVENT_TEXT = ("host", "source", "kind", "process", "message", "file", "level", "detail")


def _need_pyarrow():
    try:
        import pyarrow  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        from sarsleuth.errors import UsageError
        raise UsageError("--save needs pyarrow: pip install 'sarsleuth[parquet]'") from None


def prepare_case_dir(path, inputs=()):
    """A :class:`~sarsleuth.saved_cases.folder.Staging` for a case to be written
    at ``path`` (``.dir`` is where to write it, ``commit()`` puts it in
    place); refused when the case would sit among the inputs or replace
    anything but an earlier case."""
    _need_pyarrow()
    target = Path(os.path.abspath(path))
    for given in inputs:
        given = Path(os.path.abspath(given))
        if target == given or (given.is_dir() and given in target.parents):
            raise UsageError(f"{path}: refusing to write a case inside an input ({given})")
    problem = place_problem(target)
    if problem:
        raise UsageError(f"{path}: {problem}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        return Staging(target)
    except OSError as exc:
        raise UsageError(f"{path}: cannot write: {exc.strerror or exc}") from None


def partition_name(host: str) -> str:
    """``host=<name>`` safe as one path segment whatever the host name holds."""
    seg = quote(str(host), safe="-_@+,")
    return f"host={seg if seg not in ('', '.', '..') else quote(seg, safe='')}"[:240]


def _write(table_frame, path: Path) -> None:
    """One part (the whole case folder is private until it is complete)."""
    # an extra: the core works without it
    import pyarrow as pa
    import pyarrow.parquet as pq
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pandas(table_frame, preserve_index=False), path, compression="zstd")


def utc(series):
    """Times as UTC instants (wall clock taken as UTC: the hosts table says which)."""
    s = pd.to_datetime(series, errors="coerce", utc=False)
    if getattr(s.dt, "tz", None) is None:
        return s.dt.tz_localize("UTC")
    return s.dt.tz_convert("UTC")


def write_host_tables(case_dir, host: str, store, events) -> None:
    """One host's metrics (a MetricStore) and events into their partitions
    (run on the worker)."""
    base = Path(case_dir)
    if not base.is_dir():
        return              # the run that asked for it was interrupted and its case folder removed
    if store:
        _write_metrics(store, host, base / "metrics" / partition_name(host) / "part-0.parquet")
    if events is not None and len(events):
        e = pd.DataFrame({"timestamp": utc(events["timestamp"])})
        for col in EVENT_TEXT:
            if col in events:
                e[col] = events[col].astype(object).where(events[col].notna(), None).map(
                    lambda v: None if v is None else str(v))
        e["host"] = str(host)
        for col in ("pid", "line", "count", "repeats"):
            if col in events:
                e[col] = pd.to_numeric(events[col], errors="coerce").astype("Int64")
        if "repeat_span" in events:
            e["repeat_span"] = pd.to_numeric(events["repeat_span"], errors="coerce").astype("float64")
        if "aligned" in events:
            e["aligned"] = events["aligned"].astype(object).fillna(True).astype(bool)
        _write(e, base / "events" / partition_name(host) / "part-0.parquet")


def _write_metrics(store, host: str, path: Path) -> None:
    """A host's metrics as one Parquet part, written a batch of series at a
    time (each batch in time order), never as one long table."""
    # an extra: the core works without it
    import pyarrow as pa
    import pyarrow.parquet as pq
    label = pa.dictionary(pa.int32(), pa.string())
    schema = pa.schema([("timestamp", pa.timestamp("ns", tz="UTC")), ("host", pa.string()), ("section", label),
                        ("device", label), ("metric", label), ("value", pa.float64())])
    path.parent.mkdir(parents=True, exist_ok=True)
    with pq.ParquetWriter(path, schema, compression="zstd") as writer:
        for part in _batches(store):
            metrics = part.to_long(lines=False)
            m = pd.DataFrame({"timestamp": utc(metrics["timestamp"]), "host": str(host),
                              "section": metrics["section"].astype(str).astype("category"),
                              "device": metrics["device"].astype(str).astype("category"),
                              "metric": metrics["metric"].astype(str).astype("category"),
                              "value": metrics["value"].astype("float64")})
            del metrics
            writer.write_table(pa.Table.from_pandas(m, schema=schema, preserve_index=False))


def _batches(store):
    """Sub-stores of about :data:`METRIC_BATCH` values each, series whole."""
    chunk, size = {}, 0
    for key, run in store.runs.items():
        chunk[key] = run
        size += run.count
        if size >= METRIC_BATCH:
            yield MetricStore(chunk)
            chunk, size = {}, 0
    if chunk:
        yield MetricStore(chunk)


def _finding_rows(host, findings, incident_of) -> list:
    rows = []
    for f in findings:
        d = f.to_dict()
        rows.append({"host": host, "detector": f.detector, "title": f.title, "severity": f.severity,
                     "category": f.category, "start": f.start, "end": f.end, "aligned": bool(f.aligned),
                     "explanation": f.explanation, "metrics": json.dumps(d["metrics"], sort_keys=True),
                     "evidence": json.dumps(d["evidence"]), "incident": incident_of.get(id(f)),
                     "fleet_incident": incident_of.get(("fleet", id(f))), "start_text": iso(f.start)})
    return rows


def _frame(rows, columns, times=()):
    df = pd.DataFrame(rows, columns=columns)
    for col in times:
        df[col] = utc(df[col].map(lambda t: _as_utc(t))) if len(df) else pd.Series([], dtype="datetime64[ns, UTC]")
    return df


def _as_utc(t):
    if t is None or pd.isna(t):
        return pd.NaT
    t = pd.Timestamp(t)
    return t.tz_convert("UTC").tz_localize(None) if t.tzinfo is not None else t


def write_fleet_tables(case_dir, fleet) -> None:
    """The small tables of a fleet (findings, incidents, hosts...) and the marker."""
    base = Path(case_dir)
    incident_of: dict = {}
    for h in fleet.hosts:
        for inc in h.incidents:
            for f in inc.findings:
                incident_of[id(f)] = inc.id
    for inc in fleet.incidents:
        for f in inc.findings:
            incident_of[("fleet", id(f))] = inc.id
    finding_cols = ["host", "detector", "title", "severity", "category", "start", "end", "aligned", "explanation",
                    "metrics", "evidence", "incident", "fleet_incident", "start_text"]
    findings = [row for h in fleet.hosts for row in _finding_rows(h.host, h.findings, incident_of)]
    _write(_frame(findings, finding_cols, ("start", "end")), base / "findings.parquet")
    incidents = [{"host": h.host, "rank": i.rank, "id": i.id, "title": i.title, "category": i.category,
                  "severity": i.severity, "score": float(i.score), "start": i.start, "end": i.end,
                  "cause": i.cause, "summary": i.summary, "findings": len(i.findings)}
                 for h in fleet.hosts for i in h.incidents]
    _write(_frame(incidents, ["host", "rank", "id", "title", "category", "severity", "score", "start", "end",
                              "cause", "summary", "findings"], ("start", "end")), base / "incidents.parquet")
    fleet_rows = [{"rank": i.rank, "id": i.id, "title": i.title, "kinds": list(i.kinds), "category": i.category,
                   "severity": i.severity, "score": float(i.score), "start": i.start, "end": i.end,
                   "hosts_seen": len(i.hosts), "hosts_total": len(i.hosts) + len(i.hosts_without),
                   "hosts": list(i.hosts), "hosts_without": list(i.hosts_without), "wall_clock": i.wall_clock}
                  for i in fleet.incidents]
    _write(_frame(fleet_rows, ["rank", "id", "title", "kinds", "category", "severity", "score", "start", "end",
                               "hosts_seen", "hosts_total", "hosts", "hosts_without", "wall_clock"],
                  ("start", "end")), base / "fleet_incidents.parquet")
    sources = [dict(s, host=h.host, reported_host=s.get("host")) for h in fleet.hosts for s in h.sources]
    _write(_frame(sources, ["host", "path", "kind", "reported_host", "start", "end", "records", "warnings"]),
           base / "sources.parquet")
    hosts = [{"host": h.host, "ok": h.ok, "error": h.error or None, "files": len(h.files),
              "hostname": h.facts.get("hostname"), "kernel": h.facts.get("kernel"), "ncpu": h.facts.get("ncpu"),
              "mem_total_kb": h.facts.get("mem_total_kb"), "zone": h.facts.get("zone"),
              "zone_from": h.facts.get("zone_from"), "bundle": h.facts.get("bundle"),
              "wall_clock": bool(h.facts.get("wall_clock", False)), "start": h.facts.get("start"),
              "end": h.facts.get("end"), "metric_values": h.facts.get("metric_values", 0),
              "events": h.facts.get("events", 0), "findings": len(h.findings), "incidents": len(h.incidents),
              "worst_severity": h.worst, "seconds": round(h.seconds, 4)} for h in fleet.hosts]
    hosts_frame = _frame(hosts, ["host", "ok", "error", "files", "hostname", "kernel", "ncpu", "mem_total_kb", "zone",
                                 "zone_from", "bundle", "wall_clock", "start", "end", "metric_values", "events",
                                 "findings", "incidents", "worst_severity", "seconds"])
    for col in ("ncpu", "mem_total_kb"):
        hosts_frame[col] = pd.to_numeric(hosts_frame[col], errors="coerce").astype("Int64")
    _write(hosts_frame, base / "hosts.parquet")
    limits = _frame([row for h in fleet.hosts for row in _limit_rows(h.host, h.host_facts)], LIMIT_COLUMNS)
    for col in ("line", "pid"):
        limits[col] = pd.to_numeric(limits[col], errors="coerce").astype("Int64")
    limits["number"] = pd.to_numeric(limits["number"], errors="coerce").astype("float64")
    _write(limits, base / "limits.parquet")
    summaries = [h.summary.assign(host=h.host) for h in fleet.hosts if h.summary is not None and len(h.summary)]
    if summaries:
        frame = pd.concat(summaries, ignore_index=True)
        frame["max_at"] = utc(frame["max_at"].map(_as_utc))
        _write(frame[["host", "section", "device", "metric", "samples", "mean", "max", "max_at"]],
               base / "summaries.parquet")
    present = [t for t in TABLES if (base / t).is_dir() or (base / f"{t}.parquet").is_file()]
    write_marker(base, {"sarsleuth_version": __version__, "tables": present, "hosts": [h.host for h in fleet.hosts],
                        "tolerance_seconds": fleet.tolerance_seconds, "warnings": list(fleet.warnings),
                        "notes": list(fleet.notes),
                        "unplaced": [{"path": p, "reason": r} for p, r in fleet.unplaced]})


def _limit_rows(host, facts) -> list:
    """One row per limit of a host's bundle facts (``HostFacts.to_dict()``)."""
    if not facts:
        return []

    def row(source, name, limit, pid=None):
        first = str(limit.get("value") or "").split()
        try:
            number = float(first[0]) if first else None
        except ValueError:
            number = None
        return {"host": host, "source": source, "name": name, "value": limit.get("value"), "number": number,
                "path": limit.get("path"), "line": limit.get("line"), "text": limit.get("text"),
                "conf": limit.get("conf"), "pid": pid}
    rows = [row("sysctl", name, limit) for name, limit in facts.get("limits", {}).items()]
    rows += [row("nginx", name, limit) for name, values in facts.get("nginx", {}).items() for limit in values]
    rows += [row(f"process:{command}", name, limit, proc.get("pid"))
             for command, procs in facts.get("processes", {}).items() for proc in procs
             for name, limit in proc.get("limits", {}).items()]
    return rows


def source_row(s) -> dict:
    """What the tables keep of a source: where, what, when, how much."""
    start, end = s.span()
    return {"path": s.path, "kind": s.kind, "host": s.host, "start": iso(start), "end": iso(end),
            "records": int(s.records), "warnings": list(s.warnings)}
