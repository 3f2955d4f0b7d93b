"""Report dicts placed on the clock and gathered into a Source."""
from __future__ import annotations

import pandas as pd

from sarsleuth.errors import InputError, located
from sarsleuth.model import Source, quoted
from sarsleuth.inputs.parsers.base import events_frame, metrics_frame
from sarsleuth.inputs.parsers.loadtest.grammars import Reading, read_document
from sarsleuth.inputs.reading import file_mtime, whole_text_lines

# turning report dicts into a Source

def report_clock(path, options):
    """Where reports without their own timestamps sit on the timeline:
    ``(start, end, time_from)``: the file's mtime, an instant (UTC) that the
    case puts on its host's clock.  It is a guess (the file was written when
    the run ended), so ``time_from`` says so."""
    mtime = file_mtime(path)
    return mtime, mtime, "mtime"


#: The longest load-test run a report is placed by (a year).
MAX_RUN_SECONDS = 366 * 86400.0


def place_report(report: dict, path, line: int, clock) -> None:
    """Fill ``path``, ``line``, ``start``, ``end`` and ``time_from`` of a report
    without timestamps: the file was written when the run ended."""
    start, end, time_from = clock
    report["path"] = str(path)
    report["line"] = line
    duration = report.get("duration_s")
    # a run longer than a year (or shorter than none) is a damaged number, not a time to place it by
    if (time_from == "mtime" and isinstance(duration, (int, float)) and duration == duration
            and 0 <= duration <= MAX_RUN_SECONDS):
        report["end"] = end
        report["start"] = end - pd.Timedelta(seconds=float(duration))
    else:
        report["start"], report["end"] = start, end
    report["time_from"] = time_from


def build_source(path, kind: str, reports: list, warnings: list, summarise, *,
                 host=None, metrics=None, meta=None, records=0):
    """A Source with one ``loadtest-run`` event per report."""
    events = [{
        "timestamp": r.get("start"), "host": host, "source": r.get("tool", kind), "kind": "loadtest-run",
        "pid": None, "process": r.get("tool", kind), "message": summarise(r), "file": str(path),
        "line": r.get("line"), "level": "info" if not r.get("aborted") else "error",
    } for r in reports]
    source = Source(path=str(path), kind=kind, host=host, reports=reports, warnings=warnings,
                    events=events_frame(events), metrics=metrics if metrics is not None else metrics_frame(),
                    records=records or len(reports), meta=meta or {})
    return source


def problems_as_warnings(path, problems) -> list:
    return [located(path, p.describe(), line=p.line) for p in problems]


def fail_without_reports(path, tool: str, reading: Reading):
    """Raise the InputError of a file where no report of ``tool`` remains,
    naming the first syntax problem (line and column) when there is one."""
    if reading.problems:
        first = reading.problems[0]
        raise InputError(path, f"malformed {tool} report: {first.describe()}", line=first.line)
    raise InputError(path, f"no {tool} report found", line=1)


def numbered_lines(path, warnings: list):
    """``(line_number, text)`` of a small report file (decompressed),
    refused past the size a document read whole may have."""
    return whole_text_lines(path, warnings, "load-test reports and ps snapshots")


def human_seconds(value) -> str:
    """``0.264`` -> ``'264 ms'``, ``1157.4`` -> ``'1157.4 s'`` (for messages)."""
    if value is None:
        return "?"
    if value < 0.001:
        return f"{value * 1e6:.4g} us"
    if value < 1:
        return f"{value * 1000:.4g} ms"
    return f"{value:.5g} s"


def parse_report_file(path, options, kind: str, grammar: str, recognise_command, starts, build_report, summarise):
    """Read a file of one tool's reports (ab, httperf, wrk, wrk2): statements,
    reports split and built, placed on the clock, gathered into a Source.
    ``build_report`` turns one statement group into a report dict or None."""
    warnings: list = []
    reading = read_document(grammar, numbered_lines(path, warnings), recognise_command, starts)
    reports = [r for r in (build_report(group) for group in reading.reports) if r is not None]
    if not reports:
        fail_without_reports(path, kind, reading)
    warnings += problems_as_warnings(path, reading.problems)
    clock = report_clock(path, options)
    for report in reports:
        warnings += [located(path, message, line=line) for line, message in report.pop("_bad")]
        place_report(report, path, report.pop("_line"), clock)
    return build_source(path, kind, reports, warnings, summarise, records=len(reports))


def handle(handler, report: dict, statement, *args) -> None:
    """Run a statement's handler on ``report`` and note, for every value it
    set, the line it was read from: ``report["value_lines"][key]`` is
    ``{"line": n, "text": the line verbatim}``, so evidence quotes the
    value's own line (ab's ``Transfer rate:``), not the report's first."""
    before = {k: repr(v) for k, v in report.items() if k != "value_lines"}
    handler(report, statement.fields, *args)
    lines = report.setdefault("value_lines", {})
    where = None
    for key, value in report.items():
        if key != "value_lines" and before.get(key) != repr(value):
            if where is None:
                where = {"line": statement.line, "text": quoted(statement.text)}
            lines[key] = where
