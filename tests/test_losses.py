"""Nothing lost, nothing silently wrong: the attacks of a hostile or unlucky
user, each replayed on the command line (in process) with inputs written
here the way the programs write them.  Clock attacks live in
``test_clocks_attacks.py``; attacks already covered elsewhere are named in
the docstring of the nearest test here."""
from __future__ import annotations

import errno
import gzip
import io
import json
import lzma
import os
import sys
import threading
from pathlib import Path

import pytest

from tests.conftest import run_cli

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def one_line(proc) -> str:
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    return lines[0]


def segfault(n: int, minute: int = 14) -> str:
    """A kernel segfault line as rsyslog writes it (``show_signal_msg`` of 4.x+)."""
    pid = 16000 + 37 * n
    return (f"Mar 12 03:{minute:02d}:{n % 60:02d} web7 kernel: [{86000 + n}.{114512 + n:06d}] "
            f"php-fpm[{pid}]: segfault at 0 ip 00007f3a2c1e{n:04x} sp 00007ffd3a9c1e80 error 4 "
            f"in libphp.so[7f3a2c1a0000+9b000]")


def noise(n: int) -> str:
    return f"Mar 12 03:{n % 60:02d}:{n % 60:02d} web7 CRON[{3000 + n}]: (root) CMD (debian-sa1 1 1)"


def segfault_count(doc) -> int:
    found = [f for f in doc["findings"] if f["detector"] == "segfault"]
    return sum(int(f["refs"].get("count", 0) or 0) for f in found) or len(found)


def _json(proc) -> dict:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


# --- duplicates ----------------------------------------------------------------------------------

def test_debian_syslog_and_kern_log_count_each_segfault_once_and_json_says_how_many_merged(tmp_path):
    """100 processes segfault once each; Debian's rsyslog writes every kernel
    line to both syslog and kern.log.  (API-level variants:
    test_duplicates.py, which also covers a file given twice and an
    overlapping excerpt.)"""
    kernel = [segfault(n) for n in range(100)]
    (tmp_path / "kern.log").write_text("\n".join(kernel) + "\n")
    mixed = []
    for n, line in enumerate(kernel):
        mixed += [noise(n), line]
    (tmp_path / "syslog").write_text("\n".join(mixed) + "\n")
    doc = _json(run_cli("analyze", tmp_path, "--year", "2024", "--format", "json"))
    seg = [f for f in doc["findings"] if f["detector"] == "segfault"]
    assert seg, doc["findings"]
    text = json.dumps(seg)
    assert "200" not in [w.strip(",.") for w in text.split()]
    assert any("100" in f["title"] for f in seg), [f["title"] for f in seg]
    assert doc["merged"]["events"] == 100
    assert any("100 log event(s) appeared in more than one file" in n for n in doc["notes"])


def test_same_file_twice_on_the_command_line_counts_once(tmp_path):
    log = tmp_path / "kern.log"
    log.write_text("\n".join(segfault(n) for n in range(30)) + "\n")
    once = _json(run_cli("analyze", log, "--year", "2024", "--format", "json"))
    twice = _json(run_cli("analyze", log, log, str(log).replace("/kern.log", "/./kern.log"),
                          "--year", "2024", "--format", "json"))
    assert [f["title"] for f in twice["findings"]] == [f["title"] for f in once["findings"]]
    assert len(twice["sources"]) == 1
    assert any("read once" in n for n in twice["notes"])


# --- silent loss ---------------------------------------------------------------------------------

def test_no_child_process_can_cut_a_scan(tmp_path, monkeypatch):
    """The grep child is gone (test_logs_damage.py::test_the_scan_starts_no_child_process);
    here through analyze: spawning anything at all fails loudly."""
    import subprocess

    def refuse(*a, **k):
        raise AssertionError(f"child process started: {a[:1]}")
    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(os, "posix_spawn", refuse, raising=False)
    monkeypatch.setattr(os, "fork", refuse)
    log = tmp_path / "messages"
    log.write_text("\n".join(segfault(n) for n in range(50)) + "\n")
    with gzip.open(tmp_path / "kern.log.1.gz", "wt") as gz:
        gz.write("\n".join(segfault(n, minute=20) for n in range(50)) + "\n")
    doc = _json(run_cli("analyze", tmp_path, "--year", "2024", "--format", "json"))
    assert sum(s["records"] for s in doc["sources"]) == 100


@pytest.mark.parametrize("ext, compress", [("gz", gzip.compress), ("xz", lzma.compress)])
def test_half_downloaded_log_through_analyze_keeps_what_precedes_the_damage(tmp_path, ext, compress):
    """Parser-level: test_logs_damage.py::test_half_downloaded_compressed_log_keeps_everything_before_the_cut."""
    lines = [segfault(n) if n % 10 == 0 else noise(n) for n in range(20_000)]
    data = compress(("\n".join(lines) + "\n").encode())
    cut = data[: len(data) * 3 // 4]
    (tmp_path / f"kern.log.{ext}").write_bytes(cut)
    # what the standard tool recovers before it stops at the damage
    import subprocess
    readable = subprocess.run([{"gz": "gzip", "xz": "xz"}[ext], "-dc"], input=cut, capture_output=True).stdout
    doc = _json(run_cli("analyze", tmp_path / f"kern.log.{ext}", "--year", "2024", "--format", "json"))
    [src] = doc["sources"]
    assert src["records"] == readable.count(b"\n") + (not readable.endswith(b"\n"))
    said = " ".join(src["warnings"])
    assert "cut short" in said and f"{len(readable)} bytes" in said
    assert any("cut short" in w for w in doc["warnings"])


def test_a_log_cut_at_three_quarters_says_what_is_unknown_and_keeps_the_rest(tmp_path):
    """A plain log cut mid-line: the partial last line is kept and said to be
    cut (nothing tells how much followed it)."""
    lines = [segfault(n) if n % 10 == 0 else noise(n) for n in range(4000)]
    data = ("\n".join(lines) + "\n").encode()
    cut = data[: len(data) * 3 // 4]
    (tmp_path / "kern.log").write_bytes(cut)
    doc = _json(run_cli("analyze", tmp_path / "kern.log", "--year", "2024", "--format", "json"))
    [src] = doc["sources"]
    assert src["records"] == cut.count(b"\n") + 1
    assert any("cut" in w or "no line end" in w or "last line" in w for w in src["warnings"]), src["warnings"]


def test_cr_only_endings_give_every_event_through_analyze(tmp_path):
    """Parser-level with 2,000 lines: test_logs_damage.py::test_line_endings."""
    (tmp_path / "kern.log").write_bytes(("\r".join(segfault(n) for n in range(200)) + "\r").encode())
    doc = _json(run_cli("analyze", tmp_path / "kern.log", "--year", "2024", "--format", "json"))
    assert doc["sources"][0]["records"] == 200
    assert any("200" in f["title"] for f in doc["findings"] if f["detector"] == "segfault")


def test_a_bom_keeps_the_date_and_host_of_a_sar_text(tmp_path):
    """Parser-level: test_sar_text.py::test_line_endings_and_bom_keep_date_host_and_lines."""
    rows = ["Linux 5.15.0-91-generic (db01) \t11/21/2026 \t_x86_64_\t(4 CPU)", "",
            "10:00:01 AM     CPU     %user     %nice   %system   %iowait    %steal     %idle"]
    rows += [f"10:{m:02d}:01 AM     all      2.00      0.00      1.00      1.00      0.00     96.00"
             for m in range(10, 60, 10)]
    (tmp_path / "sar-u.txt").write_bytes(b"\xef\xbb\xbf" + ("\r\n".join(rows) + "\r\n").encode())
    doc = _json(run_cli("analyze", tmp_path / "sar-u.txt", "--tz", "UTC", "--format", "json"))
    [src] = doc["sources"]
    assert src["host"] == "db01" and src["start"].startswith("2026-11-21T10:10:01")


# --- config --------------------------------------------------------------------------------------

@pytest.mark.parametrize("config, says", [
    ('[[signature]]\nid = "page-allocation-failure"\npatterns = ["page allocation failure"]\n',
     "'page-allocation-failure' is a built-in name"),
    ("[detectors.iowait-spike]\nabs_floor_pct = nan\n", "finite"),
    ("[detectors.iowait-spike]\nabs_floor_pct = inf\n", "finite"),
    ("x = " + "[" * 100_000 + "]" * 100_000 + "\n", "nested more than"),
], ids=["builtin-id", "nan", "inf", "deep"])
def test_hostile_config_is_one_line_through_analyze(tmp_path, config, says):
    """API-level: test_config.py (thresholds, nesting)."""
    cfg = tmp_path / "site.toml"
    cfg.write_text(config)
    proc = run_cli("analyze", SAMPLES / "tengine-720k", "--config", cfg)
    assert proc.returncode == 2
    line = one_line(proc)
    assert says in line and str(cfg) in line


def test_a_catastrophic_user_pattern_finishes_at_once(tmp_path):
    """Parser-level: test_logs_damage.py::test_user_pattern_cannot_stall_the_scan."""
    import time
    cfg = tmp_path / "site.toml"
    cfg.write_text('[[signature]]\nid = "runaway"\npatterns = ["(a+)+$"]\nseverity = "low"\n')
    log = tmp_path / "messages"
    log.write_text("\n".join(noise(n) for n in range(50)) + "\nMar 12 03:59:00 web7 app[1]: " + "a" * 40 + "!\n"
                   + "Mar 12 03:59:01 web7 app[1]: " + "a" * 40 + "\n")
    t0 = time.perf_counter()
    proc = run_cli("analyze", log, "--year", "2024", "--config", cfg, "--format", "json")
    assert time.perf_counter() - t0 < 20
    doc = _json(proc)
    mine = [f for f in doc["findings"] if f["detector"] == "custom-signature"]
    assert mine and mine[0]["refs"]["signature"] == "runaway"


# --- outputs -------------------------------------------------------------------------------------

def test_full_tmpdir_while_spooling_standard_input_is_one_line(tmp_path, monkeypatch):
    """Standard input is copied to a private file for sniffing; a full
    TMPDIR (the copy's writes end in ENOSPC) is one line naming the stream,
    never 'internal error'."""
    import tempfile
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(
        ("\n".join(segfault(n) for n in range(20)) + "\n").encode())))
    spool = tmp_path / "spool"

    def full_dir(*a, **k):
        spool.mkdir()
        (spool / "stream-0").symlink_to("/dev/full")
        return str(spool)
    monkeypatch.setattr(tempfile, "mkdtemp", full_dir)
    proc = run_cli("analyze", "-", "--year", "2024")
    assert proc.returncode == 2
    line = one_line(proc)
    assert "No space left on device" in line and "<stdin>" in line


def test_unwritable_output_directory_is_one_line(tmp_path):
    """Also: test_hostile_inputs.py::test_an_unwritable_directory_is_one_line (permission denied),
    test_cli.py::test_closed_pipe_is_quiet_and_full_stdout_is_one_line, test_dev_full_is_one_line."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where a directory is expected\n")
    for args in (("--html", blocker / "r.html"), ("--plots", blocker / "plots"),
                 ("--html", tmp_path / "missing" / "r.html")):
        proc = run_cli("analyze", SAMPLES / "tengine-720k", *args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert str(args[1].parent if args[0] == "--html" else args[1]) in one_line(proc)
    assert blocker.read_text() == "a file where a directory is expected\n"


# --- piped and unreadable input ------------------------------------------------------------------

def _feed(path_or_fd, data: bytes):
    def run():
        with open(path_or_fd, "wb") as w:
            for i in range(0, len(data), 4096):
                w.write(data[i:i + 4096])
    t = threading.Thread(target=run)
    t.start()
    return t


def test_a_named_fifo_on_the_command_line_is_read_once(tmp_path, monkeypatch):
    """/dev/fd pipes and '-': test_streams.py.  A named pipe must be opened
    once: every open after the copy is made is counted (and let through
    with EOF so the test cannot hang).  Counting starts once the copy is
    closed: the writer can finish (the pipe buffers it all) while the one
    legitimate reader still holds the pipe open."""
    import time

    from sarsleuth.inputs import named_paths as streams
    copied = threading.Event()
    spool = streams.spool

    def spool_then_say(paths, spooled, **options):
        try:
            return spool(paths, spooled, **options)
        finally:
            copied.set()
    monkeypatch.setattr(streams, "spool", spool_then_say)
    data = ("\n".join(segfault(n) if n % 4 == 0 else noise(n) for n in range(400)) + "\n").encode()
    fifo = tmp_path / "kern.fifo"
    os.mkfifo(fifo)
    writer = _feed(fifo, data)
    done = threading.Event()
    reopened = []

    def watchdog():
        writer.join()
        while not (copied.wait(0.05) or done.is_set()):
            pass
        while not done.is_set():
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)   # succeeds only when a reader waits
            except OSError:
                time.sleep(0.01)
                continue
            reopened.append(1)
            os.close(fd)
            time.sleep(0.05)
    dog = threading.Thread(target=watchdog)
    dog.start()
    try:
        proc = run_cli("analyze", fifo, "--year", "2024", "--format", "json")
    finally:
        done.set()
        dog.join(timeout=30)
    doc = _json(proc)
    [src] = doc["sources"]
    assert src["path"] == str(fifo) and src["kind"] == "syslog" and src["records"] == 400
    assert reopened == []


def test_dev_stdin_by_name_is_read_once(monkeypatch):
    data = ("\n".join(segfault(n) for n in range(40)) + "\n").encode()
    read_end, write_end = os.pipe()
    writer = _feed(write_end, data)
    saved = os.dup(0)
    os.dup2(read_end, 0)
    os.close(read_end)
    try:
        doc = _json(run_cli("analyze", "/dev/stdin", "--year", "2024", "--format", "json"))
    finally:
        os.dup2(saved, 0)
        os.close(saved)
        writer.join(timeout=30)
    [src] = doc["sources"]
    assert src["kind"] == "syslog" and src["records"] == 40


@pytest.mark.parametrize("make", ["dangling-symlink", "file-as-directory", "socket"])
def test_an_unreadable_path_is_one_warning_and_the_rest_is_analysed(tmp_path, make):
    """(Alone, such a path is one line and exit 2:
    test_hostile_inputs.py::test_cli_unreadable_and_special_files.)"""
    import socket
    good = tmp_path / "kern.log"
    good.write_text("\n".join(segfault(n) for n in range(30)) + "\n")
    sock = None
    if make == "dangling-symlink":
        bad = tmp_path / "messages"
        bad.symlink_to(tmp_path / "rotated-away")
    elif make == "file-as-directory":
        bad = Path(str(good) + "/messages")
    else:
        bad = tmp_path / "syslog.sock"
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(bad))
    try:
        proc = run_cli("analyze", good, bad, "--year", "2024", "--format", "json")
    finally:
        if sock is not None:
            sock.close()
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "\u256d" not in proc.stderr and "internal error" not in proc.stderr
    said = [ln for ln in proc.stderr.splitlines() if str(bad) in ln]
    assert len(said) == 1 and "warning" in said[0], proc.stderr
    doc = json.loads(proc.stdout)
    assert [s["path"] for s in doc["sources"]] == [str(good)]
    assert doc["sources"][0]["records"] == 30


# --- properties of fuzz/losses.py, a few examples each --------------------------------------------

def _fuzz():
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fuzz"))
    import losses
    return losses


def test_property_overlapping_excerpts_count_union_and_merged():
    stats = _fuzz().run_property("duplicates", 8, derandomize=True)
    assert stats["examples"] == 8 and stats["events"] > 0


def test_property_sa_clock_steps_back_keep_every_record(corpus):
    stats = _fuzz().run_property("clock", 6, corpus, derandomize=True)
    assert stats["steps"] == 6 and stats["records"] == 6 * 36


def test_property_cut_streams_keep_exactly_what_was_decoded():
    stats = _fuzz().run_property("truncation", 8, codecs=("gz", "xz", "bz2"), lines=(3000, 5000),
                                 fractions=(0.5, 0.999), derandomize=True)
    assert stats["kept"] + stats["lost"] > 0


@pytest.mark.parametrize("ext", ["gz", "xz"])
def test_a_small_half_downloaded_log_keeps_its_lines(tmp_path, ext):
    losses = _fuzz()
    losses.check_truncation(ext, 50, 0.5, tmp_path, {"kept": 0, "lost": 0})
    # nothing may be refused whole when the reference decoder recovers lines
    proc = run_cli("parse", tmp_path / f"messages.{ext}", "--year", "2014")
    assert proc.returncode == 0, proc.stderr


def test_a_cut_zstd_log_says_it_was_cut(tmp_path):
    _fuzz().check_truncation("zst", 3000, 0.5, tmp_path, {"kept": 0, "lost": 0})
