"""Incidents of the kinds that have a category of their own, told from logs
written the way the programs write them: backends that are down, kernel
stalls, full disks, exhausted process and descriptor limits, configuration
changes.  Each must come first with its category, cause and the names of
what failed, and its advice must fit the evidence."""
from __future__ import annotations

import sarsleuth


def _nginx_line(clock: str, level: str, conn: int, message: str, pid: int = 2160) -> str:
    # ngx_log_error_core: "YYYY/MM/DD hh:mm:ss [level] pid#tid: *conn message"
    return f"2026/11/24 {clock} [{level}] {pid}#{pid}: *{conn} {message}"


def _request(upstream: str) -> str:
    return (f', client: 127.0.0.1, server: app.example.com, request: "GET /api/ HTTP/1.1", '
            f'upstream: "{upstream}", host: "app.example.com"')


def test_backends_that_stop_are_upstreams_down_not_timeouts(tmp_path):
    """Both backends of a group stop listening: refused connects, each
    server disabled, then 'no live upstreams' for every request."""
    lines = []
    for i, port in enumerate((9001, 9001, 9002, 9002)):
        clock = f"14:11:4{1 + i // 2}"
        lines.append(_nginx_line(clock, "error", 3 + i, "connect() failed (111: Connection refused) while connecting "
                                 "to upstream" + _request(f"http://127.0.0.1:{port}/api/")))
        lines.append(_nginx_line(clock, "warn", 3 + i, "upstream server temporarily disabled while connecting to "
                                 "upstream" + _request(f"http://127.0.0.1:{port}/api/")))
    for s in range(42, 60):
        lines += [_nginx_line(f"14:11:{s}", "error", 100 + s * 3 + k, "no live upstreams while connecting to upstream"
                              + _request("http://app_backend/api/")) for k in range(3)]
    (tmp_path / "error.log").write_text("\n".join(lines) + "\n")
    top = sarsleuth.load(tmp_path).incidents[0]
    assert (top.category, top.cause) == ("upstream-failure", "upstream-down")
    assert "127.0.0.1:9001 refused 2 x" in top.title and "127.0.0.1:9002 refused 2 x" in top.title
    assert not [f for f in top.findings if f.detector == "upstream-timeout"]
    down = [f for f in top.findings if f.detector == "upstream-down"][0]
    assert down.metrics["no_live"] == 54 and down.metrics["refused"] == 4 and down.metrics["disabled"] == 4
    assert str(down.start) == "2026-11-24 14:11:41"
    advice = " ".join(top.recommendations)
    assert "ss -ltnp" in advice and "proxy_read_timeout" not in advice
