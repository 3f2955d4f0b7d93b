"""From a scan to a :class:`~sarsleuth.model.Source`: years, zones,
volumes and clock anchors settled for one log file."""
from __future__ import annotations

import datetime as dt
import os
import re
from collections import Counter
from typing import Callable

import numpy as np
import pandas as pd

from sarsleuth.errors import InputError
from sarsleuth.model import EVENT_COLUMNS, EVENT_EXTRA_COLUMNS, Source
from sarsleuth.inputs.parsers.base import events_frame
from sarsleuth.inputs.parsers.logs.lines import LineInfo
from sarsleuth.inputs.reading import compression_of, file_mtime
from sarsleuth.timebase import years as clock

AUDIT_RE = re.compile(r"audit\((?P<epoch>\d{9,})\.(?P<frac>\d+):(?P<serial>\d+)\)")


def build_source(path, kind: str, fmt, result, options,
                 key_parser: Callable[[bytes], tuple | None], level_names: dict | None = None,
                 recognised: Callable[[LineInfo], bool] | None = None, first_line_time=None, zone_named=None):
    """Resolve years and zones, and turn a scan into a :class:`Source`.

    ``key_parser`` reads a raw volume key into ``("md", mon, day, h, m)``,
    ``("abs", datetime)``, ``("aware", datetime)``, ``("up", minute)`` or None.
    ``recognised`` tells whether a sampled line is in the format at all (by
    default: it carried the format's prefix); a file with no recognised
    line, no time stamp and no event raises :class:`InputError`.
    ``first_line_time`` is a full datetime the file states for its start
    (journalctl's ``-- Logs begin at`` header): a year clue.
    """
    spath = os.fspath(path)
    volume_keys, _unreadable = _normalize_keys(result.volume_keys, key_parser)
    recognised = recognised or (lambda info: info.prefixed)
    prefixed = sum(1 for _, info in result.samples if recognised(info))
    if not result.lines:
        raise InputError(spath, "empty log file")
    stored = result.events
    if not volume_keys and not len(stored) and not prefixed:
        raise InputError(spath, f"no line in a {kind} layout", line=1)

    stamps = stored.stamps()
    md_keys = [k[1:] for k in volume_keys if k[0] == "md"]
    if not md_keys:  # no volume key read: fall back on the events' own stamps
        md_keys = list(dict.fromkeys(s[1:5] for s in stamps if s and s[0] == "md"))
    segments = clock.rollover_segments(md_keys)
    seg_of = dict(zip(md_keys, segments))
    meta: dict = {"format": fmt.variant, "engine": result.engine}
    year = None
    if md_keys:
        year, meta["year_from"] = _resolve_year(spath, md_keys, segments, result, stamps, options,
                                                first_line_time)
    elif any(k[0] in ("abs", "aware") for k in volume_keys) or any(
            s and s[0] in ("abs", "aware") for s in stamps):
        meta["year_from"] = "line"
    # the zone the lines record (a file whose only aware times are its lines per minute records them too)
    # (else the zone the file's header names for its wall-clock lines: journalctl's "-- Logs begin at ... UTC")
    zone = _target_zone(stamps) or _target_zone([k for k in volume_keys if k[0] == "aware"]) or zone_named
    events = _events_frame(stored, result.offsets)
    warnings = list(result.warnings)
    if len(events):
        events["timestamp"] = _series([_stamp_datetime(s, year, seg_of) for s in stamps], zone).set_axis(events.index)
        events["aligned"] = events["timestamp"].notna()
        outside = sum(1 for s in stamps if s and s[0] != "md" and not (_YEARS[0] <= s[1].year <= _YEARS[1]))
        if outside:
            warnings.append(f"{spath}: {outside:,} event line(s) dated outside the years a time can be held in "
                            f"({_YEARS[0]} to {_YEARS[1]}): kept without a time")
    del stamps
    meta["volume"], meta["volume_unit"] = _volume_series(volume_keys, year, seg_of, zone)
    meta["unstamped_lines"] = result.lines - sum(volume_keys.values())
    meta["levels"] = _levels(result.levels, stored, level_names)
    meta.update(_clock_meta(result, year, seg_of))
    if result.aggregated:
        meta["aggregated_events"] = result.aggregated
    if result.unattributed:
        meta["suppressed_unattributed"] = result.unattributed
    hosts = Counter(result.hosts)
    for _, info in result.samples:
        if info.host:
            hosts[info.host] += 1
    host = hosts.most_common(1)[0][0] if hosts else None
    if len(hosts) > 1:
        # a central log: every host its first lines and its events name (a fleet counts them, --redact learns them)
        meta["hosts"] = sorted(hosts)
    tz = str(zone) if zone is not None else None
    return Source(path=spath, kind=kind, host=host, events=events, warnings=warnings,
                  tz=tz, records=result.lines, meta=meta)


_EMPTY_EVENTS: list = []


def _events_frame(stored, offsets: bool):
    """The events frame of a file's stored events (its times set by the
    caller); a file without events (most files of a big bundle) gets a copy
    of one empty frame built once per process."""
    if not len(stored):
        if not _EMPTY_EVENTS:
            _EMPTY_EVENTS.append(events_frame([]))
        return _EMPTY_EVENTS[0].copy(deep=False)   # copy-on-write: the shared frame never changes
    columns = stored.columns(offsets)
    n = len(stored)
    for name in ("host", "process", "tag", "level", "detail"):     # None where missing, as in every event frame
        columns[name] = pd.Series(columns[name], dtype=object)
    frame = pd.DataFrame({"timestamp": pd.Series([pd.NaT] * n, dtype="datetime64[ns]"), **columns,
                          "aligned": pd.Series(True, index=range(n))})
    extra = [c for c in frame.columns if c not in EVENT_COLUMNS + EVENT_EXTRA_COLUMNS]
    return frame[EVENT_COLUMNS + EVENT_EXTRA_COLUMNS + extra]


def _normalize_keys(raw: dict, key_parser) -> tuple[dict, int]:
    out: dict = {}
    bad = 0
    for key, n in raw.items():
        norm = key_parser(key)
        if norm is None:
            bad += n
        else:
            out[norm] = out.get(norm, 0) + n
    return out, bad


def _own_date(text: str) -> dt.datetime | None:
    """The date an nginx line forwarded through syslog carries (``2025/06/28
    09:08:38``), None for one that does not exist."""
    try:
        return dt.datetime.strptime(text, "%Y/%m/%d %H:%M:%S")
    except ValueError:
        return None


def _resolve_year(spath, md_keys, segments, result, stamps, options, first_line_time=None):
    clues = [(md_keys[0], first_line_time)] if first_line_time is not None else []
    # an nginx line forwarded through syslog carries its own year
    clues += [(info.stamp[1:5], when) for _, info in result.samples
              if info.dated and info.stamp and info.stamp[0] == "md" and (when := _own_date(info.dated)) is not None]
    found = [(info.message, info.stamp) for _, info in result.samples]
    found += zip(result.events.messages(), stamps)
    for message, stamp in found:
        m = AUDIT_RE.search(message)
        if m and stamp and stamp[0] == "md":
            when = dt.datetime.fromtimestamp(int(m.group("epoch")), tz=dt.timezone.utc).replace(tzinfo=None)
            clues.append((stamp[1:5], when))
    gzip_mtime = mtime = None
    try:
        if compression_of(spath) == "gzip":
            gzip_mtime = file_mtime(spath)
        else:
            mtime = file_mtime(spath)
    except OSError:
        pass
    return clock.choose_base_year(
        md_keys, segments, year=getattr(options, "year", None), clues=clues,
        gzip_mtime=gzip_mtime, mtime=mtime)


#: Years a pandas (nanosecond) timestamp can hold; a line dated outside
#: them (a damaged or hostile stamp) keeps no time rather than breaking the frame.
_YEARS = (1678, 2261)


def _stamp_datetime(stamp, year, seg_of):
    if stamp is None:
        return None
    if stamp[0] == "md":
        _, mon, day, h, m, s, us = stamp
        y = (year if year is not None else dt.date.today().year) + seg_of.get((mon, day, h, m), 0)
        try:
            wall = dt.datetime(y, mon, day, h, m, s, us)
        except (ValueError, OverflowError):
            return None
    else:
        wall = stamp[1]
    if wall is None or not (_YEARS[0] <= wall.year <= _YEARS[1]):
        return None
    return wall


def _target_zone(stamps):
    """The zone events are expressed in: the one offset the lines carry,
    else UTC for mixed offsets; None = naive wall clock (settled later by
    the case, see sarsleuth.timebase)."""
    offsets = set()
    for s in stamps:
        if s and s[0] == "aware":
            offsets.add(s[1].utcoffset())
    if not offsets:
        return None
    if len(offsets) == 1:
        return dt.timezone(offsets.pop())
    return dt.timezone.utc


def _series(walls: list, zone):
    """datetime64 Series: aware values converted to ``zone`` (naive ones
    among them taken to be in it); all naive: wall clock."""
    if zone is not None:
        conv = []
        for w in walls:
            if w is None:
                conv.append(None)
            elif w.tzinfo is None:  # a line without offset among lines with one
                conv.append(w.replace(tzinfo=zone))
            else:
                conv.append(w.astimezone(zone))
        utc = [c.astimezone(dt.timezone.utc).replace(tzinfo=None) if c is not None else None for c in conv]
        s = pd.to_datetime(pd.Series(utc, dtype="object"), errors="coerce")
        s = s.astype("datetime64[ns]").dt.tz_localize("UTC").dt.tz_convert(_pandas_zone(zone))
        return s
    return pd.to_datetime(pd.Series([w for w in walls], dtype="object"), errors="coerce").astype("datetime64[ns]")


def _pandas_zone(zone):
    if hasattr(zone, "key"):
        return zone.key
    return zone


def _volume_series(keys: dict, year, seg_of, zone):
    if not keys:
        return pd.Series([], dtype="int64", name="lines"), "minute"
    if all(k[0] == "up" for k in keys):
        s = pd.Series(list(keys.values()), index=pd.Index([k[1] for k in keys], name="uptime_minute"),
                      name="lines", dtype="int64")
        return s.groupby(level=0).sum().sort_index(), "uptime-minute"
    walls, counts = [], []
    for k, n in keys.items():
        if k[0] == "up":
            continue
        walls.append(_stamp_datetime(("md",) + k[1:] + (0, 0) if k[0] == "md" else k, year, seg_of))
        counts.append(n)
    if zone is None:
        return _naive_minutes(walls, counts), "minute"
    idx = _series(walls, zone)
    s = pd.Series(counts, index=pd.DatetimeIndex(idx), name="lines", dtype="int64")
    s = s[s.index.notna()]
    s = s.groupby(level=0).sum().sort_index()
    s.index.name = "minute"
    return s, "minute"


def _naive_minutes(walls: list, counts: list):
    """Lines per wall-clock minute, summed and sorted, in numpy (a bundle
    may hold thousands of small logs: no per-file pandas group-by)."""
    stamps = np.array(walls, dtype="datetime64[ns]")
    values = np.asarray(counts, dtype="int64")
    keep = ~np.isnat(stamps)
    stamps, values = stamps[keep], values[keep]
    order = np.argsort(stamps, kind="stable")
    stamps, values = stamps[order], values[order]
    if len(stamps):
        first = np.concatenate(([True], stamps[1:] != stamps[:-1]))
        starts = np.flatnonzero(first)
        stamps, values = stamps[starts], np.add.reduceat(values, starts)
    return pd.Series(values, index=pd.DatetimeIndex(stamps, name="minute"), name="lines", dtype="int64")


def _levels(raw: Counter, stored, names: dict | None) -> dict:
    out: Counter = Counter()
    for key, n in raw.items():
        word = key.decode("ascii", "replace") if isinstance(key, bytes) else str(key)
        word = (names or {}).get(word, word).lower()
        out[word] += n
    if not out:
        for level, n in zip(stored.levels(), stored.repeats):
            if level:
                out[level] += n
    return dict(out)


def _clock_meta(result, year, seg_of) -> dict:
    """Uptime/wall pairs and audit epochs for :func:`sarsleuth.timebase.align.align_sources`."""
    samples, audits, utc_offsets = [], [], []
    for _, info in result.samples:
        if info.uptime is None:
            continue
        wall = _stamp_datetime(info.stamp, year, seg_of)
        ts = None
        if wall is not None:
            ts = pd.Timestamp(wall)
        samples.append({"uptime": info.uptime, "timestamp": ts, "message": info.message})
        m = AUDIT_RE.search(info.message)
        if m:
            epoch = float(f"{m.group('epoch')}.{m.group('frac')}")
            audits.append({"uptime": info.uptime, "epoch": epoch})
            if wall is not None and wall.tzinfo is None:
                import datetime as dt
                utc = dt.datetime.fromtimestamp(epoch, tz=dt.timezone.utc).replace(tzinfo=None)
                utc_offsets.append(round((wall - utc).total_seconds() / 900) * 900)
    out = {"clock_samples": samples, "audit_anchors": audits}
    if utc_offsets:
        out["clock"] = {"utc_offset_s": float(sorted(utc_offsets)[len(utc_offsets) // 2])}
    return out
