"""Standard output and error as the process found them.

A shell can start us with either closed (``>&-``, ``2>&-``): Python then
has no ``sys.stdout`` / ``sys.stderr`` (None), or, when its start-up
opened a file in the free slot (a launcher script), one that is not open
for writing.  :func:`settle_standard_streams` makes both usable before any
work: a closed standard error writes nowhere (the report is still
written); a closed standard output fails its first write with one line
(exit 2), after the files asked for are written.  The free descriptors
are held by /dev/null, so no file opened later lands where a library
would print.
"""
from __future__ import annotations

import errno
import fcntl
import os
import sys


class ClosedOutput:
    """Standard output that was closed when the process started."""

    encoding = "utf-8"

    def write(self, _data):
        raise OSError(errno.EBADF, "it was closed when sarsleuth started (>&-)")

    def flush(self):
        return None

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError(errno.EBADF, "it was closed when sarsleuth started (>&-)")

    @property
    def buffer(self):
        return self


def _writable(fd: int) -> bool:
    try:
        return fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE in (os.O_WRONLY, os.O_RDWR)
    except OSError:
        return False


def _hold(fd: int) -> None:
    """/dev/null in descriptor ``fd`` when nothing holds it."""
    try:
        fcntl.fcntl(fd, fcntl.F_GETFD)
        return                      # something holds it (a launcher's file): left alone
    except OSError:
        pass
    devnull = os.open(os.devnull, os.O_RDWR)
    if devnull != fd:
        os.dup2(devnull, fd)
        os.close(devnull)


def settle_standard_streams() -> set:
    """Which of ``stdout``, ``stderr`` were closed at start; each made usable."""
    closed = set()
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        stream = getattr(sys, name)
        usable = stream is not None and (fd == 0 or _writable(fd))
        if usable:
            continue
        _hold(fd)
        if name == "stdin":
            continue
        closed.add(name)
        setattr(sys, name, ClosedOutput() if name == "stdout" else open(os.devnull, "w", encoding="utf-8"))
    return closed
