"""Where outputs go: files written whole or not at all, and standard output
whose failures are one line.

A report is written to a temporary file beside its target and renamed over
it only once complete, so a full disk or a crash never leaves half a report
in place of the previous one.  The rename replaces a directory entry: a
symlink planted where sarsleuth writes a file of its own naming (a plot in
``--plots DIR``) is replaced, never followed; a symlink the user named
(``--html link.html``) is followed, as a shell redirection would.  No output
may overwrite an input (same path, symlink or hard link).
"""
from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import tempfile
from pathlib import Path

from sarsleuth.errors import UsageError
from sarsleuth.safe_text import one_line


class StdoutClosed(Exception):
    """The reader of standard output went away (``| head``): stop quietly."""


class OutputFailed(UsageError):
    """Standard output could not be written (a full disk behind ``> file``)."""


def cannot_write(path, exc: OSError) -> UsageError:
    """The one-line error for an output that could not be written."""
    reason = exc.strerror or str(exc)
    if isinstance(exc, IsADirectoryError) or exc.errno == errno.EISDIR:
        reason = "is a directory"
    return UsageError(f"{one_line(path)}: cannot write: {reason}")


def refuse_inputs(out, inputs) -> None:
    """Raise if ``out`` is one of the inputs (the same path, a symlink or a
    hard link to it) or a file inside an input directory."""
    # here, not at the top: --help and sniff load this module
    from sarsleuth.inputs.folders import files_under
    out = Path(out)
    if not out.exists():
        return
    for given in inputs:
        given = Path(given)
        try:
            candidates = files_under([given]) if given.is_dir() else [given]
            for f in candidates:
                if Path(f).exists() and os.path.samefile(out, f):
                    raise UsageError(f"{one_line(out)}: refusing to overwrite an input file ({one_line(f)})")
        except OSError:
            continue


def _mode_for(target: Path) -> int:
    """The permissions a plain ``open(path, "w")`` would give: the old
    file's if it exists, else 0666 less the umask (mkstemp's temporary file
    is 0600)."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


@contextlib.contextmanager
def atomic_output(path, inputs=(), *, binary: bool = False, follow: bool = True, mode: int | None = None):
    """Open ``path`` for writing through a temporary file in its directory,
    renamed over it when the block ends without error (removed otherwise).

    ``follow``: the user named this path, so a symlink there is followed to
    its target; with ``follow=False`` (names sarsleuth chose) a symlink is
    replaced by the new file.  OS errors become one-line usage errors naming
    ``path``; ``mode``: these permissions whatever the old file's (0600
    for a private file).
    """
    shown_path = path
    target = Path(path)
    try:
        if follow and target.is_symlink():
            target = Path(os.path.realpath(target))
        refuse_inputs(path, inputs)
        if target.is_dir():
            raise UsageError(f"{one_line(shown_path)}: cannot write: is a directory")
    except OSError as exc:          # a folder on the way this user may not enter
        raise cannot_write(shown_path, exc) from None
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent if str(target.parent) else ".",
                                   prefix=f".{target.name}.", suffix=".part")
    except OSError as exc:
        raise cannot_write(shown_path, exc) from None
    done = False
    try:
        os.fchmod(fd, _mode_for(target) if mode is None else mode)
        if binary:
            fh = os.fdopen(fd, "wb")
        else:
            fh = os.fdopen(fd, "w", encoding="utf-8", newline="")
        with fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
        done = True
    except OSError as exc:
        raise cannot_write(shown_path, exc) from None
    finally:
        if not done:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def write_text_file(path, text: str, inputs=(), *, follow: bool = True) -> None:
    with atomic_output(path, inputs, follow=follow) as fh:
        fh.write(text)


class Guarded:
    """A stream (standard output) whose write errors are told apart from
    every other OS error: a closed pipe raises :class:`StdoutClosed`, any
    other failure (a full disk behind ``> file``, ``/dev/full``) a one-line
    usage error, and text the stream's encoding cannot hold is written with
    backslash escapes instead of failing."""

    def __init__(self, stream, name: str = "standard output"):
        self._stream = stream
        self._name = name

    def _guard(self, fn, *args):
        try:
            return fn(*args)
        except BrokenPipeError:
            raise StdoutClosed() from None
        except OSError as exc:
            if exc.errno == errno.EPIPE:
                raise StdoutClosed() from None
            raise OutputFailed(f"{self._name}: cannot write: {exc.strerror or exc}") from None

    def write(self, data):
        try:
            return self._guard(self._stream.write, data)
        except UnicodeEncodeError:
            encoding = getattr(self._stream, "encoding", None) or "utf-8"
            return self._guard(self._stream.write, data.encode(encoding, "backslashreplace").decode(encoding))

    def flush(self):
        return self._guard(self._stream.flush)

    @property
    def buffer(self):
        """The byte stream under a text stream (text written so far goes
        first), guarded the same way."""
        self.flush()
        return Guarded(getattr(self._stream, "buffer", self._stream), self._name)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def stdout() -> Guarded:
    return Guarded(sys.stdout)


def silence_stdout() -> None:
    """After a failed write to the real standard output, point it at
    /dev/null so the interpreter's final flush of what is still buffered
    neither fails again nor prints "Exception ignored"."""
    if sys.stdout is not sys.__stdout__ or sys.stdout is None:
        return
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def refuse_collisions(outputs: dict, replaced_whole=("--save",)) -> None:
    """Before anything is written: two outputs of one run (``{option:
    path}``) may not be one file, and nothing may be written inside a
    folder that one of them replaces whole (a saved case)."""
    named = [(option, Path(os.path.realpath(p))) for option, p in outputs.items() if p is not None]
    for i, (a, path_a) in enumerate(named):
        for b, path_b in named[i + 1:]:
            inside = ((a in replaced_whole and path_a in path_b.parents)
                      or (b in replaced_whole and path_b in path_a.parents))
            if path_a == path_b or inside:
                raise UsageError(f"{a} {one_line(outputs[a])} and {b} {one_line(outputs[b])}: one output would "
                                 "overwrite the other; give each its own place")


def check_destination(out: Path, inputs, directory: bool = False) -> None:
    """Before minutes of reading: an output that cannot be written, or would
    overwrite an input, is refused now (the write itself checks again)."""
    try:
        refuse_inputs(out, inputs)
        parent = out if directory and out.is_dir() else Path(os.path.realpath(out)).parent
        while directory and not parent.exists() and parent != parent.parent:
            parent = parent.parent        # --plots creates the missing directories
        if not parent.is_dir():
            raise UsageError(f"{out}: cannot write: no such directory {parent}")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise UsageError(f"{out}: cannot write: permission denied")
        if not directory and out.is_dir():
            raise UsageError(f"{out}: cannot write: is a directory")
    except OSError as exc:          # a folder on the way this user may not enter
        raise cannot_write(out, exc) from None
