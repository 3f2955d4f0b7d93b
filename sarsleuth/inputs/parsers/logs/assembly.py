"""Assembly of multi-line reports: decoded candidate lines -> event records.

The :class:`Assembler` groups the lines of one report (a page allocation
failure with its call trace, an OOM report, a hung task, an oops, an nginx
message with its continuation lines), merges the lines of one OOM kill,
reattaches a segfault's suffix printed on a line of its own, folds the
``N callbacks suppressed`` lines into the ``count`` of the event they stand
for (:mod:`~sarsleuth.inputs.parsers.logs.summaries`), and aggregates bursts, so that memory stays bounded whatever the number
of matching lines: once a file holds :data:`KEEP_ALL_EVENTS` events, past
:data:`BURST_CAP` events of one kind, host and minute further ones only add
to the ``count`` of the last one kept; past :data:`SPARSE_FROM` events one
is kept per kind, host and minute, past :data:`HOURLY_FROM` one per hour
(totals stay exact).

Records stay open while a later line may still change them (a report's
detail, a kill's lines, a suffix, a rate-limit summary printed after them):
the last :data:`OPEN_EVENTS` at most.  Older ones are finished and stored,
column by column, in :class:`~sarsleuth.inputs.parsers.logs.event_columns.EventColumns`,
where a flood of one message is one row with its repeats counted.

Which kinds continue on later lines, and how, is data:
``knowledge/reports.toml``.  What a line says (the task a report is about,
an OOM kill's victim and step, a dump's task line, a segfault's suffix) is
read by the fields of its definition in ``knowledge/signatures.toml``
(:func:`~sarsleuth.knowledge.signatures.fields_of`), only on the few lines
that are events or sit inside an open report.
"""
from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass

from sarsleuth.knowledge import signatures
from sarsleuth.knowledge.reports import ReportRule, knowledge
from sarsleuth.inputs.parsers.logs.event_columns import EventColumns
from sarsleuth.inputs.parsers.logs.lines import LineInfo, stamp_seconds, unescape_rsyslog
from sarsleuth.inputs.parsers.logs.summaries import SUPPRESSED_RE, Summaries

#: Continuation lines kept in an event's ``detail``.
MAX_DETAIL_LINES = 200
#: Events a file keeps as records of their own whatever their number.
KEEP_ALL_EVENTS = 50_000
#: Beyond that, events of one (kind, host, minute) kept as records of their
#: own; later ones are counted in the last kept record.
BURST_CAP = 100
#: Events a file holds before one a minute is kept per kind and host.
SPARSE_FROM = 75_000
#: Events a file holds before one an hour is kept per kind and host.
HOURLY_FROM = 100_000
#: Bursts remembered at most (kind, host and minute or hour); the oldest
#: half goes beyond (a log written in time order does not come back to it).
MAX_BURSTS = 100_000
#: Records kept open for the lines after them (see the module's docstring).
OPEN_EVENTS = 64
#: Seconds (of time stamp or uptime) a report's continuation may be from its header.
REPORT_SPREAD_S = 2.0
#: The fields that say what a report is about: a line of the report's own
#: kind naming another of these is a report of its own.
SUBJECT_FIELDS = ("pid", "cpu", "port", "dev", "device", "controller")


@dataclass
class _Report:
    record: dict | None          # None: an aggregated event's lines, not kept
    rule: ReportRule | None      # None: a continued source's message
    stamp_s: float | None
    uptime: float | None
    tag: str | None
    follow_left: int
    message: str = ""            # the report's first line, for what it is about


def _bucket(info: LineInfo, seconds: int):
    """The minute (or hour, ``seconds`` = 3600) of a line, for burst aggregation."""
    stamp = info.stamp
    if stamp is None:
        return ("up", int(info.uptime // seconds)) if info.uptime is not None else None
    if stamp[0] == "md":
        _, mon, day, h, m = stamp[:5]
        return (mon, day, h, m if seconds == 60 else None)
    when = stamp[1]
    return (when.year, when.month, when.day, when.hour, when.minute if seconds == 60 else None)


class Assembler:
    """Turns the selected decoded lines of one file into events, stored in
    :attr:`events` (:class:`EventColumns`)."""

    def __init__(self, path: str, source: str, all_lines: bool = False, user_signatures: tuple = ()):
        self.path, self.source, self.all_lines = path, source, all_lines
        self.user_signatures = user_signatures
        self.know = knowledge()
        self.continued_follow = self.know.continued_sources.get(source)
        self.events = EventColumns(source, path, merge_repeats=not all_lines)
        self.open: deque[dict] = deque()     # records later lines may still change, oldest first
        self.first_open = 0                  # number (0-based, in creation order) of open[0]
        self.created = 0                     # records made
        self.summaries = Summaries(self.know, source)
        self.report: _Report | None = None
        self.kill_group: dict | None = None
        self.hosts: Counter = Counter()
        self.bursts: dict = {}               # (kind, host, bucket) -> [kept, last record]
        self.aggregated = 0                  # events counted in a kept record of their burst
        self.offset = -1                     # byte offset of the line being fed
        self.line_no = 0                     # its number
        self.made: dict | None = None        # the record the line made

    # -- entry point -------------------------------------------------------
    def feed(self, line_no: int, info: LineInfo, candidate: bool, offset: int = -1, kind_of=None) -> int:
        """Take one line (at byte ``offset`` of the file); return how many
        following lines it wants to see.  ``kind_of(message)`` classifies a
        candidate line's message when the scan knows the patterns it holds."""
        self.offset, self.line_no, self.made = offset, line_no, None
        message = info.message
        if "#0" in message:
            first, _, rest = unescape_rsyslog(message).partition("\n")
            info.message = message = first
            embedded = rest.split("\n") if rest else []
            kind_of = None      # unescaped: no longer the line's own text
        else:
            embedded = []
        if info.host:
            self.hosts[info.host] += 1
        if candidate and "callbacks suppressed" in message and self._structural(line_no, info):
            return self.following()
        if not candidate:
            kind = None
        elif kind_of is not None:
            kind = kind_of(message)
        else:
            kind = signatures.classify(message, self.user_signatures)
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
        follow = rule.follow_lines if rule is not None else self.continued_follow
        if self._aggregated(kind, info):
            if follow:      # its report's lines go with it
                self.report = _Report(None, rule, stamp_seconds(info.stamp), info.uptime, info.tag, follow,
                                      message)
            return follow or 0
        record = self._new_record(line_no, info, kind)
        if embedded:
            self._add_detail(record, embedded)
        if follow:
            self.report = _Report(record, rule, stamp_seconds(info.stamp), info.uptime, info.tag, follow, message)
            return follow
        return 0

    def repeatable(self) -> bool:
        """Did the line just fed make an event that the same line, printed
        again right after it, would only repeat (no report or kill left open
        for it, nothing aggregated)?"""
        return self.made is not None and self.report is None and not self.all_lines

    def again(self, line_no: int) -> int:
        """The line of the last event once more (see :meth:`repeatable`):
        what feeding it would do, without reading it again."""
        record = self.made
        record["_again"] = record.get("_again", 0) + 1
        record["count"] += 1
        if record["host"]:
            self.hosts[record["host"]] += 1
        if self.kill_group is not None and self.kill_group["record"] is record:
            self.kill_group["last_line"] = line_no
        self.line_no = line_no
        return 0

    def following(self) -> int:
        """Lines the open report still wants to see."""
        return max(self.report.follow_left, 0) if self.report is not None else 0

    def note_suppressed(self, line_no: int, count: int, fn: str | None) -> int:
        """A rate-limit summary read straight from the raw bytes (its owner is
        not a known one, so only its line number matters)."""
        self.summaries.note(count, fn, line_no, None, None, self.created)
        return self.following()

    # -- pieces ------------------------------------------------------------
    def _held(self) -> int:
        return len(self.events) + len(self.open)

    def _aggregated(self, kind: str, info: LineInfo) -> bool:
        """Count the event in its burst's last kept record once the burst
        has its share of records; True when it was."""
        if self.all_lines:
            return False
        held = self._held()
        if held < KEEP_ALL_EVENTS:
            return False
        burst = self.bursts.get(self._burst_key(kind, info, held))
        if burst is None or burst[0] < (BURST_CAP if held < SPARSE_FROM else 1):
            return False
        self._add_count(burst[1], 1)
        self.aggregated += 1
        return True

    @staticmethod
    def _burst_key(kind: str, info: LineInfo, held: int):
        return (kind, info.host, _bucket(info, 60 if held < HOURLY_FROM else 3600))

    def _add_count(self, record: dict, n: int) -> None:
        row = record.get("_row")
        if row is None:
            record["count"] += n
        else:                          # stored already
            self.events.add_count(row, n)

    def _new_record(self, line_no: int, info: LineInfo, kind: str) -> dict:
        record = {
            "stamp": info.stamp, "host": info.host, "kind": kind, "pid": info.pid, "process": info.tag,
            "message": info.message, "line": line_no, "offset": self.offset, "level": info.level,
            "detail": None, "count": 1, "uptime": info.uptime, "tag": info.tag,
        }
        if info.conn is not None:
            record["conn"] = info.conn
        if info.unit is not None:
            record["unit"] = info.unit
        if info.boot is not None:
            record["boot"] = info.boot
        self.made = record
        self.open.append(record)
        self.created += 1
        if not self.all_lines:
            key = self._burst_key(kind, info, self._held())
            burst = self.bursts.get(key)
            if burst is None:
                if len(self.bursts) >= MAX_BURSTS:
                    for old in list(self.bursts)[:MAX_BURSTS // 2]:
                        del self.bursts[old]
                self.bursts[key] = [1, record]
            else:
                burst[0] += 1
                burst[1] = record
        self.summaries.settle(self.open, self.first_open, self.created)
        self._store_old()
        return record

    def _structural(self, line_no: int, info: LineInfo) -> bool:
        m = SUPPRESSED_RE.search(info.message)
        if m:
            self.summaries.note(int(m.group("n")), m.group("fn"), line_no, stamp_seconds(info.stamp),
                                info.uptime, self.created)
            return True
        return False

    def _joins(self, info: LineInfo, kind: str | None) -> bool:
        rep = self.report
        if rep.follow_left <= 0:
            return False
        rule = rep.rule
        if rule is not None and rule.tail:
            return self._tail(info, rule, rep.record)
        if rule is None or self.continued_follow:   # a continued source: its unprefixed lines
            return not info.prefixed and kind is None
        if kind is not None and not (kind == rule.kind and rule.repeats_join) and kind not in rule.joins:
            return False
        if kind == rule.kind and not self._same_subject(rule.kind, rep.message, info.message):
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

    @staticmethod
    def _same_subject(kind: str, first: str, line: str) -> bool:
        """Does a line of the report's own kind go on about the same thing
        (the same task, CPU, port or disk, where both lines name one)?  Four
        CPUs locked up in one second are four reports, not one."""
        a, b = signatures.fields_of(kind, first) or {}, signatures.fields_of(kind, line) or {}
        return all(a[k] == b[k] for k in SUBJECT_FIELDS if k in a and k in b)

    def _tail(self, info: LineInfo, rule: ReportRule, record: dict | None) -> bool:
        """Reattach a wrapped suffix (`` in lib[...]``, ``<hex> error N``)
        to the latest record of the kind missing it (an aggregated event's
        suffix goes with it); any other line ends the report."""
        text = info.message
        if signatures.fields_of(rule.tail, text) is None:
            return False
        if record is None:
            self.report.follow_left = 0
            return True
        for record in reversed(list(self.open)[-8:]):
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
            (reaped and group["pid"] == int(victim["pid"])) or
            (not reaped and not group["killed"]))
        if joins:
            record = group["record"]
            group["last_line"] = line_no
            if record is not None:       # None: an aggregated kill, counted already
                self._add_detail(record, [msg] + embedded)
                if killed or (chosen and not group["has_kill"]):
                    record["message"] = msg
                    record["pid"], record["process"] = int(victim["pid"]), victim["comm"]
            if killed or (chosen and not group["has_kill"]):
                group["pid"] = int(victim["pid"])
            group["killed"] |= killed
            group["has_kill"] |= chosen
            return 0
        record = None if self._aggregated(know.kill_kind, info) else self._new_record(line_no, info, know.kill_kind)
        if record is not None:
            if victim:
                record["pid"], record["process"] = int(victim["pid"]), victim["comm"]
            self._add_detail(record, [msg] + embedded)
        self.kill_group = {"record": record, "t": t, "last_line": line_no, "killed": killed, "has_kill": chosen,
                           "pid": int(victim["pid"]) if victim else info.pid}
        return 0

    # -- finishing ---------------------------------------------------------
    def _store_old(self) -> None:
        """Store the records no later line can change any more."""
        needed = self.summaries.oldest_needed()
        report = self.report.record if self.report is not None else None
        group = self.kill_group
        # a kill's record takes its later lines until they are too far
        kill = group["record"] if group is not None and \
            self.line_no - group["last_line"] <= self.know.kill_line_gap else None
        while len(self.open) > OPEN_EVENTS:
            record = self.open[0]
            if needed is not None and self.first_open >= needed:
                break           # a summary may still count itself in it
            if record is report or record is kill:
                break
            self._store(self.open.popleft())
            self.first_open += 1

    def _store(self, record: dict) -> None:
        """Finish a record (details joined, the pid a report names) and store it."""
        know = self.know
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
        row = self.events.add(record)
        # a burst may still count events in it: it keeps the row, not the record
        record.clear()
        record["_row"] = row

    def finish(self) -> EventColumns:
        """Count the last rate-limit summaries and store every open record."""
        self.summaries.settle(self.open, self.first_open, self.created, everything=True)
        while self.open:
            self._store(self.open.popleft())
            self.first_open += 1
        self.bursts.clear()
        return self.events

    @staticmethod
    def _subject(record: dict) -> None:
        """The task a report is about, as its header's fields name it (read
        once the report is whole: a segfault's suffix may have been glued
        on); a header naming the task but no pid leaves the pid unknown."""
        header = signatures.fields_of(record["kind"], record["message"])
        if header and header.get("comm"):
            record["process"] = header["comm"].strip()
            record["pid"] = int(header["pid"]) if header.get("pid") else None
