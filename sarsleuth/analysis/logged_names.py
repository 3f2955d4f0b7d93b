"""The name a host's logs give a process: the syslog tag of its lines.

Operators know a service by the name it logs under (``shop-api[24830]:``),
which is often not the program ``ps`` shows (``python3 backend.py``, a
``java -jar``, a wrapper).  Once the processes behind the findings are
chosen, the host's syslog-style files are read again for their PIDs, and
the tag their lines carry most often is the process's logged name.

The lines the scan kept answer first; only for PIDs none of them tags are
the files read again, for the PIDs asked alone (a literal search per PID,
so a large log costs one pass at the speed of a memory search); a PID whose
lines carry two tags (a PID reused over a long log) is named by the tag of
most of them.  Files whose lines carry no ``TAG[PID]:`` (RFC 5424, the
binary journal) add nothing.
"""
from __future__ import annotations

import re
from collections import Counter

import pandas as pd

from sarsleuth.errors import InputError
from sarsleuth.inputs.reading import DECOMPRESSION_ERRORS, read_chunks

#: Source kinds whose lines read ``... HOST TAG[PID]: message`` (read again
#: for a PID none of the kept lines tags).
TAGGED_KINDS = ("syslog", "journal")
#: Bytes read at a time, and kept from one chunk to the next so that a tag
#: cut by the chunk's end is still found.
CHUNK_BYTES = 8 << 20
_OVERLAP = 160
#: A tag as syslog writes it (RFC 3164 says 32 characters; rsyslog allows more).
_TAG_BEFORE = re.compile(rb"(?:^|[\s])([A-Za-z_][\w.@/+-]{0,63})$")
#: Occurrences counted per PID at most: enough to outvote a PID's reuse.
_MAX_COUNT = 1000
#: Tags that name no service of their own.
_NOT_SERVICES = {b"kernel", b"systemd", b"init", b"CRON", b"cron", b"sudo", b"su", b"logger"}


def logged_names(sources, pids_by_host: dict, copies: dict | None = None) -> dict:
    """{(host, pid): tag} for the PIDs of ``pids_by_host`` ({host: set of
    PIDs}) that the host's syslog-style files tag, read from the private
    copy where there is one (``copies``: {name in outputs: path})."""
    copies = copies or {}
    out: dict = {}
    for host, pids in pids_by_host.items():
        pids = sorted(int(p) for p in pids if isinstance(p, int) and p > 0)
        if not pids:
            continue
        mine = [src for src in sources if host is None or src.host in (None, host)]
        counts: dict[int, Counter] = {p: Counter() for p in pids}
        # the lines the scan kept (of any log, the journal's too) say it
        # without reading a file again
        for src in mine:
            _count_events(getattr(src, "events", None), counts)
        missing = {p: c for p, c in counts.items() if not c}
        for src in mine if missing else ():
            if src.kind in TAGGED_KINDS:
                _count_tags(copies.get(src.path, src.path), missing)
        for pid, tags in counts.items():
            if tags:
                tag, _n = tags.most_common(1)[0]
                out[(host, pid)] = tag.decode("utf-8", "replace")
    return out


def called(pid: int, program: str, tag: str | None) -> str:
    """A process as a story names it: by the name its log lines carry,
    with its PID and the program ps shows (``export-report (PID 11806,
    report.py)``), else by its program and PID."""
    return f"{tag} (PID {pid}, {program})" if tag and tag != program else f"{program} (PID {pid})"


def _count_events(events, counts: dict[int, Counter]) -> None:
    if events is None or not len(events) or "pid" not in events or "process" not in events:
        return
    pids = pd.to_numeric(events["pid"], errors="coerce")
    for pid, tags in counts.items():
        for tag in events.loc[pids == pid, "process"].dropna().astype(str):
            if tag and tag != "None" and tag.encode() not in _NOT_SERVICES:
                tags[tag.encode()] += 1


def _count_tags(path, counts: dict[int, Counter]) -> None:
    needles = {pid: b"[%d]:" % pid for pid in counts}
    tail = b""
    try:
        for chunk in read_chunks(path, CHUNK_BYTES, []):
            data = tail + chunk
            start_after = len(tail)       # what began in the tail was counted with the chunk before
            for pid, needle in needles.items():
                tags = counts[pid]
                at = data.find(needle)
                while at >= 0 and sum(tags.values()) < _MAX_COUNT:
                    if at + len(needle) > start_after:
                        m = _TAG_BEFORE.search(data, max(0, at - 80), at)
                        if m and m.group(1) not in _NOT_SERVICES:
                            tags[m.group(1)] += 1
                    at = data.find(needle, at + len(needle))
            tail = data[-_OVERLAP:]
    except (OSError, InputError, *DECOMPRESSION_ERRORS):
        return
