"""The calendar date of each part of a sar text file, from its banner and
the file's own evidence of day/month order (see the reader's docstring)."""
from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass
from pathlib import Path

from sarsleuth.errors import located
from sarsleuth.inputs.parsers.base import ParseOptions
from sarsleuth.inputs.parsers.sar_text.lines import DAILY_FILE_RE, long_date
from sarsleuth.inputs.parsers.sar_text.rows import RowReader, Segment

#: Labels of summary rows in locales sysstat ships.  Others are recognised
#: by their trailing colon; this list only says which ones are English.
ENGLISH_LABELS = {"Average", "Summary", "Minimum", "Maximum", "Last"}
SENTINEL_DATE = _dt.date(1970, 1, 1)


@dataclass
class _DateReading:
    date: _dt.date | None
    order: str           # iso, ymd, mdy, dmy, cjk, named
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
        named = long_date(text)
        if named is not None:
            return _DateReading(_safe_date(*named), "named", True)
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


#: Years a pandas (nanosecond) timestamp can hold, a day's rows included.
YEARS = (1678, 2261)


def _safe_date(y: int, m: int, d: int) -> _dt.date | None:
    try:
        return _dt.date(y, m, d)
    except ValueError:
        return None



def segment_dates(path, reader: RowReader, options: ParseOptions, warnings: list):
    """The calendar date of each segment, and what meta should say about it."""
    order_hint = options.date_order if options.date_order in ("mdy", "dmy") else None
    evidence = named = None
    if order_hint is None:
        evidence = _file_order_evidence(reader)
        if evidence is None:
            named = _named_day(path, reader)
    meta = {"date_unknown": False, "date_assumed": False, "date_order": None}
    dates = []
    for seg in reader.segments:
        if seg.date_text is None:
            dates.append(_banner_less_date(path, seg, options, warnings, meta))
            continue
        reading = _read_date(seg.date_text, order_hint or evidence)
        if reading.date is not None and not (YEARS[0] <= reading.date.year <= YEARS[1]):
            # pandas' nanosecond times end in 2262: 9999 would wrap round to 1816
            warnings.append(located(path, f"banner date {seg.date_text} is outside the years a time can be held in "
                                          f"({YEARS[0]} to {YEARS[1]}); its rows are placed on 1970-01-01",
                                    line=seg.line))
            meta["date_unknown"] = True
            dates.append(SENTINEL_DATE)
            continue
        if reading.date is None:
            warnings.append(located(path, f"banner date {seg.date_text!r} is not a date; "
                                          "its rows are placed on 1970-01-01", line=seg.line))
            meta["date_unknown"] = True
            dates.append(SENTINEL_DATE)
            continue
        if not reading.decided and named is not None:
            day, where = named
            by_day = _read_date(seg.date_text, "dmy" if _split_date(seg.date_text)[0] == day else "mdy")
            if by_day.date is not None and by_day.date.day == day:
                warnings.append(located(
                    path, f"banner date {seg.date_text} could be MM/DD or DD/MM; read as "
                          f"{'DD/MM' if by_day.order == 'dmy' else 'MM/DD'} ({by_day.date.isoformat()}): {where} is sadc's file of "
                          f"day {day}", line=seg.line))
                reading = _DateReading(by_day.date, by_day.order, True)
        if not reading.decided:
            meta["date_assumed"] = True
            warnings.append(located(
                path, f"banner date {seg.date_text} could be MM/DD or DD/MM; read as MM/DD "
                      f"({reading.date.isoformat()}), the C locale's order; pass --date-order dmy "
                      "(options.date_order) if it was written day-first", line=seg.line))
        meta["date_order"] = meta["date_order"] or reading.order
        dates.append(reading.date)
    return dates, meta


def _file_order_evidence(reader: RowReader) -> str | None:
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


def _named_day(path, reader: RowReader) -> tuple | None:
    """``(day, what)``: the day of the month of the daily file (``sa10``,
    ``sar10``) the pasted command read, or that this file is named after."""
    if reader.day_named is not None:
        day, lineno = reader.day_named
        return day, f"the file the command on line {lineno} reads"
    own = DAILY_FILE_RE.search(Path(str(path)).name)
    return (int(own.group(1)), f"this file's name ({own.group(0).strip(' /=')})") if own else None


def _has_comma_decimals(reader: RowReader) -> bool:
    for block in reader.blocks.values():
        for row in (block.sample or block.rows)[:3]:
            for tok in row:
                if "," in tok and tok.replace(",", "", 1).isdigit():
                    return True
    return False


def _banner_less_date(path, seg: Segment, options: ParseOptions, warnings: list, meta: dict):
    # the case re-dates the rows from its other sources (sarsleuth.timebase);
    # the warning is replaced then
    meta["date_unknown"] = True
    meta["date_unknown_line"] = seg.line
    warnings.append(located(path, "no sar banner, so the date is unknown: times are placed on "
                                  "1970-01-01 (give the banner line, or analyse with other dated "
                                  "sources)", line=seg.line))
    return SENTINEL_DATE

