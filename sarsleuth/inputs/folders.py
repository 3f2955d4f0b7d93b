"""Folders walked the one way every input is: sorted, hidden files and
folders skipped, and an extracted sosreport met on the way seen as one
unit (its layout says which of its files to read).

Without recursion: ``os.walk`` (before Python 3.12) and ``Path.rglob``
call themselves once per level, and a folder 1,500 levels deep (a hostile
archive, a loop of bind mounts) ends in ``RecursionError``;
:func:`walk_tree` keeps its own stack, so depth costs memory, never the
interpreter's stack."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

from sarsleuth.inputs.bundles.layout import is_sos_root


def walk_tree(top):
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


def walk(root, sos_as_unit: bool = True) -> Iterator[tuple[Path, bool]]:
    """The files under ``root`` as ``(path, is_sos_root)``: with
    ``sos_as_unit``, a sosreport folder is yielded once, as its folder,
    and not entered; without, every file is yielded."""
    for here, dirs, names in walk_tree(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        if sos_as_unit and is_sos_root(dirs + names):
            dirs[:] = []
            yield Path(here), True
            continue
        for name in sorted(names):
            full = Path(here) / name
            if not name.startswith(".") and full.is_file():
                yield full, False


def files_under(paths) -> list[Path]:
    """Every file under ``paths`` (folders walked whole, their files in
    path order), in the order the paths were given."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(sorted(f for f, _sos in walk(p, sos_as_unit=False)))
        else:
            out.append(p)
    return out
