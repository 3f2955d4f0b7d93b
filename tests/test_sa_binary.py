"""The native sa reader against sysstat's own renderings of real files.

Every binary file of the corpus that has a ``sadf -d -- -A`` reference must
agree with it value by value (timestamp, device, metric); older formats are
checked against their ``sar -A`` text rendering; damaged files must give a
clean error or warning, never a crash.
"""
from __future__ import annotations

import math
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sarsleuth.errors import InputError
from sarsleuth.parsers import sniff_bytes
from sarsleuth.parsers.base import ParseOptions
from sarsleuth.parsers.sa_binary import SaBinaryParser

# --- sadf -d reference files ------------------------------------------------------------

#: First metric of each sadf -d header -> sarsleuth section.
SECTION_BY_FIRST_METRIC = {
    "%usr": "cpu", "proc/s": "tasks", "CPU*": "interrupts", "pswpin/s": "swapping", "pgpgin/s": "paging",
    "tps": "io", "kbmemfree": "memory", "kbswpfree": "swap", "kbhugfree": "hugepages", "dentunusd": "file",
    "runq-sz": "queue", "rcvin/s": "serial", "call/s": "net-nfs", "scall/s": "net-nfsd", "totsck": "net-sock",
    "irec/s": "net-ip", "ihdrerr/s": "net-eip", "imsg/s": "net-icmp", "ierr/s": "net-eicmp",
    "active/s": "net-tcp", "atmptf/s": "net-etcp", "idgm/s": "net-udp", "tcp6sck": "net-sock6",
    "irec6/s": "net-ip6", "ihdrer6/s": "net-eip6", "imsg6/s": "net-icmp6", "ierr6/s": "net-eicmp6",
    "idgm6/s": "net-udp6", "total/s": "softnet", "MHz": "power-cpu", "rpm": "power-fan", "degC": "power-temp",
    "inV": "power-in", "MBfsfree": "filesystem", "fch_rxf/s": "fchost", "%scpu-10": "psi-cpu",
    "%sio-10": "psi-io", "%smem-10": "psi-mem",
}
#: Columns that name the device rather than hold a value.
DEVICE_COLUMNS = {"CPU", "INTR", "DEV", "IFACE", "TTY", "FAN", "TEMP", "IN", "FILESYSTEM", "FCHOST"}
#: Text columns (or columns sarsleuth does not emit as numbers).
SKIPPED_COLUMNS = {"DEVICE", "manufact", "product", "BUS", "idvendor", "idprod", "maxpower"}


def load_sadf_d(path: Path) -> pd.DataFrame:
    """Long table (timestamp UTC, section, device, metric, value) from a
    ``sadf -d`` CSV."""
    rows = []
    header = None
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            header = line[2:].split(";")
            continue
        fields = line.split(";")
        if header is None or fields[1] == "-1" or len(fields) != len(header):
            continue          # restart/comment lines
        columns = header[3:]
        values = fields[3:]
        names = [c for c in columns if c not in DEVICE_COLUMNS and c not in SKIPPED_COLUMNS]
        if not names or names[0] not in SECTION_BY_FIRST_METRIC:
            continue
        section = "disk" if "DEV" in columns else SECTION_BY_FIRST_METRIC[names[0]]
        device = ""
        for col, val in zip(columns, values):
            if col in DEVICE_COLUMNS:
                device = "all" if val == "-1" else val
        stamp = pd.Timestamp(fields[2].replace(" UTC", ""), tz="UTC")
        for col, val in zip(columns, values):
            if col in DEVICE_COLUMNS or col in SKIPPED_COLUMNS:
                continue
            metric = "intr/s" if col == "CPU*" else col
            rows.append((stamp, section, device, metric, float(val)))
    return pd.DataFrame(rows, columns=["timestamp", "section", "device", "metric", "value"])


def match_ratio(source, reference: pd.DataFrame):
    """(ratio of reference values matched, list of mismatches)."""
    ours = source.metrics.copy()
    ours["timestamp"] = ours["timestamp"].dt.tz_convert("UTC")
    for col in ("section", "device", "metric"):
        ours[col] = ours[col].astype(str)
    merged = reference.merge(ours[["timestamp", "section", "device", "metric", "value"]],
                             on=["timestamp", "section", "device", "metric"], how="left",
                             suffixes=("_sadf", "_ours"))
    diff = (merged["value_ours"] - merged["value_sadf"]).abs()
    tolerance = 0.005 + 1e-6 * merged["value_sadf"].abs()
    # sadf prints these sizes rounded to whole megabytes
    tolerance = tolerance.where(~merged["metric"].isin(ROUNDED_TO_UNITS), 0.5)
    good = diff <= tolerance
    bad = merged[~good]
    return float(good.mean()) if len(merged) else 0.0, bad


#: Metrics sadf prints without decimals (rounded).
ROUNDED_TO_UNITS = {"MBfsfree", "MBfsused"}

REFERENCED = ["data-9.1.6", "data-11.6.5", "data-12.0.0", "data-12.5.6-A_QUEUE_modified", "data-extra-12.1.7",
              "data-ppc-11.7.2", "data-ukwn", "data-ukwn1"]


def parse(path, **opts):
    return SaBinaryParser.parse(path, ParseOptions(**opts))


#: Memory figures sysstat prints as 0 when the writer did not record them
#: (sarsleuth leaves them out): sysstat 9 wrote no MemAvailable, Slab...
OMITTED_FOR_OLD_WRITERS = {"kbavail", "kbactive", "kbinact", "kbdirty", "kbanonpg", "kbslab", "kbkstack", "kbpgtbl", "kbvmused"}


@pytest.mark.parametrize("name", REFERENCED)
def test_values_match_sadf_d(corpus, name):
    reference = load_sadf_d(corpus / "sysstat" / "sadf-d" / f"{name}.csv")
    assert len(reference) > 0
    source = parse(corpus / "sysstat" / "binary" / name)
    emitted = set(zip(source.metrics["section"].astype(str), source.metrics["metric"].astype(str)))
    pairs = list(zip(reference["section"], reference["metric"]))
    omitted = {m for sec, m in pairs if (sec, m) not in emitted}
    assert omitted <= OMITTED_FOR_OLD_WRITERS, omitted
    if omitted:
        # only where the writer really lacked the field: sadf shows 0 there
        gone = reference["metric"].isin(omitted)
        assert (reference.loc[gone, "value"] == 0).all()
        reference = reference[~gone]
    ratio, bad = match_ratio(source, reference)
    print(f"{name}: {ratio:.4%} of {len(reference)} sadf values matched")
    assert ratio >= 0.995, bad.head(20).to_string()


# --- sar -A text renderings (formats today's sadf cannot read) ------------------------------

def sar_text_section(path: Path, header_word: str, date: str) -> pd.DataFrame:
    """Rows of one section of a ``sar -A`` text rendering (24-hour clock,
    UTC): the section is the one whose header line contains
    ``header_word``; returns timestamp, device (or ""), metric, value."""
    rows = []
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines):
        parts = line.split()
        if len(parts) < 2 or header_word not in parts[1:]:
            continue
        columns = parts[1:]
        has_device = not columns[0][0].islower() and columns[0] not in ("%usr",) and not columns[0].startswith("%")
        has_device = has_device and columns[0] in {"CPU", "IFACE", "DEV", "INTR"}
        for row in lines[i + 1:]:
            cells = row.split()
            if not cells or cells[0].startswith("Average"):
                break
            stamp = pd.Timestamp(f"{date} {cells[0]}", tz="UTC")
            device = cells[1] if has_device else ""
            values = cells[2:] if has_device else cells[1:]
            metrics = columns[1:] if has_device else columns
            for metric, value in zip(metrics, values):
                rows.append((stamp, device, metric, float(value)))
        break
    return pd.DataFrame(rows, columns=["timestamp", "device", "metric", "value"])


def compare_with_text(source, section: str, text: pd.DataFrame, metrics) -> float:
    ours = source.metrics[source.metrics["section"] == section].copy()
    ours["timestamp"] = ours["timestamp"].dt.tz_convert("UTC")
    ours["device"] = ours["device"].astype(str)
    ours["metric"] = ours["metric"].astype(str)
    text = text[text["metric"].isin(metrics)]
    merged = text.merge(ours[["timestamp", "device", "metric", "value"]], on=["timestamp", "device", "metric"],
                        how="left", suffixes=("_sar", "_ours"))
    good = (merged["value_ours"] - merged["value_sar"]).abs() <= 0.005 + 1e-6 * merged["value_sar"].abs()
    return float(good.mean())


def test_format_2173_of_sysstat_10_3_1_matches_its_sar_rendering(corpus):
    source = parse(corpus / "sysstat" / "binary" / "data-10.3.1")
    assert source.meta["format_magic"] == "0x2173"
    assert source.meta["sysstat_version"] == "10.3.1"
    assert source.host == "kluane.home"
    assert source.meta["kernel"] == "4.4.14-200.fc22.x86_64"
    assert source.meta["ncpu"] == 8
    expected = corpus / "sysstat" / "expected" / "expected.data-10.3.1"
    cpu = sar_text_section(expected, "%usr", "2017-01-21")
    assert len(cpu) == 9 * 10
    cpu_ratio = compare_with_text(source, "cpu", cpu, set(cpu["metric"]))
    memory = sar_text_section(expected, "kbmemfree", "2017-01-21")
    # kbmemused/%memused left out: this rendering comes from a sysstat that
    # computes used memory as total - available, sadf 12.6 (our yardstick
    # elsewhere) as total - free - buffers - cache - slab
    mem_metrics = {"kbmemfree", "kbbuffers", "kbcached", "kbcommit", "%commit", "kbactive", "kbinact", "kbdirty"}
    mem_ratio = compare_with_text(source, "memory", memory, mem_metrics)
    swap = sar_text_section(expected, "kbswpfree", "2017-01-21")
    swap_ratio = compare_with_text(source, "swap", swap, set(swap["metric"]))
    net = sar_text_section(expected, "rxpck/s", "2017-01-21")
    net_ratio = compare_with_text(source, "net-dev", net, set(net["metric"]))
    print(f"data-10.3.1 vs sar -A: cpu {cpu_ratio:.2%}, memory {mem_ratio:.2%}, swap {swap_ratio:.2%}, "
          f"net-dev {net_ratio:.2%}")
    assert cpu_ratio == 1.0 and mem_ratio == 1.0 and swap_ratio == 1.0 and net_ratio == 1.0
    kinds = list(source.events["kind"])
    assert kinds == ["sar-restart", "sar-comment"]
    assert source.events["message"].iloc[1] == "Test sysstat 10.3.1"


def test_format_2170_of_sysstat_9_1_5_reads_fully(corpus):
    source = parse(corpus / "sysstat" / "binary" / "data-9.1.5")
    assert source.meta["format_magic"] == "0x2170"
    assert source.host == "linux-3.home"
    assert source.meta["ncpu"] == 8
    assert source.records == 2
    assert not source.warnings
    sections = set(source.metrics["section"].astype(str))
    assert {"cpu", "tasks", "swapping", "paging", "io", "memory", "swap", "file", "queue", "net-dev",
            "net-edev", "net-nfs", "net-nfsd", "net-sock"} <= sections
    cpu = source.metrics[(source.metrics["section"] == "cpu")]
    wide = cpu.pivot_table(index="device", columns="metric", values="value", observed=True)
    assert len(wide) == 9                   # all + 8 CPUs
    parts = ["%usr", "%nice", "%sys", "%iowait", "%steal", "%irq", "%soft", "%guest", "%idle"]
    assert np.allclose(wide[parts].sum(axis=1), 100.0, atol=0.05)
    mem = source.metrics[source.metrics["section"] == "memory"].set_index("metric")["value"]
    assert mem["kbmemfree"] > 0 and 0 < mem["%memused"] < 100
    assert source.metrics["timestamp"].iloc[0].year == 2021
