"""httperf reports: every section of the final statistics.

Statements and their order are ``grammars/httperf.lark`` and
``grammars/httperf-document.lark``.  ``requests_per_sec`` is httperf's
"Request rate" (requests *sent*); ``goodput_replies_per_sec`` is computed as
replies / test-duration, because a short run has no reply-rate samples and a
timed-out run sends requests that never succeed.
"""
from __future__ import annotations

from sarsleuth.inputs.parsers.base import ParseOptions
from sarsleuth.inputs.parsers.loadtest.grammars.reports import handle
from sarsleuth.inputs.parsers.loadtest.grammars import (parse_report_file, Statement, command_options, exact, find_command,
                       human_seconds, integer)

GRAMMAR = "httperf"

#: Statements an httperf report can begin with.
REPORT_STARTS = {"command", "warning", "max_burst", "total"}

_ERROR_KEYS = ("client_timo", "socket_timo", "connrefused", "connreset", "fd_unavail", "addrunavail",
               "ftab_full", "other")


def parse_httperf(path, options: ParseOptions):
    """Every httperf report of a file, as a Source."""
    return parse_report_file(path, options, "httperf", GRAMMAR, recognise_command, REPORT_STARTS,
                             build_report, summarise)


def recognise_command(text: str, line: int):
    """The typed command and httperf's own echo of it are both statements."""
    command = find_command(text, ("httperf",))
    if command is None:
        return None
    return Statement(kind="command", fields={"command": command}, line=line, column=1, text=text)


def build_report(statements: list[Statement]) -> dict | None:
    kinds = {s.kind for s in statements}
    if kinds <= {"command", "warning"}:
        return None
    report = _empty_report()
    report["_line"] = statements[0].line
    report["_bad"] = []
    for statement in statements:
        if "interrupted" in statement.flags:
            report["interrupted"] = True
        try:
            handle(_HANDLERS.get(statement.kind, _ignore), report, statement)
        except (ValueError, KeyError, TypeError, ArithmeticError) as err:
            # the grammar accepted the line but a value is out of range
            report["_bad"].append((statement.line, f"{statement.kind.replace('_', ' ')}: {err}"))
    _finish(report, kinds)
    return report


def _empty_report() -> dict:
    report = {
        "tool": "httperf", "command": None, "server": None, "uri": None, "rate_option_per_sec": None,
        "num_conns_option": None, "num_calls_option": None,
        "fd_setsize_warning": False, "interrupted": False, "complete": False, "aborted": False,
        "max_connect_burst": None, "connections": None, "requests": None, "replies": None, "duration_s": None,
        "connection_rate_per_sec": None, "connection_period_s": None, "max_concurrent_connections": None,
        "connection_time_min_s": None, "connection_time_avg_s": None, "connection_time_max_s": None,
        "connection_time_median_s": None, "connection_time_stddev_s": None, "connect_time_avg_s": None,
        "replies_per_connection": None, "requests_per_sec": None, "request_period_s": None,
        "request_size_bytes": None, "reply_rate_min": None, "reply_rate_avg": None, "reply_rate_max": None,
        "reply_rate_stddev": None, "reply_rate_samples": None, "reply_time_response_s": None,
        "reply_time_transfer_s": None, "reply_size_header_bytes": None, "reply_size_content_bytes": None,
        "reply_size_footer_bytes": None, "reply_size_total_bytes": None,
        "cpu_user_s": None, "cpu_system_s": None, "cpu_user_pct": None, "cpu_system_pct": None,
        "cpu_total_pct": None, "net_io_Bps": None, "net_io_bps_reported": None,
        "errors_total": None, "errors": None, "non_2xx": None, "goodput_replies_per_sec": None,
        "warnings": [],
    }
    for code in range(1, 6):
        report[f"status_{code}xx"] = None
    return report


def _ms(text) -> float:
    return exact(text, "0.001")


def _command(report, fields):
    report["command"] = fields["command"]
    options = command_options(fields["command"])
    report["server"] = options.get("--server", report["server"])
    report["uri"] = options.get("--uri", report["uri"])
    for option, key in (("--rate", "rate_option_per_sec"), ("--num-conns", "num_conns_option"),
                        ("--num-calls", "num_calls_option")):
        if option in options:
            try:
                number = float(options[option])
                report[key] = int(number) if number.is_integer() else number
            except (TypeError, ValueError):
                pass


def _warning(report, fields):
    text = fields.get("text", "")
    report["warnings"].append(text)
    if "FD_SETSIZE" in text:
        report["fd_setsize_warning"] = True


def _total(report, fields):
    for key in ("connections", "requests", "replies"):
        report[key] = integer(fields[key])
    report["duration_s"] = float(fields["duration"])


def _connection_rate(report, fields):
    report["connection_rate_per_sec"] = float(fields["rate"])
    report["connection_period_s"] = _ms(fields["period"])
    report["max_concurrent_connections"] = integer(fields["concurrent"])


def _connection_time(report, fields):
    for key in ("min", "avg", "max", "median", "stddev"):
        report[f"connection_time_{key}_s"] = _ms(fields[key])


def _request_rate(report, fields):
    report["requests_per_sec"] = float(fields["rate"])
    report["request_period_s"] = _ms(fields["period"])


def _reply_rate(report, fields):
    for key in ("min", "avg", "max", "stddev"):
        report[f"reply_rate_{key}"] = float(fields[key])
    report["reply_rate_samples"] = integer(fields["samples"])


def _reply_time(report, fields):
    report["reply_time_response_s"] = _ms(fields["response"])
    report["reply_time_transfer_s"] = _ms(fields["transfer"])


def _reply_size(report, fields):
    for key in ("header", "content", "footer"):
        report[f"reply_size_{key}_bytes"] = float(fields[key])
    report["reply_size_total_bytes"] = float(fields["total_size"])


def _reply_status(report, fields):
    counts = fields["status_count"]
    for item in counts if isinstance(counts, list) else [counts]:
        code, _, number = item.partition("=")
        report[f"status_{code}"] = integer(number)


def _cpu_time(report, fields):
    report["cpu_user_s"] = float(fields["user"])
    report["cpu_system_s"] = float(fields["system"])
    user, system, total = (float(p.rstrip("%")) for p in fields["percent"])
    report.update(cpu_user_pct=user, cpu_system_pct=system, cpu_total_pct=total)


def _net_io(report, fields):
    report["net_io_Bps"] = exact(fields["kbps"], 1024)
    report["net_io_bps_reported"] = exact(fields["mbps"], 1000000)


def _errors(report, fields):
    errors = report["errors"] or {}
    for key in _ERROR_KEYS:
        if key in fields:
            errors[key] = integer(fields[key])
    if "total_errors" in fields:
        report["errors_total"] = integer(fields["total_errors"])
    report["errors"] = errors


def _session_rate(report, fields):
    for key in ("min", "avg", "max", "stddev"):
        report[f"session_rate_{key}"] = float(fields[key])
    report["sessions_ok"] = integer(fields["ok_sessions"])
    report["sessions_total"] = integer(fields["all_sessions"])


def _session_histogram(report, fields):
    numbers = fields.get("number", [])
    report["session_length_histogram"] = [integer(n) for n in (numbers if isinstance(numbers, list) else [numbers])]


def _set(key, convert):
    def handler(report, fields):
        report[key] = convert(fields["number"])
    return handler


def _ignore(report, fields):
    return None


_HANDLERS = {
    "command": _command,
    "warning": _warning,
    "max_burst": _set("max_connect_burst", integer),
    "total": _total,
    "connection_rate": _connection_rate,
    "connection_time": _connection_time,
    "connect_time": _set("connect_time_avg_s", _ms),
    "connection_length": _set("replies_per_connection", float),
    "request_rate": _request_rate,
    "request_size": _set("request_size_bytes", float),
    "reply_rate": _reply_rate,
    "reply_time": _reply_time,
    "reply_size": _reply_size,
    "reply_status": _reply_status,
    "cpu_time": _cpu_time,
    "net_io": _net_io,
    "errors_main": _errors,
    "errors_more": _errors,
    "session_rate": _session_rate,
    "session_avg": _set("session_connections_avg", float),
    "session_lifetime": _set("session_lifetime_s", float),
    "session_failtime": _set("session_failtime_s", float),
    "session_histogram": _session_histogram,
}


def _finish(report: dict, kinds: set) -> None:
    report["complete"] = "total" in kinds
    statuses = [report[f"status_{c}xx"] for c in (1, 3, 4, 5)]
    if "reply_status" in kinds:
        report["non_2xx"] = sum(s or 0 for s in statuses)
    if report["errors"] is not None:
        report["errors"] = {key: report["errors"].get(key, 0) for key in _ERROR_KEYS}
    duration, replies = report["duration_s"], report["replies"]
    if duration and replies is not None:
        report["goodput_replies_per_sec"] = replies / duration
    elif replies == 0:
        report["goodput_replies_per_sec"] = 0.0


def summarise(report: dict) -> str:
    """One line for the event table."""
    parts = ["httperf"]
    if report.get("requests_per_sec") is not None:
        parts.append(f"{report['requests_per_sec']:g} req/s sent")
    if report.get("goodput_replies_per_sec") is not None:
        parts.append(f"{report['goodput_replies_per_sec']:.4g} replies/s")
    if report.get("errors_total"):
        errors = ", ".join(f"{k} {v}" for k, v in (report.get("errors") or {}).items() if v)
        parts.append(f"{report['errors_total']} errors ({errors})")
    if report.get("non_2xx"):
        parts.append(f"{report['non_2xx']} non-2xx")
    if report.get("reply_time_response_s") is not None:
        parts.append(f"response {human_seconds(report['reply_time_response_s'])}")
    if report.get("interrupted"):
        parts.append("interrupted")
    return ", ".join(parts)
