"""The names of the disks sar labels by their numbers, for a case.

sar without ``-p`` and the sa reader (like ``sadf``) label a disk that
sysstat's device table cannot name by its device numbers: ``dev253-0``
(device-mapper, NVMe, virtio... take majors assigned at boot).  The label
is kept as recorded (metric store, CSV, ``case.sar()``); where the same case
holds what names the disk, outputs show the name beside it:
``dev253-0 (rhel-root)``.  Two things name it:

- a support bundle of the host: ``/proc/partitions``, ``/proc/diskstats``,
  ``lsblk``, ``dmsetup info -c`` (:meth:`HostFacts.disk_names`);
- a ``sar -d -p`` text of the host covering the same times: a ``devM-N``
  series and a named one are the same disk when tps and the transfer
  rates agree to sar's two decimals at every common sample (and are not
  all zero there), and neither agrees so with another disk.

This module is the one place that works it out: :func:`disk_names` gives
``{host: {"devM-N": DiskName}}``; :func:`labelled` writes the label with
its name.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

#: The sar section of disks.
DISK_SECTION = "disk"
#: How sar labels a disk it cannot name.
RECORDED_LABEL = re.compile(r"^dev(\d+)-(\d+)$")
#: Values compared to pair a recorded disk with a named one (sar's names,
#: sysstat 10 and later, then 9.x); tps and one transfer rate at least.
COMPARED = ("tps", "rkB/s", "wkB/s", "rd_sec/s", "wr_sec/s")
#: sar prints two decimals: a value read exactly lies within half a unit
#: of the last digit of what sar printed from it.
PRINTED_HALF_UNIT = 0.005


@dataclass(frozen=True)
class DiskName:
    """The name of a disk and what said so."""

    name: str
    where: str      # "path:line" of a bundle file, or the sar text whose values agree
    how: str        # "bundle" or "sar text" (a named sar rendering of the same disk)


def is_recorded_label(device) -> bool:
    """Is ``device`` a label sar gives a disk it cannot name (``dev8-0``)?"""
    return isinstance(device, str) and RECORDED_LABEL.match(device) is not None


def labelled(device, names: dict | None) -> str:
    """``dev253-0 (rhel-root)`` when ``names`` (one host's map) names it,
    the label alone otherwise."""
    found = (names or {}).get(device)
    if found is None:
        return str(device)
    return f"{device} ({found.name if isinstance(found, DiskName) else found})"


def disk_names(sources, host_facts=()) -> dict:
    """``{host: {"devM-N": DiskName}}`` for a case: what its bundles say,
    then what its ``sar -d -p`` texts show (for disks no bundle names)."""
    hosts = _hosts_of(sources)
    out: dict = {}
    for facts in host_facts or ():
        named = facts.disk_names()
        if not named:
            continue
        aliases = facts.names()
        for host in sorted({h for h in hosts if h in aliases} | ({facts.host} if facts.host else set())):
            mine = out.setdefault(host, {})
            for dev, (name, where) in named.items():
                mine.setdefault(dev, DiskName(name, where, "bundle"))
    for host in sorted(hosts):
        for dev, found in paired_by_values(sources, host).items():
            out.setdefault(host, {}).setdefault(dev, found)
    return out


def names_of_case(case) -> dict:
    """:func:`disk_names` of a loaded case."""
    return disk_names(getattr(case, "sources", ()), getattr(case, "hosts", ()))


def _hosts_of(sources) -> set:
    out = set()
    for s in sources or ():
        store = getattr(s, "store", None)
        if store:
            out |= {h for h in store.hosts() if h is not None}
        if getattr(s, "host", None) is not None:
            out.add(s.host)
    return out


def _disk_runs(sources, host) -> tuple:
    """(recorded, named): ``{(source number, label): {metric: Run}}`` of
    the compared disk series of ``host``, split by how they are labelled."""
    recorded: dict = {}
    named: dict = {}
    for i, s in enumerate(sources or ()):
        store = getattr(s, "store", None)
        if not store:
            continue
        for key, run in store.runs.items():
            h, section, device, metric = key
            if section != DISK_SECTION or metric not in COMPARED or (h if h is not None else s.host) != host:
                continue
            side = recorded if is_recorded_label(device) else named
            side.setdefault((i, device), {})[metric] = run
    return recorded, named


def paired_by_values(sources, host) -> dict:
    """``{"devM-N": DiskName}`` of the recorded disks of ``host`` that one
    named disk of another source (a ``sar -d -p`` text) matches value for
    value; a disk that matches several, or whose match matches another
    recorded disk too, is left unnamed.  Read from the runs' arrays: a
    host's hundreds of disks over a one-second day cost a few of their
    series at a time, never all of them."""
    recorded, named = _disk_runs(sources, host)
    if not recorded or not named:
        return {}
    matches: dict = {}
    shared = _SharedTimes()
    for (i, dev), mine in recorded.items():
        own = {label for (j, label) in named if j == i}
        for (j, label), other in named.items():
            if j == i or label in own or not _could_agree(mine, other, shared):
                continue
            common = _agreeing_samples(mine, other, shared)
            if common:
                matches.setdefault(dev, {}).setdefault(label, (sources[j].path, common))
    claimed: dict = {}
    for dev, labels in matches.items():
        for label in labels:
            claimed.setdefault(label, set()).add(dev)
    out = {}
    for dev, labels in matches.items():
        if len(labels) != 1:
            continue
        (label, (path, common)), = labels.items()
        if claimed[label] == {dev}:
            out[dev] = DiskName(label, f"{path} (the same values at {common} sample(s))", "sar text")
    return out


def _agree(a, b):
    """Do values read exactly (or as printed) and values sar printed agree
    to its two decimals?  Element-wise."""
    tolerance = PRINTED_HALF_UNIT + 1e-9 * np.maximum(np.abs(a), np.abs(b))
    with np.errstate(invalid="ignore"):
        return np.abs(a - b) <= tolerance


#: Samples compared first: most disks differ at one of them already.
PROBES = 16


class _SharedTimes:
    """The common samples of two runs, worked out once for every pair of
    time arrays (the series of one sa record or text section share theirs)."""

    def __init__(self):
        self._found: dict = {}

    def common(self, a_stamps, b_stamps, head: int | None = None) -> tuple:
        """(positions in a, positions in b) of the times both hold, the
        first position of each (as the store gives a series)."""
        key = (id(a_stamps), id(b_stamps), head)
        found = self._found.get(key)
        if found is None or found[0] is not a_stamps or found[1] is not b_stamps:
            if head is not None:
                a_part, b_part = a_stamps[:head], b_stamps[:head]
            else:
                a_part, b_part = a_stamps, b_stamps
            _, ia, ib = np.intersect1d(a_part, b_part, return_indices=True)
            found = self._found[key] = (a_stamps, b_stamps, ia, ib)
        return found[2], found[3]


def _could_agree(left: dict, right: dict, shared: _SharedTimes) -> bool:
    """A quick look at tps at the first common samples: False when the two
    disks already differ there."""
    a, b = left.get("tps"), right.get("tps")
    if a is None or b is None:
        return False
    ia, ib = shared.common(a.stamps, b.stamps, head=PROBES * 4)
    if not len(ia):
        return True               # no common time near the start: the full comparison decides
    ia, ib = ia[:PROBES], ib[:PROBES]
    return bool(_agree(a.values[ia].astype(float), b.values[ib].astype(float)).all())


def _agreeing_samples(left: dict, right: dict, shared: _SharedTimes) -> int:
    """How many common samples the two disks share when every compared
    value agrees to sar's two decimals at each of them and some are not
    zero; 0 when they disagree anywhere, share no time or only zeros."""
    metrics = sorted(set(left) & set(right), key=lambda m: m != "tps")
    if not metrics or metrics[0] != "tps" or len(metrics) < 2:
        return 0
    busy, count = False, None
    for metric in metrics:
        a, b = left[metric], right[metric]
        ia, ib = shared.common(a.stamps, b.stamps)
        av, bv = a.values[ia].astype(float), b.values[ib].astype(float)
        # a time the writer recorded nothing for (NaN) on both sides is no sample
        recorded = ~(np.isnan(av) & np.isnan(bv))
        av, bv = av[recorded], bv[recorded]
        count = len(av) if count is None else count
        if not len(av) or len(av) != count or not _agree(av, bv).all():
            return 0
        busy = busy or bool((av != 0).any())
    return count if busy else 0
