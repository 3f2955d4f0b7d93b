"""One clock for a case.

Parsers return times as their files record them: aware when the file
records an offset or an instant (sa records, RFC 3339 syslog, sadf's UTC),
naive wall clock otherwise, with ``Source.tz`` naming the zone the file
records for its host.  :func:`settle` then decides, once, after every source
is read:

1. which host each host-less source (nginx error.log, ab, ps) belongs to;
2. the years and dates that were only guessed (syslog without year, sar
   text without banner), from the other sources of the same host;
3. dmesg uptime stamps on the wall clock (anchors);
4. each host's zone: the one its own files record, else ``--tz``, else the
   zone recorded by the other hosts (a guess, said in a note), else none;
5. the display zone: ``--tz``, else the one zone the hosts share, else UTC;
   without any zone the case stays on the hosts' wall clock.

Every frame is then put on the display clock in place, and the
:class:`~sarsleuth.timebase.clock.Clock` of the case (its zones, the clock
each story is told on) is ``Settlement.clock``.  A ``--tz`` that
contradicts a zone a host's files record is a warning naming both: the
host's wall-clock times are read in the recorded zone (that is the clock
that wrote them) and merely shown in ``--tz``, so nothing is counted twice.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from sarsleuth.timebase import dmesg, hosts, years, zones
from sarsleuth.timebase.clock import Clock


@dataclass
class Settlement:
    zone: str | None = None                          # display zone, None = wall clock
    host_zones: dict = field(default_factory=dict)   # host -> zone its wall-clock times are read in
    notes: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    one_clock: bool = False                          # --tz: every story told on ``zone``

    @property
    def clock(self) -> Clock:
        """The case's clock (hosts known by name)."""
        return Clock(zone=self.zone, host_zones={h: z for h, z in self.host_zones.items() if h is not None},
                     one_clock=self.one_clock)


def settle(sources: list, readers, tz: str | None = None, host_zones: dict | None = None,
           placed_by: tuple = ("--window", "--tz"), host_boots: dict | None = None,
           host_collected: dict | None = None) -> Settlement:
    """Put ``sources`` on one clock (in place); see the module doc.
    ``readers``: {kind: its parser}, which says what a kind's files carry
    (``sarsleuth.inputs.parsers.registry()``); ``host_zones``: {host: (zone, where
    it was read)} from bundles' host facts (etc/localtime, timedatectl):
    the host's configured zone, used like a zone its files record;
    ``host_boots``: {host: (boot epoch, where it was read)} from bundles'
    /proc/stat, the anchor of a dmesg with no other; ``host_collected``:
    {host: what ``date`` printed when its bundle was made}, a date its
    files' guessed years are settled against;
    ``placed_by``: the options of the command that place a file dated by
    its modification time (what the note says to use)."""
    out = Settlement(one_clock=bool(tz))
    out.notes.extend(hosts.one_spelling(sources))
    out.notes.extend(hosts.assign(sources))
    out.notes.extend(years.redate(sources, hosts.host_of, readers, host_collected))
    out.notes.extend(dmesg.align(sources, readers, host_boots))
    _decide_zones(sources, tz, out, host_zones or {}, placed_by)
    for src in sources:
        _to_display(src, out.host_zones.get(hosts.host_of(src)), out.zone)
    return out


def _decide_zones(sources, tz, out: Settlement, configured: dict, placed_by: tuple) -> None:
    recorded: dict = {}      # host -> [(zone, path, a time of the source)]
    aware = False
    first_time: dict = {}
    for src in sources:
        host = hosts.host_of(src)
        start, _ = src.span()
        if start is not None and host not in first_time:
            first_time[host] = start
        if src.tz and not zones.is_utc(src.tz):
            recorded.setdefault(host, []).append((str(src.tz), src.path, start))
        aware = aware or (_has_aware_times(src) and not timed_by_mtime(src))
    all_hosts = {hosts.host_of(s) for s in sources}
    for host, (zone, where) in configured.items():
        if host in all_hosts:
            # the host's configured zone is the clock its syslog and nginx wrote in
            recorded.setdefault(host, []).append((str(zone), where, first_time.get(host)))
    for host in all_hosts:
        seen = recorded.get(host, [])
        if seen:
            zone, path, when = seen[0]
            _disagreeing(host, seen, out)
            if tz and zones.offset_at(tz, when) != zones.offset_at(zone, when):
                out.warnings.append(
                    f"--tz {tz} contradicts the zone {zone} that {path} records for "
                    f"{host or 'this host'}: its wall-clock times are read in {zone} and shown in {tz}")
            out.host_zones[host] = zone
        else:
            out.host_zones[host] = tz
    known = sorted({z for z in out.host_zones.values() if z})
    if tz:
        out.zone = tz
    elif len(known) == 1:
        out.zone = known[0]
    elif len(known) > 1:
        out.zone = "UTC"
        out.notes.append("hosts record different time zones (" + ", ".join(known) + "); each host's story is told "
                         "on its own clock, with its offset, and the case's tables are in UTC")
    elif aware:
        out.zone = "UTC"
    if out.zone is None:
        out.notes.append("no source carries a time zone: times are the host's wall clock (use --tz to set it)")
        for src in sources:
            if timed_by_mtime(src):
                out.notes.append(f"{src.path}: placed at its file's modification time, shown as UTC wall "
                                 f"clock (a guess: use {' or '.join(placed_by)} to place it)")
        return
    for host in sorted(all_hosts, key=str):
        if out.host_zones.get(host) is None and _has_wall_times(sources, host):
            out.host_zones[host] = out.zone
            if not tz:
                why = "the zone recorded by the other sources" if known else "the zone of the UTC-stamped sources"
                out.notes.append(f"times without a zone{_of(host)} are taken to be in {out.zone}, {why} "
                                 "(a guess: use --tz to say)")


def _disagreeing(host, seen, out: Settlement) -> None:
    first_zone, first_path, when = seen[0]
    for zone, path, _ in seen[1:]:
        if zones.offset_at(zone, when) != zones.offset_at(first_zone, when):
            out.warnings.append(f"{path} records the zone {zone}{_of(host)} but {first_path} records "
                                f"{first_zone}: {first_zone} is used")


def _of(host) -> str:
    return f" of {host}" if host else ""


def timed_by_mtime(src) -> bool:
    """Is the only time a source has its file's modification time (ps
    snapshots, load-test reports without stamps)?  Such an instant is a
    guess and says nothing about zones."""
    if src.meta.get("time_from") == "mtime":
        return True
    return bool(src.reports) and all(r.get("time_from") == "mtime" for r in src.reports)


def _has_aware_times(src) -> bool:
    if src.store and any(tz is not None for tz in src.store.zones()):
        return True
    frame = src.events
    if frame is not None and len(frame) and getattr(frame["timestamp"].dt, "tz", None) is not None:
        return True
    # a log with no event: its lines per minute (a journal's are instants)
    volume = src.meta.get("volume") if src.meta else None
    if volume is not None and len(volume) and getattr(volume.index, "tz", None) is not None:
        return True
    return any(getattr(r.get("start"), "tzinfo", None) is not None for r in src.reports)


def _has_wall_times(sources, host) -> bool:
    for src in sources:
        if hosts.host_of(src) != host:
            continue
        if src.store and None in src.store.zones():
            return True
        frame = src.events
        if frame is not None and len(frame) and getattr(frame["timestamp"].dt, "tz", None) is None:
            return True
        if any(r.get("start") is not None and getattr(r.get("start"), "tzinfo", None) is None for r in src.reports):
            return True
    return False


def _to_display(src, source_zone, display_zone) -> None:
    if src.store:
        walls = src.store.zones() == [None]
        counted = walls and src.records and src.records == len(src.store.sample_times())
        src.store.map_times(lambda times: zones.to_clock(times, source_zone, display_zone))
        if counted:
            # a sample count taken on the wall clock saw a repeated (autumn) hour once:
            # counted again on the settled clock, each of its records counts
            src.records = int(len(src.store.sample_times()))
    frame = src.events
    if frame is not None and len(frame):
        converted = zones.to_clock(frame["timestamp"], source_zone, display_zone)
        if converted is not frame["timestamp"]:
            frame["timestamp"] = converted
    for rep in src.reports:
        for key in ("start", "end", "first_timestamp", "last_timestamp"):
            if rep.get(key) is not None:
                rep[key] = zones.ts_to_clock(rep[key], source_zone, display_zone)
    vol = src.meta.get("volume")
    if vol is not None and len(vol) and src.meta.get("volume_unit") == "minute":
        import pandas as pd
        idx = zones.to_clock(pd.Series(vol.index), source_zone, display_zone)
        vol.index = pd.DatetimeIndex(idx, name=vol.index.name)
    rows = src.meta.get("row_lines")
    if rows is not None and len(rows):
        rows["timestamp"] = zones.to_clock(rows["timestamp"], source_zone, display_zone)
