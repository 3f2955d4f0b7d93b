"""tsar output: history and live tables, and ``--check`` lines.

Statements and their order are ``grammars/tsar.lark`` and
``grammars/tsar-document.lark``.  A table becomes one report (columns named
``module.field`` or ``module.item.field`` for per-device modules, first row,
summary rows, span) and a long metrics frame (section ``tsar-<module>``,
metric as tsar heads the column, device = the item).  K/M/G/T suffixes are
1024-based for every column.  Report keys carry units: ``_pct``, ``_bytes``,
``_Bps``, ``_pps``, ``_s`` (latencies printed in ms); counts have none.
"""
from __future__ import annotations

import re

import pandas as pd

from sarsleuth.errors import located
from sarsleuth.inputs.parsers.base import ParseOptions, metrics_frame
from sarsleuth.inputs.parsers.loadtest.grammars import (Statement, build_source, exact, fail_without_reports, numbered_lines,
                       problems_as_warnings, read_document, report_clock)

GRAMMAR = "tsar"

#: Statements a tsar output can begin with.
REPORT_STARTS = {"command", "header_modules", "header_columns", "check_line"}

_STAMP = re.compile(r"^\s*(\d\d)/(\d\d)/(\d\d)-(\d\d):(\d\d)(?::(\d\d))?(?=\s)")
_HEADER = re.compile(r"^\s*Time\s+(-+\w|[A-Za-z%])")
_COMMAND = re.compile(r"(?:^|[\s#$>\]])(tsar(?:\s+[^\n]*)?)$")
_PROMPT_HOST = re.compile(r"[\w.-]+@([\w.-]+)[\s:\]]")
_WRAPPED_TAIL = re.compile(r"[\w%./-]+(?:[ \t]+[\w%./-]+)*")
#: A wrapped header or row spans at most this many terminal lines.
_MAX_WRAP_PARTS = 3
_SUFFIX = {"K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}

#: Modules that tsar names itself; any other group name is an item (a disk,
#: an interface, a mount point) of a per-item module.
KNOWN_MODULES = {"cpu", "mem", "swap", "tcp", "udp", "traffic", "io", "pcsw", "tcpx", "load", "partition",
                 "pernic", "percpu", "proc", "nginx", "squid", "haproxy", "lvs", "apache", "php-fpm",
                 "ncpu", "ts_cache", "ts_conn", "ts_err", "ts_os", "ts_storage", "ts_client", "ts_codes",
                 "nginx_code", "nginx_domain", "cgcpu", "cgmem", "cgblkio", "lvs", "tmd", "haproxy", "ip", "icmp"}


def parse_tsar(path, options: ParseOptions):
    """Every tsar table and --check line of a file, as a Source."""
    warnings: list = []
    lines, wrapped = join_wrapped(numbered_lines(path, warnings))
    lines, cut = mark_cut_groups(lines)
    if cut:
        warnings.append(located(path, f"tsar printed {len(cut)} group name(s) as wide as their columns "
                                      f"(e.g. {cut[0][1]!r}), where it cuts longer names: those items "
                                      "are named as printed",
                                line=cut[0][0]))
    reading = read_document(GRAMMAR, lines, recognise_command, REPORT_STARTS)
    host = _prompt_host(lines)
    tables = [build_report(group, wrapped, host) for group in reading.reports]
    reports = _merge_checks([t for t in tables if t is not None])
    if not reports:
        fail_without_reports(path, "tsar", reading)
    warnings += problems_as_warnings(path, reading.problems)
    clock = report_clock(path, options)
    rows = []
    for report in reports:
        warnings += [located(path, message, line=line) for line, message in report["_problems"]]
        _place(report, path, clock, options)
        rows.extend(report.pop("_metric_rows"))
    host = host or next((r.get("host") for r in reports if r.get("host")), None)
    metrics = _metrics(rows, host, options)
    return build_source(path, "tsar", reports, warnings, summarise, host=host, metrics=metrics,
                        records=sum(r.get("rows", 0) or 1 for r in reports))


# --------------------------------------------------------------------------
# lines

def join_wrapped(lines: list) -> tuple[list, bool]:
    """Join rows that an 80-column terminal wrapped onto a second line: a
    line that is neither a header, a row, a summary nor a command, right after
    a header or row, continues it.  Returns (lines, whether any was joined)."""
    joined: list = []
    parts = 1
    wrapped = False
    for number, text in lines:
        if joined and parts < _MAX_WRAP_PARTS and _continues(joined[-1][1], text):
            parts += 1
            previous = joined[-1][1]
            glue = "" if previous.rstrip().endswith("-") and not text[:1].isspace() else " "
            joined[-1] = (joined[-1][0], previous + glue + text)
            wrapped = True
        else:
            joined.append((number, text))
            parts = 1
    return joined, wrapped


_GROUP_TOKEN = re.compile(r"-+[^\s-]+(?:-[^\s-]+)*-+")


def mark_cut_groups(lines: list) -> tuple[list, list]:
    """tsar centres each group name in dashes over its columns, but prints a
    name as long as the columns (``nvme0n1p1`` over one 8-character column)
    cut to that width and without dashes, or a name one shorter with a
    dash on the right only (``nvme0n1-``).  The group line is the first of
    the two ``Time`` lines tsar prints together; such names are given one
    dash each side there, so the grammar reads them as groups and their
    width still counts their columns.  Returns (lines, [(line, name)...])."""
    out, cut = [], []
    columns_line = False       # the line after a group line: never a group line itself
    for k, (number, text) in enumerate(lines):
        tokens = text.split()
        following = lines[k + 1][1].split() if k + 1 < len(lines) else []
        is_group_line = (not columns_line and len(tokens) > 1 and tokens[0] == "Time"
                         and following[:1] == ["Time"])
        columns_line = is_group_line
        if is_group_line and not all(_GROUP_TOKEN.fullmatch(t) for t in tokens[1:]):
            fixed = []
            for token in tokens[1:]:
                if _GROUP_TOKEN.fullmatch(token):
                    fixed.append(token)
                else:
                    if not token.startswith("-") and not token.endswith("-"):
                        cut.append((number, token))     # as wide as its columns: maybe cut
                    fixed.append(f"-{token}-")
            text = "Time " + " ".join(fixed)
        out.append((number, text))
    return out, cut


def _continues(previous: str, text: str) -> bool:
    if not text.strip() or len(text) > 4096 or not (_HEADER.match(previous) or _STAMP.match(previous)):
        return False
    stripped = text.strip()
    if _HEADER.match(text) or _STAMP.match(text) or re.match(r"(MAX|MEAN|MIN)\s", stripped):
        return False
    if "tsar" in stripped or "@" in stripped:
        return False
    # a wrapped header ends a dash group or lists column names; a wrapped row lists values
    return bool(_WRAPPED_TAIL.fullmatch(stripped))


def recognise_command(text: str, line: int):
    m = _COMMAND.search(text.strip())
    if m is None or not re.search(r"(^|[#$>\]]\s*)tsar(\s|$)", text.strip()):
        return None
    return Statement(kind="command", fields={"command": m.group(1).strip()}, line=line, column=1, text=text)


def _prompt_host(lines) -> str | None:
    for _, text in lines:
        if "tsar" in text:
            m = _PROMPT_HOST.search(text)
            if m:
                return m.group(1)
    return None


# --------------------------------------------------------------------------
# values and names

def scaled(text: str) -> float | None:
    """``'1.2M'`` -> 1258291.2 (1024-based); ``'-'`` -> None."""
    if text == "-":
        return None
    if text[-1] in _SUFFIX:
        return exact(text[:-1], _SUFFIX[text[-1]])
    return float(text)


def unit_suffix(module: str, field: str) -> str:
    """The unit tag of a tsar column in report keys."""
    if module in ("cpu", "percpu", "ncpu") or field in ("util", "retran") or field.startswith("%"):
        return "_pct"
    if field in ("bytin", "bytout"):
        return "_Bps"
    if field in ("pktin", "pktout", "pkterr", "pktdrp"):
        return "_pps"
    if (module == "io" and field in ("await", "svctm")) or (module.startswith("nginx") and field == "rt"):
        return "_s"
    if module == "mem" or (module == "swap" and field == "total"):
        return "_bytes"
    return ""


def in_unit(value: float | None, suffix: str) -> float | None:
    """Latencies print in milliseconds; report keys ending in ``_s`` hold seconds."""
    if value is None or suffix != "_s":
        return value
    return exact(repr(value), "0.001")


def module_of(group: str) -> tuple[str, str]:
    """``'--sda---'`` -> ('io', 'sda'); ``'---cpu--'`` -> ('cpu', '')."""
    name = group.strip("-")
    if name in KNOWN_MODULES:
        return name, ""
    if re.match(r"(sd|hd|vd|xvd|nvme|dm-|md|mmcblk|loop)", name):
        return "io", name
    if re.match(r"(eth|en|em|bond|wl|ib|lo$|p\d)", name):
        return "pernic", name
    if name.startswith("/"):
        return "partition", name
    if re.fullmatch(r"cpu\d+", name):
        return "percpu", name
    return name, ""


def _columns(modules_fields, column_fields) -> list[tuple[str, str, str]]:
    """(module, item, field) of every column: groups span columns in
    proportion to their width (8 characters per column)."""
    groups = _as_list(modules_fields.get("group")) if modules_fields else []
    names = _as_list(column_fields.get("column")) if column_fields else []
    spans = [max(1, round(len(g) / 8)) for g in groups]
    if sum(spans) != len(names) and groups:
        spans[-1] += len(names) - sum(spans)
    owners = []
    for group, span in zip(groups, spans):
        owners += [module_of(group)] * max(span, 0)
    owners += [("", "")] * (len(names) - len(owners))
    return [(module, item, name) for (module, item), name in zip(owners, names)]


def _as_list(value) -> list:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def column_key(module: str, item: str, field: str, sep: str = ".") -> str:
    return sep.join(p for p in (module, item, field) if p)


# --------------------------------------------------------------------------
# reports

def build_report(statements: list[Statement], wrapped: bool, host: str | None) -> dict | None:
    kinds = [s.kind for s in statements]
    if "check_line" in kinds:
        return _check_report(statements)
    if "data_row" not in kinds and "summary_row" not in kinds:
        return None
    commands = [s.fields["command"] for s in statements if s.kind == "command"]
    modules = next((s.fields for s in statements if s.kind == "header_modules"), None)
    names = next((s.fields for s in statements if s.kind == "header_columns"), None)
    columns = _columns(modules, names)
    report = {"tool": "tsar", "command": commands[-1] if commands else None, "host": host,
              "columns": [column_key(*c) for c in columns], "wrapped_lines": wrapped,
              "_line": statements[0].line, "_problems": []}
    _fill_rows(report, statements, columns)
    return report


def _fill_rows(report: dict, statements: list[Statement], columns) -> None:
    stamps, rows, metric_rows = [], [], []
    for statement in statements:
        values = _as_list(statement.fields.get("value"))
        if statement.kind not in ("data_row", "summary_row"):
            continue
        if len(values) != len(columns):
            report["_problems"].append((statement.line, f"{len(values)} values under {len(columns)} columns"))
            continue
        try:
            numbers = [scaled(v) for v in values]
        except ValueError as err:          # a value no counter holds (26 digits): the row is damaged
            report["_problems"].append((statement.line, str(err)))
            continue
        if statement.kind == "summary_row":
            report[f"summary_{statement.fields['summary']}"] = _keyed(columns, numbers)
            continue
        try:
            stamp = _timestamp(statement.fields["stamp"])
        except ValueError:
            report["_problems"].append((statement.line, f"impossible date {statement.fields['stamp']!r}"))
            continue
        stamps.append(stamp)
        rows.append(numbers)
        metric_rows += [(stamp, f"tsar-{m}" if m else "tsar", item, field, value)
                        for (m, item, field), value in zip(columns, numbers)]
    live = any(s.fields.get("stamp", "").count(":") == 2 for s in statements if s.kind == "data_row")
    report.update({
        "mode": "live" if live else "history",
        "date_format": "%d/%m/%y-%H:%M:%S" if live else "%d/%m/%y-%H:%M",
        "rows": len(rows),
        "first_row": _keyed(columns, rows[0]) if rows else None,
        "_stamps": stamps, "_metric_rows": metric_rows,
        "interval_s": _interval(stamps, report.get("command"), live),
    })
    for field in ("bytin", "bytout", "pktin", "pktout"):
        idx = [i for i, c in enumerate(columns) if c[0] in ("traffic", "pernic") and c[2] == field]
        values = [r[idx[0]] for r in rows if idx and r[idx[0]] is not None]
        if values:
            report[f"max_{field}{unit_suffix('traffic', field)}"] = max(values)


def _keyed(columns, numbers) -> dict:
    out = {}
    for (module, item, field), value in zip(columns, numbers):
        suffix = unit_suffix(module, field)
        out[column_key(module, item, field) + suffix] = in_unit(value, suffix)
    return out


def _timestamp(text: str):
    m = _STAMP.match(text + " ")
    day, month, year, hour, minute, second = m.groups()
    return pd.Timestamp(year=2000 + int(year), month=int(month), day=int(day), hour=int(hour),
                        minute=int(minute), second=int(second or 0))


def _interval(stamps, command: str | None, live: bool):
    """Seconds between rows: from the rows, else from ``-i`` (seconds live,
    minutes in history), else tsar's defaults (5 s live, 5 min history)."""
    if len(stamps) >= 2:
        seconds = (stamps[1] - stamps[0]).total_seconds()
        return int(seconds) if float(seconds).is_integer() else seconds
    m = re.search(r"(?:^|\s)(?:-i|--interval)\s*=?\s*(\d+)", command or "")
    if m:
        return int(m.group(1)) * (1 if live else 60)
    return 5 if live else 300


def _check_report(statements: list[Statement]) -> dict:
    records: dict = {}
    host = None
    metric_rows = []
    for statement in statements:
        if statement.kind != "check_line":
            continue
        host = statement.fields["check_host"]
        for pair in _as_list(statement.fields["pair"]):
            key, _, value = pair.partition("=")
            parts = key.split(":")
            module, field = parts[0], parts[-1]
            item = ":".join(parts[1:-1])
            suffix = unit_suffix(module, field)
            records[key + suffix] = in_unit(float(value), suffix)
            metric_rows.append((None, f"tsar-{module}", item, field, float(value)))
    commands = [s.fields["command"] for s in statements if s.kind == "command"]
    return {"tool": "tsar", "mode": "check", "host": host, "command": commands[-1] if commands else None,
            "records": records, "rows": 0, "_line": statements[0].line, "_problems": [],
            "_metric_rows": metric_rows, "_stamps": []}


def _merge_checks(reports: list) -> list:
    """Consecutive --check runs on one host make one report."""
    merged: list = []
    for report in reports:
        last = merged[-1] if merged else None
        if last and last["mode"] == "check" and report["mode"] == "check" and last["host"] == report["host"]:
            last["records"].update(report["records"])
            last["_metric_rows"] += report["_metric_rows"]
            last["command"] = last["command"] or report["command"]
            continue
        merged.append(report)
    return merged


def _place(report: dict, path, clock, options) -> None:
    stamps = report.pop("_stamps")
    report["path"] = str(path)
    report["line"] = report.pop("_line")
    report.pop("_problems")
    if stamps:
        start, end = stamps[0], stamps[-1]
        report.update(start=start, end=end, time_from="report", first_timestamp=start, last_timestamp=end)
        return
    start, end, time_from = clock
    report.update(start=start, end=end, time_from=time_from)
    report["_metric_rows"] = [(start, *row[1:]) for row in report["_metric_rows"]]


def _metrics(rows: list, host, options):
    if not rows:
        return metrics_frame()
    frame = pd.DataFrame(rows, columns=["timestamp", "section", "device", "metric", "value"])
    frame["host"] = host
    return metrics_frame(columns={c: frame[c] for c in frame.columns})


def summarise(report: dict) -> str:
    """One line for the event table."""
    if report.get("mode") == "check":
        return f"tsar --check on {report.get('host')}: {len(report.get('records', {}))} values"
    modules = sorted({c.split(".")[0] for c in report.get("columns", [])})
    return f"tsar {report.get('mode')} table, {report.get('rows')} rows of {', '.join(modules)}"
