"""sadf output: ``sadf -d`` (CSV), ``sadf -j`` (JSON) and ``sadf -x`` (XML).

All three give the same long metrics table as the sar text parser: section,
device and metric names are those of ``sadf -d`` heads (``%memused``,
``rxpck/s``...), CPU ``-1`` is ``all``, the interrupts all-CPU rate is
``intr/s``.  JSON and XML field names are translated by
:mod:`._sar_sections`.

Times: sadf prints UTC unless ``-t`` was given (then the file creator's local
time, labelled with the zone name stored in the file).  ``UTC``/``GMT``
stamps and ``-U`` epoch seconds become tz-aware UTC.  Any other label is
kept as naive wall clock, localized with ``options.tz`` when given, else
with a warning: the stored name ignores daylight saving (``CET`` in
summer), so no offset is derived from it.

``LINUX-RESTART`` records become ``sar-restart`` events and comments
``sar-comment`` events.  ``sadf -dh`` (all activities of a sample on one
line) is split back into items when the line allows only one reading (see
:func:`_split_wide_row`); otherwise, and for per-CPU interrupts, the file is
refused with the advice to export with ``sadf -d``.
"""
from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import numpy as np

from sarsleuth.errors import InputError, located
from sarsleuth.model import Source
from sarsleuth.textio import DECOMPRESSION_ERRORS, decode, iter_text_lines, open_binary, read_all_bytes
from sarsleuth.parsers.sar_text import sections
from sarsleuth.parsers.base import ParseOptions, Parser, events_frame, metrics_frame
from sarsleuth.parsers.sar_text.reader import _to_float

#: Zone names that mean UTC.  Other abbreviations sadf prints with ``-t``
#: come from the file's header and do not follow daylight saving (a file
#: made in April in Paris says ``CET`` for UTC+2), so they are not trusted.
UTC_NAMES = {"UTC", "GMT", "Z", "UCT"}

SADF_HEAD_RE = re.compile(r"^#\s*hostname;interval;timestamp(?:;|$)")
SADF_ROW_RE = re.compile(r"^[^;\s]+;-?\d+;(?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?: \S+)?|\d{9,});")
#: sadf 12.x prints the USB header in another order than its values.
USB_HEAD = ("manufact", "product", "BUS", "idvendor", "idprod", "maxpower")
USB_VALUES = ("BUS", "idvendor", "idprod", "maxpower", "manufact", "product")


#: sadf -j / -x nest items a handful of levels deep; anything deeper than
#: this is not sadf output and is skipped (a hostile file must not exhaust
#: the interpreter's stack).
MAX_NESTING = 32


class _Collector:
    """Values collected one by one (JSON, XML) before one frame is built."""

    def __init__(self):
        self.stamps: list = []
        self.hosts: list = []
        self.sections: list = []
        self.devices: list = []
        self.metrics: list = []
        self.values: list = []
        self.events: list[dict] = []
        self.too_deep = 0           # items skipped for being nested deeper than MAX_NESTING

    def add(self, stamp, host, section, device, metric, value):
        self.stamps.append(stamp)
        self.hosts.append(host)
        self.sections.append(section)
        self.devices.append(device)
        self.metrics.append(metric)
        self.values.append(value)

    def frame(self):
        import pandas as pd
        if not self.values:
            return metrics_frame()
        return metrics_frame(columns={
            "timestamp": _uniform_times(pd.Series(self.stamps, dtype=object)),
            "host": self.hosts, "section": self.sections, "device": self.devices,
            "metric": self.metrics, "value": np.asarray(self.values, dtype=np.float64),
        })


class _Clock:
    """sadf time stamps -> pandas Timestamps, remembering zones it could not
    place."""

    def __init__(self, path, options: ParseOptions):
        self.path = path
        self.options = options
        self.unknown_zones: set[str] = set()
        self.bad_stamps: dict = {}
        self._cache: dict = {}

    def stamp(self, date_time: str, zone: str | None):
        key = (date_time, zone)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        import pandas as pd
        try:
            if date_time.isdigit():
                ts = pd.Timestamp(int(date_time), unit="s", tz="UTC")
            else:
                ts = pd.Timestamp(date_time)
                ts = self._zoned(ts, zone)
        except (ValueError, TypeError, OverflowError, ArithmeticError):
            ts = None
        if ts is not None and ts is not pd.NaT and not (1678 <= ts.year <= 2261):
            ts = None        # outside what a nanosecond timestamp holds: a damaged stamp
        if ts is None or ts is pd.NaT:
            # a damaged time stamp: the values it carries are dropped (and counted) in _finish
            self.bad_stamps.setdefault(date_time, None)
            ts = pd.NaT
        self._cache[key] = ts
        return ts

    def _zoned(self, ts, zone):
        if zone is None or zone == "":
            return self._local(ts)
        if zone in UTC_NAMES:
            return ts.tz_localize("UTC")
        self.unknown_zones.add(zone)
        return self._local(ts)

    def _local(self, ts):
        return ts   # wall clock: the case settles its zone

    def warnings(self) -> list[str]:
        out = []
        if self.bad_stamps:
            first = next(iter(self.bad_stamps))
            out.append(located(self.path, f"{len(self.bad_stamps)} unreadable time stamp(s), e.g. {first[:40]!r}: "
                                          "the values and events they carry were skipped"))
        if not self.unknown_zones:
            return out
        names = ", ".join(sorted(self.unknown_zones))
        return out + [located(self.path, f"times are local ({names}, sadf -t or -T): kept as "
                                         "wall clock; set --tz to the host's zone to place them")]


def _event(ts, host, kind, message, path, line=None):
    return {"timestamp": ts, "host": host, "source": "sadf", "kind": kind, "pid": None,
            "process": None, "message": message, "file": str(path), "line": line,
            "level": None, "detail": None, "count": 1, "uptime": None, "aligned": True}


def _finish(cls, path, options, metrics, events, host, meta, warnings, clock: _Clock):
    warnings = warnings + clock.warnings()
    if clock.bad_stamps:
        import pandas as pd
        if len(metrics):
            metrics = metrics[metrics["timestamp"].notna()].reset_index(drop=True)
        events = [e for e in events if e["timestamp"] is not None and e["timestamp"] is not pd.NaT]
    if len(metrics) and metrics["timestamp"].dtype == object:
        # stamps with and without a zone (or NaT) mixed in one column (a damaged file)
        metrics["timestamp"] = _uniform_times(metrics["timestamp"])
    if len(metrics):
        finite = np.isfinite(metrics["value"].to_numpy()) | metrics["value"].isna().to_numpy()
        if not finite.all():
            warnings.append(located(path, f"{int((~finite).sum())} value(s) out of any range (inf) were skipped"))
            metrics = metrics[finite].reset_index(drop=True)
    if len(metrics):
        metrics["timestamp"] = metrics["timestamp"].dt.as_unit("ns")
    if not len(metrics) and not events:
        raise InputError(path, f"no {cls.kind} statistics found")
    ev = events_frame(events)
    if len(ev):
        ev["timestamp"] = _uniform_times(ev["timestamp"])
    meta.setdefault("hosts", sorted(set(metrics["host"].unique())) if len(metrics) else [])
    return Source(path=str(path), kind=cls.kind, host=host, metrics=metrics, events=ev,
                  warnings=warnings, tz=_recorded_zone(metrics),
                  records=int(metrics["timestamp"].nunique()) if len(metrics) else 0, meta=meta)


def _uniform_times(series):
    """A column of Timestamps as one datetime64 dtype (UTC when they mix
    zones, as the same instant)."""
    import pandas as pd
    try:
        return pd.to_datetime(series)
    except (ValueError, TypeError):
        return pd.to_datetime(series, utc=True)


def _recorded_zone(metrics):
    """sadf stamps UTC instants unless run with -t: an absolute clock that
    says nothing of the host's own zone."""
    return None


# ---- sadf -d -------------------------------------------------------------------

class SadfCsvParser(Parser):
    """``sadf -d`` (and ``-dh``) semicolon-separated output."""

    kind = "sadf-csv"
    priority = 10
    description = "sadf -d CSV (# hostname;interval;timestamp;...)"

    @classmethod
    def sniff(cls, head: bytes, text: str) -> float:
        lines = [l for l in text.splitlines()[:50] if l.strip()]
        if not lines:
            return 0.0
        if any(SADF_HEAD_RE.match(l) for l in lines[:5]):
            return 0.98
        rows = sum(1 for l in lines if SADF_ROW_RE.match(l))
        return 0.8 if rows >= max(1, len(lines) // 2) else 0.0

    @classmethod
    def parse(cls, path, options: ParseOptions) -> Source:
        options = options or ParseOptions()
        warnings: list[str] = []
        clock = _Clock(path, options)
        blocks: dict = {}
        events: list[dict] = []
        layout = None
        header = None
        unknown_headers: dict = {}
        bad_lines = []
        first_host = None
        for lineno, line in iter_text_lines(path, warnings):
            if not line.strip():
                continue
            if line.startswith("#"):
                header = _csv_header(path, line, lineno)
                groups = _header_groups(header) if header else []
                layout = groups or None
                for group in groups:
                    if group.layout is None:
                        unknown_headers.setdefault(group.columns, lineno)
                continue
            fields = line.split(";")
            if len(fields) < 4:
                bad_lines.append(lineno)
                continue
            host, stamp_text = fields[0], fields[2]
            first_host = first_host or host
            if fields[1] == "-1" or fields[3].startswith(("LINUX-RESTART", "COM ")):
                events.append(_csv_event(path, clock, host, stamp_text, fields[3], lineno))
                continue
            if layout is None:
                if header is None:
                    bad_lines.append(lineno)
                continue
            if len(layout) == 1 and not layout[0].repeated:
                pieces = [(layout[0], [fields[3:]])]
            else:
                pieces = _split_wide_row(path, lineno, fields[3:], layout)
            for group, items in pieces:
                if group.layout is None:
                    continue
                block = blocks.setdefault(group.layout, {"stamps": [], "hosts": [], "rows": []})
                for item in items:
                    block["stamps"].append(stamp_text)
                    block["hosts"].append(host)
                    block["rows"].append(item)
        metrics, short, unnamed = _csv_frames(blocks, clock)
        for columns, lineno in unknown_headers.items():
            warnings.append(located(path, f"table with unknown columns {';'.join(columns)[:80]!r} was "
                                          "skipped", line=lineno))
        if bad_lines:
            warnings.append(located(path, f"{len(bad_lines)} line(s) that are not sadf -d rows were "
                                          "skipped", line=bad_lines[0]))
        if short:
            warnings.append(located(path, f"{short} row(s) shorter than their header were skipped"))
        if unnamed:
            warnings.append(located(path, f"{unnamed} interrupt row(s) list fewer CPUs than the file "
                                          "has and no CPU table says which: only their all-CPU rate "
                                          "was kept"))
        meta = {"format": "sadf -d"}
        return _finish(cls, path, options, metrics, events, first_host, meta, warnings, clock)


def _csv_header(path, line: str, lineno: int) -> tuple | None:
    """Column names after ``hostname;interval;timestamp``; ``sadf -dh``
    headers with repeated groups are refused."""
    names = line.lstrip("#").strip().split(";")[3:]
    if tuple(names[:6]) == USB_HEAD:
        names = list(USB_VALUES) + names[6:]
    return tuple(names) if names else None


@dataclass(frozen=True)
class _Group:
    """One activity's columns in a header: ``start`` is their offset after
    the timestamp; ``repeated`` marks ``sadf -dh`` groups ending in
    ``[...]``, printed once per item (CPU, interface...)."""

    columns: tuple
    layout: object
    start: int
    repeated: bool


def _header_groups(columns: tuple) -> list:
    """The activity groups of a header: one for ``sadf -d``; for
    ``sadf -dh`` (every activity of a sample on one line) the header is cut
    where an item column starts or a column cannot belong to the activity
    read so far."""
    cut: list = []
    current: list = []
    owners: set = set()
    start = 0
    repeated = False
    for i, raw in enumerate(columns):
        col = raw[:-5] if raw.endswith("[...]") else raw
        col_owners = sections.owners(col)
        starts_item = sections.is_device_column(col) and col != "DEVICE"
        if current and (repeated or starts_item or (col_owners and not owners & col_owners)):
            cut.append((tuple(current), start, repeated))
            current, owners, start, repeated = [], set(), i, False
        current.append(col)
        repeated = raw.endswith("[...]")
        if col_owners:
            owners = (owners & col_owners) if owners & col_owners else col_owners
    if current:
        cut.append((tuple(current), start, repeated))
    groups = [_Group(c, sections.table_layout(c), at, rep) for c, at, rep in cut]
    if len(groups) > 1 and any(g.layout is None for g in groups):
        plain = tuple(c[:-5] if c.endswith("[...]") else c for c in columns)
        return [_Group(plain, sections.table_layout(plain), 0, False)]
    return groups


def _split_wide_row(path, lineno: int, values: list, groups: list):
    """A ``sadf -dh`` line -> ``[(group, item rows)]``.

    The number of items of each repeated group is not printed; it is solved
    from the line: the groups' widths must add up to the line's length,
    every CPU item starts with ``-1`` or a CPU number above the previous
    one, every named item (interface, disk...) with a name that is not a
    number, and every group without items with a number.  A line with no
    or several solutions is refused.
    """
    if any(g.layout is not None and "CPU*" in g.layout.columns for g in groups):
        raise InputError(path, "sadf -dh line with per-CPU interrupts (CPU*[...]) cannot be split: "
                               "its items have no fixed width; export with sadf -d instead",
                         line=lineno)
    solutions: list = []
    _solve(values, groups, 0, 0, [], solutions)
    if len(solutions) != 1:
        why = "does not fit its header" if not solutions else "can be split more than one way"
        raise InputError(path, f"sadf -dh line {why}; export with sadf -d instead", line=lineno)
    out, pos = [], 0
    for group, count in zip(groups, solutions[0]):
        width = len(group.columns)
        out.append((group, [values[pos + k * width: pos + (k + 1) * width] for k in range(count)]))
        pos += count * width
    return out


def _solve(values, groups, index, pos, counts, solutions):
    if len(solutions) > 1:
        return
    if index == len(groups):
        if pos == len(values):
            solutions.append(list(counts))
        return
    group = groups[index]
    width = len(group.columns)
    if not group.repeated:
        if pos + width <= len(values) and _fits(group, values, pos, None):
            _solve(values, groups, index + 1, pos + width, counts + [1], solutions)
        return
    previous = None
    count = 0
    while True:
        _solve(values, groups, index + 1, pos + count * width, counts + [count], solutions)
        start = pos + count * width
        if start + width > len(values) or not _fits(group, values, start, previous):
            return
        previous = values[start]
        count += 1


def _fits(group: _Group, values: list, start: int, previous) -> bool:
    """Whether an item of ``group`` can start at ``values[start]``."""
    layout = group.layout
    first = values[start]
    if layout is None:
        return True
    parts = layout.device_parts
    if not parts:
        return _is_number(first)
    device = values[start + parts[0]]
    if layout.section in ("cpu", "softnet", "power-cpu"):
        if not re.fullmatch(r"-1|\d+|all", device):
            return False
        rank = -1 if device in ("-1", "all") else int(device)
        return previous is None or rank > (-1 if previous in ("-1", "all") else int(previous))
    if layout.section == "interrupts":
        return device == "sum" or previous is not None
    return not _is_number(device)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _csv_event(path, clock, host, stamp_text, text, lineno):
    ts = _csv_stamp(clock, stamp_text)
    if text.startswith("LINUX-RESTART"):
        return _event(ts, host, "sar-restart", text.replace("LINUX-RESTART", "LINUX RESTART").replace("\t", " "),
                      path, lineno)
    return _event(ts, host, "sar-comment", text[4:] if text.startswith("COM ") else text, path, lineno)


def _csv_stamp(clock: _Clock, text: str):
    parts = text.split(" ")
    if len(parts) >= 3:
        return clock.stamp(" ".join(parts[:2]), parts[2])
    return clock.stamp(text, None)


def _csv_frames(blocks: dict, clock: _Clock):
    """Vectorized build of the long table from the rows of each header."""
    import pandas as pd
    frames = []
    short = unnamed = 0
    online = _online_cpus(blocks)
    for layout, block in blocks.items():
        width = layout.fixed
        keep_all = _wide_interrupts(layout)
        rows, stamps, hosts = [], [], []
        for r, s, h in zip(block["rows"], block["stamps"], block["hosts"]):
            if len(r) < width:
                short += 1
                continue
            if keep_all:
                rows.append(r)
            else:
                rows.append(r[:width] if not layout.device_last else r[:width + 1])
            stamps.append(s)
            hosts.append(h)
        if not rows:
            continue
        if keep_all:
            frame, undecided = _csv_interrupts(layout, rows, stamps, hosts, clock, online)
            unnamed += undecided
            frames.append(frame)
        else:
            frames.append(_csv_block(layout, rows, stamps, hosts, clock))
    if not frames:
        return metrics_frame(), short, unnamed
    try:
        df = pd.concat(frames, ignore_index=True)
    except (TypeError, ValueError):
        for f in frames:
            f["timestamp"] = pd.to_datetime(f["timestamp"], utc=True)
        df = pd.concat(frames, ignore_index=True)
    return metrics_frame(columns=df), short, unnamed


def _csv_block(layout, rows, stamps, hosts, clock):
    import pandas as pd
    matrix = np.array(rows, dtype=object)
    positions = [p for p, _s, _m in layout.value_columns]
    metrics = [m for _p, _s, m in layout.value_columns]
    secs = [s for _p, s, _m in layout.value_columns]
    values = _to_float(matrix[:, positions], metrics, lambda flag: None)
    n, m = values.shape
    devices = _csv_devices(layout, matrix)
    unique = {s: _csv_stamp(clock, s) for s in set(stamps)}
    ts = _uniform_times(pd.Series([unique[s] for s in stamps]))
    return pd.DataFrame({
        "timestamp": pd.DatetimeIndex(ts).repeat(m),
        "host": np.repeat(np.asarray(hosts, dtype=object), m),
        "section": np.tile(np.asarray(secs, dtype=object), n),
        "device": np.repeat(devices, m),
        "metric": np.tile(np.asarray(metrics, dtype=object), n),
        "value": values.ravel(),
    })


def _wide_interrupts(layout) -> bool:
    """``INTR;CPU*``: one head for the all-CPU rate and every per-CPU rate."""
    return layout.section == "interrupts" and "CPU*" in layout.columns


def _csv_devices(layout, matrix):
    parts = layout.device_parts
    if not parts:
        return np.full(len(matrix), "", dtype=object)
    if layout.device_last:
        col = matrix[:, layout.fixed]
    elif len(parts) == 1:
        col = matrix[:, parts[0]]
    else:
        col = np.array([":".join(row[p] for p in parts) for row in matrix])
    return np.array([sections.normalize_device(layout.section, d) for d in col], dtype=object)


def _csv_interrupts(layout, rows, stamps, hosts, clock, online: dict):
    """``INTR;CPU*``: the all-CPU rate, then one value per online CPU.

    sadf leaves offline CPUs out without saying which, so per-CPU values are
    named from the CPU table of the same sample when there is one, else by
    position when the row holds as many CPUs as the widest row (all online).
    Rows that neither decides keep only their all-CPU rate (counted in the
    returned number).
    """
    import pandas as pd
    out = {"timestamp": [], "host": [], "section": [], "device": [], "metric": [], "value": []}
    dev_at = layout.device_parts[0] if layout.device_parts else 0
    first_value = layout.value_columns[0][0]
    widest = max(len(r) for r in rows) - first_value - 1
    undecided = 0
    for row, s, h in zip(rows, stamps, hosts):
        ts = _csv_stamp(clock, s)
        values = row[first_value:]
        per_cpu = len(values) - 1
        cpus = online.get((h, s))
        if cpus is not None and len(cpus) == per_cpu:
            names = [sections.INTERRUPT_RATE] + [f"CPU{c}" for c in cpus]
        elif cpus is None and per_cpu == widest:
            names = [sections.INTERRUPT_RATE] + [f"CPU{k}" for k in range(per_cpu)]
        else:
            names = [sections.INTERRUPT_RATE]
            undecided += per_cpu > 0
        for name, token in zip(names, values):
            if token == "":
                continue
            out["timestamp"].append(ts)
            out["host"].append(h)
            out["section"].append("interrupts")
            out["device"].append(row[dev_at])
            out["metric"].append(name)
            out["value"].append(_float(token))
    frame = pd.DataFrame(out)
    frame["timestamp"] = _uniform_times(frame["timestamp"])
    return frame, undecided


def _online_cpus(blocks: dict) -> dict:
    """(host, timestamp text) -> CPU numbers listed in the CPU table then."""
    online: dict = {}
    for layout, block in blocks.items():
        if layout.section != "cpu" or not layout.device_parts:
            continue
        at = layout.device_parts[0]
        for row, s, h in zip(block["rows"], block["stamps"], block["hosts"]):
            if len(row) > at and row[at] != "-1":
                online.setdefault((h, s), []).append(row[at])
    return online


def _float(token: str) -> float:
    try:
        return float(token.replace(",", "."))
    except ValueError:
        return float("nan")


# ---- sadf -j -------------------------------------------------------------------

#: Upper bound on a JSON document read whole (json has no streaming reader
#: in the standard library, and the parsed document takes several times its
#: size); a day of ``sadf -j -- -A`` at 10-minute samples is a few MB.
#: ``sadf -d`` output, which is streamed, has no such bound.
JSON_LIMIT = 256 << 20


class SadfJsonParser(Parser):
    """``sadf -j`` JSON: ``{"sysstat": {"hosts": [...]}}``."""

    kind = "sadf-json"
    priority = 10
    description = "sadf -j JSON ({\"sysstat\": {\"hosts\": ...}})"

    @classmethod
    def sniff(cls, head: bytes, text: str) -> float:
        start = text.lstrip()[:200]
        if start.startswith("{") and re.search(r'"sysstat"\s*:\s*\{\s*"(?:sysdata-version|hosts)"', start):
            return 0.98
        if start.startswith("{") and '"sysstat"' in start:
            return 0.7
        return 0.0

    @classmethod
    def parse(cls, path, options: ParseOptions) -> Source:
        options = options or ParseOptions()
        raw = read_all_bytes(path, JSON_LIMIT)
        try:
            doc = json.loads(decode(raw))
        except json.JSONDecodeError as exc:
            doc = _json_prefix(path, raw, exc)
        except RecursionError:
            raise InputError(path, "JSON nested too deeply to be sadf -j output") from None
        hosts = (doc.get("sysstat") or {}).get("hosts") if isinstance(doc, dict) else None
        if not isinstance(hosts, list):
            raise InputError(path, "JSON without sysstat.hosts: not sadf -j output")
        clock = _Clock(path, options)
        out = _Collector()
        warnings: list[str] = []
        meta: dict = {"format": "sadf -j", "hosts": []}
        if isinstance(doc.get("sysstat"), dict) and doc["sysstat"].get("sysdata-version"):
            meta["sysdata_version"] = doc["sysstat"]["sysdata-version"]
        for host in hosts:
            _json_host(path, host, clock, out, meta)
        if out.too_deep:
            warnings.append(located(path, f"{out.too_deep} value(s) nested deeper than sadf ever writes "
                                          "were skipped"))
        metrics = out.frame()
        first = hosts[0].get("nodename") if hosts and isinstance(hosts[0], dict) else None
        return _finish(cls, path, options, metrics, out.events, first, meta, warnings + _partial(doc), clock)


class _Partial(dict):
    """A JSON document recovered from a damaged file, with the warning."""

    warning: str = ""


def _partial(doc) -> list[str]:
    return [doc.warning] if isinstance(doc, _Partial) and doc.warning else []


#: Places a damaged ``sadf -j`` document is tried closed at (each try parses
#: the whole prefix again: the number of tries must stay small).
MAX_PREFIX_TRIES = 20


def _json_prefix(path, raw: bytes, exc: json.JSONDecodeError):
    """A cut ``sadf -j`` file: keep the statistics before the damage."""
    text = decode(raw)[: exc.pos]
    cut = text.rfind("\n\t\t\t\t}")
    tries = 0
    while cut > 0 and tries < MAX_PREFIX_TRIES:
        tries += 1
        candidate = text[: cut + 6] + "]}]}}"
        try:
            doc = _Partial(json.loads(candidate))
            doc.warning = located(path, f"JSON damaged at character {exc.pos} ({exc.msg}); "
                                        "statistics before it were kept", line=exc.lineno)
            return doc
        except (json.JSONDecodeError, RecursionError):
            cut = text.rfind("\n\t\t\t\t}", 0, cut)
    raise InputError(path, f"not valid JSON: {exc.msg}", line=exc.lineno)


def _json_host(path, host: dict, clock: _Clock, out: _Collector, meta: dict):
    if not isinstance(host, dict):
        return
    name = host.get("nodename")
    if name is not None and not isinstance(name, str):
        name = str(name)
    meta["hosts"].append(name)
    meta.setdefault("kernel", host.get("release"))
    meta.setdefault("arch", host.get("machine"))
    meta.setdefault("ncpu", host.get("number-of-cpus"))
    meta.setdefault("date", host.get("file-date"))
    for sample in _list(host.get("statistics")):
        if not isinstance(sample, dict) or not isinstance(sample.get("timestamp"), dict):
            continue
        ts = _structured_stamp(clock, sample["timestamp"])
        for key, value in sample.items():
            if key != "timestamp":
                _json_walk(key, value, None, ts, name, out)
    for item in _list(host.get("restarts")):
        boot = item.get("boot") if isinstance(item, dict) else None
        if isinstance(boot, dict):
            ts = _structured_stamp(clock, boot)
            n = boot.get("cpu_count")
            msg = f"LINUX RESTART ({n} CPU)" if n is not None else "LINUX RESTART"
            out.events.append(_event(ts, name, "sar-restart", msg, path))
    for item in _list(host.get("comments")):
        com = item.get("comment") if isinstance(item, dict) else None
        if isinstance(com, dict):
            out.events.append(_event(_structured_stamp(clock, com), name, "sar-comment",
                                     str(com.get("com", "")), path))


def _list(value) -> list:
    """A JSON member that should be a list, or nothing when it is not."""
    return value if isinstance(value, list) else []


def _structured_stamp(clock: _Clock, attrs: dict):
    date, time = attrs.get("date"), attrs.get("time")
    zone = attrs.get("tz")
    if zone is not None and not isinstance(zone, str):
        zone = str(zone)
    if zone is None and str(attrs.get("utc", "")) == "1":
        zone = "UTC"
    return clock.stamp(f"{date} {time}", zone)


def _json_walk(key: str, value, activity, ts, host, out: _Collector, depth: int = 0):
    if depth > MAX_NESTING:
        out.too_deep += 1
        return
    if key in sections.STRUCTURED_ACTIVITIES:
        activity = key
    if isinstance(value, list):
        for item in value:
            _json_walk(key, item, activity, ts, host, out, depth + 1)
        return
    if not isinstance(value, dict):
        return
    scalars = {}
    for k, v in value.items():
        if isinstance(v, (dict, list)):
            _json_walk(k, v, activity, ts, host, out, depth + 1)
        else:
            scalars[k] = v
    if activity and scalars:
        _emit(activity, scalars, ts, host, out)


def _emit(activity: str, fields: dict, ts, host, out: _Collector):
    """One item (a CPU, an interface...) or one scalar group of an activity."""
    act = sections.STRUCTURED_ACTIVITIES[activity]
    section = act.section
    device = _item_device(act, fields)
    per_cpu_irq = section == "interrupts" and "value" in fields and "cpu" in fields
    for k, v in fields.items():
        if k in act.skip or k == act.device_key or k in ("per", "unit") or k in sections.XML_DEVICE_KEYS:
            continue
        value = _number(v)
        if value is None:
            continue
        if per_cpu_irq:
            cpu = str(fields["cpu"])
            metric = sections.INTERRUPT_RATE if cpu == "all" else f"CPU{cpu}"
        else:
            metric = sections.structured_metric(section, k, activity)
        out.add(ts, host, sections.structured_section(section, metric), device, metric, value)


def _item_device(act: sections.StructuredActivity, fields: dict) -> str:
    if act.section == "power-usb":
        bus = fields.get("bus_number", fields.get("bus"))
        return ":".join(str(x) for x in (bus, fields.get("idvendor"), fields.get("idprod")))
    if not act.device_key:
        return ""
    # JSON names the item with device_key; XML sometimes with another
    # attribute (cpu "number", disk "dev", fchost "name", filesystem "fsname")
    for key in (act.device_key,) + sections.XML_DEVICE_KEYS:
        if key in fields:
            return sections.normalize_device(act.section, str(fields[key]))
    return ""


def _number(v):
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v.replace(",", "."))
        except ValueError:
            return None
    return None


# ---- sadf -x -------------------------------------------------------------------

class SadfXmlParser(Parser):
    """``sadf -x`` XML: ``<sysstat><host><statistics><timestamp>...``."""

    kind = "sadf-xml"
    priority = 10
    description = "sadf -x XML (<sysstat> ... <timestamp>)"

    @classmethod
    def sniff(cls, head: bytes, text: str) -> float:
        start = text.lstrip()[:2000]
        if re.search(r"<sysstat[\s>]", start) and ("<sysdata-version>" in start or "<host" in start):
            return 0.98
        if "<sysstat" in start:
            return 0.6
        return 0.0

    @classmethod
    def parse(cls, path, options: ParseOptions) -> Source:
        options = options or ParseOptions()
        clock = _Clock(path, options)
        out = _Collector()
        warnings: list[str] = []
        meta: dict = {"format": "sadf -x", "hosts": []}
        host = None
        first_host = None
        seen_sysstat = False
        fh = open_binary(path)
        try:
            for event, elem in ET.iterparse(fh, events=("start", "end")):
                tag = _local(elem.tag)
                if event == "start":
                    if tag == "sysstat":
                        seen_sysstat = True
                    elif tag == "host":
                        host = elem.get("nodename")
                        first_host = first_host or host
                        meta["hosts"].append(host)
                    continue
                if tag == "timestamp" and elem.get("date") is not None:
                    ts = _structured_stamp(clock, elem.attrib)
                    for child in elem:
                        _xml_walk(child, None, ts, host, out)
                    elem.clear()
                elif tag in ("boot", "comment") and elem.get("date") is not None:
                    ts = _structured_stamp(clock, elem.attrib)
                    if tag == "boot":
                        n = elem.get("cpu_count")
                        msg = f"LINUX RESTART ({n} CPU)" if n else "LINUX RESTART"
                        out.events.append(_event(ts, host, "sar-restart", msg, path))
                    else:
                        out.events.append(_event(ts, host, "sar-comment", elem.get("com", ""), path))
                elif tag in ("release", "machine", "number-of-cpus", "file-date", "sysdata-version"):
                    key = {"release": "kernel", "machine": "arch", "number-of-cpus": "ncpu",
                           "file-date": "date", "sysdata-version": "sysdata_version"}[tag]
                    meta.setdefault(key, (elem.text or "").strip())
        except ET.ParseError as exc:
            line, _col = exc.position
            if not out.values and not out.events:
                raise InputError(path, f"not valid XML: {exc}", line=line) from None
            warnings.append(located(path, f"XML damaged ({exc}); statistics before it were kept",
                                    line=line))
        except DECOMPRESSION_ERRORS + (LookupError,) as exc:   # LookupError: an unknown encoding="..."
            if not out.values:
                raise InputError(path, f"unreadable: {exc}") from None
            warnings.append(located(path, f"stream damaged ({exc}); statistics before it were kept"))
        finally:
            fh.close()
        if not seen_sysstat:
            raise InputError(path, "XML without a <sysstat> element: not sadf -x output")
        if out.too_deep:
            warnings.append(located(path, f"{out.too_deep} element(s) nested deeper than sadf ever writes "
                                          "were skipped"))
        if isinstance(meta.get("ncpu"), str) and meta["ncpu"].isdigit():
            meta["ncpu"] = int(meta["ncpu"])
        metrics = out.frame()
        return _finish(cls, path, options, metrics, out.events, first_host, meta, warnings, clock)


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _xml_walk(elem, activity, ts, host, out: _Collector, depth: int = 0):
    if depth > MAX_NESTING:
        out.too_deep += 1
        return
    tag = _local(elem.tag)
    if tag in sections.STRUCTURED_ACTIVITIES:
        activity = tag
    fields = {k: v for k, v in elem.attrib.items()}
    children = list(elem)
    for child in children:
        ctag = _local(child.tag)
        if not child.attrib and not len(child) and (child.text or "").strip():
            fields[ctag] = child.text.strip()   # <memfree>1437740</memfree>
        else:
            _xml_walk(child, activity, ts, host, out, depth + 1)
    if activity and fields:
        _emit(activity, fields, ts, host, out)
