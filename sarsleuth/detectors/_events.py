"""Helpers shared by the log detectors: bursts of events in time, who
logged an event and how many lines it stands for."""
from __future__ import annotations

import bisect
import os
import stat
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sarsleuth.errors import InputError
from sarsleuth.textio import compression_of, decode, iter_lines


@dataclass
class Burst:
    host: object
    rows: object        # DataFrame of the events in the burst
    start: object
    end: object
    aligned: bool

    @property
    def lines(self) -> int:
        """Log lines the burst stands for (``callbacks suppressed`` included)."""
        return int(self.rows["count"].fillna(1).sum())


def printed(rows) -> int:
    """Times the lines of event rows were printed: a row of identical lines
    stored once counts each of its ``repeats``."""
    if "repeats" not in rows:
        return len(rows)
    return int(rows["repeats"].fillna(1).sum())


def writer(row) -> str:
    """Who logged an event row: its syslog tag, nginx for its own
    error.log, '' for the kernel's lines (they name no program) and when
    nothing says."""
    proc = getattr(row, "process", None)
    if isinstance(proc, str) and proc and proc not in ("None", "kernel"):
        return proc
    return "nginx" if str(getattr(row, "source", "")) == "nginx-error" else ""


def lines_of(row) -> int:
    """The log lines an event row stands for (``callbacks suppressed`` and
    aggregated bursts included)."""
    n = getattr(row, "count", None)
    return int(n) if n is not None and n == n and n else 1


def bursts(events, gap_seconds: float = 600.0, by_host: bool = True) -> list[Burst]:
    """Split events into bursts separated by more than ``gap_seconds``.
    Events whose time is not on the shared clock (NaT) form one unaligned
    burst per host."""
    out: list[Burst] = []
    if events is None or not len(events):
        return out
    groups = events.groupby(events["host"].fillna(""), sort=True) if by_host else [("", events)]
    for host, part in groups:
        host = host or None
        timed = part[part["timestamp"].notna()].sort_values(["timestamp", "line"], kind="stable")
        untimed = part[part["timestamp"].isna()]
        if len(timed):
            # a row of repeats lasts from its first to its last line
            span = timed["repeat_span"].fillna(0.0) if "repeat_span" in timed else 0.0
            ends = timed["timestamp"] + pd.to_timedelta(span, unit="s")
            gaps = (timed["timestamp"] - ends.cummax().shift()).dt.total_seconds().fillna(0).to_numpy()
            cuts = (np.flatnonzero(gaps > gap_seconds)).tolist()
            for lo, hi in zip([0] + cuts, cuts + [len(timed)]):
                chunk = timed.iloc[lo:hi]
                out.append(Burst(host, chunk, chunk["timestamp"].iloc[0], ends.iloc[lo:hi].max(), True))
        if len(untimed):
            out.append(Burst(host, untimed.sort_values("line"), pd.NaT, pd.NaT, False))
    return out


# --------------------------------------------------------------------------
# Quoting the line an event came from
# --------------------------------------------------------------------------

#: Longest quote of a line in evidence; longer lines are cut with an ellipsis.
QUOTE_CHARS = 240
#: Bytes between two remembered line starts of a plain file.
_INDEX_STEP = 256 * 1024
#: How far after an event's first line its quoted message may sit (a merged
#: OOM kill starts at its constraint line and quotes its "Killed process").
_MESSAGE_WINDOW = 40
#: How deep into a compressed file a line is fetched again (it must be
#: decompressed from the start each time).
_COMPRESSED_LINES = 100_000


def cut(text: str, limit: int = QUOTE_CHARS) -> str:
    """``text`` as it is, or its first ``limit`` characters and an ellipsis."""
    return text if len(text) <= limit else text[:limit - 1] + "…"


def quote_event(row) -> tuple[int, str] | None:
    """(line number, the line verbatim) of the file line an event row quotes:
    the row's own line, or the first line after it (within a report) that
    holds its message.  None when the file cannot be read again or is
    structured (journal JSON), where the message is the quote."""
    try:
        first = int(row.line)
    except (TypeError, ValueError):
        return None
    try:    # where the scan saw the line in the file, when it read the file's own bytes
        offset = int(getattr(row, "offset", None))
    except (TypeError, ValueError):
        offset = None
    lines = _file_lines(str(row.file), first, _MESSAGE_WINDOW, offset)
    if not lines or lines[0].lstrip().startswith("{"):
        return None
    needle = str(getattr(row, "message", "") or "")[:80]
    for offset, text in enumerate(lines):
        if needle and needle in text:
            return first + offset, cut(text)
    return first, cut(lines[0])


def _file_lines(path: str, first: int, count: int, offset: int | None = None) -> list[str]:
    """Lines ``first .. first+count-1`` (1-based) of a file, decoded, line
    ``first`` starting at byte ``offset`` when known; [] when it cannot be
    read."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            # a pipe or stdin was read once into a private copy, gone by now:
            # opening it again would wait for a writer, so the message is the quote
            return []
        if compression_of(path) is None:
            if offset is not None:
                return _lines_at(path, offset, count)
            return _plain_lines(path, st.st_size, st.st_mtime_ns, first, count)
        if first > _COMPRESSED_LINES:
            return []      # a compressed stream cannot seek: the message is the quote
        out = []
        for number, raw in iter_lines(path):
            if number >= first:
                out.append(decode(raw))
                if len(out) >= count:
                    break
        return out
    except (OSError, InputError):
        return []


def _lines_at(path: str, offset: int, count: int) -> list[str]:
    out = []
    with open(path, "rb") as fh:
        fh.seek(offset)
        for raw in fh:
            out.append(decode(raw.rstrip(b"\r\n")))
            if len(out) >= count:
                break
    return out


def _plain_lines(path: str, size: int, mtime: int, first: int, count: int) -> list[str]:
    starts = _line_index(path, size, mtime)
    i = bisect.bisect_right([s[0] for s in starts], first) - 1
    number, offset = starts[max(i, 0)]
    out = []
    with open(path, "rb") as fh:
        fh.seek(offset)
        for raw in fh:
            if number >= first:
                out.append(decode(raw.rstrip(b"\r\n")))
                if len(out) >= count:
                    break
            number += 1
    return out


_INDEXES: dict = {}


def _line_index(path: str, size: int, mtime: int) -> list[tuple[int, int]]:
    """(line number, byte offset) of a line start every ~256 KiB: one pass
    counting newlines, kept while the file is unchanged."""
    key = (path, size, mtime)
    if key in _INDEXES:
        return _INDEXES[key]
    starts, number, offset = [(1, 0)], 1, 0
    with open(path, "rb") as fh:
        while True:
            chunk = fh.read(_INDEX_STEP)
            if not chunk:
                break
            end = chunk.rfind(b"\n")
            if end < 0:
                offset += len(chunk)
                continue
            # resume at the line start after the chunk's last newline
            number += chunk.count(b"\n")
            starts.append((number, offset + end + 1))
            offset += len(chunk)
    if len(_INDEXES) > 64:
        _INDEXES.clear()
    _INDEXES[key] = starts
    return starts
