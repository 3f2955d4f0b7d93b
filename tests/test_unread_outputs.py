"""Other programs' outputs pasted beside sar's (vmstat, iostat, top, a
System V sar) are refused naming what they are, the line that shows it,
and where the same figures come from, as knowledge/unread_outputs.toml
lists them; a sar table stays sar."""
from __future__ import annotations

import pytest

from sarsleuth.inputs.parsers import sniff
from sarsleuth.knowledge import read_toml

from tests.conftest import run_cli as cli

OUTPUTS = read_toml("unread_outputs.toml")["output"]


@pytest.mark.parametrize("entry", OUTPUTS, ids=[e["name"].split()[0] for e in OUTPUTS])
def test_each_unread_output_is_refused_naming_it_and_its_line(tmp_path, entry):
    path = tmp_path / "paste.txt"
    path.write_text(f"$ run it\n{entry['sample']}\n  1  2  3  4  5  6\n  7  8  9 10 11 12\n")
    ran = cli("analyze", path)
    assert ran.returncode == 2 and "Traceback" not in ran.stderr
    assert (f"{path}: {entry['name']} output (line 2), which sarsleuth does not read: {entry['instead']}"
            in " ".join(ran.stderr.split()))
    kind, reason = sniff(path)
    assert kind == "sar-text" or reason.startswith(f"{entry['name']} output (line 2)")


IOSTAT = """\
Linux 3.10.0-1160.el7.x86_64 (db4) \t03/14/2024 \t_x86_64_\t(8 CPU)

avg-cpu:  %user   %nice %system %iowait  %steal   %idle
          35.05    0.00    7.85   47.89    0.00    9.20

Device:         rrqm/s   wrqm/s     r/s     w/s    rMB/s    wMB/s avgrq-sz avgqu-sz   await  svctm  %util
sda               0.00     0.20    1.00  163.40     0.00    81.09  1010.19   142.74  866.47   6.08 100.00
"""


def test_iostat_under_sysstat_s_banner_is_refused_as_iostat(tmp_path):
    """iostat prints sar's banner: the refusal says iostat, exit 2, one line."""
    path = tmp_path / "iostat.txt"
    path.write_text(IOSTAT)
    ran = cli("analyze", path)
    assert ran.returncode == 2 and "Traceback" not in ran.stderr
    assert (f"{path}: iostat output (line 3), which sarsleuth does not read: sar -d -p (or the host's sa files) "
            "give the disks' figures, timed") in " ".join(ran.stderr.split())


def test_a_sar_cpu_table_is_still_sar(tmp_path):
    """Near miss: sar -u under the same banner is read."""
    path = tmp_path / "sar.txt"
    path.write_text("Linux 3.10.0-1160.el7.x86_64 (db4) \t03/14/2024 \t_x86_64_\t(8 CPU)\n\n"
                    "10:00:01 AM     CPU     %user     %nice   %system   %iowait    %steal     %idle\n"
                    "10:10:01 AM     all     35.05      0.00      7.85     47.89      0.00      9.20\n")
    assert sniff(path)[0] == "sar-text"
