"""Hyperscan databases kept between runs.

Compiling every signature pattern into one Hyperscan database takes a
fifth of a second, each time a process first scans a log: more than the
scan of a 100 MB log.  The database compiled for a pattern set is written
to the user's cache directory (:mod:`sarsleuth.user_cache`) under a digest
of everything it was compiled from (the patterns, their flags,
Hyperscan's version, the machine), and read back by later runs.
Hyperscan checks what it reads (its own header and checksum): a damaged
or foreign file is compiled again, never used.  Nothing is ever required of the cache: a directory
that cannot be written is simply not used.
"""
from __future__ import annotations

import hashlib
import platform
from pathlib import Path

from sarsleuth.user_cache import cache_dir, write_atomically

#: Databases kept at most (a case with its own signatures compiles another
#: set); the least recently written go first.
MAX_KEPT = 12


def _path(expressions: list, flags: list, version: str) -> Path | None:
    folder = cache_dir()
    if folder is None:
        return None
    digest = hashlib.sha256()
    for part in (version, platform.machine(), platform.python_implementation()):
        digest.update(part.encode() + b"\0")
    for expr, flag in zip(expressions, flags):
        digest.update(expr + b"\0" + str(flag).encode() + b"\0")
    return folder / f"hyperscan-{digest.hexdigest()[:32]}.db"


def load(hyperscan, expressions: list, flags: list):
    """The database compiled before from these patterns, or None."""
    path = _path(expressions, flags, hyperscan.__version__ if hasattr(hyperscan, "__version__") else "")
    if path is None:
        return None
    try:
        data = path.read_bytes()
        return hyperscan.loadb(data, hyperscan.HS_MODE_BLOCK)
    except (OSError, hyperscan.error, TypeError, ValueError):
        return None


def store(hyperscan, expressions: list, flags: list, db) -> None:
    """Keep a compiled database for the runs after this one (best effort)."""
    path = _path(expressions, flags, hyperscan.__version__ if hasattr(hyperscan, "__version__") else "")
    if path is None:
        return
    try:
        data = hyperscan.dumpb(db)
    except (hyperscan.error, TypeError, ValueError):
        return
    if write_atomically(path, data, ".hyperscan-"):
        try:
            kept = sorted(path.parent.glob("hyperscan-*.db"), key=lambda p: p.stat().st_mtime, reverse=True)
            for old in kept[MAX_KEPT:]:
                old.unlink(missing_ok=True)
        except OSError:
            return
