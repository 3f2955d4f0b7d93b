"""The lab's scenarios and the recorder's rules that need no recording:
every scenario reads, names a kind whose category the contract knows, and
is refused with its file and key when it says something the recorder does
not know; the host's crontab; the quiet-machine check against a host's own
background."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from lab.recorder import background, scenario
from lab.recorder.probes import Probes

REPO = Path(__file__).resolve().parent.parent


def _contract_categories() -> set[str]:
    text = (REPO / "CONTRACT.md").read_text()
    para = text[text.index("- `category` is one of:"):]
    para = para[:para.index(".\n")]
    return set(re.findall(r"`([a-z-]+)`", para)) - {"category"}


def test_every_scenario_reads_and_names_a_kind_the_contract_can_tell():
    kinds = scenario.kinds()
    categories = _contract_categories()
    assert {"memory-exhaustion", "upstream-failure", "other"} <= categories
    for name, kind in kinds.items():
        assert kind["category"] in categories | {""}, name
    found = scenario.all_scenarios()
    assert len(found) >= 80
    for sc in found:
        assert sc.kind in kinds, sc.id
        if not sc.truth.get("quiet"):
            assert set(sc.truth["category"]) <= categories, sc.id


def test_a_scenario_saying_what_the_recorder_does_not_know_is_refused(tmp_path):
    good = (REPO / "lab" / "scenarios" / "cpu-zstd-archive-job.toml").read_text()
    bad = tmp_path / "cpu-zstd-archive-job.toml"
    bad.write_text(good.replace("[background]\n", "[background]\ntraffic_peak = 3\n"))
    with pytest.raises(scenario.ScenarioError, match=r"cpu-zstd-archive-job.toml \[background\]: unknown key\(s\) "
                                                     r"traffic_peak"):
        scenario.load(bad)
    bad.write_text(good.replace("[collector]", "") + "\n[collector]\nsos = 500\n")
    with pytest.raises(scenario.ScenarioError, match=r"collector or background job at 500 s is after the recording"):
        scenario.load(bad)
    bad.write_text(good.replace('sa_dir = "/var/log/sysstat"', 'sa_dir = "/var/log/sa"') + "\n[collector]\nsos = 150\n")
    with pytest.raises(scenario.ScenarioError, match="sos collects sa files from /var/log/sysstat only"):
        scenario.load(bad)


def test_a_long_recording_keeps_sadc_from_cron_as_a_host_does():
    long = scenario.load(REPO / "lab" / "scenarios" / "long-quiet-workday.toml")
    bg = background.settings(long)
    tab = background.crontab(bg)
    assert "*  *  *   *   *  root  python3 /srv/app/minutely.py" in tab
    assert f"*  *  *   *   *  root  /usr/lib/sysstat/sadc -F -L -S DISK 1 1 {background.SA_60S_DIR}" in tab
    assert "5-55/10 * * * *  root  command -v debian-sa1 > /dev/null && debian-sa1 1 1" in tab
    short = background.settings(scenario.load(REPO / "lab" / "scenarios" / "cpu-zstd-archive-job.toml"))
    assert "sadc" not in background.crontab(short)
    old = background.settings(scenario.load(REPO / "lab" / "scenarios" / "cpu-stress-ng-all.toml"))
    assert old["profile"] == "none"


def _probes(samples: list[tuple[float, float]]) -> Probes:
    """(machine's busy %, other work's %) once a second."""
    p = Probes()
    p.samples = [(float(t), {"cpu_busy_pct": busy, "foreign_cpu_pct": other, "foreign_io_mbps": 0.0})
                 for t, (busy, other) in enumerate(samples)]
    p.foreign_top = [("make", "")] * len(samples)
    return p


def test_other_work_is_measured_against_the_hosts_own_background():
    # a host whose own work uses 40 % before the fault: other work at 12 % is noise
    busy = _probes([(52.0, 12.0)] * 60)
    assert busy.disturbed(baseline_until=30.0) is None
    assert "other work used the machine's CPUs" in busy.disturbed()          # a quiet host: 8 % at most
    # other work above half the host's own use is not noise any more
    loud = _probes([(70.0, 25.0)] * 60)
    assert "allowed 22 % and 45 %" in loud.disturbed(baseline_until=30.0)


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root and unshare (namespaces)")
def test_ps_on_the_staged_host_lists_the_host_only(tmp_path):
    """``hostps.py`` runs the real ps and keeps the host's rows (its UTS
    namespace), ps's own row, and the kernel's threads; never the
    machine's other processes, even when it cannot tell the recorder."""
    script = tmp_path / "host.sh"
    script.write_text(f"hostname ps-test-host\nsleep 20 &\necho $!\npython3 {REPO / 'lab/programs/hostps.py'} aux\n"
                      "kill $!\n")
    out = subprocess.run(["unshare", "--uts", "--", "sh", str(script)], capture_output=True, text=True,
                         timeout=30).stdout.splitlines()
    sleeper, head, rows = int(out[0]), out[1], out[2:]
    assert head.split()[:2] == ["USER", "PID"]
    pids = {int(r.split()[1]) for r in rows}
    assert sleeper in pids and os.getpid() not in pids and 1 not in pids
    assert any(r.split(None, 10)[10] == "ps aux" for r in rows)
    others = [r for r in rows if int(r.split()[1]) != sleeper
              and r.split(None, 10)[10] not in ("ps aux", f"sh {script}")]
    assert all(r.split(None, 10)[10].startswith("[") for r in others), others
