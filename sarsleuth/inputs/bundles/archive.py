"""Archive members, streamed: ``.tar`` (plain, gzip, xz, bzip2, zstd) and
``.zip``, nested archives followed, hazards refused.

Nothing is extracted: a tar is read front to back once (``tarfile``'s
stream mode), each member handed out as a file object over that stream.
A member that could do harm if it were extracted (a name climbing out of
the tree, a link pointing out of it, a device file, a size no log reaches)
is refused with a warning naming the archive and the member; the rest of
the archive is still read.
"""
from __future__ import annotations

import datetime as dt
import io
import os
import posixpath
import shutil
import stat
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from typing import IO, Callable, Iterator

from sarsleuth.inputs.bundles.layout import layout
from sarsleuth.errors import size_text
from sarsleuth.inputs.reading import DECOMPRESSION_ERRORS

#: Separator between an archive and a member in the names sarsleuth prints.
MEMBER_SEP = "!"


@dataclass
class Member:
    """One regular file of an archive (or a link kept for its target)."""

    archive: str                  # the archive as printed (nested ones joined with MEMBER_SEP)
    name: str                     # the member's path inside it, normalised
    size: int
    mtime: float
    open: Callable[[], IO[bytes]]  # the member's bytes; valid until the next member
    link: str | None = None       # a symbolic link's target (links are never followed)

    @property
    def label(self) -> str:
        return f"{self.archive}{MEMBER_SEP}{self.name}"


def archive_kind(head: bytes) -> str | None:
    """``tar`` or ``zip`` from the first (decompressed) bytes, else None."""
    if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return "zip"
    if len(head) >= 263 and head[257:262] == b"ustar":
        return "tar"
    return None


def is_archive_name(name: str) -> bool:
    """Does a member's name say it is an archive to follow (sos collect
    keeps one sosreport archive per node)?"""
    low = name.lower()
    return any(low.endswith(s) for s in layout()["archives"]["nested_suffixes"])


class Refusals:
    """Where members that are not read go: ``(member label, why)`` in
    ``refused`` when the caller keeps them as inputs not read, else a
    warning naming the archive and the member.  Also counts the members
    met in one input, nested archives included, against ``max_members``."""

    def __init__(self, warnings: list, refused: list | None = None):
        self.warnings, self.refused = warnings, refused
        self.met = 0
        self.cap = int(layout()["archives"]["max_members"])

    def refuse(self, label: str, name: str, reason: str) -> None:
        if self.refused is not None:
            self.refused.append((f"{label}{MEMBER_SEP}{name}", f"refused: {reason}"))
        else:
            self.warnings.append(f"{label}: member {name!r} refused: {reason}")

    def refuse_archive(self, label: str, reason: str) -> None:
        if self.refused is not None:
            self.refused.append((label, f"refused: {reason}"))
        else:
            self.warnings.append(f"{label}: refused: {reason}")

    def one_more(self, label: str) -> bool:
        """Count a member; False (and the rest of ``label`` refused, once)
        past the cap."""
        self.met += 1
        if self.met <= self.cap:
            return True
        if self.met == self.cap + 1:
            self.refuse_archive(label, f"more than {self.cap:,} members in one input (max_members); the members "
                                       "from there on are not read")
        return False


def members(path, label: str, warnings: list, workdir: str | None = None,
            follow: Callable[[str], bool] | None = None, refused: list | None = None) -> Iterator[Member]:
    """Every member of the archive at ``path`` (nested archives followed),
    refusing hazards and members past a limit (nesting depth, size) with a
    warning naming ``label`` and the member, or as ``(member label, why)``
    in ``refused`` when given.  ``follow``, given a nested archive's label,
    says whether to read it (one node of a ``sos collect`` archive, without
    decompressing the others); a nested archive not followed is handed out
    as a member."""
    said = Refusals(warnings, refused)
    with open(path, "rb") as fh:
        kind = _kind_of_stream(fh)
        fh.seek(0)
        if kind == "zip":
            yield from _zip_members(fh, label, said, workdir, depth=0, follow=follow)
        else:
            yield from _tar_members(fh, label, said, workdir, depth=0, follow=follow)


def _kind_of_stream(fh) -> str:
    head = fh.read(4)
    return "zip" if head in (b"PK\x03\x04", b"PK\x05\x06") else "tar"


def _decompressed(raw: IO[bytes]) -> IO[bytes]:
    """zstd is not known to ``tarfile``: decompress it here as a stream."""
    buffered = raw if hasattr(raw, "peek") else io.BufferedReader(raw)
    if buffered.peek(4)[:4] == b"\x28\xb5\x2f\xfd":
        import zstandard
        return io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(buffered))
    return buffered


def _tar_members(raw, label, said: Refusals, workdir, depth, follow=None) -> Iterator[Member]:
    warnings = said.warnings
    try:
        tf = tarfile.open(fileobj=_decompressed(raw), mode="r|*")
    except (tarfile.TarError, OSError, EOFError) as exc:
        warnings.append(f"{label}: not a readable archive ({exc})")
        return
    try:
        for info in _tar_infos(tf, label, warnings):
            if not said.one_more(label):
                return
            name = _normal(info.name)
            reason = _tar_hazard(info, name)
            if reason and reason.startswith(_ABSURD):
                # its data would have to be read through to reach the next header
                said.refuse(label, info.name, f"{reason}; the archive is not read past it")
                return
            if reason:
                said.refuse(label, info.name, reason)
                continue
            if info.issym():
                yield Member(label, name, 0, info.mtime, lambda: io.BytesIO(b""), link=info.linkname)
                continue
            if not info.isfile():
                continue
            opener = _once(lambda info=info: tf.extractfile(info))
            member = Member(label, name, info.size, info.mtime, opener)
            if _too_deep(depth, name, member.label, follow):
                said.refuse(label, info.name, _too_deep_reason())
            elif _follows(depth, name, member.label, follow):
                yield from _nested(member, said, workdir, depth + 1, follow)
            else:
                yield member
    except (tarfile.TarError, OSError, EOFError) as exc:
        warnings.append(f"{label}: archive cut short or damaged ({exc}); members before it were read")
    finally:
        tf.close()


def _tar_infos(tf, label, warnings):
    while True:
        try:
            info = tf.next()
        except tarfile.ReadError as exc:
            warnings.append(f"{label}: damaged member header ({exc}); members before it were read")
            return
        if info is None:
            return
        # stream mode never goes back: the list tarfile keeps of every
        # member read would only grow (600 bytes a member)
        tf.members.clear()
        yield info


def _once(make):
    # tarfile's stream mode hands out a member's file object once, in order
    cache: list = []

    def opener():
        if not cache:
            cache.append(make())
        return cache[0]
    return opener


def _follows(depth: int, name: str, label: str, follow) -> bool:
    return (depth < layout()["archives"]["max_depth"] and is_archive_name(name)
            and (follow is None or follow(label)))


def _too_deep(depth: int, name: str, label: str, follow) -> bool:
    """A nested archive that would be followed but for the depth limit."""
    return (depth >= layout()["archives"]["max_depth"] and is_archive_name(name)
            and (follow is None or follow(label)))


def _too_deep_reason() -> str:
    limit = layout()["archives"]["max_depth"]
    return f"an archive nested deeper than the {limit} levels of archives inside an archive that are read; not read"


def _nested(member: Member, said: Refusals, workdir, depth, follow=None) -> Iterator[Member]:
    label = member.label
    if member.name.lower().endswith(".zip"):
        # zip's directory sits at its end: copy it (privately) to seek in it
        limit = int(layout()["archives"]["max_spool_bytes"])
        if member.size > limit:
            said.refuse(member.archive, member.name, f"a zip archive of {member.size} bytes inside an archive, "
                                                     f"larger than the {size_text(limit)} copied to be read; not read")
            return
        with _spooled(member, workdir) as copy:
            yield from _zip_members(copy, label, said, workdir, depth, follow)
        return
    yield from _tar_members(member.open(), label, said, workdir, depth, follow)


class _spooled:
    def __init__(self, member, workdir):
        self.member, self.workdir = member, workdir

    def __enter__(self):
        self.fh = tempfile.TemporaryFile(dir=self.workdir)
        shutil.copyfileobj(self.member.open(), self.fh, 1 << 20)
        self.fh.seek(0)
        return self.fh

    def __exit__(self, *exc):
        self.fh.close()


def _zip_members(fh, label, said: Refusals, workdir, depth, follow=None) -> Iterator[Member]:
    entries = zip_entries(fh)
    if entries is not None and said.met + entries > said.cap:
        # zipfile reads the whole directory into memory (600 bytes an entry) before the first member
        said.refuse_archive(label, f"a zip of {entries:,} members, more than the {said.cap:,} read from one input "
                                   "(max_members); not read")
        return
    try:
        zf = zipfile.ZipFile(fh)
    except (zipfile.BadZipFile, OSError) as exc:
        said.warnings.append(f"{label}: not a readable zip archive ({exc})")
        return
    with zf:
        for info in zf.infolist():
            if not said.one_more(label):
                return
            name = _normal(info.filename)
            reason = _zip_hazard(info, name)
            if reason:
                said.refuse(label, info.filename, reason)
                continue
            if info.is_dir():
                continue
            mtime = _zip_mtime(info)
            member = Member(label, name, info.file_size, mtime, lambda info=info: zf.open(info))
            if _zip_is_link(info):
                target = zf.read(info).decode("utf-8", "replace")
                if _escapes(name, target):
                    said.refuse(label, info.filename, f"link pointing out of the archive ({target})")
                    continue
                yield Member(label, name, 0, mtime, lambda: io.BytesIO(b""), link=target)
            elif _too_deep(depth, name, member.label, follow):
                said.refuse(label, info.filename, _too_deep_reason())
            elif _follows(depth, name, member.label, follow):
                yield from _nested(member, said, workdir, depth + 1, follow)
            else:
                yield member


#: A zip's end of central directory record, and zip64's record and locator.
_EOCD, _EOCD64, _EOCD64_LOCATOR = b"PK\x05\x06", b"PK\x06\x06", b"PK\x06\x07"


def zip_entries(fh) -> int | None:
    """The members a zip's directory lists, read from its end records
    (APPNOTE 4.3.16 and, for zip64, 4.3.14-15) without reading the
    directory; None when they cannot be found (zipfile then says why)."""
    try:
        size = fh.seek(0, os.SEEK_END)
        tail_at = max(0, size - (22 + 0xFFFF))
        fh.seek(tail_at)
        tail = fh.read()
    except OSError:
        return None
    at = tail.rfind(_EOCD)
    if at == -1 or len(tail) < at + 22:
        return None
    total = int.from_bytes(tail[at + 10:at + 12], "little")
    locator = at - 20
    if total == 0xFFFF and locator >= 0 and tail[locator:locator + 4] == _EOCD64_LOCATOR:
        record_at = int.from_bytes(tail[locator + 8:locator + 16], "little")
        try:
            fh.seek(record_at)
            record = fh.read(56)
        except (OSError, ValueError, OverflowError):
            return None
        if record[:4] == _EOCD64 and len(record) == 56:
            total = int.from_bytes(record[32:40], "little")
    return total


def _zip_mtime(info) -> float:
    try:
        return dt.datetime(*info.date_time).timestamp()
    except (ValueError, OverflowError):
        return 0.0


def _zip_is_link(info) -> bool:
    return stat.S_ISLNK(info.external_attr >> 16)


def _normal(name: str) -> str:
    out = posixpath.normpath(name.replace("\\", "/")).lstrip("/")
    return "" if out == "." else out


def _climbs(raw: str) -> bool:
    """Would extracting a member of this name write outside the tree?"""
    raw = raw.replace("\\", "/")
    if raw.startswith("/") or (len(raw) > 1 and raw[1] == ":"):
        return True
    return posixpath.normpath(raw).split("/")[0] == ".."


def _escapes(name: str, target: str, hard: bool = False) -> bool:
    """Does a link at ``name`` pointing to ``target`` leave the tree?"""
    if target.startswith("/"):
        return True
    base = "" if hard else posixpath.dirname(name)
    return posixpath.normpath(posixpath.join(base, target)).split("/")[0] == ".."


def _max_size() -> int:
    return int(layout()["archives"]["max_member_bytes"])


_ABSURD = "claims an absurd size"


def _absurd(size: int) -> str:
    return f"{_ABSURD} ({size} bytes, more than the {size_text(_max_size())} no real member reaches)"


def _tar_hazard(info, name: str) -> str | None:
    if _climbs(info.name):
        return "path traversal (the name leads out of the archive's tree)"
    if info.issym() and _escapes(name, info.linkname):
        return f"link pointing out of the archive ({info.linkname})"
    if info.islnk() and _climbs(info.linkname):
        return f"hard link pointing out of the archive ({info.linkname})"
    if info.ischr() or info.isblk():
        return "device file"
    if info.isfifo():
        return "named pipe"
    if info.size > _max_size() or info.size < 0:
        return _absurd(info.size)
    return None


def _zip_hazard(info, name: str) -> str | None:
    if _climbs(info.filename):
        return "path traversal (the name leads out of the archive's tree)"
    mode = info.external_attr >> 16
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device file"
    if stat.S_ISFIFO(mode):
        return "named pipe"
    if info.file_size > _max_size():
        return _absurd(info.file_size)
    return None


def spool_member(member: Member, dest: str, limit: int) -> str | None:
    """Copy a member's bytes to ``dest`` (a private temporary file), keeping
    its modification time (a syslog's year is guessed from it).  Returns
    None when whole, else why not: the member held more than ``limit`` bytes
    (the copy is then removed), or the archive broke inside it (what was
    read is kept)."""
    if member.size > limit:         # its header says so: nothing is copied (it was, up to the limit)
        return (f"{member.size} bytes, more than {size_text(limit)}, the most a member is copied to be read "
                "(max_spool_bytes); not read")
    copied, error = 0, None
    with open(dest, "wb") as out:
        try:
            src = member.open()
            while True:
                chunk = src.read(1 << 20)
                if not chunk:
                    break
                copied += len(chunk)
                if copied > limit:
                    break
                out.write(chunk)
        except (tarfile.TarError, zipfile.BadZipFile, *DECOMPRESSION_ERRORS) as exc:
            error = f"the archive breaks inside it ({exc}); the {copied} bytes before are read"
    if copied > limit:
        os.unlink(dest)
        return (f"more than {size_text(limit)} once decompressed, the most a member is copied to be read "
                "(max_spool_bytes); not read")
    os.utime(dest, (member.mtime, member.mtime))
    return error


def read_member(member: Member, limit: int) -> tuple[bytes | None, str | None]:
    """A small member's bytes (None past ``limit``), and why it is cut short."""
    try:
        raw = member.open().read(limit + 1)
    except (tarfile.TarError, zipfile.BadZipFile, *DECOMPRESSION_ERRORS) as exc:
        return None, f"the archive breaks inside it ({exc})"
    return (raw if len(raw) <= limit else None), None
