"""Inputs that can be read only once: standard input (``-``) and pipes
(``<(zcat messages.gz)``, ``/dev/stdin``).

Sniffing reads a file's head and parsing reads it again; a pipe gives its
bytes once.  Such an input is copied, as it arrives, into a private
temporary file (never beside an input), read from there, and its events and
evidence name the input as the user gave it.  The copy is bounded: a stream
larger than :data:`MAX_STREAM_BYTES` is cut there, with a warning.
"""
from __future__ import annotations

import os
import shutil
import stat
import sys
import tempfile
from dataclasses import dataclass, field

from sarsleuth.errors import SarsleuthError

MAX_STREAM_BYTES = 8 << 30
_CHUNK = 1 << 20


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
    pipe, a character device; a socket too, which then cannot be opened and
    is skipped)."""
    if str(path) == "-":
        return True
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def spool(paths, spooled: Spooled) -> list:
    """``paths`` with every stream replaced by a copy of what it gave."""
    out = []
    for p in paths:
        if not is_stream(p):
            out.append(p)
            continue
        name = "<stdin>" if str(p) == "-" else str(p)
        try:
            src = sys.stdin.buffer if str(p) == "-" else open(p, "rb")
        except OSError as exc:      # a socket, a device that refuses: one warning, the rest is read
            spooled.unreadable.append((name, f"cannot be read: {exc.strerror or exc}"))
            continue
        try:
            if spooled._dir is None:
                spooled._dir = tempfile.mkdtemp(prefix="sarsleuth-stdin-")
            copy = os.path.join(spooled._dir, f"stream-{len(spooled.names)}")
            _copy_stream(src, copy, name, spooled.warnings)
        except OSError as exc:      # the temporary directory is full or unwritable: the stream is gone
            where = spooled._dir or tempfile.gettempdir()
            raise SarsleuthError(f"{name}: cannot copy the stream into {where} (set TMPDIR elsewhere): "
                                 f"{exc.strerror or exc}") from None
        finally:
            if src is not sys.stdin.buffer:
                src.close()
        spooled.names[copy] = name
        out.append(copy)
    return out


def _copy_stream(src, copy: str, name: str, warnings: list) -> None:
    written = 0
    with open(copy, "wb") as dst:
        while written < MAX_STREAM_BYTES:
            chunk = src.read(min(_CHUNK, MAX_STREAM_BYTES - written))
            if not chunk:
                break
            dst.write(chunk)
            written += len(chunk)
        else:
            warnings.append(f"{name}: stream cut after {MAX_STREAM_BYTES >> 30} GiB")


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
