"""Putting log times on one clock.

Two problems are solved here:

* **Years of syslog lines.**  RFC 3164 stamps (``May  6 15:04:13``) carry no
  year.  As lnav does, the sequence of stamps is cut into segments wherever
  the time jumps back by more than half a year (a new year began), and one
  reference fixes the year of one segment: ``options.year`` (the year of the
  first line), a clue in the file itself (an ``audit(<epoch>:...)`` record or
  a line that carries a year), the gzip header time, ``options.year_hint``
  (a time from other sources), and last the file's modification time (the
  last line cannot be later than it).  ``meta["year_from"]`` records which.

* **dmesg uptime stamps.**  ``[  123.456789]`` counts seconds since boot.
  :func:`align_sources` converts them to wall clock with an anchor found in
  the bundle: the same kernel line in a syslog/kern.log file (which carries
  both the wall time and the ``[uptime]``), ``audit(epoch:serial)`` records
  of the dmesg itself, or a ``dmesg -T`` copy.  Without an anchor the events
  keep ``timestamp`` NaT and ``aligned`` False, and a note says so.
"""
from __future__ import annotations

import calendar
import datetime as _dt
import statistics
from typing import Iterable

#: A backward jump larger than this (days) is a year rollover, not disorder.
ROLLOVER_DAYS = 183
#: Syslog sources whose year came from one of these may be re-dated from the
#: other sources of a case.
WEAK_YEAR_CLUES = {"mtime", "gzip-mtime", "year-hint"}
LOG_KINDS = {"syslog", "journal", "dmesg", "nginx-error"}


# --------------------------------------------------------------------------
# Years
# --------------------------------------------------------------------------

def _day_of_year(mon: int, day: int) -> int:
    return (mon - 1) * 31 + day


def rollover_segments(keys: Iterable[tuple]) -> list[int]:
    """Segment index (0, 1, ...) for each ``(month, day, ...)`` key, in file
    order: a new segment starts where the date jumps back by more than
    :data:`ROLLOVER_DAYS` (December followed by January)."""
    out, seg, prev = [], 0, None
    for key in keys:
        cur = _day_of_year(key[0], key[1])
        if prev is not None and prev - cur > ROLLOVER_DAYS:
            seg += 1
        out.append(seg)
        prev = cur
    return out


def _valid(year: int, mon: int, day: int) -> bool:
    return 1 <= mon <= 12 and 1 <= day <= calendar.monthrange(year, mon)[1]


def choose_base_year(keys: list[tuple], segments: list[int], *, year: int | None = None,
                     clues: list[tuple[tuple, _dt.datetime]] | None = None,
                     gzip_mtime=None, hint=None, mtime=None) -> tuple[int, str]:
    """Year of segment 0 and where it came from.

    ``clues`` = ``[(key, absolute_datetime)]`` pairs found in the file; the
    key's segment gets the year that puts it closest to the datetime.
    ``gzip_mtime``/``mtime`` bound the *last* line; ``hint`` is any time of
    the same incident (the first line is put closest to it).
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
        ref = gzip_mtime or hint or mtime
        return (ref.year if ref is not None else _dt.date.today().year), "none"
    last_seg = segments[-1]
    for ref, label in ((gzip_mtime, "gzip-mtime"), (hint, "year-hint"), (mtime, "mtime")):
        if ref is None:
            continue
        ref = _naive(ref)
        if label == "year-hint":
            first = keys[0]
            base = min((ref.year - 1, ref.year, ref.year + 1),
                       key=lambda y: abs(_key_datetime(y, first, ref) - ref))
        else:
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
# Aligning a case
# --------------------------------------------------------------------------

def align_sources(sources: list, options=None) -> list[str]:
    """Put the sources of one case on one clock; return notes/warnings.

    Fills the years of syslog/journal sources whose year was only guessed
    from weak clues (file modification time) from the other sources, and
    converts dmesg uptime stamps to wall clock where an anchor exists.
    """
    notes: list[str] = []
    tz = getattr(options, "tz", None) if options is not None else None
    for src in sources:
        if src.kind in ("syslog", "journal") and src.meta.get("year_from") in WEAK_YEAR_CLUES:
            note = _redate_from_others(src, sources)
            if note:
                notes.append(note)
    for src in sources:
        if src.kind == "dmesg" and _needs_alignment(src):
            notes.append(_align_dmesg(src, sources, tz))
    return notes


def _needs_alignment(src) -> bool:
    ev = src.events
    if ev is None or not len(ev):
        return bool(src.meta.get("uptime_only"))
    return bool((ev["timestamp"].isna() & ev["uptime"].notna()).any())


def _span_walls(src):
    start, end = src.span()
    if start is None:
        return None
    return _naive(start), _naive(end)


def _redate_from_others(src, sources) -> str | None:
    import pandas as pd
    own = _span_walls(src)
    if own is None:
        return None
    refs = []
    for other in sources:
        if other is src or (other.kind in ("syslog", "journal") and other.meta.get("year_from") in WEAK_YEAR_CLUES):
            continue
        if other.kind == "dmesg" and not other.meta.get("clock", {}).get("absolute", True):
            continue
        span = _span_walls(other)
        if span is not None:
            refs.append(span)
    if not refs:
        return None

    def distance(shift: int) -> float:
        lo = own[0] + pd.DateOffset(years=shift)
        hi = own[1] + pd.DateOffset(years=shift)
        total = 0.0
        for r_lo, r_hi in refs:
            gap = max((r_lo - hi).total_seconds(), (lo - r_hi).total_seconds(), 0.0)
            total += gap
        return total

    shifts = {0}
    for r_lo, _r_hi in refs:
        shifts.update(r_lo.year - own[0].year + d for d in (-1, 0, 1))
    best = min(sorted(shifts), key=lambda k: (distance(k), abs(k)))
    if best == 0 or distance(best) >= distance(0):
        src.meta["year_from"] = "other-sources"
        return None
    shift_source_years(src, best)
    src.meta["year_from"] = "other-sources"
    return (f"{src.path}: syslog year taken from the other sources ({best:+d} year(s) from the "
            f"file-time guess)")


def shift_source_years(src, years: int) -> None:
    """Move every time of a source by whole years (re-stamping a syslog)."""
    import pandas as pd
    offset = pd.DateOffset(years=years)
    if src.events is not None and len(src.events):
        src.events["timestamp"] = src.events["timestamp"] + offset
    vol = src.meta.get("volume")
    if vol is not None and len(vol):
        vol.index = vol.index + offset


def _pairs_by_message(src) -> dict:
    """(uptime rounded to µs, message) -> wall timestamp, from events and
    samples of a source carrying both."""
    out = {}
    for up, ts, msg in _uptime_rows(src):
        if ts is not None and up is not None:
            out[(round(up, 6), msg)] = ts
    return out


def _uptime_rows(src):
    ev = src.events
    if ev is not None and len(ev):
        for up, ts, msg in zip(ev["uptime"].tolist(), ev["timestamp"].tolist(), ev["message"].tolist()):
            if up == up and up is not None:
                yield float(up), (None if ts is None or ts != ts else ts), msg
    for row in src.meta.get("clock_samples", []):
        yield row["uptime"], row.get("timestamp"), row["message"]


def _align_dmesg(src, sources, tz) -> str:
    own = [(up, msg) for up, _ts, msg in _uptime_rows(src)]
    anchor = _anchor_from_syslog(src, own, sources)
    if anchor is None:
        anchor = _anchor_from_audit(src, sources, tz)
    if anchor is None:
        anchor = _anchor_from_dmesg_t(src, own, sources)
    if anchor is None:
        src.meta["clock"] = {"anchor": None, "absolute": False}
        return (f"{src.path}: dmesg uptime stamps could not be put on the wall clock (no anchor in the "
                f"bundle); its events are unaligned")
    _apply_boot_time(src, anchor)
    return (f"{src.path}: dmesg aligned to wall clock via {anchor['anchor']} "
            f"({anchor['pairs']} pair(s), ±{anchor['uncertainty_s']:.1f} s)")


def _anchor_from_syslog(src, own, sources) -> dict | None:
    import pandas as pd
    wanted = {(round(up, 6), msg) for up, msg in own}
    for other in sources:
        if other is src or other.kind not in ("syslog", "journal"):
            continue
        pairs = _pairs_by_message(other)
        matched = [(key[0], pairs[key]) for key in wanted if key in pairs]
        if not matched:
            continue
        whole_seconds = all(pd.Timestamp(ts).microsecond == 0 for _, ts in matched)
        # a stamp cut to whole seconds lies up to 1 s before the real time
        bias = 0.5 if whole_seconds else 0.0
        offsets = sorted((pd.Timestamp(ts) - pd.Timedelta(seconds=up)) for up, ts in matched)
        boot = offsets[len(offsets) // 2] + pd.Timedelta(seconds=bias)
        spread = (offsets[-1] - offsets[0]).total_seconds() / 2
        return {"anchor": f"matching kernel lines in {other.path}", "boot": boot,
                "uncertainty_s": max(spread, bias, 0.001), "pairs": len(matched), "source": other.path}
    return None


def _anchor_from_audit(src, sources, tz) -> dict | None:
    import pandas as pd
    rows = [a for a in src.meta.get("audit_anchors", []) if a.get("uptime") is not None]
    if not rows:
        return None
    offsets = sorted(a["epoch"] - a["uptime"] for a in rows)
    boot_epoch = offsets[len(offsets) // 2]
    boot = pd.Timestamp(boot_epoch, unit="s", tz="UTC")
    label = "audit(epoch) records of the dmesg itself"
    if tz:
        boot = boot.tz_convert(tz)
    else:
        utc_offset = _syslog_utc_offset(sources)
        if utc_offset is not None:
            boot = (boot + pd.Timedelta(seconds=utc_offset)).tz_localize(None)
            label += f", on the syslog wall clock (UTC{utc_offset / 3600:+g} h)"
    spread = (offsets[-1] - offsets[0]) / 2
    return {"anchor": label, "boot": boot, "uncertainty_s": max(spread, 0.01), "pairs": len(rows),
            "source": src.path}


def _syslog_utc_offset(sources) -> float | None:
    for other in sources:
        off = other.meta.get("clock", {}).get("utc_offset_s") if other.kind in ("syslog", "journal") else None
        if off is not None:
            return off
    return None


def _anchor_from_dmesg_t(src, own, sources) -> dict | None:
    import pandas as pd
    counts: dict = {}
    for up, msg in set(own):
        counts.setdefault(msg, []).append(up)
    unique_own = {m: ups[0] for m, ups in counts.items() if len(ups) == 1}
    for other in sources:
        if other is src or other.kind != "dmesg" or other.events is None or not len(other.events):
            continue
        ev = other.events[other.events["uptime"].isna() & other.events["timestamp"].notna()]
        if not len(ev):
            continue
        seen = ev["message"].value_counts()
        matched = [(unique_own[m], ts) for m, ts in zip(ev["message"], ev["timestamp"])
                   if m in unique_own and seen[m] == 1]
        if not matched:
            continue
        offsets = sorted(pd.Timestamp(ts) - pd.Timedelta(seconds=up) for up, ts in matched)
        boot = offsets[len(offsets) // 2] + pd.Timedelta(seconds=0.5)
        spread = (offsets[-1] - offsets[0]).total_seconds() / 2
        return {"anchor": f"dmesg -T copy {other.path}", "boot": boot,
                "uncertainty_s": max(spread, 0.5), "pairs": len(matched), "source": other.path}
    return None


def _apply_boot_time(src, anchor: dict) -> None:
    import pandas as pd
    boot = anchor["boot"]
    ev = src.events
    if ev is not None and len(ev):
        mask = ev["timestamp"].isna() & ev["uptime"].notna()
        walls = boot + pd.to_timedelta(ev.loc[mask, "uptime"], unit="s")
        ts = ev["timestamp"]
        if getattr(walls.dt, "tz", None) is not None and getattr(ts.dt, "tz", None) is None:
            ts = ts.dt.tz_localize(walls.dt.tz)
        ts = ts.copy()
        ts.loc[mask] = walls
        ev["timestamp"] = ts
        ev.loc[mask, "aligned"] = True
    vol = src.meta.get("volume")
    if vol is not None and len(vol) and src.meta.get("volume_unit") == "uptime-minute":
        walls = boot + pd.to_timedelta(vol.index.to_numpy() * 60.0, unit="s")
        vol.index = pd.DatetimeIndex(walls).floor("min")
        vol = vol.groupby(level=0).sum()
        vol.index.name = "minute"
        src.meta["volume"] = vol
        src.meta["volume_unit"] = "minute"
    if getattr(boot, "tzinfo", None) is not None:
        src.tz = str(boot.tzinfo)
    src.meta["clock"] = {"anchor": anchor["anchor"], "boot": boot, "uncertainty_s": anchor["uncertainty_s"],
                         "pairs": anchor["pairs"], "absolute": True}
