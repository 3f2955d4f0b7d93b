"""The project's own error and warning types.

Every parser raises :class:`InputError` (never a bare exception) when a file is
unusable, so the CLI can print one line naming the file and the place and exit
with code 2.  Partly readable files produce :class:`ParseWarning` strings kept
on the source instead.
"""
from __future__ import annotations


class SarsleuthError(Exception):
    """Base class of every error sarsleuth raises on purpose."""


class InputError(SarsleuthError):
    """A file (or part of it) that cannot be used.

    ``line`` is 1-based; ``offset`` is a byte offset.  ``str()`` gives the one
    line the CLI prints.
    """

    def __init__(self, path, reason: str, *, line: int | None = None, offset: int | None = None):
        self.path = str(path) if path is not None else None
        self.reason = reason
        self.line = line
        self.offset = offset
        super().__init__(self.one_line())

    def one_line(self) -> str:
        where = ""
        if self.line is not None:
            where = f":{self.line}"
        elif self.offset is not None:
            where = f" (byte {self.offset})"
        prefix = f"{self.path}{where}: " if self.path else ""
        return f"{prefix}{self.reason}"


class CaseError(InputError):
    """A case saved with ``analyze --save`` that cannot be read: not a case,
    its marker damaged, or one of its parts missing, cut, changed, or
    replaced by a link or a named pipe.  ``path`` names the part.  The one
    exception :func:`sarsleuth.load_case` and a saved case's tables raise."""


class UsageError(SarsleuthError):
    """Bad command-line arguments or options."""


def located(path, reason: str, *, line: int | None = None, offset: int | None = None) -> str:
    """Format a warning the same way InputError formats errors."""
    return InputError(path, reason, line=line, offset=offset).one_line()


def size_text(n: int) -> str:
    """A limit as people write it: ``8 GiB``, ``1 MiB``, else bytes."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} bytes"
