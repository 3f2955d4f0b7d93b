"""Stage 1, read: every gathered file sniffed and parsed into a
:class:`~sarsleuth.model.Source`, past a thousand files small logs held as
few sources, and each source told which bundle (host) it came from.

A file that is not read is said in ``skipped`` with why (not an input
sarsleuth reads, over the size cap, damaged beyond reading); the rest is
read.  Each file is sniffed and parsed in turn: parsing looks at the head
again, which the sniff cache then still holds, however many files."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from sarsleuth.errors import InputError
from sarsleuth.inputs import named_paths
from sarsleuth.inputs.bundles.expand import has_facts
from sarsleuth.inputs.gathering import Gathered
from sarsleuth.inputs.many_small_logs import Folds
from sarsleuth.inputs.parsers import parse, sniff
from sarsleuth.progress import reading
from sarsleuth.timebase.hosts import attach_bundles


@dataclass
class Skipped:
    path: str
    reason: str


@dataclass
class Read:
    """What the read stage gives the case."""

    sources: list = field(default_factory=list)
    skipped: list = field(default_factory=list)     # Skipped
    hosts: list = field(default_factory=list)       # HostFacts of the bundles that said anything
    warnings: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    #: {name in outputs: the private copy it was read from}, for quoting evidence
    copies: dict = field(default_factory=dict)


def read_sources(gathered: Gathered, parse_options, progress: bool = False, named: bool = True) -> Read:
    """Sniff and parse every file of ``gathered``; ``named`` False: the
    progress on a terminal counts files without naming them (a redacted
    run)."""
    out = Read(skipped=[Skipped(name, why) for name, why in gathered.refused],
               warnings=list(gathered.warnings), notes=list(gathered.notes))
    folds = Folds()
    files = gathered.files
    sizes = [_size(f) for f in files]
    with reading(sizes, progress) as shown:
        told = dataclasses.replace(parse_options, progress=shown.within)
        for i, (f, size) in enumerate(zip(files, sizes), 1):
            shown.open(gathered.name(f) if named else f"file {i:,} of {len(files):,}", size)
            try:
                src = _read_one(f, gathered, told, out.skipped)
            finally:
                shown.close()
            if src is None:
                continue
            if str(f) in gathered.facts_of:
                src.meta["bundle"] = gathered.facts_of[str(f)].bundle
            folds.add(src)
            out.warnings.extend(src.warnings)
    # past a thousand files, small logs of one kind, host and clock are one source each
    out.sources = folds.sources()
    if folds.folding:
        folded = [s for s in out.sources if "files" in s.meta]
        if folded:
            out.notes.append(f"{sum(len(s.meta['files']) for s in folded)} log files are held as "
                             f"{len(folded)} source(s), one per kind, host and clock (their events keep "
                             "their files and lines)")
    found = gathered.bundles
    out.notes.extend(note for h in found for note in h.dropped)      # facts read but not used
    out.notes.extend(attach_bundles(out.sources, found))
    out.hosts = [h for h in found if has_facts(h)]
    out.copies = {name: copy for copy, name in gathered.names.items()}
    return out


def _read_one(f: Path, gathered: Gathered, parse_options, skipped: list):
    """The Source of one file, or None when it is skipped (said in
    ``skipped``)."""
    name = gathered.name(f)
    try:
        too_big = named_paths.refusal(f)        # a file found in a folder is capped as a named one is
        kind, reason = (None, too_big) if too_big else sniff(f)
        if kind is None:
            skipped.append(Skipped(name, reason))
            return None
        src = parse(f, kind, parse_options)
    except InputError as exc:
        skipped.append(Skipped(name, exc.one_line().replace(str(f), name)))
        return None
    if str(f) in gathered.names:
        named_paths.relabel(src, str(f), name)
    return src


def _size(path: Path) -> int | None:
    """Bytes of a file on disk, for the progress of reading."""
    try:
        return path.stat().st_size
    except OSError:
        return None
