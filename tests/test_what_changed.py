"""What changed: every series of a host ranked against its own baseline
(sarsleuth.analysis.departures), on the field report's sa file, a real
one-second recording of the lab, and series shaped as sar prints them
where a restart, a gap or the day before must decide the baseline."""
from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import sarsleuth
from sarsleuth.analysis.departures import rank
from sarsleuth.analysis.what_changed import ranking
from sarsleuth.metric_store.runs import Run
from sarsleuth.metric_store.store import MetricStore

ROOT = Path(__file__).resolve().parent.parent
LAB = ROOT / "lab" / "cases"
ZONE = "Asia/Shanghai"


def _t(text: str, tz=ZONE) -> pd.Timestamp:
    return pd.Timestamp(text, tz=tz)


@pytest.fixture(scope="session")
def oom(sample_case):
    """The proxy OOM (field report 000): sa06 at 10 minutes, then every
    minute from 14:50, with the kernel's and nginx's lines."""
    return sample_case("nginx-proxy-oom")


@pytest.fixture(scope="session")
def oom_changes(oom):
    return ranking(oom.store, oom.events, oom.sources, (_t("2014-05-06 15:02:03"), _t("2014-05-06 15:07:01")))


def _row(changes, section, metric, device=""):
    t = changes.table
    found = t[(t["section"] == section) & (t["metric"] == metric) & (t["device"] == device)]
    assert len(found) == 1, (section, metric, device, len(found))
    return found.iloc[0]


def test_the_proxy_oom_window_against_the_morning(oom, oom_changes):
    """Swap used goes from none to the window's average of sar -S's rows
    (what sar's Average: line prints for 15:02:03-15:07:01), in kB."""
    swap = oom.sar("swap")
    rows = swap.loc[_t("2014-05-06 15:02:03"):_t("2014-05-06 15:07:01"), "kbswpused"]
    assert len(rows) == 6
    used = _row(oom_changes, "swap", "kbswpused")
    assert used["unit"] == "kB" and used["direction"] == "up" and used["departs"]
    assert used["baseline"] == 0.0
    assert used["window"] == pytest.approx(rows.mean()) == pytest.approx(6_338_402.0)
    assert (used["window_samples"], used["baseline_part"]) == (6, "before")
    # the six hours before: every ten minutes from 09:02, then every minute from 14:50
    assert used["baseline_from"] == _t("2014-05-06 09:10:01") and used["baseline_to"] == _t("2014-05-06 15:01:01")
    assert used["peak"] == 8_200_812.0 and used["peak_time"] == _t("2014-05-06 15:06:05")
    pct = _row(oom_changes, "swap", "%swpused")
    assert pct["unit"] == "%" and pct["window"] == pytest.approx(75.5597, abs=1e-3)
    assert pct["entry"] == used["entry"]            # one change of swap, not two
    free = _row(oom_changes, "memory", "kbmemfree")
    assert free["direction"] == "down" and free["departs"] and free["window"] < free["baseline"] / 100
    drops = _row(oom_changes, "net-edev", "rxdrop/s", "em2")
    assert (drops["unit"], drops["baseline"]) == ("/s", 0.0) and drops["window"] == pytest.approx(253.216, abs=1e-3)


def test_the_ranking_leads_with_the_aggregate_and_names_each_change_once(oom_changes):
    top = oom_changes.top(12)
    assert list(top["entry"]) == sorted(top["entry"])
    cpu = top[top["section"] == "cpu"]
    assert list(cpu["device"]) == ["all"] and list(cpu["metric"]) == ["%iowait"]
    assert cpu.iloc[0]["baseline"] == pytest.approx(0.04) and cpu.iloc[0]["window"] == pytest.approx(41.6346, abs=1e-3)
    # the 24 CPUs' %iowait are that entry's members
    members = oom_changes.members(int(cpu.iloc[0]["entry"]))
    assert (members["metric"] == "%iowait").sum() == 25
    sections = list(top["section"])
    assert {"swap", "memory", "disk", "net-edev", "log"} <= set(sections)
    assert len(set(top["entry"])) == len(top)


def test_log_kinds_are_rates_and_a_first_line_is_new(oom_changes):
    timeouts = _row(oom_changes, "log", "upstream-timeout", "nginx")
    # 7 lines over the window's 4 min 58 s, none in the six hours before
    assert timeouts["unit"] == "/min" and timeouts["new"] and timeouts["departs"]
    assert timeouts["window"] == pytest.approx(7 / (298 / 60))
    assert timeouts["baseline"] == 0.0


def test_a_calm_window_departs_nowhere(oom):
    """Near miss: the calm morning against the hours before it."""
    calm = ranking(oom.store, oom.events, oom.sources, (_t("2014-05-06 10:00"), _t("2014-05-06 11:00")))
    assert len(calm.table) > 100 and not calm.table["departs"].any()
    # the minutes just before the load test began, against the calm day: nothing yet
    before = ranking(oom.store, oom.events, oom.sources, (_t("2014-05-06 14:00"), _t("2014-05-06 14:40")))
    assert not before.table["departs"].any()


def test_a_baseline_the_user_gives(oom):
    given = ranking(oom.store, oom.events, oom.sources, (_t("2014-05-06 15:02:03"), _t("2014-05-06 15:07:01")),
                    baseline=(_t("2014-05-06 15:00:00"), _t("2014-05-06 15:01:30")))
    used = _row(given, "swap", "kbswpused")
    assert used["baseline_part"] == "given" and used["baseline_samples"] == 2 and used["departs"]
    # after the incident, the swap stayed used: against the incident itself, no change of swap
    after = ranking(oom.store, oom.events, oom.sources, (_t("2014-05-06 15:08:00"), _t("2014-05-06 15:10:01")),
                    baseline=(_t("2014-05-06 15:04:00"), _t("2014-05-06 15:07:01")))
    assert not _row(after, "swap", "kbswpused")["departs"]


# -------------------------------------------------------------- a real recording


@functools.lru_cache(maxsize=None)
def _lab_case(name: str):
    import sarsleuth
    from lab.intervals.derive import case_inputs
    folder = LAB / name
    if not (folder / "truth.toml").exists():
        pytest.skip(f"lab case {name} not recorded")
    return sarsleuth.load(*case_inputs(folder))


def test_a_one_second_recording_names_the_busy_cpu():
    """cpu-stress-ng-all (sadc -S XALL at 1 s): stress-ng on both CPUs
    from 15:25:03; the half minute before is the baseline."""
    case = _lab_case("cpu-stress-ng-all")
    window = (pd.Timestamp("2026-11-24T15:25:05+00:00"), pd.Timestamp("2026-11-24T15:25:59+00:00"))
    changes = ranking(case.store, case.events, case.sources, window)
    first = changes.top(1).iloc[0]
    assert (first["section"], first["device"], first["metric"], first["direction"]) == ("cpu", "all", "%idle", "down")
    cpu = case.sar("cpu", device="all")
    assert first["window"] == pytest.approx(cpu.loc[window[0]:window[1], "%idle"].mean())
    assert first["window"] < 1.0 < 95.0 < first["baseline"]
    assert first["window_samples"] == 55 and first["baseline_samples"] == 30
    queue = _row(changes, "queue", "runq-sz")
    assert queue["departs"] and queue["direction"] == "up"
    # memory did not move: a near miss among the departures
    assert not _row(changes, "memory", "kbmemused")["departs"]


# ------------------------------------------------- restarts, gaps, the day before

STEP = 60 * 10**9
RNG = np.random.default_rng(42)


def _store(stamps: np.ndarray, series: dict) -> MetricStore:
    """``series`` {(section, device, metric): values} of host web1, on UTC."""
    return MetricStore({("web1", s, d, m): Run(stamps=stamps, values=np.asarray(v, dtype=float), tz="UTC")
                        for (s, d, m), v in series.items()})


def _minutes(start: str, end: str) -> np.ndarray:
    return pd.date_range(start, end, freq="60s", tz="UTC").as_unit("ns").asi8


def _noisy(level, count, sd=0.2):
    return level + RNG.normal(0.0, sd, count)


def _restart(at: str) -> pd.DataFrame:
    return pd.DataFrame({"timestamp": [pd.Timestamp(at, tz="UTC")], "host": ["web1"], "source": ["sa"],
                         "kind": ["sar-restart"], "process": [None], "count": [1]})


WINDOW = (pd.Timestamp("2024-03-04 06:00", tz="UTC"), pd.Timestamp("2024-03-04 06:30", tz="UTC"))


def test_never_across_a_restart():
    """The run queue was longer after the host came back at 05:00: the
    window at 06:00 is compared with the hour since, not with the hours
    before the restart (near miss: the same series without the restart
    departs)."""
    stamps = _minutes("2024-03-04 00:00", "2024-03-04 07:00")
    after = stamps >= pd.Timestamp("2024-03-04 05:00", tz="UTC").value
    values = np.where(after, _noisy(6.0, len(stamps)), _noisy(1.0, len(stamps)))
    store = _store(stamps, {("queue", "", "runq-sz"): values})
    with_restart = rank(store, _restart("2024-03-04 04:59:30"), WINDOW).table.iloc[0]
    assert not with_restart["departs"]
    assert with_restart["baseline_from"] == pd.Timestamp("2024-03-04 05:00", tz="UTC")
    assert with_restart["baseline"] == pytest.approx(6.0, abs=0.2)
    without = rank(store, None, WINDOW).table.iloc[0]
    assert without["departs"] and without["direction"] == "up" and without["baseline"] == pytest.approx(1.0, abs=0.2)


def test_never_across_a_gap():
    """No record from 04:00 to 05:00 (sadc stopped): the baseline starts
    after the gap, without the record averaged across it; two missing
    records are no gap."""
    stamps = _minutes("2024-03-04 00:00", "2024-03-04 07:00")
    late = stamps >= pd.Timestamp("2024-03-04 05:00", tz="UTC").value
    values = np.where(late, _noisy(6.0, len(stamps)), _noisy(1.0, len(stamps)))
    hole = (stamps > pd.Timestamp("2024-03-04 04:00", tz="UTC").value) & ~late
    row = rank(_store(stamps[~hole], {("queue", "", "runq-sz"): values[~hole]}), None, WINDOW).table.iloc[0]
    assert not row["departs"]
    assert row["baseline_from"] == pd.Timestamp("2024-03-04 05:01", tz="UTC")
    short = (stamps > pd.Timestamp("2024-03-04 04:57", tz="UTC").value) & ~late      # two records missing
    near = rank(_store(stamps[~short], {("queue", "", "runq-sz"): values[~short]}), None, WINDOW).table.iloc[0]
    # back to the six hours' lookback: the row stamped 00:00 averages the minute before it
    assert near["departs"] and near["baseline_from"] == pd.Timestamp("2024-03-04 00:01", tz="UTC")


def test_a_window_at_the_start_of_the_record_is_compared_with_what_came_after():
    """A record that begins with the incident (a host sampling every
    minute, its sa file started at 06:00 while a batch held the CPUs until
    06:05): the rows after it are the baseline, told as such.  Near misses:
    with half an hour before the window that is the baseline, and a restart
    right after the window leaves nothing to compare with."""
    stamps = _minutes("2024-03-04 06:00", "2024-03-04 06:40")
    clock = pd.DatetimeIndex(stamps, tz="UTC")
    busy = clock < pd.Timestamp("2024-03-04 06:05", tz="UTC")
    usr = np.where(busy, _noisy(70.0, len(stamps), 1.0), _noisy(5.0, len(stamps), 0.5))
    window = (pd.Timestamp("2024-03-04 06:00", tz="UTC"), pd.Timestamp("2024-03-04 06:04", tz="UTC"))
    table = rank(_store(stamps, {("cpu", "all", "%usr"): usr}), None, window).table
    row = table.iloc[0]
    assert row["baseline_part"] == "after" and row["departs"] and row["direction"] == "up"
    assert row["baseline"] == pytest.approx(float(np.median(usr[~busy])), abs=0.5)
    assert row["baseline_from"] == pd.Timestamp("2024-03-04 06:05", tz="UTC")
    assert row["window"] == pytest.approx(float(usr[busy].mean()))
    earlier = _minutes("2024-03-04 05:30", "2024-03-04 06:40")
    clock = pd.DatetimeIndex(earlier, tz="UTC")
    calm_before = np.where((clock >= window[0]) & (clock < pd.Timestamp("2024-03-04 06:05", tz="UTC")),
                           _noisy(70.0, len(earlier), 1.0), _noisy(5.0, len(earlier), 0.5))
    before = rank(_store(earlier, {("cpu", "all", "%usr"): calm_before}), None, window).table.iloc[0]
    assert before["baseline_part"] == "before" and before["departs"]
    cut = rank(_store(stamps, {("cpu", "all", "%usr"): usr}), _restart("2024-03-04 06:04:30"), window)
    assert not len(cut.table) or not cut.table["departs"].any()


def test_an_error_counter_that_never_counted_is_new():
    """Rows of a minute around 10 % loss on a busy keep-alive run: the
    packets rose 25-fold with the run, and retransmissions went from none
    in any row before to 1.58 and 1.48 a second.  Never counted, counting
    now in both rows: new, the largest change there is, ranked before the
    traffic.  Near misses: a counter that counted a little before (0.1/s)
    is measured as a change; one that counts in one row of four (a
    retransmission now and then) and a share of a disk's time below its
    floor of 1 % are not new."""
    stamps = _minutes("2024-03-04 05:00", "2024-03-04 06:10")
    clock = pd.DatetimeIndex(stamps, tz="UTC")
    run = (clock >= pd.Timestamp("2024-03-04 06:01", tz="UTC")) & (clock <= pd.Timestamp("2024-03-04 06:02", tz="UTC"))
    window = (pd.Timestamp("2024-03-04 06:01", tz="UTC"), pd.Timestamp("2024-03-04 06:02", tz="UTC"))
    packets = np.where(run, 778.0, _noisy(31.0, len(stamps), 2.0))
    lost = np.where(run, [1.58 if t.minute == 1 else 1.48 for t in clock], 0.0)
    busy = np.where(run, 0.013, 0.0)
    table = rank(_store(stamps, {("net-dev", "lo", "rxpck/s"): packets, ("net-etcp", "", "retrans/s"): lost,
                                 ("disk", "dev254-0", "%util"): busy}), None, window).table
    assert list(table["metric"][:2]) == ["retrans/s", "rxpck/s"]
    row = table.iloc[0]
    assert row["new"] and row["departs"] and row["baseline"] == 0.0 and row["window"] == pytest.approx(1.53)
    assert not _row(rank(_store(stamps, {("disk", "dev254-0", "%util"): busy}), None, window), "disk", "%util",
                    "dev254-0")["new"]
    before = np.where(run, lost, 0.1)
    assert not _row(rank(_store(stamps, {("net-etcp", "", "retrans/s"): before}), None, window),
                    "net-etcp", "retrans/s")["new"]
    wide = (pd.Timestamp("2024-03-04 06:01", tz="UTC"), pd.Timestamp("2024-03-04 06:04", tz="UTC"))
    once = np.where(clock == pd.Timestamp("2024-03-04 06:03", tz="UTC"), 1.6, 0.0)
    assert not _row(rank(_store(stamps, {("net-etcp", "", "retrans/s"): once}), None, wide),
                    "net-etcp", "retrans/s")["new"]


def _daily_batch(days: int):
    stamps = _minutes("2024-03-04 00:00", f"2024-03-0{4 + days - 1} 13:00")
    clock = pd.DatetimeIndex(stamps, tz="UTC")
    batch = (clock.hour == 12) & (clock.minute < 30)
    usr = np.where(batch, _noisy(60.0, len(stamps), 2.0), _noisy(5.0, len(stamps), 0.5))
    return _store(stamps, {("cpu", "all", "%usr"): usr, ("cpu", "all", "%idle"): 100.0 - usr})


def test_the_same_hours_of_the_day_before():
    """A batch runs every day at 12:00: on the second day it is what the
    day before held at those hours, no change; with one day only
    (near miss) it departs from the morning."""
    window = (pd.Timestamp("2024-03-05 12:00", tz="UTC"), pd.Timestamp("2024-03-05 12:29", tz="UTC"))
    two = rank(_daily_batch(2), None, window).table
    usr = two[two["metric"] == "%usr"].iloc[0]
    assert usr["baseline_part"] == "day before" and not usr["departs"]
    assert usr["baseline"] == pytest.approx(60.0, abs=2.0) and usr["unit"] == "%"
    one = rank(_daily_batch(1), None, (window[0] - pd.Timedelta(days=1), window[1] - pd.Timedelta(days=1))).table
    usr = one[one["metric"] == "%usr"].iloc[0]
    assert usr["baseline_part"] == "before" and usr["departs"] and usr["direction"] == "up"
    assert usr["baseline"] == pytest.approx(5.0, abs=0.3) and usr["window"] == pytest.approx(60.0, abs=1.5)


def _lines(times, kind="upstream-timeout", program="nginx") -> pd.DataFrame:
    return pd.DataFrame({"timestamp": pd.DatetimeIndex(times), "host": "web1", "source": "nginx-error",
                         "kind": kind, "process": program, "count": 1})


def test_a_message_kind_as_a_rate():
    """A line a minute all morning is no change at a line a minute; thirty
    a minute is, in lines a minute."""
    stamps = _minutes("2024-03-04 00:00", "2024-03-04 07:00")
    store = _store(stamps, {("queue", "", "runq-sz"): _noisy(1.0, len(stamps))})
    steady = pd.date_range("2024-03-04 00:00:30", "2024-03-04 06:59:30", freq="60s", tz="UTC")
    row = rank(store, _lines(steady), WINDOW).table
    row = row[row["section"] == "log"].iloc[0]
    assert (row["device"], row["metric"], row["unit"]) == ("nginx", "upstream-timeout", "/min")
    assert not row["departs"] and row["window"] == pytest.approx(1.0) and row["baseline"] == pytest.approx(1.0)
    burst = steady.append(pd.date_range("2024-03-04 06:10", periods=290, freq="2s", tz="UTC"))
    row = rank(store, _lines(burst), WINDOW).table
    row = row[row["section"] == "log"].iloc[0]
    assert row["departs"] and row["direction"] == "up" and row["window"] == pytest.approx(320 / 30)
    assert row["entry"] == 1 and row["lead"]


def test_a_message_kind_is_told_in_lines_and_a_rate_only_over_a_minute():
    """One line in a window of seconds is "1 line", not "60.00 a minute";
    320 lines over half an hour are said with their rate."""
    from sarsleuth.analysis.what_changed import entry_of

    stamps = _minutes("2024-03-04 00:00", "2024-03-04 07:00")
    store = _store(stamps, {("queue", "", "runq-sz"): _noisy(1.0, len(stamps))})
    short = (pd.Timestamp("2024-03-04 06:10:00", tz="UTC"), pd.Timestamp("2024-03-04 06:10:01", tz="UTC"))
    one = rank(store, _lines(pd.DatetimeIndex([pd.Timestamp("2024-03-04 06:10:00.5", tz="UTC")])), short)
    lead = one.table[one.table["section"] == "log"].iloc[0]
    assert lead["new"] and lead["window"] == pytest.approx(60.0)
    assert entry_of(one, lead, findings=False)["text"] == ("upstream-timeout lines of nginx: new, 1 line in the window "
                                                           "(none in the before baseline)")
    steady = pd.date_range("2024-03-04 00:00:30", "2024-03-04 06:59:30", freq="60s", tz="UTC")
    burst = rank(store, _lines(steady.append(pd.date_range("2024-03-04 06:10", periods=290, freq="2s", tz="UTC"))),
                 WINDOW)
    lead = burst.table[burst.table["section"] == "log"].iloc[0]
    assert entry_of(burst, lead, findings=False)["text"] == ("upstream-timeout lines of nginx up from 1.00 a minute "
                                                             "before to 320 lines (10.67 a minute) in the window")


# ------------------------------------------------------------------ in the story


def test_each_incident_tells_what_else_changed(oom):
    import io
    import json

    from sarsleuth.render.formats import markdown, text
    from sarsleuth.render.formats.html import build_html

    (inc,) = oom.incidents
    doc = oom.to_json()["incidents"][0]
    changes = doc["changes"]
    assert 1 <= len(changes) <= 5 and [c["rank"] for c in changes] == sorted(c["rank"] for c in changes)
    drops = changes[0]
    assert (drops["series"], drops["unit"], drops["direction"], drops["baseline"]) == (
        "rxdrop/s of net-edev em2", "/s", "up", 0.0)
    # the window's average over the incident's rows, as sar -n EDEV's Average: line prints it
    drops_em2 = oom.sar("net-edev", device="em2").loc[inc.start:inc.end, "rxdrop/s"]
    assert drops["window"] == pytest.approx(drops_em2.mean(), abs=1e-6)
    # the NIC finding "em2 dropping received packets" reads them; em2's
    # traffic (sar -n DEV) is told in the same line as its drops (-n EDEV)
    assert drops["named_by"] == ["nic-saturation", "tcp-timewait"] and drops["with"] == ["txpck/s of net-dev em2"]
    assert drops["window_samples"] == len(drops_em2) >= 6
    assert drops["peak"] == pytest.approx(361.322581) and drops["peak_time"] == "2014-05-06T15:06:05+08:00"
    assert drops["baseline_part"] == "before"
    # at most two log message kinds among the five, those nearest the cause
    # on its chain: the report's failed allocations, not the timeouts they
    # end in; the swap shows
    kinds = [c for c in changes if c["section"] == "log"]
    assert [(c["metric"], c["device"]) for c in kinds] == [("nic-rx-alloc-failure", "kernel"),
                                                           ("page-allocation-failure", "nginx")]
    assert all(c["new"] for c in kinds) and kinds[1]["named_by"] == ["page-allocation-failure"]
    # one line for each thing that moved: free memory and pages swapped out
    # with the swap that filled, the CPUs' %iowait with the disk waited for
    swap = next(c for c in changes if c["metric"] == "kbswpused")
    assert swap["with"][:2] == ["pswpout/s of swapping", "kbmemfree of memory"]
    assert swap["named_by"] == ["memory-pressure", "swap-climb"]
    disk = next(c for c in changes if c["section"] == "disk")
    assert (disk["device"], disk["metric"], disk["with"][0]) == ("sda", "await", "%iowait of cpu all")
    assert "iowait-spike" in disk["named_by"]
    # the ranking itself keeps them apart
    whole = ranking(oom.store, oom.events, oom.sources, (inc.start, inc.end), hosts=inc.hosts).top(20)
    assert {"pswpout/s", "kbmemfree", "%iowait", "txpck/s"} <= set(whole["metric"])
    json.dumps(doc)
    # drops on em2 never counted in the six hours before: new
    assert drops["new"]
    line = (f"rxdrop/s of net-edev em2: new, {drops_em2.mean():,.2f} /s in the window (peak 361.32 /s at 15:06:05), "
            f"none in the {drops['baseline_samples']} sample(s) before, {len(drops_em2)} in the window; "
            f"with txpck/s of net-dev em2 [named by nic-saturation, tcp-timewait]")
    assert inc.story["changed"][0] == line == drops["text"]
    out = io.StringIO()
    markdown.write_case(oom, out)
    assert "### What else changed\n\n- rxdrop/s of net-edev em2: new, " in out.getvalue()
    out = io.StringIO()
    text.write_case(oom, out)
    assert "What else changed:" in out.getvalue()
    html = build_html(oom)
    charts = html.split('<div class="charts changed-charts">', 1)[1].split("</div>", 1)[0]
    # one small chart per change, a log message kind as its lines a minute, each with its baseline's level dashed
    assert charts.count("<svg") == len(changes) == charts.count('class="level"')
    assert "<title>rxdrop/s of net-edev em2</title>" in charts
    assert "<figcaption>page-allocation-failure lines of nginx (lines a minute), up</figcaption>" in charts
    assert "<title>page-allocation-failure lines of nginx</title>" in charts


def test_a_log_kind_is_charted_as_its_lines_a_minute(oom):
    """The rate drawn for a message kind counts the very lines the ranking
    counts: over the incident's frame, every upstream timeout nginx logged."""
    from sarsleuth.analysis.charted import RATE_INTERVALS, incident_frame, log_rate

    (inc,) = oom.incidents
    lo, hi = incident_frame(inc)
    rate = log_rate(oom, "Cangke_107_176", "nginx", "upstream-timeout", lo, hi)
    step = (rate.index[1] - rate.index[0]).total_seconds()
    assert len(rate) <= RATE_INTERVALS and step == -(-int((hi - lo).total_seconds()) // RATE_INTERVALS)
    ev = oom.events
    lines = ev[(ev["kind"] == "upstream-timeout") & (ev["timestamp"] > lo) & (ev["timestamp"] <= rate.index[-1])]
    assert len(lines) > 0
    assert (rate * step / 60.0).sum() == pytest.approx(pd.to_numeric(lines["count"]).fillna(1).sum())
    assert log_rate(oom, "Cangke_107_176", "nginx", "no-such-kind", lo, hi) is None


# ----------------------------------------------------------------- the backstop


def test_departures_no_detector_explains_become_an_incident():
    """cpu-stress-ng-all with no detector's finding: the stress is an
    unexplained change on the host, told with %usr of cpu all; with the
    case's own findings (near miss) the backstop says nothing."""
    from sarsleuth.analysis.correlate import correlate
    from sarsleuth.analysis.unexplained import titled, unexplained

    case = _lab_case("cpu-stress-ng-all")
    assert unexplained(case.store, case.events, case.sources, case.findings, case.clock) == []
    (found,) = unexplained(case.store, case.events, case.sources, [], case.clock)
    assert found.title.startswith("unexplained change on host app-lab-01: %usr of cpu all up")
    assert found.category == "other" and found.host == "app-lab-01"
    assert found.start == pd.Timestamp("2026-11-24T15:25:05+00:00")
    assert found.metrics["series_departed"] >= 3 and found.metrics["strain_series"] >= 1
    first = found.refs["changes"][0]
    assert (first["series"], first["direction"]) == ("%usr of cpu all", "up") and first["window"] == pytest.approx(78.97, abs=0.01)
    (inc,) = correlate([found], case.clock)
    titled([inc])
    assert (inc.category, inc.title) == ("other", found.title)


def test_a_quiet_day_stays_quiet():
    """quiet-steady-web: a web host's ordinary traffic, cron and agent."""
    case = _lab_case("quiet-steady-web")
    assert case.findings == [] and case.incidents == []
    from sarsleuth.analysis.unexplained import unexplained
    assert unexplained(case.store, case.events, case.sources, [], case.clock) == []


# ---------------------------------------------------------- the command and the API


def test_case_changes_is_a_tz_aware_frame(oom):
    frame = oom.changes("2014-05-06T15:02:03..2014-05-06T15:07:01")
    # on the case's clock: the sa file records its offset, +08:00
    assert str(frame["peak_time"].dt.tz) == "UTC+08:00" == str(frame["baseline_from"].dt.tz)
    assert frame["peak_time"].notna().all()
    lead = frame[frame["departs"] & frame["lead"]].sort_values("entry").iloc[0]
    assert (lead["section"], lead["device"], lead["metric"], lead["unit"]) == ("net-edev", "em2", "rxdrop/s", "/s")
    assert frame.attrs["window"] == (_t("2014-05-06 15:02:03"), _t("2014-05-06 15:07:01"))
    hosts = frame.attrs["hosts"]
    assert list(hosts["host"]) == ["Cangke_107_176"] and hosts["entries"].iloc[0] >= 8
    given = oom.changes(("2014-05-06 15:02:03", "2014-05-06 15:07:01"), baseline="2014-05-06T10:00..2014-05-06T14:00")
    assert set(given["baseline_part"]) == {"given"}
    assert given.attrs["baseline"] == (_t("2014-05-06 10:00"), _t("2014-05-06 14:00"))


def test_the_changes_command(samples):
    import json

    from .conftest import run_cli

    ran = run_cli("changes", str(samples / "nginx-proxy-oom"), "--window", "2014-05-06T15:02:03..2014-05-06T15:07:01",
                  "--baseline", "2014-05-06T10:00..2014-05-06T14:00", "--format", "json", "--top", "3")
    assert ran.returncode == 0, ran.stderr
    rows = json.loads(ran.stdout)
    assert [r["rank"] for r in rows] == [1, 2, 3]
    assert (rows[0]["series"], rows[0]["baseline"], rows[0]["baseline_part"]) == ("rxdrop/s of net-edev em2", 0.0, "given")
    assert rows[0]["baseline_samples"] == 25 and "named_by" not in rows[0]
    text = run_cli("changes", str(samples / "nginx-proxy-oom"), "--window", "2014-05-06T15:02:03..2014-05-06T15:07:01")
    assert text.returncode == 0 and "kbswpused of swap" in text.stdout and "6,338,402" in text.stdout
    bad = run_cli("changes", str(samples / "nginx-proxy-oom"), "--window", "2014-05-06T15:02")
    assert bad.returncode == 2 and "expected START..END" in bad.stderr and not bad.stdout


def test_a_window_of_times_without_a_date_is_read_on_the_day_the_inputs_cover(samples, oom):
    """``--window 15:02:03..15:07:01`` as an operator types it: the ranking
    of the dated window, with the note saying which day was taken (the
    baseline's times too)."""
    import json

    from .conftest import run_cli

    dated = oom.changes("2014-05-06T15:02:03..2014-05-06T15:07:01", baseline="2014-05-06T10:00..2014-05-06T14:00")
    timed = oom.changes("15:02:03..15:07:01", baseline="10:00..14:00")
    assert timed.attrs["window"] == (_t("2014-05-06 15:02:03"), _t("2014-05-06 15:07:01"))
    assert timed.attrs["baseline"] == (_t("2014-05-06 10:00"), _t("2014-05-06 14:00"))
    pd.testing.assert_frame_equal(timed, dated, check_like=False)
    assert any("times without a date are read on 2014-05-06" in n for n in timed.attrs["notes"])
    ran = run_cli("changes", str(samples / "nginx-proxy-oom"), "--window", "15:02:03..15:07:01", "--format", "json",
                  "--top", "1")
    assert ran.returncode == 0, ran.stderr
    first = json.loads(ran.stdout)[0]
    assert (first["series"], first["window"]) == ("rxdrop/s of net-edev em2", pytest.approx(253.216, abs=1e-3))


def test_which_hosts_departed_most_in_a_window(tmp_path_factory):
    """A generated fleet of six hosts (sa files of sarsleuth's writer, which
    real sar reads): two share a storage stall from 03:12 UTC; read as one
    case, the window ranks those two hosts first and the others nowhere."""
    import sys

    from sarsleuth.case import Case
    sys.path.insert(0, str(ROOT / "samples"))
    from make_fleet import write_fleet

    out = tmp_path_factory.mktemp("fleet-changes")
    made = write_fleet(out, hosts=6)
    case = Case.load(out, analyse=False)
    frame = case.changes("2026-11-20T03:14:00+00:00..2026-11-20T03:30:00+00:00")
    hosts = frame.attrs["hosts"]
    assert sorted(hosts["host"]) == sorted(made["shared"]) == ["web-0000", "web-0003"]
    assert set(hosts["largest"]) == {"%iowait of cpu all"}
    iowait = frame[(frame["metric"] == "%iowait") & (frame["device"] == "all") & frame["departs"]]
    assert sorted(iowait["host"]) == ["web-0000", "web-0003"]
    assert (iowait["baseline"] < 1.0).all() and (iowait["window"] > 40.0).all()


# ------------------------------------------------ no baseline row: the physical bound


def test_a_window_with_no_row_before_reads_shares_against_their_bound(tmp_path_factory):
    """cpu-openssl-speed as a host sampling every 60 s keeps it: one row
    (05:06:00 local, the minute the benchmark took both CPUs), none before
    it.  No series has a baseline; %idle of cpu all, 16.37 % as sar prints
    it, is read against its bound of 0 % and told as such, never as a
    change from a level nobody recorded."""
    from lab.intervals.derive import case_inputs, derived_case

    import sarsleuth

    folder = LAB / "cpu-openssl-speed"       # a recorded case, committed with the lab
    case = sarsleuth.load(*case_inputs(derived_case(folder, 60, tmp_path_factory.mktemp("derived"))))
    cpu = case.sar("cpu", device="all")
    assert len(cpu) == 1 and cpu["%idle"].iloc[0] == pytest.approx(16.37, abs=0.005)
    (inc,) = [i for i in case.incidents if i.category == "cpu-saturation"]
    idle = next(c for c in inc.changes if c["series"] == "%idle of cpu all")
    assert (idle["baseline_part"], idle["baseline"], idle["baseline_samples"]) == ("bound", None, 0)
    assert idle["direction"] == "down" and idle["window"] == pytest.approx(16.37, abs=0.005)
    assert "cpu-saturation" in idle["named_by"]
    assert idle["text"].startswith("%idle of cpu all at 16.37 %, 1 sample(s) in the window and no record before it "
                                   "to compare with: read against its bound of 0.00 %")
    # a share with room left is not told: %util of the idle disk
    frame = case.changes(("2026-11-25T05:05:00+05:30", "2026-11-25T05:06:00+05:30"))
    bound = frame[frame["baseline_part"] == "bound"]
    assert set(bound[bound["departs"]]["metric"]) <= {"%idle", "%memused", "%util", "%fsused"}
    assert not bound[(bound["section"] == "disk")]["departs"].any()
    assert any("no record in the window or none in a baseline" in n for n in frame.attrs["notes"])


def test_the_changes_command_ranks_the_hosts(tmp_path_factory):
    """``changes --hosts`` on six hosts' files (the generated fleet, read as
    one case): the two hosts whose storage stalled, most first; the four
    others said to have departed nowhere."""
    import json
    import sys

    from .conftest import run_cli
    sys.path.insert(0, str(ROOT / "samples"))
    from make_fleet import write_fleet

    out = tmp_path_factory.mktemp("fleet-hosts")
    made = write_fleet(out, hosts=6)
    window = "2026-11-20T03:14:00+00:00..2026-11-20T03:30:00+00:00"
    ran = run_cli("changes", str(out), "--window", window, "--hosts", "--format", "json")
    assert ran.returncode == 0, ran.stderr
    rows = json.loads(ran.stdout)
    assert sorted(r["host"] for r in rows) == made["shared"] and [r["rank"] for r in rows] == [1, 2]
    assert {r["largest"] for r in rows} == {"%iowait of cpu all"} and rows[0]["score"] >= rows[1]["score"]
    text = run_cli("changes", str(out), "--window", window, "--hosts")
    assert text.returncode == 0, text.stderr
    quiet = sorted(set(made["hosts"]) - set(made["shared"]))
    assert f"departed nowhere: {', '.join(quiet)}" in " ".join(text.stdout.split())      # as the terminal wrapped it


def test_a_log_kinds_chart_escapes_the_program_it_names():
    """A program name is whatever a log line's tag said: in the chart's
    caption and title it is text, never markup."""
    from types import SimpleNamespace

    from sarsleuth.render.formats.html import change_charts

    name = 'worker"><script>alert(1)</script>'
    times = pd.date_range("2026-11-20 03:10", periods=40, freq="15s", tz="UTC")
    events = pd.DataFrame({"timestamp": times, "host": "web1", "source": "/var/log/messages", "kind": "oom-kill",
                           "process": name, "count": 1})
    entry = {"host": "web1", "section": "log", "device": name, "metric": "oom-kill",
             "series": f"oom-kill lines of {name}", "unit": "/min", "direction": "up", "baseline": 0.0}
    inc = SimpleNamespace(start=times[10], end=times[-1], zone=None, findings=[], changes=[entry])
    (chart,) = change_charts(SimpleNamespace(events=events, store=None), inc)
    assert "<script>" not in chart["svg"] and "&lt;script&gt;" in chart["svg"]
    assert chart["caption"] == f"oom-kill lines of {name} (lines a minute), up"     # Jinja escapes it on the page


def test_swap_climbing_under_another_lead_is_strain():
    """mem-swap-worker-pool with no detector's finding: the swap section
    is led by its cached share going down, the swap used climbing beside
    it; pages swapped out move with the disk's writes. Strain all the
    same: an unexplained change, where before the backstop said nothing."""
    from sarsleuth.analysis.unexplained import unexplained

    case = _lab_case("mem-swap-worker-pool")
    (found,) = unexplained(case.store, case.events, case.sources, [], case.clock)
    swap = next(c for c in found.refs["changes"] if c["section"] == "swap")
    assert (swap["series"], swap["direction"]) == ("%swpcad of swap", "down")
    assert "kbswpused of swap" in swap["with"] and found.metrics["strain_series"] == 3
    disk = next(c for c in found.refs["changes"] if c["section"] == "disk")
    assert "pswpout/s of swapping" in disk["with"]


def test_a_disk_a_little_slower_under_more_work_is_not_strain(corpus):
    """Near miss, a real KVM host (sysstat's test file of PCP): a guest's
    traffic and CPU rise and a disk's await goes from 0.38 to 2.75 ms, a
    disk's ordinary service time; no waiting anyone feels, no incident."""
    from sarsleuth.analysis.unexplained import unexplained

    case = sarsleuth.load(corpus / "sysstat" / "binary" / "pcp-sysstat-11.2.0-0x2173-duplex")
    assert case.incidents == []
    ranked = case.changes("2017-01-05T07:18:34..2017-01-05T07:20:14")
    await_ = ranked[(ranked["section"] == "disk") & (ranked["metric"] == "await") & (ranked["device"] == "sde7")]
    assert bool(await_["departs"].iloc[0]) and await_["window"].iloc[0] == pytest.approx(2.75, abs=0.01)
    assert unexplained(case.store, case.events, case.sources, [], case.clock) == []


#: What each field report's author read off the machine, as the series
#: what changed ranks: the few lines each incident tells must hold them
FIELD_REPORT_SERIES = {
    # swap 100 %, IO over 60 % (sar -S, sar -u %iowait), memory gone
    "nginx-proxy-oom": {"swap:kbswpused", "cpu:%iowait", "memory:kbmemfree"},
    # two clients filling the 20 Gbit/s bond
    "image-service-ab": {"net-dev:txkB/s"},
    # TIME_WAIT at tcp_max_tw_buckets, the overflow and the orphans' lines
    "tengine-720k": {"net-sock:tcp-tw", "log:tcp-tw-bucket-overflow", "log:socket-memory"},
    # workers that exited on signal 11
    "nginx-worker-crash": {"log:worker-signal-exit"},
}


@pytest.mark.parametrize("sample", sorted(FIELD_REPORT_SERIES))
def test_the_series_each_field_report_talks_about_are_in_its_incident_s_five(sample_case, sample):
    doc = sample_case(sample).to_json()["incidents"][0]
    told = doc["changes"]
    assert len(told) <= 5
    names = {f"{c['section']}:{c['metric']}" for c in told}
    names |= {f"{w.split(' of ', 1)[1].split()[0]}:{w.split(' of ', 1)[0]}" for c in told for w in c["with"]
              if " lines of " not in w}
    names |= {f"log:{w.split(' lines of ', 1)[0]}" for c in told for w in c["with"] if " lines of " in w}
    assert FIELD_REPORT_SERIES[sample] <= names, [c["text"][:120] for c in told]
