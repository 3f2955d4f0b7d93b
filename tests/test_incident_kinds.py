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


def test_soft_lockups_and_the_hung_tasks_behind_them_are_a_kernel_stall(tmp_path):
    """rsyslog's kern.log of a 5.15 kernel: a CPU stuck in a driver, the
    tasks waiting behind it hung, then the panic softlockup_panic asks for."""
    lines = [
        "Mar  3 10:00:01 db1 kernel: [ 8100.000001] watchdog: BUG: soft lockup - CPU#5 stuck for 22s! [kworker/5:2:3310]",
        "Mar  3 10:00:01 db1 kernel: [ 8100.000002] Modules linked in: xt_conntrack nf_nat mpt3sas",
        "Mar  3 10:00:01 db1 kernel: [ 8100.000003] CPU: 5 PID: 3310 Comm: kworker/5:2 Not tainted 5.15.0-91-generic #101-Ubuntu",
        "Mar  3 10:00:29 db1 kernel: [ 8128.000001] watchdog: BUG: soft lockup - CPU#5 stuck for 48s! [kworker/5:2:3310]",
        "Mar  3 10:01:03 db1 kernel: [ 8162.000001] INFO: task postgres:2210 blocked for more than 120 seconds.",
        "Mar  3 10:01:03 db1 kernel: [ 8162.000002]       Not tainted 5.15.0-91-generic #101-Ubuntu",
        'Mar  3 10:01:03 db1 kernel: [ 8162.000003] "echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.',
        "Mar  3 10:01:03 db1 kernel: [ 8162.000004] task:postgres        state:D stack:    0 pid: 2210 ppid:  2201 flags:0x00000000",
    ]
    (tmp_path / "kern.log").write_text("\n".join(lines) + "\n")
    case = sarsleuth.load(tmp_path, year=2024)
    assert len(case.incidents) == 1
    top = case.incidents[0]
    assert (top.category, top.cause) == ("kernel-stall", "kernel-lockup")
    assert top.title.startswith("Kernel stall on db1: 2 soft lockup(s) on CPU 5: kworker/5:2 stuck up to 48 s")
    assert {f.detector: f.role for f in top.findings} == {"kernel-lockup": "cause", "hung-task": "effect"}


def test_hung_tasks_behind_an_nfs_server_that_stopped_answering(tmp_path):
    """A hard mount: the server stops answering, tasks reading from the
    mount hang, the server comes back; the server is the cause."""
    lines = [
        "Mar  3 10:00:00 app1 kernel: [ 9000.000001] nfs: server nas01 not responding, still trying",
        "Mar  3 10:00:31 app1 kernel: [ 9031.000001] nfs: server nas01 not responding, still trying",
        "Mar  3 10:02:03 app1 kernel: [ 9123.000001] INFO: task php-fpm:4410 blocked for more than 120 seconds.",
        "Mar  3 10:02:03 app1 kernel: [ 9123.000002]       Not tainted 5.15.0-91-generic #101-Ubuntu",
        "Mar  3 10:02:03 app1 kernel: [ 9123.000003] task:php-fpm         state:D stack:    0 pid: 4410 ppid:  4401 flags:0x00000000",
        "Mar  3 10:02:03 app1 kernel: [ 9123.000004] Call Trace:",
        "Mar  3 10:02:03 app1 kernel: [ 9123.000005]  rpc_wait_bit_killable+0x1e/0x90 [sunrpc]",
        "Mar  3 10:03:10 app1 kernel: [ 9190.000001] nfs: server nas01 OK",
        "Mar  3 11:00:00 app1 kernel: [12600.000001] nfs: server nas02 not responding, timed out",
    ]
    (tmp_path / "kern.log").write_text("\n".join(lines) + "\n")
    case = sarsleuth.load(tmp_path, year=2024)
    top = case.incidents[0]
    assert (top.category, top.cause) == ("network-storage", "nfs-server-down")
    assert top.title == ("Network storage unreachable on app1: NFS server nas01 not responding (2 x still trying) "
                         "for 190 s until it answered again")
    assert {f.detector: f.role for f in top.findings} == {"nfs-server-down": "cause", "hung-task": "effect"}
    assert top.recommendations[0].startswith("The NFS server nas01 stopped answering")
    soft = [f for f in case.findings if f.detector == "nfs-server-down" and f.refs["servers"] == ["nas02"]][0]
    assert soft.metrics["soft_mount"] is True and soft.metrics["recovered"] is False
