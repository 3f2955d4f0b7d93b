"""The lab's cases at coarser intervals (``lab/intervals``): the sa file a
host's sadc would have written every 10 s or 60 s, taken from the 1 s file
the case recorded, checked against sysstat itself (``sar -i`` selects the
same records from the 1 s file; ``sadf`` reads the derived file without a
word), on the lab's own recordings and on sysstat's test files.
"""
from __future__ import annotations

import io
import re
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from lab.intervals import derive, safile
from sarsleuth.inputs.parsers.base import ParseOptions
from sarsleuth.inputs.parsers.sa.parser import SaBinaryParser

REPO = Path(__file__).resolve().parent.parent
CASES = REPO / "lab" / "cases"
needs_sar = pytest.mark.skipif(not shutil.which("sar"), reason="sar and sadf (Debian package sysstat) not installed")


def _case_sa(case: str) -> tuple[str, bytes]:
    """(member name, bytes) of the sa file in a recorded case's archive."""
    folder = CASES / case
    if not folder.is_dir():
        pytest.skip(f"lab case {case} not recorded")
    for p in derive.case_inputs(folder):
        if tarfile.is_tarfile(p):
            with tarfile.open(p) as tar:
                for m in tar:
                    if m.isfile():
                        data = tar.extractfile(m).read()
                        if data[:4] == derive.SA_MAGIC:
                            return m.name, data
    pytest.skip(f"no sa file in lab case {case}")


def _sysstat(argv: list[str], tz: str = "UTC") -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, env={"PATH": os.environ["PATH"], "LC_ALL": "C", "TZ": tz})


def _clock(seconds: int) -> str:
    return f"{seconds // 3600:02}:{seconds % 3600 // 60:02}:{seconds % 60:02}"


# ------------------------------------------------------------ against sysstat
@needs_sar
@pytest.mark.parametrize("case", ["cgroup-oom-during-loadtest", "quiet-batch-night",
                                  "cpu-openssl-speed"])     # UTC, UTC, Asia/Kolkata (+05:30)
@pytest.mark.parametrize("seconds", [10, 60])
def test_derived_file_prints_what_sar_i_prints_from_the_recorded_one(tmp_path, case, seconds):
    """``sar -A -i N -s START -f 1s-file`` (sysstat's own choice of the
    records nearest every N seconds) prints exactly what ``sar -A`` prints
    from the derived file; ``sadf -d`` reads the derived file silently."""
    name, data = _case_sa(case)
    tz = derive.case_zone(CASES / case)
    sa = safile.read(data, name)
    kept = [r for r in safile.kept_at_interval(sa, seconds) if r.type == safile.R_STATS]
    assert kept and all(r.clock_s % seconds == 0 for r in kept)
    assert all(b.clock_s - a.clock_s == seconds for a, b in zip(kept, kept[1:]))
    recorded, derived = tmp_path / "sa-1s", tmp_path / f"sa-{seconds}s"
    recorded.write_bytes(data)
    derived.write_bytes(safile.at_interval(sa, seconds))
    by_sar = _sysstat(["sar", "-A", "-i", str(seconds), "-s", _clock(kept[0].clock_s), "-f", str(recorded)], tz)
    ours = _sysstat(["sar", "-A", "-f", str(derived)], tz)
    assert ours.returncode == 0 and not ours.stderr
    assert ours.stdout == by_sar.stdout
    rows = _sysstat(["sadf", "-d", str(derived), "--", "-u"], tz)
    assert rows.returncode == 0 and not rows.stderr
    assert len([ln for ln in rows.stdout.splitlines() if not ln.startswith(b"#")]) == len(kept) - 1


def test_the_derived_file_is_the_recorded_header_and_records_byte_for_byte():
    name, data = _case_sa("cgroup-oom-during-loadtest")
    sa = safile.read(data, name)
    assert sa.records[-1].end == len(data) and len(sa.stats()) == 110
    again = safile.read(safile.at_interval(sa, 10), "derived")
    assert again.data[:again.head_end] == data[:sa.head_end]
    kept = safile.kept_at_interval(sa, 10)
    assert [again.data[r.start:r.end] for r in again.records] == [data[r.start:r.end] for r in kept]
    # 14:36:28 to 14:38:18 at 1 s: a record at 14:36:30, 14:36:40 ... 14:38:10
    assert [_clock(r.clock_s) for r in kept][:2] == ["14:36:30", "14:36:40"] and len(kept) == 11


def test_restarts_comments_and_extra_structures_are_walked_and_kept(corpus):
    """sysstat's own test files: a restart, a comment and sysstat 12.0's
    record header without ``extra_next``; records followed by extra
    structures (12.1.7)."""
    data = (corpus / "sysstat" / "binary" / "data-12.0.0").read_bytes()
    sa = safile.read(data, "data-12.0.0")
    assert [r.type for r in sa.records] == [safile.R_RESTART, safile.R_STATS, safile.R_STATS, safile.R_COMMENT]
    assert sa.records[-1].end == len(data)
    kept = safile.kept_at_interval(sa, 600)
    assert [r.type for r in kept if r.type != safile.R_STATS] == [safile.R_RESTART, safile.R_COMMENT]
    extra = (corpus / "sysstat" / "binary" / "data-extra-12.1.7").read_bytes()
    walked = safile.read(extra, "data-extra-12.1.7")
    assert walked.records[-1].end == len(extra)
    assert sorted({r.type for r in walked.records}) == [safile.R_STATS, safile.R_RESTART, 8]


@needs_sar
def test_restart_and_comment_still_printed_by_sar_after_derivation(corpus, tmp_path):
    data = (corpus / "sysstat" / "binary" / "data-12.0.0").read_bytes()
    out = tmp_path / "sa"
    out.write_bytes(safile.at_interval(safile.read(data, "data-12.0.0"), 10))
    printed = _sysstat(["sar", "-u", "-C", "-f", str(out)]).stdout.decode()
    assert "LINUX RESTART" in printed and "COM " in printed


def test_a_file_cut_short_ends_at_its_last_whole_record():
    name, data = _case_sa("cgroup-oom-during-loadtest")
    sa = safile.read(data, name)
    cut = sa.records[40].start + 700
    assert len(safile.read(data[:cut], name).records) == 40
    assert len(safile.read(data[:sa.records[40].end], name).records) == 41


def test_files_it_cannot_walk_are_refused_naming_the_byte(corpus):
    binary = corpus / "sysstat" / "binary"
    with pytest.raises(safile.SaFormatError, match=r"data-ppc-11\.7\.2: byte 0: .*other byte order"):
        safile.read((binary / "data-ppc-11.7.2").read_bytes(), "data-ppc-11.7.2")
    with pytest.raises(safile.SaFormatError, match=r"data-11\.6\.5: byte 2: data file format 0x2173"):
        safile.read((binary / "data-11.6.5").read_bytes(), "data-11.6.5")
    with pytest.raises(safile.SaFormatError, match=r"byte 412: activity 1 \(id 2\) has nr 0"):
        safile.read((binary / "data-12.6.0-file_act-nr-0-err").read_bytes(), "x")
    with pytest.raises(safile.SaFormatError, match="notes: byte 0: not a sysstat data file"):
        safile.read(b"Linux 6.1 (web01) \t11/24/26\n" * 4, "notes")
    with pytest.raises(ValueError, match="dividing a day"):
        safile.kept_at_interval(safile.read((binary / "data-12.0.0").read_bytes()), 7)


def test_a_file_of_one_record_reads_as_no_rows(tmp_path):
    """At 60 s a 100 s recording holds one record: no interval, so no rate
    (sar prints no row); the reader says so instead of stopping."""
    name, data = _case_sa("diskfull-inodes")
    sa = safile.read(data, name)
    one = safile.at_interval(sa, 60)
    assert len(safile.read(one).stats()) == 1
    path = tmp_path / "sa24"
    path.write_bytes(one)
    source = SaBinaryParser.parse(path, ParseOptions())
    assert len(source.metrics) == 0 and not source.warnings


# ---------------------------------------------------------------- whole cases
def _tar(path: Path, members: dict[str, bytes], mtime: float = 1795530988.0) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), mtime
            tar.addfile(info, io.BytesIO(data))
    return path


def _members(path: Path) -> dict[str, tuple[bytes, float]]:
    with tarfile.open(path) as tar:
        return {m.name: (tar.extractfile(m).read(), m.mtime) for m in tar if m.isfile()}


def _folder(tmp_path: Path, members: dict[str, bytes]) -> Path:
    folder = tmp_path / "case"
    folder.mkdir()
    (folder / "truth.toml").write_text('kind = "quiet"\nquiet = true\n')
    _tar(folder / "img-lab-01.tar.xz", members)
    return folder


def test_a_case_keeps_every_other_file_and_its_time(tmp_path):
    name, data = _case_sa("cgroup-oom-during-loadtest")
    folder = _folder(tmp_path, {name: data, "img-lab-01/ps-aux-143648.txt": b"USER PID %CPU\n"})
    out = derive.derived_case(folder, 10, tmp_path / "cache")
    (archive,) = out.iterdir()
    assert archive.name == "img-lab-01.tar.gz"
    members = _members(archive)
    assert members["img-lab-01/ps-aux-143648.txt"] == (b"USER PID %CPU\n", 1795530988.0)
    assert members[name][0] == safile.at_interval(safile.read(data), 10)
    # the cache: the same files give the same folder; other files another
    assert derive.derived_case(folder, 10, tmp_path / "cache") == out
    _tar(folder / "img-lab-01.tar.xz", {name: data, "img-lab-01/ps-aux-143648.txt": b"USER PID %MEM\n"})
    assert derive.derived_case(folder, 10, tmp_path / "cache") != out


def test_a_file_recorded_at_the_interval_replaces_the_derived_one(tmp_path):
    name, data = _case_sa("cgroup-oom-during-loadtest")
    folder = _folder(tmp_path, {name: data})
    sa = safile.read(data)
    at_600 = data[:sa.head_end] + data[sa.records[0].start:sa.records[0].end]
    (folder / "intervals" / "600s" / "img-lab-01").mkdir(parents=True)
    (folder / "intervals" / "600s" / name).write_bytes(at_600)
    assert derive.recorded_intervals(folder) == [600]
    (archive,) = derive.derived_case(folder, 600, tmp_path / "cache").iterdir()
    assert _members(archive)[name][0] == at_600
    (folder / "intervals" / "600s" / "img-lab-01" / "sa25").write_bytes(at_600)
    with pytest.raises(derive.DeriveError, match=r"intervals/600s/img-lab-01/sa25 replaces no sa file"):
        derive.derived_case(folder, 600, tmp_path / "cache")


TOP = "sosreport-img-lab-01-2026-11-24-abcdefg/"


def _sosreport_case(tmp_path, copied: bytes, live: bytes) -> tuple[Path, dict]:
    """A quiet case of one sosreport: ``copied`` as its sa file, and the
    outputs of sos's sar plugin as sar and sadf print ``live``."""
    path = tmp_path / "sa24"
    path.write_bytes(live)
    members = {TOP + "var/log/sysstat/sa24": copied,
               TOP + "sos_commands/sar/sar24": _sysstat(["sar", "-A", "-f", str(path)]).stdout,
               TOP + "sos_commands/sar/sa24.xml": _sysstat(["sadf", "-x", "--", "-A", str(path)]).stdout}
    folder = tmp_path / "case"
    folder.mkdir()
    (folder / "truth.toml").write_text('kind = "quiet"\nquiet = true\n')
    _tar(folder / "sosreport-img-lab-01-2026-11-24-abcdefg.tar.xz", members)
    return folder, members


@needs_sar
def test_a_sosreport_prints_its_sar_output_again_from_the_derived_file(tmp_path):
    """sos's sar plugin ran ``sar -A -f saDD`` and ``sadf -x -- -A saDD``:
    printed again from the derived file; a bundle whose printed output is
    not what those commands print from its own file is refused."""
    _name, data = _case_sa("cgroup-oom-during-loadtest")
    folder, members = _sosreport_case(tmp_path, data, data)
    (archive,) = derive.derived_case(folder, 10, tmp_path / "cache").iterdir()
    got = _members(archive)
    derived = tmp_path / "derived"
    derived.write_bytes(got[TOP + "var/log/sysstat/sa24"][0])
    assert got[TOP + "sos_commands/sar/sar24"][0] == _sysstat(["sar", "-A", "-f", str(derived)]).stdout
    assert got[TOP + "sos_commands/sar/sa24.xml"][0] == _sysstat(["sadf", "-x", "--", "-A", str(derived)]).stdout
    assert got[TOP + "sos_commands/sar/sar24"][0].count(b"\n") < members[TOP + "sos_commands/sar/sar24"].count(b"\n")
    printed = members[TOP + "sos_commands/sar/sar24"]
    first_row = re.search(rb"^(\d\d:\d\d:\d\d +all +)(\d+\.\d\d)", printed, re.M)
    members[TOP + "sos_commands/sar/sar24"] = (printed[:first_row.start(2)] + b"%.2f" % (float(first_row[2]) + 1)
                                               + printed[first_row.end(2):])
    _tar(folder / "sosreport-img-lab-01-2026-11-24-abcdefg.tar.xz", members)
    with pytest.raises(derive.DeriveError, match=r"sos_commands/sar/sar24: `sar -A -f sa24` on the recorded file"):
        derive.derived_case(folder, 10, tmp_path / "cache")


@needs_sar
def test_a_bundle_whose_sar_ran_after_it_copied_the_sa_file_is_derived(tmp_path):
    """sos copies the sa file, then runs sar and sadf on the live one: with
    sadc still writing, their output holds a record more than the copy
    (and averages over it).  The copy's records printed exactly is what
    the bundle must hold; a value changed in them is still refused."""
    name, data = _case_sa("cgroup-oom-during-loadtest")
    sa = safile.read(data, name)
    copied = data[:sa.records[-1].start]               # the copy was made one record before sar ran
    folder, members = _sosreport_case(tmp_path, copied, data)
    (archive,) = derive.derived_case(folder, 10, tmp_path / "cache").iterdir()
    derived = tmp_path / "derived"
    derived.write_bytes(_members(archive)[TOP + "var/log/sysstat/sa24"][0])
    assert _members(archive)[TOP + "sos_commands/sar/sa24.xml"][0] == \
        _sysstat(["sadf", "-x", "--", "-A", str(derived)]).stdout
    xml = members[TOP + "sos_commands/sar/sa24.xml"]
    members[TOP + "sos_commands/sar/sa24.xml"] = re.sub(rb'usr="[0-9.]+"', b'usr="99.99"', xml, count=1)
    _tar(folder / "sosreport-img-lab-01-2026-11-24-abcdefg.tar.xz", members)
    with pytest.raises(derive.DeriveError, match=r"sa24.xml: `sadf -x -- -A sa24` on the recorded file"):
        derive.derived_case(folder, 10, tmp_path / "cache2")
