"""How detectors cite what they saw: a sar value by the row it was printed
on (matched against the value, since a line number alone does not say
which file of a host it came from), a log event by its line, a limit by the
configuration line it was read from.  Evidence quotes lines verbatim; a
binary sa file, which has no lines, is cited with a sentence of numbers."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from sarsleuth.model import Evidence, quoted, repeated
from sarsleuth.timebase.clock import on_clock


class PrintedRows:
    """The rows of sar and sadf text that a case's metric values were read
    from, found again by value (``section_index``: a section's
    ``{(metric, device, host): series key}``, or None)."""

    def __init__(self, store, sources: list, section_index):
        self.store = store
        self.sources = sources
        self._section_index = section_index
        self._paths: dict | None = None
        self._spans: list | None = None
        self._lines: dict = {}

    def path_for(self, section: str, host) -> str:
        """The file a host's sar section came from (for evidence), or the
        host's first metric source, or ''."""
        if self._paths is None:
            paths: dict = {}
            for s in self.sources:
                if not s.store:
                    continue
                hosts = [s.host] if s.host is not None else s.store.hosts()
                for h in hosts:
                    for sec in s.store.sections():
                        paths.setdefault((h, str(sec)), s.path)
                    paths.setdefault((h, None), s.path)
            self._paths = paths
        return self._paths.get((host, section)) or self._paths.get((host, None), "")

    def _records(self) -> list:
        """``(hosts, start, end, sections, path)`` of each sar source, once."""
        if self._spans is None:
            self._spans = []
            for s in self.sources:
                if not s.store:
                    continue
                lo, hi = s.span()
                if lo is not None:
                    hosts = {s.host} if s.host is not None else set(s.store.hosts())
                    self._spans.append((hosts, lo, hi, {str(x) for x in s.store.sections()}, s.path))
        return self._spans

    def _holding(self, host, ts) -> list:
        out = []
        for rec in self._records():
            try:
                if host in rec[0] and rec[1] <= ts <= rec[2]:
                    out.append(rec)
            except TypeError:         # a wall clock beside an instant: no common time
                continue
        return out

    def path_at(self, section: str, host, ts) -> str:
        """The file of ``host`` holding ``section`` whose records span
        ``ts`` (a day's sa file among a month's), else :meth:`path_for`."""
        for rec in self._holding(host, ts):
            if section in rec[3]:
                return rec[4]
        return self.path_for(section, host)

    def one_record(self, host, start, end) -> bool:
        """Whether a hole from ``start`` to ``end`` lies in one recording of
        ``host``: one file holds both sides, or the files on either side
        hold the same tables (the daily files of one collector).  Two pastes
        of different tables (``sar -u`` of the night, ``sar -d`` of the
        morning) are two recordings, not one with a hole."""
        before, after = self._holding(host, start), self._holding(host, end)
        if not before or not after:
            return True             # no file says where its records end: the samples alone tell
        return any(a is b or a[3] & b[3] for a in before for b in after)

    def one_invocation(self, host, start, end) -> bool:
        """Whether a hole from ``start`` to ``end`` lies inside one run of
        sar: some table sampled on both sides, and in a text file both rows
        under one banner, or under banners of different days (daily
        outputs put one after the other).  Two banners of one day are two
        commands (``sar 1 2; sar -B 1 2``, or one file's two windows): the
        time between them is no stall of the recording."""
        shared = self.store.sections_at(host, start) & self.store.sections_at(host, end)
        if not shared:
            return False
        section = min(shared)
        before, after = self.row_line(section, host, start), self.row_line(section, host, end)
        if before is None or after is None or before[0] != after[0]:
            return True          # a binary file, or two files: one_record says
        segments = next((s.meta.get("segments") or [] for s in self.sources if s.path == before[0]), [])
        first, second = (max((g for g in segments if g["line"] <= ln), key=lambda g: g["line"], default=None)
                         for ln in (before[1], after[1]))
        return first is second or first is None or second is None or first["date"] != second["date"]

    def source_with(self, section: str, host) -> str:
        """The path of the first source of ``host`` holding ``section``, or ''
        (unlike :meth:`path_for`, no other source of the host instead)."""
        self.path_for(section, host)            # builds the table of paths once
        return self._paths.get((host, section), "")

    def row_line(self, section: str, host, ts, *, device: str | None = None,
                 metric: str | None = None):
        """``(path, line, text)`` of the file line a sar row at ``ts`` was
        read from (the given device, else the all-CPU/device-less row, else
        the first device), or None when the value did not come from a text
        file (a binary sa file) or the line cannot be read again."""
        store = self.store
        if not store.has_lines():
            return None
        index = self._section_index(section) or {}
        keys = [k for k in index
                if (host is None or k[2] == host) and (device is None or k[1] == device)
                and (metric is None or k[0] == metric)]
        if not keys:
            return None
        keys.sort(key=lambda k: (k[1] not in ("all", ""), k[1], k[0]))
        try:
            when = pd.Timestamp(ts)
        except (TypeError, ValueError):
            return None
        for key in keys[:8]:
            run = store.runs[index[key]]
            if run.lines is None:
                continue
            if (when.tzinfo is None) != (run.tz is None):
                return None          # naive and aware times never name the same row
            stamp = (when.tz_convert("UTC").tz_localize(None) if when.tzinfo is not None else when).as_unit("ns").value
            for p in np.flatnonzero(run.stamps == stamp)[:1]:
                line = int(run.lines[p])
                if line < 0:
                    continue
                found = self._quote_line(key[2], line, float(run.values[p]))
                if found is not None:
                    return found
        return None

    def _quote_line(self, host, line: int, value: float):
        """The line of a text source of ``host`` that holds ``value`` (the
        line column does not say which file a row came from when several
        files cover the host, so the line is checked against the value)."""
        for s in self.sources:
            index = s.meta.get("line_index")
            if index is None or (host is not None and s.host != host and host not in s.meta.get("hosts", ())):
                continue
            key = (s.path, line)
            if key not in self._lines:
                self._lines[key] = index.read_line(line)
            text = self._lines[key]
            if text is not None and _holds(text, value):
                return s.path, line, quoted(text)
        return None


def _holds(text: str, value: float) -> bool:
    """Does a printed row hold ``value`` among its fields (as sar/sadf print
    it: two decimals, comma decimals, ``;`` separated)?"""
    if value != value:
        return False
    return (_among(text.replace(";", " ").split(), value)
            # sadf -j and -x lines: "iowait": 0.12,  iowait="0.12"  <memfree>1437740</memfree>
            or _among((t.strip(",:") for t in _MARKUP_RE.split(text)), value))


_MARKUP_RE = re.compile(r'[\s;"=<>{}\[\]]+')


def _among(tokens, value: float) -> bool:
    for token in tokens:
        try:
            printed = float(token.replace(",", "."))
        except ValueError:
            continue
        if abs(printed - value) <= max(0.0051, abs(value) * 1e-9):
            return True
    return False


def metric_evidence(ctx, section: str, host, ts, text: str, *, device: str | None = None,
                    metric: str | None = None) -> Evidence:
    """Evidence for a sar value at ``ts``: the row of the file it was read
    from, ``path:line`` and the line verbatim (sar text, sadf -d); for a
    binary sa file, which has no lines, the file and ``text``, a sentence
    with the numbers (``ctx``: the detectors' Context)."""
    found = ctx.printed.row_line(section, host, ts, device=device, metric=metric)
    if found is not None:
        return Evidence(path=found[0], line=found[1], text=found[2])
    return Evidence(path=ctx.printed.path_at(section, host, ts), line=None, text=text)


def limit_evidence(limit) -> Evidence:
    """Evidence quoting the configuration line a limit was read from."""
    return Evidence(path=limit.path, line=limit.line, text=limit.text)


def evidence_from_events(clock, rows, limit: int = 8) -> list[Evidence]:
    """Evidence lines from event rows (first ``limit``): the file and line
    of each, quoted verbatim once the findings are known
    (:func:`sarsleuth.inputs.evidence_lines.quote`); the message, after its time on its
    host's clock (``clock``: the case's
    :class:`~sarsleuth.timebase.clock.Clock`), stands in until then, and
    where the file cannot be read again."""
    out = []
    for r in rows.head(limit).itertuples(index=False):
        line = None if r.line is None or (hasattr(r.line, "__class__") and str(r.line) == "<NA>") else int(r.line)
        out.append(Evidence(path=str(r.file), line=line, text=_quote(r, clock),
                            find=str(getattr(r, "message", "") or "") if line is not None else None,
                            offset=_offset(r) if line is not None else None))
        out[-1].repeated = _repeated(r, clock)
    return out


def _offset(row) -> int | None:
    """Where the scan saw the row's line start in its file, when it read the file's own bytes."""
    try:
        return int(getattr(row, "offset", None))
    except (TypeError, ValueError):
        return None


def _repeated(row, clock):
    """The identical lines an event row stands for, its times on its host's clock."""
    if getattr(row, "repeats", 1) in (1, None):
        return None
    first = getattr(row, "timestamp", None)
    try:
        if first is not None and not pd.isna(first):
            host = getattr(row, "host", None)
            zone = clock.story_zone([host]) if host is not None and host == host else None
            first = on_clock(first, zone)
    except (TypeError, ValueError):
        first = None
    return repeated(row.repeats, first, getattr(row, "repeat_span", 0.0), getattr(row, "per_minute", None))


def _quote(row, clock) -> str:
    ts = getattr(row, "timestamp", None)
    msg = str(row.message)
    proc = getattr(row, "process", None)
    prefix = ""
    try:
        if ts is not None and not pd.isna(ts):
            host = getattr(row, "host", None)
            zone = clock.story_zone([host]) if host is not None and host == host else None
            prefix = pd.Timestamp(on_clock(ts, zone)).strftime("%Y-%m-%d %H:%M:%S") + " "
    except (TypeError, ValueError):
        prefix = ""
    if proc and isinstance(proc, str) and proc not in ("", "None") and not msg.startswith(proc):
        return f"{prefix}{proc}: {msg}"
    return f"{prefix}{msg}"
