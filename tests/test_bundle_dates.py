"""A bundle's yearless logs dated by when the bundle was made (sos's
``sos_commands/date/date``), not by their files' modification times: a
copied or extracted report has files of any age."""
from __future__ import annotations

import os

import pandas as pd
import pytest

import sarsleuth

#: what `date` printed when sos ran (coreutils' default format)
MADE = "Thu Feb 10 16:19:17 UTC 2022\n"
#: a failing disk's lines, as rsyslog wrote kern.log on Ubuntu 20.04
KERN = ("{day} 06:51:39 bronzor kernel: [3456723.135102] blk_update_request: I/O error, dev sdk, sector 130611915 "
        "op 0x1:(WRITE) flags 0x0 phys_seg 1 prio class 0\n")


def _bundle(tmp_path, day: str, made: str = MADE):
    root = tmp_path / "sosreport-bronzor-2022-02-10-abcdefg"
    (root / "sos_commands" / "date").mkdir(parents=True)
    (root / "var" / "log").mkdir(parents=True)
    (root / "sos_commands" / "date" / "date").write_text(made)
    log = root / "var" / "log" / "kern.log"
    log.write_text(KERN.format(day=day))
    later = pd.Timestamp("2026-06-11 07:00").timestamp()         # extracted years later
    os.utime(log, (later, later))
    return root


@pytest.mark.parametrize("day, year", [("Jun 11", 2021), ("Feb  9", 2022), ("Feb 10", 2022)])
def test_yearless_lines_end_before_the_bundle_was_made(tmp_path, day, year):
    case = sarsleuth.load(_bundle(tmp_path, day))
    (disk,) = [f for f in case.findings if f.detector == "disk-error"]
    assert pd.Timestamp(disk.start).year == year
    assert any("syslog year taken from the date its bundle was made" in n for n in case.notes)


def test_a_date_in_another_language_is_no_date(tmp_path):
    # near miss: a `date` in German names its zone and month its own way;
    # the file's time stays the (said) guess
    case = sarsleuth.load(_bundle(tmp_path, "Jun 11", made="Do 10. Feb 16:19:17 CET 2022\n"))
    (disk,) = [f for f in case.findings if f.detector == "disk-error"]
    assert pd.Timestamp(disk.start).year == 2026
    assert any("2026 is taken from the file's modification time" in n for n in case.notes)
