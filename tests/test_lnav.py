"""Findings in lnav: ``analyze --format jsonl`` of every sample and bundle,
opened by Debian's ``lnav`` headless with the shipped format installed in
a temporary HOME, gives back every finding and incident with its time,
level, host, detector, title and evidence file:line."""
from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys

import pandas as pd
import pytest

from sarsleuth import render
from sarsleuth.integrations import path as shipped

from .conftest import SAMPLES, run_cli

LNAV = shutil.which("lnav")
pytestmark = pytest.mark.skipif(LNAV is None, reason="needs Debian's lnav package")
#: lnav's level for each severity (the format's "level" patterns)
LEVELS = {"critical": "critical", "high": "error", "medium": "warning", "low": "info"}
FOLDERS = ("nginx-proxy-oom", "live-loopback", "image-service-ab", "tengine-720k", "nginx-worker-crash")


def _lnav(home, *args, files=()):
    env = dict(os.environ, HOME=str(home), TZ="America/New_York", XDG_CONFIG_HOME=str(home / ".config"))
    return subprocess.run([LNAV, *args, *map(str, files)], capture_output=True, text=True, env=env, timeout=300)


def _shown(event) -> str:
    """An event's time as lnav shows it: the host's wall clock, to the
    millisecond, whatever zone lnav runs in (the logs beside it carry none)."""
    ts = pd.Timestamp(event["time"])
    ts = ts.tz_localize(None) if ts.tzinfo is not None else ts
    return ts.strftime("%Y-%m-%d %H:%M:%S.") + f"{ts.microsecond // 1000:03d}"


def _key(time, kind, detector, title, evidence):
    return (time, kind, detector or "", title, evidence or "")


def test_lnav_reads_back_every_finding_of_every_sample(tmp_path, sample_case):
    import sarsleuth
    cases = {name: sample_case(name) for name in FOLDERS}
    # each sysstat release's day from its sa file (its sadf and sar renderings
    # hold the same values: test_sysstat_versions)
    versions = sorted((SAMPLES / "sysstat-versions").glob("[0-9]*/sa.gz"))
    cases.update({f"sysstat-{p.parent.name}": sarsleuth.load(p) for p in versions})
    cases.update({p.name: sarsleuth.load(p) for p in sorted((SAMPLES / "bundles").glob("*.tar.*"))})
    files = {}
    for name, case in cases.items():
        out = io.StringIO()
        render.write_case("jsonl", case, out)
        files[name] = tmp_path / f"{name}.jsonl"
        files[name].write_text(out.getvalue(), "utf-8")
        assert len(out.getvalue().splitlines()) == len(case.findings) + len(case.incidents), name
    # the command line writes the same lines
    proc = run_cli("analyze", SAMPLES / "nginx-proxy-oom", "--format", "jsonl")
    assert proc.returncode == 0 and proc.stdout == files["nginx-proxy-oom"].read_text("utf-8")

    home = tmp_path / "home"
    home.mkdir()
    installed = _lnav(home, "-i", shipped("lnav"))
    assert installed.returncode == 0 and "installed" in installed.stdout + installed.stderr, installed.stderr
    query = ("SELECT log_path, log_time, log_level, type, host, detector, log_body, evidence, incident, role, placed "
             "FROM sarsleuth_events ORDER BY log_path, log_line")
    read = _lnav(home, "-n", "-c", f";{query}", "-c", ":write-json-to -", files=files.values())
    assert read.returncode == 0 and "error" not in read.stderr.lower(), read.stderr
    rows = json.loads(read.stdout[read.stdout.index("["):])
    by_file = {}
    for row in rows:
        by_file.setdefault(row["log_path"], []).append(row)
    for name, f in files.items():
        events = [json.loads(line) for line in f.read_text("utf-8").splitlines()]
        got = by_file.get(str(f), [])
        assert len(got) == len(events), (name, len(got), len(events))
        # lnav shows them in time order on each host's clock; the file is in order of instants
        got.sort(key=lambda r: _key(r["log_time"], r["type"], r["detector"], r["log_body"], r["evidence"]))
        events.sort(key=lambda e: _key(_shown(e), e["type"], e.get("detector"), e["title"], e.get("evidence")))
        for row, event in zip(got, events):
            assert row["log_time"] == _shown(event), (name, row, event)
            assert row["log_level"] == LEVELS[event["severity"]]
            for column, key in (("type", "type"), ("detector", "detector"), ("log_body", "title"),
                                ("evidence", "evidence"), ("incident", "incident"), ("role", "role"),
                                ("placed", "placed")):
                assert row[column] == event.get(key), (name, column, row, event)
            assert (row["host"] or None) == event.get("host")
        findings = [e for e in events if e["type"] == "finding"]
        assert sorted((e["detector"], e["title"]) for e in findings) == \
            sorted((x.detector, x.title) for x in cases[name].findings), name
    # a finding dmesg could not date is placed at its incident's start, and says so
    crash = [json.loads(line) for line in files["nginx-worker-crash"].read_text().splitlines()]
    placed = [e for e in crash if "placed" in e]
    assert placed and all(e["placed"] == "no time of its own: placed at the start of incident 1" for e in placed)
    assert all(e["time"] == crash[0]["time"] for e in placed)
    # evidence file:line as the JSON document cites it
    oom = [json.loads(line) for line in files["nginx-proxy-oom"].read_text().splitlines()]
    assert any(e["evidence"].endswith("messages:11") and e["detector"] == "page-allocation-failure" for e in oom)


def test_jsonl_lines_are_one_event_each_and_keep_inputs_harmless(tmp_path):
    log = tmp_path / "messages"
    log.write_text("Mar  3 10:00:01 web1 kernel: Out of memory: Killed process 2211 (evil\x1b]0;pwn\x07\u202e) "
                   "total-vm:812345kB, anon-rss:402112kB, file-rss:0kB, shmem-rss:0kB\n", "utf-8")
    proc = run_cli("analyze", log, "--year", "2024", "--format", "jsonl")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    events = [json.loads(line) for line in lines]
    assert [e["type"] for e in events] == ["incident", "finding"]
    finding = events[1]
    assert finding["detector"] == "oom-kill" and finding["evidence"].endswith("messages:1")
    assert finding["time"] == "2024-03-03T10:00:01" and finding["host"] == "web1"
    assert "\x1b" not in proc.stdout and "\u202e" not in proc.stdout and "\\x1b" in proc.stdout
    assert events[0]["incident"] == 1 and finding["incident"] == 1 and finding["role"] == "cause"
    assert finding["incident_id"] == events[0]["incident_id"]


def test_the_shipped_files_are_found():
    assert shipped("lnav").is_file() and shipped("grafana").is_file()
    fmt = json.loads(shipped("lnav").read_text("utf-8"))["sarsleuth_events"]
    assert fmt["json"] is True and fmt["timestamp-field"] == "wall_clock" and fmt["body-field"] == "title"
    assert set(fmt["level"].values()) == {f"^{s}$" for s in LEVELS}
    out = subprocess.run([sys.executable, "-m", "sarsleuth.integrations", "lnav"], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(SAMPLES.parent)), timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == str(shipped("lnav"))
