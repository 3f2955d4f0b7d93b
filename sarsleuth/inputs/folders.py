"""Folders walked the one way every input is: sorted, hidden files and
folders skipped, and an extracted sosreport met on the way seen as one
unit (its layout says which of its files to read)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

from sarsleuth.inputs.bundles.layout import is_sos_root


def walk(root, sos_as_unit: bool = True) -> Iterator[tuple[Path, bool]]:
    """The files under ``root`` as ``(path, is_sos_root)``: with
    ``sos_as_unit``, a sosreport folder is yielded once, as its folder,
    and not entered; without, every file is yielded."""
    for here, dirs, names in os.walk(root):
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
