"""sa files written by real sysstat builds of several releases, read back
against the ``sadf -d -- -A`` rendering of the same release.

Each ``samples/sysstat-versions/<version>/`` holds a short file its own
``sadc -S XALL`` recorded under load (a comment and a LINUX RESTART in the
middle), and what that release's ``sadf`` printed for it (see the README
there and ``record.sh``).  Every (UTC time, device, metric) value sadf
printed must be one sarsleuth gives, and sarsleuth must give no figure that
release did not print.
"""
from __future__ import annotations

import functools
import gzip
from pathlib import Path

import pandas as pd
import pytest

from sarsleuth.inputs.parsers.base import ParseOptions
from sarsleuth.inputs.parsers.sa.parser import SaBinaryParser

from .test_sa_binary import DEVICE_COLUMNS, SECTION_BY_FIRST_METRIC, SKIPPED_COLUMNS, match_ratio

VERSIONS_DIR = Path(__file__).resolve().parent.parent / "samples" / "sysstat-versions"
#: One directory per release, "-m32" for a 32-bit build of it (4-byte longs).
VERSIONS = sorted((p.name for p in VERSIONS_DIR.iterdir() if (p / "sa.gz").is_file()),
                  key=lambda v: (tuple(int(x) for x in v.split("-")[0].split(".")), v))

#: Section of a ``sadf -d`` table by its first metric, the heads of every
#: release (interrupts are ``INTR;intr/s`` since 9.1).
SECTIONS = {**SECTION_BY_FIRST_METRIC, "intr/s": "interrupts", "%user": "cpu", "frmpg/s": "memory"}

#: Older heads of the figures sarsleuth names as today's sadf does:
#: (today's name, factor from the old value).  Sectors are 512 bytes.
LEGACY_NAMES = {"rd_sec/s": ("rkB/s", 0.5), "wr_sec/s": ("wkB/s", 0.5), "avgrq-sz": ("areq-sz", 0.5),
                "avgqu-sz": ("aqu-sz", 1.0), "txmtin/s": ("xmtin/s", 1.0),
                # retransmitted segments, renamed in 12.7.6
                "retrseg/s": ("retrans/s", 1.0)}


def device_names(version_dir: Path) -> dict:
    """Name -> devM-N of the recording machine's block devices: sadf 12
    names a disk by looking its numbers up on the machine that renders the
    file; sarsleuth keeps devM-N as recorded."""
    names = {}
    for line in (version_dir / "partitions.txt").read_text().splitlines()[2:]:
        major, minor, _blocks, name = line.split()
        names[name] = f"dev{major}-{minor}"
    return names


def load_rendering(version_dir: Path) -> pd.DataFrame:
    """(timestamp UTC, section, device, metric, value) of a sadf -d file of
    any release, old heads translated to today's names."""
    renamed = device_names(version_dir)
    rows, header = [], None
    with gzip.open(version_dir / "sadf-d.csv.gz", "rt") as text:
        for line in text:
            fields = line.rstrip("\n").split(";")
            if line.startswith("#"):
                header = fields
                continue
            if header is None or fields[1] == "-1":
                continue                  # restart and comment lines
            columns, values = header[3:], fields[3:]
            if columns[-1] == "CPU*":
                # sadf 12.7: one column per CPU after the total of each interrupt
                columns = columns[:-1] + ["intr/s"] + [f"CPU{n}" for n in range(len(values) - len(columns))]
            if columns[0] in DEVICE_COLUMNS and len(values) == 2 * (len(columns) - 1):
                # sadf 9.1 to 10.x print the line number before each serial
                # value: keep the line once, then the values
                values = values[:1] + values[1::2]
            if len(values) != len(columns):
                raise AssertionError(f"unexpected sadf row: {line}")
            names = [c for c in columns if c not in DEVICE_COLUMNS and c not in SKIPPED_COLUMNS]
            section = "disk" if "DEV" in columns else SECTIONS[names[0]]
            device = ""
            for col, val in zip(columns, values):
                if col in DEVICE_COLUMNS:
                    # the total of interrupts is named as sar prints it
                    total = "sum" if col == "INTR" else "all"
                    device = total if val == "-1" else renamed.get(val, val)
            stamp = pd.Timestamp(fields[2].replace(" UTC", ""), tz="UTC")
            for col, val in zip(columns, values):
                if col in DEVICE_COLUMNS or col in SKIPPED_COLUMNS:
                    continue
                metric, factor = LEGACY_NAMES.get(col, (col, 1.0))
                rows.append((stamp, section, device, metric, float(val) * factor, int(fields[1])))
    return pd.DataFrame(rows, columns=["timestamp", "section", "device", "metric", "value", "interval"])


def restarts(version_dir: Path) -> list:
    with gzip.open(version_dir / "sadf-d.csv.gz", "rt") as text:
        return [pd.Timestamp(f.split(";")[2].replace(" UTC", ""), tz="UTC") for f in text
                if ";-1;" in f and "RESTART" in f]


@functools.lru_cache(maxsize=None)
def _parsed(version):
    return SaBinaryParser.parse(VERSIONS_DIR / version / "sa.gz", ParseOptions())


@pytest.fixture(scope="module", params=VERSIONS)
def recorded(request):
    version_dir = VERSIONS_DIR / request.param
    return request.param, version_dir, _parsed(request.param), load_rendering(version_dir)


def test_every_release_is_recorded():
    assert {"9.1.5", "10.0.5", "10.1.5", "11.2.0", "11.7.3", "12.5.4", "12.6.1", "12.7.9"} <= set(VERSIONS)


def test_interrupts_per_cpu_of_sysstat_12_7():
    """Since 12.5.6 sadc records each interrupt per CPU: the CPUs add up to
    CPU "all"."""
    m = _figures("12.7.9")
    irq = m[m["section"] == "interrupts"].pivot_table(index=["timestamp", "device"], columns="metric",
                                                      values="value", observed=True)
    assert ((irq["CPU0"] + irq["CPU1"] - irq["intr/s"]).abs() < 0.01).all() and irq["intr/s"].max() > 100


def test_values_agree_with_the_release_that_wrote_them(recorded):
    version, _dir, source, reference = recorded
    assert len(reference) > 5000 and not source.warnings
    ratio, bad = match_ratio(source, reference)
    print(f"sysstat {version}: {ratio:.4%} of {len(reference)} sadf values matched")
    assert ratio >= 0.995, bad.head(20).to_string()


def test_no_figure_the_release_did_not_print(recorded):
    """The reverse: every (time, section, device, metric) sarsleuth gives
    is one that release printed."""
    _version, _dir, source, reference = recorded
    keys = ["timestamp", "section", "device", "metric"]
    ours = source.metrics[keys].copy()
    ours["timestamp"] = ours["timestamp"].dt.tz_convert("UTC")
    for col in keys[1:]:
        ours[col] = ours[col].astype(str)
    merged = ours.merge(reference[keys].drop_duplicates(), on=keys, how="left", indicator=True)
    extra = merged[merged["_merge"] == "left_only"]
    assert extra.empty, extra.head(20).to_string()


def test_restart_and_comment_are_events(recorded):
    version, version_dir, source, _reference = recorded
    version = version.split("-")[0]
    events = source.events
    restart_at = list(events.loc[events["kind"] == "sar-restart", "timestamp"].dt.tz_convert("UTC"))
    assert restart_at == restarts(version_dir) and len(restart_at) == 1
    assert f"sysstat {version} comment" in set(events.loc[events["kind"] == "sar-comment", "message"])


# --- rules that changed between releases, each checked where it applies ----------------------

@functools.lru_cache(maxsize=None)
def _figures(version):
    m = _parsed(version).metrics
    return m.assign(section=m["section"].astype(str), device=m["device"].astype(str), metric=m["metric"].astype(str))


def _value(m, stamp, section, device, metric):
    hit = m[(m["timestamp"] == pd.Timestamp(stamp, tz="UTC")) & (m["section"] == section)
            & (m["device"] == device) & (m["metric"] == metric)]
    assert len(hit) == 1
    return round(float(hit["value"].iloc[0]), 2)


def test_cpu_all_is_the_stored_line_before_11_7_3():
    """sysstat 9.1.5 printed CPU "all" from the file's own "cpu" line over the
    record's uptime: 83.42 % user here, where the sum of the two CPUs (the
    rule since 11.7.3) gives 83.00."""
    m = _figures("9.1.5")
    assert _value(m, "2026-11-23 07:10:07", "cpu", "all", "%usr") == 83.42
    assert _value(m, "2026-11-23 07:10:07", "cpu", "all", "%sys") == 14.07


def test_used_memory_follows_the_writer():
    """total - free until 11.7.3 (10.1.5 printed 4837188 kB, 19.60 %), total -
    free - buffers - cache - slab from 11.7.4, total - available from 12.7.8."""
    old = _figures("10.1.5")
    assert _value(old, "2026-11-23 07:11:07", "memory", "", "kbmemused") == 4837188
    assert _value(old, "2026-11-23 07:11:07", "memory", "", "%memused") == 19.60
    newest = _figures("12.7.9")
    mem = newest[newest["section"] == "memory"].pivot_table(index="timestamp", columns="metric", values="value",
                                                            observed=True)
    assert ((mem["kbmemused"] + mem["kbavail"]).nunique()) == 1     # total - available since 12.7.8
    new = _figures("12.5.4")
    mem = new[new["section"] == "memory"].pivot_table(index="timestamp", columns="metric", values="value",
                                                      observed=True)
    total = mem["kbmemfree"] + mem["kbmemused"] + mem["kbbuffers"] + mem["kbcached"] + mem["kbslab"]
    assert (total.max() - total.min()) < 1 << 20       # the same installed memory


@pytest.mark.parametrize("version, printed, not_printed", [
    ("9.1.5", {"svctm", "frmpg/s", "campg/s"}, {"%gnice", "blocked", "kbhugrsvd", "blg_len", "dkB/s"}),
    ("10.1.5", {"svctm", "frmpg/s", "%gnice", "blocked"}, {"kbhugrsvd", "blg_len", "dkB/s"}),
    ("11.2.0", {"svctm", "frmpg/s"}, {"kbhugrsvd", "blg_len", "dkB/s"}),
    ("11.7.3", {"svctm"}, {"frmpg/s", "kbhugrsvd", "blg_len", "dkB/s"}),
    ("12.5.4", {"kbhugrsvd", "dkB/s", "%vmeff"}, {"svctm", "frmpg/s", "blg_len", "pgprom/s", "CPU0"}),
    ("12.6.1", {"blg_len", "CPU0", "CPU1", "%vmeff"}, {"svctm", "pgprom/s", "kbshmem"}),
    ("12.7.9", {"blg_len", "pgprom/s", "pgdem/s", "kbshmem", "CPU0", "CPU1"}, {"%vmeff", "svctm"}),
])
def test_figures_are_those_the_release_printed(version, printed, not_printed):
    metrics = set(_figures(version)["metric"])
    assert printed <= metrics and not (not_printed & metrics)


def test_old_serial_lines_and_filesystem_slots():
    """Before 11.7.1 sadc stored a serial line as its number + 1 (0: unused);
    before 11.7 it kept spare filesystem slots that sar does not show."""
    old = _figures("11.2.0")
    assert set(old.loc[old["section"] == "serial", "device"]) == {"0"}
    assert set(old.loc[old["section"] == "filesystem", "device"]) == {"/dev/vda"}


@pytest.mark.parametrize("version", [v for v in VERSIONS if v.endswith("-m32")])
def test_32_bit_writers(version):
    """A 32-bit sadc writes 4-byte C longs: the same figures as its 64-bit
    build (checked above against its own sadf), read at the narrower offsets."""
    meta = _parsed(version).meta
    assert meta["long_size"] == 4 and meta["sysstat_version"] == version.split("-")[0]
