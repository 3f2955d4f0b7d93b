"""What the user named, as the files to read: the one place paths become
inputs, for a case, for ``sniff`` and for a fleet.

Every path is checked before a byte of it is read (missing, a device, a
socket, a file over the size cap: :mod:`sarsleuth.inputs.named_paths`).
Then, for a case and for ``sniff``, streams are copied once, folders walked
and bundles (sosreports, archives) read by their layout
(:mod:`sarsleuth.inputs.bundles`), and every file is kept once however
often it was named.  A fleet reads its files where they are (``in_place``):
its workers cannot share a pipe's copy, and a bundle is one unit that the
worker of its host reads whole, so pipes are refused and bundles are not
opened here.
"""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from sarsleuth.inputs import named_paths
from sarsleuth.inputs.bundles.expand import expand, is_archive
from sarsleuth.inputs.folders import walk
from sarsleuth.inputs.parsers import sniff

#: Why a pipe is not read by a fleet.
PIPE_IN_A_FLEET = "a pipe, read once: a fleet's workers read files where they are (analyse it with --no-fleet)"


@dataclass
class Gathered:
    """The inputs of one run, each file once."""

    #: files to read, in the order they were named (each once); for a
    #: fleet, units: a file, an archive or an extracted sosreport folder
    files: list = field(default_factory=list)
    #: private copy (a stream's, an archive member's) -> the name the user knows
    names: dict = field(default_factory=dict)
    #: file -> the HostFacts of the bundle it came from
    facts_of: dict = field(default_factory=dict)
    #: HostFacts of every bundle read (a bundle is one host)
    bundles: list = field(default_factory=list)
    refused: list = field(default_factory=list)      # (name, why): not read, the rest is
    #: how many of the first ``refused`` are paths the user named (missing,
    #: a device, a pipe with no writer), not members or files found inside
    named_refused: int = 0
    warnings: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    def name(self, path) -> str:
        """How outputs name ``path``."""
        return self.names.get(str(path), str(path))


def gather(paths, copies: contextlib.ExitStack | None = None, *, select: dict | None = None,
           in_place: bool = False, names: dict | None = None) -> Gathered:
    """The files behind ``paths``.  ``copies`` (an ExitStack) removes the
    private copies of streams and archive members when it closes (they
    stay until the findings have quoted their lines); ``select``: of the
    archive at each key, only the bundles whose labels are listed;
    ``in_place``: a fleet's units, read where they are (no copy is made);
    ``names``: {file: how the outputs name it} (a collected file by its
    place on the host)."""
    out = Gathered()
    if in_place:
        _units(paths, out)
        return out
    if copies is None:
        raise ValueError("gather() copies streams and archive members: give it the ExitStack that removes them")
    spooled = named_paths.Spooled()
    copies.callback(spooled.cleanup)
    given = []
    for p in named_paths.spool(paths, spooled, judge=stream_head_problem):
        why = named_paths.missing(p)
        if why:
            out.refused.append((str(p), why))
        else:
            given.append(p)
    out.refused[:0] = spooled.unreadable
    out.named_refused = len(out.refused)
    bundles = expand(given, {**spooled.names, **(names or {})}, select)
    copies.callback(bundles.cleanup)
    out.refused.extend(bundles.refused)
    out.warnings.extend(spooled.warnings)
    out.warnings.extend(bundles.warnings)
    out.notes.extend(bundles.notes)
    out.names.update(spooled.names)
    for e in bundles.entries:
        if e.name != e.path:
            out.names[e.path] = e.name
        if e.facts is not None:
            out.facts_of[e.path] = e.facts
    out.bundles = list(bundles.bundles)
    # a file found in a folder is capped as a named one is: its reader says so, in its turn
    out.files = distinct([Path(e.path) for e in bundles.entries], out.notes, out.names)
    return out


def distinct(files, notes: list, names: dict | None = None) -> list:
    """Each file once, however often it was named (directly, through a
    folder, through a link).  ``names``: how the user knows a private copy
    (an archive member), for the note."""
    names = names or {}
    seen, out = {}, []
    for f in files:
        try:
            st = os.stat(f)
            key = (st.st_dev, st.st_ino)
        except OSError:
            key = ("path", os.path.abspath(str(f)))
        if key in seen:
            this, first = (names.get(str(p), str(p)) for p in (f, seen[key]))
            if this != first:
                notes.append(f"{this} is the same file as {first}: read once")
            elif str(f) not in names:      # a member kept for two reasons is not the user's doing
                notes.append(f"{this} was given more than once: read once")
            continue
        seen[key] = f
        out.append(f)
    return out


def _units(paths, out: Gathered) -> None:
    """A fleet's input units under ``paths``: files, archives and
    extracted sosreport folders, each once, where they are."""
    refused = set()
    for p in paths:
        why = named_paths.missing(p) or named_paths.refusal(p) or (named_paths.is_stream(p) and PIPE_IN_A_FLEET)
        if why:
            out.refused.append((str(p), why))
            refused.add(str(p))
    out.named_refused = len(out.refused)
    found = []
    for p in (Path(p) for p in paths if str(p) not in refused):
        if p.is_dir():
            found.extend(path for path, _sos in walk(p))
        else:
            found.append(p)
    kept = []
    for f in found:
        why = named_paths.refusal(f)        # a file found in a folder is capped as a named one is
        if why:
            out.refused.append((str(f), why))
        else:
            kept.append(f)
    out.files = [str(f) for f in distinct(kept, [])]


def is_unit_archive(path) -> bool:
    """Is a fleet's unit an archive (read by the worker of its hosts)?"""
    return os.path.isfile(path) and is_archive(Path(path))


def stream_head_problem(path) -> str | None:
    """Why the copied head of a stream is no input (no parser takes it and
    it is no archive), or None: judged before the rest is copied."""
    if is_archive(Path(path)):
        return None
    kind, reason = sniff(path)
    return None if kind else f"no input kind reads it ({reason})"
