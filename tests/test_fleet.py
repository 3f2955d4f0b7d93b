"""A fleet: hosts told apart by what their files say, each host analysed on
Dask with the single-host pipeline, findings of one kind on many hosts
correlated into fleet incidents ranked by breadth.  The fleet is generated
with the project's sysstat writer (real ``sar`` reads it) and syslog lines as
rsyslog writes them (``samples/make_fleet.py``)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pandas as pd
import pytest

from .conftest import SAMPLES, run_cli

distributed = pytest.importorskip("distributed", reason="dask[distributed] is part of the test extra")

sys.path.insert(0, str(SAMPLES))
from make_fleet import write_fleet  # noqa: E402

HOSTS = 6


@pytest.fixture(scope="session")
def fleet_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("fleet")
    made = write_fleet(out, hosts=HOSTS)
    return out, made


@pytest.fixture(scope="session")
def scheduler():
    """Two single-threaded workers in this process: a real Dask scheduler
    without the cost of starting processes."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0",
                                  # in-process workers measure the whole test process's memory, which
                                  # grows over a session past any fixed limit: paused, they never finish
                                  memory_limit=0) as cluster:
        yield cluster.scheduler_address


@pytest.fixture(scope="session")
def analysed(fleet_dir, scheduler, tmp_path_factory):
    import sarsleuth.fleet
    out, made = fleet_dir
    case = tmp_path_factory.mktemp("saved") / "case"
    return sarsleuth.fleet.analyze(out, scheduler=scheduler, save=case), made, case


def test_hosts_come_from_the_files_not_the_folders(fleet_dir):
    from sarsleuth.fleet.hosts import group_inputs
    out, made = fleet_dir
    grouping = group_inputs([out])
    assert grouping.hosts == made["hosts"]
    for group in grouping.groups:
        # the sa file sits with every other host's in sa/, the log in a box-NNNNN folder
        assert sorted(p.split("/")[-2] for p in group.files)[1] == "sa"
        log = next(p for p in group.files if p.endswith("messages"))
        assert f" {group.host} " in open(log, encoding="utf-8").readline()
        assert group.facts == {"kernel": "5.14.0-427.13.1.el9_4.x86_64", "ncpu": 2}
    assert grouping.unplaced == []


def test_a_fleet_is_told_from_a_sample_of_heads(fleet_dir):
    from sarsleuth.fleet.hosts import names_hosts
    out, _made = fleet_dir
    assert names_hosts([out], 3) and names_hosts([out], HOSTS) and not names_hosts([out], HOSTS + 1)
    # six of the twelve files, spread over the inputs, still name three hosts
    assert names_hosts([out], 3, sample=6) and not names_hosts([out], 4, sample=6)
    assert not names_hosts([SAMPLES / "nginx-proxy-oom"], 2)


def test_full_names_join_short_names_and_central_logs_go_to_each_host(tmp_path):
    from sarsleuth.fleet.hosts import file_facts, group_by_host
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "messages").write_text(
        "Nov 20 03:14:50 web1.example.com kernel: INFO: task jbd2/dm-0-8:612 blocked for more than 120 seconds.\n"
        "Nov 20 03:15:00 web1.example.com systemd[1]: Started Session 4 of User root.\n")
    (tmp_path / "b" / "sar.txt").write_text(
        "Linux 5.14.0 (web1) \t11/20/2026 \t_x86_64_\t(2 CPU)\n\n"
        "00:00:01        CPU     %user     %nice   %system   %iowait    %steal     %idle\n"
        "00:10:01        all      6.41      0.00      2.45      0.66      0.00     90.48\n")
    central = "".join(f"Nov 20 03:1{k}:00 {h} sshd[{100 + k}]: Accepted publickey for deploy from 10.0.0.{k} "
                      f"port 4000{k} ssh2\n" for k in range(6) for h in ("web1", "db2"))
    (tmp_path / "central.log").write_text(central)
    grouping = group_by_host([file_facts(p) for p in sorted(tmp_path.rglob("*")) if p.is_file()])
    assert grouping.hosts == ["db2", "web1"]
    web1 = grouping.groups[1]
    assert sorted(p.rsplit("/", 2)[-2] + "/" + p.rsplit("/", 1)[-1] for p in web1.files) == [
        "a/messages", "b/sar.txt", f"{tmp_path.name}/central.log"]
    assert web1.shared == [str(tmp_path / "central.log")]
    assert grouping.groups[0].files == [str(tmp_path / "central.log")]


def test_the_shared_incident_ranks_first_and_names_its_hosts(analysed):
    fleet, made, _case = analysed
    assert [h.host for h in fleet.hosts] == made["hosts"] and all(h.ok for h in fleet.hosts)
    first = fleet.incidents[0]
    assert first.hosts == made["shared"]
    assert first.hosts_without == [h for h in made["hosts"] if h not in made["shared"]]
    assert {"iowait-spike", "hung-task"} <= set(first.kinds)
    assert first.category == "io-saturation"
    # the stall began 03:12 UTC on every host, whatever its own zone (UTC or UTC+01:00)
    # (hung tasks logged from 03:14, the last stalled sample at 03:30:01)
    assert first.start.strftime("%Y-%m-%d %H:%M") == "2026-11-20 03:14"
    assert str(first.end) == "2026-11-20 03:30:01"
    assert f"on {len(made['shared'])} of {HOSTS} hosts" in first.title
    own = fleet.incidents[1]
    assert own.hosts == [made["own"]] and own.kinds == ["oom-kill"] and own.severity == "critical"
    assert len(fleet.incidents) == 2


def test_the_hosts_that_departed_most_in_a_fleet_incidents_window(analysed):
    """The storage stall's window (03:14 to 03:30:01 UTC), each host ranked
    against its own morning: the two hosts that stalled departed, most of
    all by the hung tasks their kernel logged (a kind new to them) and by
    %iowait of cpu all (from under 1 % to about 45 %); the four others
    departed nowhere, though they were read and ranked too."""
    fleet, made, _case = analysed
    first = fleet.incidents[0]
    assert [d["host"] for d in first.departed] == sorted(made["shared"], key=lambda h: -next(
        d["score"] for d in first.departed if d["host"] == h))
    assert sorted(d["host"] for d in first.departed) == made["shared"] == ["web-0000", "web-0003"]
    assert {d["largest"] for d in first.departed} == {"hung-task lines of jbd2/dm-0-8"}
    assert all(d["entries"] >= 2 and d["score"] > 5.0 for d in first.departed)
    doc = fleet.to_json()["fleet_incidents"][0]["hosts_departed"]
    assert [d["host"] for d in doc] == [d["host"] for d in first.departed]
    assert doc[0]["score"] == round(first.departed[0]["score"], 4)


def test_hosts_of_a_central_log_are_told_on_their_own_clocks(tmp_path):
    """Two hosts in different zones (UTC and UTC+01:00) whose syslog went to
    one central file: each host's incidents are correlated on its worker
    from its own lines, and told on its own wall clock, as a single-host
    analysis tells them."""
    from sarsleuth.fleet.hosts import group_inputs
    from sarsleuth.fleet.pipeline import analyse_host
    from sarsleuth.options import Options
    made = write_fleet(tmp_path, hosts=3, shared_percent=67)
    assert made["shared"] == ["web-0000", "web-0001"]
    logs = sorted(tmp_path.glob("logs/*/messages"))
    central = "".join(p.read_text("utf-8") for p in logs)
    shutil.rmtree(tmp_path / "logs")
    (tmp_path / "central.log").write_text(central, "utf-8")
    told = {}
    for group in group_inputs([tmp_path]).groups:
        assert group.shared == [str(tmp_path / "central.log")]
        result = analyse_host(group, Options())
        assert result.ok, result.error
        told[group.host] = result.incidents
    # the storage stall, 03:12 UTC, dated by its hung tasks (blocked for 120 s when reported; the
    # I/O wait's 10-minute sample is stamped 03:20:01): on web-0000's clock (UTC) and web-0001's
    for host, zone, hour in (("web-0000", "UTC", "03"), ("web-0001", "+01:00", "04")):
        (inc,) = told[host]
        assert inc.hosts == [host] and inc.category == "io-saturation"
        assert inc.zone == zone
        hung = min(pd.Timestamp(f.onset) for f in inc.findings if f.detector == "hung-task")
        clock = hung.tz_convert(inc.start.tzinfo).strftime("%H:%M:%S")
        assert clock.startswith(f"{hour}:1") and "12:00" <= clock[3:] < "13:00"
        assert inc.to_dict()["start"] == f"2026-11-20T{clock}{'+00:00' if zone == 'UTC' else zone}"
        label = "UTC" if zone == "UTC" else f"UTC{zone}"
        assert f"from 2026-11-20 {clock} to " in inc.story["headline"] and f"({label})" in inc.story["headline"]
        assert all(f.start.utcoffset() == inc.start.utcoffset() for f in inc.findings)
    (oom,) = told["web-0002"]
    assert oom.zone == "UTC" and oom.to_dict()["start"] == "2026-11-20T14:05:18+00:00"


def test_the_peak_is_what_sar_prints(analysed, fleet_dir):
    if shutil.which("sar") is None:
        pytest.skip("sysstat's sar is not installed")
    fleet, made, _case = analysed
    out, _ = fleet_dir
    host = made["shared"][0]
    sa = next(p for p in fleet.host(host).files if "/sa/" in p)
    text = subprocess.run(["sar", "-u", "-f", sa], capture_output=True, text=True, env={"LC_ALL": "C", "TZ": "UTC"},
                          check=True).stdout
    iowait = [float(line.split()[5]) for line in text.splitlines()
              if re.match(r"^\d\d:\d\d:\d\d\s+all\s", line)]
    spike = next(f for f in fleet.host(host).findings if f.detector == "iowait-spike")
    assert round(spike.metrics["peak_iowait_pct"], 2) == max(iowait) > 40


def test_one_unreadable_host_is_a_warning(fleet_dir, scheduler, tmp_path):
    import sarsleuth.fleet
    from sarsleuth.inputs.parsers.sa.writer import write_sa
    out, made = fleet_dir
    small = tmp_path / "fleet"
    shutil.copytree(out, small)
    import datetime as dt
    when = dt.datetime(2026, 11, 20, 0, 0, 1, tzinfo=dt.timezone.utc)
    broken = write_sa(tmp_path / "whole", host="db-9", kernel="5.14.0", ncpu=1, records=[
        {"time": when, "uptime_cs": 100, "cpu": [[1, 0, 1, 98, 0, 0, 0, 0, 0, 0]] * 2}])
    data = broken.read_bytes()
    (small / "sa" / "sa20-db").write_bytes(data[:-40])      # the only record cut short
    fleet = sarsleuth.fleet.analyze(small, scheduler=scheduler)
    db = fleet.host("db-9")
    assert not db.ok and "sa20-db" in db.error
    assert [w for w in fleet.warnings if w.startswith("host db-9: not analysed")]
    assert fleet.incidents[0].hosts == made["shared"]
    assert fleet.incidents[0].hosts_without == [h for h in made["hosts"] if h not in made["shared"]]


def test_saved_case_reopens_and_answers_sql(analysed):
    import sarsleuth
    fleet, made, case_dir = analysed
    case = sarsleuth.load_case(case_dir)
    hosts = case.hosts.set_index("host")
    assert list(hosts.index) == made["hosts"]
    per_host = case.metrics.groupby("host").size()
    assert per_host.to_dict() == {h.host: h.facts["metric_values"] for h in fleet.hosts}
    assert sorted(case.fleet_incidents.iloc[0]["hosts"]) == made["shared"]
    top = case.sql("SELECT host, max(value) AS peak FROM metrics WHERE metric = '%iowait' AND device = 'all' "
                   "GROUP BY host ORDER BY 2 DESC")
    assert sorted(top["host"][:len(made["shared"])]) == made["shared"]
    assert top["peak"].iloc[0] > 40 > top["peak"].iloc[len(made["shared"])]
    findings = case.findings
    assert set(findings.loc[findings["detector"] == "oom-kill", "host"]) == {made["own"]}


def test_sql_command_formats_and_errors(analysed, tmp_path):
    _fleet, made, case_dir = analysed
    query = "SELECT host, count(*) AS n FROM events WHERE kind = 'hung-task' GROUP BY host ORDER BY host"
    as_json = run_cli("sql", case_dir, query, "--format", "json")
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout) == [{"host": h, "n": 3} for h in made["shared"]]
    as_csv = run_cli("sql", case_dir, query, "--format", "csv")
    assert as_csv.stdout.splitlines() == ["host,n"] + [f"{h},3" for h in made["shared"]]
    table = run_cli("sql", case_dir, query)
    assert all(h in table.stdout for h in made["shared"]) and "2 row(s)" in table.stdout
    bad = run_cli("sql", case_dir, "SELEC 1")
    assert bad.returncode == 2 and bad.stderr.startswith("sarsleuth: sql: ") and len(bad.stderr.splitlines()) == 1
    missing = run_cli("sql", tmp_path, "SELECT 1")
    assert missing.returncode == 2 and "not a saved case" in missing.stderr


def test_cli_fleet_json_and_html(fleet_dir, scheduler, tmp_path):
    out, made = fleet_dir
    report = tmp_path / "fleet.html"
    ran = run_cli("analyze", out, "--scheduler", scheduler, "--format", "json", "--html", report)
    assert ran.returncode == 0, ran.stderr
    doc = json.loads(ran.stdout)
    # the single-case document, every host's part of it, plus the fleet
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema (the test extra) is not installed")
    from importlib import resources
    schema = json.loads(resources.files("sarsleuth.schema").joinpath("analysis.schema.json").read_text())
    jsonschema.validate(doc, schema)
    assert len(doc["sources"]) == 2 * HOSTS and {s["host"] for s in doc["sources"]} == set(made["hosts"])
    # every host's incidents, ranked across hosts by their own score
    assert sorted(i["hosts"][0] for i in doc["incidents"]) == sorted(made["shared"] + [made["own"]])
    assert [i["rank"] for i in doc["incidents"]] == [1, 2, 3]
    assert [i["score"] for i in doc["incidents"]] == sorted((i["score"] for i in doc["incidents"]), reverse=True)
    assert doc["fleet_incidents"][0]["hosts"] == made["shared"]
    assert doc["fleet_incidents"][0]["breadth"] == f"{len(made['shared'])} of {HOSTS} hosts"
    assert [h["host"] for h in doc["hosts"]] == made["hosts"]
    html = report.read_text("utf-8")
    assert html.index("Fleet incidents") < html.index("Worst severity per host and time") < html.index("<h2>Hosts")
    # heatmap rows link to each host's story
    for i, host in enumerate(made["hosts"]):
        if host in made["shared"] or host == made["own"]:
            assert f'<th><a href="#host-{i}">{host}</a></th>' in html
        assert f'id="host-{i}"' in html
    # the stories of hosts with incidents are open where the links land
    assert html.count('class="host" id="host-') == HOSTS and html.count("\" open>") == len(made["shared"]) + 1
    assert 'class="s-critical"' in html and 'class="s-high"' in html


def test_text_view_and_options_that_make_no_sense(fleet_dir, scheduler, tmp_path):
    out, made = fleet_dir
    ran = run_cli("analyze", out, "--scheduler", scheduler)
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("#1 "))
    assert lines[first + 1] == "   seen on: " + ", ".join(made["shared"])
    assert lines[first + 3].startswith("   departed most in its window: web-000")
    assert lines[first + 3].count("largest hung-task lines of jbd2/dm-0-8") == 2
    assert run_cli("analyze", out, "--fleet", "--scheduler", scheduler, "--plots", tmp_path / "p").returncode == 2
    bogus = run_cli("analyze", out, "--scheduler", "bogus://nowhere")
    assert bogus.returncode == 2 and "cannot reach a Dask scheduler" in bogus.stderr
    inside = run_cli("analyze", out, "--scheduler", scheduler, "--save", out / "case")
    assert inside.returncode == 2 and "inside an input" in inside.stderr


def _finding(host, detector, severity, minute, category="other"):
    import pandas as pd
    from sarsleuth.model import Finding
    start = pd.Timestamp(f"2026-11-20 03:{minute:02d}:00", tz="Europe/Paris")
    return Finding(detector=detector, title=f"{detector} on {host}", severity=severity, start=start,
                   end=start + pd.Timedelta(minutes=1), host=host, category=category)


def test_fleet_correlation_tolerance_breadth_and_ranking():
    from sarsleuth.fleet.correlate import fleet_incidents
    from sarsleuth.fleet.model import HostResult
    hosts = [HostResult(host=f"h{i}", files=[]) for i in range(5)]
    for h in hosts[:3]:
        h.findings.append(_finding(h.host, "a", "medium", 10 + int(h.host[1])))
    hosts[4].findings.append(_finding("h4", "b", "critical", 10))
    hosts[3].findings.append(_finding("h3", "a", "low", 40))      # same kind, half an hour later: its own
    ranked = fleet_incidents(hosts, tolerance_seconds=600)
    assert [(i.hosts, i.kinds, i.severity) for i in ranked] == [
        (["h0", "h1", "h2"], ["a"], "medium"), (["h4"], ["b"], "critical"), (["h3"], ["a"], "low")]
    # 0.5 * (1 + log2 3) beats 1.0 * (1 + log2 1)
    assert round(ranked[0].score, 3) == 1.292 and ranked[1].score == 1.0
    assert ranked[0].hosts_without == ["h3", "h4"]
    assert str(ranked[0].start) == "2026-11-20 02:10:00"      # Paris 03:10 is 02:10 UTC
    tight = fleet_incidents(hosts, tolerance_seconds=60)
    assert [i.hosts for i in tight if i.kinds == ["a"]][:2] == [["h0", "h1"], ["h2"]]


def test_kinds_seen_together_on_the_same_hosts_are_one_incident():
    from sarsleuth.fleet.correlate import fleet_incidents
    from sarsleuth.fleet.model import HostResult
    hosts = [HostResult(host=f"h{i}", files=[]) for i in range(4)]
    for h in hosts[:3]:
        h.findings += [_finding(h.host, "stall", "high", 12, "io-saturation"),
                       _finding(h.host, "hung", "high", 14, "io-saturation")]
    hosts[3].findings.append(_finding("h3", "hung", "high", 14, "io-saturation"))
    ranked = fleet_incidents(hosts)
    assert [(i.kinds, i.hosts) for i in ranked] == [(["stall", "hung"], ["h0", "h1", "h2", "h3"])]


def test_single_case_save_reopens_with_the_same_numbers(sample_case, tmp_path):
    import sarsleuth
    ran = run_cli("analyze", SAMPLES / "nginx-proxy-oom", "--format", "json", "--save", tmp_path / "case")
    assert ran.returncode == 0, ran.stderr
    case = sample_case("nginx-proxy-oom")
    saved = sarsleuth.load_case(tmp_path / "case")
    assert len(saved.metrics) == len(case.metrics)
    assert len(saved.findings) == len(case.findings)
    # report 000: %iowait peaked at 64.94 at 15:05:03 Asia/Shanghai, as sar printed it
    peak = saved.sql("SELECT value, timestamp FROM metrics WHERE metric = '%iowait' AND device = 'all' "
                     "ORDER BY value DESC LIMIT 1")
    assert round(peak["value"].iloc[0], 2) == 64.94
    assert str(peak["timestamp"].iloc[0])[:19] == "2014-05-06 07:05:03"
    again = run_cli("analyze", SAMPLES / "nginx-proxy-oom", "--format", "json", "--save", tmp_path / "case")
    assert again.returncode == 0, again.stderr      # an earlier case is replaced
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    refused = run_cli("analyze", SAMPLES / "nginx-proxy-oom", "--save", other)
    assert refused.returncode == 2 and "not empty" in refused.stderr and (other / "notes.txt").exists()


def test_host_names_from_inputs_are_made_safe(tmp_path, scheduler):
    from sarsleuth.saved_cases import partition_name
    assert partition_name("../../etc") == "host=..%2F..%2Fetc"
    assert partition_name("..") == "host=%2E%2E" or "/" not in partition_name("..")
    hostile = "<b>x</b>\x1b]0;pwn\x07"
    for i, host in enumerate([hostile, "web-a", "web-b"]):
        (tmp_path / f"sar{i}.txt").write_text(
            f"Linux 5.14.0 ({host}) \t11/20/2026 \t_x86_64_\t(2 CPU)\n\n"
            "00:00:01        CPU     %user     %nice   %system   %iowait    %steal     %idle\n"
            "00:10:01        all      6.41      0.00      2.45      0.66      0.00     90.48\n"
            "00:20:01        all      6.41      0.00      2.45      0.66      0.00     90.48\n")
    report = tmp_path.parent / f"{tmp_path.name}-report.html"
    ran = run_cli("analyze", tmp_path, "--scheduler", scheduler, "--html", report)
    assert ran.returncode == 0, ran.stderr
    assert "\x1b" not in ran.stdout and "\\x1b]0;pwn\\x07" in ran.stdout
    html = report.read_text("utf-8")
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html
    # the fleet's HTML and JSON show the sequence as the terminal does, never raw
    assert "\x1b" not in html and "\x07" not in html and "\\x1b]0;pwn\\x07" in html
    ran = run_cli("analyze", tmp_path, "--scheduler", scheduler, "--format", "json")
    assert ran.returncode == 0 and "\x1b" not in ran.stdout, ran.stderr
    assert "&lt;b&gt;x&lt;/b&gt;\\x1b]0;pwn\\x07" in json.loads(ran.stdout)["hosts"][0]["host"].replace(
        "<b>x</b>", "&lt;b&gt;x&lt;/b&gt;")


def test_without_dask_the_hosts_run_in_process(fleet_dir, monkeypatch):
    import sarsleuth.fleet
    out, made = fleet_dir
    for name in [m for m in sys.modules if m == "distributed" or m.startswith("distributed.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "distributed", None)      # import distributed -> ImportError
    fleet = sarsleuth.fleet.analyze(out)
    assert fleet.scheduler.startswith("in-process") and any("Dask is not installed" in n for n in fleet.notes)
    assert fleet.incidents[0].hosts == made["shared"]


def test_markdown_view(fleet_dir, scheduler):
    out, made = fleet_dir
    ran = run_cli("analyze", out, "--scheduler", scheduler, "--format", "markdown")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith(f"# Fleet: {HOSTS} hosts\n")
    assert "\n## Fleet incidents\n" in ran.stdout and "\n## Hosts\n" in ran.stdout
    assert "seen on: " + ", ".join(made["shared"]).replace("-", "\\-") in ran.stdout \
        or "seen on: " + ", ".join(made["shared"]) in ran.stdout


def test_no_fleet_tells_many_hosts_as_one_case(fleet_dir):
    """--no-fleet: inputs naming many hosts (say, a central syslog) are one
    case on one timeline, with every host's findings and no fleet part."""
    out, made = fleet_dir
    ran = run_cli("analyze", out, "--no-fleet", "--format", "json")
    assert ran.returncode == 0, ran.stderr
    doc = json.loads(ran.stdout)
    assert "fleet_incidents" not in doc
    assert {s["host"] for s in doc["sources"]} == set(made["hosts"])
    told = {h for i in doc["incidents"] for h in i["hosts"]}
    assert set(made["shared"]) <= told and made["own"] in told


def test_a_fleet_as_json_lines_and_its_metrics_as_openmetrics(analysed, fleet_dir):
    import io

    from sarsleuth import render
    fleet, made, _case = analysed
    out = io.StringIO()
    render.write_fleet("jsonl", fleet, out)
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    shared = [e for e in events if e["type"] == "fleet-incident"]
    assert len(shared) == len(fleet.incidents) and shared[0]["host"] == ", ".join(made["shared"])
    assert shared[0]["hosts_without"] == fleet.incidents[0].hosts_without
    findings = [e for e in events if e["type"] == "finding"]
    assert len(findings) == sum(len(h.findings) for h in fleet.hosts)
    assert {e["host"] for e in findings} <= set(made["hosts"])
    # every host's sar history at once, one family after another
    folder, _made = fleet_dir
    ran = run_cli("parse", folder, "--format", "openmetrics")
    assert ran.returncode == 0, ran.stderr
    hosts = set(re.findall(r'^sar_load1\{host="([^"]+)"', ran.stdout, re.M))
    assert hosts == set(made["hosts"])
    families = re.findall(r"^# TYPE (\S+)", ran.stdout, re.M)
    assert len(families) == len(set(families))
