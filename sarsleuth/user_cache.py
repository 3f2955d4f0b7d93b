"""The user's cache directory: what a run may keep for the runs after it.

``$SARSLEUTH_CACHE_DIR``, else ``$XDG_CACHE_HOME/sarsleuth``, else
``~/.cache/sarsleuth``; an empty ``SARSLEUTH_CACHE_DIR`` keeps none.
Nothing is ever required of it: a directory that cannot be written is
simply not used, and what is read back from it is checked (a damaged or
foreign file is built again, never trusted).  Files are written to a
temporary name and renamed, so a reader never sees half of one.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def cache_dir() -> Path | None:
    """Where files are kept between runs, or None when none is."""
    chosen = os.environ.get("SARSLEUTH_CACHE_DIR")
    if chosen is not None:
        return Path(chosen) if chosen else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "sarsleuth"


def write_atomically(path: Path, data: bytes, prefix: str) -> bool:
    """Write ``data`` to ``path`` through a temporary file (best effort)."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=prefix, dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return True
    except OSError:
        return False


def read_json(name: str):
    """A JSON document kept under ``name``, or None (none kept, unreadable)."""
    folder = cache_dir()
    if folder is None:
        return None
    try:
        return json.loads((folder / name).read_bytes())
    except (OSError, ValueError):
        return None


def keep_json(name: str, document) -> None:
    """Keep a JSON document under ``name`` for later runs (best effort)."""
    folder = cache_dir()
    if folder is not None:
        write_atomically(folder / name, json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode(),
                         ".keep-")
