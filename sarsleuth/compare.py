"""Comparing load-test runs, and the JSON form of one report.

``compare_reports`` lines up every run found in ab, wrk, wrk2 and httperf
reports (one row per run, whatever the tool), so runs at different
concurrencies, or before and after a fix, can be read side by side;
``plot_comparison`` draws that table.  ``report_json`` is what
``sarsleuth parse FILE --format json`` prints for a load-test report.
"""
from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from sarsleuth.model import Source
from sarsleuth.parsers import parse
from sarsleuth.render._table import Column, Table, number
from sarsleuth.render.json import plain
from sarsleuth.textio import walk_inputs

#: Columns of the comparison table, in order.
COMPARISON_COLUMNS = [
    "file", "line", "tool", "label", "concurrency", "requests", "requests_per_sec",
    "latency_p50_s", "latency_p90_s", "latency_p99_s", "latency_max_s",
    "failures", "non_2xx", "transfer_rate_Bps", "duration_s", "aborted",
]

#: Tools whose reports describe a run (tsar reports are monitoring tables).
RUN_TOOLS = ("ab", "wrk", "wrk2", "httperf")


def report_json(report: dict) -> dict:
    """A JSON-safe copy of a report dict: Timestamps become ISO 8601 strings,
    NaN and NaT become None, numpy scalars plain numbers, keys strings."""
    return plain(dict(report))


def _sources(paths_or_sources):
    """Sources from paths (files or directories, sniffed by content),
    Source objects, or report dicts (wrapped as they are)."""
    for item in paths_or_sources:
        if isinstance(item, Source):
            yield item
        elif isinstance(item, dict):
            yield Source(path=str(item.get("path", "")), kind=item.get("tool", ""), reports=[item])
        else:
            for path in walk_inputs([os.fspath(item)]):
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


def comparison_table(df):
    """The runs as a :class:`~sarsleuth.render._table.Table` for every output
    format: JSON gets every column of :data:`COMPARISON_COLUMNS` as is;
    people read latencies in ms and transfer in MB/s."""
    records = [plain(r) for r in df.to_dict("records")]

    def ms(name):
        return lambda r: number(r.get(name), 1000)

    def errors(r):
        if r.get("aborted"):
            return "aborted"
        return number(sum(float(r.get(k) or 0) for k in ("failures", "non_2xx")))

    columns = [
        Column("run", lambda r: f"{r.get('label') or ''} ({r.get('tool') or ''})"),
        Column("c", lambda r: number(r.get("concurrency")), numeric=True),
        Column("req/s", lambda r: number(r.get("requests_per_sec")), numeric=True),
        Column("p50", ms("latency_p50_s"), numeric=True), Column("p90", ms("latency_p90_s"), numeric=True),
        Column("p99", ms("latency_p99_s"), numeric=True), Column("max", ms("latency_max_s"), numeric=True),
        Column("errors", errors, numeric=True),
        Column("MB/s", lambda r: number(r.get("transfer_rate_Bps"), 1 / 2**20), numeric=True),
    ]
    return Table(title=f"{len(records)} load-test run(s)", columns=columns, records=records,
                 note="latencies in ms; errors: failed requests plus non-2xx responses; MB/s: 2^20 bytes/s")


def plot_comparison(df, ax=None):
    """Requests/s (bars, left axis) and p50/p90/p99/max latency in ms (lines,
    right axis) for each run, against concurrency when every run has a
    distinct one, else against the run's file and line.  Returns the Axes."""
    # matplotlib (a third of a second) loads only when a plot is drawn, never for analyze alone
    import matplotlib
    if ax is None:
        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
        _, ax = plt.subplots(figsize=(8, 4.5))
    if df is None or not len(df):
        ax.set_title("no load-test runs to compare")
        ax.set_xlabel("run")
        ax.set_ylabel("requests/s")
        return ax
    df = df.reset_index(drop=True)
    by_concurrency = df["concurrency"].notna().all() and df["concurrency"].is_unique
    if by_concurrency:
        df = df.sort_values("concurrency").reset_index(drop=True)
        labels = [str(int(c)) for c in df["concurrency"]]
        xlabel = "concurrency (connections)"
    else:
        labels = list(df["label"])
        xlabel = "run (file:line)"
    positions = list(range(len(df)))
    ax.bar(positions, df["requests_per_sec"].fillna(0.0), color="#4c78a8", alpha=0.8, label="requests/s")
    ax.set_xticks(positions)
    # file names are text: "$\mathbf{X}$" is drawn as written, never as TeX
    ax.set_xticklabels(labels, rotation=30 if not by_concurrency else 0, ha="right" if not by_concurrency else "center",
                       parse_math=False, usetex=False)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("requests/s")
    latency_ax = ax.twinx()
    for column, style in (("latency_p50_s", "o-"), ("latency_p90_s", "s-"), ("latency_p99_s", "^-"),
                          ("latency_max_s", "x--")):
        values = df[column] * 1000.0
        if values.notna().any():
            latency_ax.plot(positions, values, style, label=column.replace("latency_", "").replace("_s", ""))
    latency_ax.set_ylabel("latency (ms)")
    handles, names = ax.get_legend_handles_labels()
    more_handles, more_names = latency_ax.get_legend_handles_labels()
    ax.legend(handles + more_handles, names + more_names, loc="upper left", fontsize="small")
    ax.set_title("load-test runs compared")
    return ax
