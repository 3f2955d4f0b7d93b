"""Years of dates written without one.

RFC 3164 syslog stamps (``May  6 15:04:13``) carry no year, and a sar text
without its banner carries no date at all.  A file's dates are cut into
year segments where they jump by more than half a year, and one reference
fixes the year of the whole file: ``--year``, a clue in the file itself (an
``audit(<epoch>:...)`` record, a line that carries a year), the gzip header
time, and last the file's modification time (the last line cannot be later
than it).  ``meta["year_from"]`` records which.  Once every source of a case
is read, :func:`redate` moves sources whose year (or date) was only guessed
onto the dates of the other sources of the same host.
"""
from __future__ import annotations

import calendar
import datetime as _dt
import re
import statistics
from typing import Iterable

import pandas as pd

#: A backward jump larger than this (days) is a year rollover, not disorder.
ROLLOVER_DAYS = 183
#: Syslog sources whose year came from one of these may be re-dated from the
#: other sources of a case.
WEAK_YEAR_CLUES = {"mtime", "gzip-mtime", "today", "none"}


# --------------------------------------------------------------------------
# Years
# --------------------------------------------------------------------------

def _day_of_year(mon: int, day: int) -> int:
    return (mon - 1) * 31 + day


def rollover_segments(keys: Iterable[tuple]) -> list[int]:
    """Year segment (0, 1, ...) of each ``(month, day, ...)`` key, in file
    order.  A jump back by more than :data:`ROLLOVER_DAYS` (December, then
    January) starts the next year; a jump *forward* by as much (a stray
    November line among January ones) belongs to the year before, so one
    out-of-place line moves only itself, never the lines around it."""
    raw, offset, prev = [], 0, None
    for key in keys:
        cur = _day_of_year(key[0], key[1])
        if prev is not None:
            if prev - cur > ROLLOVER_DAYS:
                offset += 1
            elif cur - prev > ROLLOVER_DAYS:
                offset -= 1
        raw.append(offset)
        prev = cur
    if not raw:
        return []
    low = min(raw)
    return [r - low for r in raw]


def _valid(year: int, mon: int, day: int) -> bool:
    return 1 <= mon <= 12 and 1 <= day <= calendar.monthrange(year, mon)[1]


def choose_base_year(keys: list[tuple], segments: list[int], *, year: int | None = None,
                     clues: list[tuple[tuple, _dt.datetime]] | None = None,
                     gzip_mtime=None, mtime=None) -> tuple[int, str]:
    """Year of segment 0 and where it came from.

    ``clues`` = ``[(key, absolute_datetime)]`` pairs found in the file; the
    key's segment gets the year that puts it closest to the datetime.
    ``gzip_mtime``/``mtime`` bound the *last* line.
    """
    if year is not None:
        return int(year), "option"
    seg_of = dict(zip(keys, segments))
    if clues:
        votes = []
        for key, when in clues:
            best = min((when.year - 1, when.year, when.year + 1),
                       key=lambda y: abs(_key_datetime(y, key, when) - when))
            votes.append(best - seg_of.get(key, 0))
        return statistics.mode(votes), "file"
    if not keys:
        ref = gzip_mtime or mtime
        return (ref.year if ref is not None else _dt.date.today().year), "none"
    last_seg = segments[-1]
    for ref, label in ((gzip_mtime, "gzip-mtime"), (mtime, "mtime")):
        if ref is None:
            continue
        ref = _naive(ref)
        last = keys[-1]
        last_year = ref.year if (last[0], last[1]) <= (ref.month, ref.day + 1) else ref.year - 1
        base = last_year - last_seg
        return _leap_fix(base, keys, segments), label
    return _dt.date.today().year - last_seg, "today"


def _leap_fix(base: int, keys: list[tuple], segments: list[int]) -> int:
    """A weak clue must not put a February 29 into a common year: move the
    whole file back to the nearest year where every date exists."""
    for shift in range(0, 8):
        if all(_valid(base - shift + s, k[0], k[1]) for k, s in zip(keys, segments) if k[:2] == (2, 29)):
            return base - shift
    return base


def _naive(ts):
    """A datetime without zone (wall clock as written)."""
    if hasattr(ts, "tz_localize"):  # pandas Timestamp: keep its nanoseconds
        return ts.tz_localize(None) if ts.tzinfo else ts
    return ts.replace(tzinfo=None) if ts.tzinfo else ts


def _key_datetime(year: int, key: tuple, ref: _dt.datetime) -> _dt.datetime:
    mon, day = key[0], key[1]
    if not _valid(year, mon, day):
        return _dt.datetime(year, mon, 28) + _dt.timedelta(days=400)
    h = key[2] if len(key) > 2 else 0
    m = key[3] if len(key) > 3 else 0
    out = _dt.datetime(year, mon, day, h, m)
    return out.replace(tzinfo=ref.tzinfo) if getattr(ref, "tzinfo", None) else out




# --------------------------------------------------------------------------
# Re-dating guessed years and dates from the other sources of a host
# --------------------------------------------------------------------------

def redate(sources: list, host_of, readers, collected: dict | None = None) -> list[str]:
    """Move sources whose year (syslog) or date (sar text without banner)
    was only guessed onto the dates the other sources of the same host
    record; ``host_of(source)`` names a source's host, ``readers[kind]``
    the parser of a kind (what its files carry: ``carries_year``...);
    ``collected``: {host: `date`'s output when its bundle was made}, the
    wall clock every file of the bundle ends before.  Returns notes."""
    notes = []
    # the well-dated sources' spans, worked out once (a bundle may hold
    # thousands of files: per weak source it was quadratic)
    strong = _spans_by_host([o for o in sources if not _is_weak(o, readers[o.kind])], host_of)
    for host, said in (collected or {}).items():
        made = wall_of_date(said)
        if made is not None:
            # the files end before it: a span of the past up to it (see _redate_years)
            strong.setdefault(host, []).append((made, made, _MADE))
            strong[_ALL].append((made, made, _MADE))
    for src in sources:
        reader = readers[src.kind]
        if _year_guessed(src, reader):
            refs = _reference_spans(src, strong, host_of)
            note = _redate_years(src, refs) if refs else _guessed_year(src)
            if note:
                notes.append(note)
            if refs and (note := _years_turned(src)):
                notes.append(note)
        elif not reader.carries_year and (note := _years_turned(src)):
            notes.append(note)
    # then the days of sar text without a banner: the well-dated sources'
    # days, else those of sources whose day is known and only their year
    # guessed (a syslog's "Aug  1"), once their years are settled
    dated = _spans_by_host([o for o in sources if not _date_unknown(o, readers[o.kind])], host_of)
    for src in sources:
        if _date_unknown(src, readers[src.kind]):
            # (when a bundle was made is no day of its rows)
            refs = [r for r in _reference_spans(src, strong, host_of) if len(r) == 2]
            note = _redate_days(src, refs or _reference_spans(src, dated, host_of))
            if note:
                notes.append(note + ("" if refs else "; their own year is a guess"))
    return notes


def _spans_by_host(sources: list, host_of) -> dict:
    """{host: the wall-clock spans of its ``sources``, ``_ALL``: every one}."""
    spans: dict = {_ALL: []}
    for o in sources:
        span = _span_walls(o)
        if span is not None:
            spans.setdefault(host_of(o), []).append(span)
            spans[_ALL].append(span)
    return spans


def wall_of_date(said: str | None):
    """The wall clock ``date`` printed (``Thu Feb 10 16:19:17 UTC 2022``),
    its zone's name dropped (an abbreviation may name several zones; the
    host's files are on the same wall clock), or None."""
    if not said:
        return None
    for text in (said, re.sub(r"\s[A-Z]{2,5}(?=\s\d{4}\s*$)", "", said)):
        try:
            when = pd.Timestamp(text)
        except (ValueError, TypeError, OverflowError):
            continue
        return when.tz_localize(None) if when.tzinfo is not None else when
    return None


def _year_guessed(src, reader) -> bool:
    # a kind whose lines carry their year may still hold some that do not
    # (dmesg -H read back, syslog lines pasted into a dmesg): the reader
    # says where it took their year from
    return src.meta.get("year_from") in WEAK_YEAR_CLUES


def _date_unknown(src, reader) -> bool:
    return not reader.carries_date and bool(src.meta.get("date_unknown"))


def _is_weak(src, reader) -> bool:
    if _year_guessed(src, reader) or _date_unknown(src, reader):
        return True
    if not reader.carries_wall_clock and not src.meta.get("clock", {}).get("absolute", True):
        return True
    # a ps snapshot or load-test report placed at the file's mtime says
    # nothing of the date (a bundle's ps is from when it was collected)
    if src.meta.get("time_from") == "mtime":
        return True
    return bool(src.reports) and all(r.get("time_from") == "mtime" for r in src.reports)


#: Key of every host's spans in :func:`redate`'s table.
_ALL = object()
#: Marks the span of when a bundle was made (its files end before it).
_MADE = "made"
_MADE_SLACK_S = 86400.0


def _reference_spans(src, strong: dict, host_of) -> list:
    """Wall-clock spans of the well-dated sources (``strong``: host -> its
    spans, ``_ALL`` -> every span) of ``src``'s host (all hosts' when its
    host has none)."""
    host = host_of(src)
    return (host is not None and strong.get(host)) or strong[_ALL]


def _span_walls(src):
    start, end = src.span()
    if start is None:
        return None
    return _naive(start), _naive(end)


def _redate_years(src, refs) -> str | None:
    own = _span_walls(src)
    if own is None or not refs:
        return None

    spans = any(len(ref) == 2 for ref in refs)

    def distance(shift: int) -> float:
        lo = own[0] + pd.DateOffset(years=shift)
        hi = own[1] + pd.DateOffset(years=shift)
        total = 0.0
        for ref in refs:
            if len(ref) > 2:
                # when the bundle was made: the files end before it (a day's slack for its zone),
                # as near it as may be when no other source dates them
                late = (hi - ref[1]).total_seconds()
                total += float("inf") if late > _MADE_SLACK_S else 0.0 if spans else max(-late, 0.0)
            else:
                total += max((ref[0] - hi).total_seconds(), (lo - ref[1]).total_seconds(), 0.0)
        return total

    shifts = {0}
    for ref in refs:
        shifts.update(ref[0].year - own[0].year + d for d in (-1, 0, 1))
    best = min(sorted(shifts), key=lambda k: (distance(k), abs(k)))
    src.meta["year_from"] = "other-sources"
    if best == 0 or distance(best) >= distance(0):
        return None
    _shift_frames(src, pd.DateOffset(years=best))
    what = "the date its bundle was made" if all(len(r) > 2 for r in refs) else "the other sources"
    return f"{src.path}: syslog year taken from {what} ({best:+d} year(s) from the file-time guess)"


#: How each weak clue is said in a note.
_CLUE_WORDS = {"mtime": "the file's modification time", "gzip-mtime": "the gzip header's time",
               "today": "today's date", "none": "today's date"}


def _guessed_year(src) -> str | None:
    """Nothing else dates this syslog: say which guess its year is (and
    the years its months ran through, when they turn back)."""
    start, end = src.span()
    if start is None:
        return None
    how = _CLUE_WORDS.get(src.meta.get("year_from"), "a guess")
    if end.year == start.year:
        return (f"{src.path}: its lines carry no year; {start.year} is taken from {how} "
                "(a guess: give --year to be sure)")
    return (f"{src.path}: its lines carry no year; {end.year}, the year of its last lines, is taken from {how}, "
            f"and its months turn back {_turns(start, end)}, so it is read as {start.year} to {end.year} (a guess: "
            "give --year, the year of its first line, to be sure; a gap of a year or more between two lines "
            "cannot be seen)")


#: How the clue of a file's year is said when its months turn back.
_FIRST_YEAR = {"option": "--year {y} is the year of its first lines", "file": "its year is read from a record in it",
               "other-sources": "its year is taken from the other sources"}


def _years_turned(src) -> str | None:
    """A file without years read across several (December, then January):
    say which years were taken, and that each turn is a new year."""
    year_from = src.meta.get("year_from")
    if year_from in (None, "line") or year_from in WEAK_YEAR_CLUES:
        return None
    start, end = src.span()
    if start is None or start.year == end.year:
        return None
    how = _FIRST_YEAR.get(year_from, "its year is a guess").format(y=start.year)
    return (f"{src.path}: its lines carry no year and their months turn back {_turns(start, end)}: read as "
            f"{start.year} to {end.year}, each turn a new year ({how}; a gap of a year or more between two "
            "lines cannot be seen)")


def _turns(start, end) -> str:
    n = end.year - start.year
    return "once" if n == 1 else f"{n} times"


def _redate_days(src, refs) -> str | None:
    """A sar text without banner: its rows carry times of day only; put them
    on the day the host's other sources start on."""
    if not refs:
        return None
    first_day = min(r_lo for r_lo, _ in refs).normalize()
    own = _span_walls(src)
    if own is None:
        return None
    shift = first_day - own[0].normalize()
    _shift_frames(src, shift)
    src.meta["date_unknown"] = False
    src.meta["date_from"] = "other-sources"
    line = src.meta.get("date_unknown_line")
    src.warnings[:] = [w for w in src.warnings if "no sar banner, so the date is unknown" not in w]
    where = f"{src.path}:{line}" if line else src.path
    return (f"{where}: no sar banner: rows dated {first_day.date().isoformat()} from the other sources' "
            "dates (a guess: give the banner line to be sure)")


def _shift_frames(src, offset) -> None:
    """Move every time of a source by ``offset`` (a DateOffset or Timedelta)."""
    frame = src.events
    if frame is not None and len(frame):
        frame["timestamp"] = frame["timestamp"] + offset
    if src.store:
        src.store.map_times(lambda times: times + offset)
    vol = src.meta.get("volume")
    if vol is not None and len(vol) and src.meta.get("volume_unit") == "minute":
        vol.index = vol.index + offset
    rows = src.meta.get("row_lines")
    if rows is not None and len(rows):
        rows["timestamp"] = rows["timestamp"] + offset
