"""The events of one log file, held column by column.

A finished event costs a few machine words: its short strings (kind, host,
process, tag, level) are numbers into one table of interned strings, its
time stamp, pid, line, byte offset and counts are packed into typed arrays,
and only its message (and the detail lines of a multi-line report) are
strings of their own.  The verbatim line is not held: evidence reads it
back from the file at the event's byte offset.

Repeats are stored once.  An event identical to one stored before (same
kind, host, process, pid, level, message and detail) whose time is at most
:data:`REPEAT_GAP_S` after that one's last repeat, or that follows it
directly when neither has a time, adds to its row: ``repeats`` (lines that
printed it), ``count`` (lines it stands for), ``repeat_span`` (seconds from
the first to the last repeat) and ``per_minute`` (its lines in each minute
from the first's on: the gap makes the minutes of a run consecutive).  A
flood of one message (a million identical OOM-kill lines) is one row,
whatever its length; the message printed again a minute later is a row of
its own, another occurrence in time.  Durations, not times, so a row stays
whole whatever clock the case settles its times on.
"""
from __future__ import annotations

import datetime as dt
from array import array
from collections import Counter

import numpy as np
import pandas as pd

#: Seconds between two printings of one message that make them one row.
REPEAT_GAP_S = 1.0
#: Open repeat runs kept at most; the oldest half goes beyond (it cannot
#: merge again in a log written in time order).
MAX_OPEN_RUNS = 65_536

_NO_PID = -(1 << 63)
#: Linux's PID_MAX_LIMIT (include/linux/threads.h, 64-bit): a larger "pid" names no process
PID_LIMIT = 4 * 1024 * 1024
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_MINUTE_US = 60_000_000
_NONE, _MD, _ABS, _AWARE = 0, 1, 2, 3


def pack_stamp(stamp) -> tuple[int, int, int]:
    """A parser's stamp tuple as (kind, microseconds, UTC offset seconds)."""
    if stamp is None:
        return _NONE, 0, 0
    if stamp[0] == "md":
        _, mon, day, h, m, s, us = stamp
        return _MD, ((((mon * 32 + day) * 24 + h) * 60 + m) * 60 + s) * 1_000_000 + us, 0
    when = stamp[1]
    if stamp[0] == "aware":
        offset = when.utcoffset()
        return _AWARE, (when - _EPOCH_UTC) // dt.timedelta(microseconds=1), int(offset.total_seconds())
    return _ABS, (when - _EPOCH) // dt.timedelta(microseconds=1), 0


def unpack_stamp(kind: int, value: int, offset: int):
    """The stamp tuple :func:`pack_stamp` was given back."""
    if kind == _NONE:
        return None
    if kind == _MD:
        rest, us = divmod(value, 1_000_000)
        rest, s = divmod(rest, 60)
        rest, m = divmod(rest, 60)
        rest, h = divmod(rest, 24)
        mon, day = divmod(rest, 32)
        return ("md", mon, day, h, m, s, us)
    if kind == _AWARE:
        zone = dt.timezone(dt.timedelta(seconds=offset))
        return ("aware", (_EPOCH_UTC + dt.timedelta(microseconds=value)).astimezone(zone))
    return ("abs", _EPOCH + dt.timedelta(microseconds=value))


def _seconds(kind: int, value: int, uptime: float) -> float | None:
    """Seconds on a scale that orders two events of one file (stamp first,
    the kernel's uptime for lines without one)."""
    if kind != _NONE:
        return value / 1e6
    return None if uptime != uptime else uptime


class EventColumns:
    """The finished events of one file (see the module's docstring)."""

    def __init__(self, source: str, path: str, merge_repeats: bool = True):
        self.source, self.path, self.merge_repeats = source, path, merge_repeats
        self.strings: list = [None]            # interned short strings; code 0 is None
        self._codes: dict = {None: 0}
        self.kind, self.host, self.process, self.tag, self.level = (array("I") for _ in range(5))
        self.stamp_kind = array("b")
        self.stamp = array("q")
        self.stamp_offset = array("i")
        self.uptime = array("d")
        self.pid = array("q")
        self.line = array("q")
        self.offset = array("q")
        self.count = array("q")
        self.repeats = array("q")
        self.message: list[str] = []
        self.detail: dict[int, str] = {}       # sparse: only reports carry detail lines
        self.conn: dict[int, int] = {}         # sparse: nginx connection numbers
        self.named: dict[str, dict[int, str]] = {}   # sparse: a journal entry's unit and boot id
        self.file = array("I")                 # the file of each row (a journal read from several files)
        self.last: dict[int, tuple] = {}       # row -> packed stamp (and uptime) of its last repeat
        self.minutes: dict[int, Counter] = {}  # row -> lines per minute, for rows repeated
        self._runs: dict = {}                  # identity -> row, for repeats

    def __len__(self) -> int:
        return len(self.message)

    def _code(self, text) -> int:
        code = self._codes.get(text)
        if code is None:
            code = self._codes[text] = len(self.strings)
            self.strings.append(text)
        return code

    def add(self, record: dict) -> int:
        """Store a finished event record; return its row (a repeat's is the
        row it was counted in)."""
        kind, value, utc_offset = pack_stamp(record["stamp"])
        uptime = record["uptime"]
        uptime = float("nan") if uptime is None else float(uptime)
        pid = record["pid"]
        codes = (self._code(record["kind"]), self._code(record["host"]), self._code(record["process"]),
                 self._code(record["tag"]), self._code(record["level"]))
        times = 1 + record.get("_again", 0)        # the same line printed again right after it
        if self.merge_repeats:
            identity = codes + (pid, record["message"], record["detail"], record.get("conn"), record.get("boot"))
            row = self._runs.get(identity)
            if row is not None and self._repeats(row, kind, value, uptime):
                self._repeat(row, record["count"], kind, value, utc_offset, uptime, times)
                return row
        row = len(self.message)
        for column, code in zip((self.kind, self.host, self.process, self.tag, self.level), codes):
            column.append(code)
        self.stamp_kind.append(kind)
        self.stamp.append(value)
        self.stamp_offset.append(utc_offset)
        self.uptime.append(uptime)
        self.pid.append(int(pid) if pid is not None and 0 <= int(pid) <= PID_LIMIT else _NO_PID)
        # where the line came from, when the scan read several files as one stream
        path, line, offset = record.get("origin") or (self.path, record["line"], record.get("offset", -1))
        self.file.append(self._code(path))
        self.line.append(int(line))
        self.offset.append(int(offset))
        self.count.append(int(record["count"]))
        self.repeats.append(1)
        if times > 1:
            self._repeat(row, 0, kind, value, utc_offset, uptime, times - 1)
        self.message.append(record["message"])
        if record["detail"] is not None:
            self.detail[row] = record["detail"]
        if record.get("conn") is not None:
            self.conn[row] = int(record["conn"])
        for name in ("unit", "boot"):
            if record.get(name) is not None:
                self.named.setdefault(name, {})[row] = record[name]
        if self.merge_repeats:
            if len(self._runs) >= MAX_OPEN_RUNS:
                for old in list(self._runs)[:MAX_OPEN_RUNS // 2]:
                    del self._runs[old]
            self._runs[identity] = row
        return row

    def _repeats(self, row: int, kind: int, value: int, uptime: float) -> bool:
        """Is an identical event at this time a repeat of ``row``?"""
        last_kind, last_value, _, last_uptime = self.last.get(
            row, (self.stamp_kind[row], self.stamp[row], 0, self.uptime[row]))
        if kind != last_kind:
            return False
        now, before = _seconds(kind, value, uptime), _seconds(last_kind, last_value, last_uptime)
        if now is None or before is None:
            # no time on either: a repeat only when nothing came in between
            return now is None and before is None and row == len(self.message) - 1
        return 0 <= now - before <= REPEAT_GAP_S

    def _repeat(self, row: int, count: int, kind: int, value: int, utc_offset: int, uptime: float,
                times: int = 1) -> None:
        """``times`` printings more of ``row``'s line, the last at this time."""
        if row not in self.last:
            self.minutes[row] = Counter({self._minute(self.stamp_kind[row], self.stamp[row],
                                                      self.uptime[row]): 1})
        self.last[row] = (kind, value, utc_offset, uptime)
        self.minutes[row][self._minute(kind, value, uptime)] += times
        self.count[row] += count
        self.repeats[row] += times

    @staticmethod
    def _minute(kind: int, value: int, uptime: float) -> int | None:
        """The minute of a time (of the kernel's uptime without a stamp; None
        without either).  The repeats of a row all have the same kind of time."""
        if kind != _NONE:
            return value // _MINUTE_US
        return None if uptime != uptime else int(uptime // 60)

    def add_count(self, row: int, n: int) -> None:
        """Lines an event stored already stands for besides its own."""
        self.count[row] += n

    # ------------------------------------------------------------- reading
    def stamps(self):
        """The stamp tuple of every row, in row order."""
        return [unpack_stamp(k, v, o) for k, v, o in zip(self.stamp_kind, self.stamp, self.stamp_offset)]

    def levels(self) -> list:
        return [self.strings[c] for c in self.level]

    def messages(self) -> list:
        return self.message

    def columns(self, offsets: bool) -> dict:
        """The event columns (without times: the caller settles them),
        ``offset`` left unknown unless ``offsets`` (the file's bytes are the
        scanned ones)."""
        n = len(self.message)
        strings = np.array(self.strings, dtype=object)

        def text(column):
            return strings[np.frombuffer(column, dtype=np.uint32)]

        def whole(column, missing=None):
            values = np.frombuffer(column, dtype=np.int64)
            out = pd.array(values, dtype="Int64")
            if missing is not None:
                out[values == missing] = pd.NA
            return out

        message = np.empty(n, dtype=object)
        message[:] = self.message
        detail = np.full(n, None, dtype=object)
        for row, lines in self.detail.items():
            detail[row] = lines
        span = np.zeros(n)
        per_minute = np.full(n, None, dtype=object)
        for row, (kind, value, _, uptime) in self.last.items():
            last, first = _seconds(kind, value, uptime), _seconds(self.stamp_kind[row], self.stamp[row],
                                                                  self.uptime[row])
            if last is not None and first is not None:
                span[row] = last - first
            counts = self.minutes[row]
            if None not in counts:
                per_minute[row] = tuple(counts.get(m, 0) for m in range(min(counts), max(counts) + 1))
        out = {
            "host": text(self.host), "source": np.full(n, self.source, dtype=object), "kind": text(self.kind),
            "pid": whole(self.pid, _NO_PID), "process": text(self.process), "message": message,
            "file": text(self.file), "line": whole(self.line), "level": text(self.level),
            "detail": detail, "count": whole(self.count), "uptime": np.frombuffer(self.uptime, dtype=np.float64).copy(),
            "repeats": whole(self.repeats), "repeat_span": span, "per_minute": per_minute,
            "offset": whole(self.offset, -1) if offsets else pd.array([pd.NA] * n, dtype="Int64"),
            "tag": text(self.tag),
        }
        for name, values in self.named.items():
            column = np.full(n, None, dtype=object)
            for row, value in values.items():
                column[row] = value
            out[name] = column
        if self.conn:
            conn = np.full(n, np.nan)
            for row, value in self.conn.items():
                conn[row] = value
            out["conn"] = conn.astype(np.int64) if len(self.conn) == n else conn
        return out
