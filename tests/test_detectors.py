"""Each detector on realistic positive input, and silent on a normal day."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sarsleuth.detectors import Context, registry
from sarsleuth.detectors.kernel import decode_gfp, parse_segfault
from sarsleuth.model import Source
from sarsleuth.parsers.base import events_frame


def metrics(host, section, start, step_s, columns: dict, device=""):
    """Long metrics frame from {metric: values}."""
    n = len(next(iter(columns.values())))
    ts = pd.date_range(start, periods=n, freq=f"{step_s}s")
    rows = []
    for metric, values in columns.items():
        rows.append(pd.DataFrame({"timestamp": ts, "host": host, "section": section, "device": device,
                                  "metric": metric, "value": np.asarray(values, dtype=float)}))
    return pd.concat(rows, ignore_index=True)


def ctx(*frames, events=None, reports=(), sources=(), link_speed=None):
    m = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["timestamp", "host", "section", "device", "metric", "value"])
    return Context(metrics=m, events=events if events is not None else events_frame([]),
                   reports=list(reports), sources=list(sources), link_speed_bps=link_speed)


def run(det_id, c, **params):
    return registry()[det_id](params or None).run(c)


def normal_day(host="web1"):
    """A quiet day at 10-minute interval: small noise around steady levels."""
    rng = np.random.default_rng(7)
    n = 144
    return [
        metrics(host, "cpu", "2024-03-01", 600, {"%iowait": rng.uniform(0.0, 1.5, n), "%idle": rng.uniform(70, 90, n),
                                                  "%steal": rng.uniform(0, 0.5, n)}, device="all"),
        metrics(host, "swap", "2024-03-01", 600, {"%swpused": 2.0 + rng.uniform(0, 0.3, n),
                                                   "kbswpfree": 8e6 + rng.uniform(0, 1000, n)}),
        metrics(host, "queue", "2024-03-01", 600, {"ldavg-1": rng.uniform(0.5, 2.0, n), "runq-sz": rng.integers(0, 3, n),
                                                    "blocked": rng.integers(0, 2, n)}),
        metrics(host, "net-sock", "2024-03-01", 600, {"tcp-tw": rng.integers(800, 1600, n)}),
        metrics(host, "net-dev", "2024-03-01", 600, {"%ifutil": rng.uniform(1, 20, n), "rxkB/s": rng.uniform(1e3, 2e4, n),
                                                      "txkB/s": rng.uniform(1e3, 2e4, n)}, device="eth0"),
        metrics(host, "memory", "2024-03-01", 600, {"kbmemtotal": np.full(n, 16e6), "kbmemfree": rng.uniform(2e6, 3e6, n),
                                                     "kbavail": rng.uniform(8e6, 9e6, n)}),
        metrics(host, "paging", "2024-03-01", 600, {"majflt/s": rng.uniform(0, 2, n), "pgscand/s": np.zeros(n),
                                                     "%vmeff": np.zeros(n)}),
    ]


METRIC_DETECTORS = ["swap-climb", "memory-pressure", "iowait-spike", "cpu-saturation", "load-spike",
                    "nic-saturation", "tcp-timewait", "sar-gap"]


@pytest.mark.parametrize("det_id", METRIC_DETECTORS)
def test_metric_detectors_quiet_on_normal_day(det_id):
    assert run(det_id, ctx(*normal_day())) == []


def test_swap_climb_report_000_values():
    swp = [0, 0, 0, 0.00, 0.00, 39.62, 50.23, 79.46, 94.95, 97.76, 91.33, 90.29, 89.88]
    f = run("swap-climb", ctx(metrics("h", "swap", "2014-05-06 14:57:01", 60, {"%swpused": swp})))
    assert len(f) == 1
    assert f[0].metrics["peak_swpused_pct"] == 97.76
    assert f[0].severity == "critical"
    assert f[0].start == pd.Timestamp("2014-05-06 15:02:01")


def test_iowait_spike_relative_to_baseline():
    base = [0.01] * 20 + [11.12, 32.0, 37.88, 64.94, 57.55, 46.32, 2.4, 0.69]
    f = run("iowait-spike", ctx(metrics("h", "cpu", "2014-05-06 14:40:01", 60, {"%iowait": base}, device="all")))
    assert len(f) == 1 and f[0].metrics["peak_iowait_pct"] == 64.94 and f[0].severity == "high"
    # a host that always sits at 15 % iowait is not spiking at 16 %
    steady = [15.0, 14.0, 16.0, 15.5] * 10
    assert run("iowait-spike", ctx(metrics("h", "cpu", "2024-01-01", 60, {"%iowait": steady}, device="all"))) == []


def test_cpu_saturation_steal():
    idle = [40] * 10 + [20, 18, 15] + [40] * 5
    steal = [0] * 10 + [25, 30, 28] + [0] * 5
    f = run("cpu-saturation", ctx(metrics("h", "cpu", "2024-01-01", 60, {"%idle": idle, "%steal": steal}, device="all")))
    assert len(f) == 1 and f[0].metrics["peak_steal_pct"] == 30 and "steal" in f[0].title


def test_load_spike_report_002():
    load = [0.8] * 30 + [4.02] * 5 + [2.5, 1.5, 1.0]
    f = run("load-spike", ctx(metrics("h", "queue", "2016-03-17 17:01:00", 1, {"ldavg-1": load})))
    assert len(f) == 1 and f[0].metrics["peak_ldavg_1"] == 4.02


def test_tcp_timewait_limit():
    tw = [1200] * 20 + [60000, 150000, 180000, 180000, 120000, 40000]
    f = run("tcp-timewait", ctx(metrics("h", "net-sock", "2016-03-17 17:01:00", 1, {"tcp-tw": tw})))
    assert len(f) == 1 and f[0].metrics["fraction_of_limit"] == 1.0 and f[0].severity == "high"
    f = run("tcp-timewait", ctx(metrics("h", "net-sock", "2016-03-17 17:01:00", 1, {"tcp-tw": tw})),
            tcp_max_tw_buckets=262144, warn_fraction=0.8, min_rise_factor=5.0, min_tw=5000, max_gap_samples=1)
    assert f[0].metrics["tcp_max_tw_buckets"] == 262144 and f[0].severity == "medium"


def test_nic_saturation_and_drops():
    util = [10] * 10 + [92, 95, 99.1, 97] + [10] * 5
    rate = [u / 100 * 2.5e9 / 1024 for u in util]
    frames = [metrics("h", "net-dev", "2024-01-01", 1, {"%ifutil": util, "txkB/s": rate, "rxkB/s": [1e3] * len(util)}, device="bond0"),
              metrics("h", "net-edev", "2024-01-01", 1, {"rxdrop/s": [0] * 12 + [250, 300] + [0] * 5}, device="bond0")]
    f = run("nic-saturation", ctx(*frames))
    assert {x.title.split(" ")[0] for x in f} == {"bond0"}
    util_f = [x for x in f if "peak_ifutil_pct" in x.metrics][0]
    assert util_f.metrics["peak_ifutil_pct"] == 99.1
    assert util_f.metrics["link_capacity_bps"] == pytest.approx(20e9, rel=1e-6)
    assert any("peak_rxdrop_per_s" in x.metrics for x in f)


def test_memory_pressure():
    n = 20
    avail = [8e6] * 10 + [3e5, 2e5, 1.5e5, 2.5e5] + [8e6] * 6
    majflt = [1] * 10 + [900, 2300, 4100, 1200] + [1] * 6
    frames = [metrics("h", "memory", "2024-01-01", 60, {"kbmemtotal": [16e6] * n, "kbavail": avail, "kbmemfree": avail}),
              metrics("h", "paging", "2024-01-01", 60, {"majflt/s": majflt, "pgscand/s": [0] * n})]
    f = run("memory-pressure", ctx(*frames))
    assert len(f) == 1 and f[0].metrics["min_avail_pct"] == pytest.approx(1.5e5 / 16e6 * 100)
    assert f[0].severity == "high"


def test_sar_gap():
    ts = list(pd.date_range("2016-03-17 17:01:00", periods=59, freq="1s")) + \
        list(pd.date_range("2016-03-17 17:02:12", periods=30, freq="1s"))
    m = pd.DataFrame({"timestamp": ts, "host": "h", "section": "queue", "device": "", "metric": "ldavg-1", "value": 1.0})
    f = run("sar-gap", ctx(m))
    assert len(f) == 1 and f[0].metrics["gap_seconds"] == 14


def ev(kind, message, ts="2014-05-06 15:04:13", line=1, detail=None, process="kernel", host="h", file="messages",
       source="syslog", pid=None, count=1):
    return {"timestamp": pd.Timestamp(ts) if ts else pd.NaT, "host": host, "source": source, "kind": kind, "pid": pid,
            "process": process, "message": message, "file": file, "line": line, "detail": detail, "count": count}


def test_page_allocation_failure_report_000():
    detail = "Call Trace:\n<IRQ>  [<ffffffffa0139aa8>] ? bnx2x_rx_int+0x228/0x1530 [bnx2x]\n net_rx_action+0x103/0x2f0"
    e = events_frame([ev("page-allocation-failure", "nginx: page allocation failure. order:0, mode:0x20", detail=detail, line=20)])
    f = run("page-allocation-failure", ctx(events=e))
    assert len(f) == 1
    m = f[0].metrics
    assert m["order"] == 0 and m["mode"] == 0x20 and m["atomic"] is True and m["nic_receive_path"] is True
    assert "by nginx" in f[0].title and "GFP_ATOMIC" in f[0].title
    assert f[0].evidence[0].line == 20


def test_gfp_decoding():
    assert decode_gfp(0x20, None)["atomic"] is True
    assert decode_gfp(0xd0, None)["named"] == "GFP_KERNEL"
    assert decode_gfp(0xd0, None)["atomic"] is False
    assert decode_gfp(0x280da, None)["named"] == "GFP_HIGHUSER_MOVABLE"
    assert decode_gfp(0x480020, "GFP_ATOMIC")["atomic"] is True
    assert decode_gfp(0x6000c0, "GFP_KERNEL")["atomic"] is False


def test_nic_rx_alloc_failure_counts_lines():
    e = events_frame([ev("nic-rx-alloc-failure", "bnx2x: [bnx2x_alloc_rx_sge:420(em2)]Can't alloc sge", line=98 + 2 * i)
                      for i in range(7)])
    f = run("nic-rx-alloc-failure", ctx(events=e))
    assert len(f) == 1 and f[0].metrics["failures"] == 7 and "em2" in f[0].title and "bnx2x" in f[0].title


def test_oom_kill_memcg():
    e = events_frame([
        ev("oom-kill", "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=abc,mems_allowed=0,oom_memcg=/kubepods/pod1,task_memcg=/kubepods/pod1/x,task=nginx,pid=22232,uid=0", line=5),
        ev("oom-kill", "Killed process 22964 (nginx) total-vm:1021908kB, anon-rss:524288kB, file-rss:4096kB, shmem-rss:0kB", line=6),
    ])
    f = run("oom-kill", ctx(events=e))
    assert len(f) == 1 and f[0].metrics["memcg"] is True and f[0].refs["pids"] == [22964]
    assert f[0].metrics["max_victim_rss_kb"] == 524288 + 4096 and f[0].severity == "critical"


def test_segfault_parse_forms():
    a = parse_segfault("nginx[24721]: segfault at 0000000000000001 rip 0000000000000001 rsp 00007ffff58d8180 error 14")
    assert a == {"comm": "nginx", "pid": 24721, "addr": "0000000000000001", "ip": "0000000000000001",
                 "sp": "00007ffff58d8180", "error": 14, "lib": None}
    b = parse_segfault("httpd[3021]: segfault at 0 ip 00007f2c1d2e5a1b sp 00007ffd2c3c1a90 error 4 in libapr-1.so.0.5.2[7f2c1d2d0000+32000]")
    assert b["lib"] == "libapr-1.so.0.5.2" and b["ip"] == "00007f2c1d2e5a1b"


def test_socket_detectors():
    e = events_frame([ev("tcp-tw-bucket-overflow", "TCP: time wait bucket table overflow", ts=f"2016-03-17 17:02:0{i}", line=i)
                      for i in range(1, 7)] +
                     [ev("tcp-tw-bucket-overflow", "TCP: time wait bucket table overflow", ts="2016-03-17 17:02:08", line=9, count=1289),
                      ev("socket-memory", "Out of socket memory", ts="2016-03-17 17:02:10", line=10),
                      ev("socket-memory", "TCP: too many of orphaned sockets", ts="2016-03-17 17:02:10", line=11),
                      ev("syn-flood", "TCP: request_sock_TCP: Possible SYN flooding on port 443. Sending cookies.  Check SNMP counters.", line=12),
                      ev("conntrack-full", "nf_conntrack: nf_conntrack: table full, dropping packet", line=13)])
    c = ctx(events=e)
    tw = run("tcp-tw-bucket-overflow", c)
    assert tw[0].metrics["lines"] == 6 + 1289 and tw[0].severity == "high"
    sm = run("socket-memory", c)
    assert sm[0].metrics["orphan_lines"] == 1 and sm[0].metrics["out_of_socket_memory_lines"] == 1
    assert "port 443" in run("syn-flood", c)[0].title
    assert run("conntrack-full", c)[0].severity == "high"


def test_worker_signal_exit_with_kernel_match():
    rows = [ev("worker-start", "start worker process 16660", ts="2012-12-24 14:02:11", line=1, file="error.log", source="nginx-error", pid=16659),
            ev("worker-signal-exit", "worker process 16660 exited on signal 11 (core dumped)", ts="2012-12-24 16:39:56", line=2,
               file="error.log", source="nginx-error", pid=16659, process="nginx"),
            ev("worker-start", "start worker process 24721", ts="2012-12-24 16:39:56", line=3, file="error.log", source="nginx-error", pid=16659),
            ev("segfault", "nginx[16660]: segfault at 8 rip 00000000004c2d27 rsp 00007fff2b3e8b40 error 4", ts=None, line=7,
               file="dmesg", source="dmesg")]
    f = run("worker-signal-exit", ctx(events=events_frame(rows)))
    assert len(f) == 1
    m = f[0].metrics
    assert m["exits"] == 1 and m["core_dumped"] == 1 and m["signal_11"] == 1 and m["matched_kernel_segfaults"] == 1
    assert f[0].refs["respawn_pids"] == [24721]
    assert "SIGSEGV" in f[0].title


def test_worker_pid_gaps_from_ps():
    after = pd.DataFrame({"pid": [9492, 16659, 16663, 19344, 25447],
                          "role": ["nginx-worker", "nginx-master", "nginx-worker", "nginx-worker", "nginx-worker"],
                          "start": ["09:18", "Dec24", "Dec24", "10:18", "07:41"]})
    healthy = pd.DataFrame({"pid": [7223] + list(range(7292, 7302)), "role": ["nginx-master"] + ["nginx-worker"] * 10,
                            "start": ["13:32"] + ["13:33"] * 10})
    src_bad = Source(path="ps-after.txt", kind="ps", meta={"snapshots": [("after", after)]})
    src_ok = Source(path="ps-before.txt", kind="ps", meta={"snapshots": [("before", healthy)]})
    f = run("worker-pid-gaps", ctx(sources=[src_bad, src_ok]))
    assert len(f) == 1 and f[0].refs["pids"] == [9492, 16663, 19344, 25447]
    assert f[0].metrics["younger_than_master"] == 3


def test_loadtest_detectors():
    r50 = {"tool": "ab", "latency_p50_s": 0.018, "latency_p99_s": 0.264, "latency_max_s": 1.026, "failed_requests": 0,
           "non_2xx": 0, "requests_completed": 7000, "transfer_rate_Bps": 179098.09 * 1024, "path": "a.txt", "line": 1}
    bad = {"tool": "wrk", "requests_total": 10645, "non_2xx": 10645, "socket_errors": {"connect": 0, "read": 608, "write": 0, "timeout": 0},
           "latency_p50_s": 0.01, "latency_p99_s": 0.02, "path": "w.txt", "line": 1}
    clean = {"tool": "ab", "latency_p50_s": 0.004, "latency_p99_s": 0.012, "latency_max_s": 0.013, "failed_requests": 0,
             "non_2xx": 0, "requests_completed": 10000, "path": "c.txt", "line": 1}
    c = ctx(reports=[r50, bad, clean])
    tail = run("loadtest-tail-latency", c)
    assert len(tail) == 1 and tail[0].metrics["p99_over_p50"] == pytest.approx(264 / 18)
    errs = run("loadtest-errors", c)
    assert len(errs) == 1 and errs[0].metrics["non_2xx"] == 10645 and errs[0].metrics["socket_read"] == 608
    r2m = {"tool": "ab", "transfer_rate_Bps": 1043909.08 * 1024, "path": "b.txt", "line": 1}
    # one client alone fills 43 % of a 20 Gbit/s link: not saturated ...
    assert run("loadtest-link-saturation", ctx(reports=[r2m], link_speed=20e9)) == []
    # ... unless the threshold says so
    link = run("loadtest-link-saturation", ctx(reports=[r2m], link_speed=20e9),
               saturation_fraction=0.3, min_rate_Bps=10e6, max_clients=8, match_tolerance=0.15, framing_overhead=0.04)
    assert link[0].metrics["fraction_of_link"] == pytest.approx(1043909.08 * 1024 * 8 / 20e9)


LOG_DETECTORS = ["page-allocation-failure", "nic-rx-alloc-failure", "oom-kill", "segfault", "hung-task", "kernel-oops",
                 "tcp-tw-bucket-overflow", "socket-memory", "syn-flood", "conntrack-full", "worker-signal-exit",
                 "worker-pid-gaps", "worker-connections-exhausted", "too-many-open-files", "upstream-timeout", "enomem",
                 "loadtest-errors", "loadtest-tail-latency", "loadtest-link-saturation"]


@pytest.mark.parametrize("det_id", LOG_DETECTORS)
def test_log_detectors_quiet_on_routine_lines(det_id):
    routine = events_frame([ev("log", "CROND[2101]: (root) CMD (/usr/lib64/sa/sa1 1 1)", line=1),
                            ev("worker-start", "start worker process 100", line=2, file="error.log", source="nginx-error")])
    assert run(det_id, ctx(*normal_day("h"), events=routine)) == []


def test_thresholds_are_validated():
    with pytest.raises(ValueError):
        registry()["swap-climb"]({"no_such_param": 1})
