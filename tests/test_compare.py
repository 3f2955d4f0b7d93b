"""Comparison of load-test runs and its plot."""
from __future__ import annotations

import json
import math

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from sarsleuth.analysis.compare import COMPARISON_COLUMNS, compare_reports  # noqa: E402
from sarsleuth.render.comparison import plot_comparison  # noqa: E402
from sarsleuth.render.formats.json import report_json  # noqa: E402
from sarsleuth.inputs.parsers import parse  # noqa: E402



def _ab_run(concurrency: int, rps: float, p50: int, p99: int) -> str:
    """An ab 2.3 report of one run (the shape of report 003's comparisons)."""
    return f"""\
$ ab -n 10000 -c {concurrency} http://127.0.0.1/hello
This is ApacheBench, Version 2.3 <$Revision: 655654 $>
Benchmarking 127.0.0.1 (be patient)
Finished 10000 requests
Concurrency Level:      {concurrency}
Time taken for tests:   0.577 seconds
Complete requests:      10000
Failed requests:        0
Total transferred:      6680000 bytes
HTML transferred:       5120000 bytes
Requests per second:    {rps} [#/sec] (mean)
Time per request:       5.771 [ms] (mean)
Time per request:       0.058 [ms] (mean, across all concurrent requests)
Transfer rate:          11303.62 [Kbytes/sec] received
Percentage of the requests served within a certain time (ms)
  50%      {p50}
  90%      7
  99%     {p99}
 100%     13 (longest request)
"""


# seed report 001: two ab runs pasted without banners (the second one cut short)
SEED_001_RUNS = """\
ab 压测的参数很多
Concurrency Level:      100
Time taken for tests:   2.084 seconds
Complete requests:      7000
Failed requests:        0
Requests per second:    3359.59 [#/sec] (mean)
Transfer rate:          179098.09 [Kbytes/sec] received
Percentage of the requests served within a certain time (ms)
  50%     18
  99%    264
 100%   1026 (longest request)
1
2
Concurrency Level:      100
Time taken for tests:   13.712 seconds
Complete requests:      7000
Failed requests:        0
Requests per second:    510.51 [#/sec] (mean)
Transfer rate:          1043909.08 [Kbytes/sec] received
Percentage of the requests served within a certain time (ms)
  50%    179
"""


@pytest.fixture()
def runs_file(tmp_path):
    path = tmp_path / "runs.txt"
    runs = [(500, 15852.0, 6, 12), (100, 17329.0, 5, 10), (200, 16443.0, 6, 11)]
    path.write_text("\n".join(_ab_run(*run) for run in runs), encoding="utf-8")
    return path


def test_one_row_per_run(runs_file):
    frame = compare_reports([runs_file])
    assert list(frame.columns) == COMPARISON_COLUMNS
    assert frame["concurrency"].tolist() == [500, 100, 200]
    assert frame["requests_per_sec"].tolist() == [15852.0, 17329.0, 16443.0]
    assert frame["latency_p99_s"].tolist() == [0.012, 0.010, 0.011]
    assert frame["latency_max_s"].tolist() == [0.013] * 3
    assert frame["failures"].tolist() == [0, 0, 0]
    assert frame["transfer_rate_Bps"].iloc[0] == pytest.approx(11303.62 * 1024)
    assert frame["tool"].unique().tolist() == ["ab"]
    assert frame["file"].unique().tolist() == ["runs.txt"]


def test_mixed_tools_from_the_corpus(corpus):
    loadtest = corpus / "loadtest"
    paths = [loadtest / "wrk-latency-read-write-socket-errors.txt",
             loadtest / "wrk2-u-latency-both-spectra-socket-errors.txt",
             loadtest / "httperf-all-client-timeouts-zero-replies.txt",
             loadtest / "ab-non2xx-ratelimit-length-failures.txt",
             loadtest / "tsar-live-mem-M-suffix-bytes.txt"]
    frame = compare_reports(paths)
    assert frame["tool"].tolist() == ["wrk", "wrk2", "httperf", "ab"]   # tsar is no run
    wrk = frame.iloc[0]
    assert (wrk["concurrency"], wrk["failures"], wrk["latency_p99_s"]) == (200, 688, 0.12168)
    assert frame.iloc[1]["failures"] == 78 + 3452
    assert frame.iloc[2]["failures"] == 100 and frame.iloc[2]["concurrency"] == 100
    assert frame.iloc[3]["non_2xx"] == 69 and frame.iloc[3]["failures"] == 69


def test_sources_and_report_dicts_are_accepted(tmp_path):
    path = tmp_path / "seed.txt"
    path.write_text(SEED_001_RUNS, encoding="utf-8")
    source = parse(path)
    from_source = compare_reports([source])
    from_dicts = compare_reports(source.reports)
    assert from_source["requests_per_sec"].tolist() == [3359.59, 510.51]
    pd.testing.assert_frame_equal(from_source, from_dicts)
    assert from_source["label"].tolist() == ["seed.txt:2", "seed.txt:14"]


def test_plot_against_concurrency(runs_file):
    frame = compare_reports([runs_file])
    ax = plot_comparison(frame)
    assert ax.get_xlabel() == "concurrency (connections)"
    assert ax.get_ylabel() == "requests/s"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["100", "200", "500"]
    twin = [other for other in ax.figure.axes if other is not ax][0]
    assert twin.get_ylabel() == "latency (ms)"
    p99 = [line for line in twin.get_lines() if line.get_label() == "p99"][0]
    assert list(p99.get_ydata()) == pytest.approx([10.0, 11.0, 12.0])
    bars = [patch.get_height() for patch in ax.patches]
    assert bars == [17329.0, 16443.0, 15852.0]


def test_plot_against_runs_when_concurrency_repeats(tmp_path):
    path = tmp_path / "seed.txt"
    path.write_text(SEED_001_RUNS, encoding="utf-8")
    ax = plot_comparison(compare_reports([path]))
    assert ax.get_xlabel() == "run (file:line)"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["seed.txt:2", "seed.txt:14"]


def test_report_json_is_plain_json():
    report = {"start": pd.Timestamp("2019-10-13 10:00:00"), "end": pd.NaT, "value": float("nan"),
              "count": pd.Series([3]).iloc[0], "nested": {50: 0.018}, "spectrum": [(0.1, 0.5, 3)]}
    out = report_json(report)
    assert out == {"start": "2019-10-13T10:00:00", "end": None, "value": None, "count": 3,
                   "nested": {"50": 0.018}, "spectrum": [[0.1, 0.5, 3]]}
    assert json.loads(json.dumps(out)) == out
    assert not any(isinstance(v, float) and math.isnan(v) for v in out.values())
