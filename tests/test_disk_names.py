"""Disks sar labels by their numbers (``dev253-0``), named beside the label
from what the case holds: a bundle's /proc/partitions, /proc/diskstats,
lsblk and dmsetup info (written as the kernel, util-linux and dmsetup write
them, and from a sosreport made here by the real sos), or a ``sar -d -p``
text of the same sa file (tests/disks, recorded by sadc here)."""
from __future__ import annotations

import os
import shutil
import subprocess
import io
from pathlib import Path
from types import SimpleNamespace

import pytest

from .conftest import make_sosreport
from sarsleuth.inputs.bundles import readers
from sarsleuth.inputs.bundles.expand import expand
from sarsleuth.inputs.bundles.facts import HostFacts
from sarsleuth.inputs.bundles.layout import fact_of
from sarsleuth.metric_store.disk_names import disk_names, labelled, paired_by_values

DISKS = Path(__file__).resolve().parent / "disks"

# linux block/genhd.c show_partition: "%4d  %7d %10llu %pg\n" after the header
PROC_PARTITIONS = """\
major minor  #blocks  name

   8        0  104857600 sda
   8        1    1048576 sda1
   8        2  103808000 sda2
 253        0   73400320 dm-0
 253        1    8257536 dm-1
 259        0  500107608 nvme0n1
"""

# linux block/genhd.c diskstats_show: "%4d %7d %pg " then the counters
PROC_DISKSTATS = """\
   8       0 sda 48260 2131 4010218 20640 153240 97032 5260488 96324 0 72180 121044 0 0 0 0 2094 4078
   8       1 sda1 1242 0 79018 410 4 0 8 1 0 380 411 0 0 0 0 0 0
 253       0 dm-0 47010 0 3926514 21452 250264 0 5257752 315120 0 72700 336572 0 0 0 0 0 0
 253       1 dm-1 95 0 4440 20 0 0 0 0 0 24 20 0 0 0 0 0 0
 259       0 nvme0n1 301 0 14034 61 12 0 64 3 0 92 64 0 0 0 0 0 0
"""

# util-linux lsblk, default columns; the tree drawn in UTF-8
LSBLK_UTF8 = """\
NAME          MAJ:MIN RM   SIZE RO TYPE MOUNTPOINTS
sda             8:0    0   100G  0 disk 
├─sda1          8:1    0     1G  0 part /boot
└─sda2          8:2    0    99G  0 part 
  ├─rhel-root 253:0    0    70G  0 lvm  /
  └─rhel-swap 253:1    0   7.9G  0 lvm  [SWAP]
nvme0n1       259:0    0 476.9G  0 disk /data
"""

# the same in the C locale (sos runs commands so): the tree drawn in ASCII,
# and an lsblk before 2.37 heads the last column MOUNTPOINT
LSBLK_ASCII = """\
NAME          MAJ:MIN RM   SIZE RO TYPE MOUNTPOINT
sda             8:0    0   100G  0 disk 
|-sda1          8:1    0     1G  0 part /boot
`-sda2          8:2    0    99G  0 part 
  |-rhel-root 253:0    0    70G  0 lvm  /
  `-rhel-swap 253:1    0   7.9G  0 lvm  [SWAP]
nvme0n1       259:0    0 476.9G  0 disk /data
"""

# lsblk -f -a -l, which sos also runs: no MAJ:MIN column
LSBLK_F = """\
NAME      FSTYPE      FSVER    LABEL UUID                                   FSAVAIL FSUSE% MOUNTPOINTS
sda
sda1      xfs                        6c2d9bd4-5d4a-4a1e-9a57-0c6f3d2b7f11     812M    20% /boot
rhel-root xfs                        0e1a3c57-8e1b-4e0f-b9e8-7a2f9d1c4e22    61.2G    12% /
"""

# dmsetup info -c: its default columns
DMSETUP_INFO_C = """\
Name             Maj Min Stat Open Targ Event  UUID                                                                
rhel-swap        253   1 L--w    2    1      0 LVM-Qx3v0Kf1nL8cYb2dVw7pZsT4mR9aHe6uJ0iG5oXk1yB3cN8qD2wE7rF4tS6vA9zL 
rhel-root        253   0 L--w    1    1      0 LVM-Qx3v0Kf1nL8cYb2dVw7pZsT4mR9aHe6ujK2fP7sW1xQ4zT9mB3nV6cY8gH5dL0aE 
"""


def _read(rel: str, text: str, facts: HostFacts) -> None:
    entry, m = fact_of(rel)
    assert entry is not None, rel
    readers.READERS[entry["reader"]](text, "bundle!" + rel, m, facts)


def test_partitions_name_disks_by_their_numbers():
    facts = HostFacts(bundle="b")
    _read("proc/partitions", PROC_PARTITIONS, facts)
    names = facts.disk_names()
    assert {dev: n for dev, (n, _w) in names.items()} == {
        "dev8-0": "sda", "dev8-1": "sda1", "dev8-2": "sda2", "dev253-0": "dm-0", "dev253-1": "dm-1",
        "dev259-0": "nvme0n1"}
    assert names["dev253-0"][1] == "bundle!proc/partitions:6"
    # a Smart Array disk: the kernel writes its slash as "!", sar prints it back
    _read("proc/partitions", " 104        0   71652960 cciss!c0d0\n", facts)
    assert facts.disk_names()["dev104-0"][0] == "cciss/c0d0"


@pytest.mark.parametrize("lsblk_text", [LSBLK_UTF8, LSBLK_ASCII], ids=["utf8-tree", "ascii-tree"])
def test_lsblk_names_a_mapped_device_by_its_mapper_name(lsblk_text):
    facts = HostFacts(bundle="b")
    _read("proc/partitions", PROC_PARTITIONS, facts)
    _read("sos_commands/block/lsblk", lsblk_text, facts)
    names = facts.disk_names()
    assert names["dev253-0"] == ("rhel-root", "bundle!sos_commands/block/lsblk:5")
    assert names["dev253-1"][0] == "rhel-swap"
    assert names["dev8-2"] == ("sda2", "bundle!proc/partitions:5")     # the kernel's name, as lsblk's
    assert names["dev259-0"][0] == "nvme0n1"


def test_dmsetup_info_names_mapped_devices_and_lsblk_f_gives_nothing():
    facts = HostFacts(bundle="b")
    _read("sos_commands/block/lsblk_-f_-a_-l", LSBLK_F, facts)
    assert facts.disk_names() == {}
    _read("proc/diskstats", PROC_DISKSTATS, facts)
    _read("sos_commands/devicemapper/dmsetup_info_-c", DMSETUP_INFO_C, facts)
    names = facts.disk_names()
    assert names["dev253-0"] == ("rhel-root", "bundle!sos_commands/devicemapper/dmsetup_info_-c:3")
    assert names["dev253-1"] == ("rhel-swap", "bundle!sos_commands/devicemapper/dmsetup_info_-c:2")
    assert names["dev8-1"] == ("sda1", "bundle!proc/diskstats:2")


def test_host_facts_show_the_disks_sar_cannot_name():
    facts = HostFacts(bundle="b", hostname="db01")
    _read("proc/partitions", PROC_PARTITIONS, facts)
    _read("sos_commands/devicemapper/dmsetup_info_-c", DMSETUP_INFO_C, facts)
    # sar names sda itself (sysstat's device table): only the others are worth the line
    assert facts.summary().endswith(", disks dev253-0 (rhel-root), dev253-1 (rhel-swap), dev259-0 (nvme0n1) (from b)")
    d = facts.to_dict()
    assert d["disk_names"]["dev8-0"] == "sda" and d["disk_names"]["dev253-0"] == "rhel-root"
    assert d["disk_names_from"]["dev8-0"] == "bundle!proc/partitions:3"


def _dm_major() -> int | None:
    with open("/proc/devices") as fh:
        for line in fh:
            fields = line.split()
            if len(fields) == 2 and fields[1] == "device-mapper":
                return int(fields[0])
    return None


def test_a_sosreport_made_here_names_this_hosts_disks(tmp_path):
    archive = make_sosreport(tmp_path, "block,devicemapper")
    out = expand([archive])
    try:
        (facts,) = out.bundles
        names = {dev: n for dev, (n, _w) in facts.disk_names().items()}
    finally:
        out.cleanup()
    dm = _dm_major()
    with open("/proc/partitions") as fh:
        listed = [line.split() for line in fh if line.split() and line.split()[0].isdigit()]
    assert listed, "this machine lists no block device"
    for major, minor, _blocks, name in listed:
        if int(major) != dm:            # a mapped device goes by its mapper name
            assert names[f"dev{major}-{minor}"] == name


# ---------------------------------------------------------------- sar -d -p

def _case(*paths):
    import sarsleuth
    return sarsleuth.load([str(p) for p in paths])


def test_sar_d_p_of_the_same_file_names_the_recorded_disk():
    case = _case(DISKS / "vm.sa", DISKS / "vm-sar-d-p.txt")
    names = disk_names(case.sources, case.hosts)
    assert list(names) == ["vm"] and list(names["vm"]) == ["dev254-0"]
    found = names["vm"]["dev254-0"]
    assert (found.name, found.how) == ("vda", "sar text")
    assert found.where.endswith("vm-sar-d-p.txt (the same values at 15 sample(s))")
    assert labelled("dev254-0", names["vm"]) == "dev254-0 (vda)"
    # the data stays as recorded
    wide = case.sar("disk", device="dev254-0")
    assert wide["tps"].iloc[1] == pytest.approx(77.0)
    assert "dev254-0" in set(case.metrics["device"])


def test_the_sa_file_alone_names_nothing():
    case = _case(DISKS / "vm.sa")
    assert disk_names(case.sources, case.hosts) == {}
    assert labelled("dev254-0", {}) == "dev254-0"


def _relabelled(source, mapping: dict, path: str):
    """A source holding ``source``'s disk series under other labels."""
    from sarsleuth.metric_store import MetricStore
    runs = {}
    for key, run in source.store.runs.items():
        if key[1] == "disk":
            for new in mapping.get(key[2], ()):
                runs[(key[0], key[1], new, key[3])] = run
    return SimpleNamespace(store=MetricStore(runs), host=source.host, path=path)


def test_a_pairing_that_is_not_one_to_one_is_refused():
    case = _case(DISKS / "vm.sa", DISKS / "vm-sar-d-p.txt")
    sa, text = case.sources
    assert paired_by_values([sa, text], "vm")["dev254-0"].name == "vda"
    # two named disks with the same values: which one it is cannot be said
    twins = _relabelled(text, {"vda": ["vda", "vdb"]}, "twins.txt")
    assert paired_by_values([sa, twins], "vm") == {}
    # two recorded disks matching one name: the same
    doubled = _relabelled(sa, {"dev254-0": ["dev254-0", "dev254-16"]}, "doubled.sa")
    assert paired_by_values([doubled, text], "vm") == {}


def test_values_that_differ_at_one_sample_or_are_all_zero_pair_nothing():
    import numpy as np

    from sarsleuth.metric_store import MetricStore, Run
    case = _case(DISKS / "vm.sa", DISKS / "vm-sar-d-p.txt")
    sa, text = case.sources
    runs = dict(text.store.runs)
    key = ("vm", "disk", "vda", "wkB/s")
    values = runs[key].values.astype(np.float64).copy()
    values[7] += 0.01                      # one sample off by one printed unit
    runs[key] = Run(runs[key].stamps, values, runs[key].tz, runs[key].lines)
    off = SimpleNamespace(store=MetricStore(runs), host="vm", path="off.txt")
    assert paired_by_values([sa, off], "vm") == {}
    zeros = {k: Run(r.stamps, np.zeros(len(r.values)), r.tz) for k, r in text.store.runs.items()}
    idle_sa = {k: Run(r.stamps, np.zeros(len(r.values)), r.tz) for k, r in sa.store.runs.items()}
    assert paired_by_values([SimpleNamespace(store=MetricStore(idle_sa), host="vm", path="a"),
                             SimpleNamespace(store=MetricStore(zeros), host="vm", path="b")], "vm") == {}


def test_plots_show_the_name_beside_the_label():
    case = _case(DISKS / "vm.sa", DISKS / "vm-sar-d-p.txt")
    ax = case.plot("disk", "%util", device="dev254-0")
    assert ax.get_title() == "disk: %util [dev254-0 (vda)]"
    assert ax.get_lines()[0].get_label() == "%util (dev254-0 (vda))"


# ------------------------------------------------------ the busiest disk

F23 = "sar-text/sarstats--f23_sar07"


def _sosreport_with(tmp_path, corpus, partitions: str) -> Path:
    """An extracted sosreport of the Fedora 23 host of the corpus's sar text
    (its sar -A text where sos keeps it) with the given /proc/partitions."""
    root = tmp_path / "sosreport-fedora-23-2016-04-07-abcdef"
    (root / "sos_commands" / "sar").mkdir(parents=True)
    (root / "sos_commands" / "host").mkdir(parents=True)
    (root / "proc").mkdir()
    shutil.copy(corpus / F23, root / "sos_commands" / "sar" / "sar07")
    (root / "sos_commands" / "host" / "hostname").write_text("fedora-23-2016-03-24120454.localdomain\n")
    (root / "proc" / "partitions").write_text(partitions)
    return root


def _iowait(case):
    (f,) = [f for f in case.findings if f.detector == "iowait-spike"]
    return f


def test_iowait_spike_names_the_busiest_disk_beside_its_label(tmp_path, corpus):
    root = _sosreport_with(tmp_path, corpus, "major minor  #blocks  name\n\n"
                                             " 252        0   20971520 vda\n 252        1     512000 vda1\n")
    case = _case(root)
    f = _iowait(case)
    assert f.title == "I/O wait spiked to 88.90 % (baseline 0.02 %)"      # unchanged
    # from 15:18:02 to 15:23:01 sar printed %util over 100 for that disk (110.27 on line 424): counter
    # anomalies, said once with the row, and never its peak; its busiest valid sample is 15:17:01's
    lines = (corpus / F23).read_text().splitlines()
    assert lines[423].split()[-1] == "110.27"
    (said,) = [w for w in case.warnings if "counter anomal" in w]
    assert "disk dev252-0 at 2016-04-07 15:18:02: %util 110.27 (outside 0-100)" in said
    assert "line 424: 15:18:02 dev252-0 204.08" in said and "5 more such value(s)" in said
    row = lines[lines.index(next(ln for ln in lines if ln.startswith("15:17:01") and "dev252-0" in ln))]
    assert row.split() == ["15:17:01", "dev252-0", "85.77", "9.52", "117607.48", "1371.38", "28.39", "328.88",
                           "5.10", "43.70"]
    assert f.metrics["busiest_disk_util_pct"] == pytest.approx(43.70)
    assert f.metrics["busiest_disk_await_ms"] == pytest.approx(328.88)
    assert "busiest_disk_r_await_ms" not in f.metrics          # this sar printed no r_await
    assert f.refs["busiest_disk"] == "dev252-0" and f.refs["busiest_disk_name"] == "vda"
    assert f.evidence[1].text == row.strip()
    assert ("The busiest disk over the episode was dev252-0 (vda), %util 43.70 at 15:17:01, await 328.88 ms "
            "(named by partitions:3)") in f.explanation
    # its busiest valid row: busy 43.70 % of the minute with 65 requests in flight while busy, a saturated part
    (disk,) = [x for x in case.findings if x.detector == "disk-saturation"]
    assert disk.title.startswith("Disk dev252-0 (vda) saturated: busy 43.70 % of a 1-minute sample with 64.9")
    d = case.to_json()
    assert d["hosts"][0]["disk_names"] == {"dev252-0": "vda", "dev252-1": "vda1"}
    incident = next(i for i in case.incidents if f in i.findings)
    from sarsleuth.render.plots import incident_figure
    fig = incident_figure(case, incident)
    assert "disk dev252-0 (vda)" in [ax.get_title(loc="right") for ax in fig.axes]


def test_host_facts_lines_name_the_disks_in_every_output(tmp_path, corpus):
    from sarsleuth.render.formats import markdown, text
    from sarsleuth.render.formats.html import build_html
    root = _sosreport_with(tmp_path, corpus, "major minor  #blocks  name\n\n 252        0   20971520 vda\n")
    case = _case(root)
    out = io.StringIO()
    text.write_case(case, out)
    assert "disks dev252-0 (vda)" in out.getvalue()
    assert markdown.md_escape("disks dev252-0 (vda)") in markdown.render_markdown(case)
    assert "disks dev252-0 (vda)" in build_html(case, plots=False)


def test_busiest_disk_values_are_those_sar_printed_from_the_sa_file(samples):
    sar = shutil.which("sar")
    if sar is None:
        pytest.skip("sysstat's sar is not installed")
    sa06 = samples / "nginx-proxy-oom" / "sa06"
    case = _case(sa06)
    f = _iowait(case)
    assert f.refs["busiest_disk"] == "sda" and "busiest_disk_name" not in f.refs
    # sar -t: the times the file records (the host's clock)
    printed = subprocess.run([sar, "-d", "-t", "-f", str(sa06)], capture_output=True, text=True, check=True,
                             env={**os.environ, "LC_ALL": "C"}).stdout.splitlines()
    head = next(line.split() for line in printed if "DEV" in line.split())
    at = f.refs["busiest_disk_peak_time"][11:19]
    (row,) = [line.split() for line in printed if line.split()[:2] == [at, "sda"]]
    columns = dict(zip(head[1:], row[1:]))
    assert f"{f.metrics['busiest_disk_util_pct']:.2f}" == columns["%util"] == "96.00"
    assert f"{f.metrics['busiest_disk_await_ms']:.2f}" == columns["await"] == "56.54"
    # the earliest of the episode's highest %util rows
    assert at == "15:02:03"
    assert f.evidence[1].text == "busiest disk sda, %util 96.00 at 15:02:03, await 56.54 ms"


def test_no_disk_recorded_no_busiest_disk():
    import pandas as pd

    from sarsleuth.detectors.cpu_io import IowaitSpike
    from sarsleuth.detectors.context import Context
    times = pd.date_range("2026-01-01 10:00", periods=120, freq="10s", tz="UTC")
    iowait = [0.5] * 60 + [55.0] * 30 + [0.5] * 30
    long = pd.DataFrame({"timestamp": times, "host": "h", "section": "cpu", "device": "all",
                         "metric": "%iowait", "value": iowait})
    (f,) = IowaitSpike().run(Context(metrics=long, events=None, reports=[], sources=[]))
    assert not any(k.startswith("busiest_disk") for k in list(f.metrics) + list(f.refs))
    assert len(f.evidence) == 1


def test_a_fleets_host_line_names_the_disks_its_bundle_names():
    from sarsleuth.fleet.model import HostResult
    from sarsleuth.render.fleet_html import host_facts_line
    facts = HostFacts(bundle="b", hostname="db01", kernel="4.18.0-513.el8.x86_64")
    _read("proc/partitions", PROC_PARTITIONS, facts)
    _read("sos_commands/block/lsblk", LSBLK_ASCII, facts)
    host = HostResult(host="db01", files=[], facts={"kernel": facts.kernel}, host_facts=facts.to_dict())
    assert host_facts_line(host) == ("kernel 4.18.0-513.el8.x86_64, disks dev253-0 (rhel-root), "
                                     "dev253-1 (rhel-swap), dev259-0 (nvme0n1)")


def test_the_busiest_disk_of_an_sa_file_and_its_sar_d_p_text_is_one_disk():
    from sarsleuth.detectors.context import Context
    from sarsleuth.detectors.cpu_io import _disk_evidence, busiest_disk
    case = _case(DISKS / "vm.sa", DISKS / "vm-sar-d-p.txt")
    ctx = Context(metrics=case.store, events=None, reports=[], sources=case.sources, host_facts=case.hosts)
    names = disk_names(case.sources, case.hosts)["vm"]
    start, end = case.store.span()
    dev, when, figures = busiest_disk(ctx, "vm", start, end, names)
    assert dev == "dev254-0"                 # vda is the same disk, counted once under its recorded label
    # what sar -d printed from the same file at that time
    printed = {line.split()[0]: line.split() for line in (DISKS / "vm-sar-d.txt").read_text().splitlines()
               if line.split()[1:2] == ["vda"]}
    row = printed[when.strftime("%H:%M:%S")]
    assert row[0] == "07:00:27"
    assert f"{figures['%util']:.2f}" == row[9] == "2.80" and f"{figures['await']:.2f}" == row[8] == "0.10"
    ev, said = _disk_evidence(ctx, "vm", dev, when, figures, names)
    # the row sar -d -p printed for it, verbatim
    assert (ev.line, ev.text) == (16, "07:00:27       768.00     64.00   3844.00   3104.00      9.13      0.10      "
                                      "0.10      2.80 vda")
    assert said.startswith("dev254-0 (vda), %util 2.80 at 07:00:27, await 0.10 ms (named by vm-sar-d-p.txt")
