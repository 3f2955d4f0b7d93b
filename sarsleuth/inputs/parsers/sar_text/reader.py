"""sar text output (``sar -A``, ``sar -u -r ...``), from any sysstat version,
locale and platform, whole or pasted.

What the reader copes with:

* the banner ``Linux 2.6.32-358.el6.x86_64 (host) 05/06/2014 _x86_64_ (24 CPU)``
  with any date style sar's ``%x`` produces (``05/06/14``, ``05/06/2014``,
  ``21/11/26``, ``21.11.2026``, ``2026-11-21``, ``2026年11月21日``), several
  banners in one stream (files concatenated: each starts a segment);
* 24-hour and 12-hour (``03:05:03 PM``) clocks and the CJK clock
  (``05時12分01秒``), a zone the locale prints after the time
  (``01:42:28  IST``); crossing midnight advances the date;
* a banner date written out with the month's name (``Thursday 04
  September 2014``, as en_IN's ``%x`` once was), in any language;
* comma decimals, ``sar -h`` unit suffixes (``1.4G``, ``46.1%``), colours,
  ``--pretty``/``-h`` layouts with the device at the end of the line;
* ``Average:``/``Summary:`` rows in any language (``Moyenne :``,
  ``Durchschn.:``, ``平均値:``): they are not samples, so they are kept out of
  the metrics table, in ``Source.meta["averages"]`` (columns host, label,
  section, device, metric, value, line);
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

import gc
from typing import TYPE_CHECKING

from sarsleuth.errors import InputError, located
from sarsleuth.inputs.parsers.sar_text import sections
from sarsleuth.inputs.parsers.sar_text.headerless import TABLES, guess_columns
from sarsleuth.inputs.parsers.sar_text.lines import AM_PM, ANSI_RE, BANNER_RE, CJK_TIME_RE, CLOCK_RE, banner_date, \
    numeric_start, strip_bom
from sarsleuth.inputs.parsers.base import HEAD_LINES, ParseOptions, Parser, events_frame
from sarsleuth.inputs.reading import decode

if TYPE_CHECKING:
    from sarsleuth.model import Source


class SarTextParser(Parser):
    """sar's text output: banner, tables, averages, restarts."""

    kind = "sar-text"
    priority = 10
    description = ("sar text output (sar -A, sar -u -r ..., any section pasted by hand), any sysstat version and "
                   "locale; 12/24-hour clocks, ISO and localized dates; sar -u, -q and -S rows pasted without their "
                   "header line (the table their values fit, said in a warning)")
    carries_date = False    # the date is the banner's: an excerpt without it has none

    @classmethod
    def hosts_in(cls, path, head: bytes) -> tuple[tuple, dict]:
        """The hosts its banners name (``Linux ... (host)``)."""
        found = []
        for line in decode(head).splitlines()[:HEAD_LINES * 50]:
            m = BANNER_RE.match(line)
            if m and m.group("host").strip() and m.group("host").strip() not in found:
                found.append(m.group("host").strip())
        return tuple(found), {}

    @classmethod
    def sniff(cls, head: bytes, text: str) -> float:
        banner = header = False
        for raw in strip_bom(text).splitlines()[:400]:
            line = ANSI_RE.sub("", raw).replace("\u202f", " ")
            m = BANNER_RE.match(line)
            if m and banner_date(m) is not None:
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
        return 0.6 if _headerless_rows(text) >= 2 else 0.0

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
        # numpy and the table builder load only when a sar text is read
        from sarsleuth.inputs.parsers.sar_text.assemble import Assembler
        from sarsleuth.inputs.parsers.sar_text.dates import segment_dates
        from sarsleuth.inputs.parsers.sar_text.rows import RowReader, Segment
        reader = RowReader(path, options)
        assembler = Assembler(reader)
        reader.run(flush=assembler.flush)
        if not reader.blocks and not reader.events:
            from sarsleuth.inputs.unread_outputs import unread_output
            from sarsleuth.inputs.reading import decode, read_head
            other = unread_output(decode(read_head(path)))      # iostat's banner is sar's
            raise InputError(path, other or "no sar table found (neither a banner with tables nor a sar header line)",
                             line=None if other else reader.unknown_first[0] if reader.unknown_first else None)
        warnings = list(reader.warnings)
        dates, date_meta = segment_dates(path, reader, options, warnings)
        assembler.run(dates)
        store = assembler.store()
        events = _events(path, reader, dates)
        _reading_warnings(path, reader, assembler, warnings)
        averages = assembler.averages()
        if not store and not len(events) and not len(averages):
            first = min(b.first_line for b in reader.blocks.values())
            raise InputError(path, "sar tables without a single readable row of values"
                             + (f" ({warnings[0].split(': ', 1)[-1]})" if warnings else ""), line=first)
        if not store and len(averages):
            labels = "/".join(sorted(set(averages.label)))
            warnings.append(f"{path}: only sar's {labels} rows, no timed sample: averages over the whole file "
                            f"place nothing on the timeline and are not judged (line {int(averages.line.min())})")
        seg0 = reader.segments[0] if reader.segments else Segment(host=None)
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
            "first_row_seconds": assembler.first_rows,
            # where each line is, so evidence can quote a row verbatim
            "line_index": reader.line_index,
            **date_meta,
        }
        from sarsleuth.model import Source
        return Source(
            path=str(path), kind=cls.kind, host=seg0.host or (hosts[0] if hosts else None),
            store=store, events=events, warnings=warnings, tz=None,
            records=int(len(store.sample_times())) if store else 0, meta=meta)


def _headerless_rows(text: str) -> int:
    """Rows of a pasted sar table whose header line was left out, that
    fit a table by their values (see ``_headerless``)."""
    found = 0
    for raw in strip_bom(text).splitlines()[:50]:
        tokens = raw.split()
        if len(tokens) < 3 or not CLOCK_RE.match(tokens[0]):
            continue
        rest = tokens[2:] if tokens[1] in AM_PM else tokens[1:]
        found += guess_columns(rest) is not None
    return found


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
    if len(rest) < 2 or any(numeric_start(t) for t in rest):
        return False
    if len(rest) > 2 and sections.zone_before_columns(rest[0], rest[1:]):
        rest = rest[1:]                 # a zone printed after the time
    layout = sections.table_layout(tuple(rest))
    return layout is not None and len(layout.value_columns) >= 1 and \
        sum(1 for c in rest if sections.identify((c,)) is not None) >= min(2, len(rest))


def _events(path, reader, dates: list):
    # here, not at the top: sniff loads this module
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


def _reading_warnings(path, reader, assembler, warnings: list):
    for columns, lineno in reader.unknown_headers.items():
        warnings.append(located(path, f"table with unknown columns {' '.join(columns)[:80]!r}: "
                                      "its rows were skipped", line=lineno))
    for columns, lineno in reader.guessed_headers.items():
        named = TABLES.get(columns[1] if columns[0] == "CPU" else columns[0], "sar")
        warnings.append(located(path, f"rows without a header line read as {named} ({' '.join(columns)}), "
                                      "the table their values fit", line=lineno))
    if reader.orphan_rows:
        warnings.append(located(path, f"{reader.orphan_rows} data row(s) without a sar header line "
                                      "were skipped", line=reader.orphan_first))
    if reader.short_rows:
        warnings.append(located(path, f"{reader.short_rows} row(s) shorter than their header were "
                                      "skipped", line=reader.short_first))
    if assembler.empty_cpu_rows:
        warnings.append(located(path, f"{assembler.empty_cpu_rows} CPU row(s) with every share at 0.00 (an offline CPU, "
                                      "or the first record after a restart sar has no record of) were read as missing",
                                line=assembler.empty_cpu_first))
    if assembler.timeless_rows:
        warnings.append(located(path, f"{assembler.timeless_rows} row(s) of zeros stamped 00:00:00 between rows that "
                                      "go on from each other (records sar printed without their time) were left out",
                                line=assembler.timeless_first))
    if assembler.bad_values:
        warnings.append(located(path, f"{assembler.bad_values} value(s) that are not numbers were "
                                      "read as missing"))
    if reader.unknown_lines:
        lineno, text = reader.unknown_first
        warnings.append(located(path, f"{reader.unknown_lines} line(s) that are not sar output were "
                                      f"skipped (first: {text!r})", line=lineno))
