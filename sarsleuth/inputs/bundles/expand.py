"""The user's paths as the files to parse and the hosts they describe.

A plain file stays itself.  A folder is walked; a sosreport folder in it
(or the folder itself) is read by its layout: only the files that hold
data sources, each sar day from its most faithful copy, plus the host
facts.  An archive (recognised by its bytes) is streamed: members that hold
data sources are copied, one by one as the stream passes, into a private
temporary folder (never beside the input) and parsed from there under the
name ``ARCHIVE!MEMBER``; configuration files are read into host facts
directly from the stream.
"""
from __future__ import annotations

import os
import posixpath
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from sarsleuth.inputs.bundles import archive, layout as lay, readers
from sarsleuth.inputs.bundles.facts import HostFacts
from sarsleuth.errors import InputError
from sarsleuth.inputs.folders import walk, walk_tree
from sarsleuth.inputs.reading import read_head

#: Configuration files larger than this are not host facts (sysctl -a is ~50 KB).
MAX_FACT_BYTES = 32 << 20


@dataclass
class Entry:
    """One file to parse."""

    path: str                       # where to read it (the input, or a private copy)
    name: str                       # how to name it in every output
    facts: HostFacts | None = None  # the bundle (host) it belongs to


@dataclass
class Expanded:
    entries: list = field(default_factory=list)
    bundles: list = field(default_factory=list)    # HostFacts, one per bundle (a bundle is one host)
    warnings: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    refused: list = field(default_factory=list)   # (ARCHIVE!MEMBER, why): members not read, inputs skipped
    #: archive path -> labels of the bundles in it to read (the others are
    #: passed over): one host of a fleet reads its own node of a collect archive
    select: dict = field(default_factory=dict)
    #: path -> how the user knows it (a stream's copy is ``<stdin>``, a
    #: collected file is named as its host names it)
    names: dict = field(default_factory=dict)
    _workdir: str | None = None

    def workdir(self) -> str:
        if self._workdir is None:
            self._workdir = tempfile.mkdtemp(prefix="sarsleuth-bundle-")
        return self._workdir

    def cleanup(self) -> None:
        if self._workdir:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None


def expand(paths, names: dict | None = None, select: dict | None = None) -> Expanded:
    """``names``: how the user knows a path given here (a stream's private
    copy is ``<stdin>``; a file of a collected folder, by its place on the
    host), for it, the members of an archive read from it and the files
    of a sosreport folder;
    ``select``: of the archive at each key, read only the bundles whose
    labels are listed (nested archives of other bundles are not even
    decompressed)."""
    out = Expanded(select={str(k): set(v) for k, v in (select or {}).items()}, names=dict(names or {}))
    try:
        for p in paths:
            p = Path(p)
            if p.is_dir():
                _folder(p, out)
            elif p.is_file() and is_archive(p):
                _archive(p, out, label=out.names.get(str(p), str(p)))
            else:
                out.entries.append(Entry(str(p), str(p)))
    except BaseException:
        out.cleanup()      # no private copy outlives a failure or an interrupt
        raise
    return out


def follower(wanted):
    """``archive.members``' ``follow`` for a set of wanted bundle labels
    (None: every one): a nested archive is read unless it lies inside a
    sosreport's folder.  sos itself writes none there (its nodes'
    archives sit beside its own files in a ``sos collect`` folder); one
    there is a tree of the host packed by hand (``sys.tgz``, ``usr.tgz``),
    which the same report as a folder never opens either."""
    prefixes = tuple(lay.layout()["sosreport"]["root_prefixes"])

    def follow(label: str) -> bool:
        name = label.rsplit(archive.MEMBER_SEP, 1)[-1]
        top, _, rest = name.partition("/")
        if rest and top.startswith(prefixes):
            return False
        return not wanted or any(w == label or w.startswith(label + archive.MEMBER_SEP) for w in wanted)
    return follow


def bundle_of(member, sos: dict) -> tuple:
    """(key, label, path inside the bundle) of an archive member: a member
    under a ``sosreport-*`` top folder (or such a folder in a ``sos collect``
    folder) belongs to that sosreport; any other
    member to its archive as a whole (one archive, one host)."""
    top, _, rel = member.name.partition("/")
    node, _, inner = rel.partition("/")
    if inner and sos["collect_regex"].search(top) and node.startswith(tuple(sos["root_prefixes"])):
        # a collect folder of extracted sosreports: one host per node
        top, rel = f"{top}/{node}", inner
    elif not (rel and top.startswith(tuple(sos["root_prefixes"]))):
        top, rel = "", member.name
    label = f"{member.archive}{archive.MEMBER_SEP}{top}" if top else member.archive
    return (member.archive, top), label, rel


def has_facts(h: HostFacts) -> bool:
    return bool(h.hostname or h.kernel or h.limits or h.nginx or h.timezone or h.ncpu or h.collected)


def is_archive(path: Path) -> bool:
    """Is ``path`` an archive (told by its first bytes)?"""
    try:
        return archive.archive_kind(read_head(path, 512)) is not None
    except (InputError, OSError):
        return False


# ------------------------------------------------------------------ folders
def _folder(root: Path, out: Expanded) -> None:
    for full, sos in walk(root):
        if sos:
            _sos_folder(full, out)
        elif is_archive(full):
            _archive(full, out)
        else:
            out.entries.append(Entry(str(full), str(full)))


def sos_folder_files(root: Path, facts: HostFacts, out: Expanded):
    """Every file of an extracted sosreport in a stable order, its host facts
    read into ``facts`` on the way: yields ``(full path, relative path,
    whether it was a fact file)`` for the files that are not links (a link
    in a sosreport is a copy of something listed elsewhere)."""
    for here, dirs, files in walk_tree(root):
        dirs.sort()
        for f in sorted(files):
            full = Path(here) / f
            rel = full.relative_to(root).as_posix()
            entry, m = lay.fact_of(rel)
            if entry is not None:
                _read_fact(entry, m, rel, out.names.get(str(full), str(full)), facts, out,
                           link=os.readlink(full) if full.is_symlink() else None,
                           read=lambda full=full: _read_capped(open(full, "rb")))
            if not full.is_symlink():
                yield full, rel, entry is not None


def _sos_folder(root: Path, out: Expanded) -> None:
    facts = HostFacts(bundle=out.names.get(str(root), str(root)))
    candidates = []
    for full, rel, fact in sos_folder_files(root, facts, out):
        if fact or not full.is_file():
            continue
        if _packed(full, rel):
            candidates += _packed_inputs(full, rel, facts, out)
        elif lay.input_of(rel)[0] is not None:
            candidates.append(("", rel, Entry(str(full), out.names.get(str(full), str(full)), facts)))
    _keep_faithful(candidates, str(root), out)
    readers.settle_processes(facts)
    out.bundles.append(facts)


def _packed(full: Path, rel: str) -> bool:
    """A folder of the bundle packed as an archive beside where it was
    (hotsos keeps ``sos_commands/logs`` as ``sos_commands/logs.xz``, a unit's
    journal as ``journalctl_..._unit_X.xz``: tars, whatever their names)."""
    return (lay.input_of(rel)[0] is not None or lay.packed(rel)) and is_archive(full)


def _packed_inputs(full: Path, rel: str, facts: HostFacts, out: Expanded) -> list:
    """The inputs of a packed folder, each under the path it had in the
    bundle (``sos_commands/logs/journalctl_--no-pager``), copied privately
    to be read."""
    parent = posixpath.dirname(rel)
    label = out.names.get(str(full), str(full))
    found = []
    for member in archive.members(full, label, out.warnings, workdir=out.workdir(), refused=out.refused):
        inner = posixpath.join(parent, member.name)
        if member.link is not None or lay.input_of(inner)[0] is None or lay.skipped(inner):
            continue
        dest = os.path.join(out.workdir(), f"packed-{len(found)}-{posixpath.basename(inner)[:80]}")
        trouble = archive.spool_member(member, dest, int(lay.layout()["archives"]["max_spool_bytes"]))
        if trouble and not os.path.exists(dest):
            out.refused.append((member.label, f"refused: {trouble}"))
            continue
        if trouble:
            out.warnings.append(f"{member.label}: {trouble}")
        found.append(("", inner, Entry(dest, member.label, facts)))
    return found


def _keep_faithful(candidates, bundle: str, out: Expanded) -> None:
    kept, dropped = lay.most_faithful(candidates)
    out.entries.extend(kept)
    for rel, winner in dropped:
        out.notes.append(f"{bundle}: {rel} not read: the same sar day is read from {winner} (its most faithful copy)")


def _read_capped(fh) -> str | None:
    with fh:
        raw = fh.read(MAX_FACT_BYTES + 1)
    if len(raw) > MAX_FACT_BYTES:
        return None
    return raw.decode("utf-8", "replace")


def _member_text(member, out: Expanded) -> str | None:
    raw, trouble = archive.read_member(member, MAX_FACT_BYTES)
    if trouble:
        out.warnings.append(f"{member.label}: {trouble}; not read as a host fact")
        return ""
    return raw.decode("utf-8", "replace") if raw is not None else None


def _read_fact(entry, m, rel, label, facts, out, link, read) -> None:
    reader = readers.READERS[entry["reader"]]
    if entry["reader"] == "localtime":
        reader("", label, m, facts, link=link)
        return
    if link is not None:
        return
    text = read()
    if text is None:
        out.warnings.append(f"{label}: larger than {MAX_FACT_BYTES >> 20} MB, not read as a host fact")
        return
    reader(text, label, m, facts)


# ----------------------------------------------------------------- archives
def _collect_file(rel: str, sos: dict) -> bool:
    """A file of sos collect's own folder (its logs, its manifest): the
    nodes' data is in the sosreport archives beside it."""
    first, _, rest = rel.partition("/")
    return bool(rest) and bool(sos["collect_regex"].search(first)) and "/" not in rest
class _Bundle:
    """What one bundle inside an archive gave so far."""

    def __init__(self, label: str):
        self.facts = HostFacts(bundle=label)
        self.sos = False
        self.candidates: list = []          # (key, rel, Entry) matched by the layout
        self.loose: list = []               # Entry of other files (sniffed unless a sosreport)


def _archive(path: Path, out: Expanded, label: str | None = None) -> None:
    bundles: dict = {}
    limit = int(lay.layout()["archives"]["max_spool_bytes"])
    sos = lay.layout()["sosreport"]
    wanted = out.select.get(str(path))
    for member in archive.members(path, label or str(path), out.warnings, workdir=out.workdir(),
                                  follow=follower(wanted), refused=out.refused):
        # one archive, one host (a /var/log tarball, however it was rooted),
        # unless it holds sosreports
        key, label, rel = bundle_of(member, sos)
        if wanted and label not in wanted:
            continue
        b = bundles.get(key)
        if b is None:
            b = bundles[key] = _Bundle(label)
        if key[1] or set(rel.split("/")[:-1]) & set(sos["markers"]):
            b.sos = True
        entry, m = lay.fact_of(rel)
        if entry is not None:
            _read_fact(entry, m, rel, member.label, b.facts, out, link=member.link,
                       read=lambda member=member: _member_text(member, out))
            continue
        if member.link is not None or lay.skipped(rel) or _collect_file(rel, sos):
            continue
        is_input = lay.input_of(rel)[0] is not None
        if not is_input and b.sos:
            continue
        dest = os.path.join(out.workdir(), f"{sum(len(x.candidates) + len(x.loose) for x in bundles.values())}-"
                                           f"{os.path.basename(rel)[:80]}")
        trouble = archive.spool_member(member, dest, limit)
        if trouble and not os.path.exists(dest):
            out.refused.append((member.label, f"refused: {trouble}"))
            continue
        if trouble:
            out.warnings.append(f"{member.label}: {trouble}")
        e = Entry(dest, member.label, b.facts)
        if is_input:
            b.candidates.append(("", rel, e))
        else:
            b.loose.append(e)
    for b in bundles.values():
        _keep_faithful(b.candidates, b.facts.bundle, out)
        if b.sos:
            for e in b.loose:               # spooled before the bundle showed it was a sosreport
                os.unlink(e.path)
        else:
            out.entries.extend(b.loose)
        readers.settle_processes(b.facts)
        out.bundles.append(b.facts)
