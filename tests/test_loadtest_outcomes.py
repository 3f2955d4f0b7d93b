"""What a load-test report alone says about the server: a run that fell
behind the rate it asked (wrk2 -R), and runs most of whose requests failed,
told as an incident of their own (and the runs that look like them but are
not)."""
from __future__ import annotations

import sarsleuth


def _wrk2(rate: int, p50: str, p99: str, mx: str, per_thread: str, totals: bool) -> str:
    text = f"""\
$ wrk2 -t4 -c400 -d60s -R{rate} --latency http://10.0.3.7:8080/quote
Running 1m test @ http://10.0.3.7:8080/quote
  4 threads and 400 connections
  Thread calibration: mean lat.: 412.118ms, rate sampling interval: 1466ms
  Thread calibration: mean lat.: 409.870ms, rate sampling interval: 1462ms
  Thread calibration: mean lat.: 415.002ms, rate sampling interval: 1470ms
  Thread calibration: mean lat.: 410.551ms, rate sampling interval: 1464ms
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     {p50:>6}     2.10s   {mx:>6}   58.02%
    Req/Sec   {per_thread:>7}    41.20     {per_thread:>7}    70.11%
  Latency Distribution (HdrHistogram - Recorded Latency)
 50.000%  {p50:>7}
 75.000%  {p50:>7}
 90.000%  {p99:>7}
 99.000%  {p99:>7}
 99.900%  {mx:>7}
100.000%  {mx:>7}
"""
    if totals:
        text += f"""\
  {int(float(per_thread.rstrip('k')) * 4000 * 60)} requests in 1.00m, 52.30MB read
Requests/sec:   {float(per_thread.rstrip('k')) * 4000:.2f}
Transfer/sec:    892.51KB
"""
    return text


def _load(tmp_path, name: str, text: str):
    path = tmp_path / name / "report.txt"
    path.parent.mkdir()
    path.write_text(text)
    return sarsleuth.load(path)


def test_a_constant_rate_run_that_fell_behind_measured_a_queue(tmp_path):
    case = _load(tmp_path, "behind", _wrk2(20000, "6.42s", "11.90s", "12.51s", "3.80k", totals=True))
    (behind,) = [f for f in case.findings if f.detector == "loadtest-behind-rate"]
    assert behind.metrics["reached_rate_per_sec"] == 15200.0 and round(behind.metrics["shortfall"], 2) == 0.24
    assert "15.2k/s reached of 20.0k/s asked (24 % short), median latency 6.42 s, max 12.51 s" in behind.title
    assert behind.evidence[0].line == 19 and "Requests/sec" in behind.evidence[0].text
    (inc,) = case.incidents
    assert inc.category == "load-test-failure" and "symptom" in inc.story["why"]
    assert any("lower -R steps (e.g. 15,200/s and below)" in r for r in inc.recommendations)
    # the paste cut before its totals: the threads' Req/Sec, said so
    cut = _load(tmp_path, "cut", _wrk2(20000, "6.42s", "11.90s", "12.51s", "3.80k", totals=False))
    (short,) = [f for f in cut.findings if f.detector == "loadtest-behind-rate"]
    assert short.metrics["reached_rate_per_sec"] == 15200.0 and short.evidence[0].line == 10
    assert short.metrics["reached_estimated"] == 1 and behind.metrics["reached_estimated"] == 0
    assert "about 15.2k/s reached (its threads' Req/Sec x 4, no Requests/sec line) of 20.0k/s asked" in short.title
    assert [w.split(": ", 1)[1] for w in cut.warnings if "cut short" in w] == [
        "wrk2 report cut short after this line, before its totals ('N requests in ...', Requests/sec): read as far "
        "as it goes"]
    assert not [w for w in case.warnings if "cut short" in w]        # near miss: the whole report


def test_runs_that_held_their_rate_or_answered_fast_are_not_behind(tmp_path):
    held = _load(tmp_path, "held", _wrk2(15000, "1.20s", "2.10s", "2.31s", "3.80k", totals=True))      # 1 % short
    fast = _load(tmp_path, "fast", _wrk2(20000, "45.10ms", "90.00ms", "120.00ms", "3.80k", totals=True))
    assert not [f for c in (held, fast) for f in c.findings if f.detector == "loadtest-behind-rate"]


AB_RESET = """\
This is ApacheBench, Version 2.3 <$Revision: 1903618 $>
Copyright 1996 Adam Twiss, Zeus Technology Ltd, http://www.zeustech.net/
Licensed to The Apache Software Foundation, http://www.apache.org/

Benchmarking 127.0.0.1 (be patient)
Completed 5000 requests
apr_socket_recv: Connection reset by peer (104)
Total of 5431 requests completed
"""

WRK_NONE_ANSWERED = """\
Running 10s test @ http://127.0.0.1:9000/
  2 threads and 50 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     0.00us    0.00us   0.00us    -nan%
    Req/Sec     0.00      0.00     0.00      -nan%
  0 requests in 10.01s, 0.00B read
  Socket errors: connect 0, read 1804, write 0, timeout 0
Requests/sec:      0.00
Transfer/sec:       0.00B
"""

WRK_FEW_TIMEOUTS = """\
Running 10s test @ http://127.0.0.1:9000/
  2 threads and 50 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency    10.21ms    3.02ms  1.99s    97.10%
    Req/Sec     2.44k   120.31     2.71k    71.00%
  48612 requests in 10.01s, 7.10MB read
  Socket errors: connect 0, read 0, write 0, timeout 60
Requests/sec:   4856.39
Transfer/sec:    726.44KB
"""


def test_a_run_that_failed_whole_is_an_incident_of_its_own(tmp_path):
    aborted = _load(tmp_path, "ab", AB_RESET)
    (inc,) = aborted.incidents
    assert inc.severity == "high" and "aborted after 5,431 requests" in inc.title
    assert inc.story["cause"].startswith("not in these files")
    none = _load(tmp_path, "wrk", WRK_NONE_ANSWERED)
    (errors,) = [f for f in none.findings if f.detector == "loadtest-errors"]
    assert errors.severity == "high" and errors.metrics["failed_share"] == 1.0
    assert "1804 socket errors and no request answered" in errors.title and len(none.incidents) == 1
    # near miss: 60 timeouts in 48,612 requests are said, not an incident
    one = _load(tmp_path, "one", WRK_FEW_TIMEOUTS)
    (small,) = [f for f in one.findings if f.detector == "loadtest-errors"]
    assert small.severity == "low" and one.incidents == []


def test_wrk_s_timeouts_left_out_of_its_latency_are_said_however_few(tmp_path):
    """wrk 4.x records no latency for a request it timed out (src/wrk.c):
    53 timeouts in 100,000 requests (0.05 %) and a max of 26.54 ms."""
    text = WRK_FEW_TIMEOUTS.replace("1.99s", "26.54ms").replace("48612 requests", "100000 requests").replace(
        "timeout 60", "timeout 53")
    case = _load(tmp_path, "few", text)
    (said,) = [f for f in case.findings if f.detector == "loadtest-errors"]
    assert said.title == ("wrk c=50: 53 socket errors, the 53 timed out are left out of its latency figures "
                          "(its max 26.54 ms is not the slowest)")
    assert (said.severity, said.metrics["timeouts_not_in_latency"]) == ("low", 53.0) and case.incidents == []
    # near miss: read errors alone, as few, say nothing of the latency figures
    quiet = _load(tmp_path, "reads", text.replace("read 0, write 0, timeout 53", "read 53, write 0, timeout 0"))
    assert not [f for f in quiet.findings if f.detector == "loadtest-errors"]


def test_a_real_overloaded_wrk2_run_is_an_incident_with_its_mean_said_as_such(corpus):
    case = sarsleuth.load(corpus / "loadtest" / "wrk2-overload-timeouts-seconds-latency.txt")
    (behind,) = [f for f in case.findings if f.detector == "loadtest-behind-rate"]
    # 10 threads x ... Requests/sec 5101.89 against -R 100000; no --latency: the mean, 17.91 s
    assert behind.metrics["reached_rate_per_sec"] == 5101.89 and behind.metrics["latency_p50_s"] == 17.91
    assert "5,102/s reached of 100.0k/s asked (95 % short), mean latency 17.91 s, max 28.93 s" in behind.title
    (inc,) = case.incidents
    assert inc.findings[0] is behind and [f.detector for f in inc.findings[1:]] == ["loadtest-errors"]

