"""Folders walked without recursion.

``os.walk`` (before Python 3.12) and ``Path.rglob`` call themselves once
per level: a folder 1,500 levels deep (a hostile archive, a loop of bind
mounts) ends in ``RecursionError``.  :func:`walk` keeps its own stack, so
depth costs memory, never the interpreter's stack.
"""
from __future__ import annotations

import os


def walk(top):
    """``os.walk(top)`` top-down, without recursion: yields ``(folder,
    dirs, files)``; the caller may prune ``dirs`` in place (and sort it:
    subfolders are visited in the order ``dirs`` has after the yield).
    As ``os.walk``, links to folders are listed in ``dirs`` but not
    followed, and unreadable folders are skipped."""
    stack = [os.fspath(top)]
    while stack:
        here = stack.pop()
        try:
            entries = list(os.scandir(here))
        except OSError:
            continue
        dirs, files = [], []
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            (dirs if is_dir else files).append(entry.name)
        yield here, dirs, files
        for name in reversed(dirs):
            path = os.path.join(here, name)
            if not os.path.islink(path):
                stack.append(path)


def files_under(top) -> list:
    """Every file under ``top`` as paths relative to it, sorted, none
    inside a hidden folder and none hidden."""
    out = []
    for here, dirs, files in walk(top):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        rel = os.path.relpath(here, top)
        out.extend(os.path.normpath(os.path.join(rel, f)) for f in files if not f.startswith("."))
    return sorted(out)
