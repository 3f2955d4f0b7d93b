"""Which host each input belongs to, from the facts the file itself carries.

A fleet folder is rarely tidy: per-host folders, one folder of many hosts'
``sa`` files, a host's files spread over several folders.  Folder *names*
say nothing reliable, so every file is asked for the host it names: the
``sa`` file header (``nodename``), the ``sar`` banner (``Linux ... (host)``),
``sadf`` output (its hostname column, ``nodename`` attribute or key), and the
host field of syslog and journal lines.  A support bundle (a sosreport
archive or folder, each node of a ``sos collect`` archive) is one host: the
name its own data files use, else its hostname (:mod:`sarsleuth.inputs.bundles.scan`),
so loose files of that host given elsewhere join it.  Files that name no host (nginx
error.log, dmesg, ps snapshots, load-test reports) join the one host whose
files sit in the same folder, as for a single case; the others are analysed
together, apart from every host.

:func:`file_facts` looks at one file (cheap: the first 64 KB), so it can run
on the workers; :func:`group_by_host` is the one place the facts become
hosts, whatever produced them.
"""
from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field

from sarsleuth.inputs.bundles.scan import count_bundles, is_bundle, scan
from sarsleuth.errors import InputError
from sarsleuth.inputs.gathering import gather, is_unit_archive
from sarsleuth.inputs.parsers import registry, sniff
from sarsleuth.inputs.reading import HEAD_BYTES, read_head
from sarsleuth.timebase.hosts import canonical_spelling

#: The group of files that name no host and cannot be placed beside one:
#: still read and analysed together, as a single case would, but never
#: counted as a host of the fleet.
NO_HOST = ""


@dataclass
class FileFacts:
    """What one file says about where it comes from."""

    path: str
    kind: str | None                 # None: not an input sarsleuth reads
    hosts: tuple = ()                # hosts the file names; empty when none
    facts: dict = field(default_factory=dict)   # kernel, ncpu... as the file records them
    reason: str = ""                 # why the file is not read (kind None)
    bundle: str | None = None        # a bundle's label: ``path`` holds it (one host of a collect archive...)
    warnings: list = field(default_factory=list)


@dataclass
class HostGroup:
    host: str
    files: list                      # paths, in the order they were given
    facts: dict = field(default_factory=dict)
    shared: list = field(default_factory=list)   # files naming other hosts too
    select: dict = field(default_factory=dict)   # archive or folder -> labels of this host's bundles in it


@dataclass
class Grouping:
    groups: list                     # list[HostGroup], by host name
    unplaced: list = field(default_factory=list)  # (path, reason)
    notes: list = field(default_factory=list)

    @property
    def hosts(self) -> list:
        return [g.host for g in self.groups if g.host != NO_HOST]


def file_facts(path) -> FileFacts:
    """Kind and host facts of one file, from its first bytes (as its
    parser reads them: :meth:`~sarsleuth.inputs.parsers.base.Parser.hosts_in`)."""
    path = str(path)
    kind, reason = sniff(path)
    if kind is None:
        return FileFacts(path, None, reason=reason)
    try:
        head = read_head(path, HEAD_BYTES)
    except InputError as exc:
        return FileFacts(path, None, reason=exc.reason)
    hosts, facts = registry()[kind].hosts_in(path, head)
    return FileFacts(path, kind, tuple(h for h in hosts if h), facts)


def unit_facts(path) -> list:
    """The facts of one input unit: a file, or every bundle (one host each)
    of an archive or extracted sosreport."""
    if not is_bundle(path):
        return [file_facts(path)]
    try:
        found, warnings = scan(path, _head_facts)
    except OSError as exc:
        return [FileFacts(str(path), None, reason=f"not readable ({exc})")]
    if not found:
        return [FileFacts(str(path), None, reason="a bundle holding no data sarsleuth reads",
                          warnings=warnings)]
    out = [_bundle_facts(str(path), b) for b in found]
    out[0].warnings = list(warnings)     # the archive's warnings, said once
    return out


def _head_facts(path) -> tuple:
    f = file_facts(path)
    return (f.hosts, f.facts) if f.kind else ((), {})


def _bundle_facts(path: str, b) -> FileFacts:
    """A bundle is one host: the name its own data uses (as the single-case
    pipeline names it), else its hostname."""
    h = b.facts
    counts = Counter(b.data_hosts)
    short = h.hostname.split(".")[0] if h.hostname else None
    if h.hostname in counts:
        host = h.hostname
    elif short and short in counts:
        host = short
    elif counts:
        host = counts.most_common(1)[0][0]
    else:
        host = h.hostname
    facts = {"kernel": h.kernel or b.data_facts.get("kernel"), "ncpu": h.ncpu or b.data_facts.get("ncpu"),
             "zone": h.timezone, "hostname": h.hostname}
    return FileFacts(path, "bundle", (host,) if host else (), {k: v for k, v in facts.items() if v is not None},
                     bundle=b.label)


def group_by_host(facts: list) -> Grouping:
    """Hosts from file facts: the one place files become hosts.

    A host named by its full name in one file and its short name in another
    (``web1.example.com`` in syslog, ``web1`` in the sa header) is one host,
    under the short name.  Files naming no host join the single host whose
    files share their folder; otherwise they are left out, with the reason."""
    named = {h for f in facts if f.kind for h in f.hosts}
    # WEB1 in a central log and web1 in the host's own files are one host
    folded: dict = {}
    for h in named:
        folded.setdefault(h.casefold(), set()).add(h)
    spelled = {h: canonical_spelling(folded[h.casefold()]) for h in named}
    canonical = {h: _short_alias(spelled[h], set(spelled.values())) for h in named}
    groups: dict = {}
    by_folder: dict = {}
    unplaced, notes = [], []
    for f in facts:
        if f.kind is None:
            unplaced.append((f.path, f.reason or "not an input sarsleuth reads"))
            continue
        hosts = list(dict.fromkeys(canonical[h] for h in f.hosts))
        for host in hosts:
            group = groups.setdefault(host, HostGroup(host, []))
            if f.bundle is not None:
                group.select.setdefault(f.path, []).append(f.bundle)
            if f.path not in group.files:
                group.files.append(f.path)
            if len(hosts) > 1:
                group.shared.append(f.path)
            for key, value in f.facts.items():
                group.facts.setdefault(key, value)
            by_folder.setdefault(_folder(f.path), set()).add(host)
        if len(hosts) > 1:
            notes.append(f"{f.path}: names {len(hosts)} hosts; each host's pipeline keeps its own lines")
    hostless = HostGroup(NO_HOST, [])
    for f in facts:
        if f.kind is None or f.hosts:
            continue
        beside = by_folder.get(_folder(f.path), set())
        home = groups[next(iter(beside))] if len(beside) == 1 else hostless
        if f.bundle is not None:
            home.select.setdefault(f.path, []).append(f.bundle)
        if f.path not in home.files:
            home.files.append(f.path)
        if home is hostless:
            notes.append(f"{f.path}: a {f.kind} file names no host and "
                         + (f"sits beside files of {len(beside)} hosts" if beside else "no file beside it does")
                         + "; analysed with the other files naming no host")
    ordered = [groups[h] for h in sorted(groups)] + ([hostless] if hostless.files else [])
    return Grouping(groups=ordered, unplaced=unplaced, notes=notes)


def _short_alias(host: str, named: set) -> str:
    short = host.split(".", 1)[0]
    return short if short != host and short in named else host


def _folder(path) -> str:
    return os.path.dirname(os.path.abspath(str(path)))


def input_files(paths) -> tuple:
    """Every input unit under ``paths`` (a file, an archive, or an
    extracted sosreport folder as a whole), each once, and ``(path, why)``
    of those not read: missing, a device or a file over the size cap, a
    pipe (the workers read each host's files where they are)."""
    units = gather(paths, in_place=True)
    return units.files, units.refused


#: Files whose host facts are read to decide whether inputs are a fleet.
FLEET_SAMPLE_FILES = 64


def names_hosts(paths, at_least: int, sample: int = FLEET_SAMPLE_FILES) -> bool:
    """Do the inputs name at least ``at_least`` hosts?  Decided from an even
    sample of the files, so a one-host case of thousands of files pays for
    64 heads, not for all of them; stops as soon as enough are seen."""
    files, _missing = input_files(paths)
    if len(files) > sample:
        step = len(files) / sample
        files = [files[int(k * step)] for k in range(sample)]
    seen: set = set()
    archives: list = []
    for f in files:
        if is_unit_archive(f):
            # a collect archive of enough nodes is a fleet by itself: counted
            # from member names, without decompressing the nodes
            n = count_bundles(f, at_least)
            if n >= at_least:
                return True
            archives.append((f, n))
            continue
        for facts in unit_facts(f):
            seen.update(h.split(".", 1)[0] for h in facts.hosts if facts.kind)
        if len(seen) >= at_least:
            return True
    if len(seen) + sum(n for _f, n in archives) < at_least:
        return False
    # enough bundles, maybe of fewer hosts (two sosreports of one host): their facts say
    for f, _n in archives:
        for facts in unit_facts(f):
            seen.update(h.split(".", 1)[0] for h in facts.hosts if facts.kind)
        if len(seen) >= at_least:
            return True
    return False


def group_inputs(paths) -> Grouping:
    """Walk ``paths`` and group the files by host, in this process."""
    files, refused = input_files(paths)
    grouping = group_by_host([ff for f in files for ff in unit_facts(f)])
    grouping.unplaced[:0] = refused
    return grouping
