"""dmesg uptime stamps on the wall clock.

``[  123.456789]`` counts seconds since boot.  :func:`align` converts them to
wall clock with an anchor found in the case: the same kernel line in a
syslog/kern.log file (which carries both the wall time and the ``[uptime]``),
``audit(epoch:serial)`` records of the dmesg itself, or a ``dmesg -T`` copy.
Without an anchor the events keep ``timestamp`` NaT and ``aligned`` False,
and a note says so.
"""
from __future__ import annotations

import pandas as pd

#: Seconds since boot no machine reaches (a century): a larger uptime stamp
#: is a counter anomaly (a damaged or hostile line), kept unaligned.
MAX_UPTIME_S = 100 * 365.25 * 86400


def usable(up) -> bool:
    """Is ``up`` an uptime a kernel can have printed?"""
    return up is not None and up == up and 0 <= up <= MAX_UPTIME_S


def align(sources: list, readers, boots: dict | None = None) -> list[str]:
    """Anchor every source of seconds since boot that needs it (a kind
    whose parser, ``readers[kind]``, does not carry the wall clock);
    ``boots``: {host: (boot epoch, where read)} from its bundle, the
    anchor of last resort; returns notes."""
    notes = [_align_dmesg(src, sources, readers, (boots or {}).get(src.host)) for src in sources
             if not readers[src.kind].carries_wall_clock and _needs_alignment(src)]
    notes += [n for src in sources if readers[src.kind].carries_wall_clock and _needs_alignment(src)
              for n in [_align_by_neighbours(src)] if n]
    for src in sources:
        ev = src.events
        if ev is not None and len(ev) and "uptime" in ev:
            beyond = int((ev["uptime"] > MAX_UPTIME_S).sum())
            if beyond:
                notes.append(f"{src.path}: {beyond} line(s) with a kernel uptime beyond a century (a counter "
                             "anomaly, not a time): their uptime is not used")
    return notes


#: A line whose stamp was lost is placed by the file's own lines that kept
#: theirs, at most this far from it in uptime, when they agree this well
#: (syslog keeps whole seconds: their offsets differ by a second at most).
NEIGHBOUR_UPTIME_S = 3600.0
NEIGHBOURS_AGREE_S = 2.0


def _align_by_neighbours(src) -> str | None:
    """A log that keeps each kernel line's wall time and uptime, one line
    of which lost its wall time (a paste cut through its stamp): that
    line's uptime, plus the offset of the dated lines nearest to it in
    uptime (the same boot), puts it on the wall clock."""
    ev = src.events
    dated = ev["timestamp"].notna() & ev["uptime"].notna() & (ev["uptime"] <= MAX_UPTIME_S)
    lost = ev["timestamp"].isna() & ev["uptime"].notna() & (ev["uptime"] <= MAX_UPTIME_S)
    if not dated.any() or not lost.any():
        return None
    ups = ev.loc[dated, "uptime"].to_numpy(dtype=float)
    order = ups.argsort()
    ups = ups[order]
    walls = pd.DatetimeIndex(ev.loc[dated, "timestamp"])[order]
    placed = 0
    ts = ev["timestamp"].copy()
    for i in ev.index[lost]:
        up = float(ev.at[i, "uptime"])
        at = int(ups.searchsorted(up))
        near = [k for k in range(max(0, at - 3), min(len(ups), at + 3)) if abs(ups[k] - up) <= NEIGHBOUR_UPTIME_S]
        offsets = sorted(walls[k] - pd.Timedelta(seconds=ups[k]) for k in near)
        if not offsets or (offsets[-1] - offsets[0]).total_seconds() > NEIGHBOURS_AGREE_S:
            continue
        ts.at[i] = offsets[len(offsets) // 2] + pd.Timedelta(seconds=up)
        placed += 1
    if not placed:
        return None
    ev["timestamp"] = ts
    ev.loc[ts.notna() & lost, "aligned"] = True
    hosts = ev.loc[dated, "host"].dropna().unique() if "host" in ev else []
    if len(hosts) == 1:          # the host its stamp was cut with is the file's one host
        ev.loc[ts.notna() & lost & ev["host"].isna(), "host"] = hosts[0]
    return (f"{src.path}: {placed} line(s) without their stamp placed by their kernel uptime and the file's "
            "dated lines around them")


def _needs_alignment(src) -> bool:
    ev = src.events
    if ev is None or not len(ev):
        return bool(src.meta.get("uptime_only"))
    return bool((ev["timestamp"].isna() & ev["uptime"].notna()).any())


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
            if usable(up):
                yield float(up), (None if ts is None or ts != ts else ts), msg
    for row in src.meta.get("clock_samples", []):
        if usable(row["uptime"]):
            yield row["uptime"], row.get("timestamp"), row["message"]


def _align_dmesg(src, sources, readers, booted=None) -> str:
    own = [(up, msg) for up, _ts, msg in _uptime_rows(src)]
    anchor = _anchor_from_syslog(src, own, [o for o in sources if readers[o.kind].anchors_uptime])
    if anchor is None:
        anchor = _anchor_from_audit(src, [o for o in sources if readers[o.kind].anchors_uptime])
    if anchor is None:
        anchor = _anchor_from_dmesg_t(src, own, [o for o in sources if not readers[o.kind].carries_wall_clock])
    if anchor is None and booted is not None:
        anchor = _anchor_from_boot_time(booted, [o for o in sources if readers[o.kind].anchors_uptime])
    if anchor is None:
        src.meta["clock"] = {"anchor": None, "absolute": False}
        return (f"{src.path}: dmesg uptime stamps could not be put on the wall clock (no anchor in the "
                f"bundle); its events are unaligned")
    _apply_boot_time(src, anchor)
    return (f"{src.path}: dmesg aligned to wall clock via {anchor['anchor']} "
            f"({anchor['pairs']} pair(s), ±{anchor['uncertainty_s']:.1f} s)")


def _anchor_from_syslog(src, own, anchors) -> dict | None:
    """From the same kernel lines in a log that keeps their uptime
    (``anchors``: the sources that do)."""
    wanted = {(round(up, 6), msg) for up, msg in own}
    for other in anchors:
        if other is src:
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


def _anchor_from_audit(src, anchors) -> dict | None:
    rows = [a for a in src.meta.get("audit_anchors", []) if usable(a.get("uptime"))]
    if not rows:
        return None
    offsets = sorted(a["epoch"] - a["uptime"] for a in rows)
    boot_epoch = offsets[len(offsets) // 2]
    boot, label = _on_syslog_clock(boot_epoch, "audit(epoch) records of the dmesg itself", anchors)
    spread = (offsets[-1] - offsets[0]) / 2
    return {"anchor": label, "boot": boot, "uncertainty_s": max(spread, 0.01), "pairs": len(rows),
            "source": src.path}


def _anchor_from_boot_time(booted, anchors) -> dict:
    """From the boot time the host's bundle recorded (/proc/stat ``btime``,
    whole seconds since the epoch).  The kernel counts it from the time it
    ran: after a suspend, or a virtual machine resumed from a snapshot, the
    stamps lag it by the time it did not run, as ``dmesg -T``'s do."""
    epoch, where = booted
    boot, label = _on_syslog_clock(epoch, f"the boot time its bundle recorded ({where}: btime)", anchors)
    return {"anchor": label, "boot": boot, "uncertainty_s": 1.0, "pairs": 1, "source": where}


def _on_syslog_clock(epoch: float, label: str, anchors) -> tuple:
    """``(boot, label)``: a boot given as an instant (seconds since the
    epoch) in UTC; on a bundle whose syslog is wall clock, the syslog's
    own offset from UTC puts the dmesg on that same clock."""
    boot = pd.Timestamp(epoch, unit="s", tz="UTC")
    utc_offset = _syslog_utc_offset(anchors)
    if utc_offset is not None:
        boot = (boot + pd.Timedelta(seconds=utc_offset)).tz_localize(None)
        label += f", on the syslog wall clock (UTC{utc_offset / 3600:+g} h)"
    return boot, label


def _syslog_utc_offset(anchors) -> float | None:
    for other in anchors:
        off = other.meta.get("clock", {}).get("utc_offset_s")
        if off is not None:
            return off
    return None


def _anchor_from_dmesg_t(src, own, uptime_kinds) -> dict | None:
    """From a ``dmesg -T`` copy: a source of the same kind whose lines carry
    the wall time instead (``uptime_kinds``: the sources of kinds that may
    carry uptime)."""
    counts: dict = {}
    for up, msg in set(own):
        counts.setdefault(msg, []).append(up)
    unique_own = {m: ups[0] for m, ups in counts.items() if len(ups) == 1}
    for other in uptime_kinds:
        if other is src or other.events is None or not len(other.events):
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
    boot = anchor["boot"]
    ev = src.events
    if ev is not None and len(ev):
        mask = ev["timestamp"].isna() & ev["uptime"].notna() & (ev["uptime"] <= MAX_UPTIME_S)
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
        vol = vol[vol.index.to_numpy() * 60.0 <= MAX_UPTIME_S]
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
