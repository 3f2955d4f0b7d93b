"""An excursion the records stopped in the middle of, and resumed in: its
baseline is the one from before it, on both sides of the gap or restart,
and the incident is told by its worst episode (sar -u text of a VM whose
disk stalled for hours; sysstat 12's layout)."""
from __future__ import annotations

import pytest

import sarsleuth

HEAD = ("Linux 5.4.0-1063-azure (vm-data-01) \t03/14/2022 \t_x86_64_\t(2 CPU)\n\n"
        "12:00:01 AM     CPU     %user     %nice   %system   %iowait    %steal     %idle\n")


def _u(time: str, iowait: float) -> str:
    idle = max(round(100 - 1.20 - 0.30 - iowait, 2), 0.0)
    return f"{time}     all {1.20:9.2f} {0:9.2f} {0.30:9.2f} {iowait:9.2f} {0:9.2f} {idle:9.2f}\n"


#: quiet, then I/O wait climbing; the records stop 34 minutes, resume in it,
#: stop again across a restart, resume in it and stay there
STALLED = [("12:05:02 AM", 0.84), ("12:15:01 AM", 2.84), ("12:25:01 AM", 0.71), ("12:35:02 AM", 0.79),
           ("12:45:01 AM", 3.72), ("12:55:01 AM", 37.36), ("01:05:01 AM", 45.86),
           ("01:39:27 AM", 83.42), ("02:05:58 AM", 99.69), ("02:15:02 AM", 96.65),
           ("03:39:16 AM", 34.00), ("03:48:38 AM", 99.65), ("03:55:02 AM", 95.16), ("04:05:03 AM", 91.97),
           ("04:15:04 AM", 82.97), ("04:25:03 AM", 84.56), ("04:35:04 AM", 85.17), ("04:45:04 AM", 86.47)]


@pytest.fixture(scope="module")
def stalled(tmp_path_factory):
    path = tmp_path_factory.mktemp("stall") / "sar14"
    rows = [_u(t, v) for t, v in STALLED]
    rows.insert(10, "03:39:15 AM       LINUX RESTART\t(2 CPU)\n")
    path.write_text(HEAD + "".join(rows))
    return sarsleuth.load(path)


def test_every_episode_is_measured_against_the_level_before_the_excursion(stalled):
    spikes = [f for f in stalled.findings if f.detector == "iowait-spike"]
    assert [f.metrics["baseline_iowait_pct"] for f in spikes] == [0.84] * len(spikes)
    assert [f.metrics["peak_iowait_pct"] for f in spikes] == [45.86, 99.69, 99.65]
    # the last one runs to the end of the records, not until its own level became the usual
    assert str(spikes[-1].end) == "2022-03-14 04:45:04"


def test_the_incident_is_told_by_its_worst_episode(stalled):
    top = stalled.incidents[0]
    assert top.title == "Disk I/O saturation on vm-data-01: I/O wait spiked to 99.69 % (baseline 0.84 %)"
    assert "I/O wait spiked to 99.69 % (baseline 0.84 %)" in top.story["headline"]
    assert top.severity == "critical" and str(top.start) == "2022-03-14 00:55:01"


def test_an_excursion_over_before_the_gap_starts_no_carry(tmp_path):
    # near miss: the wait was back to its level when the records stopped;
    # the stretch after the gap is judged on its own (a new usual level)
    rows = [(t, v) for t, v in STALLED[:7]] + [("01:15:01 AM", 1.10)]
    rows += [("02:39:27 AM", 20.40), ("02:49:27 AM", 21.10), ("02:59:27 AM", 20.80), ("03:09:27 AM", 21.00)]
    path = tmp_path / "sar14"
    path.write_text(HEAD + "".join(_u(t, v) for t, v in rows))
    spikes = [f for f in sarsleuth.load(path).findings if f.detector == "iowait-spike"]
    assert [f.metrics["peak_iowait_pct"] for f in spikes] == [45.86]
