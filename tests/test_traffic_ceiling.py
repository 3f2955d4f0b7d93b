"""traffic-ceiling: an interface's traffic held flat far above its usual
level while the CPUs and disks had room, where sar knows no link speed.

The numbers are those of a download through a site's own nginx over
loopback shaped to 40 Mbit/s (tbf), as sar -n DEV printed them: about
63-79 kB/s of pages before, then 4,818-4,976 kB/s for 70 s.  Near misses:
the same plateau with the CPUs saturated (a local load generator, whose
CPU is its ceiling), a bulk copy bound by its disk, a flow that rises and
swings (no wall), a plateau too short for a shape, and an interface full
by its known speed (nic-saturation's)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sarsleuth.detectors import Context, registry
from sarsleuth.inputs.parsers.base import events_frame

START = "2026-11-27 05:50:57"


def _frame(section, step, columns, device=""):
    n = len(next(iter(columns.values())))
    ts = pd.date_range(START, periods=n, freq=f"{step}s", tz="UTC")
    return pd.concat([pd.DataFrame({"timestamp": ts, "host": "files-web-04", "section": section, "device": device,
                                    "metric": m, "value": np.asarray(v, dtype=float)}) for m, v in columns.items()],
                     ignore_index=True)


def _recording(step=1, level=4_880.0, swing=0.02, cpu_busy=12.0, disk_util=3.0, seconds=(80, 70, 30), seed=3):
    """A recording at ``step`` s: pages before, a plateau of ``seconds[1]``
    s at ``level`` kB/s (each sample within ``swing`` of it), pages after."""
    rng = np.random.default_rng(seed)
    before, held, after = (s // step for s in seconds)
    pages = lambda n: rng.choice([47.61, 63.48, 71.41, 79.35], n)
    lo = np.concatenate([pages(before), level * (1 + rng.uniform(-swing, swing, held)), pages(after)])
    n = len(lo)
    busy = np.concatenate([rng.uniform(4, 9, before), np.full(held, cpu_busy), rng.uniform(4, 9, after)])
    util = np.concatenate([rng.uniform(0, 2, before), np.full(held, disk_util), rng.uniform(0, 2, after)])
    return [_frame("net-dev", step, {"rxkB/s": lo, "txkB/s": lo, "%ifutil": np.zeros(n)}, "lo"),
            _frame("net-dev", step, {"rxkB/s": rng.uniform(0, 1, n), "txkB/s": rng.uniform(0, 1, n),
                                     "%ifutil": np.zeros(n)}, "eth0"),
            _frame("cpu", step, {"%idle": 100 - busy, "%iowait": np.zeros(n)}, "all"),
            _frame("disk", step, {"%util": util}, "vda")]


def _run(frames, reports=(), **params):
    c = Context(metrics=pd.concat(frames, ignore_index=True), events=events_frame([]), reports=list(reports),
                sources=[])
    return registry()["traffic-ceiling"](params or None).run(c)


def test_a_shaped_download_is_a_ceiling_with_its_level_and_the_level_before():
    frames = _recording()
    [f] = _run(frames)
    lo = frames[0][(frames[0]["metric"] == "rxkB/s")].set_index("timestamp")["value"]
    plateau = lo[lo > 1000]
    assert f.category == "network-saturation" and f.severity == "medium"
    assert f.metrics["level_kB_per_s"] == pytest.approx(float(plateau.median()))
    assert f.metrics["peak_kB_per_s"] == pytest.approx(float(plateau.max()))
    assert f.metrics["baseline_kB_per_s"] == pytest.approx(float(lo[lo.index < plateau.index[0]].median()))
    assert f.metrics["samples"] == 70 and f.start == plateau.index[0] and f.end == plateau.index[-1]
    assert f.metrics["cpu_busy_pct"] == pytest.approx(12.0) and f.metrics["busiest_disk_util_pct"] == pytest.approx(3.0)
    mbit = plateau.median() * 8 * 1024 / 1e6
    assert f.title.startswith(f"lo received traffic held at {plateau.median():,.0f} kB/s ({mbit:,.1f} Mbit/s) "
                              "for 70 s, ")
    assert round(mbit) == 40
    assert "CPUs 12.0 % busy, busiest disk 3.0 %util on average" in f.title
    assert f.refs["device"] == "lo"


def test_at_ten_seconds_the_plateau_still_has_a_shape_at_a_minute_it_has_none():
    [f] = _run(_recording(step=10))
    assert f.metrics["samples"] == 7
    assert _run(_recording(step=60, seconds=(120, 120, 60))) == []


@pytest.mark.parametrize("why,changes", [
    ("the CPUs were its ceiling (a load generator on the host)", {"cpu_busy": 96.0}),
    ("a disk was its ceiling (a copy reading as fast as the disk gives)", {"disk_util": 97.0}),
    ("it swings: no wall", {"swing": 0.35}),
    ("too short for a shape", {"seconds": (80, 4, 30)}),
    ("not far above its usual level", {"level": 400.0}),
])
def test_near_misses(why, changes):
    assert _run(_recording(**changes)) == [], why


def test_an_interface_full_by_its_known_speed_is_left_to_nic_saturation():
    frames = _recording()
    util = frames[0]["metric"] == "%ifutil"
    frames[0].loc[util, "value"] = np.where(frames[0].loc[frames[0]["metric"] == "rxkB/s", "value"].to_numpy() > 1000,
                                            99.0, 0.5)
    assert _run(frames) == []


def test_a_load_test_s_own_traffic_is_left_to_it():
    """wrk paced at a fixed rate over the same 70 s: its traffic is the
    test's doing (loadtest-link-saturation weighs it against the link)."""
    frames = _recording()
    start = pd.Timestamp(START, tz="UTC") + pd.Timedelta(seconds=80)
    run = {"tool": "wrk2", "command": "wrk2 -R 2000 -d 70s http://127.0.0.1:8080/big.bin",
           "start": start, "end": start + pd.Timedelta(seconds=70), "time_from": "report"}
    assert _run(frames, reports=[run]) == []
    # a run over another minute leaves the plateau to this detector
    other = {**run, "start": start - pd.Timedelta(minutes=10), "end": start - pd.Timedelta(minutes=9)}
    assert len(_run(frames, reports=[other])) == 1
