"""A load test whose requests all waited as long as the server stayed
frozen: wrk 4.1's report with --latency (its layout, units and rounding),
and the runs that look like it but are not one."""
from __future__ import annotations

import pytest

import sarsleuth


def _wrk(p50: str, p75: str, p90: str, p99: str, avg: str, stdev: str, mx: str, requests: int, timeouts: int,
         rps: str) -> str:
    return f"""\
$ wrk -t2 -c10 -d10s --timeout 6s --latency http://127.0.0.1:8080/api
Running 10s test @ http://127.0.0.1:8080/api
  2 threads and 10 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     {avg:>6}   {stdev:>7}   {mx:>6}   90.00%
    Req/Sec     0.00      0.00     0.00    100.00%
  Latency Distribution
     50%  {p50:>7}
     75%  {p75:>7}
     90%  {p90:>7}
     99%  {p99:>7}
  {requests} requests in 10.02s, 1.21KB read
  Socket errors: connect 0, read 0, write 0, timeout {timeouts}
Requests/sec:   {rps:>8}
Transfer/sec:     123.45B
"""


#: the server stopped for 5 s (SIGSTOP): every request held as long, two
#: given up at the client
FROZEN = _wrk("5.01s", "5.01s", "5.01s", "5.01s", "5.01s", "0.00us", "5.01s", 10, 2, "1.00")
#: a normal median, a tail reaching the timeout: answered, some slowly
LONG_TAIL = _wrk("12.31ms", "20.10ms", "45.02ms", "5.01s", "88.20ms", "512.00ms", "5.01s", 8123, 3, "810.67")
#: every request slow but well under a second: a slow endpoint
EVENLY_SLOW = _wrk("301.22ms", "305.10ms", "309.90ms", "318.40ms", "302.00ms", "4.10ms", "320.01ms", 330, 0, "32.93")
#: slow and spread: p99 four times p50
SPREAD = _wrk("1.20s", "2.10s", "3.50s", "4.81s", "1.90s", "1.10s", "4.90s", 52, 0, "5.19")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("wrk")
    cases = {}
    for name, text in [("frozen", FROZEN), ("long-tail", LONG_TAIL), ("evenly-slow", EVENLY_SLOW), ("spread", SPREAD)]:
        path = folder / name / "wrk.txt"
        path.parent.mkdir()
        path.write_text(text)
        cases[name] = sarsleuth.load(path)
    return cases


def test_a_run_whose_every_request_waited_the_freeze_is_a_service_that_stopped_answering(runs):
    case = runs["frozen"]
    (stall,) = [f for f in case.findings if f.detector == "loadtest-stall"]
    assert stall.title == ("wrk c=10 `wrk -t2 -c10 -d10s --timeout 6s --latency http://127.0.0.1:8080/api`: every "
                           "request waited about 5.01 s (p50 and p99 5.01 s), 2 timed out")
    assert stall.severity == "high"
    assert (stall.metrics["stall_s"], stall.metrics["p99_over_p50"], stall.metrics["timeouts"]) == (5.01, 1.0, 2.0)
    assert [(e.line, e.text.strip()) for e in stall.evidence] == [(8, "50%    5.01s")]
    top = case.incidents[0]
    assert (top.category, top.cause) == ("service-failure", "loadtest-stall")
    assert [(f.detector, f.role) for f in top.findings] == [("loadtest-stall", "cause"), ("loadtest-errors", "effect")]
    assert any("about 5.01 s" in r and "state T or D" in r for r in top.recommendations)
    # no tail where every request waited as long
    assert not [f for f in case.findings if f.detector == "loadtest-tail-latency"]


@pytest.mark.parametrize("name", ["long-tail", "evenly-slow", "spread"])
def test_runs_that_were_answered_are_no_stall(runs, name):
    assert not [f for f in runs[name].findings if f.detector == "loadtest-stall"]


def test_a_long_tail_over_a_normal_median_is_still_a_tail(runs):
    (tail,) = [f for f in runs["long-tail"].findings if f.detector == "loadtest-tail-latency"]
    assert tail.metrics["latency_p50_s"] == pytest.approx(0.01231)


def test_a_freeze_that_hung_tasks_explain_is_their_effect(tmp_path):
    """The same run beside the kernel's hung-task reports of the minute it
    ran in (kernel/hung_task.c of 6.x): the kernel stall is the cause, the
    run's freeze its effect."""
    (tmp_path / "wrk.txt").write_text(FROZEN)
    lines = [f"Nov 24 10:0{i}:1{i} web1 kernel: [ 8{i}12.120001] INFO: task nginx:{2210 + i} blocked for more than "
             f"120 seconds." for i in range(3)]
    lines += [f"Nov 24 10:0{i}:1{i} web1 kernel: [ 8{i}12.120101]       Not tainted 6.1.0-13-amd64 #1 Debian "
              "6.1.55-1" for i in range(1)]
    (tmp_path / "messages").write_text("\n".join(lines) + "\n")
    case = sarsleuth.load(tmp_path, year=2026)
    top = case.incidents[0]
    assert (top.category, top.cause) == ("kernel-stall", "hung-task")
    roles = {f.detector: f.role for f in top.findings}
    assert roles["loadtest-stall"] == "effect"
    assert len(case.incidents) == 1
