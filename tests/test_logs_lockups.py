"""Soft and hard lockups, RCU stalls and panics as they reach an operator:
in kern.log, and as the wall broadcast rsyslog sends to every terminal."""
from __future__ import annotations

import sarsleuth
from sarsleuth.inputs.parsers import sniff

#: rsyslog's omusrmsg broadcast of kernel emergencies (``*.emerg :omusrmsg:*``).
WALL = """\

Message from syslogd@web1 at Apr 15 10:22:13 ...
 kernel:NMI watchdog: BUG: soft lockup - CPU#3 stuck for 23s! [java:102195]

Message from syslogd@web1 at Apr 15 10:22:41 ...
 kernel:NMI watchdog: BUG: soft lockup - CPU#5 stuck for 22s! [java:102201]
"""


def _oops(path):
    return [f for f in sarsleuth.load(path).findings if f.detector == "kernel-lockup"]


def test_wall_broadcast_of_soft_lockups(tmp_path):
    path = tmp_path / "terminal.txt"
    path.write_text(WALL)
    kind, reason = sniff(path)
    assert kind == "syslog" and "wall broadcast" in reason
    found = _oops(path)
    assert len(found) == 1 and found[0].refs["cpus"] == [3, 5] and found[0].severity == "high"
    assert [(e.line, e.text) for e in found[0].evidence] == [(3, WALL.splitlines()[2]), (6, WALL.splitlines()[5])]


def test_rcu_stall_then_hard_lockup_panic_of_a_3x_kernel(tmp_path):
    path = tmp_path / "kern.log"
    path.write_text(
        "Jan 21 20:25:45 db2 kernel: [86113.305066] INFO: rcu_sched self-detected stall on CPU { 7}  "
        "(t=60000 jiffies g=9831211 c=9831210 q=4422)\n"
        "Jan 21 20:25:45 db2 kernel: [86113.305101] Task dump for CPU 7:\n"
        "Jan 21 20:26:01 db2 kernel: [86129.114212] NMI watchdog: Watchdog detected hard LOCKUP on cpu 7\n"
        "Jan 21 20:26:01 db2 kernel: [86129.114230] Kernel panic - not syncing: Hard LOCKUP\n")
    found = _oops(path)
    assert len(found) == 1 and found[0].severity == "critical" and found[0].refs["cpus"] == [7]
    # the panic line is the end of the lockup's report, not a report of its own
    assert found[0].metrics["reports"] == 2 and found[0].metrics["panic"] is True


def test_cross_source_evidence_quotes_both_files(tmp_path):
    """A worker's crash seen from both sides: nginx's exit line and the
    kernel's segfault line, each cited at its line and quoted as written."""
    kernel = ("[86113.305066] nginx[16660]: segfault at 0 ip 00007f3a2c1e4b5a sp 00007ffd3a9c1e80 error 4 "
              "in ngx_http_lua_module.so[7f3a2c1a0000+9b000]\n")
    error_log = ("2024/04/15 10:22:12 [notice] 2210#2210: start worker process 16660\n"
                 "2024/04/15 10:22:13 [alert] 2210#2210: worker process 16660 exited on signal 11\n")
    (tmp_path / "dmesg.txt").write_text("[    0.000000] Linux version 5.15.0-91-generic (buildd@lcy02-amd64-045)\n"
                                        + kernel)
    (tmp_path / "error.log").write_text(error_log)
    case = sarsleuth.load(tmp_path)
    exits = [f for f in case.findings if f.detector == "worker-signal-exit"]
    quoted = {(e.path.rsplit("/", 1)[-1], e.line, e.text) for f in exits for e in f.evidence}
    assert ("dmesg.txt", 2, kernel.rstrip("\n")) in quoted
    assert ("error.log", 2, error_log.splitlines()[1]) in quoted


def test_four_cpus_locked_up_in_one_second_are_four_events(tmp_path):
    """kernel/watchdog.c reports each CPU's soft lockup on a line of its
    own: four tasks on four CPUs are four event rows (a line of the same
    kind joins a report only when it names the same CPU and task)."""
    path = tmp_path / "kern.log"
    path.write_text("".join(
        f"Mar  3 10:00:01 db1 kernel: [ 8100.00000{cpu}] watchdog: BUG: soft lockup - CPU#{cpu} stuck for 22s! "
        f"[{comm}:{pid}]\n"
        for cpu, comm, pid in ((0, "kworker/0:2", 3310), (1, "java", 4410), (2, "java", 4411), (3, "postgres", 5120))))
    case = sarsleuth.load(path, year=2024)
    rows = case.events[case.events["kind"] == "kernel-lockup"]
    assert list(rows["pid"]) == [3310, 4410, 4411, 5120] and list(rows["line"]) == [1, 2, 3, 4]
    (found,) = _oops(path)
    assert found.title == "4 soft lockup(s) on CPU 0, 1, 2, 3: java, kworker/0:2, postgres stuck up to 22 s"


def _rcu(clock: str, uptime: float, text: str) -> str:
    return f"Nov 24 {clock} nas1 kernel: [{uptime:12.6f}] INFO: rcu_sched_state {text}"


def test_rcu_stalls_are_counted_per_grace_period_and_recur_as_one_incident(tmp_path):
    """A 3.x kernel (kernel/rcutree.c): each stalled CPU's line and the
    summary are one stall; the same stall printed again with a longer
    wait (t=) is still that stall; hours apart the host stalls again."""
    path = tmp_path / "kern.log"
    path.write_text("\n".join([
        _rcu("19:39:04", 3556.510903, "detected stall on CPU 0 (t=15000 jiffies)"),
        _rcu("20:21:30", 5914.420208, "detected stall on CPU 1 (t=15000 jiffies)"),
        _rcu("20:24:30", 6094.494578, "detected stall on CPU 1 (t=60031 jiffies)"),       # still going
        _rcu("22:47:10", 14827.405601, "detected stall on CPU 7 (t=15000 jiffies)"),
        _rcu("22:47:10", 14827.405606, "detected stall on CPU 6 (t=15000 jiffies)"),
        _rcu("22:47:10", 14827.405611, "detected stalls on CPUs/tasks: { 6 7} (detected by 2, t=15002 jiffies)"),
    ]) + "\n")
    found = sorted(_oops(path), key=lambda f: f.start)
    assert [f.metrics["rcu"] for f in found] == [1, 1, 1]
    assert [f.refs.get("cpus") for f in found] == [[0], [1], [6, 7]]
    case = sarsleuth.load(path, year=2026)
    assert len(case.incidents) == 1
    assert case.incidents[0].title == "Kernel stall on nas1: 3 RCU stall(s) from 19:39:04 to 22:47:10"
    # near miss: the wait starting over on the same CPU a minute later is a second stall
    again = tmp_path / "again.log"
    again.write_text("\n".join([_rcu("20:21:30", 5914.42, "detected stall on CPU 1 (t=15000 jiffies)"),
                                _rcu("20:22:40", 5984.42, "detected stall on CPU 1 (t=15000 jiffies)")]) + "\n")
    (one,) = _oops(again)
    assert one.metrics["rcu"] == 2 and "recurring" not in one.refs
