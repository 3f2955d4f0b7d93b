"""What the user names, before a byte of it is read: standard input
(``-``) and pipes are copied once, devices are refused, every file has a
size cap and nothing is opened in a way that can block.

Sniffing reads a file's head and parsing reads it again; a pipe gives its
bytes once.  Such an input is copied, as it arrives, into a private
temporary file (never beside an input), read from there, and its events and
evidence name the input as the user gave it.  The copy is bounded: a stream
larger than :data:`MAX_STREAM_BYTES` is cut there, with a warning; and its
first :data:`HEAD_BYTES` are judged before the rest is copied, so a stream
of nothing readable (``- < /dev/zero``) is refused at once, not after
gigabytes.

A named pipe is opened without blocking: with no writer, ``open`` would
wait forever; one that gives nothing (neither a byte nor its end) within
:data:`WRITER_WAIT_SECONDS` is refused.  A device (``/dev/zero``,
``/dev/urandom``, a disk, a terminal) never ends and is refused, and so is a
regular file larger than any real input (:data:`MAX_FILE_BYTES`).
"""
from __future__ import annotations

import errno
import os
import select
import shutil
import stat
import sys
import tempfile
from dataclasses import dataclass, field

from sarsleuth.errors import SarsleuthError, size_text

MAX_STREAM_BYTES = 8 << 30
#: A regular file larger than this is not read: no log, sa file or command
#: output comes near it (a sparse file of a terabyte would be read for hours).
MAX_FILE_BYTES = 64 << 30
#: How long a named pipe may give nothing (no writer yet) before it is refused.
WRITER_WAIT_SECONDS = 10.0
_CHUNK = 1 << 20
#: What of a stream is judged before the rest of it is copied (what the
#: sniffers read of any file).
HEAD_BYTES = 64 * 1024


class Unreadable(SarsleuthError):
    """A path the user named that is not read, and why (one line)."""

    def __init__(self, name: str, reason: str):
        self.name, self.reason = name, reason
        super().__init__(f"{name}: {reason}")


def refusal(path, cap: int | None = None, what: str = "input") -> str | None:
    """Why ``path`` is not read as it stands (a device, a socket, a regular
    file over ``cap`` bytes, by default :data:`MAX_FILE_BYTES`), or None
    (a regular file within the cap, a folder, a pipe, a missing path).
    ``what`` names what the file was given as, for the reason."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    mode = st.st_mode
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device, not a file (a device such as /dev/zero never ends; give a file or a pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket, not a file"
    cap = MAX_FILE_BYTES if cap is None else cap
    if stat.S_ISREG(mode) and st.st_size > cap:
        return f"{st.st_size} bytes, larger than the {size_text(cap)} {_article(what)} {what} may hold; not read"
    return None


def missing(path) -> str | None:
    """Why ``path`` names nothing to read (None when it does): no such
    file, or a link to nothing; ``-`` (standard input) is never missing."""
    if str(path) == "-":
        return None
    try:
        os.stat(path)
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a loop of symbolic links, not a file"
    except ValueError:          # a NUL in the name
        pass
    try:
        return f"a symbolic link to {os.readlink(path)}, which does not exist"
    except (OSError, ValueError):
        return "no such file or directory"


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def open_pipe(path, name: str):
    """A pipe opened without blocking on a missing writer, then read as an
    ordinary (blocking) file.  A named pipe that gives nothing within
    :data:`WRITER_WAIT_SECONDS` raises :class:`Unreadable`; an anonymous
    one (``<(zcat ...)``, ``/dev/fd/N``) always has its writer."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise Unreadable(name, f"cannot be read: {exc.strerror or exc}") from None
    try:
        if not _anonymous(fd):
            poller = select.poll()
            poller.register(fd, select.POLLIN | select.POLLHUP)
            if not poller.poll(int(WRITER_WAIT_SECONDS * 1000)):
                raise Unreadable(name, f"a named pipe with no writer (nothing came in {WRITER_WAIT_SECONDS:g} s)")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _anonymous(fd: int) -> bool:
    """Is ``fd`` a pipe the shell made (``pipe:[N]``), not a named FIFO?"""
    try:
        return os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:")
    except OSError:
        return False


def read_named(path, cap: int, what: str) -> bytes:
    """The bytes of a small file the user names (``--config``): refused,
    as :class:`Unreadable`, when it is a device, a folder, a pipe with no
    writer or over ``cap`` bytes (a ``/proc`` file saying 0 bytes is read
    up to the cap too)."""
    name = str(path)
    if os.path.isdir(path):
        raise Unreadable(name, f"is a directory, not a {what}")
    reason = refusal(path, cap, what)
    if reason:
        raise Unreadable(name, reason)
    try:
        fh = open_pipe(path, name) if is_stream(path) else open(path, "rb")
    except FileNotFoundError:
        raise Unreadable(name, f"{what} not found") from None
    except OSError as exc:
        raise Unreadable(name, f"unreadable {what} ({exc.strerror or exc})") from None
    with fh:
        data = fh.read(cap + 1)
    if len(data) > cap:
        raise Unreadable(name, f"larger than the {size_text(cap)} {_article(what)} {what} may hold; not read")
    return data


@dataclass
class Spooled:
    """Where each once-only input was copied, and how to forget the copies."""

    names: dict = field(default_factory=dict)     # copy path -> name as given
    warnings: list = field(default_factory=list)
    unreadable: list = field(default_factory=list)   # (name as given, why): skipped, the rest is read
    _dir: str | None = None

    def cleanup(self) -> None:
        if self._dir:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None


def is_stream(path) -> bool:
    """``-``, or a path that is neither a regular file nor a directory (a
    pipe; devices and sockets too, which :func:`refusal` turns away)."""
    if str(path) == "-":
        return True
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def spool(paths, spooled: Spooled, judge=None) -> list:
    """``paths`` with every stream replaced by a copy of what it gave;
    devices, sockets, pipes with no writer and files over the size cap are
    left out, each in ``spooled.unreadable`` with why (the rest is read).
    ``judge(path)``: why the copy of a stream's head is no input (None when
    it is one): such a stream is left out before the rest is copied."""
    out = []
    for p in paths:
        name = "<stdin>" if str(p) == "-" else str(p)
        reason = None if str(p) == "-" else refusal(p)
        if reason:
            spooled.unreadable.append((name, reason))
            continue
        if not is_stream(p):
            out.append(p)
            continue
        try:
            src = _stdin(name) if str(p) == "-" else open_pipe(p, name)
        except Unreadable as exc:
            spooled.unreadable.append((name, exc.reason))
            continue
        try:
            if spooled._dir is None:
                spooled._dir = tempfile.mkdtemp(prefix="sarsleuth-stdin-")
            copy = os.path.join(spooled._dir, f"stream-{len(spooled.names)}")
            why = _copy_stream(src, copy, name, spooled.warnings, judge)
        except OSError as exc:      # the temporary directory is full or unwritable: the stream is gone
            where = spooled._dir or tempfile.gettempdir()
            raise SarsleuthError(f"{name}: cannot copy the stream into {where} (set TMPDIR elsewhere): "
                                 f"{exc.strerror or exc}") from None
        finally:
            if src is not sys.stdin.buffer:
                src.close()
        if why:
            os.unlink(copy)
            spooled.unreadable.append((name, why))
            continue
        spooled.names[copy] = name
        out.append(copy)
    return out


def _stdin(name: str):
    if sys.stdin is None or sys.stdin.isatty():
        # what is typed would be read until Ctrl-D: nobody means that
        raise Unreadable(name, "standard input is a terminal: pipe a file into it (... | sarsleuth analyze -)")
    return sys.stdin.buffer


def _copy_stream(src, copy: str, name: str, warnings: list, judge=None) -> str | None:
    """Copy ``src`` into ``copy``; None, or why its head is no input (the
    rest then not copied)."""
    written = 0
    with open(copy, "wb") as dst:
        if judge is not None:
            head = _head(src)
            dst.write(head)
            dst.flush()
            written = len(head)
            why = judge(copy) if len(head) == HEAD_BYTES else None   # a shorter stream is judged whole, as any file
            if why:
                return f"refused after its first {size_text(written)}: {why}"
        while written < MAX_STREAM_BYTES:
            chunk = src.read(min(_CHUNK, MAX_STREAM_BYTES - written))
            if not chunk:
                break
            dst.write(chunk)
            written += len(chunk)
        else:
            warnings.append(f"{name}: stream cut after {MAX_STREAM_BYTES >> 30} GiB")
    return None


def _head(src) -> bytes:
    """The first :data:`HEAD_BYTES` of a stream (a pipe gives them in pieces)."""
    parts, got = [], 0
    while got < HEAD_BYTES:
        chunk = src.read(HEAD_BYTES - got)
        if not chunk:
            break
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def relabel(source, copy_path: str, name: str) -> None:
    """Name a source read from a stream's copy as the user gave it."""
    source.path = name
    ev = source.events
    if ev is not None and len(ev) and "file" in ev:
        ev["file"] = ev["file"].astype(object).where(ev["file"].astype(object) != copy_path, name)
    for rep in source.reports:
        if rep.get("path") == copy_path:
            rep["path"] = name
    source.warnings[:] = [w.replace(copy_path, name) for w in source.warnings]
