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
    good = diff <= tolerance
    bad = merged[~good]
    return float(good.mean()) if len(merged) else 0.0, bad


REFERENCED = ["data-9.1.6", "data-11.6.5", "data-12.0.0", "data-12.5.6-A_QUEUE_modified", "data-extra-12.1.7",
              "data-ppc-11.7.2", "data-ukwn", "data-ukwn1"]


def parse(path, **opts):
    return SaBinaryParser.parse(path, ParseOptions(**opts))


@pytest.mark.parametrize("name", REFERENCED)
def test_values_match_sadf_d(corpus, name):
    reference = load_sadf_d(corpus / "sysstat" / "sadf-d" / f"{name}.csv")
    assert len(reference) > 0
    source = parse(corpus / "sysstat" / "binary" / name)
    ratio, bad = match_ratio(source, reference)
    print(f"{name}: {ratio:.4%} of {len(reference)} sadf values matched")
    assert ratio >= 0.995, bad.head(20).to_string()
