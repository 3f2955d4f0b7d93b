"""What the HTML report draws from: series reduced with their extremes
kept (one reduction for every drawing), numbers written compactly and
read back as sar printed them, charts grouped and labelled in sar's units,
uPlot shipped as released, and incident charts framed on their lead-up."""
from __future__ import annotations

import hashlib
from importlib import resources

import numpy as np
import pandas as pd
import pytest

from sarsleuth.render import charts, decimation, plots
from sarsleuth.render.chart_groups import charts_of, decimals_of, unit_of
from sarsleuth.render.compact_numbers import encode_times, encode_values
from sarsleuth.render.page_scripts import UPLOT_VERSION, json_for_script

from .conftest import SAMPLES


def test_one_reduction_for_every_drawing():
    assert plots.decimated is decimation.decimated and charts.decimated is decimation.decimated


def test_each_column_keeps_every_series_lowest_and_highest_sample(sample_case):
    """The live sample's one-second sar (141 records, 10 CPU states of 3
    CPUs): in 20 columns each column keeps, for every series, a row where it
    is lowest and one where it is highest; every row kept is a record."""
    cpu = sample_case("live-loopback").sar("cpu", device=None)
    times = cpu.index.asi8 / 1e9
    values = cpu.to_numpy()
    rows = decimation.extreme_rows(times, values, 20)
    assert 40 < len(rows) < len(cpu) and rows[0] == 0 and rows[-1] == len(cpu) - 1
    edges = np.linspace(times[0], times[-1], 21)
    column = np.clip(np.searchsorted(edges, times, side="right") - 1, 0, 19)
    for c in range(20):
        inside = np.flatnonzero(column == c)
        for j in range(values.shape[1]):
            v = values[inside, j]
            if np.isnan(v).all():
                continue
            kept = values[np.intersect1d(rows, inside), j]
            assert np.nanmin(kept) == np.nanmin(v) and np.nanmax(kept) == np.nanmax(v), (c, cpu.columns[j])
    # few samples: every one
    assert list(decimation.extreme_rows(times[:30], values[:30], 20)) == list(range(30))


def _decode(text: str, scale: float, flagged: bool) -> list:
    """templates/explorer.js ``decode``, line for line."""
    out, prev, i = [], 0, 0
    while i < len(text):
        tok, mul = 0, 1
        while True:
            c = ord(text[i]) - 63
            i += 1
            tok += (c % 32) * mul
            mul *= 32
            if c < 32:
                break
        if flagged:
            if tok % 2 == 1:
                out.append(None)
                continue
            tok //= 2
        prev += -(tok + 1) // 2 if tok % 2 == 1 else tok // 2
        out.append(prev if scale == 1 else prev / scale)
    return out


def test_values_travel_as_sar_printed_them(sample_case):
    """Every value of the flagship's swap and memory series (sa06, read
    from the binary file) comes back as the number sar prints: two
    decimals rounded as %.2f rounds, whole numbers for kB; a missing value
    stays missing; the text holds nothing a page would read as markup."""
    case = sample_case("nginx-proxy-oom")
    for section, metric in (("swap", "%swpused"), ("swap", "kbswpfree"), ("memory", "%memused"),
                            ("paging", "pgscank/s"), ("queue", "ldavg-1")):
        series = case.sar(section)[metric]
        values = np.append(series.to_numpy(), [np.nan, 0.125, 1.005])
        d = decimals_of(metric)
        text = encode_values(values, d)
        assert set(text) <= {chr(c) for c in range(63, 127)}
        back = _decode(text, 10 ** d, True)
        printed = ["%.*f" % (d, v) if v == v else None for v in values]
        assert [None if b is None else "%.*f" % (d, b) for b in back] == printed, metric
    stamps = case.sar("swap").index.asi8 // 10 ** 9
    assert _decode(encode_times(stamps), 1, False) == list(stamps)


def test_data_for_a_script_cannot_end_it():
    text = json_for_script({"host": "</script><script>alert(1)</script>", "a": "&\u2028"})
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert text == ('{"host":"\\u003c/script\\u003e\\u003cscript\\u003ealert(1)\\u003c/script\\u003e",'
                    '"a":"\\u0026\\u2028"}')


@pytest.mark.parametrize("section, metric, unit", [
    ("memory", "kbmemfree", "kB"), ("memory", "%memused", "%"), ("disk", "rkB/s", "kB/s"),
    ("disk", "rd_sec/s", "sectors/s"), ("disk", "await", "ms"), ("disk", "tps", "/s"), ("queue", "runq-sz", ""),
    ("io", "bread/s", "blocks/s"), ("power-cpu", "MHz", "MHz"), ("power-temp", "degC", "degC"),
    ("filesystem", "MBfsfree", "MB"), ("interrupts", "CPU3", "/s"), ("net-dev", "rxbyt/s", "B/s"),
])
def test_units_are_the_ones_sar_prints(section, metric, unit):
    assert unit_of(section, metric) == unit


def test_every_metric_sar_prints_is_charted_once_or_more():
    """Every column of every section sysstat prints lands in a chart of
    one unit; the CPU states stack, receive and transmit share a chart."""
    from sarsleuth.inputs.parsers.sar_text.sections import SECTIONS
    for name, spec in SECTIONS.items():
        drawn = charts_of(name, spec.metrics)
        assert {m for c in drawn for m in c.metrics} == set(spec.metrics), name
        assert all(len({unit_of(name, m) for m in c.metrics}) == 1 for c in drawn), name
    (alls, basic) = charts_of("cpu", SECTIONS["cpu"].metrics)
    assert alls.stacked and alls.metrics[-1] == "%idle" and basic.metrics == (
        "%user", "%nice", "%system", "%iowait", "%steal", "%idle")
    assert ("rxkB/s", "txkB/s") in [c.metrics for c in charts_of("net-dev", SECTIONS["net-dev"].metrics)]
    assert not any(c.stacked for n in SECTIONS if n != "cpu" for c in charts_of(n, SECTIONS[n].metrics))


def test_uplot_is_shipped_as_released_with_its_license():
    """uPlot's own files from the npm package uplot 1.6.32 (dist/), byte
    for byte (the digests of that release), beside its MIT license."""
    folder = resources.files("sarsleuth.render").joinpath("uplot")
    digests = {name: hashlib.sha256(folder.joinpath(name).read_bytes()).hexdigest()
               for name in ("uPlot.iife.min.js", "uPlot.min.css")}
    assert digests == {"uPlot.iife.min.js": "19c8d4c6ad88929a79f4ae49d6f7161566dfd0ba3d15cc495e974f787eb78f1f",
                       "uPlot.min.css": "df630c6a8d6f8eeaff264b50f73ce5b114f646ffd9a0bb74f049b0a00135fa04"}
    assert folder.joinpath("uPlot.iife.min.js").read_text().startswith(
        f"/*! https://github.com/leeoniya/uPlot (v{UPLOT_VERSION}) */")
    license_text = folder.joinpath("LICENSE").read_text()
    assert license_text.startswith("The MIT License (MIT)") and "Copyright (c) 2022 Leon Sorokin" in license_text


def test_an_incident_is_framed_on_its_lead_up(sample_case):
    """The flagship's memory incident runs 15:02:03 to 15:07:01; its load
    climbed from 14:50:01 (an effect's onset, one 10-minute sample after
    14:40:01): the charts start before that, with the samples that show the
    rise, and end after the return; a 59 s incident of one-second data is
    drawn over about its own span, not 11 minutes."""
    from sarsleuth.analysis.charted import incident_panels
    case = sample_case("nginx-proxy-oom")
    panels, (lo, hi) = incident_panels(case, case.incidents[0])
    assert lo <= pd.Timestamp("2014-05-06 14:40:01+08:00") and hi >= pd.Timestamp("2014-05-06 15:08:01+08:00")
    assert hi - lo < pd.Timedelta(hours=2)
    live = sample_case("live-loopback")
    inc = live.incidents[0]
    panels, (lo, hi) = incident_panels(live, inc)
    assert (inc.end - inc.start) == pd.Timedelta(seconds=59) and hi - lo < pd.Timedelta(seconds=100)
    first = min(p[4].index[0] for p in panels)
    assert lo >= first and lo <= inc.start
