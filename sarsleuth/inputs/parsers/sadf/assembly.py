"""What the three sadf readers share: the clock of sadf's stamps, the
collector of values read one by one, the translation of JSON/XML items
into the long table's names, and the final Source."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from sarsleuth.errors import InputError, located
from sarsleuth.model import Source
from sarsleuth.inputs.parsers.sar_text import sections
from sarsleuth.inputs.parsers.base import ParseOptions, events_frame, metrics_frame

#: Zone names that mean UTC.  Other abbreviations sadf prints with ``-t``
#: come from the file's header and do not follow daylight saving (a file
#: made in April in Paris says ``CET`` for UTC+2), so they are not trusted.
UTC_NAMES = {"UTC", "GMT", "Z", "UCT"}

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
        self.lines: list = []       # the line each value was read from (None: not known)
        self.events: list[dict] = []
        self.too_deep = 0           # items skipped for being nested deeper than MAX_NESTING

    def add_item(self, stamp, host, device, sections_: list, metrics: list, values: list, lines: list):
        """The values of one item (a CPU, an interface...), all of one
        time, host and device: appended a list at a time."""
        n = len(values)
        self.stamps.extend([stamp] * n)
        self.hosts.extend([host] * n)
        self.devices.extend([device] * n)
        self.sections.extend(sections_)
        self.metrics.extend(metrics)
        self.values.extend(values)
        self.lines.extend(lines)

    def frame(self):
        if not self.values:
            return metrics_frame()
        out = metrics_frame(columns={
            "timestamp": _uniform_times(pd.Series(self.stamps, dtype=object)),
            "host": self.hosts, "section": self.sections, "device": self.devices,
            "metric": self.metrics, "value": np.asarray(self.values, dtype=np.float64),
        })
        # where each value was read (evidence quotes that line), as sadf -d rows keep theirs
        if None not in self.lines:
            out["line"] = np.asarray(self.lines, dtype=np.int32)
        elif any(line is not None for line in self.lines):
            out["line"] = np.asarray([np.nan if line is None else line for line in self.lines], dtype=np.float64)
        return out


class _Clock:
    """sadf time stamps -> pandas Timestamps, remembering zones it could not
    place."""

    def __init__(self, path, options: ParseOptions):
        self.path = path
        self.options = options
        self.unknown_zones: set[str] = set()
        self.bad_stamps: dict = {}
        self._cache: dict = {}
        self.utc_assumed = False      # a stamp with no utc attribute read as UTC

    def stamp(self, date_time: str, zone: str | None):
        key = (date_time, zone)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
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
        if self.utc_assumed:
            out.append(located(self.path, "times read as UTC: sadf wrote no utc attribute (sysstat before 10.0.2), "
                                          "which stamps UTC unless it was run with -t"))
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
    try:
        return pd.to_datetime(series)
    except (ValueError, TypeError):
        return pd.to_datetime(series, utc=True)


def _recorded_zone(metrics):
    """sadf stamps UTC instants unless run with -t: an absolute clock that
    says nothing of the host's own zone."""
    return None



def _list(value) -> list:
    """A JSON member that should be a list, or nothing when it is not."""
    return value if isinstance(value, list) else []


#: sadf of sysstat 10.x printed times with dashes (``time="05-10-01"``,
#: Red Hat bug 891688); the fields are hours, minutes, seconds all the same.
DASH_TIME_RE = re.compile(r"^(\d{1,2})-(\d{2})-(\d{2})$")


def _structured_stamp(clock: _Clock, attrs: dict):
    date, time = attrs.get("date"), attrs.get("time")
    if isinstance(time, str):
        dashed = DASH_TIME_RE.match(time)
        if dashed:
            time = ":".join(dashed.groups())
    zone = attrs.get("tz")
    if zone is not None and not isinstance(zone, str):
        zone = str(zone)
    if zone is None and str(attrs.get("utc", "")) == "1":
        zone = "UTC"
    elif zone is None and "utc" not in attrs:
        # sadf before 10.0.2 (sadf.c sadf_get_record_timestamp_struct)
        # wrote no utc attribute: gmtime() unless -t asked for local time
        clock.utc_assumed = True
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
        lines_of = getattr(value, "field_lines", None)     # sadf -j objects know their lines
        _emit(activity, scalars, ts, host, out, lines_of(scalars) if lines_of else None)


def _emit(activity: str, fields: dict, ts, host, out: _Collector, lines: int | dict | None = None):
    """One item (a CPU, an interface...) or one scalar group of an activity;
    ``lines``: the line the item was read from, or the line of each field."""
    by_field = isinstance(lines, dict)
    act = sections.STRUCTURED_ACTIVITIES[activity]
    section = act.section
    device = _item_device(act, fields)
    per_cpu_irq = section == "interrupts" and "value" in fields and "cpu" in fields
    secs, metrics, values, where = [], [], [], []
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
        secs.append(sections.structured_section(section, metric))
        metrics.append(metric)
        values.append(value)
        where.append(lines.get(k) if by_field else lines)
    if values:
        out.add_item(ts, host, device, secs, metrics, values, where)


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


