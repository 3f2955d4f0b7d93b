"""A load test against a server that answers one request at a time:
ab 2.3 against a single-threaded HTTP server on loopback (each request
200 ms), and the runs that look like one but are not."""
from __future__ import annotations

import pytest

import sarsleuth

#: ab -n 24 -c 8 against a single-threaded server, 200 ms per request: the
#: requests queue behind each other (fastest 202 ms, 4.97/s)
ONE_AT_A_TIME = """\
$ ab -n 24 -c 8 http://127.0.0.1:18081/api
This is ApacheBench, Version 2.3 <$Revision: 1913912 $>
Copyright 1996 Adam Twiss, Zeus Technology Ltd, http://www.zeustech.net/
Licensed to The Apache Software Foundation, http://www.apache.org/

Benchmarking 127.0.0.1 (be patient).....done


Server Software:        BaseHTTP/0.6
Server Hostname:        127.0.0.1
Server Port:            18081

Document Path:          /api
Document Length:        181 bytes

Concurrency Level:      8
Time taken for tests:   4.829 seconds
Complete requests:      24
Failed requests:        0
Total transferred:      7056 bytes
HTML transferred:       4344 bytes
Requests per second:    4.97 [#/sec] (mean)
Time per request:       1609.747 [ms] (mean)
Time per request:       201.218 [ms] (mean, across all concurrent requests)
Transfer rate:          1.43 [Kbytes/sec] received

Connection Times (ms)
              min  mean[+/-sd] median   max
Connect:        0  171 389.9      0    1032
Processing:   202 1120 386.2   1208    1409
Waiting:      201 1120 386.2   1207    1409
Total:        202 1291 630.2   1208    2415

Percentage of the requests served within a certain time (ms)
  50%   1208
  66%   1408
  75%   1409
  80%   1409
  90%   2414
  95%   2414
  98%   2415
  99%   2415
 100%   2415 (longest request)
"""

#: ab -n 16 -c 8 against a threaded server, 1.1 s per request: slow, but
#: eight answered at once (3.69/s x 1.101 s = 4.1 in service)
IN_PARALLEL = """\
$ ab -n 16 -c 8 http://127.0.0.1:18082/api
This is ApacheBench, Version 2.3 <$Revision: 1913912 $>
Copyright 1996 Adam Twiss, Zeus Technology Ltd, http://www.zeustech.net/
Licensed to The Apache Software Foundation, http://www.apache.org/

Benchmarking 127.0.0.1 (be patient).....done


Server Software:        BaseHTTP/0.6
Server Hostname:        127.0.0.1
Server Port:            18082

Document Path:          /
Document Length:        181 bytes

Concurrency Level:      8
Time taken for tests:   4.337 seconds
Complete requests:      16
Failed requests:        0
Total transferred:      4704 bytes
HTML transferred:       2896 bytes
Requests per second:    3.69 [#/sec] (mean)
Time per request:       2168.579 [ms] (mean)
Time per request:       271.072 [ms] (mean, across all concurrent requests)
Transfer rate:          1.06 [Kbytes/sec] received

Connection Times (ms)
              min  mean[+/-sd] median   max
Connect:        0  129 352.6      0    1032
Processing:  1101 1102   0.8   1102    1104
Waiting:     1101 1102   0.7   1102    1103
Total:       1101 1231 352.3   1102    2134

Percentage of the requests served within a certain time (ms)
  50%   1102
  66%   1103
  75%   1103
  80%   1103
  90%   2133
  95%   2134
  98%   2134
  99%   2134
 100%   2134 (longest request)
"""


def _case(tmp_path, name, text):
    path = tmp_path / name / "ab.txt"
    path.parent.mkdir()
    path.write_text(text, encoding="utf-8")
    return sarsleuth.load(path)


def _serialized(case):
    return [f for f in case.findings if f.detector == "loadtest-serialized"]


def test_a_server_answering_one_request_at_a_time_is_told(tmp_path):
    case = _case(tmp_path, "single", ONE_AT_A_TIME)
    (found,) = _serialized(case)
    assert found.title == ("ab c=8 `ab -n 24 -c 8 http://127.0.0.1:18081/api`: the server answered one request at a "
                           "time (4.97/s x fastest 202 ms = 1.0 in service of 8 concurrent), median wait 1.21 s")
    assert found.metrics["in_service"] == pytest.approx(4.97 * 0.202)
    assert (found.metrics["concurrency"], found.metrics["service_s"], found.metrics["latency_p50_s"]) == (8, 0.202, 1.208)
    assert [(e.line, e.text.split()[:4]) for e in found.evidence] == [(22, ["Requests", "per", "second:", "4.97"])]
    top = case.incidents[0]
    assert (top.category, top.cause) == ("connection-limit", "loadtest-serialized")
    assert any("more than one worker" in r and "8 concurrent clients" in r for r in top.recommendations)


def test_a_trimmed_paste_without_its_concurrency_takes_it_from_ab_s_two_means(tmp_path):
    # ab prints "Time per request (mean)" as the concurrency times the mean
    # across all requests: 1609.747 / 201.218 = 8
    lines = ONE_AT_A_TIME.splitlines()
    text = "\n".join(line for line in lines if not line.startswith(("Concurrency Level", "$ ab")))
    (found,) = _serialized(_case(tmp_path, "trimmed", text))
    assert found.metrics["concurrency"] == 8
    assert found.metrics["concurrency_from"] == "Time per request, mean over mean across all"


def test_a_slow_server_answering_in_parallel_is_not_one(tmp_path):
    case = _case(tmp_path, "threaded", IN_PARALLEL)
    assert not _serialized(case)
    assert not [f for f in case.findings if f.detector == "loadtest-stall"]


def test_fast_refusals_are_no_service_time(tmp_path):
    # near miss: requests that failed were answered fast, so the fastest
    # answer is no service time
    text = ONE_AT_A_TIME.replace("Failed requests:        0",
                                 "Failed requests:        3\n   (Connect: 0, Receive: 0, Length: 3, Exceptions: 0)")
    assert not _serialized(_case(tmp_path, "failed", text))


def test_one_client_at_a_time_is_no_queue(tmp_path):
    # near miss: ab -c 1 sends the next request when the last is answered
    text = ONE_AT_A_TIME.replace("Concurrency Level:      8", "Concurrency Level:      1").replace("-c 8", "-c 1")
    assert not _serialized(_case(tmp_path, "one-client", text))


def test_a_queue_of_equal_waits_is_one_at_a_time_not_a_freeze(tmp_path):
    # a single-threaded server under a long run: past the first requests
    # every one waits concurrency x 200 ms, p50 close to p99 as in a freeze;
    # the fastest answer (202 ms) says the server was answering, one at a time
    text = ONE_AT_A_TIME
    for pct, ms in (("50%", "1609"), ("66%", "1610"), ("75%", "1610"), ("80%", "1611"), ("90%", "1612"),
                    ("95%", "1613"), ("98%", "1615"), ("99%", "1616")):
        text = "\n".join(f"  {pct}   {ms}" if line.strip().startswith(pct) else line for line in text.splitlines())
    case = _case(tmp_path, "long", text)
    assert len(_serialized(case)) == 1
    assert not [f for f in case.findings if f.detector == "loadtest-stall"]
