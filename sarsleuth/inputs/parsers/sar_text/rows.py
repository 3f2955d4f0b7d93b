"""The line-by-line state machine of the sar text reader: banners, table
headers, rows, summaries, restarts, and the day each row falls on."""
from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass, field

from sarsleuth.inputs.parsers.base import ParseOptions
from sarsleuth.inputs.parsers.sar_text.headerless import guess_columns
from sarsleuth.inputs.parsers.sar_text import sections
from sarsleuth.inputs.parsers.sar_text.lines import (AM_PM, BANNER_RE, CJK_TIME_RE, CLOCK_RE, DAILY_FILE_RE, PROMPT_RE,
                                               LineIndex, banner_date, line_batches, numeric_start)

#: A line that marks rows left out (``...``, ``…``, ``[...]``, ``<snip>``).
ELISION_RE = re.compile(r"^\s*(?:\.{3,}|…+|\[\s*(?:\.{3,}|…|snip)\s*\]|<\s*snip\s*>)\s*$", re.I)
#: A fall back of the clock of more than this many seconds is a new day;
#: smaller steps back (a DST change, a clock set back) stay on the same day.
MIDNIGHT_DROP = 2 * 3600


@dataclass
class Segment:
    """One banner (or the banner-less start of a paste) and what follows."""

    host: str | None
    kernel: str | None = None
    arch: str | None = None
    ncpu: int | None = None
    date_text: str | None = None
    line: int = 0
    date: _dt.date | None = None


@dataclass
class Block:
    """Rows read under one header in one segment (samples or averages)."""

    segment: int
    layout: sections.TableLayout
    label: str | None                  # None for samples, "Average" etc.
    first_line: int
    seconds: list = field(default_factory=list)
    rows: list = field(default_factory=list)
    lines: list = field(default_factory=list)   # line number of each row
    pieces: list = field(default_factory=list)  # rows already converted (see _assemble)
    sample: list = field(default_factory=list)  # the first rows as text, kept for the date order
    shift: int = 0                     # seconds taken off the rows still to convert (see Assembler._timeless)
    last_second: int | None = None     # the last row converted, for the next piece
    #: the time of the header the block's rows came under (sar prints there
    #: the record before the first row: where the first row's interval began)
    opened_at: int | None = None


class RowReader:
    """The line-by-line state machine; see the module docstring."""

    def __init__(self, path, options: ParseOptions):
        self.path = path
        self.options = options
        self.warnings: list[str] = []
        self.line_index = LineIndex(path)
        self.segments: list[Segment] = []
        self.blocks: dict = {}
        self.events: list[dict] = []
        self.event_keys: set = set()
        self.labels: set[str] = set()
        self.clock12 = False
        self.cjk_clock = False
        self.comma_decimals = False
        self.zone: str | None = None          # a zone printed after each time (see _is_zone)
        # the day of the month of a daily file sadc wrote (saDD, sarDD) that
        # the pasted command read, and its line: it settles a banner's order
        self.day_named: tuple | None = None
        self.layout = None
        self.header_unknown = False
        self.unknown_headers: dict[tuple, int] = {}
        self.orphan_rows = 0
        self.orphan_first = 0
        self.guessed_headers: dict[tuple, int] = {}     # columns -> first row read under them
        self.unknown_lines = 0
        self.unknown_first: tuple | None = None
        self.prompt_lines = 0
        self.short_rows = 0
        self.short_first = 0
        # midnight tracking (see _tick)
        self.day = 0
        self.last_tod: int | None = None
        self.pass_start: int | None = None
        self.header_second: int | None = None    # the last header's time (see Block.opened_at)
        self.averages_seen = False
        self._time_cache: tuple = ("", 0)
        self._tods: dict = {}
        self._clock12: tuple = ("", "", 0)   # time token, AM/PM, seconds of the last 12-hour row
        self._lead = 0
        self._block_key = None
        self._block = None

    # ---- reading -------------------------------------------------------
    def run(self, flush=None):
        """Read every line.  Data rows (nearly all lines) take a short path:
        a 24-hour time (the same token as the line before, or one of the
        ``HH:MM:SS`` shape), a known table, a number among the first two
        fields.  One-second files change the time on nearly every row, so
        a new time must not leave the short path."""
        lineno = 0
        index = self.line_index
        clock = self._clock
        tick = self._tick
        for batch in line_batches(self.path, self.warnings, index.spans):
            if flush is not None:
                flush()             # rows of the previous batch to numbers
            index.first_lines.append(lineno + 1)
            for line in batch:
                lineno += 1
                tokens = line.split()
                if not tokens:
                    continue
                block = self._block
                if block is not None and self._lead == 1 and len(tokens) > 1:
                    first = tokens[0]
                    cached = self._time_cache
                    if first == cached[0]:
                        tod = cached[1]
                    elif len(first) == 8 and first[2] == ":" and first[5] == ":":
                        tod = clock(first)
                    else:
                        tod = None
                    if tod is not None and (numeric_start(tokens[1])
                                            or (len(tokens) > 2 and numeric_start(tokens[2]))):
                        block.seconds.append(tick(tod))
                        block.rows.append(tokens[1:])
                        block.lines.append(lineno)
                        continue
                elif block is not None and self._lead == 2 and len(tokens) > 2:
                    # 12-hour clock: the same time and AM/PM as the line before
                    first, half, tod = self._clock12
                    if tokens[0] == first and tokens[1] == half and (
                            numeric_start(tokens[2]) or (len(tokens) > 3 and numeric_start(tokens[3]))):
                        block.seconds.append(tick(tod))
                        block.rows.append(tokens[2:])
                        block.lines.append(lineno)
                        continue
                self.line(lineno, line, tokens)
        return self

    def line(self, lineno: int, line: str, tokens: list):
        first = tokens[0]
        tod = self._clock(first)
        if tod is not None:
            lead = 1
            if len(tokens) > 1 and tokens[1] in AM_PM:
                tod = tod % 43200 + AM_PM[tokens[1]] * 3600
                lead = 2
                self.clock12 = True
            if len(tokens) > lead + 1 and self._is_zone(tokens[lead], tokens[lead + 1:]):
                lead += 1
            self._lead = lead
            if lead == 2:
                self._clock12 = (first, tokens[1], tod)
            self._timed(lineno, tod, tokens[lead:], line)
            return
        self._lead = 0
        if first == "Linux":
            m = BANNER_RE.match(line)
            date = banner_date(m) if m else None
            if date is not None:
                self._banner(lineno, m, date)
                return
        label_len = 0
        if first.endswith(":") and len(first) > 1:
            label_len = 1
        elif len(tokens) > 1 and tokens[1] == ":":
            label_len = 2
        if label_len and not first[0].isdigit():
            label = first.rstrip(":")
            self._summary(lineno, label, tokens[label_len:])
            return
        if ELISION_RE.match(line):
            # "..." where whoever pasted it left rows out: no gap of sadc's
            if self.segments and self.last_tod is not None:
                self._event(len(self.segments) - 1, self.day * 86400 + self.last_tod, "sar-elision",
                            "rows left out of the paste", lineno)
            return
        if PROMPT_RE.match(line):
            self.prompt_lines += 1
            named = DAILY_FILE_RE.search(line)
            if named and self.day_named is None:
                self.day_named = (int(named.group(1)), lineno)
            return
        self._unknown(lineno, line)

    def _is_zone(self, token: str, rest: list) -> bool:
        """Whether ``token``, after a row's time, is the zone the locale's
        clock prints (en_IN: ``01:42:28  IST``): the one a header line
        carried before its columns, or such a header's own."""
        if token == self.zone:
            return True
        if self.zone is None and not numeric_start(rest[0]) and sections.zone_before_columns(token, rest):
            self.zone = token
            return True
        return False

    def _clock(self, token: str) -> int | None:
        """Seconds since midnight of a time token, or None."""
        cached_token, cached = self._time_cache
        if token == cached_token:
            return cached
        known = self._tods.get(token)
        if known is not None:
            self._time_cache = (token, known)
            return known
        if len(token) == 8 and token[2] == ":" and token[5] == ":":
            try:
                tod = int(token[:2]) * 3600 + int(token[3:5]) * 60 + int(token[6:])
            except ValueError:
                return None
        else:
            m = CLOCK_RE.match(token)
            if m is None:
                m = CJK_TIME_RE.match(token)
                if m is None:
                    return None
                self.cjk_clock = True
            tod = int(m.group(1)) * 3600 + int(m.group(2)) * 60 + int(m.group(3))
        self._time_cache = (token, tod)
        self._tods[token] = tod       # sar -A prints every time once per table
        return tod

    def _banner(self, lineno: int, m: re.Match, date: str):
        ncpu = m.group("ncpu")
        self.segments.append(Segment(
            host=m.group("host"), kernel=m.group("kernel"), arch=m.group("arch"),
            ncpu=int(ncpu) if ncpu else None, date_text=date, line=lineno))
        self.layout = None
        self._block = self._block_key = None
        self._reset_day()
        self.pass_start = None

    def _segment_index(self, lineno: int) -> int:
        if not self.segments:
            self.segments.append(Segment(host=None, line=lineno))
        return len(self.segments) - 1

    def _reset_day(self):
        self.day = 0
        self.last_tod = None
        self.averages_seen = False

    def _tick(self, tod: int) -> int:
        """Seconds since the segment's midnight for a row at ``tod``: a fall
        back of the clock by more than MIDNIGHT_DROP is the next day."""
        if self.last_tod is not None and tod < self.last_tod - MIDNIGHT_DROP:
            self.day += 1
        self.last_tod = tod
        return self.day * 86400 + tod

    def _timed(self, lineno: int, tod: int, rest: list, line: str):
        if not rest:
            self._unknown(lineno, line)
            return
        seg = self._segment_index(lineno)
        head = rest[0]
        if head == "LINUX" and len(rest) > 1 and rest[1] == "RESTART":
            self._event(seg, self._tick(tod), "sar-restart", " ".join(rest), lineno)
            return
        if head == "COM":
            self._event(seg, self._tick(tod), "sar-comment", " ".join(rest[1:]), lineno)
            return
        if not numeric_start(head) and (len(rest) == 1 or not numeric_start(rest[1])):
            self._header(lineno, tod, tuple(rest))
            return
        if self.layout is None:
            columns = guess_columns(rest)
            if columns is None:
                self._orphan(lineno)
                return
            # rows pasted without their header: the table their values fit
            self._header(lineno, tod, columns)
            self.guessed_headers.setdefault(columns, lineno)
        block = self._current_block(seg, None, lineno)
        block.seconds.append(self._tick(tod))
        block.rows.append(rest)
        block.lines.append(lineno)

    def _header(self, lineno: int, tod: int, columns: tuple):
        layout = sections.table_layout(columns)
        if layout is None:
            self.unknown_headers.setdefault(columns, lineno)
        # A new pass over the day starts with each table of `sar -A -f`:
        # after the previous table's averages, or at the first header's time.
        if self.averages_seen or self.pass_start is None or tod == self.pass_start:
            self._reset_day()
        if self.pass_start is None:
            self.pass_start = tod
        self.header_second = self._tick(tod)
        self.layout = layout
        self.header_unknown = layout is None
        self._block = self._block_key = None

    def _summary(self, lineno: int, label: str, rest: list):
        self.labels.add(label)
        self.averages_seen = True
        if not rest:
            return
        if not numeric_start(rest[0]) and (len(rest) == 1 or not numeric_start(rest[1])):
            self.layout = sections.table_layout(tuple(rest))
            self._block = self._block_key = None
            self.header_unknown = self.layout is None
            if self.layout is None:
                self.unknown_headers.setdefault(tuple(rest), lineno)
            return
        if self.layout is None:
            self._orphan(lineno)
            return
        seg = self._segment_index(lineno)
        block = self._current_block(seg, label, lineno)
        block.seconds.append(0)
        block.rows.append(rest)
        block.lines.append(lineno)

    def _current_block(self, seg: int, label, lineno: int) -> Block:
        """The block rows go to; cached until the table, segment or kind of
        row changes (the fast path in run() appends to it directly)."""
        key = (seg, id(self.layout), label)
        if key != self._block_key:
            block = self.blocks.get(key)
            if block is None:
                block = self.blocks[key] = Block(seg, self.layout, label, lineno,
                                                 opened_at=None if label else self.header_second)
            self._block_key, self._block = key, block
        return self._block

    def _event(self, seg: int, seconds: int, kind: str, message: str, lineno: int):
        key = (seg, seconds, kind, message)
        if key in self.event_keys:
            return
        self.event_keys.add(key)
        self.events.append({"segment": seg, "seconds": seconds, "kind": kind,
                            "message": message, "line": lineno})

    def _orphan(self, lineno: int):
        if self.header_unknown:
            return  # rows of a table whose header was not recognised: warned there
        self.orphan_rows += 1
        if self.orphan_rows == 1:
            self.orphan_first = lineno

    def _unknown(self, lineno: int, line: str):
        self.unknown_lines += 1
        if self.unknown_first is None:
            self.unknown_first = (lineno, line.strip()[:60])

