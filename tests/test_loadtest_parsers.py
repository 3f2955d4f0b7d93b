"""Load-test report parsers (ab, wrk, wrk2, httperf, tsar) against the
real-world corpus and its expected values, plus pasted reports, damaged
reports and the placement of reports on the timeline."""
from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pandas as pd
import pytest

from sarsleuth.render.formats.json import report_json
from sarsleuth.errors import InputError
from sarsleuth.inputs.parsers import parse, registry, sniff
from sarsleuth.inputs.parsers.base import ParseOptions

LOADTEST_KINDS = ("ab", "wrk", "wrk2", "httperf", "tsar")


def _leaves(expected: dict, prefix=()):
    for key, value in expected.items():
        if isinstance(value, dict):
            yield from _leaves(value, prefix + (key,))
        else:
            yield prefix + (key,), value


def _lookup(report: dict, path):
    for key in path:
        if not isinstance(report, dict) or key not in report:
            return KeyError
        report = report[key]
    return report


def _same(got, want) -> bool:
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(_same(g, w) for g, w in zip(got, want))
    if isinstance(want, bool) or isinstance(got, bool):
        return got is want
    if isinstance(want, (int, float)) and isinstance(got, (int, float)):
        # tolerance for float representation only (17.76 * 1024**3 printed with one decimal)
        return math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12)
    return got == want


@pytest.fixture(scope="module")
def loadtest_dir(corpus) -> Path:
    path = corpus / "loadtest"
    if not (path / "expected.json").is_file():
        pytest.skip("corpus has no loadtest/expected.json")
    return path


@pytest.fixture(scope="module")
def expected(loadtest_dir) -> dict:
    return json.loads((loadtest_dir / "expected.json").read_text(encoding="utf-8"))


def test_expected_fields_reproduced(loadtest_dir, expected):
    total, matched, mismatches = 0, 0, []
    for name, fields in expected.items():
        report = report_json(parse(loadtest_dir / name).reports[0])
        for path, want in _leaves(fields):
            total += 1
            got = _lookup(report, path)
            if got is not KeyError and _same(got, want):
                matched += 1
            else:
                mismatches.append(f"{name}: {'.'.join(path)} expected {want!r} got {got!r}")
    ratio = matched / total
    print(f"\nload-test fields reproduced: {matched}/{total} = {ratio:.4f}")
    for line in mismatches:
        print("  MISMATCH", line)
    assert total > 1000
    assert ratio >= 0.97, mismatches


def test_every_corpus_file_sniffs_and_parses(loadtest_dir, expected):
    for name, fields in expected.items():
        path = loadtest_dir / name
        kind, reason = sniff(path)
        assert kind == fields["tool"], (name, kind, reason)
        source = parse(path)
        assert source.kind == fields["tool"]
        assert source.reports, name
        assert source.warnings == [], (name, source.warnings)
        assert len(source.events) == len(source.reports)
        assert set(source.events["kind"]) == {"loadtest-run"}
    assert len(expected) == 43


def test_reports_are_json_safe_and_located(loadtest_dir, expected):
    for name in expected:
        for report in parse(loadtest_dir / name).reports:
            text = json.dumps(report_json(report))
            assert "NaN" not in text
            assert report["path"].endswith(name)
            assert report["line"] >= 1
            assert report["time_from"] in ("mtime", "report", "window")


def test_ab_command_and_keepalive_fields(loadtest_dir):
    report = parse(loadtest_dir / "ab-keepalive-failed-length-huge-transfer.txt").reports[0]
    assert report["command"] == "ab -n 5000 -c 500 -k http://192.168.1.186:80/large.html"
    assert report["concurrency"] == 500 and report["requests"] == 5000
    assert report["keepalive_requests"] == 4800
    assert report["connection_times_s"]["total"] == {"min": 0.119, "mean": 11.38, "sd": 36.3903,
                                                     "median": 3.702, "max": 194.279}
    assert report["line"] == 1


def test_ab_abort_without_statistics(loadtest_dir):
    source = parse(loadtest_dir / "ab-aborted-pollset-timeout-70007-zero-done.txt")
    report = source.reports[0]
    assert report["aborted"] and not report["complete"]
    assert report["requests_completed"] == 0
    assert "aborted" in source.events["message"].iloc[0]
    assert source.events["level"].iloc[0] == "error"


def test_wrk2_spectrum_and_uncorrected_block(loadtest_dir):
    report = parse(loadtest_dir / "wrk2-u-latency-both-spectra-socket-errors.txt").reports[0]
    spectrum = report["latency_spectrum"]
    assert spectrum[0] == [0.001458, 0.0, 1]
    assert spectrum[-1][1] == 1.0 and spectrum[-1][2] == 106045
    assert report["uncorrected_latency_spectrum"][-1][2] == 106045
    assert report["uncorrected_hdr_stddev_s"] == pytest.approx(0.447413)
    assert report["latency_p99.99_s"] == 22.2


def test_wrk2_int64max_calibration_is_not_a_latency(loadtest_dir):
    report = parse(loadtest_dir / "wrk2-int64max-calibration-all-non2xx-md-fences.txt").reports[0]
    means = report["calibration_mean_latency_s"]
    assert len(means) == 64 and means.count(None) == 16
    assert max(m for m in means if m is not None) == pytest.approx(0.118658)


def test_tsar_metrics_frame(loadtest_dir):
    source = parse(loadtest_dir / "tsar-history-default-max-mean-min.txt")
    metrics = source.metrics
    assert source.host == "clsn6"
    disk = metrics[(metrics["section"] == "tsar-io") & (metrics["device"] == "sda")]
    assert list(disk["metric"].unique()) == ["util"]
    assert disk["value"].tolist() == [0.15, 0.03, 0.01, 0.02, 0.10, 0.01]
    bytin = metrics[metrics["metric"] == "bytin"]
    assert bytin["timestamp"].iloc[-1] == pd.Timestamp("2018-06-04 21:10")
    assert len(metrics) == 6 * 7


def test_tsar_timestamps_take_the_given_zone(loadtest_dir):
    from sarsleuth.timebase import settle
    source = parse(loadtest_dir / "tsar-live-traffic-pps-millions.txt")
    assert source.metrics["timestamp"].dt.tz is None          # tsar prints wall clock
    settle([source], registry(), tz="Asia/Shanghai")
    assert str(source.metrics["timestamp"].dt.tz) == "Asia/Shanghai"
    assert report_json(source.reports[0])["first_timestamp"] == "2022-09-16T12:41:07+08:00"


def test_compressed_report_parses_the_same(loadtest_dir, tmp_path):
    original = loadtest_dir / "wrk-readme-basic-high-rps-gb.txt"
    packed = tmp_path / "run.log"
    packed.write_bytes(gzip.compress(original.read_bytes()))
    assert sniff(packed)[0] == "wrk"
    assert parse(packed).reports[0]["requests_per_sec"] == 748868.53


# --------------------------------------------------------------------------
# seed report 001: two ab outputs pasted into a post-mortem, without banners

SEED_001_RUNS = """\
ab 压测的参数很多,一般我们用 -c -n 参数就可以了
Concurrency Level:      100
Time taken for tests:   2.084 seconds
Complete requests:      7000
Failed requests:        0
Write errors:           0
Keep-Alive requests:    7000
Total transferred:      382123000 bytes
HTML transferred:       379099000 bytes
Requests per second:    3359.59 [#/sec] (mean)
Time per request:       29.766 [ms] (mean)
Time per request:       0.298 [ms] (mean, across all concurrent requests)
Transfer rate:          179098.09 [Kbytes/sec] received

Connection Times (ms)
              min  mean[+/-sd] median   max
Connect:        0    0   0.3      0       2
Processing:    11   27  66.5     18    1026
Waiting:        9   24  66.5     16    1023
Total:         11   27  66.5     18    1026

Percentage of the requests served within a certain time (ms)
  50%     18
  66%     19
  75%     20
  80%     22
  90%     31
  95%     39
  98%     75
  99%    264
 100%   1026 (longest request)

  • 使用单客户端压测未能完全压榨服务器的性能
1
2
3
Concurrency Level:      100
Time taken for tests:   13.712 seconds
Complete requests:      7000
Failed requests:        0
Write errors:           0
Keep-Alive requests:    7000
Total transferred:      14657258000 bytes
HTML transferred:       14656334000 bytes
Requests per second:    510.51 [#/sec] (mean)
Time per request:       195.881 [ms] (mean)
Time per request:       1.959 [ms] (mean, across all concurrent requests)
Transfer rate:          1043909.08 [Kbytes/sec] received

Connection Times (ms)
              min  mean[+/-sd] median   max
Connect:        0    0   0.1      0       2
Processing:    41  193  63.6    179     785
Waiting:       35  186  64.5    174     777
Total:         41  193  63.6    179     785

Percentage of the requests served within a certain time (ms)
  50%    179
  66%    195
  75%    207
"""


def test_seed_001_two_pasted_ab_runs(tmp_path):
    path = tmp_path / "postmortem.txt"
    path.write_text(SEED_001_RUNS, encoding="utf-8")
    assert sniff(path)[0] == "ab"
    source = parse(path)
    assert source.warnings == []
    small, large = source.reports
    assert (small["line"], large["line"]) == (2, 37)
    assert small["requests_per_sec"] == 3359.59
    assert small["failed_requests"] == 0 and small["non_2xx"] == 0
    assert small["latency_p50_s"] == 0.018
    assert small["latency_p99_s"] == 0.264
    assert small["latency_max_s"] == 1.026
    assert small["latency_p99_s"] / small["latency_p50_s"] == pytest.approx(14.67, abs=0.01)
    assert small["keepalive_requests"] == 7000
    assert large["requests_per_sec"] == 510.51
    assert large["transfer_rate_Bps"] == pytest.approx(1043909.08 * 1024)
    # two clients at this rate fill a 20000 Mb/s NIC
    assert 2 * large["transfer_rate_Bps"] * 8 / 1e9 == pytest.approx(17.1, abs=0.1)
    # the paste stops after the 75 % row: the tail is missing, not invented
    assert large["latency_p99_s"] is None and large["latency_max_s"] is None
    assert list(source.events["line"]) == [2, 37]


def test_reports_without_timestamps_sit_at_mtime_or_window(tmp_path):
    import sarsleuth
    from sarsleuth.timebase import settle
    path = tmp_path / "run.txt"
    path.write_text(SEED_001_RUNS, encoding="utf-8")
    source = parse(path)
    first = source.reports[0]
    assert first["time_from"] == "mtime"
    assert first["end"] - first["start"] == pd.Timedelta(seconds=2.084)
    assert str(first["end"].tzinfo) == "UTC"                 # the file's mtime: an instant
    settle([source], registry(), tz="Asia/Shanghai")
    assert str(source.reports[0]["start"].tzinfo) == "Asia/Shanghai"
    # a --window places a run that carries no time of its own
    case = sarsleuth.load(path, window="2019-10-13T10:00..2019-10-13T11:00")
    placed = case.reports[0]
    assert (placed["start"], placed["end"], placed["time_from"]) == (
        pd.Timestamp("2019-10-13 10:00"), pd.Timestamp("2019-10-13 11:00"), "window")


# --------------------------------------------------------------------------
# several complete runs in one file (report 003 compared runs at several
# concurrencies)

def _ab_run(concurrency: int, rps: float, p50: int, p99: int) -> str:
    return f"""\
$ ab -n 10000 -c {concurrency} http://127.0.0.1/hello
This is ApacheBench, Version 2.3 <$Revision: 655654 $>
Copyright 1996 Adam Twiss, Zeus Technology Ltd, http://www.zeustech.net/
Licensed to The Apache Software Foundation, http://www.apache.org/

Benchmarking 127.0.0.1 (be patient)
Completed 10000 requests
Finished 10000 requests


Server Software:        ngx_openresty
Server Hostname:        127.0.0.1
Server Port:            80

Document Path:          /hello
Document Length:        512 bytes

Concurrency Level:      {concurrency}
Time taken for tests:   0.577 seconds
Complete requests:      10000
Failed requests:        0
Write errors:           0
Total transferred:      6680000 bytes
HTML transferred:       5120000 bytes
Requests per second:    {rps} [#/sec] (mean)
Time per request:       5.771 [ms] (mean)
Time per request:       0.058 [ms] (mean, across all concurrent requests)
Transfer rate:          11303.62 [Kbytes/sec] received

Connection Times (ms)
              min  mean[+/-sd] median   max
Connect:        0    2   0.9      2       6
Processing:     1    4   1.3      3      11
Waiting:        0    3   1.2      3      10
Total:          2    6   1.2      {p50}      13

Percentage of the requests served within a certain time (ms)
  50%      {p50}
  66%      6
  75%      6
  80%      6
  90%      7
  95%      8
  98%      9
  99%     {p99}
 100%     13 (longest request)
"""


def test_several_runs_split_at_each_command(tmp_path):
    runs = [(100, 17329.0, 5, 10), (200, 16443.0, 6, 11), (500, 15852.0, 6, 12)]
    path = tmp_path / "ngx_lua_vs_go.txt"
    path.write_text("\n".join(_ab_run(*run) for run in runs), encoding="utf-8")
    source = parse(path)
    assert source.warnings == []
    assert [r["concurrency"] for r in source.reports] == [100, 200, 500]
    assert [r["requests_per_sec"] for r in source.reports] == [17329.0, 16443.0, 15852.0]
    assert [r["latency_p99_s"] for r in source.reports] == [0.010, 0.011, 0.012]
    assert [r["command"] for r in source.reports][1] == "ab -n 10000 -c 200 http://127.0.0.1/hello"
    run_lines = len(_ab_run(*runs[0]).splitlines()) + 1   # the runs are joined by a blank line
    assert [r["line"] for r in source.reports] == [1, 1 + run_lines, 1 + 2 * run_lines]
    assert all(r["ab_version"] == "2.3" and r["complete"] for r in source.reports)


# --------------------------------------------------------------------------
# damaged input

def test_malformed_ab_value_names_line_and_column(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("This is ApacheBench, Version 2.3 <$Revision: 1903618 $>\n"
                    "Requests per second:    fast [#/sec] (mean)\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        parse(path, kind="ab")
    assert caught.value.line == 2
    assert "column 25" in str(caught.value)
    assert str(caught.value).startswith(f"{path}:2:")


def test_damaged_line_inside_a_report_is_a_warning(tmp_path):
    text = _ab_run(100, 17329.0, 5, 10).replace("Complete requests:      10000",
                                                  "Complete requests:      10k")
    path = tmp_path / "damaged.txt"
    path.write_text(text, encoding="utf-8")
    source = parse(path)
    assert source.reports[0]["requests_per_sec"] == 17329.0
    assert source.reports[0]["requests_completed"] is None
    assert len(source.warnings) == 1
    assert ":20: column 27: unexpected 'k'; expected end of line" in source.warnings[0]


def test_statement_out_of_order_is_reported(tmp_path):
    text = _ab_run(100, 17329.0, 5, 10)
    lines = text.splitlines()
    # the percentile header moved into the counters: the counters after it
    # cannot follow it, so the report is cut there and the split is reported
    moved = lines[:21] + ["Percentage of the requests served within a certain time (ms)"] + lines[21:]
    path = tmp_path / "shuffled.txt"
    path.write_text("\n".join(moved), encoding="utf-8")
    source = parse(path)
    assert len(source.warnings) == 1
    assert ":23: column 1: report cut short: write errors where end of report, percentile row was expected" \
        in source.warnings[0]
    # what is readable is kept: the counters before and the results after
    assert [r["concurrency"] for r in source.reports] == [100, None]
    assert source.reports[0]["requests_per_sec"] is None
    assert source.reports[1]["requests_per_sec"] == 17329.0


def _from(text: str, first: str) -> list[str]:
    lines = text.splitlines()
    return lines[next(i for i, line in enumerate(lines) if line.startswith(first)):]


def test_report_pasted_again_from_its_middle_is_one_report(tmp_path):
    # a poster trims a report, then pastes it again from "HTML transferred:":
    # the rate and times repeat word for word, the tail follows once
    run = _ab_run(100, 3.04, 16921, 32900)
    head = _from(run, "Concurrency Level:")[:4] + _from(run, "Requests per second:")[:4]
    path = tmp_path / "trimmed.txt"
    path.write_text("\n".join(head + [""] + _from(run, "HTML transferred:")), encoding="utf-8")
    source = parse(path)
    (report,) = source.reports
    assert (report["concurrency"], report["requests_per_sec"]) == (100, 3.04)
    assert (report["latency_p50_s"], report["latency_max_s"]) == (16.921, 13 / 1000)
    assert report["html_transferred_bytes"] == 5120000 and report["complete"]
    assert len(source.warnings) == 1
    assert ":10: column 1: 4 line(s) from here repeat the report above (line 1) word for word: " \
           "read as one report" in source.warnings[0]


def test_another_run_pasted_from_its_middle_stays_its_own(tmp_path):
    # near miss: the second fragment's rate is not the first one's: two runs
    first, second = _ab_run(100, 3.04, 16921, 32900), _ab_run(100, 5.12, 9000, 19000)
    lines = _from(first, "Concurrency Level:")[:8] + [""] + _from(second, "HTML transferred:")
    path = tmp_path / "two.txt"
    path.write_text("\n".join(lines), encoding="utf-8")
    source = parse(path)
    assert [r["requests_per_sec"] for r in source.reports] == [3.04, 5.12]
    assert len(source.warnings) == 1 and ":10: column 1: report cut short: html transferred" in source.warnings[0]


def test_file_without_report_raises(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("nothing measured here\n", encoding="utf-8")
    for kind in LOADTEST_KINDS:
        with pytest.raises(InputError):
            parse(path, kind=kind)


def test_malformed_wrk_summary(tmp_path):
    path = tmp_path / "wrk.txt"
    path.write_text("Requests/sec:   lots\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        parse(path, kind="wrk")
    assert caught.value.line == 1 and "column 17" in str(caught.value)


def test_tsar_row_with_missing_value_is_a_warning(loadtest_dir, tmp_path):
    text = (loadtest_dir / "tsar-live-traffic-K-and-M-mixed.txt").read_text(encoding="utf-8")
    text = text.replace("  58.3M  159.6M  817.3K    1.2M    0.00    0.00", "  58.3M  159.6M  817.3K    1.2M    0.00")
    path = tmp_path / "tsar.txt"
    path.write_text(text, encoding="utf-8")
    source = parse(path)
    assert source.reports[0]["rows"] == 2
    assert len(source.warnings) == 1 and ":5:" in source.warnings[0]


def test_tsar_row_with_a_value_no_counter_holds_is_a_warning(loadtest_dir, tmp_path):
    text = (loadtest_dir / "tsar-live-traffic-K-and-M-mixed.txt").read_text(encoding="utf-8")
    text = text.replace("  58.3M  159.6M", "  99999999999999999999999999M  159.6M", 1)
    path = tmp_path / "tsar.txt"
    path.write_text(text, encoding="utf-8")
    source = parse(path, kind="tsar")
    assert source.reports[0]["rows"] == 2
    assert len(source.warnings) == 1 and "a number of 26 digits is out of any measured range" in source.warnings[0]


# --------------------------------------------------------------------------
# httperf sessions (--wsess): every section of the report

HTTPERF_SESSIONS = """\
httperf --client=0/1 --server=10.0.0.5 --port=80 --uri=/ --rate=10 --send-buffer=4096 --recv-buffer=16384 --wsess=100,5,1 --burst-length=1
Maximum connect burst length: 1

Total: connections 500 requests 500 replies 495 test-duration 10.512 s

Connection rate: 47.6 conn/s (21.0 ms/conn, <=12 concurrent connections)
Connection time [ms]: min 1.1 avg 3.9 max 31.7 median 2.5 stddev 4.2
Connection time [ms]: connect 0.4
Connection length [replies/conn]: 1.000

Request rate: 47.6 req/s (21.0 ms/req)
Request size [B]: 62.0

Reply rate [replies/s]: min 45.0 avg 47.1 max 49.2 stddev 2.9 (2 samples)
Reply time [ms]: response 3.2 transfer 0.1
Reply size [B]: header 240.0 content 612.0 footer 0.0 (total 852.0)
Reply status: 1xx=0 2xx=480 3xx=0 4xx=10 5xx=5

CPU time [s]: user 2.61 system 7.88 (user 24.8% system 75.0% total 99.8%)
Net I/O: 42.3 KB/s (0.3*10^6 bps)

Errors: total 5 client-timo 5 socket-timo 0 connrefused 0 connreset 0
Errors: fd-unavail 0 addrunavail 0 ftab-full 0 other 0

Session rate [sess/s]: min 8.80 avg 9.51 max 10.20 stddev 0.99 (95/100)
Session: avg 5.00 connections/session
Session lifetime [s]: 0.4
Session failtime [s]: 0.2
Session length histogram: 0 0 0 0 5 95
"""


def test_httperf_all_sections(tmp_path):
    path = tmp_path / "httperf.txt"
    path.write_text(HTTPERF_SESSIONS, encoding="utf-8")
    assert sniff(path)[0] == "httperf"
    source = parse(path)
    assert source.warnings == []
    report = source.reports[0]
    assert report["non_2xx"] == 15
    assert report["errors"]["client_timo"] == 5 and report["errors_total"] == 5
    assert report["goodput_replies_per_sec"] == pytest.approx(495 / 10.512)
    assert report["sessions_ok"] == 95 and report["sessions_total"] == 100
    assert report["session_length_histogram"] == [0, 0, 0, 0, 5, 95]
    assert report["session_lifetime_s"] == 0.4
    assert report["rate_option_per_sec"] == 10 and report["server"] == "10.0.0.5"
    assert report["net_io_Bps"] == pytest.approx(42.3 * 1024)
    assert "5 errors" in source.events["message"].iloc[0]


def test_grammars_ship_in_the_package_and_compile_once():
    from sarsleuth.inputs.parsers.loadtest import grammars
    for tool in ("ab", "wrk", "httperf", "tsar"):
        assert "start: statement" in grammars.grammar_text(tool)
        assert "start: report" in grammars.grammar_text(f"{tool}-document")
        assert grammars.statement_parser(tool) is grammars.statement_parser(tool)
        assert grammars.document_parser(tool) is grammars.document_parser(tool)


# ---- evidence: each value names its own line --------------------------------------

#: An ab 2.3 report as ab prints it (the command line above it, as pasted).
AB_REPORT = """$ ab -n 2000 -c 100 http://10.0.0.5/img/2m.jpg
This is ApacheBench, Version 2.3 <$Revision: 1903618 $>
Copyright 1996 Adam Twiss, Zeus Technology Ltd, http://www.zeustech.net/
Licensed to The Apache Software Foundation, http://www.apache.org/

Benchmarking 10.0.0.5 (be patient)


Server Software:        nginx/1.24.0
Server Hostname:        10.0.0.5
Server Port:            80

Document Path:          /img/2m.jpg
Document Length:        2097152 bytes

Concurrency Level:      100
Time taken for tests:   3.918 seconds
Complete requests:      2000
Failed requests:        0
Non-2xx responses:      12
Total transferred:      4194800000 bytes
HTML transferred:       4194304000 bytes
Requests per second:    510.51 [#/sec] (mean)
Time per request:       195.881 [ms] (mean)
Time per request:       1.959 [ms] (mean, across all concurrent requests)
Transfer rate:          1045553.31 [Kbytes/sec] received

Connection Times (ms)
              min  mean[+/-sd] median   max
Connect:        0    1   0.9      1       5
Processing:    40  193  61.2    187     493
Waiting:        1    7   4.1      6      31
Total:         41  194  61.1    188     495

Percentage of the requests served within a certain time (ms)
  50%    188
  66%    211
  75%    226
  80%    236
  90%    270
  95%    302
  98%    348
  99%    389
 100%    495 (longest request)
"""


def test_ab_values_keep_their_own_lines(tmp_path):
    path = tmp_path / "ab-2m.txt"
    path.write_text(AB_REPORT)
    report = parse(path).reports[0]
    lines = AB_REPORT.splitlines()
    where = report["value_lines"]
    assert where["transfer_rate_Bps"] == {"line": 26, "text": lines[25]}
    assert lines[25].startswith("Transfer rate:")
    assert where["non_2xx"]["line"] == 20 and where["latency_p99_s"]["text"] == "  99%    389"
    assert report["line"] == 1          # the report itself starts at its command line


def test_loadtest_findings_quote_the_value_line(tmp_path):
    from sarsleuth.detectors.context import Context
    from sarsleuth.detectors.loadtest import LoadtestErrors
    path = tmp_path / "ab-2m.txt"
    path.write_text(AB_REPORT)
    src = parse(path)
    found = LoadtestErrors().run(Context(metrics=None, events=None, reports=src.reports, sources=[src]))
    assert found and found[0].evidence[0].line == 20
    assert found[0].evidence[0].text == "Non-2xx responses:      12"


#: ``tsar --cpu --mem --io`` history as tsar prints it (src/output_print.c):
#: each group name is centred in dashes over its columns, 8 characters a
#: column; a name as long as that is cut to it with no dashes
#: (``nvme0n1p1`` -> ``nvme0n1p``), one a character shorter gets a dash on
#: the right only (``nvme0n1-``).
TSAR_CUT_GROUPS = """\
Time           ---cpu-- ---mem-- nvme0n1- nvme1n1- nvme10n1 nvme0n1p  
Time             util     util     util     util     util     util    
23/11/26-10:05   12.50    40.10     3.20     0.00     1.50     0.40   
23/11/26-10:10   15.00    41.00    80.50     1.00     2.50     0.60   

MAX              15.00    41.00    80.50     1.00     2.50     0.60   
MEAN             13.75    40.55    41.85     0.50     2.00     0.50   
MIN              12.50    40.10     3.20     0.00     1.50     0.40   
"""


def test_tsar_groups_cut_to_the_column_width_keep_their_columns(tmp_path):
    path = tmp_path / "tsar.txt"
    path.write_text(TSAR_CUT_GROUPS)
    source = parse(path)
    report = source.reports[0]
    assert report["columns"] == ["cpu.util", "mem.util", "io.nvme0n1.util", "io.nvme1n1.util",
                                 "io.nvme10n1.util", "io.nvme0n1p.util"]
    assert report["first_row"]["cpu.util_pct"] == 12.5 and report["first_row"]["mem.util_pct"] == 40.1
    assert report["summary_MAX"]["io.nvme0n1.util_pct"] == 80.5
    m = source.metrics
    cpu = m[(m.section == "tsar-cpu") & (m.metric == "util")]
    assert cpu.value.tolist() == [12.5, 15.0]
    mem = m[(m.section == "tsar-mem") & (m.metric == "util")]
    assert mem.value.tolist() == [40.1, 41.0]
    io = m[(m.section == "tsar-io") & (m.device == "nvme0n1")]
    assert io.value.tolist() == [3.2, 80.5]
    assert any(f"{path}:1: tsar printed 2 group name(s) as wide as their columns (e.g. 'nvme10n1')" in w
               for w in source.warnings), source.warnings
