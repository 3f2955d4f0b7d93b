"""The incident lab's score: sarsleuth on every recorded case of
``lab/cases`` against the truth recorded with it.

The floor in ``lab/scores.toml`` is what the lab scored when it was last
raised; a change that scores lower on any total fails here.  The scorer's
own rules are tested on hand-made inputs below.
"""
from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from lab.scoring import score as lab_score

REPO = Path(__file__).resolve().parent.parent
CASES = REPO / "lab" / "cases"


@pytest.fixture(scope="module")
def lab_scores():
    folders = sorted(p.parent for p in CASES.glob("*/truth.toml"))
    if not folders:
        pytest.skip("no recorded cases in lab/cases")
    return lab_score.score_all(folders)


@pytest.fixture(scope="module")
def floor():
    with open(REPO / "lab" / "scores.toml", "rb") as fh:
        return tomllib.load(fh)["floor"]


def test_lab_holds_what_the_lab_promises(lab_scores, floor):
    """As many recorded cases, kinds, cases with a confounder and quiet days
    as the floor says (the lab's promise: 40, 14, 8 and 3), each with the
    truth fields every scorer reads."""
    truths = [tomllib.loads((CASES / s.case / "truth.toml").read_text()) for s in lab_scores]
    assert len(truths) >= floor["cases"]
    assert len({t["kind"] for t in truths}) >= floor["kinds"]
    assert sum(1 for t in truths if t.get("confounders")) >= floor["confounded"]
    assert sum(1 for t in truths if t.get("quiet")) >= floor["quiet_days"]
    for s, t in zip(lab_scores, truths):
        assert {"kind", "category", "cause", "responsible", "quiet", "args", "recorded"} <= set(t), s.case
        if not t["quiet"]:
            assert len(t["start_between"]) == 2 and t["category"] and t["cause"], s.case


def test_lab_score_does_not_fall(lab_scores, floor):
    t = lab_score.totals(lab_scores)
    report = lab_score.table(lab_scores)
    for key in ("category", "start", "cause", "named"):
        assert t[key] >= floor[key], f"{key} {t[key]} below the floor {floor[key]}\n{report}"
    assert t["contradicted"] <= floor["contradicted"], report
    assert t["quiet_incidents"] <= floor["quiet_incidents"], report


def test_every_case_is_analysed_without_error(lab_scores):
    failed = [(s.case, s.exit_code, s.error) for s in lab_scores if s.exit_code or s.error]
    assert not failed


def test_every_case_s_story_agrees_with_its_data(lab_scores):
    """``analyze --audit`` on every recorded case: each figure its story
    states, measured again from the case's data, is the figure it states."""
    assert sum(s.audit_checked for s in lab_scores) >= 500
    differences = [f"{s.case}: {d}" for s in lab_scores for d in s.audit_differences]
    assert differences == []


# ----------------------------------------------------------- the scorer itself
def test_start_error_is_distance_to_the_window():
    window = ["2026-11-24T13:02:51+00:00", "2026-11-24T13:03:07+00:00"]
    assert lab_score.start_error("2026-11-24T13:03:00+00:00", window) == 0.0
    assert lab_score.start_error("2026-11-24T13:02:41+00:00", window) == 10.0
    assert lab_score.start_error("2026-11-24T14:03:10+01:00", window) == 3.0   # same instant, other zone
    assert lab_score.start_error(None, window) is None


def test_named_ignores_quoted_evidence():
    inc = {"title": "CPU saturation on app-lab-01: CPUs saturated: 100.0 % busy",
           "story": {"cause": 'CPUs saturated, evidence "stress-ng-matrix [run]" (ps.txt:12)'},
           "findings": [], "recommendations": []}
    assert not lab_score._names(lab_score.story_text(inc), ["stress-ng"])
    inc["story"]["headline"] = "stress-ng (2 processes) held 99 % of the CPUs"
    assert lab_score._names(lab_score.story_text(inc), ["stress-ng"])


def test_contradiction_rules():
    files = "2026/11/24 13:03:01 [alert] 100#100: worker process 101 exited on signal 11 (core dumped)\n"
    recs = ["Enable core dumps (nginx: `worker_rlimit_core 500m;`)", "Check what changed before the first crash."]
    assert [c.split(":")[0] for c in lab_score.contradicted(recs, files)] == ["core-dumps-already-written"]
    assert not lab_score.contradicted(recs, files.replace(" (core dumped)", ""))
    emfile = "2026/11/24 13:03:01 [crit] 100#100: accept4() failed (24: Too many open files)\n"
    assert lab_score.contradicted(["Raise fs.file-max"], emfile)
    assert not lab_score.contradicted(["Raise worker_rlimit_nofile"], emfile)
    assert lab_score.contradicted(["Raise worker_connections"], "stress-ng: info\n")   # no nginx anywhere
