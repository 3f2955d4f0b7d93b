"""ApacheBench (``ab``) reports: banner, progress, results, aborts.

The statements and their order are lark grammars (``grammars/ab.lark`` and
``grammars/ab-document.lark``); this module turns the recognised statements
of each report into the report dict of the contract (seconds, bytes, bytes/s;
``[Kbytes/sec]`` and ``kb/s`` are 1024 bytes/s because ab divides by 1024).
A file may hold several pasted reports; each becomes one dict.
"""
from __future__ import annotations

from sarsleuth.inputs.parsers.base import ParseOptions
from sarsleuth.inputs.parsers.loadtest.grammars.reports import handle
from sarsleuth.inputs.parsers.loadtest.grammars import (parse_report_file, Statement, command_options, exact, find_command, human_seconds,
                       integer)

GRAMMAR = "ab"
PROGRAMS = ("ab", "abs", "ab2")

#: Statements a pasted ab report can begin with.
REPORT_STARTS = {"command", "banner", "copyright", "benchmarking", "completed", "server_software",
                 "server_hostname", "document_path", "concurrency_level", "time_taken"}

#: Fields every complete ab report has, with their value when ab omits the line.
_ABSENT_MEANS_ZERO = ("non_2xx", "write_errors")


def parse_ab(path, options: ParseOptions):
    """Every ab report of a file, as a Source."""
    return parse_report_file(path, options, "ab", GRAMMAR, recognise_command, REPORT_STARTS,
                             build_report, summarise)


def recognise_command(text: str, line: int):
    """A pasted ``ab ...`` command line (behind any prompt) is a statement."""
    command = find_command(text, PROGRAMS)
    if command is None:
        return None
    return Statement(kind="command", fields={"command": command}, line=line, column=1, text=text)


def build_report(statements: list[Statement]) -> dict | None:
    """The report dict of one group of statements, or None when the group
    holds no measurement (a stray banner or command line)."""
    kinds = {s.kind for s in statements}
    if not kinds & {"concurrency_level", "time_taken", "complete_requests", "requests_per_second",
                    "percentile_row", "apr_error", "test_aborted", "total_of", "completed"}:
        return None
    report = _empty_report()
    report["_line"] = statements[0].line
    report["_bad"] = []
    for statement in statements:
        try:
            handle(_HANDLERS.get(statement.kind, _ignore), report, statement)
        except (ValueError, KeyError, TypeError, ArithmeticError) as err:
            # the grammar accepted the line but a value is out of range
            report["_bad"].append((statement.line, f"{statement.kind.replace('_', ' ')}: {err}"))
    _finish(report, kinds)
    return report


def _empty_report() -> dict:
    return {
        "tool": "ab", "ab_version": None, "command": None, "header_present": False,
        "server_software": None, "server_hostname": None, "server_port": None,
        "ssl_protocol": None, "server_temp_key": None, "tls_server_name": None,
        "document_path": None, "document_length_bytes": None,
        "concurrency": None, "requests": None, "duration_s": None,
        "requests_completed": None, "failed_requests": None,
        "failed_breakdown": {"connect": 0, "receive": 0, "length": 0, "exceptions": 0},
        "write_errors": None, "non_2xx": None, "keepalive_requests": None,
        "total_transferred_bytes": None, "total_body_sent_bytes": None, "html_transferred_bytes": None,
        "requests_per_sec": None, "time_per_request_mean_s": None, "time_per_request_across_s": None,
        "transfer_rate_Bps": None, "sent_rate_Bps": None, "total_rate_Bps": None,
        "connection_times_s": {}, "latency_percentiles_s": {},
        "latency_p50_s": None, "latency_p66_s": None, "latency_p75_s": None, "latency_p80_s": None,
        "latency_p90_s": None, "latency_p95_s": None, "latency_p98_s": None, "latency_p99_s": None,
        "latency_max_s": None, "reliability_warning": None,
        "progress_lines": 0, "progress_last_completed": None, "ssl_handshake_failed_lines": 0,
        "aborted": False, "abort_error": None, "abort_errno": None, "complete": False,
    }


def _ms(text) -> float:
    return exact(text, "0.001")


def _kib(text) -> float:
    return exact(text, 1024)


def _set(key, convert=integer, field="number"):
    def handler(report, fields):
        report[key] = convert(fields[field])
    return handler


def _banner(report, fields):
    report["ab_version"] = fields["version"]
    report["header_present"] = True


def _command(report, fields):
    report["command"] = fields["command"]
    options = command_options(fields["command"])
    if report["concurrency"] is None and "-c" in options:
        report["concurrency"] = _int_or_none(options["-c"])
    if "-n" in options:
        report["requests"] = _int_or_none(options["-n"])
    report["keepalive_option"] = "-k" in options


def _int_or_none(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _completed(report, fields):
    report["progress_lines"] += 1
    report["progress_last_completed"] = integer(fields["number"])


def _apr_error(report, fields):
    report["aborted"] = True
    if report["abort_error"] is None:
        report["abort_error"] = f"{fields['apr_call']} {fields['message'].strip()}"
        report["abort_errno"] = integer(fields["number"])


def _test_aborted(report, fields):
    report["aborted"] = True
    if report["abort_error"] is None:
        report["abort_error"] = f"Test aborted after {fields['number']} failures"


def _breakdown(report, fields):
    for key in ("connect", "receive", "length", "exceptions"):
        if key in fields:
            report["failed_breakdown"][key] = integer(fields[key])


def _document_length(report, fields):
    report["document_length_bytes"] = integer(fields["number"]) if "number" in fields else None


def _server_software(report, fields):
    report["server_software"] = fields.get("text", "")


def _phase_row(phase):
    def handler(report, fields):
        report["connection_times_s"][phase] = {k: _ms(v) for k, v in fields.items()}
    return handler


def _sanity(report, fields):
    level = fields["sane_level"].rstrip(":")
    what = fields["sane_what"]
    gap = "> 2 sd" if level == "ERROR" else "> 1 sd"
    note = f"{level}: {what} (median/mean {gap} apart)"
    report["reliability_warning"] = note if report["reliability_warning"] is None \
        else f"{report['reliability_warning']}; {note}"


def _percentile(report, fields):
    pct = int(fields["percent"].rstrip("%"))
    value = _ms(fields["number"])
    report["latency_percentiles_s"][pct] = value
    if pct == 100:
        report["latency_max_s"] = value
    else:
        report[f"latency_p{pct}_s"] = value


def _ignore(report, fields):
    return None


def _ssl_failed(report, fields):
    report["ssl_handshake_failed_lines"] += 1


def _set_text(key):
    def handler(report, fields):
        report[key] = fields.get("text", "")
    return handler


_HANDLERS = {
    "command": _command,
    "banner": _banner,
    "completed": _completed,
    "ssl_failed": _ssl_failed,
    "apr_error": _apr_error,
    "test_aborted": _test_aborted,
    "total_of": _set("requests_completed"),
    "server_software": _server_software,
    "server_hostname": _set_text("server_hostname"),
    "server_port": _set("server_port"),
    "ssl_protocol": _set_text("ssl_protocol"),
    "server_temp_key": _set_text("server_temp_key"),
    "tls_server_name": _set_text("tls_server_name"),
    "document_path": _set_text("document_path"),
    "document_length": _document_length,
    "concurrency_level": _set("concurrency"),
    "time_taken": _set("duration_s", float),
    "complete_requests": _set("requests_completed"),
    "failed_requests": _set("failed_requests"),
    "failed_breakdown": _breakdown,
    "write_errors": _set("write_errors"),
    "keepalive_requests": _set("keepalive_requests"),
    "non_2xx": _set("non_2xx"),
    "total_transferred": _set("total_transferred_bytes"),
    "total_body_sent": _set("total_body_sent_bytes"),
    "html_transferred": _set("html_transferred_bytes"),
    "requests_per_second": _set("requests_per_sec", float),
    "time_per_request": _set("time_per_request_mean_s", _ms),
    "time_per_request_across": _set("time_per_request_across_s", _ms),
    "transfer_rate": _set("transfer_rate_Bps", _kib),
    "rate_sent": _set("sent_rate_Bps", _kib),
    "rate_total": _set("total_rate_Bps", _kib),
    "connect_row": _phase_row("connect"),
    "processing_row": _phase_row("processing"),
    "waiting_row": _phase_row("waiting"),
    "total_row": _phase_row("total"),
    "sanity_check": _sanity,
    "percentile_row": _percentile,
}


def _finish(report: dict, kinds: set) -> None:
    """Derived fields: completeness, the zero defaults of omitted counters."""
    report["complete"] = "requests_per_second" in kinds or "complete_requests" in kinds
    report.pop("keepalive_option", None)
    if report["aborted"]:
        report["complete"] = False
        if report["requests_completed"] is None:
            # ab prints "Total of N requests completed" only when N > 0
            report["requests_completed"] = 0
        return
    if report["complete"]:
        for key in _ABSENT_MEANS_ZERO:
            if report[key] is None:
                report[key] = 0
        if report["failed_requests"] is None:
            report["failed_requests"] = 0
    if report["requests"] is None:
        report["requests"] = report["requests_completed"]


def summarise(report: dict) -> str:
    """One line for the event table."""
    where = f" c={report['concurrency']}" if report.get("concurrency") is not None else ""
    if report.get("aborted"):
        done = report.get("requests_completed")
        return f"ab{where} aborted: {report.get('abort_error')} after {done} requests"
    parts = [f"ab{where}"]
    if report.get("requests_per_sec") is not None:
        parts.append(f"{report['requests_per_sec']:g} req/s")
    if report.get("requests_completed") is not None:
        parts.append(f"{report['requests_completed']} requests")
    parts.append(f"{report.get('failed_requests') or 0} failed")
    if report.get("non_2xx"):
        parts.append(f"{report['non_2xx']} non-2xx")
    if report.get("latency_p50_s") is not None and report.get("latency_p99_s") is not None:
        parts.append(f"p50 {human_seconds(report['latency_p50_s'])}, p99 {human_seconds(report['latency_p99_s'])}")
    return ", ".join(parts)
