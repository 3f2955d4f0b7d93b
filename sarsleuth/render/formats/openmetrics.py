"""``parse PATH... --format openmetrics``: a metric store as OpenMetrics
text (``write_metrics``), which ``promtool tsdb create-blocks-from
openmetrics`` turns into Prometheus blocks.  What each sar metric is called
there is data (``knowledge/metric_names.toml``, read by
:mod:`sarsleuth.knowledge.metric_names`).

OpenMetrics wants each metric family's samples together, and each series'
samples in time order; the store holds every series compactly (a quarter
of an sa file's size), so the text is written from it one family, then one
series, then one slice of samples at a time, and never exists whole.  Each
slice is formatted column-wise: a value's text once per distinct value, a
time's once per distinct time, and the lines joined from those pieces.

Values are those of ``parse --format csv`` (rounded to 15 significant
digits, see :func:`sarsleuth.render.csv_columns.tidy_values`) converted to the
name's unit and rounded again, so that ``12.34`` ms is ``0.01234`` s and
not ``0.012339999999999999``.  Timestamps are the instants of the case's
settled clock, in seconds; a host whose zone nobody knows is written on its
wall clock taken as UTC, and :class:`Written` says which hosts those are.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from sarsleuth.knowledge.metric_names import Family, mapping_of
from sarsleuth.knowledge.metric_names import families as every_family
from sarsleuth.render.csv_columns import tidy_values
from sarsleuth.safe_text import shown, utf8

#: Samples formatted and written at a time.
SLICE = 1 << 16
#: NaT as the store's int64 nanoseconds: a value with no time is not exported.
NOT_A_TIME = -(1 << 63)


@dataclass
class Written:
    """What an export wrote and what it left out."""

    families: int = 0
    series: int = 0
    samples: int = 0
    #: sections and metrics sar's vocabulary lacks, with their series counts
    unmapped: dict = field(default_factory=dict)
    #: samples left out because their series already had one at that time
    #: (a wall clock's repeated autumn hour, a clock stepped back)
    repeated: int = 0
    #: hosts whose times are their wall clock (zone unknown), written as UTC
    wall_clock_hosts: list = field(default_factory=list)


@dataclass
class _Part:
    rank: int
    order: int
    run: object
    factor: float


def write_metrics(store, out, *, labels=(), terminal: bool = False) -> Written:
    """Every series of ``store`` onto ``out`` (a binary stream) as
    OpenMetrics text ending in ``# EOF``.  ``labels``: (name, value) pairs
    added to every series."""
    fix = shown if terminal else utf8
    written = Written()
    grouped: dict = {}
    families: dict = {}
    wall: dict = {}
    for order, (key, run) in enumerate(store.runs.items() if store else ()):
        host, section, device, metric = key
        mapping = mapping_of(section, metric)
        if mapping is None:
            written.unmapped[(section, metric)] = written.unmapped.get((section, metric), 0) + 1
            continue
        if run.tz is None:
            wall[host] = True
        series = ((("host", host),) if host else ()) + mapping.labels(device, metric) + tuple(labels)
        families.setdefault(mapping.family.name, mapping.family)
        grouped.setdefault(mapping.family.name, {}).setdefault(series, []).append(
            _Part(mapping.rank, order, run, mapping.factor))
    written.wall_clock_hosts = [h or "(no host)" for h in wall]
    times = _TimeTexts()
    for name in _family_order(families):
        family = families[name]
        out.write(_header(family).encode("utf-8"))
        written.families += 1
        for series in sorted(grouped[name], key=lambda s: [(k, _natural(v)) for k, v in s]):
            prefix = f"{name}{{{','.join(f'{k}={_quoted(fix(str(v)))}' for k, v in series)}}} "
            (base, positions), values, repeated = _merged(grouped[name][series])
            written.repeated += repeated
            written.series += 1
            written.samples += len(values)
            for lo in range(0, len(values), SLICE):
                out.write(_lines(prefix, (base, positions[lo:lo + SLICE]), values[lo:lo + SLICE], times))
    out.write(b"# EOF\n")
    return written


def _family_order(families: dict) -> list:
    """Families in the order of the mapping (sections as sar prints them)."""
    rank = {f.name: i for i, f in enumerate(every_family())}
    return sorted(families, key=lambda n: rank.get(n, len(rank)))


def _header(family: Family) -> str:
    text = f"# TYPE {family.name} {family.type}\n"
    if family.unit:
        text += f"# UNIT {family.name} {family.unit}\n"
    help_text = family.help.replace("\\", "\\\\").replace("\n", "\\n")
    return text + f"# HELP {family.name} {help_text}\n"


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _natural(text: str):
    """Sort key putting CPU "all" (interrupt "sum") first, then 2 before 10."""
    if text in ("all", "sum"):
        return (0, 0, "")
    return (1, int(text), "") if text.isdigit() else (2, 0, text)


def _merged(parts: list) -> tuple:
    """(times, values, samples left out) of one exported series: its runs'
    values converted to the series' unit, in time order, one value per
    time.  Times are (a run's time array, positions in it) so that the
    series of one file, which share their times, format them once.  Where
    two runs hold a time (a figure under its current and its older sysstat
    name), the current name's value is kept; a time repeated within one run
    keeps its first value and is counted."""
    bases, position_parts, value_parts = [], [], []
    for part in sorted(parts, key=lambda p: (p.rank, p.order)):
        run = part.run
        values = run.values
        positions = np.arange(len(values))
        keep = run.stamps != NOT_A_TIME
        if values.dtype.kind == "f":
            keep &= ~np.isnan(values)
        if not keep.all():
            positions, values = positions[keep], values[keep]
        v = values.astype(np.float64)
        if values.dtype.kind not in "iu" or part.factor != int(part.factor):
            v = tidy_values(v)
            if part.factor != 1.0:
                v = tidy_values(v * part.factor)
        elif part.factor != 1.0:
            v = v * part.factor
        bases.append(run.stamps)
        position_parts.append(positions)
        value_parts.append(v)
    if len(bases) == 1:
        base, positions, values = bases[0], position_parts[0], value_parts[0]
        stamps = base[positions]
        origin = None
    else:
        base = np.concatenate([b[p] for b, p in zip(bases, position_parts)])
        positions = np.arange(len(base))
        values = np.concatenate(value_parts)
        stamps = base
        origin = np.repeat(np.arange(len(bases)), [len(p) for p in position_parts])
    if len(stamps) < 2 or bool((stamps[1:] > stamps[:-1]).all()):
        return (base, positions), values, 0
    order = np.argsort(stamps, kind="stable")
    ordered = stamps[order]
    first = np.concatenate(([True], ordered[1:] != ordered[:-1]))
    if origin is None:
        repeated = int((~first).sum())
    else:
        # a time also held by another run is that figure's older name: not a repeat
        o = origin[order]
        repeated = int(((ordered[1:] == ordered[:-1]) & (o[1:] == o[:-1])).sum())
    order = order[first]
    return (base, positions[order]), values[order], repeated


class _TimeTexts:
    """`` SECONDS\\n`` of each time of the last time arrays met (the
    series of one sa file share theirs), one text per distinct time."""

    def __init__(self, keep: int = 8):
        self.keep = keep
        self.cache: dict = {}

    def of(self, base):
        """(codes, texts): the text of ``base[i]`` is ``texts[codes[i]]``."""
        hit = self.cache.get(id(base))
        if hit is not None and hit[0] is base:
            return hit[1], hit[2]
        distinct, codes = np.unique(base, return_inverse=True)
        texts = np.array([_seconds(int(ns)) for ns in distinct.tolist()], dtype=object)
        if len(self.cache) >= self.keep:
            self.cache.pop(next(iter(self.cache)))
        self.cache[id(base)] = (base, codes, texts)
        return codes, texts


def _seconds(ns: int) -> str:
    seconds, frac = divmod(ns, 1_000_000_000)
    if not frac:
        return f" {seconds}\n"
    return f" {seconds}.{frac:09d}".rstrip("0") + "\n"


def _lines(prefix: str, when, values, times: _TimeTexts) -> bytes:
    """The sample lines of one slice of a series (``when``: its time array
    and the positions of the slice's times in it)."""
    n = len(values)
    if not n:
        return b""
    codes, distinct = pd.factorize(values)
    texts = np.array([_number(v) for v in distinct.tolist()], dtype=object)
    base, positions = when
    base_codes, time_texts = times.of(base)
    time_codes = base_codes[positions]
    pieces = np.empty(3 * n, dtype=object)
    pieces[0::3] = prefix
    pieces[1::3] = texts[codes]
    pieces[2::3] = time_texts[time_codes]
    return "".join(pieces.tolist()).encode("utf-8")


def _number(v: float) -> str:
    """A value as OpenMetrics reads it back: whole numbers without ``.0``,
    the shortest text that is the same double otherwise."""
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "+Inf" if v > 0 else "-Inf"
    if v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return repr(v)
