"""sar text parser: sysstat's own renderings, public sar files, locales,
clocks, midnight, restarts, pasted text."""
from __future__ import annotations

import lzma

import pandas as pd
import pytest

from sarsleuth.errors import InputError
from sarsleuth.inputs.parsers import registry, sniff_bytes
from sarsleuth.inputs.parsers.base import ParseOptions
from sarsleuth.inputs.parsers.sadf.reader import SadfCsvParser
from sarsleuth.inputs.parsers.sar_text.reader import SarTextParser

KEY = ["timestamp", "section", "device", "metric"]

#: Texts of sysstat's test binaries (rendered by a newer sar) and the
#: ``sadf -d`` references made from the same binaries with sysstat 12.6.1.
REFERENCE_PAIRS = ["data-9.1.6", "data-11.6.5", "data-12.0.0", "data-12.5.6-A_QUEUE_modified",
                   "data-extra-12.1.7", "data-ppc-11.7.2"]

#: sysstat 12.7 changed how these are derived from /proc/meminfo, so the
#: newer texts and the 12.6.1 references differ for reasons outside parsing.
DERIVED_DIFFERENTLY = {"kbmemused", "%memused", "kbavail"}


def parse(path, **opts):
    return SarTextParser.parse(path, ParseOptions(**opts))


def value(metrics, section, device, metric, when):
    rows = metrics[(metrics.section == section) & (metrics.device == device)
                   & (metrics.metric == metric) & (metrics.timestamp == pd.Timestamp(when))]
    assert len(rows) == 1, (section, device, metric, when, len(rows))
    return rows.value.iloc[0]


@pytest.mark.parametrize("name", REFERENCE_PAIRS)
def test_sysstat_text_matches_sadf_reference(corpus, name):
    text = parse(corpus / "sysstat" / "expected" / f"expected.{name}").metrics
    ref = SadfCsvParser.parse(corpus / "sysstat" / "sadf-d" / f"{name}.csv", ParseOptions()).metrics
    assert str(ref.timestamp.dt.tz) == "UTC"
    ref = ref.assign(timestamp=ref.timestamp.dt.tz_localize(None))
    if name == "data-ppc-11.7.2":
        # sadf 12.6.1 misreads this big-endian file's dates (2040-05-07);
        # the text has the real one, so compare on the time of day.
        assert ref.timestamp.dt.year.unique().tolist() == [2040]
        assert text.timestamp.min() == pd.Timestamp("2017-04-27 19:43:21")
        ref = ref.assign(timestamp=ref.timestamp.dt.strftime("%H:%M:%S"))
        text = text.assign(timestamp=text.timestamp.dt.strftime("%H:%M:%S"))
    joined = ref.merge(text, on=KEY, suffixes=("_ref", "_text"))
    assert len(joined) >= 0.99 * len(ref)
    comparable = joined[~joined.metric.isin(DERIVED_DIFFERENTLY)]
    equal = (comparable.value_ref - comparable.value_text).abs() <= 0.0051
    assert equal.mean() >= 0.995, comparable[~equal].head()


def test_every_sar_text_corpus_file_parses(corpus):
    files = sorted(p for p in (corpus / "sar-text").rglob("*")
                   if p.is_file() and p.suffix != ".md" and not p.name.endswith(".xz"))
    assert len(files) >= 25
    for path in files:
        source = parse(path)
        assert len(source.metrics) > 0, path
        assert source.host, path
        assert list(source.metrics.columns) == ["timestamp", "host", "section", "device", "metric", "value", "line"]
        assert source.metrics.value.notna().mean() > 0.99, path


def test_compressed_binary_in_sar_text_folder_is_not_sar_text(corpus):
    path = corpus / "sar-text" / "generated" / "local-12.6.1_sa20261121_sadc-XALL-1s-x399.xz"
    head = lzma.open(path).read(65536)
    assert SarTextParser.sniff(head, head.decode("utf-8", "replace")) == 0.0
    if "sa" not in registry():
        pytest.skip("the binary sa parser is not in this tree")
    from sarsleuth.inputs.parsers import parse as parse_any
    assert len(parse_any(path).metrics) > 0


def test_locale_renderings_give_the_c_locale_values(corpus):
    folder = corpus / "sar-text" / "generated"
    base = parse(folder / "local-12.6.1_C.txt").metrics.sort_values(KEY).reset_index(drop=True)
    assert len(base) == 5900
    assert value(base, "cpu", "all", "%user", "2026-11-21 05:12:01") >= 0
    for loc in ["de_DE", "en_US", "es_ES", "fr_FR", "ja_JP", "ja_JP_S_TIME_FORMAT-ISO", "pt_BR", "ru_RU", "zh_CN"]:
        source = parse(folder / f"local-12.6.1_{loc}.txt")
        other = source.metrics.sort_values(KEY).reset_index(drop=True)
        pd.testing.assert_frame_equal(other, base, check_dtype=False, obj=loc)
        assert source.warnings == [], loc
        assert len(source.meta["averages"]) == 100, loc
    assert parse(folder / "local-12.6.1_de_DE.txt").meta["decimal"] == ","
    assert parse(folder / "local-12.6.1_fr_FR.txt").meta["summary_labels"] == ["Moyenne"]
    assert parse(folder / "local-12.6.1_zh_CN.txt").meta["clock"] == "cjk"


def test_midnight_advances_the_date(corpus):
    folder = corpus / "sar-text" / "generated"
    shifted = parse(folder / "local-12.6.1_en_US_midnight-rollover_TZ-shifted.txt").metrics
    assert shifted.timestamp.min() == pd.Timestamp("2026-11-20 23:57:16")
    assert shifted.timestamp.max() == pd.Timestamp("2026-11-21 00:03:54")
    utc = parse(folder / "local-12.6.1_C.txt").metrics
    # the same sample, read 5 h 13 min behind UTC
    for metric in ("%user", "%system", "%idle"):
        assert value(shifted, "cpu", "all", metric, "2026-11-20 23:59:01") == \
            value(utc, "cpu", "all", metric, "2026-11-21 05:12:01")
    assert value(shifted, "memory", "", "kbmemfree", "2026-11-20 23:59:30") == \
        value(utc, "memory", "", "kbmemfree", "2026-11-21 05:12:30")


def test_concatenated_files_are_split_by_banner(corpus):
    source = parse(corpus / "sar-text" / "generated" / "sysstat-tests_concat-3-files_en_US.txt")
    segments = source.meta["segments"]
    assert [s["date"] for s in segments] == ["2017-01-21", "2018-08-29", "2019-06-30"]
    assert [s["host"] for s in segments] == ["kluane.home", "linux.home", "linux.home"]
    days = sorted(source.metrics.timestamp.dt.date.astype(str).unique())
    assert days == ["2017-01-21", "2018-08-29", "2019-06-30"]
    assert (source.events.kind == "sar-restart").sum() == 3


def test_restarts_become_events_once(corpus):
    source = parse(corpus / "sar-text" / "sarstats--el6_sar13")
    restarts = source.events[source.events.kind == "sar-restart"]
    assert len(restarts) == 14
    assert restarts.timestamp.min() == pd.Timestamp("2014-01-13 11:17:56")
    assert source.meta["ncpu"] == 4 and source.meta["kernel"] == "2.6.32-431.el6.x86_64"


def test_iso_date_with_12_hour_clock(corpus):
    m = parse(corpus / "sar-text" / "sarstats--el7_sar09").metrics
    assert m.timestamp.min() == pd.Timestamp("2016-04-09 00:10:01")
    assert m.timestamp.max() == pd.Timestamp("2016-04-09 23:50:01")


def test_sysstat7_tables_keep_their_names(corpus):
    m = parse(corpus / "sar-text" / "sarstats--el5_sar21").metrics
    assert {"%user", "%system"} <= set(m[m.section == "cpu"].metric)
    # `CPU i000/s ...` per-CPU interrupt tables: the interrupt is the device
    assert value(m, "interrupts", "0", "CPU0", "2013-11-21 14:10:01") == 1009.79
    assert value(m, "interrupts", "14", "CPU1", "2013-11-21 14:10:01") == 9.09


def test_pretty_layout_and_human_units(corpus):
    expected = corpus / "sysstat" / "expected"
    plain = parse(expected / "expected.sar-all").metrics
    pretty = parse(expected / "expected.sar-pretty").metrics
    assert value(pretty, "disk", "sdq", "tps", "2019-04-18 13:20:19") == 9.62
    human = parse(expected / "expected.sar-human")
    assert human.meta["human_units"]
    joined = human.metrics.merge(plain, on=KEY)
    assert len(joined) == len(plain)
    relative = (joined.value_x - joined.value_y).abs() / joined.value_y.abs().clip(lower=1)
    assert (relative < 0.06).all()
    assert value(human.metrics, "memory", "", "kbmemfree", "2019-04-18 13:20:19") == pytest.approx(1.4 * 1024 ** 2)


def test_colours_are_ignored(corpus):
    expected = corpus / "sysstat" / "expected"
    coloured = parse(expected / "expected.sar-Ax")
    assert coloured.meta["date"] == "2020-06-01"
    assert "Maximum" in coloured.meta["summary_labels"]
    assert len(coloured.metrics) > 1000


FIELD_REPORT = """\
Linux 2.6.32-358.el6.x86_64 (Cangke_107_176)     05/06/2014      _x86_64_        (24 CPU)

12:00:01 AM     CPU     %user     %nice   %system   %iowait    %steal     %idle
03:01:01 PM     all      0.62      0.00      1.02      0.01      0.00     98.35
03:02:03 PM     all      0.71      0.00      2.93     11.12      0.00     85.24
03:03:02 PM     all      0.60      0.00      1.88     32.00      0.00     65.52
03:04:16 PM     all      0.58      0.00      1.64     37.88      0.00     59.90
03:05:03 PM     all      0.56      0.00      1.45     64.94      0.00     33.05
03:08:01 PM     all      0.49      0.00      1.10      2.40      0.00     96.01
Average:        all      0.59      0.00      1.67     24.72      0.00     73.02

12:00:01 AM kbswpfree kbswpused  %swpused  kbswpcad   %swpcad
03:01:01 PM   8388600         0      0.00         0      0.00
03:02:03 PM   5065388   3323212     39.62     10120      0.30
03:04:16 PM   1723196   6665404     79.46     28312      0.42
03:06:05 PM    187788   8200812     97.76     41860      0.51
Average:      3841243   4547357     54.21     20073      0.31
"""


def test_field_report_12_hour_paste(tmp_path):
    path = tmp_path / "sa06.txt"
    path.write_text(FIELD_REPORT)
    source = parse(path)
    m = source.metrics
    assert source.host == "Cangke_107_176" and source.meta["ncpu"] == 24
    assert source.meta["kernel"] == "2.6.32-358.el6.x86_64" and source.meta["clock"] == "12h"
    assert value(m, "cpu", "all", "%iowait", "2014-05-06 15:05:03") == 64.94
    assert value(m, "swap", "", "%swpused", "2014-05-06 15:06:05") == 97.76
    assert value(m, "swap", "", "kbswpfree", "2014-05-06 15:01:01") == 8388600
    assert m.timestamp.dt.date.astype(str).unique().tolist() == ["2014-05-06"]
    assert source.warnings == []          # the 12-hour clock settles MM/DD
    averages = source.meta["averages"]
    assert averages[(averages.metric == "%iowait")].value.tolist() == [24.72]
    assert not (m.timestamp.dt.hour == 0).any()   # averages are no samples
    assert source.records == 7          # distinct sample times over both tables


def test_paste_without_banner_and_with_prompt(tmp_path):
    path = tmp_path / "paste.txt"
    lines = FIELD_REPORT.splitlines()[2:9]
    path.write_text("$ sar -f /var/log/sa/sa06 | grep -A7 iowait\n\n" + "\n".join("   " + l for l in lines) + "\n")
    unknown = parse(path)
    assert unknown.meta["date_unknown"] is True
    assert any("no sar banner" in w for w in unknown.warnings)
    assert value(unknown.metrics, "cpu", "all", "%iowait", "1970-01-01 15:05:03") == 64.94
    # another source of the case dates it (the timebase re-dates guessed dates)
    from sarsleuth.inputs.parsers import parse as parse_any
    from sarsleuth.timebase import settle
    log = tmp_path / "messages"
    log.write_text("May  6 15:04:13 web1 kernel: nginx: page allocation failure. order:0, mode:0x20\n")
    hinted = parse(path)
    notes = settle([hinted, parse_any(log, options=ParseOptions(year=2014))], registry()).notes
    assert value(hinted.metrics, "cpu", "all", "%iowait", "2014-05-06 15:05:03") == 64.94
    assert hinted.meta["date_unknown"] is False
    assert any("rows dated 2014-05-06 from the other sources" in n for n in notes)
    assert SarTextParser.sniff(path.read_bytes(), path.read_text()) >= 0.8


def test_ambiguous_date_warns_and_date_order_decides(tmp_path):
    path = tmp_path / "sar.txt"
    path.write_text("Linux 3.10.0 (db1) \t05/06/14 \t_x86_64_\t(8 CPU)\n\n"
                    "10:00:01        CPU     %user     %nice   %system   %iowait    %steal     %idle\n"
                    "10:10:01        all      1.00      0.00      2.00      3.00      0.00     94.00\n")
    guessed = parse(path)
    assert guessed.meta["date_assumed"] is True
    assert any("--date-order" in w for w in guessed.warnings)
    assert guessed.metrics.timestamp.iloc[0] == pd.Timestamp("2014-05-06 10:10:01")
    decided = parse(path, date_order="dmy")
    assert decided.warnings == []
    assert decided.metrics.timestamp.iloc[0] == pd.Timestamp("2014-06-05 10:10:01")


def test_tz_option_localizes(corpus):
    from sarsleuth.timebase import settle
    source = parse(corpus / "sar-text" / "scansar--sarb.txt")
    assert source.metrics.timestamp.dt.tz is None        # sar prints wall clock
    settle([source], registry(), tz="Asia/Shanghai")
    assert str(source.metrics.timestamp.dt.tz) == "Asia/Shanghai"
    assert source.metrics.timestamp.min() == pd.Timestamp("2024-12-18 00:19:14", tz="Asia/Shanghai")


def test_sniff(corpus):
    banner = (corpus / "sar-text" / "ksar--sar-10.1.5").read_bytes()[:65536]
    assert sniff_bytes(banner)[0] == "sar-text"
    header_only = b"03:05:03 PM     CPU     %user     %nice   %system   %iowait    %steal     %idle\n"
    assert SarTextParser.sniff(header_only, header_only.decode()) >= 0.8
    dmesg = b"Linux version 2.6.32-358.el6.x86_64 (mockbuild@c6b8.bsys.dev.centos.org) (gcc version 4.4.7)\n"
    assert SarTextParser.sniff(dmesg, dmesg.decode()) == 0.0
    csv = (corpus / "sysstat" / "sadf-d" / "data-12.0.0.csv").read_bytes()
    assert SarTextParser.sniff(csv, csv.decode()) == 0.0


def test_unusable_input_raises_input_error(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("nothing here\nat all\n")
    with pytest.raises(InputError) as err:
        parse(path)
    assert str(err.value).startswith(str(path))
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    with pytest.raises(InputError):
        parse(empty)
    with pytest.raises(InputError):
        parse(tmp_path / "missing.txt")


def test_damaged_rows_are_skipped_with_a_warning(tmp_path):
    path = tmp_path / "cut.txt"
    path.write_text("Linux 5.4.0 (web) \t11/21/26 \t_x86_64_\t(2 CPU)\n\n"
                    "05:12:00        CPU     %user     %nice   %system   %iowait    %steal     %idle\n"
                    "05:12:01        all      5.56      0.00      2.53      0.00      0.00     91.92\n"
                    "05:12:02        all      5.5\n"
                    "05:12:03        all      4.00      0.00      1.00      0.00      0.00     95.00\n")
    source = parse(path)
    assert len(source.metrics) == 12
    assert any("shorter than their header" in w for w in source.warnings)


# ---- line endings, byte-order marks, line numbers -----------------------------

#: ``sar -u`` as sysstat 12 prints it in the C locale (12-hour clock).
SAR_U_LINES = [
    "Linux 5.15.0-91-generic (web01) \t11/21/2026 \t_x86_64_\t(4 CPU)",
    "",
    "10:00:01 AM     CPU     %user     %nice   %system   %iowait    %steal     %idle",
    "10:10:01 AM     all      5.00      0.00      2.00     70.00      0.00     23.00",
    "10:20:01 AM     all      6.00      0.00      3.00     71.50      0.00     19.50",
    "10:30:01 AM     all      4.00      0.00      1.00      2.00      0.00     93.00",
    "Average:        all      5.00      0.00      2.00     47.83      0.00     45.17",
]


@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"], ids=["plain", "bom"])
@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r", "mixed"], ids=["lf", "crlf", "cr", "mixed"])
@pytest.mark.parametrize("chunk", [4 << 20, 7], ids=["one-chunk", "tiny-chunks"])
def test_line_endings_and_bom_keep_date_host_and_lines(tmp_path, monkeypatch, bom, eol, chunk):
    from sarsleuth.inputs.parsers.sar_text import lines as _lines
    monkeypatch.setattr(_lines, "CHUNK_BYTES", chunk)
    ends = [b"\r\n", b"\n", b"\r"] * 3 if eol == "mixed" else [eol] * len(SAR_U_LINES)
    raw = bom + b"".join(line.encode() + end for line, end in zip(SAR_U_LINES, ends))
    path = tmp_path / "sar-u.txt"
    path.write_bytes(raw)
    assert sniff_bytes(raw[:4096])[0] == "sar-text"
    src = parse(path)
    assert src.host == "web01" and src.meta["date"] == "2026-11-21" and not src.meta["date_unknown"]
    assert src.warnings == []
    iowait = src.metrics[src.metrics.metric == "%iowait"]
    assert iowait.timestamp.dt.strftime("%Y-%m-%d %H:%M:%S").tolist() == [
        "2026-11-21 10:10:01", "2026-11-21 10:20:01", "2026-11-21 10:30:01"]
    assert iowait.value.tolist() == [70.0, 71.5, 2.0]
    # each value names the line it was printed on, and that line reads back verbatim
    assert iowait.line.tolist() == [4, 5, 6]
    index = src.meta["line_index"]
    assert index.read_line(5) == SAR_U_LINES[4]
    assert index.read_line(1).startswith("Linux 5.15.0-91-generic (web01)")


def test_short_row_warning_names_its_own_line(tmp_path):
    lines = SAR_U_LINES[:5] + ["10:25:01 AM     all      6.00      0.00"] + SAR_U_LINES[5:]
    path = tmp_path / "sar-u.txt"
    path.write_text("\n".join(lines) + "\n")
    src = parse(path)
    assert any(w.startswith(f"{path}:6: 1 row(s) shorter than their header") for w in src.warnings), src.warnings
    assert src.metrics[src.metrics.metric == "%idle"].line.tolist() == [4, 5, 7]


def test_metric_findings_quote_the_sar_row(tmp_path):
    """A finding's evidence is the row its peak was printed on: path, line
    and the line verbatim."""
    import sarsleuth
    rows = [f"{10 + k // 6:02d}:{k % 6 * 10:02d}:01 AM     all      5.00      0.00      2.00 "
            f"{(70.0 + k) if 6 <= k < 12 else 1.0:9.2f}      0.00 {(23.0 - k) if 6 <= k < 12 else 92.0:9.2f}"
            for k in range(18)]
    lines = SAR_U_LINES[:3] + rows
    path = tmp_path / "sar-u.txt"
    path.write_text("\r\n".join(lines) + "\r\n")
    case = sarsleuth.load(path)
    found = [f for f in case.findings if f.detector == "iowait-spike"]
    assert found, [f.detector for f in case.findings]
    ev = found[0].evidence[0]
    peak = max(range(len(rows)), key=lambda k: float(rows[k].split()[6]))
    assert (ev.path, ev.line, ev.text) == (str(path), 4 + peak, rows[peak])


def test_rows_converted_while_reading_give_the_same_table(corpus, monkeypatch):
    """Rows are turned into numbers a few at a time as the file is read (a
    big file is never held whole as text): the table is the same."""
    from sarsleuth.inputs.parsers.sar_text import assemble as _assemble, lines as _lines
    path = corpus / "sysstat" / "expected" / "expected.data-12.0.0"
    whole = parse(path).metrics
    monkeypatch.setattr(_lines, "CHUNK_BYTES", 512)
    monkeypatch.setattr(_assemble, "FLUSH_ROWS", 3)
    pieces = parse(path).metrics
    key = ["timestamp", "section", "device", "metric"]
    a = whole.astype({c: str for c in ("section", "device", "metric")}).sort_values(key, ignore_index=True)
    b = pieces.astype({c: str for c in ("section", "device", "metric")}).sort_values(key, ignore_index=True)
    pd.testing.assert_frame_equal(a, b, check_categorical=False)


# en_IN as glibc once defined it: %x "%A %d %B %Y", and a zone after each time
EN_IN_CPU = """$ sar -u 2 3

Linux 3.13.0-24-generic (build-07) \tFriday 12 December 2014 \t_x86_64_\t(4 CPU)

11:04:10  IST     CPU     %user     %nice   %system   %iowait    %steal     %idle
11:04:12  IST     all     12.50      0.00      2.25     31.75      0.00     53.50
11:04:14  IST     all     14.00      0.00      2.00     40.10      0.00     43.90
11:04:16  IST     all     11.25      0.00      1.75     38.00      0.00     49.00
Average:        all     12.58      0.00      2.00     36.62      0.00     48.80
"""


def test_banner_date_in_words_and_a_zone_after_each_time(tmp_path):
    path = tmp_path / "paste.txt"
    path.write_text(EN_IN_CPU)
    source = parse(path)
    assert (source.host, source.meta["ncpu"], source.meta["date"]) == ("build-07", 4, "2014-12-12")
    assert value(source.metrics, "cpu", "all", "%iowait", "2014-12-12 11:04:14") == 40.10
    assert set(source.metrics.metric) == {"%user", "%nice", "%system", "%iowait", "%steal", "%idle"}
    assert not any("not numbers" in w or "banner" in w for w in source.warnings)
    assert SarTextParser.sniff(path.read_bytes(), path.read_text()) >= 0.9
    # the same in French, and a queue table: the zone is never a metric
    fr = tmp_path / "fr.txt"
    fr.write_text("Linux 3.13.0 (db2) \tvendredi 12 décembre 2014 \t_x86_64_\t(4 CPU)\n\n"
                  "11:04:10  CET   runq-sz  plist-sz   ldavg-1   ldavg-5  ldavg-15   blocked\n"
                  "11:04:12  CET         3       431      1.67      1.22      0.97         2\n")
    queue = parse(fr)
    assert queue.meta["date"] == "2014-12-12"
    assert sorted(queue.metrics.metric.unique()) == ["blocked", "ldavg-1", "ldavg-15", "ldavg-5", "plist-sz", "runq-sz"]
    # near miss: a device column named like a zone is a device, not a zone
    dev = tmp_path / "dev.txt"
    dev.write_text("Linux 3.13.0 (db2) \t12/12/2014 \t_x86_64_\t(4 CPU)\n\n"
                   "11:04:10     IFACE   rxpck/s   txpck/s    rxkB/s    txkB/s\n"
                   "11:04:12      ETH0     10.00     20.00      1.00      2.00\n")
    assert value(parse(dev).metrics, "net-dev", "ETH0", "rxpck/s", "2014-12-12 11:04:12") == 10.0


def test_the_daily_file_a_paste_read_settles_the_day_and_month(tmp_path):
    body = ("Linux 5.18.0-2-amd64 (opsproc3) \t10/08/22 \t_x86_64_\t(12 CPU)\n\n"
            "00:00:02    kbmemfree   kbavail kbmemused  %memused\n"
            "00:10:01      2751536  20160848  11453448     35.25\n")
    pasted = tmp_path / "paste.txt"
    pasted.write_text("$ sar -r -f /var/log/sysstat/sa10\n" + body)
    source = parse(pasted)
    assert source.meta["date"] == "2022-08-10" and source.meta["date_assumed"] is False
    assert any("day 10" in w and ":2:" in w for w in source.warnings)
    named = tmp_path / "sar08"          # the file's own name, as sa2 writes it
    named.write_text(body)
    assert parse(named).meta["date"] == "2022-10-08"
    # near misses: a day neither reading gives, and no daily file at all
    other = tmp_path / "sa21"
    other.write_text(body)
    assert parse(other).meta["date_assumed"] is True
    plain = tmp_path / "paste2.txt"
    plain.write_text("$ sar -r 2 10\n" + body)
    assert parse(plain).meta["date"] == "2022-10-08" and parse(plain).meta["date_assumed"] is True


def test_rows_a_paste_left_out_are_no_gap_of_the_recording(tmp_path):
    head = "Linux 2.6.32-71.el6.x86_64 (db4) \t11/29/2017 \t_x86_64_\t(4 CPU)\n\n"
    table = "00:00:01        CPU     %user     %nice   %system   %iowait    %steal     %idle\n"
    rows = [f"{h:02d}:{m:02d}:01        all      1.00      0.00      2.00      3.00      0.00     94.00\n"
            for h in range(3) for m in range(0, 60, 10)]
    pasted = tmp_path / "paste.txt"
    pasted.write_text(head + table + "".join(rows[:4]) + "...\n" + "".join(rows[12:]))
    import sarsleuth
    case = sarsleuth.load(pasted)
    assert not [f for f in case.findings if f.detector == "sar-gap"]
    assert list(case.events.loc[case.events.kind == "sar-elision", "line"]) == [8]
    assert not any("not sar output" in w for w in case.warnings)
    # near miss: the same hole with nothing marking it is a gap of the sampling
    hole = tmp_path / "hole.txt"
    hole.write_text(head + table + "".join(rows[:4]) + "".join(rows[12:]))
    assert [f.detector for f in sarsleuth.load(hole).findings] == ["sar-gap"]


def test_a_cpu_row_of_zeros_is_no_sample(tmp_path):
    """sysstat 9 writing the day's report across a reboot it has no restart
    record of prints the first row after it as zeros, %idle included: no
    share of a CPU's time, not a CPU 100 % busy."""
    path = tmp_path / "sar26"
    rows = ["01:50:01 AM     all      0.03      0.00      0.10      0.01      0.00      0.00      0.08      0.00     99.79",
            "04:40:01 AM     all      0.00      0.00      0.00      0.00      0.00      0.00      0.00      0.00      0.00",
            "04:50:01 AM     all      0.03      0.00      0.10      0.03      0.00      0.00      0.07      0.00     99.77"]
    path.write_text("Linux 2.6.32-431.el6.x86_64 (moban) \t2016-12-26 \t_x86_64_\t(1 CPU)\n\n"
                    "01:40:01 AM     CPU      %usr     %nice      %sys   %iowait    %steal      %irq     %soft    %guest"
                    "     %idle\n" + "\n".join(rows) + "\n")
    source = parse(path)
    idle = source.metrics[source.metrics.metric == "%idle"].set_index("timestamp")["value"]
    assert idle[pd.Timestamp("2016-12-26 04:50:01")] == 99.77 and pd.isna(idle.get(pd.Timestamp("2016-12-26 04:40:01")))
    assert any(":5: 1 CPU row(s) with every share at 0.00" in w for w in source.warnings)
    import sarsleuth
    assert not [f for f in sarsleuth.load(path).findings if f.detector == "cpu-saturation"]
    # near miss: a CPU idle at 0.00 with its time spent elsewhere is a sample
    busy = tmp_path / "busy"
    busy.write_text(path.read_text().replace(rows[1], "04:40:01 AM     all    100.00      0.00      0.00      0.00"
                                                      "      0.00      0.00      0.00      0.00      0.00"))
    usr = parse(busy).metrics.query("metric == '%usr'").set_index("timestamp")["value"]
    assert usr[pd.Timestamp("2016-12-26 04:40:01")] == 100.0


_STALL_HEAD = ("Linux 5.4.0-1063-azure (vm-data-01) \t03/14/2022 \t_x86_64_\t(2 CPU)\n\n"
               "12:00:01 AM     CPU     %user     %nice   %system   %iowait    %steal     %idle\n")


def _u(time: str, iowait: float) -> str:
    """A ``sar -u`` row of sysstat 12: 1.20 % user, 0.30 % system, the rest idle."""
    idle = round(100 - 1.20 - 0.30 - iowait, 2)
    return f"{time}     all {1.20:9.2f} {0:9.2f} {0.30:9.2f} {iowait:9.2f} {0:9.2f} {max(idle, 0):9.2f}\n"


def test_rows_of_zeros_stamped_midnight_between_rows_that_go_on_are_left_out(tmp_path):
    """sar printing a day across a restart it has no record of stamps the
    records without a time 12:00:00 AM, every share 0.00: 02:15:02, then
    12:00:00 AM twice, then 03:39:16 is the same day, not 25 hours on."""
    rows = [_u("02:05:58 AM", 2.10), _u("02:15:02 AM", 1.90), "12:00:00 AM     all      0.00      0.00      0.00"
            "      0.00      0.00      0.00\n" * 2, _u("03:39:16 AM", 34.00), _u("03:48:38 AM", 1.20)]
    path = tmp_path / "sar14"
    path.write_text(_STALL_HEAD + "".join(rows))
    source = parse(path)
    times = sorted(set(source.metrics["timestamp"]))
    assert times == [pd.Timestamp(f"2022-03-14 {t}") for t in ("02:05:58", "02:15:02", "03:39:16", "03:48:38")]
    assert any(":6: 2 row(s) of zeros stamped 00:00:00 between rows that go on from each other" in w
               for w in source.warnings)
    import sarsleuth
    (gap,) = [f for f in sarsleuth.load(path).findings if f.detector == "sar-gap"]
    assert gap.metrics["gap_seconds"] == 5054


def test_a_midnight_row_of_zeros_that_starts_the_next_day_stays_there(tmp_path):
    # near miss: a record at 00:00:00 of the next day (a timer firing on the
    # minute) followed by 00:10:00: the day did turn
    rows = [_u("11:40:00 PM", 1.0), _u("11:50:00 PM", 1.0),
            "12:00:00 AM     all      0.00      0.00      0.00      0.00      0.00      0.00\n", _u("12:10:00 AM", 1.0)]
    path = tmp_path / "sar14"
    path.write_text(_STALL_HEAD + "".join(rows))
    source = parse(path)
    assert pd.Timestamp("2022-03-15 00:10:00") in set(source.metrics["timestamp"])
    assert not any("stamped 00:00:00" in w for w in source.warnings)
