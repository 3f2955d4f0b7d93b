"""wrk and wrk2 reports.

Both tools print the same summary; wrk2 adds "Thread calibration" lines, the
HdrHistogram latency blocks (recorded, and with ``-U`` uncorrected) with
their detailed spectrum and ``#[Mean/Max/Buckets]`` footers, and takes a
``-R`` rate.  One grammar pair (``grammars/wrk.lark``,
``grammars/wrk-document.lark``) reads both; each report's ``tool`` says
which one printed it.  wrk's ``m`` suffix means minutes.
"""
from __future__ import annotations

import re

from sarsleuth.inputs.parsers.base import ParseOptions
from sarsleuth.inputs.parsers.loadtest.grammars.reports import handle
from sarsleuth.inputs.parsers.loadtest.grammars import (parse_report_file, Statement, command_options, exact, find_command, human_seconds,
                       integer, metric_count, percentile_key, seconds, size_bytes)

GRAMMAR = "wrk"
PROGRAMS = ("wrk", "wrk2")

#: Statements a pasted wrk report can begin with.
REPORT_STARTS = {"command", "running", "threads_connections", "calibration", "stats_header",
                 "latency_distribution", "hdr_recorded", "unable_to_connect"}

#: wrk2 prints INT64_MAX/1000 as the calibration mean of a thread that never
#: got a response; such values are garbage, not latencies.
_INT64_GARBAGE_MS = 9.2e15

_ARGS_ONLY = re.compile(r"^\s*-{1,2}[A-Za-z][^\n]*\shttps?://\S+\s*$")


def parse_wrk_family(path, options: ParseOptions, kind: str):
    """Parse a wrk or wrk2 file into a Source of ``kind``."""
    return parse_report_file(path, options, kind, GRAMMAR, recognise_command, REPORT_STARTS,
                             lambda group: build_report(group, kind), summarise)


def recognise_command(text: str, line: int):
    """``wrk -t2 -c10 URL`` behind a prompt, or the bare argument list that
    some reports paste without the program name."""
    command = find_command(text, PROGRAMS)
    if command is None and _ARGS_ONLY.match(text) and re.search(r"(^|\s)-(t|c|d|R)\s?\S", text):
        command = text.strip()
    if command is None:
        return None
    return Statement(kind="command", fields={"command": command}, line=line, column=1, text=text)


def build_report(statements: list[Statement], kind: str) -> dict | None:
    """The report dict of one group of statements (None if it measured nothing)."""
    kinds = {s.kind for s in statements}
    if kinds <= {"command"}:
        return None
    report = _empty_report()
    report["_line"] = statements[0].line
    report["_bad"] = []
    state = {"block": "latency"}
    for statement in statements:
        if "interrupted" in statement.flags:
            report["interrupted"] = True
        try:
            handle(_HANDLERS.get(statement.kind, _ignore), report, statement, state)
        except (ValueError, KeyError, TypeError, ArithmeticError) as err:
            # the grammar accepted the line but a value is out of range
            report["_bad"].append((statement.line, f"{statement.kind.replace('_', ' ')}: {err}"))
    _finish(report, kinds, kind)
    if not report["complete"] and not report["aborted"] and not report["fragment"]:
        # a paste that stops before "N requests in ...": what it holds is read, the rest is not invented
        report["_bad"].append((statements[-1].line, f"{report['tool']} report cut short after this line, before its "
                                                   "totals ('N requests in ...', Requests/sec): read as far as it goes"))
    return report


def _empty_report() -> dict:
    return {
        "tool": None, "command": None, "url": None, "threads": None, "connections": None,
        "configured_duration_s": None, "target_rate_per_sec": None,
        "calibration_lines": 0, "calibration_int64max_lines": 0, "calibration_mean_latency_s": None,
        "_calibration": [],
        "latency_avg_s": None, "latency_stdev_s": None, "latency_max_s": None, "latency_within_stdev_pct": None,
        "req_per_thread_avg": None, "req_per_thread_stdev": None, "req_per_thread_max": None,
        "req_per_thread_within_stdev_pct": None,
        "requests_total": None, "duration_s": None, "bytes_read": None,
        "socket_errors": {"connect": 0, "read": 0, "write": 0, "timeout": 0},
        "non_2xx": 0, "requests_per_sec": None, "transfer_rate_Bps": None,
        "latency_spectrum": [], "uncorrected_latency_spectrum": [],
        "aborted": False, "abort_error": None, "interrupted": False,
        "complete": False, "truncated": False, "fragment": False,
    }


def _command(report, fields, state):
    report["command"] = fields["command"]
    options = command_options(fields["command"])
    if "-R" in options or "--rate" in options:
        report["target_rate_per_sec"] = _number(options.get("-R", options.get("--rate")))
    report["_options"] = options


def _number(value):
    try:
        number = float(str(value).rstrip("kK")) * (1000 if str(value)[-1:] in "kK" else 1)
    except (TypeError, ValueError):
        return None
    return int(number) if number.is_integer() else number


def _running(report, fields, state):
    report["configured_duration_s"] = _whole(seconds(fields["duration"]))
    report["url"] = fields["target"]


def _whole(value: float):
    return int(value) if float(value).is_integer() else value


def _threads(report, fields, state):
    report["threads"], report["connections"] = (integer(v) for v in fields["number"])


def _calibration(report, fields, state):
    report["calibration_lines"] += 1
    text = fields["mean_latency"]
    # the old format printed bare microseconds ("10087 usec"), the new one "1.464ms"
    mean = seconds(text) if re.search(r"[a-z]$", text) else exact(text, "0.000001")
    if mean * 1000 >= _INT64_GARBAGE_MS:
        report["calibration_int64max_lines"] += 1
        mean = None
    report["_calibration"].append(mean)


def _stats_row(prefix, convert, unit=""):
    def handler(report, fields, state):
        for name in ("avg", "stdev", "max"):
            report[f"{prefix}_{name}{unit}"] = convert(fields[name])
        within = fields["within"].rstrip("%")
        # "-nan%": wrk had no sample to spread (no request answered)
        report[f"{prefix}_within_stdev_pct"] = None if within.lstrip("-") == "nan" else float(within)
    return handler


def _latency_value(text: str) -> float:
    return seconds(text) if re.search(r"[a-z]$", text) else exact(text, "0.001")


def _block(name):
    def handler(report, fields, state):
        state["block"] = name
    return handler


def _percentile(report, fields, state):
    prefix = "uncorrected_latency" if state["block"] == "uncorrected" else "latency"
    report[f"{prefix}_p{percentile_key(fields['percent'])}_s"] = seconds(fields["duration"])


def _spectrum_row(report, fields, state):
    value, percentile, count = fields["number"][:3]
    key = "uncorrected_latency_spectrum" if state["block"] == "uncorrected" else "latency_spectrum"
    report[key].append([exact(value, "0.001"), float(percentile), integer(count)])


def _hdr_prefix(state) -> str:
    return "uncorrected_hdr" if state["block"] == "uncorrected" else "hdr"


def _hdr_mean(report, fields, state):
    mean, stddev = fields["number"]
    report[f"{_hdr_prefix(state)}_mean_s"] = exact(mean, "0.001")
    report[f"{_hdr_prefix(state)}_stddev_s"] = exact(stddev, "0.001")


def _hdr_max(report, fields, state):
    top, count = fields["number"]
    report[f"{_hdr_prefix(state)}_max_s"] = exact(top, "0.001")
    report[f"{_hdr_prefix(state)}_total_count"] = integer(count)


def _requests_summary(report, fields, state):
    report["requests_total"] = integer(fields["number"])
    report["duration_s"] = seconds(fields["duration"])
    report["bytes_read"] = size_bytes(fields["size"])


def _socket_errors(report, fields, state):
    report["socket_errors"] = {k: integer(fields[k]) for k in ("connect", "read", "write", "timeout")}


def _set(key, convert):
    def handler(report, fields, state):
        report[key] = convert(fields)
    return handler


def _unable(report, fields, state):
    report["aborted"] = True
    report["abort_error"] = f"unable to connect to {fields['text']}"


def _ignore(report, fields, state):
    return None


_HANDLERS = {
    "command": _command,
    "running": _running,
    "threads_connections": _threads,
    "calibration": _calibration,
    "latency_stats": _stats_row("latency", _latency_value, "_s"),
    "req_stats": _stats_row("req_per_thread", metric_count),
    "latency_distribution": _block("latency"),
    "hdr_recorded": _block("latency"),
    "hdr_uncorrected": _block("uncorrected"),
    "percentile": _percentile,
    "spectrum_row": _spectrum_row,
    "hdr_mean": _hdr_mean,
    "hdr_max": _hdr_max,
    "requests_summary": _requests_summary,
    "socket_errors": _socket_errors,
    "non_2xx": _set("non_2xx", lambda f: integer(f["number"])),
    "requests_per_sec": _set("requests_per_sec", lambda f: float(f["number"])),
    "transfer_per_sec": _set("transfer_rate_Bps", lambda f: size_bytes(f["size"])),
    "unable_to_connect": _unable,
}

_WRK2_KINDS = {"calibration", "hdr_recorded", "hdr_uncorrected", "spectrum_row", "hdr_mean"}


def _finish(report: dict, kinds: set, kind: str) -> None:
    options = report.pop("_options", {})
    calibration = report.pop("_calibration")
    if len(calibration) == 1:
        report["calibration_mean_latency_s"] = calibration[0]
    elif calibration:
        report["calibration_mean_latency_s"] = calibration
    uses_rate = "-R" in options or "--rate" in options
    report["tool"] = "wrk2" if kinds & _WRK2_KINDS or uses_rate else ("wrk" if kind == "wrk" or kinds & {"latency_distribution"} else kind)
    report["fragment"] = not kinds & {"running", "threads_connections", "requests_summary", "requests_per_sec",
                                      "unable_to_connect"}
    report["complete"] = report["requests_total"] is not None and not report["aborted"]
    report["truncated"] = report["complete"] and not {"requests_per_sec", "transfer_per_sec"} <= kinds
    if report["threads"] is None and "-t" in options:
        report["threads"] = _number(options["-t"])
    if report["connections"] is None and "-c" in options:
        report["connections"] = _number(options["-c"])
    if report["configured_duration_s"] is None and "-d" in options:
        try:
            report["configured_duration_s"] = _whole(seconds(str(options["-d"])))
        except (ValueError, KeyError):
            pass
    if report["url"] is None:
        report["url"] = options.get("url")
    if report["aborted"] or report["fragment"]:
        report["socket_errors"] = report["socket_errors"] if "socket_errors" in kinds else None
        report["non_2xx"] = report["non_2xx"] if "non_2xx" in kinds else None
    if not report["latency_spectrum"]:
        report["latency_spectrum"] = None
    if not report["uncorrected_latency_spectrum"]:
        report["uncorrected_latency_spectrum"] = None


def summarise(report: dict) -> str:
    """One line for the event table."""
    tool = report.get("tool") or "wrk"
    where = f" c={report['connections']}" if report.get("connections") is not None else ""
    if report.get("aborted"):
        return f"{tool}{where} aborted: {report.get('abort_error')}"
    parts = [f"{tool}{where}"]
    if report.get("requests_per_sec") is not None:
        parts.append(f"{report['requests_per_sec']:g} req/s")
    if report.get("target_rate_per_sec") is not None:
        parts.append(f"target {report['target_rate_per_sec']:g}/s")
    errors = report.get("socket_errors") or {}
    if any(errors.values()):
        parts.append("socket errors " + ", ".join(f"{k} {v}" for k, v in errors.items() if v))
    if report.get("non_2xx"):
        parts.append(f"{report['non_2xx']} non-2xx/3xx")
    if report.get("latency_p99_s") is not None:
        parts.append(f"p99 {human_seconds(report['latency_p99_s'])}")
    elif report.get("latency_max_s") is not None:
        parts.append(f"max {human_seconds(report['latency_max_s'])}")
    return ", ".join(parts)
