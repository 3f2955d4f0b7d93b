"""The compact metric store: values come back exactly as read, series are
the long table's, and a one-second day costs a few bytes a value."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from .conftest import SAMPLES
from sarsleuth.metric_store import build
from sarsleuth.metric_store import combine, from_long, narrowest
from sarsleuth.inputs.parsers import ParseOptions, parse

CORPUS_FILES = ["data-9.1.6", "data-11.6.5", "data-12.0.0", "data-extra-12.1.7", "data-ppc-11.7.2",
                "pcp-f16-sa20-0x2171-suspend", "pcp-sysstat-11.2.0-0x2173-duplex", "pcp-sysstat-9.0.4-0x2170",
                "pcp-sysstat-9.0.4-rh6.5-0x1170", "pcp-rhel5-sa20-0x2169"]


@pytest.mark.parametrize("values, kind", [
    ([0.0, 0.0, 0.0], "int8"),                   # an idle counter: a byte a value
    ([0.0, 127.0, -128.0], "int8"),
    ([0.0, 300.0], "int16"),
    ([16_384_000.0, 23_068_672.0], "int32"),     # kbmemfree of a 22 GB host: exact as int32, not float32
    ([0.5, 1.25, 97.75], "float32"),             # quarters are exact in float32
    ([1.36, 2.04], "float64"),                   # sar's percentages are not
    ([0.0, -0.0], "float32"),                    # -0.00 keeps its sign
    ([2.0 ** 40], "float32"),
    ([2.0 ** 40 + 1], "float64"),
    ([np.nan, 3.0], "float32"),
    ([1e300, 5.0], "float64"),
])
def test_narrowest_type_gives_every_value_back(values, kind):
    v = np.array(values, dtype=np.float64)
    out = narrowest(v)
    assert out.dtype == np.dtype(kind)
    back = out.astype(np.float64)
    assert np.array_equal(back, v, equal_nan=True)
    assert np.array_equal(np.signbit(back), np.signbit(v))


def _wide(values):
    return np.asarray(values, dtype=np.float64)


@pytest.mark.parametrize("name", CORPUS_FILES)
def test_corpus_values_are_those_read_before_narrowing(corpus, monkeypatch, name):
    """Every value of every series of real sa files of each format, held in
    its narrowed type, equals bit for bit the double the reader computed."""
    path = corpus / "sysstat" / "binary" / name
    narrowed = parse(path, "sa", ParseOptions())
    with monkeypatch.context() as m:
        m.setattr(build, "narrowest", _wide)
        exact = parse(path, "sa", ParseOptions())
    assert narrowed.store.runs.keys() == exact.store.runs.keys()
    for key, run in exact.store.runs.items():
        held = narrowed.store.runs[key]
        assert np.array_equal(held.stamps, run.stamps)
        assert np.array_equal(held.values.astype(np.float64), run.values, equal_nan=True), key


def test_long_table_of_the_store_is_the_series():
    src = parse(SAMPLES / "nginx-proxy-oom" / "sa06")
    long = src.metrics
    assert len(long) == len(src.store) == 36135
    assert list(long.columns) == ["timestamp", "host", "section", "device", "metric", "value"]
    assert long["timestamp"].is_monotonic_increasing
    key = ("Cangke_107_176", "memory", "", "%memused")
    series = src.store.series(key)
    rows = long[(long["section"] == "memory") & (long["metric"] == "%memused")]
    assert np.array_equal(rows["value"].to_numpy(), series.to_numpy())
    assert (rows["timestamp"].to_numpy() == series.index.to_numpy()).all()
    # a store built from the long table holds the same series
    again = from_long(long)
    assert again.runs.keys() == src.store.runs.keys()
    assert again.series(key).equals(series)


def test_one_second_day_costs_a_few_bytes_a_value():
    """The live recording of the loopback sample (sadc -S XALL, one-second
    samples): its store, shared times included, is well under the 21
    bytes a value of the long table."""
    path = next((SAMPLES / "live-loopback").glob("sa*"))
    src = parse(path, "sa", ParseOptions())
    per_value = src.store.nbytes / len(src.store)
    long = src.metrics
    per_row = long.memory_usage(index=False, deep=False).sum() / len(long)
    assert per_value < 6 < 20 <= per_row, (per_value, per_row)


def test_text_source_keeps_each_values_line():
    src = parse(SAMPLES / "nginx-proxy-oom" / "sar06.txt")
    long = src.metrics
    assert "line" in long.columns and long["line"].notna().all()
    lines = src.meta["line_index"]
    row = long.iloc[len(long) // 2]
    text = lines.read_line(int(row["line"]))
    assert f"{row['value']:.2f}".replace(".", src.meta.get("decimal", ".")) in text


def _store(rows):
    frame = pd.DataFrame(rows, columns=["timestamp", "host", "section", "device", "metric", "value"])
    frame["timestamp"] = pd.to_datetime(frame["timestamp"]).dt.tz_localize("UTC")
    return from_long(frame)


def test_combine_counts_a_sample_from_two_renderings_once():
    a = _store([("2014-05-06 00:10:01", "h", "cpu", "all", "%idle", 96.3),
                ("2014-05-06 00:20:01", "h", "cpu", "all", "%idle", 95.0)])
    b = _store([("2014-05-06 00:20:01", "h", "cpu", "all", "%idle", 95.0),
                ("2014-05-06 00:30:01", "h", "cpu", "all", "%idle", 12.5),
                ("2014-05-06 00:30:01", "h", "swap", "", "%swpused", 40.0)])
    both, merged, disagreements = combine([a, b])
    assert merged == 1 and disagreements == []
    series = both.series(("h", "cpu", "all", "%idle"))
    assert series.tolist() == [96.3, 95.0, 12.5]
    assert len(both) == 4


def test_combine_keeps_the_first_value_and_notes_where_renderings_disagree():
    """ldavg-1 29.59 in the sa file, 41.02 in a sar text at the same second;
    sar's two decimals and a whole number printed without them agree."""
    a = _store([("2014-05-06 15:06:05", "h", "queue", "", "ldavg-1", 29.59),
                ("2014-05-06 15:07:01", "h", "queue", "", "ldavg-1", 29.21),
                ("2014-05-06 15:07:01", "h", "filesystem", "/dev/sda1", "MBfsused", 26088.5)])
    b = _store([("2014-05-06 15:06:05", "h", "queue", "", "ldavg-1", 41.02),
                ("2014-05-06 15:07:01", "h", "queue", "", "ldavg-1", 29.214),
                ("2014-05-06 15:07:01", "h", "filesystem", "/dev/sda1", "MBfsused", 26089.0)])
    both, merged, disagreements = combine([a, b])
    assert merged == 3
    assert both.series(("h", "queue", "", "ldavg-1")).tolist() == [29.59, 29.21]
    (d,) = disagreements
    assert d.key == ("h", "queue", "", "ldavg-1") and d.count == 1
    assert (d.kept, d.dropped, d.kept_store, d.dropped_store) == (29.59, 41.02, 0, 1)


def test_combine_shares_the_times_of_series_sampled_at_the_same_instants():
    """A day split over two files (a sosreport's sa file and the sar text
    of its second half): every series joined from both, and one held by a
    single file, sampled at the same instants, share one array of times,
    as the series of one file do, so the analyses take them as rows of one
    matrix."""
    rows = [(f"2014-05-06 00:{m:02d}:01", "h", section, device, metric, value)
            for m in (10, 20, 30) for section, device, metric, value in
            [("cpu", "all", "%idle", 95.0), ("queue", "", "ldavg-1", 0.5)]]
    a = _store([r for r in rows if r[0] < "2014-05-06 00:30"])
    b = _store([r for r in rows if r[0] > "2014-05-06 00:10"]
               + [(f"2014-05-06 00:{m:02d}:01", "h", "swap", "", "%swpused", 1.0) for m in (10, 20, 30)])
    both, merged, _ = combine([a, b])
    assert merged == 4          # 00:20:01 of two series, in both files
    runs = both.runs
    assert runs[("h", "cpu", "all", "%idle")].stamps is runs[("h", "queue", "", "ldavg-1")].stamps
    assert runs[("h", "swap", "", "%swpused")].stamps is runs[("h", "cpu", "all", "%idle")].stamps
    assert len(runs[("h", "swap", "", "%swpused")].stamps) == 3


def test_combine_keeps_a_time_repeated_within_one_source():
    """An autumn hour on a wall clock: the same time twice in one file is
    two samples, not a duplicate."""
    a = _store([("2024-10-27 02:30:00", "h", "cpu", "all", "%idle", 90.0),
                ("2024-10-27 02:30:00", "h", "cpu", "all", "%idle", 80.0)])
    b = _store([("2024-10-27 03:30:00", "h", "cpu", "all", "%idle", 70.0)])
    both, merged, _ = combine([a, b])
    assert merged == 0 and len(both) == 3
