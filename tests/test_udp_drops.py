"""UDP datagrams dropped on receipt (sar -n UDP): a receiver that cannot
keep up, or one that is gone, against hosts that always lose a few."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sarsleuth.analysis.correlate import cause_of
from sarsleuth.analysis.recommend import recommend

from .test_detectors import ctx, metrics, run

LAB = Path(__file__).resolve().parent.parent / "lab" / "cases"


def _advice(f) -> list[str]:
    f.role = "cause"
    cause, chain = cause_of([f])
    assert cause is f and chain["name"] == "datagram loss" and chain["category"] == "network-failure"
    return recommend([f], cause, chain, 5)


def _relay(drops: list, delivered: list, step: int = 1, start: str = "2026-11-27 20:36:00"):
    return metrics("shop-web-11", "net-udp", start, step,
                   {"idgm/s": delivered, "odgm/s": [0.0] * len(drops), "noport/s": [0.0] * len(drops),
                    "idgmerr/s": drops})


def test_a_relay_that_cannot_keep_up_drops_most_of_what_arrives():
    """300 datagrams a second for a minute, then 6,300 a second for 40 s
    that the relay reads 1,650 of: the rest dropped from its full buffer."""
    drops = [0.0] * 60 + [4650.0] * 40 + [0.0] * 30
    delivered = [300.0] * 60 + [1650.0] * 40 + [300.0] * 30
    (f,) = run("udp-drops", ctx(_relay(drops, delivered)))
    assert f.metrics["dropped"] == 4650 * 40 and f.metrics["delivered"] == 1650 * 40
    assert f.metrics["dropped_per_s"] == 4650.0 and f.metrics["baseline_dropped_per_s"] == 0.0
    assert f.metrics["dropped_per_delivered"] == pytest.approx(4650 / 1650)
    assert f.severity == "high" and f.refs["lost"] == "errors"
    assert f.title == ("UDP datagrams dropped on receipt (receive buffer full or bad checksum): 4,650.0/s "
                       "(usual 0.00/s), 186,000 lost while 66,000 were delivered")
    assert str(f.start) == "2026-11-27 20:37:00"
    assert _advice(f)[0].startswith("Let the receiver keep up: a larger receive buffer")


def test_a_host_that_always_loses_a_few_datagrams_is_not_losing_its_metrics():
    """Near misses: a resolver's two or three late answers a second all day
    long; 6 bad datagrams a second among 10,000 delivered (0.06 %); a
    burst of drops shorter than the least duration."""
    rng = np.random.default_rng(3)
    steady = rng.uniform(2, 4, 300).round(2).tolist()
    assert run("udp-drops", ctx(_relay(steady, [400.0] * 300))) == []
    small = [0.0] * 60 + [6.0] * 60 + [0.0] * 60
    assert run("udp-drops", ctx(_relay(small, [10000.0] * 180))) == []
    blip = [0.0] * 60 + [900.0] * 8 + [0.0] * 60
    assert run("udp-drops", ctx(_relay(blip, [300.0] * 128))) == []


def test_datagrams_to_a_receiver_that_is_gone():
    """The relay exits: its senders keep sending to a port nothing listens
    on; nothing is delivered any more."""
    n = 120
    noport = [0.5] * 60 + [300.0] * 60
    delivered = [300.0] * 60 + [0.0] * 60
    frame = metrics("shop-web-11", "net-udp", "2026-11-27 20:36:00", 1,
                    {"idgm/s": delivered, "odgm/s": [0.0] * n, "noport/s": noport, "idgmerr/s": [0.0] * n})
    (f,) = run("udp-drops", ctx(frame))
    assert f.refs["lost"] == "noport" and f.metrics["dropped"] == 300 * 60 and f.metrics["delivered"] == 0
    assert f.title.startswith("UDP datagrams to a port nothing listened on: 300.0/s (usual 0.50/s), 18,000 lost")
    assert f.severity == "high"
    assert _advice(f)[0].startswith("Start the receiver again")


def test_a_minute_s_row_of_drops_after_calm_rows():
    """At a minute's rows the drops of 40 s average over the row that
    holds them: one row, a minute of loss."""
    drops = [0.0] * 5 + [3100.0] + [0.0] * 3
    delivered = [300.0] * 5 + [1400.0] + [300.0] * 3
    (f,) = run("udp-drops", ctx(_relay(drops, delivered, step=60)))
    assert f.metrics["dropped"] == 3100 * 60 and f.severity == "high"


def test_the_recorded_metrics_relay():
    """The lab's recording: a deploy turns on per-request timing metrics
    (3,500 datagrams a second more) and the host's statsd relay, which
    reads 50 and forwards them before it reads again, drops what its
    buffer cannot hold for three minutes. One incident, the drops its
    cause, every figure what sar's rows hold."""
    import sarsleuth

    case = sarsleuth.load(LAB / "udp-metrics-relay-drops" / "shop-web-11.tar.xz")
    (inc,) = case.incidents
    assert (inc.category, inc.cause) == ("network-failure", "udp-drops")
    (f,) = [x for x in inc.findings if x.detector == "udp-drops"]
    rows = case.sar("net-udp").loc[f.start:f.end]
    assert len(rows) == 180 and str(f.start) == "2026-11-27 20:45:26+00:00"
    assert f.metrics["dropped_per_s"] == pytest.approx(rows["idgmerr/s"].mean())
    assert f.metrics["peak_dropped_per_s"] == rows["idgmerr/s"].max() == 1388.0
    assert f.metrics["dropped"] == pytest.approx(rows["idgmerr/s"].sum(), rel=1e-3)
    assert f.metrics["baseline_dropped_per_s"] == 0.0 and f.severity == "medium"
    assert inc.recommendations[0].startswith("Let the receiver keep up")
    assert inc.story["changed"][0].startswith("idgmerr/s of net-udp: new, 1,326.48 /s in the window")
    assert inc.story["changed"][0].endswith("[named by udp-drops]")


def test_the_recorded_log_collector_that_exits():
    """The lab's recording: the services send syslog over UDP to the
    host's collector, which exits for three minutes; every datagram goes
    to a port nothing listens on, and the advice is to start it again."""
    import sarsleuth

    case = sarsleuth.load(LAB / "udp-log-collector-gone" / "api-lab-07.tar.xz")
    (inc,) = case.incidents
    assert (inc.category, inc.cause) == ("network-failure", "udp-drops")
    (f,) = inc.findings
    rows = case.sar("net-udp").loc[f.start:f.end]
    assert f.refs["lost"] == "noport" and f.severity == "high"
    assert f.metrics["dropped_per_s"] == pytest.approx(rows["noport/s"].mean())
    assert f.metrics["delivered"] == pytest.approx(rows["idgm/s"].sum(), rel=1e-3)
    assert f.metrics["delivered"] < f.metrics["dropped"] / 100
    assert inc.title.startswith("Network failure on api-lab-07: UDP datagrams to a port nothing listened on: ")
    assert inc.recommendations[0].startswith("Start the receiver again")


def test_an_episode_in_progress_is_not_its_own_usual_level():
    """Rows of a minute in a short record: by the fourth row of drops the
    quarter hour before it holds three rows of them, whose median would
    make the last row (553/s, the drops' last 25 s) look usual. The
    episode goes on while the drops stay above its first row's threshold,
    and counts every datagram lost."""
    drops = [0.0] * 2 + [767.3, 1329.3, 1329.2, 553.6] + [0.0] * 4
    delivered = [300.0] * 2 + [1566.2, 2471.7, 2471.3, 1210.1] + [300.0] * 4
    (f,) = run("udp-drops", ctx(_relay(drops, delivered, step=60)))
    assert (str(f.start), str(f.end)) == ("2026-11-27 20:38:00", "2026-11-27 20:41:00")
    assert f.metrics["dropped"] == pytest.approx(60 * (767.3 + 1329.3 + 1329.2 + 553.6))
