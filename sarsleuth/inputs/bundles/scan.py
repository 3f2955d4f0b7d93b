"""A bundle's host, cheaply: the host facts of each bundle in an archive or
sosreport folder, without copying its logs anywhere.

A fleet has to know which host every bundle describes before any host is
analysed (one host's sosreport joins that host's loose sa files given
elsewhere).  This reads the configuration files of the layout (hostname,
uname, CPUs, memory, zone, limits) straight from the stream and, to learn
the name the host's own data uses (an sa header may say ``web07`` where the
hostname file says ``web07.example.com``), the first bytes of a few of its
data files.
"""
from __future__ import annotations

import os
import shutil
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from sarsleuth.inputs.bundles import archive, layout as lay, readers
from sarsleuth.inputs.bundles.expand import (Expanded, _collect_file, is_archive, _member_text, _read_fact, bundle_of,
                                      sos_folder_files)
from sarsleuth.inputs.bundles.facts import HostFacts
from sarsleuth.inputs.reading import DECOMPRESSION_ERRORS, HEAD_BYTES

#: Data files of one bundle naming a host whose heads are read; and at most
#: this many heads in all (dmesg and ps name none).
HEADS_PER_BUNDLE = 3
MAX_HEADS_TRIED = 12


@dataclass
class BundleScan:
    """One bundle (one host) as a fleet first sees it."""

    label: str                       # the bundle's label (HostFacts.bundle), what expand selects by
    facts: HostFacts
    data_hosts: list = field(default_factory=list)    # hosts its data files name, most named first
    data_facts: dict = field(default_factory=dict)    # kernel, ncpu as an sa header records them
    tried: int = 0                   # data file heads read
    named: int = 0                   # of which named a host

    def wants_heads(self) -> bool:
        return self.named < HEADS_PER_BUNDLE and self.tried < MAX_HEADS_TRIED


def is_bundle(path) -> bool:
    """An archive (by its bytes) or an extracted sosreport folder."""
    p = Path(path)
    if p.is_dir():
        try:
            return lay.is_sos_root(os.listdir(p))
        except OSError:
            return False
    return p.is_file() and is_archive(p)


def scan(path, head_facts) -> tuple[list, list]:
    """(the :class:`BundleScan` of every bundle at ``path``, warnings).
    ``head_facts(file)`` gives the (hosts, facts) a data file's head names."""
    out = Expanded()
    out.head_facts = head_facts
    tmp = tempfile.mkdtemp(prefix="sarsleuth-scan-")
    try:
        if Path(path).is_dir():
            found = [_folder(Path(path), out, tmp)]
        else:
            found = _archive(Path(path), out, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for b in found:
        readers.settle_processes(b.facts)
    return found, out.warnings


def _head_hosts(b: BundleScan, head_path: str, out) -> None:
    hosts, facts = out.head_facts(head_path)
    b.tried += 1
    b.named += bool(hosts)
    b.data_hosts.extend(hosts)
    for k, v in facts.items():
        if v is not None:
            b.data_facts.setdefault(k, v)


def _folder(root: Path, out: Expanded, tmp: str) -> BundleScan:
    b = BundleScan(str(root), HostFacts(bundle=str(root)))
    for full, rel, fact in sos_folder_files(root, b.facts, out):
        if not fact and b.wants_heads() and lay.input_of(rel)[0] is not None:
            _head_hosts(b, str(full), out)
    return b


def _archive(path: Path, out: Expanded, tmp: str) -> list:
    sos = lay.layout()["sosreport"]
    found: dict = {}
    for member in archive.members(path, str(path), out.warnings, workdir=tmp):
        key, label, rel = bundle_of(member, sos)
        if lay.skipped(rel) or _collect_file(rel, sos):
            continue
        b = found.get(key)
        entry, m = lay.fact_of(rel)
        if entry is not None:
            b = b or found.setdefault(key, BundleScan(label, HostFacts(bundle=label)))
            _read_fact(entry, m, rel, member.label, b.facts, out, link=member.link,
                       read=lambda member=member: _member_text(member, out))
            continue
        if member.link is not None or (b is not None and not b.wants_heads()):
            continue
        if lay.input_of(rel)[0] is None and key[1]:
            continue                 # a sosreport's other files are not data
        b = b or found.setdefault(key, BundleScan(label, HostFacts(bundle=label)))
        dest = os.path.join(tmp, f"{len(found)}-{b.tried}-{os.path.basename(rel)[:80]}")
        try:
            raw = member.open().read(HEAD_BYTES)
        except (OSError, EOFError, ValueError, tarfile.TarError, zipfile.BadZipFile, *DECOMPRESSION_ERRORS) as exc:
            out.warnings.append(f"{member.label}: the archive breaks inside it ({exc})")
            continue
        with open(dest, "wb") as fh:
            fh.write(raw)
        os.utime(dest, (member.mtime, member.mtime))
        _head_hosts(b, dest, out)
    return list(found.values())


def count_bundles(path, enough: int) -> int:
    """How many bundles (hosts) an archive holds, from member names only: an
    archive whose first member is not in a ``sos collect`` folder is one
    host; a collect archive holds one per node (its nested sosreport
    archives or folders), counted up to ``enough``."""
    sos = lay.layout()["sosreport"]
    seen: set = set()
    warnings: list = []
    for member in archive.members(path, str(path), warnings, follow=lambda _label: False):
        first, _, rest = member.name.partition("/")
        if not sos["collect_regex"].search(first):
            return 1
        node = rest.split("/", 1)[0]
        if node.startswith(tuple(sos["root_prefixes"])):
            seen.add(node)
            if len(seen) >= enough:
                break
    return max(1, len(seen))
