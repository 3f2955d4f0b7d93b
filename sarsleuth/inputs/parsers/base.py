"""What every parser module implements, and helpers to build the frames.

A parser is a small class with a ``kind`` (one of the contract's kinds), a
``sniff`` method that scores the first bytes of a file, and a ``parse`` method
that returns a :class:`sarsleuth.model.Source`.  Parser modules live beside
this file and are discovered automatically (see ``parsers/__init__.py``).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, ClassVar, Iterable

if TYPE_CHECKING:
    from sarsleuth.model import Source


#: Lines (rows) of a file's head in which :meth:`Parser.hosts_in` reads host
#: names.
HEAD_LINES = 200


@dataclass
class ParseOptions:
    """Options that change how inputs are read (not what is detected), and
    who is told how far the reading got."""

    year: int | None = None          # --year: year of syslog lines that carry none
    link_speed_bps: float | None = None  # NIC capacity in bits/s, for load tests
    date_order: str | None = None    # "mdy" or "dmy" to settle ambiguous sar banners
    signatures: tuple = ()           # the case's own [[signature]] entries (config file)
    #: told ``(done, total)`` as a reader goes through its file, in its own
    #: units (bytes of a log, of an sa file's records): the progress shown
    #: (:class:`sarsleuth.progress.Reading`); None when nobody shows it
    progress: Callable[[int, int | None], None] | None = None

    # Zones are not an option of parsing: a parser returns times as the file
    # records them (aware when it records an offset or instant, naive wall
    # clock otherwise) and ``Source.tz`` names the zone the file records; the
    # case settles every host's clock afterwards (see sarsleuth.timebase).


class Parser(ABC):
    """Base class; subclasses set ``kind`` and implement both methods."""

    kind: ClassVar[str] = ""
    #: Higher wins when two parsers sniff the same score.
    priority: ClassVar[int] = 0
    #: One line for ``sarsleuth sniff --help`` and the README.
    description: ClassVar[str] = ""
    #: Reads a file in UTF-16 (it starts with its byte order mark) as text:
    #: such a file is sniffed from its head in UTF-8.
    reads_utf16: ClassVar[bool] = False

    # What a file of this kind says of where and when it comes from, and how
    # it is read: the rest of sarsleuth asks these (``registry()[kind]``),
    # never the kind's name.
    #: False: its times may lack the year (syslog's ``May  6 15:04:13``); a
    #: year only guessed (``meta["year_from"]``) is settled from the host's
    #: other files
    carries_year: ClassVar[bool] = True
    #: False: its times may lack the date (a sar text without its banner,
    #: ``meta["date_unknown"]``), settled the same way
    carries_date: ClassVar[bool] = True
    #: False: its times may be seconds since boot (dmesg's ``[123.456789]``),
    #: put on the wall clock by an anchor (``meta["clock"]``)
    carries_wall_clock: ClassVar[bool] = True
    #: its kernel lines keep the kernel's uptime stamp beside their wall
    #: time, and ``meta["clock"]`` its clock's offset from UTC: the anchor of
    #: the host's dmesg
    anchors_uptime: ClassVar[bool] = False
    #: how a file is read: "lines" (text, a line at a time), "log" (the log
    #: scan, in blocks), "document" (parsed whole: JSON, XML) or "records"
    #: (a binary file of records)
    shape: ClassVar[str] = "lines"
    #: its files, once a case holds a thousand, may be held as one source
    #: per host and clock (:mod:`sarsleuth.inputs.many_small_logs`): a log
    #: whose source is only events and line counts, which add up
    foldable: ClassVar[bool] = False

    @classmethod
    def hosts_in(cls, path, head: bytes) -> tuple[tuple, dict]:
        """The hosts a file's first bytes name, and what else they say of
        its machine (kernel, CPUs); ``((), {})`` for a kind that names none.
        Cheap: a fleet asks it of every file before reading any."""
        return (), {}

    @classmethod
    @abstractmethod
    def sniff(cls, head: bytes, text: str) -> float:
        """Confidence in [0, 1] that a file starting with ``head`` is of this
        kind.  ``text`` is ``head`` decoded leniently."""

    @classmethod
    @abstractmethod
    def parse(cls, path, options: ParseOptions) -> Source:
        """Read the whole file (streaming) into a Source; raise InputError
        when nothing usable remains, append warnings for damaged parts."""


def metrics_frame(columns: dict | None = None, rows: Iterable | None = None):
    """Build a long metrics frame with the contract's columns and dtypes."""
    # here, not at the top: sniff loads this module
    import pandas as pd

    # the model loads with the first frame built, not when a parser is registered
    from sarsleuth.model import METRIC_COLUMNS, empty_metrics
    if rows is not None:
        df = pd.DataFrame(list(rows), columns=METRIC_COLUMNS)
    elif columns is not None:
        df = pd.DataFrame(columns)[METRIC_COLUMNS]
    else:
        return empty_metrics()
    if not len(df):
        return empty_metrics()
    df["value"] = pd.to_numeric(df["value"], errors="coerce").astype("float64")
    df["device"] = df["device"].fillna("").astype(str)
    for col in ("section", "metric"):
        df[col] = df[col].astype(str)
    return df


def events_frame(records: list[dict]):
    """Build an events frame from dicts keyed by column name (missing keys get
    defaults: count 1, aligned True)."""
    # here, not at the top: sniff loads this module
    import pandas as pd

    from sarsleuth.model import EVENT_COLUMNS, EVENT_EXTRA_COLUMNS, empty_events
    if not records:
        return empty_events()
    df = pd.DataFrame.from_records(records)
    for col in EVENT_COLUMNS + EVENT_EXTRA_COLUMNS:
        if col not in df.columns:
            df[col] = None
    df["count"] = df["count"].fillna(1).astype("Int64")
    df["aligned"] = df["aligned"].fillna(True).astype(bool)
    df["repeats"] = df["repeats"].fillna(1).astype("Int64")
    df["repeat_span"] = pd.to_numeric(df["repeat_span"], errors="coerce").fillna(0.0).astype("float64")
    df["offset"] = _int_column(df["offset"])
    df["pid"] = _int_column(df["pid"])
    df["line"] = _int_column(df["line"])
    df["uptime"] = pd.to_numeric(df["uptime"], errors="coerce").astype("float64")
    extra = [c for c in df.columns if c not in EVENT_COLUMNS + EVENT_EXTRA_COLUMNS]
    return df[EVENT_COLUMNS + EVENT_EXTRA_COLUMNS + extra]


def _int_column(series):
    """Whole numbers as nullable Int64; anything else (text, fractions,
    numbers too big to be exact) becomes NA rather than a made-up integer."""
    # here, not at the top: sniff loads this module
    import pandas as pd
    num = pd.to_numeric(series, errors="coerce")
    if num.dtype.kind == "f" or num.dtype == object:
        num = pd.to_numeric(num, errors="coerce").astype("float64")
        num = num.where((num.abs() < 2.0 ** 53) & (num == num.round()))
    return num.astype("Int64")
