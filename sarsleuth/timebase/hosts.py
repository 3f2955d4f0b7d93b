"""Which host each source belongs to.

Most sources name their host (sa and sar banners, syslog lines, journal
fields).  nginx error.log, load-test reports and ps snapshots do not: they
belong to the one host of the case when there is one, else to the host whose
files sit beside them in the same folder (the way bundles and hand-made
incident folders are laid out).  A source that still has no host keeps
``None`` and is said to be host-less.
"""
from __future__ import annotations

import os
from collections import defaultdict


def canonical_spelling(spellings) -> str:
    """The one spelling of a host name written in several cases (``WEB1``,
    ``web1``): the lower-case one when a file writes it so, else the first
    in order; the same whichever files are read (a fleet and each of its
    hosts agree)."""
    spellings = sorted(set(spellings))
    return next((s for s in spellings if s == s.lower()), spellings[0])


def one_spelling(sources: list) -> list[str]:
    """Host names that differ only in case are one host (DNS and syslog do
    not tell them apart: a central log writes ``WEB1`` where the host's own
    files write ``web1``): every source renamed to one spelling; notes."""
    by_fold: dict = defaultdict(set)
    for s in sources:
        for name in _names_in(s):
            by_fold[str(name).casefold()].add(str(name))
    rename = {}
    for spellings in by_fold.values():
        if len(spellings) > 1:
            chosen = canonical_spelling(spellings)
            rename.update({n: chosen for n in spellings if n != chosen})
    if not rename:
        return []
    for s in sources:
        _rename_hosts(s, rename)
    told = defaultdict(list)
    for old, new in rename.items():
        told[new].append(old)
    return [f"{', '.join(sorted(olds))} and {new} are one host (host names do not tell case apart): told as {new}"
            for new, olds in sorted(told.items())]


def _names_in(src) -> set:
    names = {src.host} | set(src.meta.get("hosts") or ())
    if src.store:
        names.update(src.store.hosts())
    ev = src.events
    if ev is not None and len(ev) and "host" in ev:
        names.update(ev["host"].dropna().unique())
    return {n for n in names if n}


def _rename_hosts(src, rename: dict) -> None:
    src.host = rename.get(src.host, src.host)
    if src.meta.get("hosts"):
        src.meta["hosts"] = list(dict.fromkeys(rename.get(h, h) for h in src.meta["hosts"]))
    if src.store and any(k[0] in rename for k in src.store.runs):
        src.store.rename_hosts(rename)
    ev = src.events
    if ev is not None and len(ev) and "host" in ev and ev["host"].isin(list(rename)).any():
        categorical = hasattr(ev["host"], "cat")
        renamed = ev["host"].astype(object).map(lambda h: rename.get(h, h))
        ev["host"] = renamed.astype("category") if categorical else renamed


def host_of(src):
    """The host a source belongs to (its own, or the one it was assigned)."""
    return src.host if src.host else src.meta.get("assigned_host")


def assign(sources: list) -> list[str]:
    """Give host-less sources a host where the case says which; notes."""
    named = {s.host for s in sources if s.host}
    notes: list[str] = []
    by_folder: dict = {}
    for s in sources:
        if s.host:
            by_folder.setdefault(_folder(s.path), set()).add(s.host)
    for s in sources:
        if s.host or s.meta.get("assigned_host"):
            continue
        if len(named) == 1:
            host = next(iter(named))
        else:
            beside = by_folder.get(_folder(s.path), set())
            if len(beside) != 1:
                continue
            host = next(iter(beside))
            notes.append(f"{s.path}: names no host; taken to be {host}, whose files sit in the same folder")
        s.meta["assigned_host"] = host
        _fill_host_column(s, host)
    return notes


def _folder(path) -> str:
    return os.path.dirname(os.path.abspath(str(path)))


def _fill_host_column(src, host) -> None:
    if src.store:
        src.store.fill_host(host)
    for frame in (src.events,):
        if frame is None or not len(frame) or "host" not in frame:
            continue
        col = frame["host"]
        missing = col.isna()
        if missing.any():
            if hasattr(col, "cat"):
                if host not in col.cat.categories:
                    col = col.cat.add_categories([host])
                frame["host"] = col.fillna(host)
            else:
                frame["host"] = col.astype(object).where(~missing, host)


def attach_bundles(sources: list, host_facts: list) -> list[str]:
    """Sources read from a bundle belong to the bundle's host: each bundle's
    host takes the name its own files use (sa banners and syslog lines
    may say ``web07`` where the hostname file says ``web07.example.com``),
    and its host-less sources (nginx error.log, ps) get that name."""
    notes = []
    for facts in host_facts:
        mine = [s for s in sources if s.meta.get("bundle") == facts.bundle]
        named = {s.host for s in mine if s.host}
        facts.aliases |= named
        short = facts.hostname.split(".")[0] if facts.hostname else None
        if facts.hostname in named:
            facts.host = facts.hostname
        elif short in named:
            facts.host = short
        elif len(named) == 1:
            facts.host = next(iter(named))
        else:
            facts.host = facts.hostname or (sorted(named)[0] if named else None)
        if facts.host is None:
            continue
        for s in mine:
            if not s.host:
                # the bundle says whose file it is: no guess, unlike a folder
                s.host = facts.host
                _fill_host_column(s, facts.host)
        if len(named) > 1:
            notes.append(f"{facts.bundle}: its files name the host {', '.join(sorted(named))}; "
                         f"host facts are shown for {facts.host}")
    return notes
