"""Older sa formats against what the sysstat that wrote them printed.

* 0x2169 (sysstat 6.1-7.0, RHEL 5) against the ``sadf -x`` that sysstat
  7.0.2 wrote from the same capture (DTD 1.0, comma decimals, UTC times);
* every corpus file: no percentage is ever negative.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET

import pandas as pd
import pytest

from sarsleuth.errors import InputError
from sarsleuth.inputs.parsers import sniff_bytes
from sarsleuth.inputs.parsers.base import ParseOptions
from sarsleuth.inputs.parsers.sa.parser import SaBinaryParser

from .test_sa_binary import SECTION_BY_FIRST_METRIC

RHEL5 = "pcp-rhel5-sa20-0x2169"


def parse(path):
    return SaBinaryParser.parse(path, ParseOptions())


def _num(text: str) -> float:
    return float(text.replace(",", "."))


#: XML element/attribute -> (section, metric, scale applied to our value).
PLAIN = {"processes": {"proc": ("tasks", "proc/s")}, "context-switch": {"cswch": ("tasks", "cswch/s")},
         "swap-pages": {"pswpin": ("swapping", "pswpin/s"), "pswpout": ("swapping", "pswpout/s")},
         "paging": {"pgpgin": ("paging", "pgpgin/s"), "pgpgout": ("paging", "pgpgout/s"),
                    "fault": ("paging", "fault/s"), "majflt": ("paging", "majflt/s")},
         "io-reads": {"rtps": ("io", "rtps"), "bread": ("io", "bread/s")},
         "io-writes": {"wtps": ("io", "wtps"), "bwrtn": ("io", "bwrtn/s")},
         "net-sock": {k: ("net-sock", k) for k in ("totsck", "tcpsck", "udpsck", "rawsck", "ip-frag")},
         "queue": {k: ("queue", k) for k in ("runq-sz", "plist-sz", "ldavg-1", "ldavg-5", "ldavg-15")},
         "net-nfs": {k: ("net-nfs", k + "/s") for k in ("call", "retrans", "read", "write", "access", "getatt")},
         "net-nfsd": {k: ("net-nfsd", k + "/s") for k in ("scall", "badcall", "packet", "udp", "tcp", "hit", "miss",
                                                          "sread", "swrite", "saccess", "sgetatt")}}
CPU = {"user": "%usr", "nice": "%nice", "system": "%sys", "iowait": "%iowait", "steal": "%steal", "idle": "%idle"}
MEMORY = {"memfree": ("memory", "kbmemfree"), "memused": ("memory", "kbmemused"),
          "memused-percent": ("memory", "%memused"), "buffers": ("memory", "kbbuffers"),
          "cached": ("memory", "kbcached"), "frmpg": ("memory", "frmpg/s"), "bufpg": ("memory", "bufpg/s"),
          "campg": ("memory", "campg/s"), "swpfree": ("swap", "kbswpfree"), "swpused": ("swap", "kbswpused"),
          "swpused-percent": ("swap", "%swpused"), "swpcad": ("swap", "kbswpcad"),
          "dentunusd": ("file", "dentunusd"), "file-sz": ("file", "file-nr"), "inode-sz": ("file", "inode-nr")}
NET_DEV = {"rxpck": "rxpck/s", "txpck": "txpck/s", "rxbyt": "rxkB/s", "txbyt": "txkB/s", "rxcmp": "rxcmp/s",
           "txcmp": "txcmp/s", "rxmcst": "rxmcst/s"}
NET_EDEV = {k: k + "/s" for k in ("rxerr", "txerr", "coll", "rxdrop", "txdrop", "txcarr", "rxfram", "rxfifo",
                                  "txfifo")}


def load_sysstat7_xml(path) -> pd.DataFrame:
    """(timestamp UTC, section, device, metric, value) of a DTD 1.0 XML;
    byte rates (sar 7 printed bytes/s) are turned into kB/s."""
    rows = []
    for stamp_el in ET.parse(path).getroot().iter("timestamp"):
        stamp = pd.Timestamp(f"{stamp_el.get('date')} {stamp_el.get('time')}", tz="UTC")

        def add(section, device, metric, text, scale=1.0):
            rows.append((stamp, section, device, metric, _num(text) * scale))
        for el in stamp_el.iter():
            if el.tag in PLAIN:
                for attr, (section, metric) in PLAIN[el.tag].items():
                    if el.get(attr) is not None:
                        add(section, "", metric, el.get(attr))
            elif el.tag == "tps":
                add("io", "", "tps", el.text)
            elif el.tag == "cpu":
                for attr, metric in CPU.items():
                    add("cpu", el.get("number"), metric, el.get(attr))
            elif el.tag == "irq" and el.get("intr") == "sum":
                add("interrupts", "sum", "intr/s", el.get("value"))
            elif el.tag in MEMORY:
                add(*MEMORY[el.tag][:1], "", MEMORY[el.tag][1], el.text)
            elif el.tag == "net-device":
                for sub in el:
                    table = NET_DEV if sub.tag == "net-dev" else NET_EDEV
                    for attr, metric in table.items():
                        scale = 1 / 1024 if attr.endswith("byt") else 1.0
                        add(sub.tag, el.get("iface"), metric, sub.get(attr), scale)
            elif el.tag == "tty":
                for attr in ("rcvin", "xmtin", "framerr", "prtyerr", "brk", "ovrun"):
                    add("serial", el.get("line"), attr + "/s", el.get(attr))
    return pd.DataFrame(rows, columns=["timestamp", "section", "device", "metric", "value"])


@pytest.fixture(scope="module")
def rhel5(corpus):
    return parse(corpus / "sysstat" / "binary" / RHEL5)


def test_rhel5_file_is_sniffed_as_sa_not_as_a_log(corpus):
    head = (corpus / "sysstat" / "binary" / RHEL5).read_bytes()[:4096]
    assert sniff_bytes(head)[0] == "sa"


def test_rhel5_header(rhel5):
    assert rhel5.meta["format_magic"] == "0x2169"
    assert rhel5.host == "localhost.localdomain" and rhel5.meta["ncpu"] == 4
    assert rhel5.meta["kernel"] == "2.6.18-308.13.1.el5"
    assert rhel5.meta["restarts"] == 2
    restarts = rhel5.events[rhel5.events["kind"] == "sar-restart"]["timestamp"].dt.tz_convert("UTC")
    assert [t.strftime("%H:%M:%S") for t in restarts] == ["14:29:37", "15:09:29"]
    # what the file holds but is not turned into figures is named
    assert any("per-CPU interrupts" in w for w in rhel5.warnings)


def test_rhel5_agrees_with_the_xml_sysstat_7_wrote(corpus, rhel5):
    reference = load_sysstat7_xml(corpus / "sysstat" / "capture-xml" / f"{RHEL5}.sysdata1.0.xml")
    assert len(reference) > 1500
    ours = rhel5.metrics.copy()
    ours["timestamp"] = ours["timestamp"].dt.tz_convert("UTC")
    for col in ("section", "device", "metric"):
        ours[col] = ours[col].astype(str)
    merged = reference.merge(ours[["timestamp", "section", "device", "metric", "value"]],
                             on=["timestamp", "section", "device", "metric"], how="left", suffixes=("_xml", "_ours"))
    scale = merged["metric"].isin(["rxkB/s", "txkB/s"]).map({True: 1024.0, False: 1.0})
    diff = ((merged["value_ours"] - merged["value_xml"]) * scale).abs()
    good = diff <= 0.005 + 1e-6 * (merged["value_xml"] * scale).abs() + 1e-9
    ratio = float(good.mean())
    print(f"{RHEL5}: {ratio:.4%} of {len(merged)} XML values matched")
    assert ratio >= 0.995, merged[~good].head(20).to_string()
    # the figures the provenance quotes
    cpu_all = ours[(ours["section"] == "cpu") & (ours["device"] == "all") & (ours["metric"] == "%iowait")]
    at = cpu_all.set_index("timestamp")["value"]
    assert round(at[pd.Timestamp("2012-09-20 14:35:01", tz="UTC")], 2) == 11.04
    assert round(at[pd.Timestamp("2012-09-20 14:40:01", tz="UTC")], 2) == 14.31


def test_rhel5_truncated_keeps_the_records_before_the_cut(corpus, tmp_path):
    raw = (corpus / "sysstat" / "binary" / RHEL5).read_bytes()
    whole = parse(corpus / "sysstat" / "binary" / RHEL5)
    cut = tmp_path / "sa20"
    cut.write_bytes(raw[:len(raw) // 2])
    part = parse(cut)
    assert 0 < part.records < whole.records
    assert any("skipped" in w for w in part.warnings)


# --- every corpus file ------------------------------------------------------------------

def _corpus_binaries(corpus):
    return sorted(p for p in (corpus / "sysstat" / "binary").iterdir()
                  if p.is_file() and not p.name.endswith((".xml", ".out")))


def test_no_percentage_is_ever_negative(corpus):
    read = 0
    for path in _corpus_binaries(corpus):
        try:
            source = parse(path)
        except InputError:
            continue
        read += 1
        m = source.metrics
        pct = m[m["metric"].astype(str).str.startswith("%")]
        assert not (pct["value"] < 0).any(), (path.name, pct[pct["value"] < 0].head().to_string())
    assert read >= 15


# --- 0x2170 of sysstat 9.0.4 (RHEL 6.0-6.4) ---------------------------------------------

RHEL6 = "pcp-sysstat-9.0.4-0x2170"
#: Whole devices of that host (its partitions are sda1, sda2, sdb1).
RHEL6_WHOLE_DEVICES = ["sda", "sdb", "dev253-0", "dev253-1", "dev253-2", "dev253-3"]


@pytest.fixture(scope="module")
def rhel6(corpus):
    return parse(corpus / "sysstat" / "binary" / RHEL6)


def _wide(metrics, section):
    part = metrics[metrics["section"] == section]
    return part.pivot_table(index="timestamp", columns="metric", values="value", observed=True)


def test_rhel6_io_reads_and_writes_add_up_to_tps_in_every_record(rhel6):
    io = _wide(rhel6.metrics, "io")
    assert len(io) == rhel6.records - 1 == 35
    assert ((io["rtps"] + io["wtps"] - io["tps"]).abs() < 1e-9).all()
    assert (io["wtps"] > 0).any() and (io["bwrtn/s"] > 0).any()


def test_rhel6_disks_add_up_to_the_io_totals(rhel6):
    """sadc 9.0.4 counts whole devices for -b: the per-device figures
    (I/O count before the tick counters in 9.0.x) must add up to them."""
    m = rhel6.metrics
    disks = m[(m["section"] == "disk") & m["device"].astype(str).isin(RHEL6_WHOLE_DEVICES)]
    io = _wide(m, "io")
    for disk_metric, io_metric, factor in (("tps", "tps", 1), ("wkB/s", "bwrtn/s", 2), ("rkB/s", "bread/s", 2)):
        total = disks[disks["metric"] == disk_metric].groupby("timestamp")["value"].sum() * factor
        assert ((total - io[io_metric]).abs() < 1e-6).all(), disk_metric
    wide = disks.pivot_table(index=["timestamp", "device"], columns="metric", values="value", observed=True)
    assert wide["%util"].max() <= 100 and (wide["await"] >= 0).all()


def test_unused_disk_slots_are_not_shown(rhel6):
    devices = set(rhel6.metrics.loc[rhel6.metrics["section"] == "disk", "device"].astype(str))
    assert "dev0-0" not in devices
    assert {"sda", "sda1", "sdb", "sdb1", "dev253-0"} <= devices


# --- 0x1170 of Red Hat's sysstat 9.0.4 (RHEL 6.5-6.10) ---------------------------------------

RHEL65 = "pcp-sysstat-9.0.4-rh6.5-0x1170"


def test_rhel65_red_hat_format_reads_fully(corpus):
    path = corpus / "sysstat" / "binary" / RHEL65
    assert sniff_bytes(path.read_bytes()[:4096])[0] == "sa"
    source = parse(path)
    assert source.meta["format_magic"] == "0x1170" and source.meta["sysstat_version"] == "9.0.4"
    assert source.host == "vm14" and source.meta["kernel"] == "2.6.32-431.5.1.el6.x86_64"
    assert source.records == 36 and source.warnings == []
    sections = set(source.metrics["section"].astype(str))
    assert {"cpu", "tasks", "interrupts", "swapping", "paging", "io", "memory", "swap", "file", "queue", "disk",
            "net-dev", "net-edev", "net-nfs", "net-nfsd", "net-sock", "net-ip", "net-tcp", "net-udp",
            "net-ip6", "power-cpu"} <= sections
    m = source.metrics
    io = _wide(m, "io")
    assert len(io) == 35 and ((io["rtps"] + io["wtps"] - io["tps"]).abs() < 1e-9).all()
    whole = m[(m["section"] == "disk") & m["device"].astype(str).isin(["sda", "dev253-0", "dev253-1"])]
    total = whole[whole["metric"] == "tps"].groupby("timestamp")["value"].sum()
    assert ((total - io["tps"]).abs() < 1e-6).all()
    cpu = _wide(m[m["device"].astype(str) == "all"], "cpu")
    busy = cpu[["%usr", "%nice", "%sys", "%iowait", "%steal", "%irq", "%soft", "%idle"]].sum(axis=1)
    assert ((busy - 100).abs() < 0.01).all()
    # unused interface slots are not shown
    assert set(m.loc[m["section"] == "net-dev", "device"].astype(str)) == {"lo", "eth0"}


def test_no_corpus_binary_sniffs_as_a_text_log(corpus):
    for path in _corpus_binaries(corpus):
        kind, _score = sniff_bytes(path.read_bytes()[:65536])
        assert kind in ("sa", None), (path.name, kind)


def test_nul_bytes_before_any_log_line_never_sniff_as_a_log():
    dmesg = b"[    0.000000] Linux version 2.6.18-308.el5 (gcc version 4.1.2)\n" * 40
    assert sniff_bytes(dmesg)[0] == "dmesg"
    assert sniff_bytes(b"Q([P\0\0\0\0" + dmesg)[0] is None
    # genuine lines first, NUL padding after them (a crash): still the log
    assert sniff_bytes(dmesg + b"\0" * 512)[0] == "dmesg"


# --- the big-endian file against sysstat's own rendering -------------------------------------

#: sar's rendering of data-ppc-11.7.2: the header's date, then each record's
#: time of day (the second record is after midnight).
PPC_DAYS = {"19:43:21": "2017-04-27", "00:03:37": "2017-04-28"}
DEVICE_HEADS = {"CPU", "IFACE", "DEV", "INTR", "TTY"}


def load_sar_rendering(path) -> pd.DataFrame:
    """(timestamp UTC, section, device, metric, value) of every section of a
    ``sar -A`` text rendering (24-hour clock) whose records are in PPC_DAYS."""
    rows = []
    for block in path.read_text().split("\n\n"):
        lines = block.splitlines()
        if len(lines) < 2:
            continue
        head = lines[0].split()[1:]
        has_device = bool(head) and head[0] in DEVICE_HEADS
        metrics = head[1:] if has_device else head
        if not metrics or metrics[0] not in SECTION_BY_FIRST_METRIC:
            continue
        section = "disk" if head[0] == "DEV" else SECTION_BY_FIRST_METRIC[metrics[0]]
        for line in lines[1:]:
            cells = line.split()
            if not cells or cells[0] not in PPC_DAYS:
                continue
            stamp = pd.Timestamp(f"{PPC_DAYS[cells[0]]} {cells[0]}", tz="UTC")
            device = cells[1] if has_device else ""
            for metric, value in zip(metrics, cells[2:] if has_device else cells[1:]):
                rows.append((stamp, section, device, "intr/s" if metric == "CPU*" else metric, float(value)))
    return pd.DataFrame(rows, columns=["timestamp", "section", "device", "metric", "value"])


def test_big_endian_file_agrees_with_the_rendering_of_the_sysstat_that_wrote_it(corpus):
    source = parse(corpus / "sysstat" / "binary" / "data-ppc-11.7.2")
    reference = load_sar_rendering(corpus / "sysstat" / "expected" / "expected.data-ppc-11.7.2")
    assert len(reference) > 300
    ours = source.metrics.copy()
    ours["timestamp"] = ours["timestamp"].dt.tz_convert("UTC")
    for col in ("section", "device", "metric"):
        ours[col] = ours[col].astype(str)
    assert set(ours["timestamp"].dt.strftime("%Y-%m-%d %H:%M:%S")) == {"2017-04-27 19:43:21",
                                                                      "2017-04-28 00:03:37"}
    emitted = set(zip(ours["section"], ours["metric"]))
    # figures of fields this writer (sysstat 11.5.5) did not have, which the
    # rendering sysstat prints as 0.00; and kbmemused/%memused, whose formula
    # the rendering sysstat (12.7) changed after the sadf 12.6.1 that the
    # values test follows
    newer = reference[[(sec, m) not in emitted for sec, m in zip(reference["section"], reference["metric"])]]
    assert (newer["value"] == 0).all() and set(newer["metric"]) <= {"pgprom/s", "pgdem/s", "dtps", "bdscd/s",
                                                                    "kbshmem", "kbhugrsvd", "kbhugsurp",
                                                                    "blg_len"}
    reference = reference.drop(newer.index)
    reference = reference[~reference["metric"].isin(["kbmemused", "%memused"])]
    # CPU "all": the rendering sysstat sums the CPUs, the writer printed its
    # own stored line, as sarsleuth does (see test_sa_binary.by_a_later_rule)
    reference = reference[~((reference["section"] == "cpu") & (reference["device"] == "all"))]
    merged = reference.merge(ours, on=["timestamp", "section", "device", "metric"], how="left",
                             suffixes=("_sar", "_ours"))
    good = (merged["value_ours"] - merged["value_sar"]).abs() <= 0.005 + 1e-6 * merged["value_sar"].abs()
    ratio = float(good.mean())
    print(f"data-ppc-11.7.2: {ratio:.4%} of {len(merged)} sar values matched")
    assert ratio >= 0.995, merged[~good].head(20).to_string()


def test_full_duplex_utilisation_is_the_larger_direction(corpus):
    """vnet* taps at 10 Mb/s full duplex (sysstat's C_DUPLEX_FULL is 2):
    %ifutil = max(rx, tx) / speed, as the sadf reference prints it."""
    m = parse(corpus / "sysstat" / "binary" / "pcp-sysstat-11.2.0-0x2173-duplex").metrics
    net = m[m["section"] == "net-dev"].pivot_table(index=["timestamp", "device"], columns="metric",
                                                   values="value", observed=True)
    vnet = net[net.index.get_level_values("device").astype(str).str.startswith("vnet")]
    busy = vnet[(vnet["rxkB/s"] > 0.1) & (vnet["txkB/s"] > 0.1)]
    assert len(busy)
    larger = busy[["rxkB/s", "txkB/s"]].max(axis=1) * 1024 * 8 / 10e6 * 100
    assert ((busy["%ifutil"] - larger).abs() < 1e-6).all()
    assert round(net["%ifutil"].max(), 2) == 48.68
