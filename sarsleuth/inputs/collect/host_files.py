"""Files of the host copied into the bundle: read only (never a write, not
even of an access time where the kernel lets us say so), each bounded,
chosen by the window.

A text log larger than its cap keeps its last part, from a line start (the
recent end is where an incident shows); a binary or compressed file that
large is left out.  Every file keeps its modification time: a syslog line
without a year and a ps snapshot are dated by it.
"""
from __future__ import annotations

import datetime as dt
import errno
import glob
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from sarsleuth.errors import size_text
from sarsleuth.inputs.bundles import layout as bundle_layout
from sarsleuth.inputs.collect.manifest import CUT, KEPT, NOT_KEPT, Budget, Manifest, over_cap
from sarsleuth.inputs.collect.plan import Caps, Window, knowledge, span_seconds

#: First bytes of the compressed formats a rotated log may be in (gzip, xz,
#: bzip2, zstd): such a file cannot keep its last part.
_COMPRESSED = (b"\x1f\x8b", b"\xfd7zXZ\x00", b"BZh", b"\x28\xb5\x2f\xfd")
_CHUNK = 1 << 20
#: A rotated copy's name after its log's: ``messages-20261120``, ``syslog.2.gz``.
_ROTATED_TAIL = re.compile(r"([.-][\w.-]*)?$")


@dataclass
class Host:
    """Where a collection reads (``root``: ``/``, or the ``--root`` given;
    ``/proc`` is always the running system's) and writes (``stage``: the
    bundle's folder)."""

    root: str
    stage: Path
    window: Window
    caps: Caps
    budget: Budget
    manifest: Manifest

    def on_host(self, path: str) -> str:
        if self.root == "/" or path == "/proc" or path.startswith("/proc/"):
            return path
        return os.path.join(self.root, path.lstrip("/"))

    def host_path(self, full: str) -> str:
        """The path as the host names it (``full`` without ``root``)."""
        if self.root == "/" or not full.startswith(self.root.rstrip("/") + "/"):
            return full               # read where it is (/proc)
        return "/" + os.path.relpath(full, self.root)

    def expand(self, pattern: str) -> list:
        """The host paths a path or glob names, sorted."""
        return sorted(self.host_path(p) for p in glob.glob(self.on_host(pattern)))


def bundle_path(host_path: str, is_input: bool) -> str:
    """Where a host file goes in the bundle: its own path, unless the
    bundle layout would not read an input there (then under the collection's
    own folder, which it reads)."""
    rel = host_path.lstrip("/")
    if is_input and bundle_layout.input_of(rel)[0] is None:
        return f"{knowledge()['bundle']['elsewhere']}/{rel}"
    return rel


# ------------------------------------------------------------------ choosing
def _day_start(day: dt.date) -> float:
    return dt.datetime.combine(day, dt.time()).astimezone().timestamp()


def _mtime(host: Host, path: str) -> float | None:
    try:
        return os.stat(host.on_host(path)).st_mtime
    except OSError:
        return None


def by_day(host: Host, entry: dict, taken_days: dict) -> None:
    """One file per day the window covers (sa files): ``taken_days``
    {what: set of days} tells ``unless`` which days another entry gave."""
    skip_days = taken_days.get(entry.get("unless"), set())
    got = taken_days.setdefault(entry["what"], set())
    for day in host.window.days():
        if day in skip_days:
            continue
        names = [t.format(dd=f"{day.day:02d}", yyyymmdd=day.strftime("%Y%m%d")) for t in entry["paths"]]
        found, seen = False, set()
        for name in names:
            mtime = _mtime(host, name)
            if mtime is None:
                continue
            st = os.stat(host.on_host(name))
            if (st.st_dev, st.st_ino) in seen:      # saDD a link to saYYYYMMDD: one file
                continue
            seen.add((st.st_dev, st.st_ino))
            if mtime < _day_start(day):
                host.manifest.notes.append(f"{name}: last written before {day.isoformat()} (a month before): "
                                           "not that day's")
                continue
            if copy(host, name, entry["what"], is_input=True, sa=bool(entry.get("sa"))):
                found = True
        if found:
            got.add(day)
        elif not entry.get("unless"):
            host.manifest.absent.append(f"{entry['what']}: none for {day.isoformat()} "
                                        f"(looked for {', '.join(names)})")


def rotated(host: Host, entry: dict, patterns=None) -> None:
    """A log and its rotated copies, those whose span meets the window
    (widened by the entry's ``lookback``)."""
    back = dt.timedelta(seconds=span_seconds(entry["lookback"], "lookback")) if "lookback" in entry else dt.timedelta()
    start, end = (host.window.start - back).timestamp(), host.window.end.timestamp()
    patterns = patterns if patterns is not None else entry["paths"]
    any_found = False
    for pattern in patterns:
        stem = pattern.rstrip("*")
        copies = [p for p in host.expand(pattern) if _ROTATED_TAIL.fullmatch(p[len(stem):])]
        dated = sorted(((m, p) for p in copies if (m := _mtime(host, p)) is not None), reverse=True)
        any_found |= bool(dated)
        for k, (mtime, path) in enumerate(dated):
            began_after = dated[k + 1][0] if k + 1 < len(dated) else None
            if mtime >= start and (began_after is None or began_after <= end):
                copy(host, path, entry["what"], is_input=True)
    if not any_found:
        host.manifest.absent.append(f"{entry['what']}: none (looked for {', '.join(patterns)})")


def always(host: Host, entry: dict) -> None:
    paths = [p for pattern in entry["paths"] for p in (host.expand(pattern) if "*" in pattern else [pattern])]
    for path in paths[:entry.get("most", len(paths))]:
        copy(host, path, entry["what"], is_input=False)
    if len(paths) > entry.get("most", len(paths)):
        host.manifest.notes.append(f"{entry['what']}: the first {entry['most']} of {len(paths)} files kept")


# ------------------------------------------------------------------ copying
def _open(full: str) -> int:
    """A read-only descriptor that neither blocks (a named pipe) nor
    updates the access time where the kernel allows it."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
    noatime = getattr(os, "O_NOATIME", 0)
    try:
        return os.open(full, flags | noatime)
    except PermissionError:
        if not noatime:
            raise
        return os.open(full, flags)       # O_NOATIME needs the file's owner (or root)


def _why_not(exc: OSError) -> str:
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied (run as root, or as a member of the group that reads it: adm, systemd-journal)"
    return exc.strerror or str(exc)


def copy(host: Host, path: str, what: str, is_input: bool, sa: bool = False) -> bool:
    """Copy one host file into the bundle; False when it was not taken
    (absent files are not items)."""
    full = host.on_host(path)
    rel = bundle_path(path, is_input)
    dest = host.stage / rel
    if host.budget.out_of_time():
        host.manifest.add(what, path, NOT_KEPT, why="the collection's time cap was reached first")
        return False
    try:
        if os.path.islink(full) and _told_by_link(rel):
            return _link(host, path, full, rel, what)
        fd = _open(full)
    except FileNotFoundError:
        return False
    except OSError as exc:
        host.manifest.add(what, path, NOT_KEPT, why=_why_not(exc))
        return False
    with os.fdopen(fd, "rb", buffering=0):        # closes the descriptor whatever happens
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            host.manifest.add(what, path, NOT_KEPT, why="not a regular file")
            return False
        cap = host.caps.sa_file_bytes if sa else host.caps.file_bytes
        limit = min(cap, host.budget.room())
        start, why = 0, ""
        if st.st_size > limit:
            head = os.pread(fd, 8, 0)
            if sa or head.startswith(_COMPRESSED) or limit < cap // 16:
                said = over_cap(st.st_size, cap) if limit == cap else \
                    f"{st.st_size:,} bytes, more than the {size_text(host.budget.room())} left of the collection's cap"
                host.manifest.add(what, path, NOT_KEPT, why=said)
                return False
            start = _line_start(fd, st.st_size - limit)
            why = (f"kept its last {st.st_size - start:,} bytes, from a line start: the first {start:,} are left "
                   f"out ({over_cap(st.st_size, limit)}); line numbers count from there")
        dest.parent.mkdir(parents=True, exist_ok=True)
        size = _copy_range(fd, start, st.st_size if st.st_size else limit, dest)
    os.utime(dest, (st.st_mtime, st.st_mtime))
    host.budget.used += size
    host.manifest.names[rel] = path if full.startswith("/proc/") else full
    host.manifest.add(what, path, CUT if why else KEPT, rel, size, why)
    return True


def _line_start(fd: int, offset: int) -> int:
    """The first line start at or after ``offset``."""
    if offset <= 0:
        return 0
    at = offset - 1
    while True:
        block = os.pread(fd, 65536, at)
        if not block:
            return at
        nl = block.find(b"\n")
        if nl >= 0:
            return at + nl + 1
        at += len(block)


def _copy_range(fd: int, start: int, end: int, dest: Path) -> int:
    """Bytes ``start`` to ``end`` (or EOF, for /proc files whose size is 0)."""
    done = 0
    with open(dest, "wb") as out:
        at = start
        while at < end:
            block = os.pread(fd, min(_CHUNK, end - at), at)
            if not block:
                break
            out.write(block)
            at += len(block)
            done += len(block)
    return done


def _told_by_link(rel: str) -> bool:
    """Is this a file whose fact is where its link points (``etc/localtime``)?"""
    entry, _m = bundle_layout.fact_of(rel)
    return entry is not None and entry["reader"] == "localtime"


def _link(host: Host, path: str, full: str, rel: str, what: str) -> bool:
    """A link kept as a link (``/etc/localtime`` names the zone by its
    target), made relative to the bundle as sos makes it."""
    target = os.readlink(full)
    if target.startswith("/"):
        target = "../" * rel.count("/") + target.lstrip("/")
    dest = host.stage / rel
    dest.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, dest)
    host.manifest.add(what, path, KEPT, rel, 0)
    host.manifest.names[rel] = full
    return True
