"""Comparing load-test runs.

``compare_reports`` lines up every run found in ab, wrk, wrk2 and httperf
reports (one row per run, whatever the tool), so runs at different
concurrencies, or before and after a fix, can be read side by side
(:mod:`sarsleuth.render.comparison` shows and draws that table).
"""
from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from sarsleuth.model import Source
from sarsleuth.inputs.parsers import parse
from sarsleuth.inputs.folders import files_under

#: Columns of the comparison table, in order.
COMPARISON_COLUMNS = [
    "file", "line", "tool", "label", "concurrency", "requests", "requests_per_sec",
    "latency_p50_s", "latency_p90_s", "latency_p99_s", "latency_max_s",
    "failures", "non_2xx", "transfer_rate_Bps", "duration_s", "aborted",
]

#: Tools whose reports describe a run (tsar reports are monitoring tables).
RUN_TOOLS = ("ab", "wrk", "wrk2", "httperf")


def _sources(paths_or_sources):
    """Sources from paths (files or directories, sniffed by content),
    Source objects, or report dicts (wrapped as they are)."""
    for item in paths_or_sources:
        if isinstance(item, Source):
            yield item
        elif isinstance(item, dict):
            yield Source(path=str(item.get("path", "")), kind=item.get("tool", ""), reports=[item])
        else:
            for path in files_under([os.fspath(item)]):
                yield parse(path)


def compare_reports(paths_or_sources, redactor=None):
    """One row per load-test run found in the inputs (see
    :data:`COMPARISON_COLUMNS`); latencies in seconds, rates per second,
    transfer in bytes/s.  Inputs that are not load-test reports raise
    :class:`~sarsleuth.errors.InputError` from the parser.  ``redactor``
    (:class:`~sarsleuth.redaction.Redactor`): names in the runs' files,
    servers and commands become stand-ins.  The parsers' warnings (a value
    out of any measured range, left out) are ``frame.attrs["warnings"]``."""
    rows, warnings = [], []
    for source in _sources(paths_or_sources if isinstance(paths_or_sources, (list, tuple)) else [paths_or_sources]):
        warnings.extend(source.warnings)
        for report in source.reports:
            if report.get("tool") in RUN_TOOLS:
                if redactor is not None:
                    redactor.host(report.get("host"), own=True)
                    for value in (source.path, *report.values()):
                        redactor.learn(value if isinstance(value, str) else "")
                rows.append(_comparison_row(source, report))
    if redactor is not None:
        rows = [{k: redactor.text(v) for k, v in row.items()} for row in rows]
    frame = pd.DataFrame(rows, columns=COMPARISON_COLUMNS)
    for col in ("concurrency", "requests", "failures", "non_2xx", "line"):
        frame[col] = pd.to_numeric(frame[col], errors="coerce").astype("Int64")
    for col in ("requests_per_sec", "latency_p50_s", "latency_p90_s", "latency_p99_s", "latency_max_s",
                "transfer_rate_Bps", "duration_s"):
        frame[col] = pd.to_numeric(frame[col], errors="coerce").astype("float64")
    frame["aborted"] = frame["aborted"].fillna(False).astype(bool)
    frame.attrs["warnings"] = [redactor.text(w) for w in warnings] if redactor is not None else warnings
    return frame


def _comparison_row(source, report: dict) -> dict:
    tool = report.get("tool")
    path = report.get("path") or source.path
    row = {
        "file": Path(path).name if path else "",
        "line": report.get("line"),
        "tool": tool,
        "concurrency": _concurrency(report),
        "requests": _requests(report),
        "requests_per_sec": report.get("requests_per_sec"),
        "latency_p50_s": report.get("latency_p50_s"),
        "latency_p90_s": report.get("latency_p90_s"),
        "latency_p99_s": report.get("latency_p99_s"),
        "latency_max_s": report.get("latency_max_s"),
        "failures": _failures(report),
        "non_2xx": report.get("non_2xx"),
        "transfer_rate_Bps": report.get("transfer_rate_Bps", report.get("net_io_Bps")),
        "duration_s": report.get("duration_s"),
        "aborted": bool(report.get("aborted")),
    }
    if tool == "httperf":
        row["latency_p50_s"] = report.get("reply_time_response_s")
        row["latency_max_s"] = report.get("connection_time_max_s")
    label = f"{row['file']}:{row['line']}" if row["line"] is not None else row["file"]
    row["label"] = label
    return row


def _concurrency(report: dict):
    for key in ("concurrency", "connections_concurrent", "max_concurrent_connections"):
        if report.get(key) is not None:
            return report[key]
    if report.get("tool") in ("wrk", "wrk2"):
        return report.get("connections")
    return None


def _requests(report: dict):
    for key in ("requests_completed", "requests_total", "requests"):
        if report.get(key) is not None:
            return report[key]
    return None


def _failures(report: dict):
    """The tool's own failure count: ab failed requests, wrk socket errors,
    httperf errors."""
    tool = report.get("tool")
    if tool == "ab":
        return report.get("failed_requests")
    if tool in ("wrk", "wrk2"):
        errors = report.get("socket_errors")
        return sum(errors.values()) if isinstance(errors, dict) else None
    if tool == "httperf":
        return report.get("errors_total")
    return None
