"""The log scan: one streaming pass over a log file.

A log file is read once, in large blocks of raw (decompressed) bytes
(:mod:`~sarsleuth.inputs.parsers.logs.blocks`).  Per block, three cheap things
happen over the whole buffer:

* lines are counted per minute of their time stamp
  (:mod:`~sarsleuth.inputs.parsers.logs.volumes`);
* a candidate finder picks the few lines that could match a signature,
  without decoding anything else (:mod:`~sarsleuth.inputs.parsers.logs.engine`);
* only candidate lines, and the lines that follow a candidate which opens a
  multi-line report, are decoded, parsed by the format's line parser and
  assembled into events (:mod:`~sarsleuth.inputs.parsers.logs.assembly`).

:func:`~sarsleuth.inputs.parsers.logs.sources.build_source` then settles years and
zones and makes the :class:`~sarsleuth.model.Source`.  The format readers
(syslog, journal, dmesg, nginx error.log) describe their layout with a
:class:`LogFormat` and call :func:`scan`.
"""
from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from sarsleuth.errors import located
from sarsleuth.knowledge.reports import known_ratelimiters
from sarsleuth.inputs.parsers.logs import assembly
from sarsleuth.inputs.parsers.logs.assembly import Assembler
from sarsleuth.inputs.parsers.logs.blocks import BLOCK_BYTES, Block, iter_blocks, total_size
from sarsleuth.inputs.parsers.logs.engine import candidate_patterns, candidate_regex, make_finder
from sarsleuth.inputs.parsers.logs.event_columns import EventColumns
from sarsleuth.inputs.parsers.logs.lines import MAX_DECODED_CHARS, LineInfo, decode_line, head_lines, stamp_seconds
from sarsleuth.inputs.parsers.logs.sources import build_source
from sarsleuth.inputs.parsers.logs.volumes import VolumeCounter, VolumeSpec

SUPPRESSED_BYTES_RE = re.compile(rb"(?:([\w.]+): )?(\d+) callbacks suppressed")


@dataclass
class LogFormat:
    """What the scan needs to know about one log layout."""

    source: str                                  # event ``source`` (= parser kind)
    parse_line: Callable[[str], LineInfo]
    volume: VolumeSpec
    variant: str = ""
    #: Patterns of lines that must be decoded although their raw bytes do
    #: not show a signature (e.g. journal messages stored as byte arrays).
    extra_candidates: tuple = ()
    #: Is a line's message a piece of its raw text (not decoded from JSON)?
    #: Then the patterns the engine saw on the line tell its kind.
    message_in_line: bool = True


@dataclass
class ScanResult:
    events: EventColumns
    lines: int
    volume_keys: dict
    levels: Counter
    unattributed: int                            # lines of rate-limit summaries no event took
    hosts: Counter
    samples: list                                # (line, LineInfo) spread over the file
    engine: str
    warnings: list = field(default_factory=list)
    aggregated: int = 0                          # events counted in their burst's kept record
    offsets: bool = True                         # the events' byte offsets are offsets in the file's content


def scan(path, fmt: LogFormat, all_lines: bool = False, engine: str | None = None,
         progress: Callable[[int, int | None], None] | None = None,
         sample_every: int = 0, block_bytes: int = BLOCK_BYTES, user_signatures: tuple = (),
         blocks=None) -> ScanResult:
    """Stream ``path`` once and return the assembled event records.

    ``sample_every`` > 0 additionally decodes a few lines per block (for
    clock anchors); ``progress(bytes_done, total)`` is called per block
    (``ParseOptions.progress`` of the reader);
    ``user_signatures`` are the case's own ``[[signature]]`` entries;
    ``engine`` forces a candidate finder (``"hyperscan"``, ``"re2"``);
    ``blocks``: the lines to scan, made by the caller (who tells the
    progress), instead of the file's.
    """
    state = _ScanState(path, fmt, all_lines, engine, sample_every, tuple(user_signatures))
    if blocks is not None:
        for block in blocks:
            state.block(block)
        return state.result()
    total = total_size(path)
    report = progress or _untold
    where: dict = {}
    for block in iter_blocks(path, state.warnings, block_bytes, where):
        state.block(block)
        done = where.get("read", 0)
        report(min(done, total) if total else done, total)
    return state.result(offsets=not where.get("altered"))


def _untold(done: int, total: int | None) -> None:
    """Progress nobody shows."""


class _ScanState:
    """Everything one scan carries from block to block."""

    def __init__(self, path, fmt: LogFormat, all_lines: bool, engine: str | None, sample_every: int,
                 user_signatures: tuple = ()):
        self.path = os.fspath(path)
        self.fmt = fmt
        self.sample_every = sample_every
        self.assembler = Assembler(self.path, fmt.source, all_lines, user_signatures)
        self.volume = VolumeCounter(fmt.volume)
        self.finder, self.kinds = make_finder(all_lines, engine, tuple(fmt.extra_candidates), user_signatures)
        if not fmt.message_in_line:
            self.kinds = None
        self.ratelimiters = known_ratelimiters()
        self.warnings: list[str] = []
        self.samples: list = []
        self.follow_left = 0
        self.origins: list | None = None      # the current block's (file, line, offset) of each line
        self.lines = self.bad_utf8 = self.nul_blocks = self.cut_lines = 0
        #: (raw line, cut, bad UTF-8) of the last candidate line when the
        #: event it made may take the same line again (see Assembler.again)
        self.last_event: tuple | None = None

    def block(self, block: Block) -> None:
        data, lo, hi = block.data, block.start, block.end
        window = np.frombuffer(data, dtype=np.uint8, count=hi - lo, offset=lo)
        ends = np.flatnonzero(window == 10)
        ends += lo
        block.first_line = self.lines + 1
        self.volume.add(data, lo, hi, ends)
        self.lines += len(ends)
        if data.find(b"\x00", lo, hi) != -1:
            self.nul_blocks += 1
        spans = self.finder.find(data, lo, hi, ends)
        starts = [s for s, _, _ in spans]
        numbers = (np.searchsorted(ends, starts) + block.first_line).tolist() if starts else []
        self.origins = block.origins
        self._walk(data, lo, hi, block.first_line, starts, numbers, [ids for _, _, ids in spans], block.offset)
        if self.sample_every:
            # small files are cheap to sample densely; big blocks get a few lines each
            every = self.sample_every if hi - lo >= BLOCK_BYTES // 2 else max(self.sample_every, 128)
            self.samples.extend(_samples(data, lo, hi, ends, block.first_line, self.fmt, every))

    def _walk(self, data: bytes, lo: int, n: int, first_line: int, starts: list, numbers: list, held: list,
              offset: int) -> None:
        """Feed candidate lines (``held``: the patterns each holds), and the
        lines a report asks to follow, to the assembler in file order
        (``offset``: where ``data`` starts in the stream)."""
        k, pos, line_no = 0, lo, first_line
        while pos < n:
            if self.follow_left <= 0:
                while k < len(starts) and starts[k] < pos:
                    k += 1
                if k == len(starts):
                    break
                pos, line_no = starts[k], numbers[k]
            ids = None
            if k < len(starts) and starts[k] == pos:
                ids = held[k] or ()
                k += 1
            end = data.find(b"\n", pos, n)
            self.follow_left = self._feed(data, pos, end, line_no, ids, offset + pos)
            if self.origins is not None and self.assembler.made is not None:
                self.assembler.made.setdefault("origin", self.origins[line_no - first_line])
            pos, line_no = end + 1, line_no + 1

    def _feed(self, data: bytes, pos: int, end: int, line_no: int, ids, at: int) -> int:
        """One line; ``ids`` None when it is no candidate, else the patterns
        it holds."""
        is_cand = ids is not None
        if is_cand and self.last_event is not None and end - pos == len(self.last_event[0]) \
                and data[pos:end] == self.last_event[0]:
            # the line the last event came from, printed again: the same event again
            self.cut_lines += self.last_event[1]
            self.bad_utf8 += self.last_event[2]
            return self.assembler.again(line_no)
        self.last_event = None
        hit = data.find(b" callbacks suppressed", pos, end) if is_cand else -1
        if hit != -1:
            # a bounded window: the regex must not crawl along a huge line
            m = SUPPRESSED_BYTES_RE.search(data, max(pos, hit - 64), hit + 21)
            if m is not None:
                fn = m.group(1).decode("ascii") if m.group(1) else None
                if fn not in self.ratelimiters:   # no need to decode it
                    return self.assembler.note_suppressed(line_no, int(m.group(2)), fn)
        text, cut = decode_line(data, pos, end)
        self.cut_lines += cut
        bad = "\ufffd" in text
        self.bad_utf8 += bad
        kind_of = None
        if is_cand and self.kinds is not None and text.isascii() and "\x00" not in text \
                and self.kinds.exact_for(ids) and data.find(b"\x00", pos, end) == -1:
            # the message is a piece of this ASCII line: the patterns the
            # engine saw on it are the only ones that can match it
            kinds = self.kinds
            kind_of = lambda message: kinds.kind(message, ids)     # noqa: E731
        follow = self.assembler.feed(line_no, self.fmt.parse_line(text), is_cand, at, kind_of)
        if is_cand and self.assembler.repeatable():
            self.last_event = (bytes(data[pos:end]), cut, bad)
        return follow

    def result(self, offsets: bool = True) -> ScanResult:
        spath, warnings = self.path, self.warnings
        if self.bad_utf8:
            warnings.append(located(spath, f"{self.bad_utf8} decoded line(s) had invalid UTF-8 (replaced)"))
        if self.nul_blocks:
            warnings.append(located(spath, "NUL bytes found (ignored)"))
        if self.cut_lines:
            warnings.append(located(spath, f"{self.cut_lines} line(s) longer than {MAX_DECODED_CHARS} "
                                           "characters were cut when decoded"))
        asm = self.assembler
        events = asm.finish()
        if asm.aggregated:
            warnings.append(located(spath, f"more than {assembly.KEEP_ALL_EVENTS} events: {asm.aggregated} event(s) "
                                           f"beyond {assembly.BURST_CAP} of one kind, host and minute (one a minute past "
                                           f"{assembly.SPARSE_FROM} events, one an hour past {assembly.HOURLY_FROM}) were "
                                           "counted in the last one kept (totals exact)"))
        return ScanResult(events, self.lines, self.volume.keys, self.volume.levels, asm.summaries.unattributed, asm.hosts,
                          self.samples, self.finder.name, warnings, asm.aggregated, offsets)


def _samples(data: bytes, lo: int, hi: int, ends, first_line: int, fmt: LogFormat, every: int) -> list:
    """Decode a few lines spread over ``data[lo:hi]``, plus a few
    ``audit(...)`` records: clock anchors that cost nothing to find."""
    if len(ends) <= every:   # a short block: every line is a sample
        ordered = [lo] + (ends[:-1] + 1).tolist()
        return [(first_line + i, fmt.parse_line(decode_line(data, pos, end)[0]))
                for i, (pos, end) in enumerate(zip(ordered, ends.tolist()))]
    step = max((hi - lo) // every, 1)
    starts = set()
    for k in range(every):
        at = min(lo + k * step, hi - 1)
        starts.add(max(data.rfind(b"\n", lo, at) + 1, lo))
        hit = data.find(b"audit(", at, min(at + step, hi))
        if hit != -1:
            starts.add(max(data.rfind(b"\n", lo, hit) + 1, lo))
    starts.add(max(data.rfind(b"\n", lo, hi - 1) + 1, lo))
    ordered = sorted(starts)
    numbers = (np.searchsorted(ends, ordered) + first_line).tolist()
    out = []
    for pos, line_no in zip(ordered, numbers):
        text, _ = decode_line(data, pos, data.find(b"\n", pos, hi))
        out.append((line_no, fmt.parse_line(text)))
    return out


__all__ = [
    "Block", "LineInfo", "LogFormat", "ScanResult", "VolumeSpec", "build_source", "candidate_patterns",
    "candidate_regex", "head_lines", "iter_blocks", "scan", "stamp_seconds",
]
