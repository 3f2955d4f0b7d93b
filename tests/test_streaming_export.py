"""``parse --format csv|json`` of an sa file streams the long table a slice
of records at a time: its bytes must be those of the whole table written at
once, on real files of every format, and its first and last rows those of
sysstat's own rendering."""
from __future__ import annotations

import shutil
import subprocess

import pandas as pd
import pytest

from .conftest import SAMPLES, run_cli
from sarsleuth import render
from sarsleuth.inputs.parsers import ParseOptions
from sarsleuth.inputs.parsers.sa import reader
from sarsleuth.inputs.parsers.sa.parser import SaBinaryParser

SA06 = SAMPLES / "nginx-proxy-oom" / "sa06"

#: Corpus files of every format and byte order, with restarts and an
#: activity sarsleuth does not know (a warning).
CORPUS_FILES = ["data-9.1.6", "data-11.6.5", "data-12.0.0", "data-extra-12.1.7", "data-ppc-11.7.2",
                "data-ukwn1", "pcp-f16-sa20-0x2171-suspend",
                "pcp-sysstat-11.2.0-0x2173-duplex", "pcp-sysstat-9.0.4-0x2170", "pcp-sysstat-9.0.4-rh6.5-0x1170",
                "pcp-rhel5-sa20-0x2169"]


@pytest.fixture
def small_slices(monkeypatch):
    """Slices of 16 records, so that even small files stream in many."""
    monkeypatch.setattr(reader, "SLICE_ITEMS", 1)


def _both(monkeypatch, *args):
    """(streamed run, whole-table run) of ``sarsleuth parse ARGS``."""
    streamed = run_cli("parse", *args)
    with monkeypatch.context() as m:
        for name in render.names("rows"):
            m.setattr(render.get(name), "STREAMS", False, raising=False)
        whole = run_cli("parse", *args)
    return streamed, whole


def _same(streamed, whole):
    assert streamed.returncode == whole.returncode == 0, streamed.stderr
    assert streamed.stderr == whole.stderr
    assert streamed.stdout_bytes == whole.stdout_bytes


@pytest.mark.parametrize("fmt", ["csv", "json"])
@pytest.mark.parametrize("slices", ["default", "small"])
def test_sample_streams_the_bytes_of_the_whole_table(monkeypatch, fmt, slices):
    if slices == "small":
        monkeypatch.setattr(reader, "SLICE_ITEMS", 1)
    streamed, whole = _both(monkeypatch, SA06, "--format", fmt)
    _same(streamed, whole)
    assert len(streamed.stdout.splitlines()) == 36136 - (fmt == "json")


@pytest.mark.parametrize("name", CORPUS_FILES)
def test_corpus_files_stream_the_bytes_of_the_whole_table(corpus, monkeypatch, small_slices, name):
    path = corpus / "sysstat" / "binary" / name
    _same(*_both(monkeypatch, path, "--format", "csv"))


def test_another_zone_streams_the_same_bytes(monkeypatch, small_slices):
    streamed, whole = _both(monkeypatch, SA06, "--format", "csv", "--tz", "America/New_York")
    _same(streamed, whole)
    assert streamed.stdout.splitlines()[1].startswith("2014-05-05T12:10:01-04:00,Cangke_107_176,cpu,all,%usr,")


def test_stream_yields_slices_that_make_the_whole_table(small_slices):
    whole = SaBinaryParser.parse(SA06, ParseOptions()).metrics
    src, rest = SaBinaryParser.stream(SA06, ParseOptions())
    frames = [src.metrics, *rest]
    assert len(frames) == -(-src.records // 16) > 5      # 16 records a slice
    assert max(len(f) for f in frames) < len(whole) / 4
    joined = pd.concat([f.astype({c: str for c in ("host", "section", "device", "metric")}) for f in frames],
                       ignore_index=True)
    expected = whole.astype({c: str for c in ("host", "section", "device", "metric")})
    pd.testing.assert_frame_equal(joined, expected)


@pytest.mark.skipif(shutil.which("sadf") is None, reason="sysstat's sadf is not installed")
def test_streamed_first_and_last_rows_are_sysstats(small_slices):
    """The first row (CPU all %usr of the first record) and the last
    record's time, against ``sadf -d`` of the same file."""
    env = {"TZ": "UTC", "LC_ALL": "C", "PATH": "/usr/bin:/bin"}
    sadf = subprocess.run(["sadf", "-d", str(SA06), "--", "-u", "ALL"], capture_output=True, text=True,
                          check=True, env=env).stdout.splitlines()
    header = sadf[0].lstrip("# ").split(";")
    first, last = (dict(zip(header, line.split(";"))) for line in (sadf[1], sadf[-1]))
    lines = run_cli("parse", SA06, "--format", "csv").stdout.splitlines()
    stamp, host, section, device, metric, value = lines[1].split(",")
    assert (host, section, device, metric) == (first["hostname"], "cpu", "all", "%usr")
    assert pd.Timestamp(stamp).tz_convert("UTC") == pd.Timestamp(first["timestamp"].replace(" UTC", ""), tz="UTC")
    assert float(value) == float(first["%usr"])
    last_stamp = pd.Timestamp(lines[-1].split(",")[0]).tz_convert("UTC")
    assert last_stamp == pd.Timestamp(last["timestamp"].replace(" UTC", ""), tz="UTC")
