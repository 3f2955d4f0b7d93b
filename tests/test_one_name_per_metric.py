"""One name per figure whatever wrote it: sysstat's current names (``rkB/s``,
``areq-sz`` in kB, the interrupt total ``sum``) for sa files, sar text and
sadf output of every release, the older names (``rd_sec/s``, ``avgrq-sz``
in sectors) read as aliases and converted as sysstat converts them; and
sadf XML written before the ``utc`` attribute read as the UTC it is."""
from __future__ import annotations

import gzip

import pandas as pd
import pytest

from sarsleuth.knowledge.metric_names import current_of
from sarsleuth.inputs.parsers import parse

from .conftest import SAMPLES

V915 = SAMPLES / "sysstat-versions" / "9.1.5"


def _gunzipped(tmp_path, name: str):
    out = tmp_path / name.removesuffix(".gz")
    out.write_bytes(gzip.decompress((V915 / name).read_bytes()))
    return out


def _disk(source, metric: str) -> pd.Series:
    m = source.metrics
    rows = m[(m["section"] == "disk") & (m["device"] == "dev254-0") & (m["metric"] == metric)]
    return rows.set_index("timestamp")["value"]


def test_the_aliases_and_their_factors_come_from_the_names_table():
    assert current_of("disk", "rd_sec/s") == ("rkB/s", 0.5)
    assert current_of("disk", "avgrq-sz") == ("areq-sz", 0.5)
    assert current_of("disk", "avgqu-sz") == ("aqu-sz", 1.0)
    assert current_of("net-dev", "rxbyt/s") == ("rxkB/s", 1 / 1024)
    assert current_of("disk", "rkB/s") is None and current_of("cpu", "%idle") is None


def test_sysstat_9_sar_text_and_sadf_sectors_are_read_as_kilobytes(tmp_path):
    """sysstat 9.1.5's `sar -A` and `sadf -d` print rd_sec/s, wr_sec/s and
    avgrq-sz in 512-byte sectors (samples/sysstat-versions/9.1.5, recorded
    with that release); they are read as rkB/s, wkB/s and areq-sz, halved
    as sysstat's own kB figures are (S_VALUE(...) / 2)."""
    text = parse(_gunzipped(tmp_path, "sar-A.txt.gz"))
    csv = parse(_gunzipped(tmp_path, "sadf-d.csv.gz"))
    for src in (text, csv):
        names = set(src.metrics.loc[src.metrics["section"] == "disk", "metric"])
        assert {"rkB/s", "wkB/s", "areq-sz", "aqu-sz"} <= names
        assert not names & {"rd_sec/s", "wr_sec/s", "avgrq-sz", "avgqu-sz"}
    # "07:10:06 dev254-0 183.00 8.00 123624.00 675.58 0.19 ..." as sar 9.1.5 printed it
    at = pd.Timestamp("2026-11-23 07:10:06")
    assert (_disk(text, "rkB/s")[at], _disk(text, "wkB/s")[at], _disk(text, "areq-sz")[at],
            _disk(text, "aqu-sz")[at]) == (4.0, 61812.0, 337.79, 0.19)
    # the sa file the text was printed from gives the same kB from its counters
    sa = parse(V915 / "sa.gz")
    ours = _disk(sa, "rkB/s")
    ours.index = ours.index.tz_convert("UTC").tz_localize(None)
    printed = _disk(text, "rkB/s")
    common = printed.index.intersection(ours.index)
    assert len(common) >= 30
    # sar printed the sectors with two decimals: half of that rounding is left
    assert (printed[common] - ours[common]).abs().max() <= 0.0025 + 1e-9


def test_sadf_xml_that_prints_both_names_keeps_the_current_one(corpus):
    """sadf -x of 12.7.6 writes rd_sec="0.00" ... rkB="0.00" for each disk:
    one series each, the kB one, as sadf printed it."""
    src = parse(corpus / "sysstat" / "binary" / "data-12.7.6.xml")
    disk = src.metrics[src.metrics["section"] == "disk"]
    assert sorted(disk["metric"].unique()) == ["%util", "aqu-sz", "areq-sz", "await", "dkB/s", "rkB/s", "tps", "wkB/s"]
    first = disk[(disk["device"] == "sda")].groupby("metric")["value"].first()
    # <disk-device dev="sda" tps="2.00" rd_sec="0.00" wr_sec="40.00" ... wkB="20.00" ... areq-sz="10.00" ...>
    assert (first["wkB/s"], first["areq-sz"], first["aqu-sz"]) == (20.0, 10.0, 0.01)


def test_the_interrupt_total_is_sum_for_every_release(corpus):
    """sysstat 7's sa file (0x2169) and 12.x's name the all-interrupts row
    as sar prints it: "sum"."""
    for name in ("pcp-rhel5-sa20-0x2169", "data-12.0.0"):
        m = parse(corpus / "sysstat" / "binary" / name).metrics
        totals = set(m.loc[(m["section"] == "interrupts") & (m["metric"] == "intr/s"), "device"])
        assert "sum" in totals and "all" not in totals, name


def test_sadf_xml_without_the_utc_attribute_is_utc_and_said_so(corpus):
    """sysstat 7.0.2's sadf -x (DTD 1.0) stamps UTC (gmtime unless -t):
    its 14:35:01 is the sa file's record at 14:35:01 UTC."""
    xml = parse(corpus / "sysstat" / "capture-xml" / "pcp-rhel5-sa20-0x2169.sysdata1.0.xml")
    first = xml.metrics["timestamp"].min()
    assert first == pd.Timestamp("2012-09-20 14:35:01", tz="UTC")
    sa = parse(corpus / "sysstat" / "binary" / "pcp-rhel5-sa20-0x2169")
    assert first in set(sa.metrics["timestamp"].dt.tz_convert("UTC"))
    assert any("times read as UTC: sadf wrote no utc attribute" in w for w in xml.warnings)


@pytest.mark.parametrize("utc, expect", [('utc="1" ', "UTC"), ('utc="0" ', None)])
def test_sadf_xml_with_the_utc_attribute_keeps_its_word(tmp_path, utc, expect):
    """sadf 10.0.2+ says utc="1" (UTC) or utc="0" (-t: local time, kept as
    the host's wall clock)."""
    path = tmp_path / "sa.xml"
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE sysstat PUBLIC "DTD v2.15 sysstat //EN"\n'
        '"http://pagesperso-orange.fr/sebastien.godard/sysstat-2.15.dtd">\n'
        '<sysstat>\n<sysdata-version>2.15</sysdata-version>\n<host nodename="web1">\n<sysname>Linux</sysname>\n'
        '<release>4.19.0</release>\n<machine>x86_64</machine>\n<number-of-cpus>2</number-of-cpus>\n'
        '<file-date>2020-03-01</file-date>\n<file-utc-time>09:00:01</file-utc-time>\n<statistics>\n'
        f'<timestamp date="2020-03-01" time="10:00:01" {utc}interval="60">\n'
        '<cpu-load><cpu number="all" user="2.00" nice="0.00" system="1.00" iowait="0.50" steal="0.00" '
        'idle="96.50"/></cpu-load>\n</timestamp>\n</statistics>\n</host>\n</sysstat>\n')
    ts = parse(path).metrics["timestamp"].iloc[0]
    assert (str(ts.tz) if ts.tz is not None else None) == expect
    assert ts.tz_localize(None) == pd.Timestamp("2020-03-01 10:00:01")
