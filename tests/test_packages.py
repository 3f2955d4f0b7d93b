"""Package manager logs: dpkg.log and dnf.rpm.log read as their programs
write them, each package change an event at its time."""
from __future__ import annotations

import pandas as pd
import pytest

from sarsleuth.errors import InputError
from sarsleuth.knowledge.signatures import fields_of
from sarsleuth.inputs.parsers import sniff
from sarsleuth.inputs.parsers.base import ParseOptions
from sarsleuth.inputs.parsers.packages import PackageLogParser

#: dnf 4 on RHEL 9: the new version's line, then the old one cleaned up.
DNF_RPM_LOG = """\
2024-01-15T10:23:40+0100 SUBDEBUG Upgrade: nginx-core-1:1.20.1-14.el9_2.1.x86_64
2024-01-15T10:23:41+0100 SUBDEBUG Upgrade: nginx-1:1.20.1-14.el9_2.1.x86_64
2024-01-15T10:23:41+0100 SUBDEBUG Upgraded: nginx-1:1.20.1-13.el9.x86_64
2024-01-15T10:23:42+0100 SUBDEBUG Installed: nginx-filesystem-1:1.20.1-14.el9_2.1.noarch
2024-01-15T10:23:43+0100 INFO --- logging initialized ---
"""


def test_dnf_changes_are_instants_in_utc(tmp_path):
    path = tmp_path / "dnf.rpm.log"
    path.write_text(DNF_RPM_LOG)
    assert sniff(path)[0] == "package-log"
    src = PackageLogParser.parse(path, ParseOptions())
    assert list(src.events["message"]) == ["Upgrade: nginx-core-1:1.20.1-14.el9_2.1.x86_64",
                                           "Upgrade: nginx-1:1.20.1-14.el9_2.1.x86_64"]
    assert src.events["timestamp"].iloc[0] == pd.Timestamp("2024-01-15 09:23:40", tz="UTC")
    assert list(src.events["line"]) == [1, 2] and src.records == 5 and not src.warnings
    assert fields_of("package", src.events["message"].iloc[1])["new"] == "1.20.1-14.el9_2.1"


def test_dpkg_lines_of_no_layout_are_skipped_with_a_warning(tmp_path):
    path = tmp_path / "dpkg.log"
    path.write_text("2025-06-24 14:36:25 upgrade libudev1:amd64 252.36-1~deb12u1 252.38-1~deb12u1\n"
                    "garbage that is no dpkg line\n"
                    "2025-02-30 14:36:29 install libgdbm6:amd64 <none> 1.23-3\n"
                    "2025-06-24 14:36:31 remove libfoo1:amd64 1.0-1 <none>\n")
    src = PackageLogParser.parse(path, ParseOptions())
    assert list(src.events["line"]) == [1, 4]
    assert src.events["timestamp"].iloc[0] == pd.Timestamp("2025-06-24 14:36:25")       # the host's wall clock
    assert src.warnings == [f"{path}: 2 line(s) in no package log layout skipped (first at line 2)"]


def test_a_file_with_no_package_line_is_refused(tmp_path):
    path = tmp_path / "dpkg.log"
    path.write_text("nothing here\n")
    with pytest.raises(InputError):
        PackageLogParser.parse(path, ParseOptions())
