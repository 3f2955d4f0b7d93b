"""Rate-limit summaries: ``N callbacks suppressed`` counted in the event
they stand for.

The kernel's rate limiters print the summary just before the first message
they let through again, so a summary belongs to the next compatible event
(of a kind its limiter holds back, close in time), else the previous one;
a summary of an unknown limiter only to the event printed on the very next
line.  Which limiter holds back which kinds is data
(``knowledge/reports.toml``).  A summary waits until the
:data:`SUMMARY_REACH` events after it are read, then adds its count to one
of the events around it, which are still open in the assembler (see
:mod:`~sarsleuth.inputs.parsers.logs.assembly`).
"""
from __future__ import annotations

import re
from collections import deque

from sarsleuth.inputs.parsers.logs.lines import stamp_seconds

#: Events before and after a summary it may be counted in.
SUMMARY_REACH = 20
#: How far (seconds, or lines when there are no times) a summary's count may travel.
SUMMARY_WINDOW_S = 60.0
SUMMARY_WINDOW_LINES = 50

SUPPRESSED_RE = re.compile(r"^(?:(?P<fn>[\w.]+): )?(?P<n>\d+) callbacks suppressed")


class Summaries:
    """The summaries of one file waiting for the events after them.

    Events are numbered in the order they were made; ``open`` holds the
    events numbered ``first_open`` on (the assembler's open records)."""

    def __init__(self, know, source: str):
        self.know, self.source = know, source
        self.waiting: deque[dict] = deque()
        self.unattributed = 0            # lines of summaries no event took

    def note(self, count: int, fn: str | None, line_no: int, t, uptime, made: int) -> None:
        """A summary read on ``line_no``, after ``made`` events."""
        self.waiting.append({"n": count, "fn": fn, "line": line_no, "t": t, "uptime": uptime, "at": made})

    def oldest_needed(self) -> int | None:
        """The number of the oldest event a waiting summary may still be counted in."""
        return self.waiting[0]["at"] - SUMMARY_REACH if self.waiting else None

    def settle(self, open_records, first_open: int, made: int, everything: bool = False) -> None:
        """Count the summaries whose following events are all read (all of
        them with ``everything``: the file is over)."""
        while self.waiting and (everything or made >= self.waiting[0]["at"] + SUMMARY_REACH):
            self._attribute(self.waiting.popleft(), open_records, first_open, made)

    def _attribute(self, sup: dict, open_records, first_open: int, made: int) -> None:
        allowed = self.know.ratelimit.get(sup["fn"] or "")
        i = sup["at"]
        if allowed is None:
            # an unknown ratelimiter: only the message printed right after
            # it is known to be the one it let through
            nxt = open_records[i - first_open] if i < made else None
            target = nxt if nxt is not None and nxt["line"] == sup["line"] + 1 \
                and nxt["kind"] not in self.know.never_suppressed else None
        else:
            after = (open_records[n - first_open] for n in range(i, min(i + SUMMARY_REACH, made)))
            target = self._near(sup, after, allowed)
            if target is None:
                before = (open_records[n - first_open] for n in range(i - 1, max(i - SUMMARY_REACH, first_open) - 1, -1))
                target = self._near(sup, before, allowed)
        if target is not None:
            target["count"] += sup["n"]
        else:
            self.unattributed += sup["n"]

    def _near(self, sup: dict, records, allowed) -> dict | None:
        if self.source in self.know.continued_sources:
            return None
        for record in records:
            if allowed and record["kind"] not in allowed:
                continue
            t = stamp_seconds(record["stamp"])
            if sup["t"] is not None and t is not None:
                if abs(t - sup["t"]) > SUMMARY_WINDOW_S:
                    return None
            elif sup["uptime"] is not None and record["uptime"] is not None:
                if abs(record["uptime"] - sup["uptime"]) > SUMMARY_WINDOW_S:
                    return None
            elif abs(record["line"] - sup["line"]) > SUMMARY_WINDOW_LINES:
                return None
            return record
        return None
