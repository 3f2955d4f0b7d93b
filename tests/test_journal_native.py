"""The systemd journal read natively: binary files written by the real
``systemd-journal-remote`` from an export stream the test writes (as
``journalctl -o export`` writes it), that stream itself, and the
``journalctl -o json`` / ``json-seq`` / short outputs the real journalctl
prints of the binary file: the same events and findings from each."""
from __future__ import annotations

import json
import lzma
import os
import shutil
import struct
import subprocess
import sys

import pytest

from sarsleuth.errors import InputError
from sarsleuth.inputs.parsers import parse, sniff
from sarsleuth.inputs.parsers.logs import journal_binary, journal_codecs, journal_file

from .conftest import SAMPLES, run_cli

sys.path.insert(0, str(SAMPLES))
import make_journal  # samples/make_journal.py: the export stream, journal-remote

JOURNALCTL = shutil.which("journalctl")
#: The events of the stream, in time order: (kind, pid, process).
EVENTS = [("kernel-boot", None, "kernel"), ("segfault", 1240, "nginx"), ("worker-signal-exit", 1235, "nginx"),
          ("too-many-open-files", 3300, "resizer"), ("oom-invoked", 2301, "php-fpm8.2"),
          ("oom-kill", 2301, "php-fpm8.2"), ("service-failed", 1, "systemd"), ("edac-error", None, "kernel"),
          ("kernel-boot", None, "kernel")]
#: the committed sample's: its long field is no DIMM's error line
SAMPLE_EVENTS = [e for e in EVENTS if e[0] != "edac-error"]


def _remote_or_skip():
    if not os.path.exists(make_journal.REMOTE):
        pytest.skip("systemd-journal-remote is not installed (Debian package systemd-journal-remote)")


@pytest.fixture(scope="session")
def made(tmp_path_factory):
    """The stream, the binary journal journal-remote writes of it, and what
    the real journalctl prints of that file."""
    _remote_or_skip()
    d = tmp_path_factory.mktemp("journal")
    export = d / "web1.export"
    export.write_bytes(make_journal.export_stream(long_message="EDAC MC0: 1 CE memory read error on "
                                                  "CPU_SrcID#0_Ha#0_Chan#1_DIMM#0 " + "x" * 900))
    journal = make_journal.make_journal(export, d / "web1.journal")
    out = {"export": export, "journal": journal}
    if JOURNALCTL:
        for mode, name in (("json", "web1.json"), ("json-seq", "web1.json-seq"), ("short-iso", "web1.iso"),
                           ("short-precise", "web1.precise"), ("short-monotonic", "web1.monotonic")):
            text = subprocess.run([JOURNALCTL, "--file", str(journal), "-o", mode], check=True,
                                  capture_output=True, env={**os.environ, "TZ": "UTC"}).stdout
            (d / name).write_bytes(text)
            out[mode] = d / name
        kernel = subprocess.run([JOURNALCTL, "--file", str(journal), "_TRANSPORT=kernel", "-o", "export"], check=True,
                                capture_output=True).stdout
        (d / "kernel.export").write_bytes(kernel)
        out["kernel-export"] = d / "kernel.export"
    return out


def _events(path):
    ev = parse(path).events
    return [(k, None if p != p or p is None else int(p), proc) for k, p, proc in
            zip(ev["kind"], ev["pid"].astype(object).where(ev["pid"].notna(), None), ev["process"])]


def test_the_binary_file_and_the_stream_sniff_and_read_alike(made):
    assert sniff(made["journal"])[0] == "journal-file"
    assert sniff(made["export"])[0] == "journal-export"
    binary, stream = parse(made["journal"]), parse(made["export"])
    assert (binary.kind, binary.host, binary.tz, binary.records) == ("journal-file", "web1", "UTC", 15)
    assert (stream.kind, stream.host, stream.records) == ("journal-export", "web1", 15)
    assert _events(made["journal"]) == _events(made["export"]) == EVENTS
    for src in (binary, stream):
        ev = src.events
        kill = ev[ev["kind"] == "oom-kill"].iloc[0]
        assert str(kill["timestamp"]) == "2025-11-24 16:30:00.000200+00:00"
        assert kill["uptime"] == pytest.approx(1801.1987)        # _SOURCE_MONOTONIC_TIMESTAMP, the dmesg stamp
        assert kill["level"] == "err" and kill["boot"] == make_journal.BOOT1
        crash = ev[ev["kind"] == "worker-signal-exit"].iloc[0]
        assert (crash["unit"], crash["level"]) == ("nginx.service", "alert")
        assert [b["boot_id"] for b in src.meta["boots"]] == [make_journal.BOOT1, make_journal.BOOT2]
        assert src.meta["boots"][1]["began"] == "2025-11-24T16:59:58.900000+00:00"   # realtime - monotonic
    # the non-UTF-8 name (a binary field in the stream) is read as journalctl shows it
    assert binary.events[binary.events["kind"] == "too-many-open-files"]["message"].iloc[0] == \
        "upload of caf\ufffd.jpg failed: Too many open files"


@pytest.mark.parametrize("variables,args,flags", [
    ({"SYSTEMD_JOURNAL_COMPACT": "0"}, (), 0b1100),                                    # ZSTD, keyed hash
    ({"SYSTEMD_JOURNAL_COMPACT": "0", "SYSTEMD_JOURNAL_KEYED_HASH": "0"}, ("--compress=no",), 0),
])
def test_regular_and_unkeyed_files_read_alike(made, tmp_path, variables, args, flags):
    """The 64-bit layout of files before compact mode (systemd < 252, or
    compact mode turned off) and the Jenkins hash of files before 246."""
    path = make_journal.make_journal(made["export"], tmp_path / "web1.journal", {**os.environ, **variables}, args)
    with open(path, "rb") as fh:
        assert journal_file.read_header(str(path), fh, path.stat().st_size).incompatible == flags
    assert _events(path) == EVENTS


def test_journalctl_json_outputs_give_the_same_events(made):
    if not JOURNALCTL:
        pytest.skip("journalctl is not installed")
    records = [json.loads(ln) for ln in made["json"].read_text().splitlines()]
    (resizer,) = [r for r in records if isinstance(r.get("_COMM"), list)]
    # journalctl writes a non-UTF-8 field as an array of bytes
    assert resizer["_COMM"] == list(b"resiz\xe9r") and resizer["MESSAGE"][:10] == list(b"upload of ")
    for mode in ("json", "json-seq"):
        assert sniff(made[mode])[0] == "journal"
        assert _events(made[mode]) == EVENTS, mode


def test_journalctl_export_of_kernel_lines_is_no_dmesg(made):
    """It was sniffed as dmesg, its times and hosts lost."""
    if not JOURNALCTL:
        pytest.skip("journalctl is not installed")
    assert sniff(made["kernel-export"])[0] == "journal-export"
    src = parse(made["kernel-export"])
    assert src.host == "web1" and src.events["timestamp"].notna().all()
    assert [k for k, _, _ in _events(made["kernel-export"])] == ["kernel-boot", "segfault", "oom-invoked", "oom-kill",
                                                                 "edac-error", "kernel-boot"]


def test_journalctl_short_outputs_are_read(made):
    if not JOURNALCTL:
        pytest.skip("journalctl is not installed")
    # the short outputs print a message that is not UTF-8 as "[54B blob data]": no event of it
    printed = [k for k, _, _ in EVENTS if k != "too-many-open-files"]
    for mode in ("short-iso", "short-precise"):
        assert sniff(made[mode])[0] == "journal", mode
        assert [k for k, _, _ in _events(made[mode])] == printed, mode
    mono = parse(made["short-monotonic"])
    assert sniff(made["short-monotonic"])[0] == "journal"
    kills = mono.events[mono.events["kind"] == "oom-kill"]
    assert list(kills["uptime"]) == [pytest.approx(1801.2002)]   # journalctl prints the receive time's monotonic


def test_analyze_tells_the_same_story_from_each(made):
    findings = {}
    names = ["journal", "export"] + (["json"] if JOURNALCTL else [])
    for name in names:
        proc = run_cli("analyze", made[name], "--format", "json")
        assert proc.returncode == 0, proc.stderr
        doc = json.loads(proc.stdout)
        findings[name] = sorted((f["detector"], f["title"]) for f in doc["findings"])
    assert findings["journal"] == findings["export"] == findings.get("json", findings["journal"])
    assert ("oom-kill", "OOM killer killed 1 process(es): php-fpm8.2 (largest rss 1.76 GiB)") in findings["journal"]


def test_evidence_quotes_the_entry(made):
    proc = run_cli("analyze", made["journal"], "--format", "json")
    doc = json.loads(proc.stdout)
    (kill,) = [f for f in doc["findings"] if f["detector"] == "oom-kill"]
    (ev,) = kill["evidence"][:1]
    # entry 11 of the file: its ENTRY object, printed as journalctl -o short-iso-precise does (UTC)
    assert ev["path"] == str(made["journal"]) and ev["line"] == 11
    assert ev["text"].startswith("2025-11-24T16:30:00.000300+0000 web1 kernel: Out of memory: Killed process 2301")
    if JOURNALCTL:       # the very line journalctl prints of that entry
        printed = subprocess.run([JOURNALCTL, "--file", str(made["journal"]), "-o", "short-iso-precise"], check=True,
                                 capture_output=True, env={**os.environ, "TZ": "UTC"}).stdout.decode()
        assert ev["text"] in printed.splitlines()
    proc = run_cli("analyze", made["export"], "--format", "json")
    (kill,) = [f for f in json.loads(proc.stdout)["findings"] if f["detector"] == "oom-kill"]
    ev = kill["evidence"][0]
    lines = made["export"].read_bytes().split(b"\n")
    assert lines[ev["line"] - 1].decode() == ev["text"] and ev["text"].startswith("MESSAGE=Out of memory: Killed")


def test_a_compressed_field_is_read_and_says_what_it_needs(made, monkeypatch):
    with open(made["journal"], "rb") as fh:
        h = journal_file.read_header(str(made["journal"]), fh, made["journal"].stat().st_size)
    assert h.incompatible & journal_file.INCOMPATIBLE_COMPACT and h.incompatible & 0b1000     # compact, ZSTD
    ev = parse(made["journal"]).events
    edac = ev[ev["message"].str.startswith("EDAC MC0", na=False)]
    assert len(edac) == 0 or edac["message"].iloc[0].endswith("x" * 900)
    with journal_file.JournalFile(made["journal"]) as jf:
        messages = [e.fields.get(b"MESSAGE", b"") for e in jf.entries()]
    assert any(m.endswith(b"x" * 900) for m in messages)       # written ZSTD-compressed, read back whole
    monkeypatch.setitem(sys.modules, "zstandard", None)
    monkeypatch.setitem(sys.modules, "compression", None)
    src = parse(made["journal"])
    (warning,) = [w for w in src.warnings if "ZSTD" in w]
    assert warning.startswith(f"{made['journal']} (byte ") and "install the 'zstd' extra" in warning
    # the compressed field is the DIMM's error line: without zstd its event is left out, the rest is read
    assert len(src.events) == len(EVENTS) - 1 and "edac-error" not in set(src.events["kind"])


def test_xz_and_lz4_fields_as_systemd_writes_them():
    """systemd 252 writes ZSTD only (no way to choose XZ or LZ4 in this
    build): the other two are checked on payloads made the way
    compress.c makes them, an XZ stream without check, and the size as a
    little-endian 64-bit number before one LZ4 block."""
    value = b"MESSAGE=" + b"segfault at 0 ip 0 sp 0 error 4 " * 40
    xz = lzma.compress(value, format=lzma.FORMAT_XZ, check=lzma.CHECK_NONE)
    assert journal_codecs.decompressed(1, xz) == value
    lz4_block = pytest.importorskip("lz4.block", reason="lz4 (the lz4 extra) is in the test extra")
    lz4 = struct.pack("<Q", len(value)) + lz4_block.compress(value, store_size=False)
    assert journal_codecs.decompressed(2, lz4) == value


def test_a_truncated_copy_yields_its_first_entries(made, tmp_path):
    data = made["journal"].read_bytes()
    offsets = [e.offset for e in journal_file.JournalFile(made["journal"]).entries()]
    cut = tmp_path / "cut.journal"
    cut.write_bytes(data[:offsets[9] + 40])            # inside the tenth entry
    src = parse(cut)
    assert [k for k, _, _ in _events(cut)] == [k for k, _, _ in EVENTS[:5]]    # up to the kill's first line
    assert any(w.startswith(f"{cut} (byte ") and "cut short" in w for w in src.warnings)
    proc = run_cli("analyze", cut, "--format", "json")
    assert proc.returncode == 0 and "cut short" in proc.stderr


def test_garbage_with_the_magic_is_one_line_exit_2(tmp_path):
    garbage = tmp_path / "system.journal"
    garbage.write_bytes(journal_file.MAGIC + bytes(8) + bytes((i * 37 + 11) % 256 for i in range(4096)))
    assert sniff(garbage)[0] == "journal-file"
    proc = run_cli("analyze", garbage)
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert f"{garbage} (byte 16): not a systemd journal file (state" in line and "Traceback" not in proc.stderr
    newer = tmp_path / "newer.journal"
    data = bytearray((SAMPLES / "journal" / "web1.journal").read_bytes())
    data[12:16] = struct.pack("<I", struct.unpack_from("<I", data, 12)[0] | 1 << 9)
    newer.write_bytes(bytes(data))
    with pytest.raises(InputError, match=r"\(byte 12\): a systemd journal with incompatible flags 0x21c"):
        parse(newer)


def test_a_text_that_merely_holds_the_magic_is_no_journal(tmp_path):
    note = tmp_path / "notes.txt"
    note.write_text("LPKSHHRH is how a journal file starts.\nThe header follows.\n")
    assert sniff(note)[0] != "journal-file"
    assert not journal_binary.looks_like_journal_file(note.read_bytes())


def test_a_dmesg_with_key_value_lines_is_no_export(tmp_path):
    dmesg = tmp_path / "dmesg"
    dmesg.write_text(
        '[   12.345678] audit: type=1400 audit(1764000012.340:2): apparmor="STATUS" operation="profile_load" '
        'profile="unconfined" name="nvidia_modprobe" pid=612 comm="apparmor_parser"\n'
        "[   13.001122] EXT4-fs (sda1): mounted filesystem with ordered data mode. Quota mode: none.\n"
        "[   13.500000] IPv6: ADDRCONF(NETDEV_CHANGE): eth0: link becomes ready\n")
    assert sniff(dmesg)[0] == "dmesg"
    export_like = tmp_path / "env.txt"     # KEY=value lines without the journal's fields
    export_like.write_text("PATH=/usr/bin\nHOME=/root\nLANG=C.UTF-8\n\nSHELL=/bin/bash\n")
    assert sniff(export_like)[0] != "journal-export"


def test_a_folder_of_two_hosts_is_one_source_each(made, tmp_path):
    _remote_or_skip()
    entries = make_journal.export_stream().split(b"\n\n")
    half = len(entries) // 2
    web1 = tmp_path / "var" / "log" / "journal" / make_journal.MACHINE
    web1.mkdir(parents=True)
    first, second = tmp_path / "a.export", tmp_path / "b.export"
    first.write_bytes(b"\n\n".join(entries[:half + 3]) + b"\n\n")      # three entries in both files
    second.write_bytes(b"\n\n".join(entries[half:]))
    make_journal.make_journal(first, web1 / "system@0001.journal")
    make_journal.make_journal(second, web1 / "system.journal")
    web2 = tmp_path / "var" / "log" / "journal" / "b0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
    web2.mkdir()
    other = tmp_path / "c.export"
    other.write_bytes(make_journal.export_stream("web2"))
    make_journal.make_journal(other, web2 / "system.journal")
    proc = run_cli("analyze", tmp_path / "var", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    sources = sorted((s["kind"], s["host"], s["records"]) for s in doc["sources"])
    assert sources == [("journal-file", "web1", 14), ("journal-file", "web2", 14)]
    kills = [f for f in doc["findings"] if f["detector"] == "oom-kill"]
    assert sorted(f["host"] for f in kills) == ["web1", "web2"]
    assert all(f["metrics"].get("kills", 1) == 1 for f in kills)
    (web1_src,) = [s for s in doc["sources"] if s["host"] == "web1"]
    assert web1_src["path"] == f"{web1}/ (2 files)"


# --- journal JSON whose fields are arrays, and times no clock holds ------------------------------

def _json_entry(**fields) -> str:
    base = {"__REALTIME_TIMESTAMP": "1764001800000200", "_BOOT_ID": make_journal.BOOT1, "_TRANSPORT": "kernel",
            "PRIORITY": "3", "_SOURCE_MONOTONIC_TIMESTAMP": "1801198700",
            "MESSAGE": make_journal.OOM[3]}
    base.update(fields)
    return json.dumps(base)


def test_json_fields_written_as_arrays_are_read(tmp_path):
    """journalctl writes any field holding binary or non-UTF-8 bytes as an
    array of byte values, and a field given twice as an array of values:
    the host, the identifier, the command and the message alike."""
    path = tmp_path / "journal.json"
    path.write_text("\n".join([
        _json_entry(_HOSTNAME=list(b"web\xff1")),
        _json_entry(__REALTIME_TIMESTAMP="1764001900000000", _TRANSPORT="stdout", _HOSTNAME=["web1", "web1b"],
                    SYSLOG_IDENTIFIER=list(b"resiz\xe9r"), _COMM=list(b"resiz\xe9r"), _PID="3300",
                    MESSAGE=list(b"upload failed: Too many open files")),
        _json_entry(__REALTIME_TIMESTAMP="1764002000000000", _TRANSPORT="syslog", _HOSTNAME="web1",
                    SYSLOG_IDENTIFIER=None, _COMM=[list(b"nginx"), "nginx2"], _PID="1235",
                    MESSAGE="worker process 1240 exited on signal 11 (core dumped)"),
    ]) + "\n")
    proc = run_cli("analyze", path, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    ev = parse(path).events
    assert list(ev["host"]) == ["web\ufffd1", "web1", "web1"]
    assert list(ev["process"]) == ["php-fpm8.2", "resiz\ufffdr", "nginx"]
    assert list(ev["kind"]) == ["oom-kill", "too-many-open-files", "worker-signal-exit"]


def test_json_seq_records_are_read(tmp_path):
    path = tmp_path / "journal.json-seq"
    path.write_text("\x1e" + _json_entry(_HOSTNAME="web1") + "\n")
    assert sniff(path)[0] == "journal"
    assert list(parse(path).events["kind"]) == ["oom-kill"]


def test_times_no_clock_holds_are_said_and_kept_untimed(tmp_path):
    """A journal time in the year 10,000 (or at the epoch's zero) and a
    kernel uptime of 99,999,999,999 s: warnings and notes, never an
    internal error."""
    path = tmp_path / "journal.json"
    path.write_text("\n".join([
        _json_entry(_HOSTNAME="web1", __REALTIME_TIMESTAMP="253402300800000000"),
        _json_entry(_HOSTNAME="web1", __REALTIME_TIMESTAMP="0", MESSAGE=make_journal.OOM[0]),
        _json_entry(_HOSTNAME="web1", _SOURCE_MONOTONIC_TIMESTAMP="99999999999000000",
                    MESSAGE="nginx[1240]: segfault at 18 ip 000055d0c4a1b2c3 sp 00007ffc5e1d2a40 error 4 in "
                            "nginx[55d0c4a00000+e8000]"),
    ]) + "\n")
    dmesg = tmp_path / "dmesg"
    dmesg.write_text("[99999999999.000000] nginx[1240]: segfault at 18 ip 000055d0c4a1b2c3 sp 00007ffc5e1d2a40 "
                     "error 4 in nginx[55d0c4a00000+e8000]\n")
    proc = run_cli("analyze", path, dmesg, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert f"{path}: 2 entries with a time outside the years 1970-9999 (kept without a time)" in doc["warnings"]
    assert any(n.startswith(f"{dmesg}: 1 line(s) with a kernel uptime beyond a century") for n in doc["notes"])
    ev = parse(path).events
    assert ev["timestamp"].isna().tolist() == [True, True, False]
    export = tmp_path / "web.export"
    export.write_bytes(make_journal.entry(0, 5, make_journal.BOOT1, "web1", make_journal.OOM[3])
                       .replace(b"__REALTIME_TIMESTAMP=1764000000000000", b"__REALTIME_TIMESTAMP=253402300800000000"))
    src = parse(export)
    assert src.events["timestamp"].isna().all()
    assert any("1 entry with a time outside the years 1970-9999" in w and f"{export}:" in w for w in src.warnings)


# --- unclean shutdowns, damage, and what the journal anchors -----------------------------------

def test_entries_written_but_not_linked_are_read(tmp_path):
    """A ``.journal~`` of an unclean shutdown: its entries are written, the
    header's entry array and counts are not (journald links an entry into
    the index after writing it); the walk of the objects still reads them."""
    data = bytearray((SAMPLES / "journal" / "web1.journal").read_bytes())
    data[16] = 1                                        # state: online
    struct.pack_into("<Q", data, 176, 0)                # entry_array_offset: nothing linked
    struct.pack_into("<Q", data, 152, 0)                # n_entries
    unclean = tmp_path / "system@0005fb0a1b2c3d4e-5f6a7b8c9d0e1f2a.journal~"
    unclean.write_bytes(bytes(data))
    assert sniff(unclean)[0] == "journal-file"
    whole = parse(SAMPLES / "journal" / "web1.journal")
    src = parse(unclean)
    assert src.records == whole.records == 1314 and len(src.events) == len(whole.events) == len(SAMPLE_EVENTS)
    assert src.meta["states"] == {"online": 1}


def test_a_partly_overwritten_file_reads_around_the_damage(tmp_path):
    data = bytearray((SAMPLES / "journal" / "web1.journal").read_bytes())
    with journal_file.JournalFile(SAMPLES / "journal" / "web1.journal") as jf:
        offsets = [e.offset for e in jf.entries()]
    start, end = offsets[20], offsets[40]
    data[start:end] = bytes((k * 131 + 7) % 251 + 1 for k in range(end - start))    # no zero, no object
    struct.pack_into("<Q", data, 176, 0)                                               # and the index lost
    damaged = tmp_path / "system.journal"
    damaged.write_bytes(bytes(data))
    src = parse(damaged)
    assert any(w.startswith(f"{damaged} (byte {start}): damaged: no journal object") for w in src.warnings)
    # entries 21 to 40 are gone; later ones pointing to fields written among them keep their other fields
    assert src.records == 1314 - 20
    assert f"{damaged} (byte {end}): an entry points to fields that are not there (overwritten): those are left " \
        "out, the entries kept" in src.warnings
    assert list(src.events["kind"]) == [k for k, _, _ in SAMPLE_EVENTS]     # the damage hit routine lines only


def test_a_dmesg_is_anchored_by_the_journal_of_its_boot(made, tmp_path):
    dmesg = tmp_path / "dmesg"
    # the kernel's stamps of the kill's lines (the journal keeps them as _SOURCE_MONOTONIC_TIMESTAMP)
    dmesg.write_text("".join(f"[ {1801.1985 + k * 0.0001:.6f}] {line}\n" for k, line in enumerate(make_journal.OOM)))
    proc = run_cli("analyze", made["journal"], dmesg, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert any(n.startswith(f"{dmesg}: dmesg aligned to wall clock via matching kernel lines in {made['journal']}")
               for n in doc["notes"])
    (kill,) = [f for f in doc["findings"] if f["detector"] == "oom-kill"]
    assert kill["start"].startswith("2025-11-24T16:30:00")
