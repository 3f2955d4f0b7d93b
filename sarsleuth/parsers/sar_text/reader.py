"""sar text output (``sar -A``, ``sar -u -r ...``), from any sysstat version,
locale and platform, whole or pasted.

What the reader copes with:

* the banner ``Linux 2.6.32-358.el6.x86_64 (host) 05/06/2014 _x86_64_ (24 CPU)``
  with any date style sar's ``%x`` produces (``05/06/14``, ``05/06/2014``,
  ``21/11/26``, ``21.11.2026``, ``2026-11-21``, ``2026年11月21日``), several
  banners in one stream (files concatenated: each starts a segment);
* 24-hour and 12-hour (``03:05:03 PM``) clocks and the CJK clock
  (``05時12分01秒``); crossing midnight advances the date;
* comma decimals, ``sar -h`` unit suffixes (``1.4G``, ``46.1%``), colours,
  ``--pretty``/``-h`` layouts with the device at the end of the line;
* ``Average:``/``Summary:`` rows in any language (``Moyenne :``,
  ``Durchschn.:``, ``平均値:``): they are not samples, so they are kept out of
  the metrics table, in ``Source.meta["averages"]`` (columns host, label,
  section, device, metric, value);
* ``LINUX RESTART`` lines become ``sar-restart`` events (``COM`` lines
  ``sar-comment`` events), once per restart although ``sar -A`` repeats them
  in every table;
* pasted text: shell prompts, indentation, a table without its banner.

Dates are never guessed silently.  A banner like ``05/06/14`` is read
day-first or month-first from the file's own evidence (a field over 12,
another banner of the same file, a 12-hour clock = US style, a localized
``Average`` label or comma decimals = day-first locale) or from
``options.date_order`` (``--date-order mdy|dmy``).  When nothing decides,
the C locale's month-first order is used (``sar``'s own default rendering)
and a warning names the flag; ``meta["date_assumed"]`` is then True.  A table
without any banner takes the date of ``options.year_hint`` when given, else
it is placed on 1970-01-01 with ``meta["date_unknown"] = True`` and a
warning.  Timestamps are naive wall clock, localized with ``options.tz``.
"""
from __future__ import annotations

import datetime as _dt
import gc
import re
from dataclasses import dataclass, field

import numpy as np

from sarsleuth.errors import InputError, located
from sarsleuth.model import Source
from sarsleuth.textio import DECOMPRESSION_ERRORS, MAX_LINE_BYTES, decode, open_binary
from sarsleuth.parsers.sar_text import sections
from sarsleuth.parsers.base import ParseOptions, Parser, events_frame, metrics_frame

BANNER_RE = re.compile(
    r"^\s*Linux\s+(?P<kernel>\S+)\s+\((?P<host>[^)]*)\)\s+(?P<date>\S+)"
    r"(?:\s+_(?P<arch>\S+?)_(?=\s|$))?(?:\s+\((?P<ncpu>\d+)\s+CPU\))?")
DATE_TOKEN_RE = re.compile(r"^\d{1,4}[/.\-]\d{1,2}[/.\-]\d{1,4}\.?$|^\d{4}年\d{1,2}月\d{1,2}日$")
CJK_TIME_RE = re.compile(r"^(\d{1,2})[時时](\d{1,2})分(\d{1,2})秒$")
CLOCK_RE = re.compile(r"^(\d{1,2}):(\d\d):(\d\d)$")
ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
PROMPT_RE = re.compile(r"^\s*(?:\S*[$#>%]\s|\$|#|.*\bsar\b.*\|)")
AM_PM = {"AM": 0, "PM": 12, "am": 0, "pm": 12}
#: Labels of summary rows in locales sysstat ships.  Others are recognised
#: by their trailing colon; this list only says which ones are English.
ENGLISH_LABELS = {"Average", "Summary", "Minimum", "Maximum", "Last"}
#: A fall back of the clock of more than this many seconds is a new day;
#: smaller steps back (a DST change, a clock set back) stay on the same day.
MIDNIGHT_DROP = 2 * 3600
SENTINEL_DATE = _dt.date(1970, 1, 1)
#: sar -h unit letters, powers of 1024 of a byte.
HUMAN_UNITS = {"B": 0, "k": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}
HUMAN_VALUE_RE = re.compile(r"^(-?\d+(?:[.,]\d+)?)([BkMGTPE%]?)$")


@dataclass
class _Segment:
    """One banner (or the banner-less start of a paste) and what follows."""

    host: str | None
    kernel: str | None = None
    arch: str | None = None
    ncpu: int | None = None
    date_text: str | None = None
    line: int = 0
    date: _dt.date | None = None


@dataclass
class _Block:
    """Rows read under one header in one segment (samples or averages)."""

    segment: int
    layout: sections.TableLayout
    label: str | None                  # None for samples, "Average" etc.
    first_line: int
    seconds: list = field(default_factory=list)
    rows: list = field(default_factory=list)


class _Reader:
    """The line-by-line state machine; see the module docstring."""

    def __init__(self, path, options: ParseOptions):
        self.path = path
        self.options = options
        self.warnings: list[str] = []
        self.segments: list[_Segment] = []
        self.blocks: dict = {}
        self.events: list[dict] = []
        self.event_keys: set = set()
        self.labels: set[str] = set()
        self.clock12 = False
        self.cjk_clock = False
        self.comma_decimals = False
        self.layout = None
        self.header_unknown = False
        self.unknown_headers: dict[tuple, int] = {}
        self.orphan_rows = 0
        self.orphan_first = 0
        self.unknown_lines = 0
        self.unknown_first: tuple | None = None
        self.prompt_lines = 0
        self.short_rows = 0
        self.short_first = 0
        # midnight tracking (see _tick)
        self.day = 0
        self.last_tod: int | None = None
        self.pass_start: int | None = None
        self.averages_seen = False
        self._time_cache: tuple = ("", 0)
        self._lead = 0
        self._block_key = None
        self._block = None

    # ---- reading -------------------------------------------------------
    def run(self):
        """Read every line.  Data rows (nearly all lines) take a short path:
        same time token as the line before, a known table, a number among
        the first two fields."""
        lineno = 0
        for batch in _line_batches(self.path, self.warnings):
            for line in batch:
                lineno += 1
                tokens = line.split()
                if not tokens:
                    continue
                block = self._block
                if block is not None and tokens[0] == self._time_cache[0] and self._lead == 1:
                    rest = tokens[1:]
                    if rest and (_numeric_start(rest[0]) or (len(rest) > 1 and _numeric_start(rest[1]))):
                        block.seconds.append(self._tick(self._time_cache[1]))
                        block.rows.append(rest)
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
            self._lead = lead
            self._timed(lineno, tod, tokens[lead:], line)
            return
        self._lead = 0
        if first == "Linux":
            m = BANNER_RE.match(line)
            if m and DATE_TOKEN_RE.match(m.group("date")):
                self._banner(lineno, m)
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
        if PROMPT_RE.match(line):
            self.prompt_lines += 1
            return
        self._unknown(lineno, line)

    def _clock(self, token: str) -> int | None:
        """Seconds since midnight of a time token, or None."""
        cached_token, cached = self._time_cache
        if token == cached_token:
            return cached
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
        return tod

    def _banner(self, lineno: int, m: re.Match):
        ncpu = m.group("ncpu")
        self.segments.append(_Segment(
            host=m.group("host"), kernel=m.group("kernel"), arch=m.group("arch"),
            ncpu=int(ncpu) if ncpu else None, date_text=m.group("date"), line=lineno))
        self.layout = None
        self._block = self._block_key = None
        self._reset_day()
        self.pass_start = None

    def _segment_index(self, lineno: int) -> int:
        if not self.segments:
            self.segments.append(_Segment(host=None, line=lineno))
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
        if not _numeric_start(head) and (len(rest) == 1 or not _numeric_start(rest[1])):
            self._header(lineno, tod, tuple(rest))
            return
        if self.layout is None:
            self._orphan(lineno)
            return
        block = self._current_block(seg, None, lineno)
        block.seconds.append(self._tick(tod))
        block.rows.append(rest)

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
        self._tick(tod)
        self.layout = layout
        self.header_unknown = layout is None
        self._block = self._block_key = None

    def _summary(self, lineno: int, label: str, rest: list):
        self.labels.add(label)
        self.averages_seen = True
        if not rest:
            return
        if not _numeric_start(rest[0]) and (len(rest) == 1 or not _numeric_start(rest[1])):
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

    def _current_block(self, seg: int, label, lineno: int) -> _Block:
        """The block rows go to; cached until the table, segment or kind of
        row changes (the fast path in run() appends to it directly)."""
        key = (seg, id(self.layout), label)
        if key != self._block_key:
            block = self.blocks.get(key)
            if block is None:
                block = self.blocks[key] = _Block(seg, self.layout, label, lineno)
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


#: Bytes read at a time; lines are handed out in batches of one chunk.
CHUNK_BYTES = 4 << 20


def _line_batches(path, warnings: list):
    """Lists of decoded lines, one chunk of the (decompressed) file at a
    time, with colours stripped and narrow/no-break spaces made plain:
    streaming, and without a Python call per line."""
    fh = open_binary(path)
    carry = b""
    skipping = False          # inside the unread tail of an over-long line
    cut_lines = 0
    offset = 0
    try:
        while True:
            try:
                chunk = fh.read(CHUNK_BYTES)
            except DECOMPRESSION_ERRORS as exc:
                warnings.append(located(path, f"compressed stream damaged ({exc}); the rest was skipped",
                                        offset=offset))
                chunk = b""
            if not chunk:
                break
            offset += len(chunk)
            if skipping:
                nl = chunk.find(b"\n")
                if nl < 0:
                    continue
                chunk, skipping = chunk[nl:], False
            chunk = carry + chunk
            cut = chunk.rfind(b"\n")
            if cut < 0:
                # no end of line in sight: keep a bounded head of the line only
                carry = chunk
                if len(carry) > MAX_LINE_BYTES:
                    carry, skipping = carry[:MAX_LINE_BYTES], True
                    cut_lines += 1
                continue
            carry = chunk[cut + 1:]
            if len(carry) > MAX_LINE_BYTES:
                carry, skipping = carry[:MAX_LINE_BYTES], True
                cut_lines += 1
            yield _clean(decode(chunk[:cut])).split("\n")
        if carry:
            yield _clean(decode(carry)).split("\n")
    finally:
        fh.close()
    if cut_lines:
        warnings.append(located(path, f"{cut_lines} line(s) longer than {MAX_LINE_BYTES} bytes were cut"))


def _clean(text: str) -> str:
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\x1b" in text:
        text = ANSI_RE.sub("", text)
    if "\u202f" in text or "\xa0" in text:
        text = text.replace("\u202f", " ").replace("\xa0", " ")
    return text


def _numeric_start(token: str) -> bool:
    c = token[0]
    return c.isdigit() or (c in "-+." and len(token) > 1 and token[1].isdigit())


# ---- dates -----------------------------------------------------------------

@dataclass
class _DateReading:
    date: _dt.date | None
    order: str           # iso, ymd, mdy, dmy, cjk
    decided: bool        # False when the order had to be assumed


def _split_date(text: str):
    """(a, b, c, separator) of a numeric date, or None."""
    m = re.match(r"^(\d{1,4})([/.\-])(\d{1,2})[/.\-](\d{1,4})\.?$", text)
    if not m:
        return None
    return int(m.group(1)), int(m.group(3)), int(m.group(4)), m.group(2), len(m.group(1))


def _year(y: int) -> int:
    if y >= 100:
        return y
    return 2000 + y if y < 70 else 1900 + y


def _order_evidence(text: str) -> str | None:
    """Order a single date token decides by itself (a field over 12)."""
    parts = _split_date(text)
    if not parts:
        return None
    a, b, _c, sep, width = parts
    if width == 4 or sep == "-" and width == 4:
        return "ymd"
    if a > 12 >= b:
        return "dmy"
    if b > 12 >= a:
        return "mdy"
    return None


def _read_date(text: str, order_hint: str | None) -> _DateReading:
    m = re.match(r"^(\d{4})年(\d{1,2})月(\d{1,2})日$", text)
    if m:
        return _DateReading(_safe_date(int(m.group(1)), int(m.group(2)), int(m.group(3))), "cjk", True)
    parts = _split_date(text)
    if not parts:
        return _DateReading(None, "unknown", False)
    a, b, c, sep, width = parts
    if width == 4:
        return _DateReading(_safe_date(a, b, c), "iso" if sep == "-" else "ymd", True)
    own = _order_evidence(text)
    if sep == "." and own is None:
        own = "dmy"          # dotted dates are day-first in every sysstat locale
    order = own or order_hint
    decided = order is not None
    order = order or "mdy"
    if order == "dmy":
        return _DateReading(_safe_date(_year(c), b, a), "dmy", decided)
    return _DateReading(_safe_date(_year(c), a, b), "mdy", decided)


def _safe_date(y: int, m: int, d: int) -> _dt.date | None:
    try:
        return _dt.date(y, m, d)
    except ValueError:
        return None


# ---- values ----------------------------------------------------------------

def _human_value(token: str, metric: str) -> float:
    """A ``sar -h`` value (``1.4G``, ``46.1%``, ``0.0k``) in the metric's own
    unit: sizes are powers of 1024 of a byte, converted to kB for ``kb*``/
    ``*kB*`` metrics and to MB for ``MB*`` ones."""
    m = HUMAN_VALUE_RE.match(token)
    if not m:
        return np.nan
    number = float(m.group(1).replace(",", "."))
    unit = m.group(2)
    if unit in ("", "%"):
        return number
    size = number * 1024.0 ** HUMAN_UNITS[unit]
    if metric.startswith("MB"):
        return size / 1024.0 ** 2
    if metric.startswith("kb") or "kB" in metric or metric == "areq-sz":
        return size / 1024.0
    return size


def _to_float(values: np.ndarray, metrics: list[str], warn) -> np.ndarray:
    """String matrix (rows x metrics) to float64: the fast path is numpy's
    own conversion; comma decimals and ``sar -h`` suffixes take slower ones;
    tokens that are no number at all become NaN (and are counted), and so do
    infinities (``inf``, ``1e999``: sar never prints them)."""
    out = _convert(values, metrics, warn)
    infinite = np.isinf(out)
    if infinite.any():
        out[infinite] = np.nan
        warn(("bad", int(infinite.sum())))
    return out


def _convert(values: np.ndarray, metrics: list[str], warn) -> np.ndarray:
    try:
        return values.astype(np.float64)
    except (ValueError, TypeError):
        pass
    values = values.astype(str)
    swapped = np.char.replace(values, ",", ".")
    try:
        out = swapped.astype(np.float64)
        warn("comma")
        return out
    except ValueError:
        pass
    out = np.empty(values.shape, dtype=np.float64)
    bad = human = 0
    for j, metric in enumerate(metrics):
        for i, token in enumerate(swapped[:, j]):
            try:
                out[i, j] = float(token)
            except ValueError:
                value = _human_value(token, metric)
                out[i, j] = value
                if value != value:
                    bad += 1
                else:
                    human += 1
    if np.char.count(values, ",").any():
        warn("comma")
    if human:
        warn("human")
    if bad:
        warn(("bad", bad))
    return out


class _Assembler:
    """Turns the reader's blocks into the long metrics table, vectorized per
    block: one numpy string matrix per block, converted once."""

    def __init__(self, reader: _Reader, dates: list):
        self.reader = reader
        self.dates = dates
        self.parts: list[tuple] = []
        self.avg_parts: list[tuple] = []
        self.flags: set = set()
        self.bad_values = 0

    def _warn(self, flag):
        if isinstance(flag, tuple):
            self.bad_values += flag[1]
        else:
            self.flags.add(flag)

    def run(self):
        for block in self.reader.blocks.values():
            self._block(block)
        return self

    def _block(self, block: _Block):
        layout = block.layout
        rows, devices = self._normalize(block)
        if not rows:
            return
        # object, not numpy's fixed-width str: its float conversion is twice as fast
        matrix = np.array(rows, dtype=object)
        positions = [p for p, _s, _m in layout.value_columns]
        metrics = [m for _p, _s, m in layout.value_columns]
        secs = [s for _p, s, _m in layout.value_columns]
        if not positions:
            return
        values = _to_float(matrix[:, positions], metrics, self._warn)
        n, m = values.shape
        if devices is None:
            devices = np.full(n, "", dtype=object)
        seg = self.reader.segments[block.segment]
        host = seg.host or ""
        if block.label is None:
            base = np.datetime64(self.dates[block.segment], "s")
            stamps = base + np.asarray(block.seconds, dtype="timedelta64[s]")
            self.parts.append(_coded_part(np.repeat(stamps, m), host, secs, devices, metrics,
                                          values.ravel(), layout.transpose_irq))
            return
        device_col = np.repeat(np.asarray(devices, dtype=object), m)
        metric_col = np.tile(np.asarray(metrics, dtype=object), n)
        section_col = np.tile(np.asarray(secs, dtype=object), n)
        if layout.transpose_irq:
            device_col, metric_col = _transpose_irq(device_col, metric_col)
        self.avg_parts.append((host, block.label, section_col, device_col, metric_col,
                               values.ravel()))

    def _normalize(self, block: _Block):
        """Rows cut to the positional columns, and the device of each row."""
        layout = block.layout
        width = len(layout.columns)
        fixed = layout.fixed
        parts = layout.device_parts
        rows = block.rows
        keep_seconds = block.seconds
        if all(len(r) == width for r in rows) and not layout.device_last:
            cut = rows if fixed == width else [r[:fixed] for r in rows]
        else:
            cut, keep_seconds = [], []
            need = fixed + (1 if layout.device_last else 0)
            for r, s in zip(rows, block.seconds):
                if len(r) < need:
                    self._short(block)
                    continue
                if layout.device_last:
                    cut.append(r[:fixed] + [" ".join(r[fixed:])])
                else:
                    cut.append(r[:fixed])
                keep_seconds.append(s)
            block.seconds = keep_seconds
        if not parts:
            return cut, None
        if layout.device_last:
            devices = [r[-1] for r in cut]
            cut = [r[:fixed] for r in cut]
        elif len(parts) == 1:
            p = parts[0]
            devices = [r[p] for r in cut]
        else:
            devices = [":".join(r[p] for p in parts) for r in cut]
        return cut, devices

    def _short(self, block: _Block):
        r = self.reader
        r.short_rows += 1
        if r.short_rows == 1:
            r.short_first = block.first_line

    def frame(self):
        import pandas as pd
        if not self.parts:
            return metrics_frame()
        df = pd.DataFrame({
            "timestamp": pd.to_datetime(np.concatenate([p["stamps"] for p in self.parts])
                                        .astype("datetime64[ns]")),
            **{col: _string_column([p[col] for p in self.parts])
               for col in ("host", "section", "device", "metric")},
            "value": np.concatenate([p["values"] for p in self.parts]),
        })
        return metrics_frame(columns=df)

    def averages(self):
        import pandas as pd
        cols = ["host", "label", "section", "device", "metric", "value"]
        if not self.avg_parts:
            return pd.DataFrame({c: pd.Series([], dtype=object if c != "value" else "float64")
                                 for c in cols})
        return pd.DataFrame({
            "host": np.concatenate([np.full(len(p[5]), p[0], dtype=object) for p in self.avg_parts]),
            "label": np.concatenate([np.full(len(p[5]), p[1], dtype=object) for p in self.avg_parts]),
            "section": np.concatenate([p[2] for p in self.avg_parts]),
            "device": np.concatenate([p[3] for p in self.avg_parts]),
            "metric": np.concatenate([p[4] for p in self.avg_parts]),
            "value": np.concatenate([p[5] for p in self.avg_parts]),
        })


def _coded_part(stamps, host: str, secs: list, devices, metrics: list, values, transpose: bool):
    """One block's long columns, the text ones as (names, codes): a block has
    a handful of distinct names, so codes keep the millions of rows cheap
    until one string column is built for the whole table."""
    n = len(stamps) // max(len(metrics), 1)
    m = len(metrics)
    if devices is None:
        devices = [""] * n
    index: dict = {}
    device_codes = np.fromiter((index.setdefault(d, len(index)) for d in devices), dtype=np.int64, count=n)
    device = (list(index), np.repeat(device_codes, m))
    metric = (list(metrics), np.tile(np.arange(m), n))
    if transpose:
        dev_col, met_col = _transpose_irq(np.asarray(device[0], dtype=object)[device[1]],
                                          np.asarray(metric[0], dtype=object)[metric[1]])
        device, metric = _factorize(dev_col), _factorize(met_col)
    section_names = sorted(set(secs))
    section_codes = np.array([section_names.index(x) for x in secs], dtype=np.int64)
    return {"stamps": stamps, "values": values,
            "host": ([host], np.zeros(len(stamps), dtype=np.int64)),
            "section": (section_names, np.tile(section_codes, n)),
            "device": device, "metric": metric}


def _factorize(column: np.ndarray):
    import pandas as pd
    codes, uniques = pd.factorize(column)
    return list(uniques), codes.astype(np.int64)


def _string_column(coded: list):
    """(names, codes) pieces -> one pandas string column, decoded by pyarrow
    in one pass when it is there (many times faster than converting Python
    strings one by one)."""
    import pandas as pd
    names: dict = {}
    pieces = []
    for uniques, codes in coded:
        remap = np.array([names.setdefault(u, len(names)) for u in uniques], dtype=np.int64)
        pieces.append(remap[codes] if len(codes) else codes)
    codes = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)
    vocabulary = list(names)
    try:
        import pyarrow as pa
        decoded = pa.DictionaryArray.from_arrays(pa.array(codes, pa.int64()),
                                                 pa.array(vocabulary, pa.string())).dictionary_decode()
        return pd.array(decoded, dtype="str")
    except (ImportError, TypeError, ValueError, NotImplementedError):
        # pyarrow is optional, and pandas builds without its string dtype
        # raise one of these: the plain object array holds the same strings
        return np.asarray(vocabulary, dtype=object)[codes]


def _transpose_irq(devices: np.ndarray, metrics: np.ndarray):
    """sysstat 7 ``CPU i000/s`` rows: the interrupt becomes the device and the
    CPU the metric (``CPU3``, or ``intr/s`` for ``all``), as 12.x prints."""
    new_devices = np.array([sections.old_irq_number(m) or m for m in metrics], dtype=object)
    new_metrics = np.array([sections.INTERRUPT_RATE if d == "all" else f"CPU{d}" for d in devices],
                           dtype=object)
    return new_devices, new_metrics


# ---- the parser --------------------------------------------------------------

class SarTextParser(Parser):
    """sar's text output: banner, tables, averages, restarts."""

    kind = "sar-text"
    priority = 10
    description = "sar text output (sar -A, sar -u -r ...), any sysstat version and locale"

    @classmethod
    def sniff(cls, head: bytes, text: str) -> float:
        banner = header = False
        for raw in text.splitlines()[:400]:
            line = ANSI_RE.sub("", raw).replace("\u202f", " ")
            m = BANNER_RE.match(line)
            if m and DATE_TOKEN_RE.match(m.group("date")):
                banner = True
                continue
            if _is_header_line(line):
                header = True
                if banner:
                    break
        if banner and header:
            return 0.95
        if header:
            return 0.85
        if banner:
            return 0.5
        return 0.0

    @classmethod
    def parse(cls, path, options: ParseOptions) -> Source:
        options = options or ParseOptions()
        # Millions of small row lists and no reference cycles: the cyclic
        # collector would rescan them again and again as they pile up.
        collecting = gc.isenabled()
        gc.disable()
        try:
            return cls._parse(path, options)
        finally:
            if collecting:
                gc.enable()

    @classmethod
    def _parse(cls, path, options: ParseOptions) -> Source:
        reader = _Reader(path, options).run()
        if not reader.blocks and not reader.events:
            raise InputError(path, "no sar table found (neither a banner with tables nor a sar header line)",
                             line=reader.unknown_first[0] if reader.unknown_first else None)
        warnings = list(reader.warnings)
        dates, date_meta = _segment_dates(path, reader, options, warnings)
        assembler = _Assembler(reader, dates).run()
        metrics = assembler.frame()
        events = _events(path, reader, dates)
        _reading_warnings(path, reader, assembler, warnings)
        averages = assembler.averages()
        if not len(metrics) and not len(events) and not len(averages):
            first = min(b.first_line for b in reader.blocks.values())
            raise InputError(path, "sar tables without a single readable row of values"
                             + (f" ({warnings[0].split(': ', 1)[-1]})" if warnings else ""), line=first)
        seg0 = reader.segments[0] if reader.segments else _Segment(host=None)
        hosts = sorted({s.host for s in reader.segments if s.host})
        meta = {
            "kernel": seg0.kernel, "arch": seg0.arch, "ncpu": seg0.ncpu,
            "date": dates[0].isoformat() if dates else None,
            "clock": "cjk" if reader.cjk_clock else ("12h" if reader.clock12 else "24h"),
            "decimal": "," if "comma" in assembler.flags else ".",
            "human_units": "human" in assembler.flags,
            "hosts": hosts,
            "segments": [{"host": s.host, "kernel": s.kernel, "arch": s.arch, "ncpu": s.ncpu,
                          "date": d.isoformat(), "banner": s.date_text, "line": s.line}
                         for s, d in zip(reader.segments, dates)],
            "summary_labels": sorted(reader.labels),
            "averages": averages,
            **date_meta,
        }
        return Source(
            path=str(path), kind=cls.kind, host=seg0.host or (hosts[0] if hosts else None),
            metrics=metrics, events=events, warnings=warnings, tz=None,
            records=int(metrics["timestamp"].nunique()) if len(metrics) else 0, meta=meta)


def _is_header_line(line: str) -> bool:
    tokens = line.split()
    if len(tokens) < 2:
        return False
    lead = 0
    if CLOCK_RE.match(tokens[0]) or CJK_TIME_RE.match(tokens[0]):
        lead = 2 if tokens[1] in AM_PM else 1
    elif tokens[0].endswith(":") and not tokens[0][0].isdigit():
        lead = 1
    else:
        return False
    rest = tokens[lead:]
    if len(rest) < 2 or any(_numeric_start(t) for t in rest):
        return False
    layout = sections.table_layout(tuple(rest))
    return layout is not None and len(layout.value_columns) >= 1 and \
        sum(1 for c in rest if sections.identify((c,)) is not None) >= min(2, len(rest))


def _segment_dates(path, reader: _Reader, options: ParseOptions, warnings: list):
    """The calendar date of each segment, and what meta should say about it."""
    order_hint = options.date_order if options.date_order in ("mdy", "dmy") else None
    evidence = None
    if order_hint is None:
        evidence = _file_order_evidence(reader)
    meta = {"date_unknown": False, "date_assumed": False, "date_order": None}
    dates = []
    for seg in reader.segments:
        if seg.date_text is None:
            dates.append(_banner_less_date(path, seg, options, warnings, meta))
            continue
        reading = _read_date(seg.date_text, order_hint or evidence)
        if reading.date is None:
            warnings.append(located(path, f"banner date {seg.date_text!r} is not a date; "
                                          "its rows are placed on 1970-01-01", line=seg.line))
            meta["date_unknown"] = True
            dates.append(SENTINEL_DATE)
            continue
        if not reading.decided:
            meta["date_assumed"] = True
            warnings.append(located(
                path, f"banner date {seg.date_text} could be MM/DD or DD/MM; read as MM/DD "
                      f"({reading.date.isoformat()}), the C locale's order; pass --date-order dmy "
                      "(options.date_order) if it was written day-first", line=seg.line))
        meta["date_order"] = meta["date_order"] or reading.order
        dates.append(reading.date)
    return dates, meta


def _file_order_evidence(reader: _Reader) -> str | None:
    """Day/month order the whole file decides: another banner's date with a
    field over 12, a 12-hour clock (US style), a non-English average label
    or comma decimals (day-first locales)."""
    for seg in reader.segments:
        if seg.date_text:
            own = _order_evidence(seg.date_text)
            if own in ("mdy", "dmy"):
                return own
    if reader.clock12:
        return "mdy"
    if reader.labels - ENGLISH_LABELS:
        return "dmy"
    if _has_comma_decimals(reader):
        return "dmy"
    return None


def _has_comma_decimals(reader: _Reader) -> bool:
    for block in reader.blocks.values():
        for row in block.rows[:3]:
            for tok in row:
                if "," in tok and tok.replace(",", "", 1).isdigit():
                    return True
    return False


def _banner_less_date(path, seg: _Segment, options: ParseOptions, warnings: list, meta: dict):
    # the case re-dates the rows from its other sources (sarsleuth.timebase);
    # the warning is replaced then
    meta["date_unknown"] = True
    meta["date_unknown_line"] = seg.line
    warnings.append(located(path, "no sar banner, so the date is unknown: times are placed on "
                                  "1970-01-01 (give the banner line, or analyse with other dated "
                                  "sources)", line=seg.line))
    return SENTINEL_DATE


def _events(path, reader: _Reader, dates: list):
    import pandas as pd
    records = []
    for ev in reader.events:
        seg = reader.segments[ev["segment"]]
        ts = pd.Timestamp(dates[ev["segment"]]) + pd.Timedelta(seconds=ev["seconds"])
        records.append({"timestamp": ts, "host": seg.host, "source": "sar-text", "kind": ev["kind"],
                        "pid": None, "process": None, "message": ev["message"], "file": str(path),
                        "line": ev["line"], "level": None, "detail": None, "count": 1,
                        "uptime": None, "aligned": True})
    return events_frame(records)


def _reading_warnings(path, reader: _Reader, assembler: _Assembler, warnings: list):
    for columns, lineno in reader.unknown_headers.items():
        warnings.append(located(path, f"table with unknown columns {' '.join(columns)[:80]!r}: "
                                      "its rows were skipped", line=lineno))
    if reader.orphan_rows:
        warnings.append(located(path, f"{reader.orphan_rows} data row(s) without a sar header line "
                                      "were skipped", line=reader.orphan_first))
    if reader.short_rows:
        warnings.append(located(path, f"{reader.short_rows} row(s) shorter than their header were "
                                      "skipped", line=reader.short_first))
    if assembler.bad_values:
        warnings.append(located(path, f"{assembler.bad_values} value(s) that are not numbers were "
                                      "read as missing"))
    if reader.unknown_lines:
        lineno, text = reader.unknown_first
        warnings.append(located(path, f"{reader.unknown_lines} line(s) that are not sar output were "
                                      f"skipped (first: {text!r})", line=lineno))
