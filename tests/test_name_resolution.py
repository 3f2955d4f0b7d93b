"""Names that cannot be resolved, told from logs written the way the
programs write them: the incident comes first as an upstream failure caused
by name resolution, naming the name and who asked; a lone failure, a
retry's few lines and the words inside other messages are left alone."""
from __future__ import annotations

import pandas as pd
import pytest

import sarsleuth
from sarsleuth.knowledge.signatures import classify, fields_of


def _syslog(t: pd.Timestamp, program: str, pid: int, message: str, host: str = "checkout-web-02") -> str:
    # rsyslog's RSYSLOG_FileFormat (high-precision timestamps)
    return f"{t.strftime('%Y-%m-%dT%H:%M:%S.%f')}+00:00 {host} {program}[{pid}]: {message}"


def _routine(start: pd.Timestamp, minutes: int) -> list[tuple[pd.Timestamp, str]]:
    """A production host's ordinary lines: cron every minute, the telemetry poller."""
    out = []
    for m in range(minutes):
        t = start + pd.Timedelta(minutes=m)
        out.append((t, _syslog(t, "CRON", 2000 + m, "(root) CMD (python3 /srv/app/minutely.py > /dev/null 2>&1)")))
        out.append((t + pd.Timedelta(seconds=20), _syslog(t + pd.Timedelta(seconds=20), "telemetry-agent", 1631,
                                                           "shipped 116139 values in the last minute")))
    return out


def _write(tmp_path, lines: list[tuple[pd.Timestamp, str]]):
    (tmp_path / "syslog").write_text("\n".join(line for _, line in sorted(lines)) + "\n")


START = pd.Timestamp("2026-11-27 02:55:00")


def _failures(first_s: float, every_s: float, count: int, message: str, program: str = "checkout-api"):
    out = []
    for i in range(count):
        t = START + pd.Timedelta(seconds=first_s + i * every_s)
        out.append((t, _syslog(t, program, 13619, f"{t:%Y-%m-%d %H:%M:%S} ERROR {message}")))
    return out


def test_a_name_dropped_from_hosts_is_an_upstream_failure_caused_by_name_resolution(tmp_path):
    """A checkout API calls payments.internal by name; from 02:56:45 every
    call fails with EAI_AGAIN, four a second for 100 s."""
    lines = _routine(START, 5) + _failures(105, 0.25, 400, "calling payments.internal:9443: [Errno -3] Temporary "
                                                          "failure in name resolution")
    _write(tmp_path, lines)
    case = sarsleuth.load(tmp_path)
    top = case.incidents[0]
    assert (top.category, top.cause) == ("upstream-failure", "name-resolution")
    (f,) = [f for f in top.findings if f.detector == "name-resolution"]
    assert f.title == ("400 x name resolution failed for payments.internal in checkout-api: Temporary failure in "
                       "name resolution over 100 s")
    assert f.metrics["lines"] == 400 and f.metrics["no_answer"] == 400 and f.metrics["no_such_name"] == 0
    assert (f.start, f.end) == (pd.Timestamp("2026-11-27 02:56:45", tz="UTC"),
                                pd.Timestamp("2026-11-27 02:58:24.75", tz="UTC"))
    assert f.refs["names"] == ["payments.internal"] and f.refs["programs"] == ["checkout-api"]
    assert f.explanation.startswith("getaddrinfo() answered 400 x errno -3 (no nameserver answered)")
    texts = " ".join(top.recommendations)
    assert "getent hosts payments.internal" in texts and "dig @SERVER payments.internal" in texts


def test_two_names_and_two_errors_are_counted_apart(tmp_path):
    """A Java service loses one name, a Python worker another, with
    different errors: each name and program with its own lines."""
    lines = _routine(START, 5)
    lines += _failures(60, 2.0, 30, "java.net.UnknownHostException: ledger.internal: Name or service not known",
                       program="billing")
    lines += _failures(61, 3.0, 10, "calling http://payments.internal:9443/charge: <urlopen error [Errno -2] Name or "
                                    "service not known>")
    _write(tmp_path, lines)
    (f,) = [f for f in sarsleuth.load(tmp_path).findings if f.detector == "name-resolution"]
    assert f.title == ("40 x name resolution failed for ledger.internal (30), payments.internal (10) in billing (30), "
                       "checkout-api (10): Name or service not known over 58 s")
    assert f.metrics["names"] == 2 and f.metrics["programs"] == 2 and f.metrics["no_such_name"] == 10


def test_nginx_resolving_at_run_time(tmp_path):
    """nginx with a resolver and proxy_pass by variable: the name is looked
    up per request, and each failed lookup is a 502."""
    log = []
    for i in range(20):
        clock = f"14:12:{10 + i:02d}"
        log.append(f"2026/11/24 {clock} [error] 2160#2160: *{100 + i} payments.internal could not be resolved "
                   f'(3: Host not found), client: 10.1.2.3, server: shop.example.com, request: "POST /checkout '
                   f'HTTP/1.1", host: "shop.example.com"')
    (tmp_path / "error.log").write_text("\n".join(log) + "\n")
    top = sarsleuth.load(tmp_path).incidents[0]
    assert (top.category, top.cause) == ("upstream-failure", "name-resolution")
    (f,) = [f for f in top.findings if f.detector == "name-resolution"]
    assert f.title == "20 x name resolution failed for payments.internal in nginx: Host not found over 19 s"
    assert f.metrics["no_such_name"] == 20


@pytest.mark.parametrize("failures", [
    # one transient failure: the next call resolved
    _failures(120, 1.0, 1, "calling payments.internal:9443: [Errno -3] Temporary failure in name resolution"),
    # a retry's three lines within two seconds
    _failures(120, 0.8, 3, "calling payments.internal:9443: [Errno -3] Temporary failure in name resolution"),
])
def test_a_transient_failure_is_no_incident(tmp_path, failures):
    _write(tmp_path, _routine(START, 5) + failures)
    case = sarsleuth.load(tmp_path)
    assert [f for f in case.findings if f.detector == "name-resolution"] == []
    assert case.incidents == []


@pytest.mark.parametrize("message", [
    "healthcheck: alerting on Temporary failure in name resolution is muted until 06:00",
    "dns-exporter: counted 0 answers of Name or service not known in the last minute",
    "reverse mapping checking getaddrinfo for host-10-1-2-3.example.net [10.1.2.3] failed.",
    "Using degraded feature set UDP instead of UDP+EDNS0 for DNS server 10.0.0.2.",
    "lookup table reloaded: 42 entries",
])
def test_the_words_inside_other_messages_are_not_failures(tmp_path, message):
    assert classify(message) != "name-resolution"
    _write(tmp_path, _routine(START, 5) + [(START + pd.Timedelta(seconds=60 + i * 5),
                                            _syslog(START + pd.Timedelta(seconds=60 + i * 5), "monitor", 400, message))
                                           for i in range(30)])
    assert [f for f in sarsleuth.load(tmp_path).findings if f.detector == "name-resolution"] == []


def test_fields_name_what_failed_in_each_client_s_words():
    assert fields_of("name-resolution", "curl: (6) Could not resolve host: payments.internal") == {
        "name": "payments.internal"}
    assert fields_of("name-resolution", "Error: getaddrinfo EAI_AGAIN payments.internal") == {
        "error": "EAI_AGAIN", "name": "payments.internal"}
