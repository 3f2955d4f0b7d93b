"""Assembly of multi-line reports: decoded candidate lines -> event records.

The :class:`Assembler` groups the lines of one report (a page allocation
failure with its call trace, an OOM report, a hung task, an oops, an nginx
message with its continuation lines), merges the lines of one OOM kill,
reattaches a segfault's suffix printed on a line of its own, folds the
``N callbacks suppressed`` lines into the ``count`` of the event they stand
for, and aggregates bursts: once a file has given :data:`KEEP_ALL_EVENTS`
events, past :data:`BURST_CAP` events of one kind, host and minute further
ones only add to the ``count`` of the last one kept (totals stay exact,
memory stays bounded when every line matches).

Which kinds continue on later lines, and how, is data:
``knowledge/reports.toml``.  What a line says (the task a report is about,
an OOM kill's victim and step, a dump's task line, a segfault's suffix) is
read by the fields of its definition in ``knowledge/signatures.toml``
(:func:`~sarsleuth.knowledge.signatures.fields_of`), only on the few lines
that are events or sit inside an open report.
"""
from __future__ import annotations

import bisect
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from sarsleuth.knowledge import signatures
from sarsleuth.parsers.logs.lines import LineInfo, stamp_seconds, unescape_rsyslog

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore

#: Continuation lines kept in an event's ``detail``.
MAX_DETAIL_LINES = 200
#: Events a file keeps as records of their own whatever their number.
KEEP_ALL_EVENTS = 50_000
#: Beyond that, events of one (kind, host, minute) kept as records of their
#: own; later ones are counted in the last kept record.
BURST_CAP = 100
#: How far (seconds, or lines when there are no times) a suppression count may travel.
SUPPRESS_WINDOW_S = 60.0
SUPPRESS_WINDOW_LINES = 50
#: Seconds (of time stamp or uptime) a report's continuation may be from its header.
REPORT_SPREAD_S = 2.0

SUPPRESSED_RE = re.compile(r"^(?:(?P<fn>[\w.]+): )?(?P<n>\d+) callbacks suppressed")


@dataclass(frozen=True)
class ReportRule:
    kind: str
    follow_lines: int
    pid_from_detail: bool = False
    repeats_join: bool = False
    tail: str | None = None       # the definition of the lines it takes (glued to its message)
    joins: frozenset = frozenset()  # other kinds whose lines inside the report are part of it


@dataclass(frozen=True)
class Knowledge:
    """``knowledge/reports.toml``, compiled."""

    reports: dict                 # kind -> ReportRule
    task_header: str              # definition of a dump's task line
    task_header_lines: int
    kill_kind: str
    kill_line_gap: int
    kill_seconds: float
    reaper_seconds: float
    continued_sources: dict       # source -> follow lines
    ratelimit: dict               # limiter function -> set of kinds
    never_suppressed: frozenset


@lru_cache(maxsize=1)
def knowledge() -> Knowledge:
    text = resources.files("sarsleuth.knowledge").joinpath("reports.toml").read_text("utf-8")
    data = tomllib.loads(text)
    reports = {}
    for entry in data["report"]:
        reports[entry["kind"]] = ReportRule(
            entry["kind"], int(entry["follow_lines"]), bool(entry.get("pid_from_detail")),
            bool(entry.get("repeats_join")), entry.get("tail"), frozenset(entry.get("joins", ())))
    kg = data["kill_group"]
    return Knowledge(
        reports, data["detail_task"]["definition"], int(data["detail_task"]["detail_lines"]),
        kg["kind"], int(kg["max_line_gap"]), float(kg["max_seconds"]), float(kg["reaper_max_seconds"]),
        {e["source"]: int(e["follow_lines"]) for e in data.get("continued_source", [])},
        {e["function"]: frozenset(e["kinds"]) for e in data.get("ratelimit", [])},
        frozenset(data["suppression"]["never"]))


def known_ratelimiters() -> frozenset:
    """Limiter functions whose count goes to an event of their kinds."""
    return frozenset(knowledge().ratelimit)


@dataclass
class _Report:
    record: dict | None          # None: an aggregated event's lines, not kept
    rule: ReportRule | None      # None: a continued source's message
    stamp_s: float | None
    uptime: float | None
    tag: str | None
    follow_left: int


def _minute(info: LineInfo):
    """The minute a line belongs to, for burst aggregation."""
    stamp = info.stamp
    if stamp is None:
        return ("up", int(info.uptime // 60)) if info.uptime is not None else None
    if stamp[0] == "md":
        return stamp[1:5]
    when = stamp[1]
    return (when.year, when.month, when.day, when.hour, when.minute)


class Assembler:
    """Turns the selected decoded lines of one file into event records."""

    def __init__(self, path: str, source: str, all_lines: bool = False, user_signatures: tuple = ()):
        self.path, self.source, self.all_lines = path, source, all_lines
        self.user_signatures = user_signatures
        self.know = knowledge()
        self.continued_follow = self.know.continued_sources.get(source)
        self.records: list[dict] = []
        self.suppressions: list[dict] = []
        self.report: _Report | None = None
        self.kill_group: dict | None = None
        self.hosts: Counter = Counter()
        self.bursts: dict = {}               # (kind, host, minute) -> [kept, last record]
        self.aggregated = 0                  # events counted in a kept record of their burst

    # -- entry point -------------------------------------------------------
    def feed(self, line_no: int, info: LineInfo, candidate: bool) -> int:
        """Take one line; return how many following lines it wants to see."""
        message = info.message
        if "#0" in message:
            first, _, rest = unescape_rsyslog(message).partition("\n")
            info.message = message = first
            embedded = rest.split("\n") if rest else []
        else:
            embedded = []
        if info.host:
            self.hosts[info.host] += 1
        if candidate and "callbacks suppressed" in message and self._structural(line_no, info):
            return self.following()
        kind = signatures.classify(message, self.user_signatures) if candidate else None
        if self.report is not None:
            if self._joins(info, kind):
                rule = self.report.rule
                if self.report.record is not None and not (rule is not None and rule.tail):
                    self._add_detail(self.report.record, [message] + embedded)
                self.report.follow_left -= 1
                return max(self.report.follow_left, 0)
            self.report = None
        if kind is None:
            if self.all_lines and candidate:
                self._new_record(line_no, info, "log")
            return 0
        if kind == self.know.kill_kind:
            return self._oom_kill(line_no, info, embedded)
        rule = self.know.reports.get(kind)
        if rule is None and not self.all_lines and self._aggregated(kind, info):
            if self.continued_follow:
                self.report = _Report(None, None, stamp_seconds(info.stamp), info.uptime, info.tag,
                                      self.continued_follow)
                return self.continued_follow
            return 0
        record = self._new_record(line_no, info, kind)
        if embedded:
            self._add_detail(record, embedded)
        follow = rule.follow_lines if rule is not None else self.continued_follow
        if follow:
            self.report = _Report(record, rule, stamp_seconds(info.stamp), info.uptime, info.tag, follow)
            return follow
        return 0

    def following(self) -> int:
        """Lines the open report still wants to see."""
        return max(self.report.follow_left, 0) if self.report is not None else 0

    def note_suppressed(self, line_no: int, count: int, fn: str | None) -> int:
        """A rate-limit summary read straight from the raw bytes (its owner is
        not a known one, so only its line number matters)."""
        self.suppressions.append({"n": count, "fn": fn, "line": line_no, "t": None, "uptime": None})
        return self.following()

    # -- pieces ------------------------------------------------------------
    def _aggregated(self, kind: str, info: LineInfo) -> bool:
        """Count the event in its burst's last kept record once the burst
        has :data:`BURST_CAP` records; True when it was."""
        if len(self.records) < KEEP_ALL_EVENTS:
            return False
        burst = self.bursts.get((kind, info.host, _minute(info)))
        if burst is None or burst[0] < BURST_CAP:
            return False
        burst[1]["count"] += 1
        self.aggregated += 1
        return True

    def _new_record(self, line_no: int, info: LineInfo, kind: str) -> dict:
        record = {
            "stamp": info.stamp, "host": info.host, "source": self.source, "kind": kind,
            "pid": info.pid, "process": info.tag, "message": info.message, "file": self.path,
            "line": line_no, "level": info.level, "detail": None, "count": 1,
            "uptime": info.uptime, "tag": info.tag,
        }
        if info.conn is not None:
            record["conn"] = info.conn
        self.records.append(record)
        if kind not in self.know.reports and kind != self.know.kill_kind:
            key = (kind, info.host, _minute(info))
            burst = self.bursts.get(key)
            if burst is None:
                self.bursts[key] = [1, record]
            else:
                burst[0] += 1
                burst[1] = record
        return record

    def _structural(self, line_no: int, info: LineInfo) -> bool:
        m = SUPPRESSED_RE.search(info.message)
        if m:
            self.suppressions.append({"n": int(m.group("n")), "fn": m.group("fn"), "line": line_no,
                                      "t": stamp_seconds(info.stamp), "uptime": info.uptime})
            return True
        return False

    def _joins(self, info: LineInfo, kind: str | None) -> bool:
        rep = self.report
        if rep.follow_left <= 0:
            return False
        rule = rep.rule
        if rule is not None and rule.tail:
            return self._tail(info, rule)
        if rule is None or self.continued_follow:   # a continued source: its unprefixed lines
            return not info.prefixed and kind is None
        if kind is not None and not (kind == rule.kind and rule.repeats_join) and kind not in rule.joins:
            return False
        if not info.prefixed:
            return True
        if info.tag != rep.tag:
            return False
        t = stamp_seconds(info.stamp)
        if t is not None and rep.stamp_s is not None and abs(t - rep.stamp_s) > REPORT_SPREAD_S:
            return False
        if info.uptime is not None and rep.uptime is not None and abs(info.uptime - rep.uptime) > REPORT_SPREAD_S:
            return False
        return True

    def _tail(self, info: LineInfo, rule: ReportRule) -> bool:
        """Reattach a wrapped suffix (`` in lib[...]``, ``<hex> error N``)
        to the latest record of the kind missing it; any other line ends
        the report."""
        text = info.message
        if signatures.fields_of(rule.tail, text) is None:
            return False
        for record in reversed(self.records[-8:]):
            if record["kind"] == rule.kind and " in " not in record["message"][-80:]:
                record["message"] = record["message"].rstrip() + " " + text.strip()
                self.report.follow_left = 0
                return True
        return False

    @staticmethod
    def _add_detail(record: dict, lines: list[str]) -> None:
        detail = record.setdefault("_detail", [])
        room = MAX_DETAIL_LINES - len(detail)
        if room > 0:
            detail.extend(lines[:room])
        record["_more"] = record.get("_more", 0) + max(0, len(lines) - max(room, 0))

    def _oom_kill(self, line_no: int, info: LineInfo, embedded: list[str]) -> int:
        """Merge the lines of one OOM kill (constraint summary, ``Kill process
        ... or sacrifice child``, ``Killed process``, ``oom_reaper``) into one
        event whose message is the ``Killed process`` line."""
        know = self.know
        msg = info.message
        t = stamp_seconds(info.stamp)
        group = self.kill_group
        victim = signatures.fields_of(know.kill_kind, msg) or {}
        if "pid" not in victim:       # a systemd-oomd kill names a unit, no process
            victim = {}
        verb = victim.get("verb")
        killed, chosen = verb == "Killed", verb in ("Kill", "kill")
        reaped = "reaper" in victim
        spread = know.reaper_seconds if reaped else know.kill_seconds
        close_in_time = group is not None and (
            line_no - group["last_line"] <= know.kill_line_gap and
            (t is None or group["t"] is None or abs(t - group["t"]) <= spread))
        joins = close_in_time and (
            (reaped and group["record"]["pid"] == int(victim["pid"])) or
            (not reaped and not group["killed"]))
        if joins:
            record = group["record"]
            self._add_detail(record, [msg] + embedded)
            group["last_line"] = line_no
            if killed or (chosen and not group["has_kill"]):
                record["message"] = msg
                record["pid"], record["process"] = int(victim["pid"]), victim["comm"]
            group["killed"] |= killed
            group["has_kill"] |= chosen
            return 0
        record = self._new_record(line_no, info, know.kill_kind)
        if victim:
            record["pid"], record["process"] = int(victim["pid"]), victim["comm"]
        self._add_detail(record, [msg] + embedded)
        self.kill_group = {"record": record, "t": t, "last_line": line_no,
                           "killed": killed, "has_kill": chosen}
        return 0

    # -- end ---------------------------------------------------------------
    def finish(self) -> list[dict]:
        """Attach details, pids from report headers and suppressed counts."""
        know = self.know
        for record in self.records:
            detail = record.pop("_detail", None)
            more = record.pop("_more", 0)
            rule = know.reports.get(record["kind"])
            if rule is not None:
                self._subject(record)
            if detail:
                if rule is not None and rule.pid_from_detail and record["pid"] is None:
                    for text in detail[:know.task_header_lines]:
                        task = signatures.fields_of(know.task_header, text)
                        if task:
                            record["pid"], record["process"] = int(task["pid"]), task["comm"]
                            break
                if more:
                    detail = detail + [f"... {more} more line(s)"]
                record["detail"] = "\n".join(detail)
        self._fold_suppressed()
        self.bursts.clear()
        return self.records

    @staticmethod
    def _subject(record: dict) -> None:
        """The task a report is about, as its header's fields name it (read
        once the report is whole: a segfault's suffix may have been glued
        on); a header naming the task but no pid leaves the pid unknown."""
        header = signatures.fields_of(record["kind"], record["message"])
        if header and header.get("comm"):
            record["process"] = header["comm"].strip()
            record["pid"] = int(header["pid"]) if header.get("pid") else None

    def _fold_suppressed(self) -> None:
        """Add each ``N callbacks suppressed`` to the event it stands for: the
        next compatible event (the ratelimiter prints the summary just before
        the first message it lets through), else the previous one."""
        if not self.suppressions or not self.records:
            return
        lines = [r["line"] for r in self.records]
        never = self.know.never_suppressed
        for sup in self.suppressions:
            allowed = self.know.ratelimit.get(sup["fn"] or "")
            i = bisect.bisect_right(lines, sup["line"])
            if allowed is None:
                # an unknown ratelimiter: only the message printed right after
                # it is known to be the one it let through
                nxt = self.records[i] if i < len(self.records) else None
                target = nxt if nxt is not None and nxt["line"] == sup["line"] + 1 \
                    and nxt["kind"] not in never else None
            else:
                target = self._near(sup, range(i, min(i + 20, len(self.records))), allowed)
                if target is None:
                    target = self._near(sup, range(i - 1, max(i - 21, -1), -1), allowed)
            if target is not None:
                target["count"] += sup["n"]
                sup["attributed"] = True

    def _near(self, sup: dict, indexes, allowed) -> dict | None:
        for idx in indexes:
            record = self.records[idx]
            if allowed and record["kind"] not in allowed:
                continue
            if record["source"] in self.know.continued_sources:
                continue
            t = stamp_seconds(record["stamp"])
            if sup["t"] is not None and t is not None:
                if abs(t - sup["t"]) > SUPPRESS_WINDOW_S:
                    return None
            elif sup["uptime"] is not None and record["uptime"] is not None:
                if abs(record["uptime"] - sup["uptime"]) > SUPPRESS_WINDOW_S:
                    return None
            elif abs(record["line"] - sup["line"]) > SUPPRESS_WINDOW_LINES:
                return None
            return record
        return None
