"""``ps`` snapshots: ``ps aux``, ``ps auxf``, ``ps -ef``, with or without the
header, and pastes such as ``ps aux | grep nginx`` (the grep line itself is
dropped).

A file may hold several snapshots (a before/after paste): a header, a shell
prompt or a stretch of other text between rows starts a new one.  Each
process gets a ``role`` from its command (``nginx-master``,
``nginx-worker``, ``nginx-cache``, ``other``) so the worker PIDs can be
checked: workers forked together have consecutive PIDs; respawned workers
(after a crash) are scattered and started later than the master.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from sarsleuth.errors import InputError
from sarsleuth.inputs.parsers.base import ParseOptions, Parser, events_frame

_AUX_HEADER = re.compile(r"^\s*USER\s+PID\s+%CPU\s+%MEM\s+VSZ\s+RSS\s+TTY\s+STAT\s+START\s+TIME\s+COMMAND\s*$")
_EF_HEADER = re.compile(r"^\s*UID\s+PID\s+PPID\s+C\s+STIME\s+TTY\s+TIME\s+CMD\s*$")
_TIME = r"(?:\d+-)?\d+:\d\d(?::\d\d)?(?:\.\d+)?"
# PIDs have at most 10 digits and sizes at most 18 (they fit in 64 bits): a
# longer number is not a ps row, whatever else the line looks like.
_AUX_ROW = re.compile(
    r"^(?P<user>[\w.+-]+)\s+(?P<pid>\d{1,10})\s+(?P<cpu>\d+(?:\.\d+)?)\s+(?P<mem>\d+(?:\.\d+)?)\s+"
    r"(?P<vsz>\d{1,18})\s+(?P<rss>\d{1,18})\s+(?P<tty>\S+)\s+(?P<stat>[DIRSTtWXZ<NLsl+]+)\s+"
    rf"(?P<start>\S+)\s+(?P<time>{_TIME})\s+(?P<command>\S.*)$")
_EF_ROW = re.compile(
    r"^(?P<user>[\w.+-]+)\s+(?P<pid>\d{1,10})\s+(?P<ppid>\d{1,10})\s+(?P<cpu>\d+)\s+(?P<start>[A-Za-z]{3}\d\d|\d\d:\d\d|\d{4})\s+"
    rf"(?P<tty>\S+)\s+(?P<time>{_TIME})\s+(?P<command>\S.*)$")
_PS_COMMAND = re.compile(r"(?:^|[\s$#>%\]])(ps\s+(?:-?[a-zA-Z]+)(?:\s+[^|]*)?(?:\|.*)?)$")
_GREP = re.compile(r"^(?:[\\|_ ]*)(?:\S*/)?e?grep\b")

PROCESS_COLUMNS = ["snapshot", "user", "pid", "ppid", "%cpu", "%mem", "vsz_kb", "rss_kb", "tty", "stat",
                   "start", "time", "command", "role", "line", "text"]


@dataclass
class Snapshot:
    """One ps listing: its rows and where it came from."""

    line: int
    command: str | None = None
    layout: str | None = None
    rows: list = field(default_factory=list)
    info: dict = field(default_factory=dict)


class PsParser(Parser):
    """Process listings (ps aux / auxf / -ef)."""

    kind = "ps"
    priority = 3
    description = "ps aux / ps auxf / ps -ef snapshot(s)"

    @classmethod
    def sniff(cls, head: bytes, text: str) -> float:
        lines = [line for line in text.splitlines() if line.strip()]
        if not lines:
            return 0.0
        headers = sum(1 for line in lines if _AUX_HEADER.match(line) or _EF_HEADER.match(line))
        rows = sum(1 for line in lines if _row(line)[0])
        if headers and rows:
            return 0.95
        if rows >= 3 and rows / len(lines) >= 0.5:
            return 0.8
        if rows >= 3 and re.search(r"(^|[\s$#>])ps\s+(aux|-ef|-e|ax)", text, re.M):
            return 0.5
        return 0.0

    @classmethod
    def parse(cls, path, options: ParseOptions):
        # the load-test helpers (and their grammars) load to read a file, not to sniff one
        from sarsleuth.inputs.parsers.loadtest.grammars import numbered_lines, report_clock
        warnings: list = []
        snapshots = split_snapshots(numbered_lines(path, warnings))
        snapshots = [s for s in snapshots if s.rows]
        if not snapshots:
            raise InputError(path, "no ps process rows found (expected ps aux or ps -ef columns)", line=1)
        start, _, time_from = report_clock(path, options)
        return _source(path, snapshots, start, time_from, warnings)


def _row(line: str):
    """(layout, match) of a process row, or (None, None)."""
    text = line.rstrip()
    m = _AUX_ROW.match(text)
    if m:
        return "aux", m
    m = _EF_ROW.match(text)
    if m:
        return "ef", m
    return None, None


def split_snapshots(lines) -> list[Snapshot]:
    """Group rows into snapshots at headers, ps prompts, layout changes and
    runs of other text."""
    snapshots: list[Snapshot] = []
    current: Snapshot | None = None
    pending_command = None
    for number, text in lines:
        if not text.strip():
            continue
        layout, match = _row(text)
        if match is None:
            command = _PS_COMMAND.search(text.strip())
            is_header = bool(_AUX_HEADER.match(text) or _EF_HEADER.match(text))
            if command:
                pending_command = command.group(1).strip()
            if command or is_header or (current and current.rows):
                current = None
            if is_header:
                current = Snapshot(line=number, command=pending_command, layout="aux" if "USER" in text else "ef")
                snapshots.append(current)
                pending_command = None
            continue
        if current is None or (current.layout and current.layout != layout and current.rows):
            current = Snapshot(line=number, command=pending_command, layout=layout)
            snapshots.append(current)
            pending_command = None
        current.layout = current.layout or layout
        current.rows.append((number, layout, match))
    return snapshots


def role_of(command: str) -> str:
    """nginx process role from its title."""
    title = command.lstrip("\\|_ ")
    m = re.match(r"(nginx|openresty|tengine)[^:]*:\s*(master|worker|cache manager|cache loader)", title, re.I)
    if not m:
        return "other"
    kind = m.group(2).lower()
    return {"master": "nginx-master", "worker": "nginx-worker"}.get(kind, "nginx-cache")


def _record(label: str, number: int, layout: str, match) -> dict:
    g = match.groupdict()
    command = g["command"].rstrip()
    return {
        "snapshot": label, "user": g["user"], "pid": int(g["pid"]),
        "ppid": int(g["ppid"]) if g.get("ppid") else None,
        "%cpu": float(g["cpu"]), "%mem": float(g["mem"]) if g.get("mem") else None,
        "vsz_kb": int(g["vsz"]) if g.get("vsz") else None, "rss_kb": int(g["rss"]) if g.get("rss") else None,
        "tty": g["tty"], "stat": g.get("stat"), "start": g["start"], "time": g["time"],
        "command": command, "role": role_of(command), "line": number,
        "text": match.string,      # the row as the file has it, for evidence
    }


def _frame(records: list):
    # here, not at the top: sniff loads this module
    import pandas as pd
    frame = pd.DataFrame(records, columns=PROCESS_COLUMNS)
    for col in ("pid", "ppid", "vsz_kb", "rss_kb", "line"):
        frame[col] = pd.to_numeric(frame[col], errors="coerce").astype("Int64")
    for col in ("%cpu", "%mem"):
        frame[col] = pd.to_numeric(frame[col], errors="coerce").astype("float64")
    return frame


def describe_nginx(frame) -> dict:
    """Master, workers, whether worker PIDs are consecutive, and which workers
    started at another time than the master (respawned)."""
    masters = frame[frame["role"] == "nginx-master"]
    workers = frame[frame["role"] == "nginx-worker"]
    pids = sorted(int(p) for p in workers["pid"])
    master_start = masters["start"].iloc[0] if len(masters) else None
    late = [int(r.pid) for r in workers.itertuples()
            if master_start is not None and not _same_start(r.start, master_start)]
    return {
        "master_pid": int(masters["pid"].iloc[0]) if len(masters) else None,
        "worker_pids": pids,
        "workers": len(pids),
        "cache_processes": int((frame["role"] == "nginx-cache").sum()),
        "consecutive_worker_pids": bool(pids) and pids == list(range(pids[0], pids[0] + len(pids))),
        "workers_started_apart_from_master": late,
    }


def _same_start(a: str, b: str) -> bool:
    """Same START column, allowing the minute or two a master takes to fork
    its workers at start-up."""
    if a == b:
        return True
    clock = re.compile(r"^(\d\d):(\d\d)$")
    ma, mb = clock.match(a), clock.match(b)
    if not (ma and mb):
        return False
    minutes = lambda m: int(m.group(1)) * 60 + int(m.group(2))  # noqa: E731
    return abs(minutes(ma) - minutes(mb)) <= 2


def summarise_snapshot(frame, info: dict) -> str:
    """e.g. ``nginx master 7223, 10 workers, PIDs 7292..7301 consecutive``."""
    if info["master_pid"] is None and not info["workers"]:
        return f"{len(frame)} processes"
    parts = [f"nginx master {info['master_pid']}" if info["master_pid"] is not None else "no nginx master",
             f"{info['workers']} workers"]
    pids = info["worker_pids"]
    if len(pids) > 1 and info["consecutive_worker_pids"]:
        parts.append(f"PIDs {pids[0]}..{pids[-1]} consecutive")
    elif len(pids) > 1:
        parts.append("PIDs scattered: " + ", ".join(str(p) for p in pids))
    if info["workers_started_apart_from_master"]:
        parts.append(f"{len(info['workers_started_apart_from_master'])} started after the master")
    return ", ".join(parts)


def _source(path, snapshots: list[Snapshot], start, time_from: str, warnings: list):
    # here, not at the top: sniff loads this module
    from sarsleuth.inputs.parsers.loadtest.grammars import build_source
    labelled, events, records = [], [], []
    for index, snapshot in enumerate(snapshots, 1):
        label = f"snapshot-{index}"
        rows = [_record(label, n, layout, m) for n, layout, m in snapshot.rows
                if not _GREP.match(m.group("command"))]
        frame = _frame(rows)
        info = describe_nginx(frame)
        labelled.append((label, frame))
        records += rows
        events.append({"timestamp": start, "source": "ps", "kind": "ps-snapshot", "pid": info["master_pid"],
                       "process": "nginx" if info["master_pid"] or info["workers"] else "ps",
                       "message": summarise_snapshot(frame, info), "file": str(path), "line": snapshot.line,
                       "level": "info", "detail": snapshot.command})
        info.update(label=label, line=snapshot.line, command=snapshot.command, layout=snapshot.layout)
        snapshot.info = info
    source = build_source(path, "ps", [], warnings, lambda r: "", records=len(records))
    source.events = events_frame(events)
    source.meta.update(processes=_frame(records), snapshots=labelled, snapshot_info=[s.info for s in snapshots],
                       time_from=time_from)
    return source
