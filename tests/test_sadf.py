"""sadf -d / -j / -x parsers: same frames as sar text, UTC times, events."""
from __future__ import annotations

import os
import shutil
import subprocess

import pandas as pd
import pytest

from sarsleuth.errors import InputError
from sarsleuth.inputs.parsers import registry, sniff_bytes
from sarsleuth.inputs.parsers.base import ParseOptions
from sarsleuth.inputs.parsers.sadf.reader import SadfCsvParser, SadfJsonParser, SadfXmlParser
from sarsleuth.inputs.parsers.sar_text.reader import SarTextParser

KEY = ["timestamp", "section", "device", "metric"]


def parse(parser, path, **opts):
    return parser.parse(path, ParseOptions(**opts))


def value(metrics, section, device, metric, when):
    rows = metrics[(metrics.section == section) & (metrics.device == device)
                   & (metrics.metric == metric) & (metrics.timestamp == pd.Timestamp(when))]
    assert len(rows) == 1, (section, device, metric, when, len(rows))
    return rows.value.iloc[0]


@pytest.fixture(scope="module")
def expected(corpus):
    return corpus / "sysstat" / "expected"


def test_csv_json_xml_of_the_same_file_agree(expected):
    d = parse(SadfCsvParser, expected / "expected.sadf-d")
    j = parse(SadfJsonParser, expected / "expected.sadf-j")
    x = parse(SadfXmlParser, expected / "expected.sadf-x")
    assert (d.host, j.host, x.host) == ("SYSSTAT.TEST",) * 3
    assert d.records == j.records == x.records == 5
    # the same values; each keeps the line of its own file
    pd.testing.assert_frame_equal(j.metrics.drop(columns="line").sort_values(KEY).reset_index(drop=True),
                                  x.metrics.drop(columns="line").sort_values(KEY).reset_index(drop=True))
    joined = d.metrics.merge(j.metrics, on=KEY)
    assert len(joined) == len(d.metrics) == 5473
    assert ((joined.value_x - joined.value_y).abs() < 1e-9).all()
    m = d.metrics
    assert str(m.timestamp.dt.tz) == "UTC"
    assert value(m, "cpu", "all", "%usr", "2019-04-18 13:20:19+00:00") == 2.15
    assert value(m, "memory", "", "kbmemfree", "2019-04-18 13:20:19+00:00") == 1437740
    assert value(m, "swap", "", "kbswpfree", "2019-04-18 13:20:19+00:00") == 16777212
    assert value(m, "interrupts", "sum", "intr/s", "2019-04-18 13:20:19+00:00") == 31915.30
    assert value(m, "interrupts", "sum", "CPU1", "2019-04-18 13:20:19+00:00") == 11829.29
    assert value(j.metrics, "psi-io", "", "%sio-10", "2019-04-18 13:20:19+00:00") == 3.19
    assert value(x.metrics, "power-usb", "1:3f0:862", "maxpower", "2019-04-18 13:20:29+00:00") == 196
    for source in (d, j, x):
        restarts = source.events[source.events.kind == "sar-restart"]
        assert restarts.timestamp.tolist() == [pd.Timestamp("2019-04-18 13:37:29", tz="UTC"),
                                               pd.Timestamp("2019-04-18 13:54:09", tz="UTC")]
    assert j.meta["kernel"] == "1.2.3-TEST" and j.meta["ncpu"] == 9


def test_offline_cpu_interrupts_are_named_from_the_cpu_table(expected):
    m = parse(SadfCsvParser, expected / "expected.sadf-d").metrics
    # CPU 6 is offline at 13:20:29: the values after CPU5 belong to CPU7
    assert value(m, "interrupts", "sum", "CPU7", "2019-04-18 13:20:29+00:00") == 1149.52
    assert m[(m.metric == "CPU6") & (m.timestamp == pd.Timestamp("2019-04-18 13:20:29", tz="UTC"))].empty


def test_json_and_xml_match_sar_text(expected):
    text = SarTextParser.parse(expected / "expected.sar-all", ParseOptions()).metrics
    j = parse(SadfJsonParser, expected / "expected.sadf-j").metrics
    j = j.assign(timestamp=j.timestamp.dt.tz_localize(None))
    joined = text.merge(j, on=KEY)
    assert len(joined) == len(text)
    assert ((joined.value_x - joined.value_y).abs() <= 0.0051).all()


def test_every_sadf_d_reference_parses(corpus):
    for path in sorted((corpus / "sysstat" / "sadf-d").glob("*.csv")):
        source = parse(SadfCsvParser, path)
        assert len(source.metrics) > 0 and source.warnings == [], path
    m = parse(SadfCsvParser, corpus / "sysstat" / "sadf-d" / "data-12.0.0.csv").metrics
    assert value(m, "cpu", "all", "%idle", "2019-06-30 05:39:34+00:00") == 99.00
    assert value(m, "net-sock", "", "tcp-tw", "2019-06-30 05:39:34+00:00") >= 0


def test_sadf_xml_12_7_6(corpus):
    source = parse(SadfXmlParser, corpus / "sysstat" / "binary" / "data-12.7.6.xml")
    m = source.metrics
    assert source.host == "brooks.home" and source.meta["ncpu"] == 8
    assert source.meta["kernel"] == "6.6.11-100.fc38.x86_64"
    assert value(m, "cpu", "all", "%usr", "2024-01-20 16:00:22+00:00") == 0.87
    assert value(m, "tasks", "", "cswch/s", "2024-01-20 16:00:22+00:00") == 599.00
    assert value(m, "power-cpu", "all", "wghMHz", "2024-01-20 16:00:22+00:00") == 1445.00
    assert {"psi-mem", "filesystem", "power-bat", "softnet", "net-etcp"} <= set(m.section)
    assert (source.events.kind == "sar-restart").sum() == 1


def test_local_time_stamps_are_wall_clock(expected):
    local = parse(SadfCsvParser, expected / "expected.sadf-d-t-tz")
    assert local.metrics.timestamp.dt.tz is None
    assert local.metrics.timestamp.iloc[0] == pd.Timestamp("2019-04-18 15:20:19")
    assert any("--tz" in w for w in local.warnings)
    from sarsleuth.timebase import settle
    placed = parse(SadfCsvParser, expected / "expected.sadf-d-t-tz")
    settle([placed], registry(), tz="Europe/Paris")
    # the same instant as the UTC rendering
    utc = parse(SadfCsvParser, expected / "expected.sadf-d-tz")
    assert placed.metrics.timestamp.iloc[0] == utc.metrics.timestamp.iloc[0]


def test_sadf_dh_wide_lines(tmp_path):
    wide = tmp_path / "wide.csv"
    wide.write_text(
        "# hostname;interval;timestamp;CPU;%user;%nice;%system;%iowait;%steal;%idle[...];"
        "kbswpfree;kbswpused;%swpused;kbswpcad;%swpcad;IFACE;rxpck/s;txpck/s;rxkB/s;txkB/s;"
        "rxcmp/s;txcmp/s;rxmcst/s;%ifutil[...]\n"
        "vm;60;2026-11-21 05:11:00 UTC;-1;1.00;0.00;2.00;3.00;0.00;94.00;0;0;0.00;0;0.00;"
        "lo;1.00;1.00;0.10;0.10;0.00;0.00;0.00;0.00;eth0;5.00;6.00;0.50;0.60;0.00;0.00;0.00;0.01\n")
    m = parse(SadfCsvParser, wide).metrics
    assert value(m, "cpu", "all", "%iowait", "2026-11-21 05:11:00+00:00") == 3.00
    assert value(m, "net-dev", "eth0", "txpck/s", "2026-11-21 05:11:00+00:00") == 6.00
    assert value(m, "swap", "", "%swpused", "2026-11-21 05:11:00+00:00") == 0.0
    assert len(m) == 6 + 5 + 16


def test_sadf_dh_with_per_cpu_interrupts_is_refused(expected):
    with pytest.raises(InputError, match="sadf -d"):
        parse(SadfCsvParser, expected / "expected.sadf-dh")


def test_sniff(corpus, expected):
    for name, kind in [("expected.sadf-d", "sadf-csv"), ("expected.sadf-j", "sadf-json"),
                       ("expected.sadf-x", "sadf-xml")]:
        assert sniff_bytes((expected / name).read_bytes()[:65536])[0] == kind
    xml = (corpus / "sysstat" / "binary" / "data-12.7.6.xml").read_bytes()[:65536]
    assert sniff_bytes(xml)[0] == "sadf-xml"
    text = (corpus / "sar-text" / "ksar--sar-10.1.5").read_bytes()[:4096]
    assert SadfCsvParser.sniff(text, text.decode()) == 0.0
    assert SadfJsonParser.sniff(text, text.decode()) == 0.0


def test_damaged_inputs(tmp_path, expected):
    cut_json = tmp_path / "cut.json"
    full = (expected / "expected.sadf-j").read_text()
    cut_json.write_text(full[: len(full) // 2])
    partial = parse(SadfJsonParser, cut_json)
    assert 0 < partial.records < 5
    assert any("damaged" in w for w in partial.warnings)
    cut_xml = tmp_path / "cut.xml"
    xml = (expected / "expected.sadf-x").read_text()
    cut_xml.write_text(xml[: len(xml) // 2])
    partial = parse(SadfXmlParser, cut_xml)
    assert partial.records >= 1 and any("damaged" in w for w in partial.warnings)
    for parser, text in [(SadfJsonParser, "{not json"), (SadfXmlParser, "<html></html>"),
                         (SadfCsvParser, "hello;world\n")]:
        bad = tmp_path / "bad"
        bad.write_text(text)
        with pytest.raises(InputError) as err:
            parse(parser, bad)
        assert str(err.value).startswith(str(bad))


def test_csv_values_keep_their_line(tmp_path):
    # sadf -d -- -u as sysstat 12 prints it: a header, then one row per sample
    text = ("# hostname;interval;timestamp;CPU;%user;%nice;%system;%iowait;%steal;%idle\n"
            "web01;600;2026-11-21 10:10:01 UTC;-1;5.00;0.00;2.00;70.00;0.00;23.00\n"
            "web01;600;2026-11-21 10:20:01 UTC;-1;6.00;0.00;3.00;71.50;0.00;19.50\n")
    path = tmp_path / "sadf-u.csv"
    path.write_text(text)
    src = SadfCsvParser.parse(path, ParseOptions())
    iowait = src.metrics[src.metrics.metric == "%iowait"]
    assert iowait.value.tolist() == [70.0, 71.5]
    assert iowait.line.tolist() == [2, 3]
    assert src.meta["line_index"].read_line(3) == text.splitlines()[2]


def test_xml_with_dash_times_reads(corpus):
    # sadf -x of sysstat 10.x printed time="05-10-01" (Red Hat bug 891688)
    src = SadfXmlParser.parse(corpus / "sysstat" / "capture-xml" / "pcp-891688-dash-time.xml", ParseOptions())
    assert src.warnings == []
    assert src.host == "very.elastic.org"
    got = {m: v for m, v in zip(src.metrics.metric, src.metrics.value)}
    assert got == {"proc/s": 0.06, "cswch/s": 1272.70}
    assert src.metrics.timestamp.unique().tolist() == [pd.Timestamp("2012-12-31 05:10:01", tz="UTC")]


def test_json_and_xml_values_keep_their_line(expected):
    """Each sadf -j / -x value keeps the line of the object or element it was
    read from (sadf writes an item on one line), as sadf -d rows keep theirs."""
    for parser, name, lines in [
            (SadfJsonParser, "expected.sadf-j", {"%iowait": 16, "kbmemfree": 76, "ldavg-1": 79, "rxkB/s": 105}),
            (SadfXmlParser, "expected.sadf-x", {"%iowait": 18, "kbmemfree": 438, "ldavg-1": 469, "rxkB/s": 494})]:
        src = parse(parser, expected / name)
        assert src.metrics["line"].notna().all()
        text = (expected / name).read_text().splitlines()
        first = src.metrics[src.metrics.timestamp == pd.Timestamp("2019-04-18 13:20:19+00:00")]
        for metric, line in lines.items():
            row = first[(first.metric == metric) & first.device.isin(["all", "", "lo"])].iloc[0]
            assert row.line == line, (name, metric)
            assert src.meta["line_index"].read_line(line) == text[line - 1]
        # sadf printed these values on those lines: iowait 0.12, memfree 1437740, ldavg-1 3.16
        printed = '"iowait": 0.12,' if parser is SadfJsonParser else 'iowait="0.12"'
        assert printed in text[lines["%iowait"] - 1]
        assert "1437740" in text[lines["kbmemfree"] - 1] and "3.16" in text[lines["ldavg-1"] - 1]
        restarts = src.events[src.events.kind == "sar-restart"]
        assert all("boot" in text[int(n) - 1] for n in restarts.line)


def _evidence_of(case, detector):
    return [(f.title, f.evidence[0]) for f in case.findings if f.detector == detector]


def test_findings_on_a_sadf_xml_capture_cite_file_and_line(corpus):
    """RHEL 5's sysstat 7.0.2 wrote this sadf -x (DTD 1.0, comma decimals):
    %iowait 11.04 at 14:35:01 UTC is on line 14, quoted verbatim."""
    from sarsleuth.case import Case
    path = corpus / "sysstat" / "capture-xml" / "pcp-rhel5-sa20-0x2169.sysdata1.0.xml"
    case = Case.load(path)
    text = path.read_text().splitlines()
    (title, ev), (_title2, ev2) = _evidence_of(case, "iowait-spike")
    assert title.startswith("I/O wait spiked to 11.04 %")
    assert (ev.path, ev.line) == (str(path), 14) and ev.text == text[13].rstrip()
    assert 'iowait="11,04"' in ev.text
    assert ev2.line == 529 and 'iowait="14,31"' in ev2.text


@pytest.mark.skipif(shutil.which("sadf") is None, reason="sysstat's sadf is not installed")
def test_findings_on_sadf_json_and_xml_cite_file_and_line(corpus, tmp_path):
    """Fedora 16's sa file (converted with sadf -c), exported by sadf -j and
    -x: each finding cites the line sadf wrote the value on, as it does for
    sadf -d rows and sar text."""
    from sarsleuth.case import Case
    converted = tmp_path / "sa20"
    with converted.open("wb") as out:
        subprocess.run(["sadf", "-c", str(corpus / "sysstat" / "binary" / "pcp-f16-sa20-0x2171-suspend")],
                       stdout=out, stderr=subprocess.DEVNULL, check=True)
    env = {**os.environ, "LC_ALL": "C", "TZ": "GMT"}
    for flag, name, needle in [("-j", "sa20.json", '"iowait": 24.72,'), ("-x", "sa20.xml", 'iowait="24.72"')]:
        path = tmp_path / name
        path.write_text(subprocess.run(["sadf", flag, str(converted), "--", "-u", "-q"], capture_output=True,
                                       text=True, check=True, env=env).stdout)
        text = path.read_text().splitlines()
        case = Case.load(path)
        found = dict(_evidence_of(case, "iowait-spike"))
        ev = found["I/O wait spiked to 24.72 % (baseline 0.62 %)"]
        assert ev.path == str(path) and ev.line is not None
        assert needle in text[ev.line - 1] and ev.text == text[ev.line - 1].rstrip()
        load = [e for t, e in _evidence_of(case, "load-spike") if "6.43" in t][0]
        assert load.line is not None and "6.43" in text[load.line - 1] and "ldavg-1" in text[load.line - 1]


def test_damaged_json_and_xml_keep_the_lines_of_what_was_read(tmp_path, expected):
    """A file cut in its middle: the samples before the cut keep the same
    lines as in the whole file."""
    for parser, name in [(SadfJsonParser, "expected.sadf-j"), (SadfXmlParser, "expected.sadf-x")]:
        whole = parse(parser, expected / name).metrics
        text = (expected / name).read_text()
        cut = tmp_path / name
        cut.write_text(text[: len(text) * 2 // 3])
        part = parse(parser, cut)
        assert 0 < part.records < 5 and any("damaged" in w for w in part.warnings)
        kept = part.metrics.merge(whole, on=KEY, suffixes=("", "_whole"))
        assert len(kept) == len(part.metrics)
        assert (kept.line == kept.line_whole).all() and (kept.value == kept.value_whole).all()


def test_reformatted_json_values_keep_the_line_of_their_member(tmp_path, expected):
    """sadf -j passed through a pretty-printer (one member a line, as
    ``python -m json.tool`` writes it): each value keeps its own line."""
    import json
    doc = json.loads((expected / "expected.sadf-j").read_text())
    path = tmp_path / "pretty.json"
    path.write_text(json.dumps(doc, indent=4))
    text = path.read_text().splitlines()
    src = parse(SadfJsonParser, path)
    first = src.metrics[src.metrics.timestamp == pd.Timestamp("2019-04-18 13:20:19+00:00")]
    for metric, device, printed in [("%iowait", "all", '"iowait": 0.12,'), ("kbmemfree", "", '"memfree": 1437740,'),
                                    ("ldavg-1", "", '"ldavg-1": 3.16,')]:
        row = first[(first.metric == metric) & (first.device == device)].iloc[0]
        assert text[row.line - 1].strip() == printed, metric


@pytest.mark.parametrize("kind, text", [
    ("sadf-json", '{"sysstat": {"hosts": 7}}'),
    ("sadf-xml", '<?xml version="1.0"?>\n<sysstat><sysdata-version>3</sysdata-version><host')])
def test_a_document_naming_no_host_is_one_line_and_exit_2(kind, text, tmp_path):
    """Well-formed as far as it goes, but no host with statistics in it."""
    from .conftest import run_cli
    bad = tmp_path / f"unusable-{kind}"
    bad.write_text(text)
    proc = run_cli("parse", "--kind", kind, bad)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("sarsleuth: ") and str(bad) in lines[0], proc.stderr
