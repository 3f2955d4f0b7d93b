"""The incident lab's score: sarsleuth on every recorded case of
``lab/cases`` against the truth recorded with it, at every sampling
interval (1 s as recorded, 10 s and 60 s derived, 10 minutes for the long
cases).

The floor in ``lab/scores.toml`` is what the lab scored at each interval
when it was last set; a change that scores lower on any total fails here.  The scorer's
own rules are tested on hand-made inputs below.

Scoring every case takes minutes of CPU: those tests are marked ``lab``
and run on their own (``python -m pytest -m lab``, as CI does after the
suite); the rest run with the suite.
"""
from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest

from lab.scoring import report as lab_report
from lab.scoring import score as lab_score

REPO = Path(__file__).resolve().parent.parent
CASES = REPO / "lab" / "cases"


@pytest.fixture(scope="module")
def folders():
    found = sorted(p.parent for p in CASES.glob("*/truth.toml"))
    if not found:
        pytest.skip("no recorded cases in lab/cases")
    return found


@pytest.fixture(scope="module")
def floor():
    return lab_report.read_floor()


@pytest.fixture(scope="module")
def scores_at(folders):
    """The lab's scores at an interval: every case at every interval scored
    in one pass the first time (the coarser intervals' cases derived into
    the lab's cache; a score kept there while the case's files and
    sarsleuth's code are unchanged is taken again)."""
    done: dict[int, list] = {}

    def at(interval: int) -> list:
        if not done:
            wanted = sorted(set(_floor_intervals()) | {i for f in folders for i in lab_score.intervals_of(f)})
            if max(wanted) > 1 and not shutil.which("sar"):
                pytest.skip("sar (sysstat) is not installed: a sosreport's sar output cannot be printed "
                            "at a coarser interval")
            done.update(lab_score.score_intervals(folders, wanted))
        return done[interval]
    return at


def _floor_intervals() -> list[int]:
    return sorted(int(k[3:-1]) for k in lab_report.read_floor() if k.startswith("at_"))


def test_lab_holds_what_the_lab_promises(folders, floor):
    """As many recorded cases, kinds, cases with a confounder, quiet days,
    long cases, cases with a collector and cases of several hosts as the
    floor says, each with the truth fields every scorer reads."""
    counts = lab_report.lab_counts(folders)
    for key in ("cases", "kinds", "confounded", "quiet_days", "long", "collector", "two_host"):
        assert counts[key] >= floor[key], (key, counts[key], floor[key])
    for folder in folders:
        t = tomllib.loads((folder / "truth.toml").read_text())
        assert {"kind", "category", "cause", "responsible", "quiet", "args", "recorded"} <= set(t), folder.name
        if not t["quiet"]:
            assert len(t["start_between"]) == 2 and t["category"] and t["cause"], folder.name
        assert isinstance(t.get("collector", []), list) and isinstance(t.get("hosts", []), list), folder.name


def test_every_interval_has_a_floor(folders, floor):
    """Every interval a case is scored at is held by a floor."""
    scored = {i for f in folders for i in lab_score.intervals_of(f)}
    assert scored <= set(_floor_intervals()), sorted(scored - set(_floor_intervals()))


@pytest.mark.lab
@pytest.mark.parametrize("interval", _floor_intervals())
def test_lab_score_does_not_fall(scores_at, floor, interval):
    scores = scores_at(interval)
    at = floor[f"at_{interval}s"]
    t = lab_score.totals(scores)
    report = lab_report.table(scores)
    assert t["cases"] >= at["cases"], report
    for key in ("category", "start", "cause", "named", "host"):
        assert (t[key] or 0.0) >= at.get(key, 0.0), f"{key} {t[key]} below the floor {at.get(key)} at {interval} s\n{report}"
    assert t["contradicted"] <= at["contradicted"], report
    assert t["quiet_incidents"] <= at["quiet_incidents"], report


@pytest.mark.lab
@pytest.mark.parametrize("interval", _floor_intervals())
def test_every_case_is_analysed_without_error(scores_at, interval):
    failed = [(s.case, s.exit_code, s.error) for s in scores_at(interval) if s.exit_code or s.error]
    assert not failed


@pytest.mark.lab
@pytest.mark.parametrize("interval", _floor_intervals())
def test_every_case_s_story_agrees_with_its_data(scores_at, interval):
    """``analyze --audit`` on every recorded case, at every interval: each
    figure its story states, measured again from the case's data, is the
    figure it states."""
    scores = scores_at(interval)
    # the audit ran: a figure at least for each case whose story is right
    # (one that finds nothing at an interval states nothing to check)
    right = [s for s in scores if s.category_ok]
    assert right and all(s.audit_checked >= 1 for s in right), [s.case for s in right if not s.audit_checked]
    differences = [f"{s.case} at {interval} s: {d}" for s in scores for d in s.audit_differences]
    assert differences == []


def test_start_error_is_distance_to_the_window():
    window = ["2026-11-24T13:02:51+00:00", "2026-11-24T13:03:07+00:00"]
    assert lab_score.start_error("2026-11-24T13:03:00+00:00", window) == 0.0
    assert lab_score.start_error("2026-11-24T13:02:41+00:00", window) == 10.0
    assert lab_score.start_error("2026-11-24T14:03:10+01:00", window) == 3.0   # same instant, other zone
    assert lab_score.start_error(None, window) is None


def test_start_window_widens_by_one_interval():
    """At a coarser interval an onset is seen up to one interval late (an sa
    row is stamped at the end of what it averages) or early (the row before
    already held part of it): the window grows by the interval each side."""
    window = ["2026-11-24T13:02:51+00:00", "2026-11-24T13:03:07+00:00"]
    assert lab_score.start_error("2026-11-24T13:02:41+00:00", window, widen_s=10) == 0.0
    assert lab_score.start_error("2026-11-24T13:04:07+00:00", window, widen_s=60) == 0.0
    assert lab_score.start_error("2026-11-24T13:01:40+00:00", window, widen_s=60) == 11.0
    assert lab_score.start_error("2026-11-24T13:04:08+00:00", window, widen_s=60) == 1.0


def test_verdict_names_what_rank_1_got_wrong():
    right = lab_score.CaseScore(case="c", kind="cpu-saturation", quiet=False, rank1="cpu-saturation",
                                category_ok=True, cause="cpu-saturation", cause_ok=True, start_error_s=0.0,
                                named=True)
    assert lab_report.verdict(right) == "ok"
    wrong = lab_score.CaseScore(case="c", kind="cpu-saturation", quiet=False, rank1="memory-exhaustion",
                                category_ok=False, cause="swap-climb", cause_ok=False, start_error_s=42.0,
                                named=False)
    assert lab_report.verdict(wrong) == "rank 1 memory-exhaustion; start 42 s off; cause swap-climb; not named"
    missed = lab_score.CaseScore(case="c", kind="cpu-saturation", quiet=False, rank1="none",
                                 category_ok=False, cause_ok=False, named=False)
    assert lab_report.verdict(missed) == "rank 1 none; no start"
    elsewhere = lab_score.CaseScore(case="c", kind="crash-loop", quiet=False, rank1="upstream-failure",
                                    category_ok=True, cause="upstream-down", cause_ok=True, start_error_s=0.0,
                                    named=True, host_ok=False)
    assert lab_report.verdict(elsewhere) == "wrong host"
    assert lab_score.totals([right, elsewhere])["host"] == 0.0
    noisy = lab_score.CaseScore(case="q", kind="quiet", quiet=True, rank1="network-failure", incidents=2)
    assert lab_report.verdict(noisy) == "2 incidents (rank 1 network-failure)"
    assert lab_report.interval_name(600) == "10 min" and lab_report.interval_name(60) == "60 s"


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


def test_scores_are_kept_while_the_case_and_the_code_are_unchanged(tmp_path, monkeypatch):
    """A case's score is taken from the cache while its files, the
    interval and sarsleuth's code are those it was scored with; a changed
    file scores it again; an error is never kept."""
    case = tmp_path / "cases" / "c1"
    case.mkdir(parents=True)
    (case / "truth.toml").write_text('kind = "cpu-saturation"\nquiet = false\n')
    (case / "host.log").write_text("one\n")
    calls = []

    def fake(folder, interval=1, cache=None):
        calls.append((folder.name, interval))
        return lab_score.CaseScore(case=folder.name, kind="cpu-saturation", quiet=False, interval=interval,
                                   rank1="cpu-saturation", category_ok=True, error="" if interval < 60 else "x")
    monkeypatch.setattr(lab_score, "score_case", fake)
    cache = tmp_path / "cache"
    first = lab_score.score_intervals([case], [1, 10, 60], cache, workers=1)
    assert calls == [("c1", 1), ("c1", 10), ("c1", 60)]
    again = lab_score.score_intervals([case], [1, 10, 60], cache, workers=1)
    assert calls[3:] == [("c1", 60)]                      # the error is scored again
    assert again[10][0] == first[10][0] and again[1][0].rank1 == "cpu-saturation"
    (case / "host.log").write_text("two\n")
    lab_score.score_intervals([case], [1], cache, workers=1)
    assert calls[4:] == [("c1", 1)]
