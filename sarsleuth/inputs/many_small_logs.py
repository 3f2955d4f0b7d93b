"""Many small logs held as few sources.

A bundle may hold tens of thousands of small logs (one per application
instance, per day, per container).  Each parsed file is a
:class:`~sarsleuth.model.Source` with its own events frame and per-minute
line counts: 10 to 40 KB of pandas objects whatever the file's size, so a
tar of 50,000 logs with an event each took 2.6 GB before the analysis
began.  Past :data:`FOLD_AFTER` files in a case, the logs that share their
kind, host and clock (and, for logs naming no host, their folder) are held
as one source, folded :data:`BATCH` files at a time: its events and line
counts are those of its files together, each event keeping its file and
line; its path names the files' common folder and how many files it holds
(``meta["files"]`` lists them).  A case of fewer files is left as it is.
"""
from __future__ import annotations

import os
from collections import Counter

import pandas as pd

from sarsleuth.inputs.parsers import registry
from sarsleuth.model import Source

#: Files a case holds one by one; past this, small logs are folded.
FOLD_AFTER = 1000
#: Files of one group held before they are folded into the group.
BATCH = 256
#: Uptime and audit pairs a folded source keeps (dmesg alignment reads a few).
MAX_CLOCK_PAIRS = 1000

_SAME = ("format", "engine", "year_from", "volume_unit", "bundle", "clock")
_SUMMED = ("unstamped_lines", "aggregated_events", "suppressed_unattributed")
_PAIRS = ("clock_samples", "audit_anchors")
_KNOWN = set(_SAME) | set(_SUMMED) | set(_PAIRS) | {"volume", "levels"}


def fold_key(src):
    """What sources must share to be folded together, or None when ``src``
    is kept on its own (metrics, reports, a dmesg, anything this module
    does not know how to add up)."""
    if not _foldable(src.kind) or src.store or src.reports or set(src.meta) - _KNOWN:
        return None
    start, _ = src.span()
    return (src.kind, src.host, src.tz, tuple(repr(src.meta.get(k)) for k in _SAME),
            None if src.host else os.path.dirname(src.path), getattr(start, "year", None))


def _foldable(kind: str) -> bool:
    parser = registry().get(kind)
    return parser is not None and parser.foldable


def _stamp_type(src) -> str | None:
    """The type of a source's event times (naive, or aware in a zone), None
    without events: frames are folded only with frames of their type."""
    events = src.events
    return str(events["timestamp"].dtype) if events is not None and len(events) else None


class Folds:
    """Sources in reading order, small logs folded once the case holds
    more than ``after`` files."""

    def __init__(self, after: int | None = None):
        self.after = FOLD_AFTER if after is None else after
        self.seen = 0
        self.read: list | None = []  # every source as read, until folding starts
        self.order: list = []        # sources and groups, in reading order
        self.groups: dict = {}

    @property
    def folding(self) -> bool:
        return self.seen > self.after

    def add(self, src) -> None:
        self.seen += 1
        if self.read is not None:
            self.read.append(src)
        key = fold_key(src)
        if key is None:
            self.order.append(src)
        else:
            stamps = _stamp_type(src)
            group = self.groups.get(key)
            if group is not None and None not in (stamps, group.stamps) and stamps != group.stamps:
                key = (*key, stamps)         # events on another clock type: a group of their own
                group = self.groups.get(key)
            if group is None:
                group = self.groups[key] = _Group()
                self.order.append(group)
            group.stamps = group.stamps or stamps
            group.pending.append(src)
        if self.seen == self.after + 1:
            self.read = None
            for g in self.groups.values():
                g.fold()
        elif self.folding and key is not None and len(group.pending) >= BATCH:
            group.fold()

    def sources(self) -> list:
        if not self.folding:
            return list(self.read)          # a case of few files is left as it was read
        out = []
        for item in self.order:
            out.extend(item.finish() if isinstance(item, _Group) else [item])
        return out


class _Group:
    def __init__(self):
        self.stamps: str | None = None  # the type of its event times, once one is seen
        self.pending: list = []
        self.first = None            # the group's first source (its kind, host, clock)
        self.files: list = []
        self.frames: list = []       # events of the files folded so far, a frame per batch
        self.volumes: list = []
        self.warnings: list = []
        self.records = 0
        self.levels: Counter = Counter()
        self.sums: Counter = Counter()
        self.pairs: dict = {k: [] for k in _PAIRS}

    def fold(self) -> None:
        """Add the pending sources to what the group holds, and drop them."""
        if not self.pending:
            return
        self.first = self.first or self.pending[0]
        frames, volumes = [], []
        for src in self.pending:
            self.files.append(src.path)
            self.warnings.extend(src.warnings)
            self.records += int(src.records)
            meta = src.meta
            self.levels.update(meta.get("levels") or {})
            for k in _SUMMED:
                self.sums[k] += int(meta.get(k) or 0)
            for k in _PAIRS:
                room = MAX_CLOCK_PAIRS - len(self.pairs[k])
                self.pairs[k].extend((meta.get(k) or [])[:max(room, 0)])
            if src.events is not None and len(src.events):
                frames.append(src.events)
            vol = meta.get("volume")
            if vol is not None and len(vol):
                volumes.append(vol)
        if frames:
            self.frames.append(pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0])
        if volumes:
            self.volumes.append(_summed(volumes))
        self.pending = []

    def finish(self) -> list:
        """The group as one source (a group of one file stays that file)."""
        if not self.files and len(self.pending) == 1:
            return self.pending
        self.fold()
        first = self.first
        meta = {k: first.meta[k] for k in _SAME if k in first.meta}
        for k, n in self.sums.items():
            if n or k == "unstamped_lines":
                meta[k] = n
        meta.update(self.pairs)
        meta["levels"] = dict(self.levels)
        if self.volumes:
            meta["volume"] = _summed(self.volumes)
        meta["files"] = self.files
        if self.frames:
            events = pd.concat(self.frames, ignore_index=True) if len(self.frames) > 1 else self.frames[0]
        else:
            events = first.events.iloc[0:0] if first.events is not None else None
        return [Source(path=f"{_common_folder(self.files)}/ ({len(self.files)} files)", kind=first.kind,
                       host=first.host, events=events, warnings=self.warnings, tz=first.tz, records=self.records,
                       meta=meta)]


def _summed(volumes):
    """Lines per minute of several files, added up minute by minute."""
    if len(volumes) == 1:
        return volumes[0]
    both = pd.concat(volumes)
    out = both.groupby(level=0, sort=True).sum()
    out.index.name, out.name = volumes[0].index.name, volumes[0].name
    return out


def _common_folder(paths: list) -> str:
    """The folder every path sits in (an archive's members: ``ARCHIVE!dir``)."""
    folders = {os.path.dirname(p) for p in paths}
    if len(folders) == 1:
        return folders.pop()
    try:
        return os.path.commonpath(list(folders)) or "."
    except ValueError:          # absolute and relative paths mixed
        return "."
