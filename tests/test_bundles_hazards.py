"""Archive members that could do harm are refused with a warning naming
the member; the rest of the archive is still read; nothing is written."""
from __future__ import annotations

import gzip
import io
import json
import tarfile
import zipfile
from pathlib import Path

import pytest

from sarsleuth.inputs.bundles.archive import members
from tests.conftest import run_cli

#: a syslog line as rsyslog writes it (traditional format)
GOOD = (b"May  6 15:04:13 web07 kernel: Out of memory: Killed process 4242 (nginx) total-vm:8123456kB, "
        b"anon-rss:7823456kB, file-rss:0kB, shmem-rss:0kB\n")


def _tar_with(tmp_path: Path, hazard: tarfile.TarInfo, data: bytes = b"") -> Path:
    path = tmp_path / "bundle.tar"
    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as tf:
        tf.addfile(hazard, io.BytesIO(data) if data else None)
        good = tarfile.TarInfo("var/log/messages")
        good.size = len(GOOD)
        tf.addfile(good, io.BytesIO(GOOD))
    return path


def _info(name, kind=tarfile.REGTYPE, link="", size=0) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.size = kind, link, size
    return info


HAZARDS = [
    (_info("../../etc/cron.d/evil", size=4), b"boom", "path traversal"),
    (_info("/etc/cron.d/evil", size=4), b"boom", "path traversal"),
    (_info("var/log/../../../evil", size=4), b"boom", "path traversal"),
    (_info("var/log/shadow", tarfile.SYMTYPE, "../../../etc/shadow"), b"", "link pointing out"),
    (_info("var/log/passwd", tarfile.SYMTYPE, "/etc/passwd"), b"", "link pointing out"),
    (_info("var/log/hard", tarfile.LNKTYPE, "../etc/passwd"), b"", "hard link pointing out"),
    (_info("dev/sda", tarfile.BLKTYPE), b"", "device file"),
    (_info("dev/null", tarfile.CHRTYPE), b"", "device file"),
    (_info("var/log/pipe", tarfile.FIFOTYPE), b"", "named pipe"),
]


@pytest.mark.parametrize("hazard,data,reason", HAZARDS, ids=[h[0].name + ":" + h[2] for h in HAZARDS])
def test_tar_hazard_is_refused_and_named(tmp_path, hazard, data, reason):
    path = _tar_with(tmp_path, hazard, data)
    warnings: list = []
    got = [(m.name, m.open().read()) for m in members(path, str(path), warnings)]
    assert got == [("var/log/messages", GOOD)]
    assert len(warnings) == 1
    assert f"member {hazard.name!r} refused: {reason}" in warnings[0] and warnings[0].startswith(str(path))


def test_links_inside_the_tree_are_kept_as_links_not_followed(tmp_path):
    path = _tar_with(tmp_path, _info("sosreport-x/etc/localtime", tarfile.SYMTYPE,
                                     "../usr/share/zoneinfo/Europe/Paris"))
    warnings: list = []
    got = {m.name: m.link for m in members(path, str(path), warnings)}
    assert got == {"sosreport-x/etc/localtime": "../usr/share/zoneinfo/Europe/Paris", "var/log/messages": None}
    assert warnings == []


def test_member_claiming_an_absurd_size_is_refused(tmp_path):
    # a header claiming 1 PB, as a hostile or corrupted archive would; no
    # data follows it, so the stream ends there
    huge = _info("var/log/messages.1", size=1 << 50)
    path = tmp_path / "absurd.tar"
    good = _info("var/log/messages", size=len(GOOD))
    with open(path, "wb") as fh:
        fh.write(good.tobuf(tarfile.GNU_FORMAT) + GOOD + b"\0" * (512 - len(GOOD) % 512))
        fh.write(huge.tobuf(tarfile.GNU_FORMAT) + b"\0" * 4096)
    warnings: list = []
    got = [m.name for m in members(path, str(path), warnings)]
    assert got == ["var/log/messages"]
    assert warnings == [f"{path}: member 'var/log/messages.1' refused: claims an absurd size (1125899906842624 "
                        "bytes, more than the 64 GiB no real member reaches); the archive is not read past it"]


def test_zip_hazards_are_refused(tmp_path):
    path = tmp_path / "bundle.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("../evil.sh", b"boom")
        link = zipfile.ZipInfo("var/log/shadow")
        link.external_attr = (0o120777 << 16)
        zf.writestr(link, b"/etc/shadow")
        dev = zipfile.ZipInfo("dev/sda")
        dev.external_attr = (0o060644 << 16)
        zf.writestr(dev, b"")
        zf.writestr("var/log/messages", GOOD)
    warnings: list = []
    got = [m.name for m in members(path, str(path), warnings)]
    assert got == ["var/log/messages"]
    assert [w.split(": member ")[1] for w in warnings] == [
        "'../evil.sh' refused: path traversal (the name leads out of the archive's tree)",
        "'var/log/shadow' refused: link pointing out of the archive (/etc/shadow)",
        "'dev/sda' refused: device file"]


def test_zip_member_claiming_an_absurd_size_is_refused(tmp_path):
    path = tmp_path / "bomb.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("var/log/messages", GOOD)
        zf.writestr("var/log/syslog", b"x")
    raw = bytearray(path.read_bytes())
    # the central directory entry of the second member claims 2^40 bytes (zip64-free field at +24)
    central = raw.rfind(b"PK\x01\x02")
    raw[central + 24:central + 28] = (0xFFFFFFF0).to_bytes(4, "little")
    path.write_bytes(bytes(raw))
    warnings: list = []
    from sarsleuth.inputs.bundles import layout
    limit = layout.layout()["archives"]["max_member_bytes"]
    layout.layout()["archives"]["max_member_bytes"] = 1 << 30     # a 4 GiB claim is absurd at this bound
    try:
        got = [m.name for m in members(path, str(path), warnings)]
    finally:
        layout.layout()["archives"]["max_member_bytes"] = limit
    assert got == ["var/log/messages"]
    assert warnings == [f"{path}: member 'var/log/syslog' refused: claims an absurd size (4294967280 bytes, "
                        "more than the 1 GiB no real member reaches)"]


def test_analyze_warns_names_the_member_and_writes_nothing(tmp_path):
    path = _tar_with(tmp_path, _info("../../evil", size=4), b"boom")
    before = sorted(p.name for p in tmp_path.iterdir())
    ran = run_cli("analyze", path, "--format", "json")
    assert ran.returncode == 0, ran.stderr
    assert ran.stderr == (f"sarsleuth: warning: skipped {path}!../../evil: refused: path traversal (the name "
                          "leads out of the archive's tree)\n")
    assert json.loads(ran.stdout)["skipped"] == [{"path": f"{path}!../../evil", "reason": "refused: path traversal "
                                                  "(the name leads out of the archive's tree)"}]
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert not (tmp_path.parent / "evil").exists()


def test_damaged_archive_keeps_what_was_read(tmp_path):
    path = tmp_path / "cut.tar"
    good = _info("var/log/messages", size=len(GOOD))
    second = _info("var/log/syslog", size=100000)
    with open(path, "wb") as fh:
        fh.write(good.tobuf(tarfile.GNU_FORMAT) + GOOD + b"\0" * (512 - len(GOOD) % 512))
        fh.write(second.tobuf(tarfile.GNU_FORMAT) + b"y" * 1000)       # cut short
    ran = run_cli("analyze", path, "--format", "json")
    assert ran.returncode == 0, ran.stderr
    assert "members before it were read" in ran.stderr
    assert "oom-kill" in ran.stdout


# --------------------------------------------------------------------------------------------
# Limits: each refusal names the member and the limit, also when nothing else is left
# --------------------------------------------------------------------------------------------

def _tar_bytes(members: dict) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_an_archive_nested_past_the_depth_limit_is_named_with_the_limit(tmp_path):
    """Four archives inside the top one: the three the limit allows are
    read, the fourth is refused by name (it was handed on as a file no
    parser knows, and the run said only "no input files")."""
    from sarsleuth.inputs.bundles.layout import layout
    assert layout()["archives"]["max_depth"] == 3
    inner = _tar_bytes({"var/log/messages": GOOD})
    for name in ("d.tar", "c.tar", "b.tar", "a.tar"):
        inner = _tar_bytes({name: inner})
    path = tmp_path / "nested.tar"
    path.write_bytes(inner)
    ran = run_cli("analyze", path)
    assert ran.returncode == 2
    assert ran.stderr == (f"sarsleuth: no usable input: {path}!a.tar!b.tar!c.tar!d.tar: refused: an archive nested "
                          "deeper than the 3 levels of archives inside an archive that are read; not read\n")
    # one level less is read
    path.write_bytes(_tar_bytes({"a.tar": _tar_bytes({"b.tar": _tar_bytes({"c.tar": _tar_bytes(
        {"var/log/messages": GOOD})})})}))
    ran = run_cli("analyze", path, "--year", "2014", "--format", "json")
    assert ran.returncode == 0, ran.stderr
    assert [s["path"] for s in json.loads(ran.stdout)["sources"]] == [f"{path}!a.tar!b.tar!c.tar!var/log/messages"]


def test_a_lone_member_claiming_more_than_the_size_cap_is_named_with_the_cap(tmp_path):
    path = tmp_path / "absurd.tar"
    with open(path, "wb") as fh:
        fh.write(_info("var/log/messages", size=1 << 50).tobuf(tarfile.GNU_FORMAT) + b"\0" * 4096)
    ran = run_cli("analyze", path)
    assert (ran.returncode, ran.stderr) == (2, f"sarsleuth: no usable input: {path}!var/log/messages: refused: "
                                               "claims an absurd size (1125899906842624 bytes, more than the 64 GiB "
                                               "no real member reaches); the archive is not read past it\n")


def test_a_member_expanding_past_the_spool_limit_is_named_with_the_limit(tmp_path, monkeypatch):
    """A member is copied (decompressed from the archive's stream) up to
    the spool limit: one whose header says it is bigger is refused by name
    and limit before a byte is copied; the other members are read.  The
    limit is 8 GiB: lowered to 1 MiB here."""
    from sarsleuth.inputs.bundles.layout import layout
    monkeypatch.setitem(layout()["archives"], "max_spool_bytes", 1 << 20)
    big = GOOD * ((2 << 20) // len(GOOD))            # 2 MiB of a log: 16 KB compressed
    path = tmp_path / "var-log.tar.gz"
    path.write_bytes(gzip.compress(_tar_bytes({"var/log/messages": big})))
    why = (f"refused: {len(big)} bytes, more than 1 MiB, the most a member is copied to be read (max_spool_bytes); "
           "not read")
    ran = run_cli("analyze", path)
    assert (ran.returncode, ran.stderr) == (2, f"sarsleuth: no usable input: {path}!var/log/messages: {why}\n")
    path.write_bytes(gzip.compress(_tar_bytes({"var/log/messages": big, "var/log/kern.log": GOOD})))
    ran = run_cli("analyze", path, "--year", "2014", "--format", "json")
    assert ran.returncode == 0 and ran.stderr == f"sarsleuth: warning: skipped {path}!var/log/messages: {why}\n"
    doc = json.loads(ran.stdout)
    assert [s["path"] for s in doc["sources"]] == [f"{path}!var/log/kern.log"]
    # a zip inside an archive is copied whole to be read: the same limit, before a byte is copied
    zipped = io.BytesIO()
    with zipfile.ZipFile(zipped, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("var/log/messages", big)
    path.write_bytes(gzip.compress(_tar_bytes({"nodes/web07.zip": zipped.getvalue() + b"\0" * (2 << 20)})))
    ran = run_cli("analyze", path)
    assert (ran.returncode, ran.stderr) == (2, f"sarsleuth: no usable input: {path}!nodes/web07.zip: refused: a zip "
                                               f"archive of {len(zipped.getvalue()) + (2 << 20)} bytes inside an "
                                               "archive, larger than the 1 MiB copied to be read; not read\n")


def test_members_past_the_cap_of_one_input_are_refused_with_the_cap(tmp_path, monkeypatch):
    """An archive of more members than any support bundle holds (200,000;
    lowered to 40 here): a tar is read up to the cap, nested archives
    counted in, and the rest refused once, naming the cap; a zip whose
    directory lists more is refused before its directory is read (zipfile
    holds 600 bytes an entry: 300,000 empty members took 408 MB)."""
    from sarsleuth.inputs.bundles.layout import layout
    monkeypatch.setitem(layout()["archives"], "max_members", 40)
    logs = {f"var/log/app/{i:03d}.log": b"" for i in range(30)}
    logs["var/log/messages"] = GOOD
    inner = _tar_bytes({f"node/{i:03d}.txt": b"" for i in range(20)})
    path = tmp_path / "flood.tar"
    path.write_bytes(_tar_bytes({**logs, "var/log/inner.tar": inner}))
    ran = run_cli("analyze", path, "--year", "2014", "--format", "json")
    assert ran.returncode == 0, ran.stderr
    doc = json.loads(ran.stdout)
    assert [s["path"] for s in doc["sources"]] == [f"{path}!var/log/messages"]
    cap = ("refused: more than 40 members in one input (max_members); the members from there on are not read")
    assert {"path": f"{path}!var/log/inner.tar", "reason": cap} in doc["skipped"]
    # 31 of the top tar, the nested tar itself, 8 of its members: 40
    assert sum(s["path"].startswith(f"{path}!var/log/inner.tar!node/") for s in doc["skipped"]) == 8
    zipped = tmp_path / "flood.zip"
    with zipfile.ZipFile(zipped, "w") as zf:
        for i in range(41):
            zf.writestr(f"var/log/app/{i:03d}.log", GOOD)
    ran = run_cli("analyze", zipped)
    assert (ran.returncode, ran.stderr) == (2, f"sarsleuth: no usable input: {zipped}: refused: a zip of 41 members, "
                                               "more than the 40 read from one input (max_members); not read\n")


@pytest.mark.parametrize("entries", [3, 70_000])
def test_a_zip_says_its_members_from_its_end_records(tmp_path, entries):
    """The count of the end of central directory record, and zip64's past
    65,535 members (APPNOTE 4.3.14-16), read without the directory."""
    from sarsleuth.inputs.bundles.archive import zip_entries
    path = tmp_path / "n.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for i in range(entries):
            zf.writestr(f"{i}", b"")
    with open(path, "rb") as fh:
        assert zip_entries(fh) == entries
    assert zip_entries(io.BytesIO(b"PK\x03\x04 not a whole zip")) is None
