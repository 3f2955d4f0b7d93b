"""Which processes a finding is about: the programs a story names.

A finding about a resource (CPU, memory, a disk, the process table) is
joined with what the case shows of the processes at that time:

- ``ps`` snapshots taken during the finding: the processes with the most
  %CPU (cpu), the largest resident memory and what grew since an earlier
  snapshot (memory), the ones in D state (disk), the commands with the
  most processes (pids);
- the kernel's and the programs' own lines the finding rests on (their
  PIDs' ps rows): a hung task and the lock owner the kernel names, an OOM
  victim, the program that logged the error, a database's own refusals.

What each detector is about is data (``resource`` in ``knowledge/kb.toml``).
The finding's refs get ``responsible`` (``stress-ng (2 processes, 99.0 %
and 98.7 % CPU)``) and ``responsible_pids``; the ps rows join its evidence.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

import pandas as pd

from sarsleuth.analysis.db_clients import by_connections, by_own_lines
from sarsleuth.analysis.load_tests import driven_by_load_test, within_a_local_load_test
from sarsleuth.analysis.logged_names import logged_names
from sarsleuth.analysis.process_cpu import window_share
from sarsleuth.analysis.ps_snapshots import (INTERPRETERS, Snapshot, program_name, rows_of, snapshots_of,
                                             without_collectors)
from sarsleuth.analysis.tmpfs_writers import writers
from sarsleuth.detectors.series import fmt_time
from sarsleuth.knowledge import kb_entry, programs
from sarsleuth.model import Evidence
from sarsleuth.safe_text import cut_words

#: A group of processes is named only when it holds at least this share of
#: one CPU (%CPU as ps prints it), of RAM (%MEM), or grew by this much RAM.
MIN_CPU_PCT = 20.0
MIN_MEM_PCT = 5.0
MIN_GROWTH_PCT = 3.0
#: How far around a finding a snapshot still shows its processes.
SLACK_SECONDS = 5.0
#: How long after a memory finding a snapshot still shows who holds the
#: memory: resident memory stays where it was taken (a CPU share does not),
#: and what grew since the snapshot before the finding is what took it.
#: A database's connections are held the same way.  (Or one sampling
#: interval: what followed a last sample is unknown until the next one.)
MEMORY_HELD_SECONDS = 120.0
#: Groups named at most.
MAX_GROUPS = 3


@dataclass
class Group:
    """Processes of one program, as a story names them."""

    name: str
    pids: list = field(default_factory=list)
    figures: list = field(default_factory=list)   # "99.0 % CPU" per process
    total: float = 0.0
    rows: list = field(default_factory=list)      # (line, text) of their ps rows, heaviest first
    grew: str = ""                                # a note after the figures (growth, how it was chosen)
    alias: str = ""                               # the name its log lines carry, when not the program's
    instances: str = ""                           # each of several big processes of one program, told apart
    members: list = field(default_factory=list)   # (value, pid, line, text)

    def phrase(self) -> str:
        count = len(self.pids)
        what = (f"{count} processes" if count > 1 else f"PID {self.pids[0]}") if self.pids else ""
        figures = ", ".join(self.figures[:3])
        inner = "; ".join(x for x in (what + (f": {figures}" if figures else ""), self.grew, self.instances) if x)
        if self.alias:
            # the service as its logs name it, then the program ps shows
            return f"{self.alias} (as its log lines tag it; {self.name} in ps{', ' + inner if inner else ''})"
        return f"{self.name} ({inner})" if inner else self.name


def _soon_after(snaps: list[Snapshot], end, seconds: float) -> Snapshot | None:
    """The first snapshot taken within ``seconds`` after ``end``."""
    if end is None or pd.isna(end):
        return None
    lo, hi = pd.Timestamp(end), pd.Timestamp(end) + pd.Timedelta(seconds=seconds)
    found = []
    for s in snaps:
        try:
            if s.time is not None and lo < s.time <= hi:
                found.append(s)
        except TypeError:          # a wall-clock snapshot beside aware times
            continue
    return min(found, key=lambda s: s.time, default=None)


def _during(snaps: list[Snapshot], start, end) -> tuple[list[Snapshot], list[Snapshot]]:
    """(snapshots inside the finding, snapshots before it)."""
    if start is None or pd.isna(start):
        return [], []
    lo = pd.Timestamp(start) - pd.Timedelta(seconds=SLACK_SECONDS)
    hi = pd.Timestamp(end if end is not None and not pd.isna(end) else start) + pd.Timedelta(seconds=SLACK_SECONDS)
    inside, before = [], []
    for s in snaps:
        if s.time is None:
            continue
        try:
            if lo <= s.time <= hi:
                inside.append(s)
            elif s.time < lo:
                before.append(s)
        except TypeError:          # a wall-clock snapshot beside aware times
            continue
    return inside, before


def _rank(frame, column: str, minimum: float, unit: str) -> list[Group]:
    groups: dict[str, Group] = {}
    for r in frame.itertuples(index=False):
        name = program_name(str(r.command))
        if name.startswith("[") or name == "ps":
            continue
        v = r._asdict().get(column) if column != "count" else 1
        v = 0.0 if v is None or pd.isna(v) else float(v)
        g = groups.setdefault(name, Group(name))
        g.members.append((v, int(r.pid), int(r.line), str(r.text)))
        g.total += v
    picked = sorted((g for g in groups.values() if g.total >= minimum), key=lambda g: -g.total)
    for g in picked:
        # the heaviest first: they are the ones a story names
        g.members.sort(key=lambda m: -m[0])
        g.pids = [m[1] for m in g.members]
        g.rows = [(m[2], m[3]) for m in g.members]
        if unit:
            g.figures = [f"{m[0]:.1f} {unit}" for m in g.members if m[0] >= g.members[0][0] / 10]
    return picked[:MAX_GROUPS]


def by_cpu(snap: Snapshot, start=None, end=None, earlier: Snapshot | None = None) -> list[Group]:
    """The programs that kept the CPUs busy from ``start`` to ``end``: each
    process's share of a CPU over the part of the window the snapshot
    covers (:func:`~sarsleuth.analysis.process_cpu.window_share`: ps's
    %CPU is a life-long average), collectors (what gathered the files,
    and what they started) left out."""
    frame = without_collectors(snap)
    if start is not None and snap.time is not None:
        before = {}
        if earlier is not None and earlier.time is not None:
            before = {int(r.pid): r for r in rows_of(earlier).itertuples(index=False)}
        rates, alive = [], []
        for r in frame.itertuples(index=False):
            then = before.get(int(r.pid))
            same = then is not None and str(then.start) == str(r.start)
            used = window_share(r, snap.time, start, end if end is not None else start,
                                earlier=(then, earlier.time) if same else None)
            rates.append(float("nan") if used is None else used[0])
            alive.append(0.0 if used is None else used[1])
        program = frame["command"].astype(str).map(program_name)
        longest = pd.Series(alive, index=frame.index).groupby(program).transform("max")
        frame = frame.assign(cpu_pct=pd.Series(rates, index=frame.index) * longest)
    return _rank(frame, "cpu_pct", MIN_CPU_PCT, "% CPU")


def by_memory(snap: Snapshot, earlier: Snapshot | None) -> list[Group]:
    """The programs holding the most resident memory, and how much each
    grew since an earlier snapshot: named when they hold a noticeable share
    of RAM (%MEM) or grew by one."""
    frame = rows_of(snap)
    ram_kb = _ram_kb(frame)
    old = {}
    if earlier is not None:
        for g in _rank(rows_of(earlier), "rss_kb", 0.0, ""):
            old[g.name] = g.total
    out = []
    for g in _rank(frame, "rss_kb", 0.0, "")[:MAX_GROUPS * 3]:
        share = 100.0 * g.total / ram_kb if ram_kb else 0.0
        grown = g.total - old.get(g.name, 0.0) if earlier is not None else 0.0
        grew_share = 100.0 * grown / ram_kb if ram_kb else 0.0
        if share < MIN_MEM_PCT and grew_share < MIN_GROWTH_PCT:
            continue
        g.figures = [f"RSS {_size(g.total)}"]
        if earlier is None:
            g.instances = _instances(g, frame, ram_kb)
        if grew_share >= MIN_GROWTH_PCT:
            g.grew = (f"up from {_size(old[g.name])} in the earlier snapshot" if g.name in old
                      else "not in the earlier snapshot")
            if g.name in old:
                g.grew += _new_instance(g, frame, earlier, grown)
        out.append((grew_share, share, g))
    out.sort(key=lambda x: (-x[0], -x[1]))
    return [g for _, _, g in out[:MAX_GROUPS]]


def _new_instance(g: Group, frame, earlier: Snapshot, grown: float) -> str:
    """Where a program runs as several processes (two instances of one
    script, each its own service), the process new since the earlier
    snapshot that holds most of what the program grew by: its PID, RSS and
    the arguments that tell it from the others; '' when none does."""
    before = set(earlier.frame["pid"].dropna().astype(int))
    new = [m for m in g.members if m[1] not in before]
    if len(g.members) < 2 or not new:
        return ""
    rss, pid = max((m[0], m[1]) for m in new)
    if rss < grown / 2:
        return ""
    return f"; new since then: PID {pid}, RSS {_size(rss)}" + _run_as(g, frame, pid)


def _run_as(g: Group, frame, pid: int) -> str:
    """The arguments that tell one of a program's processes from the others."""
    command = str(frame.loc[frame["pid"] == pid, "command"].iloc[0]).split()
    at = next((i for i, w in enumerate(command) if os.path.basename(w) == g.name), 0)
    args = cut_words(" ".join(command[at + 1:]), 80)
    return f", run as `{g.name} {args}`" if args else ""


def _instances(g: Group, frame, ram_kb: float) -> str:
    """With no earlier snapshot to say who grew, each process of a program
    run as several big ones (one script, several services) with its PID,
    RSS, start and arguments: no one name is given to all their memory."""
    big = [m for m in g.members if ram_kb and 100.0 * m[0] / ram_kb >= MIN_MEM_PCT][:MAX_GROUPS]
    if len(big) < 2:
        return ""
    parts = []
    for rss, pid, _line, _text in big:
        row = frame.loc[frame["pid"] == pid].iloc[0]
        start = str(row["start"]) if "start" in frame.columns and pd.notna(row["start"]) else ""
        parts.append(f"PID {pid}: RSS {_size(rss)}" + (f", started {start}" if start else "") + _run_as(g, frame, pid))
    return "; ".join(parts) + " (no earlier snapshot says which of them grew)"


def _ram_kb(frame) -> float:
    """RAM as ps divides by it: RSS over %MEM of the largest process."""
    rows = frame[(frame["mem_pct"] > 0) & frame["rss_kb"].notna()]
    if not len(rows):
        return 0.0
    top = rows.sort_values("rss_kb").iloc[-1]
    return float(top["rss_kb"]) * 100.0 / float(top["mem_pct"])


def by_state(snap: Snapshot, state: str = "D") -> list[Group]:
    frame = rows_of(snap)
    stuck = frame[frame["stat"].fillna("").astype(str).str.startswith(state)]
    groups = _rank(stuck, "count", 1.0, "")
    for g in groups:
        g.figures = [f"{state} state"]
    return groups


def by_disk_movers(snap: Snapshot) -> list[Group]:
    """Programs known to move data to and from disk, running (any CPU):
    who to name for a saturated disk when nothing waits in D state, as
    asynchronous I/O does not."""
    movers = programs("disk_movers")
    frame = rows_of(snap)
    names = frame["command"].astype(str).map(program_name)
    running = frame[names.isin(movers) & ~frame["stat"].fillna("").astype(str).str.startswith("Z")]
    groups = _rank(running, "cpu_pct", 0.0, "% CPU")
    for g in groups:
        g.grew = "none waiting in D state: a program known to move data"
    return groups


#: Processes of one program a snapshot must hold (or have gained since the
#: one before) for it to be named as what took a host's or cgroup's task slots.
MIN_TASKS = 8


def by_count(snap: Snapshot, earlier: Snapshot | None = None) -> list[Group]:
    """The programs holding the most processes: with an earlier snapshot,
    those that gained the most since it (a service with many workers all
    along did not take the slots that ran out), else the largest."""
    groups = _rank(rows_of(snap), "count", float(MIN_TASKS), "")
    if earlier is None:
        return groups
    old = {g.name: g.total for g in _rank(rows_of(earlier), "count", 0.0, "")}
    when = fmt_time(earlier.time) if earlier.time is not None else "the earlier snapshot"
    grown = []
    for g in groups:
        gained = g.total - old.get(g.name, 0.0)
        if gained < MIN_TASKS:
            continue
        g.grew = (f"{gained:.0f} more than at {when}" if g.name in old else f"none at {when}")
        grown.append((gained, g))
    grown.sort(key=lambda x: -x[0])
    return [g for _, g in grown]


def _size(kb: float) -> str:
    """A size the kernel gave in KiB, as people read it (never 0 for a
    non-zero value)."""
    if kb >= 1 << 20:
        return f"{kb / (1 << 20):.1f} GiB"
    if kb >= 1024:
        return f"{kb / 1024:.0f} MiB"
    return f"{kb:.0f} KiB"


def _by_pid(snaps: list[Snapshot]) -> dict:
    """{pid: (path, line, row, command)} over every snapshot, the latest
    snapshot's row for a PID seen in several."""
    rows: dict = {}
    for snap in snaps:
        for r in snap.frame.itertuples(index=False):
            rows[int(r.pid)] = (snap.path, int(r.line), str(r.text), str(r.command).strip())
    return rows


def _join_pids(f, snaps: list[Snapshot]) -> None:
    """A finding the logs tie to PIDs (an OOM victim, a hung task, a
    crashed worker): the command each ran, as ps shows it, joined by PID."""
    pids = [p for p in (f.refs or {}).get("pids") or [] if isinstance(p, int)]
    if not pids:
        return
    rows = _by_pid(snaps)
    found = [(p, rows[p]) for p in pids if p in rows]
    if not found:
        return
    f.refs["pid_commands"] = {str(p): cut_words(row[3], 120, "") for p, row in found[:8]}
    for _p, (path, line, text, _cmd) in found[:2]:
        f.evidence.append(Evidence(path=path, line=line, text=text))
    f.sources = sorted(set(f.sources) | {row[0] for _p, row in found[:2]})


def attribute(findings: list, sources: list, reports: list = (), copies: dict | None = None) -> None:
    """Name the processes behind each finding: by what it is about
    (``resource`` in kb.toml) from the ps snapshot taken during it, and by
    the PIDs its log lines name, in place; a process the host's logs tag
    under a name of its own is called by that name too
    (:mod:`~sarsleuth.analysis.logged_names`; ``copies``: the private
    copies of archive members and streams to read them from)."""
    cache: dict = {}
    chosen = []
    for f in findings:
        if f.host not in cache:
            cache[f.host] = snapshots_of(sources, f.host)
        if cache[f.host] and not (f.refs or {}).get("pid_commands"):
            _join_pids(f, cache[f.host])
        resource = kb_entry(f.detector).get("resource")
        if not resource:
            continue
        if f.host not in cache:
            cache[f.host] = snapshots_of(sources, f.host)
        snaps = cache[f.host]
        # a sample stamped at its end covers the interval before it (beyond the slack a snapshot's time is allowed)
        early = max(pd.Timedelta(0), f.resolution - pd.Timedelta(seconds=SLACK_SECONDS))
        inside, before = _during(snaps, f.start - early, f.end) if snaps else ([], [])
        after = None
        if not inside and resource in ("memory", "connections"):
            # memory and connections are still held a little later: the snapshot then, against the one before
            after = _soon_after(snaps, f.end, max(MEMORY_HELD_SECONDS, f.resolution.total_seconds()))
            inside = [after] if after is not None else []
        if not inside:
            if resource == "cpu":
                within_a_local_load_test(f, reports)
            elif resource == "connections":
                by_own_lines(f)
            continue
        snap = inside[len(inside) // 2] if resource != "memory" else inside[-1]
        if resource == "cpu":
            # a sample stamped at its end covers the interval before it; of
            # the snapshots taken in it, the one showing the most of the CPU
            # it measured (a burn over before a later snapshot is only in an
            # earlier one), the middle one among equals
            tried = [(s, by_cpu(s, f.start - f.resolution, f.end, before[-1] if before else None)) for s in inside]
            mid = len(inside) // 2
            k = max(range(len(tried)), key=lambda i: (round(sum(g.total for g in tried[i][1]), 1), -abs(i - mid)))
            snap, groups = tried[k]
        elif resource == "memory":
            earlier = before[-1] if before else (inside[0] if len(inside) > 1 else None)
            if earlier is not None and earlier.same_second(snap):
                earlier = None      # two snapshots of the same second say nothing of growth
            groups = by_memory(snap, earlier)
            if (f.refs or {}).get("shared_memory"):
                # shared memory: its writer first, whatever RSS it has; the
                # files stay when it has finished, so it may be only in an
                # earlier snapshot of the finding's span (the latest that has it)
                found = []
                for i in range(len(inside) - 1, -1, -1):
                    prior = inside[i - 1] if i else (before[-1] if before else None)
                    found = writers(inside[i], prior, program_name)
                    if found:
                        if inside[i] is not snap:     # that snapshot is the one the story cites
                            snap, groups = inside[i], by_memory(inside[i], prior)
                        break
                groups = [Group(w["name"], pids=[w["pid"]], rows=[(w["line"], w["text"])],
                                grew=f"new, writing to {w['path']}, a tmpfs on systemd hosts (a guess: its command line names it)")
                          for w in found][:MAX_GROUPS] + groups
        elif resource == "disk":
            # who waits on the disk (D state), else who is known to move data
            found = [(s, g) for rank in (by_state, by_disk_movers) for s in inside for g in [rank(s)] if g]
            snap, groups = found[0] if found else (snap, [])
        elif resource == "pids":
            # the latest snapshot of the span holds the most of what piled up
            snap = inside[-1]
            groups = by_count(snap, before[-1] if before else (inside[0] if len(inside) > 1 else None))
        elif resource == "connections":
            held, pids, rows, said = by_connections(inside, before[-1] if before else None, sources, program_name)
            if not held and after is not None:
                by_own_lines(f)     # taken after the refusals: it says nothing of who held the slots then
            snap, groups = (held, [Group("postgres", pids=pids, rows=rows, grew=said)]) if held else (snap, [])
        else:
            continue
        if after is not None and before:
            # only what grew since the snapshot before: a process that was large all along did not take it
            groups = [g for g in groups if g.grew]
        if not groups:
            continue
        chosen.append((f, groups, snap, after, resource))
    asked: dict = {}
    for f, groups, *_ in chosen:
        asked.setdefault(f.host, set()).update(g.pids[0] for g in groups if g.pids)
    tags = logged_names(sources, asked, copies) if asked else {}
    for f, groups, snap, after, resource in chosen:
        for g in groups:
            tag = tags.get((f.host, g.pids[0])) if g.pids else None
            # an interpreter's tag says less than the script ps names
            if tag and tag != g.name and re.sub(r"[\d.]+$", "", tag) not in INTERPRETERS and not g.instances:
                g.alias = tag
        _attach(f, groups, snap, finding_end=f.end if after is not None else None)
        if resource == "cpu":
            driven_by_load_test(f, [g.name for g in groups], reports)


def _on_clock_of(t, ref):
    """``t`` read on the clock ``ref`` is told on (a snapshot's time in the
    sentence of a finding on its host's clock), the same instant."""
    t = pd.Timestamp(t)
    try:
        ref = pd.Timestamp(ref)
    except (TypeError, ValueError):
        return t
    if t.tzinfo is not None and ref is not pd.NaT and ref.tzinfo is not None:
        return t.tz_convert(ref.tzinfo)
    return t


def _attach(f, groups: list[Group], snap: Snapshot, finding_end=None) -> None:
    """``finding_end``: given when the snapshot was taken after the finding
    (the phrase says how long after)."""
    when = fmt_time(_on_clock_of(snap.time, f.start)) if snap.time is not None else "unknown time"
    if finding_end is not None:
        when += f", {(pd.Timestamp(snap.time) - pd.Timestamp(finding_end)).total_seconds():.0f} s after it"
    where = os.path.basename(snap.path)
    phrase = " and ".join(g.phrase() for g in groups)
    f.refs["responsible"] = f"{phrase} in ps at {when} ({where})"
    f.refs["responsible_names"] = [g.alias or g.name for g in groups]
    f.refs["responsible_pids"] = [p for g in groups for p in g.pids][:16]
    for g in groups:
        for line, text in g.rows[:2]:
            f.evidence.append(Evidence(path=snap.path, line=line, text=text))
    f.sources = sorted(set(f.sources) | {snap.path})
