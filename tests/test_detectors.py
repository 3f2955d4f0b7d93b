"""Each detector on realistic positive input, and silent on a normal day."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sarsleuth.detectors import Context, registry
from sarsleuth.detectors.kernel import decode_gfp, parse_segfault
from sarsleuth.model import Source
from sarsleuth.inputs.parsers.base import events_frame


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
        # a resolver's late answers and a syslog relay's odd bad checksum
        metrics(host, "net-udp", "2024-03-01", 600, {"idgm/s": rng.uniform(20, 60, n), "odgm/s": rng.uniform(20, 60, n),
                                                      "noport/s": rng.uniform(0, 2, n),
                                                      "idgmerr/s": rng.uniform(0, 0.3, n)}),
    ]


METRIC_DETECTORS = ["swap-climb", "memory-pressure", "iowait-spike", "cpu-saturation", "load-spike",
                    "nic-saturation", "tcp-timewait", "sar-gap", "disk-saturation", "tcp-retransmits",
                    "cpu-stall", "memory-stall", "io-stall", "filesystem-full", "connection-surge", "traffic-ceiling",
                    "udp-drops"]


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


@pytest.mark.parametrize("swp, onset, base", [
    # a backup pushed 50 % of swap out, held for 40 s, then the leak grew it: the climb starts after the pause
    ([0, 0, 0, 50, 50, 50, 50, 50, 65.02, 54.3, 54.3], "2026-11-24 16:31:20", 50),
    # a pause of 20 s (two 10-second samples) is no plateau: one climb from the floor
    ([0, 0, 0, 20, 20, 35, 50, 65.02, 54.3], None, 0),
    # a steady climb
    ([0, 0, 0, 10, 25, 40, 55, 65.02, 54.3], None, 0),
])
def test_a_swap_climb_starts_where_swap_grew_without_coming_back(swp, onset, base):
    """sar -S at 10 s: the climb is dated from the last level swap held for
    30 s or more before it (plateau_seconds), not from the first rise of
    the whole series."""
    (f,) = run("swap-climb", ctx(metrics("h", "swap", "2026-11-24 16:30:00", 10, {"%swpused": swp})))
    assert f.metrics["baseline_swpused_pct"] == base and f.metrics["peak_swpused_pct"] == 65.02
    assert f.refs.get("onset") == (onset and pd.Timestamp(onset).isoformat())
    assert f.start == pd.Timestamp("2026-11-24 16:30:30")


def test_iowait_spike_relative_to_baseline():
    base = [0.01] * 20 + [11.12, 32.0, 37.88, 64.94, 57.55, 46.32, 2.4, 0.69]
    f = run("iowait-spike", ctx(metrics("h", "cpu", "2014-05-06 14:40:01", 60, {"%iowait": base}, device="all")))
    assert len(f) == 1 and f[0].metrics["peak_iowait_pct"] == 64.94 and f[0].severity == "high"
    # a host that always sits at 15 % iowait is not spiking at 16 %
    steady = [15.0, 14.0, 16.0, 15.5] * 10
    assert run("iowait-spike", ctx(metrics("h", "cpu", "2024-01-01", 60, {"%iowait": steady}, device="all"))) == []


def _disk_day(util, await_ms, aqu, start="2026-11-24 13:00:00", dev="dev254-0"):
    return metrics("db1", "disk", start, 1, {"%util": util, "await": await_ms, "aqu-sz": aqu}, device=dev)


def test_disk_saturation_names_the_device_against_its_own_baseline():
    """60 s at 2 % util and 0.8 ms, then 50 s of fsync writes: 97-99 %
    util, 40 ms await, 3.8 requests queued (sar -d of a 1-second day)."""
    util = [2.0] * 60 + [97.0 + (i % 3) for i in range(50)] + [3.0] * 20
    wait = [0.8] * 60 + [40.0 + (i % 5) for i in range(50)] + [0.9] * 20
    aqu = [0.01] * 60 + [3.8] * 50 + [0.02] * 20
    (f,) = run("disk-saturation", ctx(_disk_day(util, wait, aqu)))
    assert f.refs["device"] == "dev254-0" and f.start == pd.Timestamp("2026-11-24 13:01:00")
    assert f.end == pd.Timestamp("2026-11-24 13:01:49") and f.severity == "high"
    assert f.metrics["peak_util_pct"] == 99.0 and f.metrics["baseline_util_pct"] == 2.0
    assert f.metrics["baseline_await_ms"] == pytest.approx(0.8) and f.metrics["peak_aqu_sz"] == 3.8
    # await's peak is the largest of the episode, beside its sustained level (the median)
    assert f.metrics["peak_await_ms"] == max(wait[60:110]) == 44.0 and f.metrics["median_await_ms"] == 42.0
    assert f.title == "Disk dev254-0 saturated: %util 99.00 %, await up to 44.00 ms (usual 0.80 ms), aqu-sz up to 3.80"


def test_disk_busy_in_parallel_or_briefly_is_not_saturated():
    """A virtio or NVMe disk 100 % "busy" whose requests neither wait nor
    queue serves in parallel; a 10-second burst is a busy disk."""
    util = [2.0] * 60 + [100.0] * 50 + [3.0] * 20
    assert run("disk-saturation", ctx(_disk_day(util, [0.3] * 130, [0.4] * 130))) == []
    burst = [2.0] * 60 + [99.0] * 10 + [3.0] * 60
    slow = [0.8] * 60 + [40.0] * 10 + [0.9] * 60
    assert run("disk-saturation", ctx(_disk_day(burst, slow, [0.01] * 60 + [3.8] * 10 + [0.02] * 60))) == []


def _tcp_day(retrans, oseg, start="2026-11-24 14:20:20", step=1):
    return [metrics("web1", "net-etcp", start, step, {"retrans/s": retrans}),
            metrics("web1", "net-tcp", start, step, {"oseg/s": oseg, "iseg/s": oseg})]


def test_tcp_retransmits_measured_against_segments_sent():
    """10 % of the packets to a web port dropped for 40 s under steady
    keep-alive traffic: 1-6 segments a second sent again out of ~760, from
    none (numbers as sar -n TCP,ETCP printed them for such a recording)."""
    again = [0.0] * 40 + [4, 3, 2, 5, 4, 6, 3, 2, 1, 2, 0, 3, 5, 2, 4, 1, 6, 2, 3, 4,
                          2, 5, 1, 3, 4, 2, 0, 3, 2, 5, 4, 1, 3, 2, 6, 2, 3, 1, 2, 4] + [0.0] * 20
    sent = [1200.0] * 40 + [760.0] * 40 + [1200.0] * 20
    (f,) = run("tcp-retransmits", ctx(*_tcp_day(again, sent)))
    # the first segment sent again, none before it
    assert f.start == pd.Timestamp("2026-11-24 14:21:00") and f.severity == "low"
    first, last = (int((t - pd.Timestamp("2026-11-24 14:20:20")).total_seconds()) for t in (f.start, f.end))
    assert 75 <= last <= 80 and f.metrics["baseline_retrans_share_pct"] == 0.0     # the median second before
    assert f.metrics["retransmitted"] == sum(again[first:last + 1])
    assert f.metrics["retrans_share_pct"] == pytest.approx(100 * sum(again[first:last + 1]) / sum(sent[first:last + 1]))
    assert f.title.startswith("TCP retransmissions at 0.3")
    heavy = [0.0] * 40 + [60.0] * 40 + [0.0] * 20
    (g,) = run("tcp-retransmits", ctx(*_tcp_day(heavy, sent)))
    assert g.severity == "high" and g.metrics["retrans_share_pct"] > 5


def test_tcp_retransmits_quiet_on_a_busy_host_with_its_usual_losses():
    """A busy host always retransmits a little (0.05 % here): that is its
    baseline, and a lone retransmission is not loss."""
    rng = np.random.default_rng(3)
    sent = rng.uniform(9000, 11000, 300)
    again = rng.poisson(5, 300).astype(float)
    assert run("tcp-retransmits", ctx(*_tcp_day(again, sent))) == []
    lone = [0.0] * 100
    lone[50] = 3.0
    assert run("tcp-retransmits", ctx(*_tcp_day(lone, [1200.0] * 100))) == []


def test_tcp_retransmits_from_none_in_rows_of_a_minute():
    """The same loss sampled every minute: a busy keep-alive run makes
    184 segments sent again a small share (0.19 %) of the minute's 61,000
    sent, but the host sent none again before.  A host that always
    retransmits a little (0.3/s before) shows nothing new at that share."""
    start = "2026-11-27 16:59:00"
    sent = [38.4, 38.4, 1019.2, 573.6, 23.8, 24.1]
    (f,) = run("tcp-retransmits", ctx(*_tcp_day([0.0, 0.0, 1.58, 1.48, 0.0, 0.0], sent, start=start, step=60)))
    assert (f.start, f.end) == (pd.Timestamp("2026-11-27 17:01:00"), pd.Timestamp("2026-11-27 17:02:00"))
    assert f.severity == "low" and f.metrics["retrans_share_pct"] == pytest.approx(
        100 * (1.58 + 1.48) / (1019.2 + 573.6))
    assert run("tcp-retransmits", ctx(*_tcp_day([0.3, 0.3, 1.58, 1.48, 0.3, 0.3], sent, start=start, step=60))) == []


def _connections(accepted, opened, start="2026-11-23 05:24:58"):
    return [metrics("web07", "net-tcp", start, 1, {"passive/s": accepted, "active/s": opened})]


def test_connection_surge_says_where_the_clients_were():
    """sar -n TCP of the web07 sample: two ab runs against nginx on the
    host itself, as many connections opened as accepted."""
    accepted = [0.0] * 4 + [35.0, 7109.90, 5170.30, 11818.0, 5749.0, 2991.0] + [0.0] * 29
    (f,) = run("connection-surge", ctx(*_connections(accepted, accepted)))
    assert (f.start, f.end) == (pd.Timestamp("2026-11-23 05:25:03"), pd.Timestamp("2026-11-23 05:25:07"))
    assert f.metrics["peak_accepted_per_s"] == 11818.0 and f.metrics["local_clients"] == 1
    assert f.title == ("New TCP connections surged to 11,818/s (usual 0/s), opened by clients on this host "
                       "(as many connections opened as accepted)")
    # clients elsewhere: the host accepted, it did not open
    (g,) = run("connection-surge", ctx(*_connections(accepted, [0.0] * len(accepted))))
    assert g.metrics["local_clients"] == 0 and "clients on this host" not in g.title


def test_a_busy_host_at_its_usual_rate_is_no_surge():
    """A front end accepting 2,000-3,000 connections a second all day, and
    a quiet host's 150 a second: neither is a surge."""
    rng = np.random.default_rng(11)
    busy = list(rng.uniform(2000, 3000, 300))
    assert run("connection-surge", ctx(*_connections(busy, [5.0] * 300))) == []
    small = [0.0] * 60 + [150.0] * 10 + [0.0] * 60
    assert run("connection-surge", ctx(*_connections(small, small))) == []


def _psi(section, columns, start="2026-11-24 14:18:33"):
    return metrics("stor1", section, start, 1, columns)


def test_psi_io_stall_with_full_stalls():
    """A writer stuck behind a throttled device: %sio near 100 and %fio
    near 95 for a minute (sar -q PSI of such a recording), none before."""
    some = [0.0] * 30 + [96.0 + (i % 5) for i in range(60)] + [0.5] * 10
    full = [0.0] * 30 + [93.0 + (i % 4) for i in range(60)] + [0.2] * 10
    (f,) = run("io-stall", ctx(_psi("psi-io", {"%sio": some, "%fio": full})))
    assert f.start == pd.Timestamp("2026-11-24 14:19:03") and f.end == pd.Timestamp("2026-11-24 14:20:02")
    assert f.metrics["mean_some_pct"] == pytest.approx(98.0) and f.metrics["mean_full_pct"] == pytest.approx(94.5)
    assert f.severity == "high" and f.title.startswith("Tasks stalled on I/O 98.0 % of the time")
    assert run("memory-stall", ctx(_psi("psi-mem", {"%smem": [0.0] * 100, "%fmem": [0.0] * 100}))) == []


def test_psi_cpu_and_memory_on_their_own_thresholds():
    waiting = [2.0] * 20 + [84.0] * 40 + [2.0] * 20
    (f,) = run("cpu-stall", ctx(_psi("psi-cpu", {"%scpu": waiting})))
    assert f.metrics["mean_some_pct"] == 84.0 and f.severity == "high"
    reclaim = [0.0] * 20 + [12.0] * 30 + [0.0] * 20
    (m,) = run("memory-stall", ctx(_psi("psi-mem", {"%smem": reclaim, "%fmem": [0.0] * 20 + [6.0] * 30 + [0.0] * 20})))
    assert m.metrics["mean_full_pct"] == 6.0 and m.severity == "low"


def test_psi_cpu_stall_dated_where_it_took_off():
    """A quota throttling a service as its traffic rises: %scpu 19 % then
    50 % in the first two 1-second rows, 42 %, then over the 50 %
    threshold: the stall began in the first row, not where the threshold
    was crossed.  Near miss: a slow creep (6 %, 9 %) is not the take-off."""
    some = [1.3] * 30 + [19.4, 49.7, 42.5] + [52.0 + (i % 9) for i in range(40)] + [1.2] * 10
    (f,) = run("cpu-stall", ctx(_psi("psi-cpu", {"%scpu": some})))
    assert f.start == pd.Timestamp("2026-11-24 14:19:06") and f.onset == pd.Timestamp("2026-11-24 14:19:03")
    assert f.metrics["some_at_onset_pct"] == 19.4 and f.metrics["baseline_some_pct"] == 1.3
    assert f.refs["onset_said"] == "%scpu took off at 14:19:03 (19.4 %, usually 1.30 %), below 50 % until 14:19:06"
    crept = [1.3] * 30 + [6.0, 9.0] + [52.0 + (i % 9) for i in range(40)] + [1.2] * 10
    (g,) = run("cpu-stall", ctx(_psi("psi-cpu", {"%scpu": crept})))
    assert g.onset == g.start == pd.Timestamp("2026-11-24 14:19:05")


def test_psi_cpu_stall_with_the_cpus_mostly_idle_counts_from_a_quarter_of_the_time():
    """A quota throttling a service, rows of a minute: tasks waited for a
    CPU 37-46 % of each minute while the CPUs were 15 % busy: a stall no
    busy host would show.  Near miss: the same waits with the CPUs 80 %
    busy are a busy host's contention, under the 50 % that says more."""
    some = [0.9] * 5 + [37.1, 46.2, 35.0] + [1.0] * 3
    for busy, found in ((15.0, True), (80.0, False)):
        cpu = metrics("stor1", "cpu", "2024-11-24 14:18:00", 60,
                      {"%user": [2.0] * 5 + [busy - 2.0] * 3 + [2.0] * 3, "%system": [0.5] * 11,
                       "%iowait": [0.0] * 11, "%idle": [97.5] * 5 + [100.0 - busy - 0.5] * 3 + [97.5] * 3},
                      device="all")
        got = run("cpu-stall", ctx(metrics("stor1", "psi-cpu", "2024-11-24 14:18:00", 60, {"%scpu": some}), cpu))
        assert bool(got) == found, busy
        if found:
            (f,) = got
            assert f.metrics["mean_some_pct"] == pytest.approx((37.1 + 46.2 + 35.0) / 3)
            assert f.start == pd.Timestamp("2024-11-24 14:23:00") and f.severity == "medium"


def test_psi_short_or_mild_stalls_are_not_findings():
    """A busy 10 s (a benchmark's burst) and a steady 5 % are a working host."""
    burst = [1.0] * 40 + [90.0] * 10 + [1.0] * 40
    assert run("cpu-stall", ctx(_psi("psi-cpu", {"%scpu": burst}))) == []
    assert run("io-stall", ctx(_psi("psi-io", {"%sio": [5.0] * 300, "%fio": [1.0] * 300}))) == []


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


def test_nic_blips_in_one_second_data_are_not_saturation():
    util = [10] * 30 + [99.0, 98.0] + [10] * 30   # 2 s at the limit: noise at a 1-second interval
    rate = [u / 100 * 2.5e9 / 1024 for u in util]
    assert run("nic-saturation", ctx(metrics("h", "net-dev", "2024-01-01", 1,
                                             {"%ifutil": util, "txkB/s": rate, "rxkB/s": [1e3] * len(util)},
                                             device="bond0"))) == []


def test_nic_saturation_and_drops():
    util = [10] * 10 + [92, 95, 99.1, 97] * 4 + [10] * 5      # 16 s at the link's limit
    rate = [u / 100 * 2.5e9 / 1024 for u in util]
    frames = [metrics("h", "net-dev", "2024-01-01", 1, {"%ifutil": util, "txkB/s": rate, "rxkB/s": [1e3] * len(util)}, device="bond0"),
              metrics("h", "net-edev", "2024-01-01", 1, {"rxdrop/s": [0] * 12 + [250, 300] * 8 + [0] * 5}, device="bond0")]
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


def test_filesystem_full_against_its_level_before():
    n = 120
    filling = np.minimum(100.0, np.where(np.arange(n) < 40, 41.0, 41.0 + (np.arange(n) - 40) * 1.5))
    steady_full = np.full(n, 99.4)                   # full from the first sample on
    half = np.full(n, 52.0)
    frames = [metrics("h", "filesystem", "2026-11-24 10:00", 10, {"%ufsused": filling, "%fsused": filling * 0.95,
                                                                  "%Iused": np.full(n, 3.0), "MBfsfree": 100 - filling},
                      device="/srv/data"),
              metrics("h", "filesystem", "2026-11-24 10:00", 10, {"%ufsused": steady_full, "%fsused": steady_full,
                                                                  "%Iused": np.full(n, 40.0)}, device="/var/log"),
              metrics("h", "filesystem", "2026-11-24 10:00", 10, {"%ufsused": half, "%fsused": half,
                                                                  "%Iused": np.full(n, 99.0 - 50)}, device="/")]
    found = sorted(run("filesystem-full", ctx(*frames)), key=lambda f: f.refs["filesystem"])
    assert [f.refs["filesystem"] for f in found] == ["/srv/data", "/var/log"]
    data, log = found
    assert data.title == "/srv/data full: %ufsused 100.00 at 10:13:20 (was 41.00 at 10:00:00), 0 MB free"
    assert data.severity == "critical" and data.metrics["before_pct"] == 41.0 and data.category == "disk-full"
    assert str(data.start) == "2026-11-24 10:13:10"
    assert log.title == "/var/log full: %ufsused 99.40 at 10:00:00 (already at the first sample of its records)"
    assert log.severity == "high"


def test_a_full_filesystem_is_named_with_its_mount_point_where_a_bundle_says():
    from sarsleuth.inputs.bundles.facts import HostFacts, Limit
    facts = HostFacts(bundle="b", host="h")
    facts.mounts["/dev/loop0"] = Limit("/dev/loop0", "/srv/data", "b!proc/mounts", 7, "/dev/loop0 /srv/data ext4 rw 0 0")
    full = np.minimum(100.0, np.linspace(20.0, 130.0, 60))
    c = ctx(metrics("h", "filesystem", "2026-11-24 10:00", 10, {"%ufsused": full, "%Iused": np.full(60, 1.0)},
                    device="/dev/loop0"))
    c.host_facts = [facts]
    (f,) = run("filesystem-full", c)
    assert f.title.startswith("/dev/loop0 (/srv/data) full: %ufsused 100.00")


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
                 "sp": "00007ffff58d8180", "error": 14, "lib": None, "cpu": None}
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
    rows = [  # ps aux, as procps prints it
        "www-data  9492  1.2  0.5 125000 10240 ?        S    09:18   0:42 nginx: worker process",
        "root     16659  0.0  0.1 123456  2048 ?        Ss   Dec24   0:00 nginx: master process /usr/sbin/nginx",
        "www-data 16663  1.1  0.5 125000 10212 ?        S    Dec24   3:10 nginx: worker process",
        "www-data 19344  1.3  0.5 125000 10300 ?        S    10:18   0:21 nginx: worker process",
        "www-data 25447  1.0  0.5 125000 10100 ?        S    07:41   0:55 nginx: worker process",
    ]
    after = pd.DataFrame({"pid": [9492, 16659, 16663, 19344, 25447],
                          "role": ["nginx-worker", "nginx-master", "nginx-worker", "nginx-worker", "nginx-worker"],
                          "start": ["09:18", "Dec24", "Dec24", "10:18", "07:41"],
                          "line": pd.array([3, 4, 5, 6, 7], dtype="Int64"), "text": rows})
    healthy = pd.DataFrame({"pid": [7223] + list(range(7292, 7302)), "role": ["nginx-master"] + ["nginx-worker"] * 10,
                            "start": ["13:32"] + ["13:33"] * 10})
    src_bad = Source(path="ps-after.txt", kind="ps", meta={"snapshots": [("after", after)]})
    src_ok = Source(path="ps-before.txt", kind="ps", meta={"snapshots": [("before", healthy)]})
    f = run("worker-pid-gaps", ctx(sources=[src_bad, src_ok]))
    assert len(f) == 1 and f[0].refs["pids"] == [9492, 16663, 19344, 25447]
    assert f[0].metrics["younger_than_master"] == 3
    # the rows themselves, master first, each at its line
    assert [(e.path, e.line, e.text) for e in f[0].evidence] == [("ps-after.txt", n, rows[n - 3]) for n in (4, 3, 5, 6, 7)]



def test_workers_forked_next_to_their_master_with_a_pid_between_are_a_start():
    """ps right after nginx started on a busy host: another fork took one
    PID between the two workers (a start, not a respawn); two workers ten
    PIDs past their master, one PID apart, were respawned."""
    def snap(master, workers):
        return pd.DataFrame({"pid": [master] + workers, "role": ["nginx-master"] + ["nginx-worker"] * len(workers),
                             "start": ["20:51"] * (1 + len(workers))})
    start = Source(path="ps-aux-205122.txt", kind="ps", meta={"snapshots": [("snapshot-1", snap(14961, [14962, 14964]))]})
    assert run("worker-pid-gaps", ctx(sources=[start])) == []
    respawned = Source(path="ps-aux-202009.txt", kind="ps", meta={"snapshots": [("snapshot-1", snap(14801, [14811, 14813]))]})
    (f,) = run("worker-pid-gaps", ctx(sources=[respawned]))
    assert f.refs["pids"] == [14811, 14813] and f.metrics["pid_span"] == 3

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
    assert errs[0].title.endswith("10645 non-2xx, 608 socket errors (100.0 % of 10645 requests)")
    r2m = {"tool": "ab", "transfer_rate_Bps": 1043909.08 * 1024, "path": "b.txt", "line": 1}
    # one client alone fills 43 % of a 20 Gbit/s link: not saturated ...
    assert run("loadtest-link-saturation", ctx(reports=[r2m], link_speed=20e9)) == []
    # ... unless the threshold says so
    link = run("loadtest-link-saturation", ctx(reports=[r2m], link_speed=20e9),
               saturation_fraction=0.3, min_rate_Bps=10e6, max_clients=8, match_tolerance=0.15, framing_overhead=0.04)
    assert link[0].metrics["fraction_of_link"] == pytest.approx(1043909.08 * 1024 * 8 / 20e9)


#: ab 2.3 against a server out of descriptors: a request that failed in
#: several ways is counted in each, so more failures than requests.
AB_COUNTED_TWICE = """\
This is ApacheBench, Version 2.3 <$Revision: 1903618 $>
Copyright 1996 Adam Twiss, Zeus Technology Ltd, http://www.zeustech.net/
Licensed to The Apache Software Foundation, http://www.apache.org/

Benchmarking 127.0.0.1 (be patient)
Finished 60000 requests


Server Software:        nginx/1.22.1
Server Hostname:        127.0.0.1
Server Port:            8080

Document Path:          /
Document Length:        612 bytes

Concurrency Level:      1200
Time taken for tests:   21.412 seconds
Complete requests:      60000
Failed requests:        75112
   (Connect: 0, Receive: 1210, Length: 36951, Exceptions: 36951)
Keep-Alive requests:    21733
Total transferred:      19052640 bytes
HTML transferred:       14111496 bytes
Requests per second:    2802.16 [#/sec] (mean)
Time per request:       428.240 [ms] (mean)
Time per request:       0.357 [ms] (mean, across all concurrent requests)
Transfer rate:          868.95 [Kbytes/sec] received
"""


def test_ab_failures_counted_in_several_kinds_are_not_a_share_above_100_percent(tmp_path):
    import sarsleuth
    path = tmp_path / "ab-c1200.txt"
    path.write_text(AB_COUNTED_TWICE)
    (f,) = [f for f in sarsleuth.load(path).findings if f.detector == "loadtest-errors"]
    assert "100.0 %" not in f.title
    assert f.title.endswith("75112 failed of 60000 requests (receive 1210, length 36951, exceptions 36951): ab counts "
                            "a request in each kind of failure it hits, so more failures than requests; at least "
                            "61.6 % of the requests failed")
    assert f.metrics["failures_counted_twice"] is True and f.metrics["error_fraction"] == pytest.approx(36951 / 60000)


LOG_DETECTORS = ["page-allocation-failure", "nic-rx-alloc-failure", "oom-kill", "segfault", "hung-task", "kernel-oops",
                 "kernel-lockup", "nfs-server-down", "enospc", "fork-rejected", "config-reload", "host-restart",
                 "package-change",
                 "tcp-tw-bucket-overflow", "socket-memory", "syn-flood", "conntrack-full", "worker-signal-exit",
                 "worker-pid-gaps", "worker-connections-exhausted", "too-many-open-files", "upstream-timeout", "enomem",
                 "upstream-error", "mtu-drops",
                 "loadtest-errors", "loadtest-tail-latency", "loadtest-link-saturation", "loadtest-stall",
                 "loadtest-behind-rate", "loadtest-serialized", "nic-link-down", "nginx-shm-exhausted", "port-exhaustion", "upstream-down", "custom-signature",
                 "machine-check", "disk-error", "filesystem-error", "readonly-write", "service-failure", "port-in-use",
                 "db-backend-crash", "fpm-pool-limit", "db-connection-limit", "name-resolution", "nic-tx-timeout",
                 "neighbour-table-overflow", "cpu-thermal-throttle", "upstream-backlog-full", "upstream-header-too-big",
                 "oom-panic", "smart-bad-sectors", "nginx-rate-limited", "thin-pool-full", "cifs-server-down",
                 "xfs-alloc-stall", "md-array-degraded", "md-array-failed", "db-server-abort", "core-dump"]


@pytest.mark.parametrize("det_id", LOG_DETECTORS)
def test_log_detectors_quiet_on_routine_lines(det_id):
    routine = events_frame([ev("log", "CROND[2101]: (root) CMD (/usr/lib64/sa/sa1 1 1)", line=1),
                            ev("worker-start", "start worker process 100", line=2, file="error.log", source="nginx-error")])
    assert run(det_id, ctx(*normal_day("h"), events=routine)) == []


def test_thresholds_are_validated():
    with pytest.raises(ValueError):
        registry()["swap-climb"]({"no_such_param": 1})


# ---------------------------------------------------------------------------
# Every detector: a positive and a negative case, through the real signature
# table (the event kind comes from classifying the message, as the parsers do)
# ---------------------------------------------------------------------------

from sarsleuth.knowledge import signatures  # noqa: E402
from sarsleuth.knowledge import categories, causal_chains, kb_entry  # noqa: E402


def classified(message, **kw):
    kind = signatures.classify(message) or "log"
    return ev(kind, message, **kw)


#: the program logging a detector's lines, where it is not the kernel
LOG_PROGRAMS = {"db-server-abort": "mysqld"}

#: detector -> (log lines that must make it fire, a check on its first finding)
LOG_POSITIVES = {
    "hung-task": (["INFO: task jbd2/dm-0-8:412 blocked for more than 120 seconds.",
                   "INFO: task mysqld:2210 blocked for more than 120 seconds."],
                  lambda f: f.metrics["reports"] == 2 and f.metrics["blocked_seconds"] == 120
                  and "mysqld" in f.title and f.category == "kernel-stall"),
    "nfs-server-down": (["nfs: server 10.0.4.20 not responding, still trying",
                         "lockd: server 10.0.4.20 not responding, still trying",
                         "nfs: server 10.0.4.20 OK"],
                        lambda f: f.title == "NFS server 10.0.4.20 not responding (2 x still trying) for 2 s until it "
                                             "answered again"
                        and f.metrics["recovered"] is True and f.category == "network-storage"),
    "enospc": (['write() to "/srv/data/access.log" failed (28: No space left on device) while logging request, '
                'client: 127.0.0.1, server: web, request: "GET / HTTP/1.1", host: "127.0.0.1:8080"'] * 2 +
               ["cannot queue message 5121: [Errno 28] No space left on device: '/srv/data/queue/msg-0005121'"],
               lambda f: f.title.startswith("3 x No space left on device: a process (3, /srv/data/access.log and 1 "
                                            "more path(s))") and f.category == "disk-full" and f.metrics["paths"] == 2),
    "fork-rejected": (["/usr/local/bin/run-jobs.sh: fork: retry: Resource temporarily unavailable",
                       "runtime: failed to create new OS thread (have 2049 already; errno=11)",
                       "cgroup: fork rejected by pids controller in /system.slice/jobs.service"],
                      lambda f: f.title == "3 x new process or thread refused: run-jobs.sh 1 x; a process 1 x; cgroup "
                                           "/system.slice/jobs.service at its pids.max"
                      and f.metrics["thread_failures"] == 1 and f.category == "pid-exhaustion"),
    "config-reload": (["Reloaded nginx.service - A high performance web server and a reverse proxy server.",
                       "1024 worker_connections are not enough while connecting to upstream",
                       "1024 worker_connections are not enough while connecting to upstream"],
                      lambda f: f.title == "nginx reloaded its configuration at 10:00:00; then, absent before: 2 x "
                                           "worker-connections-exhausted from 10:00:01"
                      and f.severity == "high" and f.metrics["new_errors"] == 2 and f.category == "config-change"),
    "kernel-oops": (["BUG: unable to handle kernel NULL pointer dereference at 00000000000005ec"],
                    lambda f: f.severity == "high" and "NULL pointer" in f.title and f.category == "worker-crash"),
    "kernel-lockup": (["watchdog: BUG: soft lockup - CPU#3 stuck for 22s! [kworker/3:1:1187]",
                       "watchdog: BUG: soft lockup - CPU#1 stuck for 48s! [java:4410]",
                       "rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:"],
                      lambda f: f.title == "2 soft lockup(s), 1 RCU stall(s) on CPU 1, 3: java, kworker/3:1 stuck up to 48 s"
                      and f.severity == "high" and f.category == "kernel-stall" and f.refs["pids"] == [1187, 4410]),
    "nic-link-down": (["ixgbe 0000:3b:00.1 eno2: NIC Link is Down", "ixgbe 0000:3b:00.1 eno2: NIC Link is Down",
                       "ixgbe 0000:3b:00.1 eno2: NIC Link is Down"],
                      lambda f: f.metrics["link_down"] == 3 and "eno2" in f.title and f.severity == "high"),
    "nginx-shm-exhausted": (['could not allocate new session in SSL session shared cache "le_nginx_SSL" while SSL handshaking'],
                            lambda f: "le_nginx_SSL" in f.title and f.metrics["lines"] == 1),
    "enomem": (["posix_memalign(16, 16384) failed (12: Cannot allocate memory)",
                "malloc(262144) failed (12: Cannot allocate memory) while reading upstream"],
               lambda f: f.metrics["lines"] == 2 and "posix_memalign" in f.title and "malloc" in f.title),
    "worker-connections-exhausted": (["1024 worker_connections are not enough while connecting to upstream"] * 3,
                                     lambda f: f.metrics["lines"] == 3 and f.category == "connection-limit"),
    "too-many-open-files": (["accept4() failed (24: Too many open files)"] * 12,
                            lambda f: f.severity == "high" and "accept4" in f.title),
    "upstream-timeout": (['upstream timed out (110: Connection timed out) while reading response header from upstream, '
                          'client: 10.0.0.9, server: a, request: "GET / HTTP/1.1", upstream: "http://10.0.1.5:8080/"'],
                         lambda f: "http://10.0.1.5:8080: 1" in f.title),
    # an instance sending 8950-byte packets into a 1450-byte overlay, repeated (one row, five lines)
    "mtu-drops": (["tap0e778df8-ca: dropped over-mtu packet: 8950 > 1450"] * 5,
                  lambda f: f.title == "5 x over-MTU packet drop over 4 s (tap0e778df8-ca: 5)"
                  and f.category == "network-failure" and f.metrics["interfaces"] == 1),
    # a backend killed mid-request: nginx reads a closed connection (502)
    "upstream-error": (['upstream prematurely closed connection while reading response header from upstream, '
                        'client: 10.0.0.9, server: a, request: "GET /report HTTP/1.1", upstream: '
                        '"http://10.0.1.7:9000/report", host: "a"'] * 2,
                       lambda f: f.title == "2 x upstream error over 1 s (http://10.0.1.7:9000: 2)"
                       and f.category == "upstream-failure"),
    # both backends of a group stop: refused connects, the servers disabled, then no live upstreams
    "upstream-down": (['connect() failed (111: Connection refused) while connecting to upstream, client: 127.0.0.1, '
                       'server: app, request: "GET /api/ HTTP/1.1", upstream: "http://127.0.0.1:9001/api/", host: "a"',
                       'upstream server temporarily disabled while connecting to upstream, client: 127.0.0.1, '
                       'server: app, request: "GET /api/ HTTP/1.1", upstream: "http://127.0.0.1:9001/api/", host: "a"',
                       'connect() to 10.20.0.12:8080 failed (113: No route to host) while connecting to upstream, '
                       'client: 10.1.2.3, server: app, request: "GET / HTTP/1.1", upstream: "http://10.20.0.12:8080/"',
                       'connect() failed (111: Connection refused) while connecting to upstream, client: 127.0.0.1, '
                       'server: app, request: "GET /api/ HTTP/1.1", upstream: "http://127.0.0.1:9001/api/", host: "a"'] +
                      ['no live upstreams while connecting to upstream, client: 127.0.0.1, server: app, '
                       'request: "GET /api/ HTTP/1.1", upstream: "http://app_backend/api/", host: "a"'] * 8,
                      lambda f: f.metrics == {"lines": 12, "refused": 2, "unreachable": 1, "no_live": 8, "disabled": 1,
                                              "servers": 2, "groups": 1, "connect_failures": 3}
                      and "127.0.0.1:9001 refused 2 x" in f.title and "10.20.0.12:8080 no route to host 1 x" in f.title
                      and "8 x no live upstreams in app_backend" in f.title and f.category == "upstream-failure"
                      and f.refs["upstreams"] == ["10.20.0.12:8080", "127.0.0.1:9001"]
                      and f.refs["errnos"] == {"111": 2, "113": 1} and f.severity == "high"),
    "port-exhaustion": (['connect() to 10.30.1.21:8080 failed (99: Cannot assign requested address) while connecting '
                         'to upstream, client: 198.51.100.7, server: shop, request: "GET / HTTP/1.1", '
                         'upstream: "http://10.30.1.21:8080/"'] * 11,
                        lambda f: f.metrics["lines"] == 11 and f.severity == "high" and "10.30.1.21:8080 (11)" in f.title
                        and f.category == "connection-limit"),
    # drivers/edac/edac_mc.c: corrected errors of one DIMM (sb_edac's label), then an uncorrected one
    "machine-check": (["EDAC MC0: 1 CE memory read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0 (channel:1 slot:0 "
                       "page:0x8fb4f offset:0x300 grain:32 syndrome:0x0 - area:DRAM err_code:0001:0091 socket:0 ha:0 "
                       "channel_mask:2 rank:1)"] * 3 +
                      ["mce: [Hardware Error]: Machine check events logged",
                       "EDAC MC0: 1 UE memory read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0 (channel:1 slot:0 "
                       "page:0x8fb50 offset:0x0 grain:32 - area:DRAM err_code:0001:0090 socket:0 ha:0 channel_mask:2 "
                       "rank:1)"],
                      lambda f: f.title == "1 uncorrected and 3 corrected memory error(s) on "
                                           "CPU_SrcID#0_Ha#0_Chan#1_DIMM#0 (MC0 channel:1 slot:0); 1 machine check "
                                           "record(s) over 4 s"
                      and f.severity == "critical" and f.category == "hardware-error"
                      and f.refs["dimm"] == "CPU_SrcID#0_Ha#0_Chan#1_DIMM#0" and f.metrics["corrected"] == 3),
    # drivers/ata/libata-eh.c, drivers/scsi/scsi_logging.c, block/blk-mq.c: one unreadable sector read twice
    "disk-error": (["ata1.00: exception Emask 0x0 SAct 0x1 SErr 0x0 action 0x0",
                    "ata1.00: failed command: READ FPDMA QUEUED",
                    "ata1.00: error: { UNC }",
                    "sd 0:0:0:0: [sda] tag#0 Sense Key : Medium Error [current]",
                    "sd 0:0:0:0: [sda] tag#0 Add. Sense: Unrecovered read error - auto reallocate failed",
                    "I/O error, dev sda, sector 245899176 op 0x0:(READ) flags 0x0 phys_seg 1 prio class 0"] * 2,
                   lambda f: f.title == "Disk sda (ata1.00): 2 failed READ(s) at sector 245899176: "
                                        "media error (Unrecovered read error - auto reallocate failed); READ FPDMA "
                                        "QUEUED failed 2 x (UNC) over 11 s"
                   and f.severity == "high" and f.category == "hardware-error" and f.refs["device"] == "sda"
                   and f.metrics["media_errors"] == 2 and f.metrics["io_errors"] == 2),
    # fs/ext4/super.c, fs/jbd2/journal.c
    "filesystem-error": (["EXT4-fs error (device dm-0): ext4_lookup:1601: inode #1442: comm nginx: deleted inode "
                          "referenced: 2363",
                          "Aborting journal on device dm-0-8.",
                          "EXT4-fs (dm-0): Remounting filesystem read-only",
                          "EXT4-fs error (device dm-0) in ext4_reserve_inode_write:5735: Journal has aborted"],
                         lambda f: f.title == "ext4 on dm-0: 2 error(s) (in ext4_lookup, ext4_reserve_inode_write; "
                                              "comm nginx), journal aborted, remounted read-only at 10:00:02"
                         and f.severity == "critical" and f.category == "filesystem-error"
                         and f.metrics["readonly"] is True and f.refs["device"] == "dm-0"),
    "readonly-write": (['open() "/var/log/nginx/access.log" failed (30: Read-only file system)'] * 2 +
                       ["cannot queue message 77: [Errno 30] Read-only file system: '/srv/data/queue/msg-77'"],
                       lambda f: f.title == "3 x write refused: Read-only file system over 2 s: "
                                            "/var/log/nginx/access.log: 2, /srv/data/queue/msg-77: 1"
                       and f.category == "filesystem-error" and f.metrics["paths"] == 2),
    # src/core/service.c and unit.c of systemd v236+: a restart loop until the start limit
    "service-failure": (["nginx.service: Main process exited, code=exited, status=1/FAILURE",
                         "nginx.service: Failed with result 'exit-code'.",
                         "nginx.service: Scheduled restart job, restart counter is at 1.",
                         "nginx.service: Main process exited, code=exited, status=1/FAILURE",
                         "nginx.service: Failed with result 'exit-code'.",
                         "nginx.service: Scheduled restart job, restart counter is at 2.",
                         "nginx.service: Start request repeated too quickly.",
                         "nginx.service: Failed with result 'exit-code'.",
                         "Failed to start nginx.service - A high performance web server and a reverse proxy server."],
                        lambda f: f.title == "nginx.service down after 2 failure(s) (result 'exit-code', "
                                             "status=1/FAILURE) and 2 restart(s): systemd gave up at 10:00:06 (start "
                                             "request repeated too quickly)"
                        and f.severity == "critical" and f.category == "service-failure"
                        and f.refs["unit"] == "nginx.service" and f.metrics["start_limit_hit"] is True),
    # nginx src/core/ngx_connection.c
    "port-in-use": (["bind() to 0.0.0.0:80 failed (98: Address already in use)",
                     "bind() to [::]:80 failed (98: Address already in use)"] * 2 + ["still could not bind()"],
                    lambda f: f.title == "port 80 already in use (0.0.0.0:80, [::]:80): a server could not bind 4 x, "
                                         "gave up 1 x ('still could not bind()') over 4 s"
                    and f.category == "service-failure" and f.refs["port"] == "80"),
    # src/backend/postmaster/postmaster.c
    "db-backend-crash": (["LOG:  server process (PID 4410) was terminated by signal 9: Killed",
                          "LOG:  terminating any other active server processes",
                          "LOG:  all server processes terminated; reinitializing"],
                         lambda f: f.title == "PostgreSQL server process 4410 killed by signal 9 (Killed): the "
                                              "postmaster ended every other session and reinitialized (crash recovery)"
                         and f.refs["pids"] == [4410] and f.category == "worker-crash"),
    # sapi/fpm/fpm/fpm_process_ctl.c
    "fpm-pool-limit": (["WARNING: [pool www] seems busy (you may need to increase pm.start_servers, or "
                        "pm.min/max_spare_servers), spawning 8 children, there are 0 idle, and 4 total children",
                        "WARNING: [pool www] server reached pm.max_children setting (5), consider raising it"],
                       lambda f: f.title == "2 x PHP-FPM pool busy or at pm.max_children over 1 s: pool www reached "
                                            "pm.max_children = 5"
                       and f.metrics["max_children"] == 5 and f.category == "connection-limit"),
    # a Go service whose nameserver stopped answering, a dozen calls over 11 s
    "name-resolution": (['Post "https://payments.internal:9443/v1/charge": dial tcp: lookup payments.internal on '
                         '10.0.0.2:53: read udp 10.0.0.15:41235->10.0.0.2:53: i/o timeout'] * 12,
                        lambda f: f.title == "12 x name resolution failed for payments.internal: "
                                             "read udp 10.0.0.15:41235->10.0.0.2:53: i/o timeout over 11 s"
                        and f.metrics["lines"] == 12 and f.metrics["no_answer"] == 12 and f.severity == "high"
                        and f.category == "upstream-failure" and f.refs["name"] == "payments.internal"),
    "db-connection-limit": (["FATAL:  sorry, too many clients already"] * 3 +
                            ["FATAL:  remaining connection slots are reserved for non-replication superuser "
                             "connections"],
                            lambda f: f.title == "4 x database connection refused over 3 s (3 x too many clients, "
                                                 "1 x only reserved slots left)"
                            and f.metrics["too_many_clients"] == 3 and f.category == "connection-limit"),
    # net/sched/sch_generic.c, 6.8+ behind the r8125 driver's prefix (a real card hanging every few hours)
    "nic-tx-timeout": (["r8125 0000:22:04.0 eth4: NETDEV WATCHDOG: CPU: 3: transmit queue 0 timed out 5010 ms",
                        "r8125 0000:22:01.0 eth1: NETDEV WATCHDOG: CPU: 0: transmit queue 0 timed out 5010 ms",
                        "NETDEV WATCHDOG: eth4 (r8125): transmit queue 0 timed out"],
                       lambda f: f.title == "3 x NIC transmit timeout (card reset) over 2 s (eth4: 2, eth1: 1)"
                       and f.category == "network-failure" and f.severity == "high"),
    # net/core/neighbour.c on a Kubernetes node past gc_thresh3
    "neighbour-table-overflow": (["neighbour: arp_cache: neighbor table overflow!"] * 4,
                                 lambda f: f.title.startswith("4 x neighbour table overflow (packets to new neighbours "
                                                              "dropped) over 3 s (arp_cache: 4)")
                                 and f.category == "network-failure"),
    # a uWSGI pool with every worker busy: its unix socket's listen queue full (EAGAIN)
    "upstream-backlog-full": (['connect() to unix:///var/sockets/api.sock failed (11: Resource temporarily unavailable) '
                               'while connecting to upstream, client: 10.10.6.22, server: api, request: "GET / HTTP/1.1", '
                               'upstream: "uwsgi://unix:///var/sockets/api.sock:", host: "api"'] * 3,
                              lambda f: f.title == "3 x backend socket's listen queue full (EAGAIN) over 2 s "
                                                   "(unix:///var/sockets/api.sock: 3)"
                              and f.category == "connection-limit"),
    # headers too big for uwsgi_buffer_size: a 502 of nginx's own, no backend crashed
    "upstream-header-too-big": (['upstream sent too big header while reading response header from upstream, client: '
                                 '10.1.2.3, server: web, request: "POST /issues/new HTTP/1.1", upstream: '
                                 '"uwsgi://unix:///tmp/uwsgi.sock:", host: "web"'] * 2,
                                lambda f: f.title == "2 x upstream sent too big header (502) over 1 s "
                                                     "(uwsgi://unix:///tmp/uwsgi.sock: 2)"
                                and f.category == "upstream-failure"),
    # mm/oom_kill.c with every task exempt (oom_score_adj -1000): the kernel panics instead of killing
    "oom-panic": (["Kernel panic - not syncing: Out of memory and no killable processes..."],
                  lambda f: f.title == "1 x kernel panic: out of memory (Out of memory and no killable processes)"
                  and f.category == "memory-exhaustion" and f.severity == "critical"),
    # smartd repeating its report every 30 minutes: one burst, the drive named
    "smart-bad-sectors": (["Device: /dev/sdc [SAT], 8 Currently unreadable (pending) sectors",
                           "Device: /dev/sdc [SAT], 8 Offline uncorrectable sectors"],
                          lambda f: f.title == "2 x SMART report(s) of unreadable sectors over 1 s (/dev/sdc: 2)"
                          and f.category == "hardware-error" and f.severity == "high"),
    # arch/x86/kernel/cpu/mce/therm_throt.c, both wordings
    # a gluster brick's XFS retrying an extent map's allocation, every hundred tries
    "xfs-alloc-stall": (["XFS: glusterfsd(3617) possible memory allocation deadlock size 65560 in kmem_alloc "
                         "(mode:0x2400240)"] * 3,
                        lambda f: f.title == "3 x XFS allocation retried (possible memory allocation deadlock) over "
                                             "2 s (glusterfsd: 3)"
                        and f.category == "memory-exhaustion" and f.severity == "medium"),
    # docker's devicemapper pool filling: writes queue, then the pool goes read-only
    "thin-pool-full": (["device-mapper: thin: 253:2: switching pool to out-of-data-space (queue IO) mode",
                        "device-mapper: thin: 253:2: switching pool to read-only mode"],
                       lambda f: f.title == "2 x thin pool out of space (writes queued or failed) over 1 s "
                                            "(out-of-data-space (queue IO): 1, read-only: 1)"
                       and f.category == "disk-full" and f.severity == "critical"),
    # systemd-journald aborting: no kernel line, only systemd-coredump's (and ABRT's on RHEL)
    "core-dump": (["Process 334 (systemd-journal) of user 0 dumped core.",
                   "Process 334 (systemd-journal) of user 0 killed by SIGABRT - dumping core"],
                  lambda f: f.title == "1 process(es) crashed and dumped core: systemd-journal (PID 334)"
                  and f.refs["pids"] == [334] and f.category == "worker-crash" and f.severity == "high"),
    # MySQL 8 stopping on the error before it (its log's "[Server] Aborting")
    "db-server-abort": (["Server: Aborting"],
                        lambda f: f.title == "mysqld aborted: the database server stopped"
                        and f.category == "service-failure" and f.severity == "high"),
    # a RAID 5 member failing writes, taken out of its array, then mdadm's monitor saying so (not counted twice)
    "md-array-degraded": (["md/raid:md2: Disk failure on sdb6, disabling device.",
                           "Fail event detected on md device /dev/md2, component device /dev/sdb6"],
                          lambda f: f.title == "1 x md RAID member failed, array degraded: sdb6 taken out of md2"
                          and f.category == "hardware-error" and f.severity == "high"),
    # a second member of the RAID 5 failing: the array stops
    "md-array-failed": (["md/raid:md2: Cannot continue operation (2/4 failed)."],
                        lambda f: f.title == "1 x md RAID array stopped, too many members failed: md2, 2 of 4 "
                                             "members failed"
                        and f.metrics["failed_members"] == 2 and f.category == "hardware-error"
                        and f.severity == "critical"),
    # an SMB share whose server stopped answering, on a 5.x client
    "cifs-server-down": (["CIFS: VFS: \\\\files1.corp has not responded in 180 seconds. Reconnecting..."],
                         lambda f: f.title == "1 x SMB/CIFS server not responding (reconnecting) "
                                              "(\\\\files1.corp: 1)"
                         and f.category == "network-storage" and f.severity == "high"),
    # limit_req refusing one client at its login page, three times in two seconds
    "nginx-rate-limited": (['limiting requests, excess: 20.955 by zone "authlimit", client: 172.17.0.2, server: , '
                            'request: "GET /login HTTP/1.1", host: "192.168.2.10"'] * 3,
                           lambda f: f.title == "3 x refused by nginx's rate or connection limit over 2 s "
                                                "(zone authlimit: 3)"
                           and f.category == "connection-limit" and f.severity == "medium"),
    "cpu-thermal-throttle": (["CPU5: Core temperature above threshold, cpu clock throttled (total events = 2081)",
                              "CPU0: Package temperature is above threshold, cpu clock is throttled (total events = 2263)"],
                             lambda f: f.title == "2 x CPU thermal throttling (clock slowed) over 1 s (Core: 1, Package: 1)"
                             and f.category == "hardware-error" and f.severity == "medium"),
}


@pytest.mark.parametrize("det_id", sorted(LOG_POSITIVES))
def test_log_detector_fires_on_its_lines(det_id):
    lines, check = LOG_POSITIVES[det_id]
    e = events_frame([classified(m, ts=f"2024-03-01 10:00:{i:02d}", line=i + 1, process=LOG_PROGRAMS.get(det_id, "kernel"))
                      for i, m in enumerate(lines)])
    f = run(det_id, ctx(events=e))
    assert len(f) == 1, [x.title for x in f]
    assert check(f[0]), (f[0].title, f[0].metrics)
    assert f[0].evidence and f[0].evidence[0].line == 1


def test_a_vm_disk_the_hyper_v_host_failed_is_a_disk_error():
    """drivers/scsi/storvsc_drv.c: WRITE(10)s the host failed (SRB 0x04),
    as a real Azure VM logged 18 of them before its journal thread hung;
    a SYNCHRONIZE CACHE aborted (5.10+'s line); smartd's ATA pass-through
    the host refuses and a scan's INQUIRY on no LUN are the driver's noise
    (near misses), and no drive's smartctl is advised."""
    lines = ["hv_storvsc vmbus_0_1: cmd 0x2a scsi status 0x2 srb status 0x4"] * 4 + [
        "hv_storvsc vmbus_0_1: tag#3 cmd 0x35 status: scsi 0x0 srb 0x2 hv 0xc0000001",
        "hv_storvsc vmbus_0_1: cmd 0x85 scsi status 0x2 srb status 0x6",
        "hv_storvsc vmbus_0_1: tag#0 cmd 0x12 status: scsi 0x0 srb 0x20 hv 0xc0000001"]
    e = events_frame([classified(m, ts=f"2024-03-01 10:00:{i:02d}", line=i + 1) for i, m in enumerate(lines)])
    (f,) = run("disk-error", ctx(events=e))
    assert f.title == "Disk vmbus_0_1: 5 failed WRITE/FLUSH(s) (failed by the Hyper-V host: a VM's disk) over 4 s"
    assert (f.severity, f.metrics["io_errors"], f.metrics["virtual_disk_errors"], f.metrics["media_errors"]) == (
        "medium", 5, 5, 0)
    noise = events_frame([classified(m, line=i + 1) for i, m in enumerate(lines[5:])])
    assert run("disk-error", ctx(*normal_day("h"), events=noise)) == []


#: lines that look like the signal but are not it
LOG_NEAR_MISSES = {
    "mtu-drops": "tap0e778df8-ca: changing MTU from 1500 to 1450",
    # a refused connect is a backend that is down, not one that closed mid-request
    "upstream-error": ('connect() failed (111: Connection refused) while connecting to upstream, client: 127.0.0.1, '
                       'server: app, request: "GET /api/ HTTP/1.1", upstream: "http://127.0.0.1:9001/api/", host: "a"'),
    "nic-link-down": "e1000e 0000:00:1f.6 eno1: NIC Link is Up 1000 Mbps Full Duplex, Flow Control: None",
    "port-exhaustion": "bind() to 10.0.0.1:80 failed (99: Cannot assign requested address)",
    # a slow backend is a timeout, not a backend that is down
    "upstream-down": ('upstream timed out (110: Connection timed out) while connecting to upstream, client: 10.1.2.3, '
                      'server: api, request: "GET / HTTP/1.1", upstream: "http://10.0.0.7:8080/"'),
    "name-resolution": "reverse mapping checking getaddrinfo for host-10-1-2-3.example.net [10.1.2.3] failed.",
    "hung-task": "hung_task_timeout_secs is set to 120",
    "kernel-oops": "BUG: soft lockup - CPU#3 stuck for 23s! [java:102195]",
    "nfs-server-down": "nfs: server nas01 does not support NFSv4.2",
    "enospc": "Low disk space on /srv/data: 512 MB free",
    "fork-rejected": "pid_max: default: 32768 minimum: 301",
    "config-reload": "Reloading finished in 212 ms.",
    "host-restart": "Linux-PAM 1.5.2 loaded",
    "kernel-lockup": "rcu: \tRCU CPU stall warnings timeout set to 100 (rcu_cpu_stall_timeout).",
    "nginx-shm-exhausted": "ssl_session_cache shared:SSL:10m configured",
    "enomem": "malloc(262144) succeeded after retry",
    "oom-kill": "Out of memory handling: oom_score_adj for nginx set to -500",
    "segfault": "systemd-coredump[812]: Process 811 (nginx) of user 33 dumped core.",
    "machine-check": "mce: CPU0: Core temperature above threshold, cpu clock throttled (total events = 1)",
    "disk-error": "sd 2:0:0:0: [sdb] tag#0 Sense Key : Illegal Request [current]",
    "filesystem-error": "EXT4-fs (sda1): re-mounted. Opts: errors=remount-ro",
    "readonly-write": "mount: /mnt/iso: WARNING: source write-protected, mounted read-only.",
    "service-failure": "nginx.service: Main process exited, code=exited, status=0/SUCCESS",
    "port-in-use": "bind() to 10.0.0.9:80 failed (99: Cannot assign requested address)",
    "db-backend-crash": "WARNING:  terminating connection because of crash of another server process",
    "fpm-pool-limit": "NOTICE: [pool www] child 4410 started",
    "db-connection-limit": "LOG:  database system is ready to accept connections",
    "nic-tx-timeout": "e1000e 0000:00:19.0 eth0: Reset adapter unexpectedly",
    "neighbour-table-overflow": "IPv6: ADDRCONF(NETDEV_CHANGE): eth0: link becomes ready",
    "cpu-thermal-throttle": "CPU2: Core temperature/speed normal",
    "oom-panic": "Kernel panic - not syncing: softlockup: hung tasks",
    "smart-bad-sectors": "Device: /dev/sda [SAT], SMART Usage Attribute: 194 Temperature_Celsius changed from 64 to 62",
    # a socket file that is gone: the backend is down, not busy
    "upstream-backlog-full": ('connect() to unix:/run/php/php8.2-fpm.sock failed (2: No such file or directory) while '
                              'connecting to upstream, client: 10.1.2.3, server: www, request: "GET / HTTP/1.1"'),
    "upstream-header-too-big": ('upstream sent invalid header while reading response header from upstream, client: '
                                '10.1.2.3, server: web, request: "GET / HTTP/1.1"'),
    # XFS's own allocation of a buffer that failed once and was retried quietly
    "xfs-alloc-stall": "XFS (dm-3): metadata I/O error in \"xfs_trans_read_buf_map\" at daddr 0x3a1c50 len 8 error 12",
    # systemd-coredump at work: its "dumped core" line comes next (or a limit said no core)
    "core-dump": "Process 4410 (resizer) of user 0 terminated abnormally with signal 11/SEGV, processing...",
    # a client's connection dropped: the server runs on
    "db-server-abort": "Aborted connection 1234 to db: 'shop' user: 'app' host: '10.0.0.5' (Got an error reading "
                       "communication packets)",
    # the array running on the members left: said by the failure line before it, not again
    "md-array-degraded": "md/raid:md2: Operation continuing on 3 devices.",
    "md-array-failed": "md/raid:md2: Disk failure on sdb6, disabling device.",
    # the pool's early warning: nothing refused yet
    "thin-pool-full": "device-mapper: thin: 253:2: reached low water mark for data device: sending event.",
    "cifs-server-down": "CIFS: VFS: \\\\files1 Send error in SessSetup = -13",
    # a request within the burst, only delayed: served
    "nginx-rate-limited": ('delaying request, excess: 0.950, by zone "one", client: 10.1.2.3, server: example.com, '
                           'request: "GET / HTTP/1.1"'),
}


@pytest.mark.parametrize("det_id", sorted(LOG_NEAR_MISSES))
def test_log_detector_ignores_near_misses(det_id):
    e = events_frame([classified(LOG_NEAR_MISSES[det_id], line=1, process=LOG_PROGRAMS.get(det_id, "kernel"))])
    assert run(det_id, ctx(*normal_day("h"), events=e)) == []


def test_a_core_dump_of_a_crash_a_segfault_line_tells_is_not_told_again():
    """The kernel's segfault line and systemd-coredump's for PID 16660:
    one crash, told by the segfault finding (which counts its core)."""
    e = events_frame([classified("nginx[16660]: segfault at 0 ip 00007f3a2c1e4b5a sp 00007ffd3a9c1e80 error 4 in "
                                 "ngx_http_lua_module.so[7f3a2c1a0000+9b000]", line=1),
                      classified("Process 16660 (nginx) of user 33 dumped core.", ts="2014-05-06 15:04:14", line=2,
                                 process="systemd-coredump")])
    assert run("core-dump", ctx(events=e)) == []
    (seg,) = run("segfault", ctx(events=e))
    assert seg.metrics["cores_dumped"] == 1


def test_hung_task_names_the_holder_of_the_lock_it_waits_on():
    """6.16's report: the waiter's header, its task line, the holder the
    kernel names and the holder's own task line (in D state)."""
    detail = "\n".join([
        "      Not tainted 6.18.44 #1",
        '"echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.',
        "task:touch           state:D stack:0     pid:7196  tgid:7196  ppid:6908   task_flags:0x400000 flags:0x00080001",
        "Call Trace:", " <TASK>", " rwsem_down_write_slowpath+0x1e0/0x6c0", " </TASK>",
        "INFO: task touch:7196 <writer> blocked on an rw-semaphore likely owned by task dd:7178 <writer>",
        "task:dd              state:D stack:0     pid:7178  tgid:7178  ppid:6908   task_flags:0x400000 flags:0x00080001"])
    e = events_frame([classified("INFO: task touch:7196 blocked for more than 20 seconds.", detail=detail, line=1)])
    f = run("hung-task", ctx(events=e))
    assert len(f) == 1
    assert f[0].title == "1 hung task report(s): touch blocked on an rw-semaphore held by dd (pid 7178)"
    assert f[0].refs["holder"] == "dd" and f[0].refs["holder_pid"] == 7178 and f[0].refs["pids"] == [7196]
    assert "itself in D state" in f[0].explanation
    # a report without the holder's line names no holder
    plain = run("hung-task", ctx(events=events_frame([classified(
        "INFO: task touch:7196 blocked for more than 20 seconds.", detail=detail.rsplit("\nINFO:", 1)[0], line=1)])))
    assert "held by" not in plain[0].title and "holder" not in plain[0].refs


def test_port_exhaustion_from_any_program_names_it_and_the_destination():
    lines = [classified("2026-11-24 14:12:40 ERROR calling http://127.0.0.1:9002/stock: <urlopen error [Errno 99] "
                        "Cannot assign requested address>", process="orders-api", ts=f"2026-11-24 14:12:{40 + i}",
                        line=1 + i) for i in range(4)]
    lines.append(classified('Get "http://10.0.0.5:8080/health": dial tcp 10.0.0.5:8080: connect: cannot assign '
                            'requested address', process="probe", ts="2026-11-24 14:12:50", line=9))
    lines.append(classified("OSError: [Errno 99] Cannot assign requested address (while trying to bind 10.0.0.9:8000)",
                            process="orders-api", ts="2026-11-24 14:12:51", line=10))
    f = run("port-exhaustion", ctx(events=events_frame(lines)))
    assert len(f) == 1 and f[0].metrics["lines"] == 5
    assert f[0].title.endswith("over 10 s to 127.0.0.1:9002 (4), 10.0.0.5:8080 (1) by orders-api (4), probe (1)")


def test_a_host_restart_is_a_change_only_within_what_the_case_recorded():
    boot = ("Linux version 5.15.0-91-generic (buildd@lcy02-amd64-045) (gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0) "
            "#101-Ubuntu SMP")
    before = classified("CROND[2101]: (root) CMD (/usr/lib64/sa/sa1 1 1)", ts="2024-03-01 09:50:00", line=1)
    f = run("host-restart", ctx(events=events_frame([before, classified(boot, ts="2024-03-01 10:00:01", line=2)])))
    assert len(f) == 1 and f[0].title == "host restarted at 10:00:01: kernel 5.15.0-91-generic booted"
    assert f[0].category == "config-change" and f[0].severity == "low"
    # the boot a dmesg begins with is where its log begins
    assert run("host-restart", ctx(events=events_frame([classified(boot, ts="2024-03-01 10:00:01", line=1)]))) == []


def test_a_package_change_is_reported_when_errors_begin_after_it_or_are_around_it():
    upgrade = dict(kind="package", process="dpkg", source="package-log", file="dpkg.log")
    changes = [ev(message=m, ts="2024-03-01 10:00:00", line=i + 1, **upgrade)
               for i, m in enumerate(["upgrade nginx:amd64 1.22.1-9 1.22.1-9+deb12u1",
                                      "upgrade libnginx-mod-http-lua:amd64 1:0.10.23-1 1:0.10.26-1"])]
    crashes = [classified("worker process 2211 exited on signal 11 (core dumped)", ts="2024-03-01 10:01:10", line=1,
                          file="error.log", source="nginx-error")]
    f = run("package-change", ctx(events=events_frame(changes + crashes)))
    assert len(f) == 1 and f[0].severity == "high" and f[0].metrics["new_errors"] == 1
    assert f[0].title == ("2 package change(s) at 10:00:00 (2 x upgrade): nginx 1.22.1-9 -> 1.22.1-9+deb12u1, "
                          "libnginx-mod-http-lua 1:0.10.23-1 -> 1:0.10.26-1; then, absent before: 1 x "
                          "worker-signal-exit from 10:01:10")
    assert f[0].category == "config-change" and f[0].refs["packages"] == ["libnginx-mod-http-lua", "nginx"]
    # an upgrade in a quiet stretch is no story's
    assert run("package-change", ctx(events=events_frame(changes))) == []


def test_port_exhaustion_reads_time_wait_from_sar():
    lines = ['connect() to 10.30.1.22:8080 failed (99: Cannot assign requested address) while connecting to upstream'] * 4
    e = events_frame([classified(m, ts=f"2024-05-21 09:33:{i:02d}", line=i + 1, host="gw") for i, m in enumerate(lines)])
    tw = metrics("gw", "net-sock", "2024-05-21 09:30:01", 60, {"tcp-tw": [2400, 11000, 20000, 28100, 28190, 27000]})
    f = run("port-exhaustion", ctx(tw, events=e))
    assert f[0].metrics["peak_tcp_tw"] == 28190
    assert f[0].metrics["tcp_tw_over_local_ports"] == pytest.approx(28190 / 28232)
    assert "09:34:01" in f[0].explanation and "the local ports (the kernel default, 28,232, assumed)" in f[0].explanation
    # a wider port range (config) changes the verdict on how full it was
    g = run("port-exhaustion", ctx(tw, events=e), burst_gap_seconds=600.0, local_ports=64511, context_seconds=300.0)
    assert g[0].metrics["tcp_tw_over_local_ports"] == pytest.approx(28190 / 64511)


@pytest.fixture
def user_signature(tmp_path):
    from sarsleuth.config import load_config
    cfg = tmp_path / "sig.toml"
    cfg.write_text('[[signature]]\nid = "pgbackrest-fail"\npatterns = [\'ERROR: \\[\\d+\\]: .*archive-push\']\n'
                   'severity = "critical"\ncategory = "other"\nexplanation = "WAL archiving failed: the disk fills."\n'
                   'recommendations = ["Check the repository host and free space."]\n')
    return load_config(cfg).signatures


def test_custom_signature_reports_bursts_with_the_users_words(user_signature):
    msgs = ["ERROR: [082]: archive-push command failed: WAL segment 00000001000000A2 was not archived"] * 3
    kind = signatures.classify(msgs[0], user_signature)
    assert kind == "pgbackrest-fail" and signatures.classify(msgs[0]) is None   # only with this case's config
    rows = [ev(kind, m, ts=f"2024-03-01 10:0{i}:00", line=i + 1, process="pgbackrest", pid=4410) for i, m in enumerate(msgs)]
    rows.append(ev(kind, msgs[0], ts="2024-03-01 18:00:00", line=9, process="pgbackrest", pid=5120))
    c = ctx(events=events_frame(rows))
    c.user_signatures = user_signature
    f = run("custom-signature", c)
    assert [x.metrics["lines"] for x in f] == [3, 1]            # two bursts, hours apart
    assert f[0].severity == "critical" and f[0].explanation == "WAL archiving failed: the disk fills."
    assert f[0].recommendations == ["Check the repository host and free space."]
    assert f[0].refs == {"signature": "pgbackrest-fail", "pids": [4410]}
    assert "pgbackrest" in f[0].title


def test_custom_signature_quiet_without_user_signatures():
    e = events_frame([classified("ERROR: [082]: archive-push command failed", line=1)])
    assert run("custom-signature", ctx(events=e)) == []


@pytest.mark.parametrize("body, word", [
    ('[[signature]]\nid = "x"\npatterns = ["a"]\nseverity = "urgent"\n', "severity"),
    ('[[signature]]\nid = "x"\npatterns = ["(unclosed"]\n', "not a valid regular expression"),
    ('[[signature]]\nid = "x"\npatterns = []\n', "patterns"),
    ('[[signature]]\nid = "x"\npatterns = ["a"]\ncategory = "disk"\n', "category"),
    ('[[signature]]\nid = "page-allocation-failure"\npatterns = ["a"]\n', "built-in name"),
    ('[[signature]]\nid = "x"\npatterns = ["(a)\\\\1"]\n', "no time bound"),
    ('[[signature]]\nid = "x"\npatterns = ["(?<=x)a"]\n', "no time bound"),
    ('[[signature]]\nid = "x"\npatterns = ["a"]\n[[signature]]\nid = "x"\npatterns = ["b"]\n', "twice"),
])
def test_bad_user_signatures_are_refused(tmp_path, body, word):
    from sarsleuth.config import load_config
    from sarsleuth.errors import UsageError
    cfg = tmp_path / "bad.toml"
    cfg.write_text(body)
    with pytest.raises(UsageError, match=word):
        load_config(cfg)


def test_user_pattern_runs_in_linear_time():
    """``(a+)+$`` backtracks exponentially in a backtracking engine; user
    patterns run on RE2, so a long line of a's is matched at once."""
    import time
    from sarsleuth.knowledge.signatures import Signature
    user = (Signature("evil", "any", ("(a+)+$",)),)
    t0 = time.perf_counter()
    assert signatures.classify("a" * 40 + "!", user) is None
    assert signatures.classify("a" * 5000, user) == "evil"
    assert time.perf_counter() - t0 < 1.0


def test_oom_kill_and_signal_9_exit_are_one_kill():
    rows = [ev("oom-kill", "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,"
               "task_memcg=/system.slice/nginx.service,task=nginx,pid=2817,uid=33", ts="2024-02-13 14:21:07", line=40),
            ev("oom-kill", "Out of memory: Killed process 2817 (nginx) total-vm:9127840kB, anon-rss:7841220kB, "
               "file-rss:1024kB, shmem-rss:2048kB, UID:33 pgtables:15460kB oom_score_adj:0", ts="2024-02-13 14:21:07", line=41),
            ev("worker-signal-exit", "worker process 2817 exited on signal 9", ts="2024-02-13 14:21:07", line=3,
               file="error.log", source="nginx-error", process="nginx"),
            # a signal 9 exit of another pid, not in the kernel log: not matched
            ev("worker-signal-exit", "worker process 2900 exited on signal 9", ts="2024-02-13 14:21:30", line=4,
               file="error.log", source="nginx-error", process="nginx")]
    c = ctx(events=events_frame(rows))
    oom = run("oom-kill", c)[0]
    assert oom.refs["nginx_exit_pids"] == [2817] and oom.metrics["matched_nginx_exits"] == 1
    assert "error.log:3" in oom.explanation and any(e.path == "error.log" and e.line == 3 for e in oom.evidence)
    ex = run("worker-signal-exit", c)[0]
    assert ex.refs["oom_killed_pids"] == [2817] and ex.metrics["matched_oom_kills"] == 1
    assert "messages:41" in ex.explanation and "(1 by the OOM killer)" in ex.title
    # the same exit hours later is a different event: no match by PID alone
    late = [dict(r) for r in rows[:3]]
    late[2]["timestamp"] = pd.Timestamp("2024-02-13 19:00:00")
    assert run("worker-signal-exit", ctx(events=events_frame(late)))[0].metrics["matched_oom_kills"] == 0


def test_segfault_marked_as_same_crash_as_nginx_exit():
    rows = [ev("segfault", "nginx[31337]: segfault at 1c ip 00007f3c9a61b3f0 sp 00007ffd9c8e2a40 error 4 in "
               "ngx_http_lua_module.so[7f3c9a600000+4d000]", ts="2024-03-12 03:14:07", line=3, file="dmesg"),
            ev("worker-signal-exit", "worker process 31337 exited on signal 11 (core dumped)", ts="2024-03-12 03:14:07",
               line=8, file="error.log", source="nginx-error")]
    f = run("segfault", ctx(events=events_frame(rows)))[0]
    assert f.refs["nginx_exit_pids"] == [31337] and f.metrics["matched_nginx_exits"] == 1
    assert "same PID (error.log:8)" in f.explanation
    assert run("segfault", ctx(events=events_frame(rows[:1])))[0].metrics["matched_nginx_exits"] == 0


def test_segfault_title_names_the_faulting_object_only_when_it_is_not_the_program():
    own = [ev("segfault", f"sniproxy[{pid}]: segfault at 0 ip 0000000000412c3e sp 00007ffc1d7d95f0 error 4 in "
              "sniproxy[400000+2f000]", ts=f"2024-03-12 03:14:0{i}", line=i + 1, file="messages")
           for i, pid in enumerate((811, 812))]
    f = run("segfault", ctx(events=events_frame(own)))[0]
    assert f.title == "2 segfault(s) in sniproxy"
    lib = [ev("segfault", "nginx[31337]: segfault at 1c ip 00007f3c9a61b3f0 sp 00007ffd9c8e2a40 error 4 in "
              "libc-2.17.so[7f3c9a600000+1c3000]", ts="2024-03-12 03:14:07", line=3, file="messages")]
    assert run("segfault", ctx(events=events_frame(lib)))[0].title == "1 segfault(s) in nginx (faulting in libc-2.17.so)"


def test_segfault_title_lists_the_programs_that_crashed_most_and_counts_the_rest():
    """A fuzzed service crashing under 1,200 names: the title stays a line
    (the four that crashed most, then how many more), the refs keep every PID."""
    rows = [ev("segfault", f"{name}[{1000 + i}]: segfault at 0 ip 0000000000412c3e sp 00007ffc1d7d95f0 error 4 in "
               f"{name}[400000+2f000]", ts=f"2024-03-12 03:{i // 60 % 60:02d}:{i % 60:02d}", line=i + 1,
               file="messages")
            for i, name in enumerate(["php-fpm"] * 5 + ["worker"] * 3 + ["ab", "zz"] * 2 + [f"job{k}" for k in range(1200)])]
    f = run("segfault", ctx(events=events_frame(rows)))[0]
    assert f.title == "1,212 segfault(s) in php-fpm, worker, ab, zz and 1,200 more"
    assert len(f.refs["pids"]) == 1212 and f.metrics["segfaults"] == 1212


#: detectors whose positive case is one of the dedicated tests above
DEDICATED_POSITIVES = {"swap-climb", "memory-pressure", "iowait-spike", "cpu-saturation", "load-spike", "nic-saturation",
                       "tcp-timewait", "sar-gap", "page-allocation-failure", "nic-rx-alloc-failure", "oom-kill",
                       "segfault", "tcp-tw-bucket-overflow", "socket-memory", "syn-flood", "conntrack-full",
                       "worker-signal-exit", "worker-pid-gaps", "loadtest-errors", "loadtest-tail-latency",
                       "loadtest-link-saturation", "custom-signature", "disk-saturation", "tcp-retransmits",
                       "cpu-stall", "memory-stall", "io-stall", "filesystem-full", "host-restart",
                       "package-change", "connection-surge", "loadtest-stall", "process-stopped", "traffic-ceiling",
                       "udp-drops", "loadtest-behind-rate", "loadtest-serialized"}
#: detectors whose near misses are dedicated tests elsewhere
#: (tests/test_coarse_judgement.py: a stopped daemon against an editor
#: suspended in its terminal, a sleeping daemon, a stopped collector)
DEDICATED_NEGATIVES = {"process-stopped"}


def test_every_detector_has_a_positive_and_a_negative_test():
    ids = set(registry())
    positives = DEDICATED_POSITIVES | set(LOG_POSITIVES)
    negatives = (set(METRIC_DETECTORS) | set(LOG_DETECTORS) | set(LOG_NEAR_MISSES) | {"custom-signature"}
                 | DEDICATED_NEGATIVES)
    assert ids - positives == set(), "detectors without a positive test"
    assert ids - negatives == set(), "detectors without a negative test"


def test_every_detector_has_a_knowledge_base_entry():
    for det_id, cls in registry().items():
        kb = kb_entry(det_id)
        assert kb.get("explanation", "").strip(), det_id
        assert kb.get("limit", "").strip(), det_id
        assert kb.get("check") and all(isinstance(c, str) and c for c in kb["check"]), det_id
        recs = kb.get("recommendation")
        assert recs and all(isinstance(r["text"], str) and len(r["text"]) > 20 and r["key"] and 1 <= r["effect"] <= 5
                            for r in recs), det_id
        assert not any(re.search(r"\breport \d{3}\b", r["text"]) for r in recs), det_id
        assert cls.summary and cls.category in categories(), det_id


def test_the_schema_and_the_contract_list_every_category():
    import json
    from importlib import resources
    schema = json.loads(resources.files("sarsleuth.schema").joinpath("analysis.schema.json").read_text("utf-8"))
    enum = schema["properties"]["incidents"]["items"]["properties"]["category"]["enum"]
    assert enum == categories()
    contract = (Path(__file__).resolve().parents[1] / "CONTRACT.md").read_text("utf-8")
    assert [c for c in categories() if f"`{c}`" not in contract] == []


def test_a_detector_is_listed_under_the_category_of_the_chains_it_roots():
    """`sarsleuth detectors` lists a detector under its category, and an
    incident it causes is told under its chain's category: the same one.
    A detector may root a second chain of another category only as a
    first sign of that chain's cause (a hung task before the I/O wait of a
    coarse sar sample): alone, it is still told under its own category."""
    import pandas as pd
    from sarsleuth.analysis.correlate import cause_of
    from sarsleuth.model import Finding
    found = registry()
    roots = {root for chain in causal_chains() for root in chain["roots"]}
    alone = {}
    for root in roots:
        # metrics that meet the detector's own conditions for being a cause
        need = {c.split()[0]: float(c.split()[2]) + (1 if c.split()[1] == ">" else 0)
                for c in kb_entry(root).get("cause_if", [])}
        f = Finding(detector=root, title=root, severity="high", start=pd.Timestamp("2026-11-24 10:00"),
                    end=pd.Timestamp("2026-11-24 10:01"), host="h", category=found[root].category, metrics=need)
        alone[root] = cause_of([f])[1]["category"]
    assert {root: cat for root, cat in alone.items() if cat != found[root].category} == {}
    second = {(root, chain["category"]) for chain in causal_chains() for root in chain["roots"]
              if found[root].category != chain["category"]}
    assert second == {("hung-task", "io-saturation")}


def test_iowait_blips_in_one_second_data_are_not_spikes():
    rng = np.random.default_rng(3)
    noise = rng.uniform(0, 2, 600)
    noise[[100, 250, 251, 400]] = [35.0, 42.0, 38.0, 55.0]     # single-second blips
    assert run("iowait-spike", ctx(metrics("h", "cpu", "2024-01-01", 1, {"%iowait": noise}, device="all"))) == []
    noise[480:540] = 48.0                                       # a minute of real waiting
    f = run("iowait-spike", ctx(metrics("h", "cpu", "2024-01-01", 1, {"%iowait": noise}, device="all")))
    assert len(f) == 1 and f[0].metrics["peak_iowait_pct"] == 48.0


def test_tcp_timewait_held_flat_at_a_cap_the_case_does_not_record():
    """Kernels since 4.x log no 'time wait bucket table overflow': with no
    bundle to give tcp_max_tw_buckets, a TIME_WAIT count that climbs and
    then holds at one value (closing connections skip TIME_WAIT once the
    table is full) is a table at its cap, said as inferred."""
    tw = [12] * 30 + [1800, 3650] + [4000] * 3 + [3999] + [4000] * 50 + [2100, 300, 14]
    ab = [0.0] * 30 + [9000.0] * 10 + [0.0] * 49        # ab's connections kept opening at the cap
    tcp = metrics("h", "net-tcp", "2026-11-24 18:10:00", 1, {"active/s": ab, "passive/s": ab})
    f = run("tcp-timewait", ctx(metrics("h", "net-sock", "2026-11-24 18:10:00", 1, {"tcp-tw": tw}), tcp))
    assert len(f) == 1 and f[0].severity == "high"
    assert f[0].title == ("TIME_WAIT sockets held at 4,000 for 53 s (54 samples): a table full at its cap "
                          "(tcp_max_tw_buckets is likely 4,000; not recorded: inferred from the flat top)")
    assert f[0].metrics["limit_inferred"] == 1 and f[0].start == pd.Timestamp("2026-11-24 18:10:30")
    # the same count after a burst that ended: its sockets hold still until
    # they expire together, no cap in sight (nor a climb past min_tw)
    quiet = metrics("h", "net-tcp", "2026-11-24 18:10:00", 1, {"active/s": [0.0] * 89, "passive/s": [0.0] * 89})
    assert run("tcp-timewait", ctx(metrics("h", "net-sock", "2026-11-24 18:10:00", 1, {"tcp-tw": tw}), quiet)) == []


def test_tcp_timewait_held_at_a_cap_over_rows_of_a_minute():
    """A load test without keep-alive against the host itself, sampled
    every minute: TIME_WAIT at 6,000 in three rows while 20,000
    connections a second opened and closed, two minutes at one value, past
    the 60 s a TIME_WAIT lasts: a table at its cap.  Near miss: two rows a
    minute apart hold the sockets of one burst until they expire."""
    start = "2026-11-27 18:52:00"
    tw = [0.0] * 3 + [6000.0] * 3 + [0.0, 9.0]
    opened = [0.0] * 3 + [20510.0, 20615.0, 10858.0] + [0.0, 0.13]
    tcp = metrics("h", "net-tcp", start, 60, {"active/s": opened, "passive/s": opened})
    (f,) = run("tcp-timewait", ctx(metrics("h", "net-sock", start, 60, {"tcp-tw": tw}), tcp))
    assert f.severity == "high" and f.metrics["inferred_tcp_max_tw_buckets"] == 6000
    assert f.title == ("TIME_WAIT sockets held at 6,000 for 2 min (3 samples): a table full at its cap "
                       "(tcp_max_tw_buckets is likely 6,000; not recorded: inferred from the flat top)")
    burst = [0.0] * 3 + [6000.0] * 2 + [0.0] * 3
    (g,) = run("tcp-timewait", ctx(metrics("h", "net-sock", start, 60, {"tcp-tw": burst}), tcp))
    assert g.severity == "low" and "held at" not in g.title


def test_tcp_timewait_of_a_steady_flow_is_no_cap():
    """A steady flow of short connections keeps TIME_WAIT around a level
    (rate x 60 s) that wanders by a few sockets a second: no cap, and
    under min_tw no climb either."""
    import numpy as np
    rng = np.random.default_rng(7)
    tw = [40] * 30 + list(rng.integers(3700, 4100, 60)) + [40] * 10
    assert run("tcp-timewait", ctx(metrics("h", "net-sock", "2026-11-24 18:10:00", 1, {"tcp-tw": tw}))) == []


def test_the_mce_record_of_a_thermal_interrupt_is_no_hardware_error():
    """therm_throt.c's interrupt logs an MCE record on some CPUs: "Machine
    check events logged" right after a throttling (or its end) line is the
    thermal event (mcelog decodes it so), not a memory error."""
    lines = ["CPU3: Core temperature above threshold, cpu clock throttled (total events = 57536)",
             "mce: [Hardware Error]: Machine check events logged",
             "CPU3: Core temperature/speed normal",
             "mce: [Hardware Error]: Machine check events logged"]
    e = events_frame([classified(m, ts="2024-03-01 10:00:01", line=i + 1) for i, m in enumerate(lines)])
    assert run("machine-check", ctx(events=e)) == []
    (hot,) = run("cpu-thermal-throttle", ctx(events=e))
    assert hot.title == "1 x CPU thermal throttling (clock slowed) (Core: 1)"
    # near miss: the same record an hour away from any throttling is one
    alone = events_frame([classified(lines[0], ts="2024-03-01 10:00:01", line=1),
                          classified(lines[1], ts="2024-03-01 11:00:01", line=2)])
    (mce,) = run("machine-check", ctx(events=alone))
    assert mce.metrics["mce_records"] == 1


def test_smartd_s_report_every_half_hour_is_one_finding_a_day():
    """smartd checks every 30 minutes and says it again while the count
    stays: a day of it is one burst (its declared gap), not 48."""
    line = "Device: /dev/sda [SAT], 1 Currently unreadable (pending) sectors"
    e = events_frame([classified(line, ts=f"2024-12-07 {h:02d}:{m:02d}:42", line=i + 1)
                      for i, (h, m) in enumerate((h, m) for h in range(19, 23) for m in (2, 32))])
    (f,) = run("smart-bad-sectors", ctx(events=e))
    assert f.title == "8 x SMART report(s) of unreadable sectors over 12600 s (/dev/sda: 8)"



def test_a_failed_nvme_read_told_by_the_driver_and_the_block_layer_is_one():
    """drivers/nvme/host/core.c (6.x) names the command and its LBA, then
    block/blk-mq.c the same request's sector: one failed read."""
    lines = ["nvme0n1: I/O Cmd(0x2) @ LBA 32545872, 8 blocks, I/O Error (sct 0x3 / sc 0x71) ",
             "I/O error, dev nvme0n1, sector 32545872 op 0x0:(READ) flags 0x80700 phys_seg 1 prio class 2"]
    e = events_frame([classified(m, ts="2024-01-29 17:09:49", line=i + 1) for i, m in enumerate(lines)])
    (f,) = run("disk-error", ctx(events=e))
    assert f.metrics["io_errors"] == 1 and "1 failed" in f.title
    # near miss: the block layer's error on another sector is another failed request
    other = events_frame([classified(lines[0], ts="2024-01-29 17:09:49", line=1),
                          classified(lines[1].replace("32545872", "32546000"), ts="2024-01-29 17:09:49", line=2)])
    (g,) = run("disk-error", ctx(events=other))
    assert g.metrics["io_errors"] == 2


def test_an_ata_port_alone_is_no_device_to_run_smartctl_on():
    """libata's lines name a port (ata3.00), not a block device: the advice
    says how to find the disk behind it, never `smartctl -a /dev/ata3.00`;
    the near miss naming sdc keeps `/dev/sdc`."""
    from sarsleuth.analysis.recommend import recommend
    lines = ["ata3.00: exception Emask 0x0 SAct 0x80000 SErr 0x0 action 0x0",
             "ata3.00: failed command: READ FPDMA QUEUED",
             "ata3.00: error: { UNC }"]
    e = events_frame([classified(m, ts=f"2024-03-01 10:00:{i:02d}", line=i + 1) for i, m in enumerate(lines)])
    (f,) = run("disk-error", ctx(events=e))
    f.role = "cause"
    advice = recommend([f], f, None, 5)
    assert "device" not in f.refs and not any("/dev/ata" in r for r in advice)
    assert any("`ls -l /sys/block | grep /ataN/`" in r for r in advice)
    named = lines + ["sd 2:0:0:0: [sdc] tag#19 Sense Key : Medium Error [current]",
                     "I/O error, dev sdc, sector 339573216 op 0x0:(READ) flags 0x80700 phys_seg 1 prio class 0"]
    e = events_frame([classified(m, ts=f"2024-03-01 10:00:{i:02d}", line=i + 1) for i, m in enumerate(named)])
    (g,) = run("disk-error", ctx(events=e))
    g.role = "cause"
    assert g.refs["device"] == "sdc" and any("`smartctl -a /dev/sdc`" in r for r in recommend([g], g, None, 5))
