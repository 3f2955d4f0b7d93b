"""What a user types the way other tools taught them: ``--window`` times
without a date on the case's day (never today's), ``--tz`` as outputs
print zones (``UTC+08:00``), notes that name only options the command has,
``--version``, shell completion, and the example configuration in docs/."""
from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tomllib

import pytest

from sarsleuth.config import load_config
from sarsleuth.options import check_tz
from sarsleuth.detectors import registry

from .conftest import ROOT, SAMPLES, run_cli

OOM = SAMPLES / "nginx-proxy-oom"


@functools.lru_cache(maxsize=None)
def _analysed(*args) -> str:
    ran = run_cli("analyze", *args, "--format", "json")
    assert ran.returncode == 0, ran.stderr
    return ran.stdout


def _analysis(*args) -> dict:
    """The JSON document of ``analyze ARGS`` (each run once a session)."""
    return json.loads(_analysed(*args))


def _told(doc: dict) -> list:
    return [(f["detector"], f["title"], f["start"], f["end"]) for f in doc["findings"]]


def test_a_window_without_a_date_is_on_the_case_s_day():
    """The sample is of 2014-05-06: 15:00..15:05 is that day's, as if the
    date were given, and a note says which day it was read on."""
    bare = _analysis(OOM, "--window", "15:03..15:05")
    dated = _analysis(OOM, "--window", "2014-05-06T15:03..2014-05-06T15:05")
    assert _told(bare) == _told(dated) and bare["findings"]
    assert "--window 15:03..15:05: times without a date are read on 2014-05-06, the day the inputs cover" \
        in bare["notes"]
    # an end without a date is on the start's day
    assert _told(_analysis(OOM, "--window", "2014-05-06T15:03..15:05")) == _told(dated)


def test_a_window_without_a_date_over_several_days_is_the_last_one_said(tmp_path):
    log = tmp_path / "messages"
    log.write_text("Mar  3 10:00:01 web1 kernel: Out of memory: Killed process 4321 (java).\n"
                   "Mar  5 10:00:01 web1 kernel: Out of memory: Killed process 4322 (java).\n")
    doc = _analysis(log, "--year", "2024", "--window", "09:00..11:00")
    assert [f["start"][:10] for f in doc["findings"] if f["detector"] == "oom-kill"] == ["2024-03-05"]
    assert ("--window 09:00..11:00: times without a date are read on 2024-03-05, the last of the days the inputs "
            "cover (2024-03-03 to 2024-03-05); give a date for another (--window 2024-03-03T09:00..11:00)") \
        in doc["notes"]
    past_midnight = _analysis(log, "--year", "2024", "--window", "23:00..10:30")      # 5 March 23:00 to 6 March
    assert not [f for f in past_midnight["findings"] if f["detector"] == "oom-kill"]


@pytest.mark.parametrize("given,zone", [("+08:00", "+08:00"), ("UTC+08:00", "+08:00"), ("+0800", "+08:00"),
                                        ("GMT-5", "-05:00"), ("UTC+05:30", "+05:30"), ("Asia/Shanghai", "Asia/Shanghai")])
def test_tz_reads_zones_and_offsets_as_people_write_them(given, zone):
    assert check_tz(given) == zone


@pytest.mark.parametrize("zone", ["+08:00", "UTC+08:00"])
def test_tz_takes_an_offset_as_outputs_print_it(zone):
    named = _analysis(OOM, "--tz", "Asia/Shanghai")
    offset = _analysis(OOM, "--tz", zone)
    assert _told(offset) == _told(named)
    assert offset["timezone"] == "+08:00"
    text = run_cli("analyze", OOM, "--tz", zone)
    assert "Timeline (UTC+08:00)" in text.stdout


@pytest.mark.parametrize("zone,says", [("+25:00", "an offset is at most 14 hours from UTC"),
                                       ("Mars/Olympus", "not a known time zone (an IANA name such as")])
def test_a_zone_nobody_knows_is_one_line(zone, says):
    ran = run_cli("analyze", OOM, "--tz", zone)
    assert ran.returncode == 2 and ran.stderr.count("\n") == 1 and says in ran.stderr


def test_parse_names_only_options_it_has():
    """parse has --tz but no --window: its notes say so."""
    report = SAMPLES / "live-loopback" / "ab-c200.txt"
    ran = run_cli("parse", report, "--format", "json")
    assert ran.returncode == 0, ran.stderr
    assert "(a guess: use --tz to place it)" in ran.stderr and "--window" not in ran.stderr
    analysed = run_cli("analyze", report, "--format", "json")
    assert any(n.endswith("(a guess: use --window or --tz to place it)") for n in json.loads(analysed.stdout)["notes"])


def test_version():
    ran = run_cli("--version")
    assert ran.returncode == 0 and ran.stdout.startswith("sarsleuth ")


def test_the_shell_completes_commands_and_options():
    """typer's completion, as the shell's completion script asks it."""
    env = {**os.environ, "_SARSLEUTH_COMPLETE": "complete_bash", "COMP_WORDS": "sarsleuth co", "COMP_CWORD": "1",
           "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "sarsleuth.cli"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.stdout.split() == ["collect", "compare"]
    env.update(COMP_WORDS="sarsleuth collect --ma", COMP_CWORD="2")
    proc = subprocess.run([sys.executable, "-m", "sarsleuth.cli"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.stdout.split() == ["--max-size"]
    assert "--install-completion" in run_cli("--help").stdout


EXAMPLE = ROOT / "docs" / "sarsleuth.example.toml"


def test_the_example_configuration_is_every_default_and_changes_nothing():
    data = tomllib.loads(EXAMPLE.read_text("utf-8"))
    detectors = registry()
    assert {d for d in detectors if detectors[d].defaults} == set(data["detectors"])
    for det_id, params in data["detectors"].items():
        assert params == detectors[det_id].defaults, det_id
    assert load_config(EXAMPLE).params == data["detectors"]
    assert _told(_analysis(OOM, "--config", EXAMPLE)) == _told(_analysis(OOM))
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "example_config.py"), "--check"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_example_configuration_s_commented_parts_load(tmp_path):
    """Its examples of a signature, a link speed and a redaction pattern
    load once uncommented."""
    text = EXAMPLE.read_text("utf-8").replace("\n# [", "\n[").replace("\n# id =", "\nid =")
    for key in ("patterns", "severity", "explanation", "customer", "link_speed"):
        text = text.replace(f"\n# {key} =", f"\n{key} =")
    cfg = tmp_path / "uncommented.toml"
    cfg.write_text(text)
    loaded = load_config(cfg)
    assert loaded.link_speed_bps == 10e9
    assert [s.id for s in loaded.signatures] == ["myapp-panic"]
    assert [name for name, _ in loaded.redact_patterns] == ["customer"]


def test_a_tree_of_many_files_that_are_no_logs_is_counted_not_listed(tmp_path):
    """A host's /etc copied beside its logs: 45 files no parser reads.
    stderr names the first ten and counts the rest by reason, under the
    report's own warnings; the JSON report lists every one."""
    import shutil
    shutil.copy(SAMPLES / "nginx-proxy-oom" / "messages", tmp_path / "messages")
    for n in range(40):
        (tmp_path / f"ifcfg-eth{n}").write_text(f'BOOTPROTO="static"\nONBOOT="yes"\nIPADDR="10.0.{n}.7"\n')
    for n in range(5):
        (tmp_path / f"zz-empty-{n}.conf").write_text("")
    ran = run_cli("analyze", tmp_path, "--format", "json")
    assert ran.returncode == 0, ran.stderr
    skipped = [line for line in ran.stderr.splitlines() if line.startswith("sarsleuth: warning: skipped ")]
    assert len(skipped) == 11
    assert skipped[-1] == ("sarsleuth: warning: skipped 35 more file(s): content matches no known format (30); "
                           "empty file (5) (the JSON report lists each)")
    assert len(json.loads(ran.stdout)["skipped"]) == 45
