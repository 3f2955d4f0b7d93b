"""Standard input and pipes are read once, copied for sniffing, and named as
the user gave them."""
from __future__ import annotations

import io
import json
import os
import sys
import threading
import time
from pathlib import Path

import pytest

import sarsleuth

from .conftest import run_cli

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
MESSAGES = (SAMPLES / "nginx-proxy-oom" / "messages").read_bytes()


def test_standard_input_is_read_once_and_named(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(MESSAGES)))
    case = sarsleuth.load("-", SAMPLES / "nginx-proxy-oom" / "error.log", year=2014)
    assert [s.path for s in case.sources] == ["<stdin>", str(SAMPLES / "nginx-proxy-oom" / "error.log")]
    by_file = case.events.groupby("file")["repeats"].sum().to_dict()
    assert by_file["<stdin>"] == 8               # the NIC and allocation-failure lines of messages
    rx = [f for f in case.findings if f.detector == "nic-rx-alloc-failure"]
    assert rx and {e.path for e in rx[0].evidence} == {"<stdin>"}


def test_a_pipe_is_not_empty_after_sniffing():
    read_end, write_end = os.pipe()

    def feed():
        with os.fdopen(write_end, "wb") as w:
            for i in range(0, len(MESSAGES), 4096):
                w.write(MESSAGES[i:i + 4096])

    writer = threading.Thread(target=feed)
    writer.start()
    try:
        case = sarsleuth.load(f"/dev/fd/{read_end}", year=2014)
    finally:
        writer.join()
        os.close(read_end)
    assert len(case.sources) == 1 and case.sources[0].kind == "syslog"
    assert case.sources[0].path == f"/dev/fd/{read_end}"
    assert case.events["repeats"].sum() == 8 and not case.skipped


# --- what the user names: devices refused, sizes capped, pipes opened without blocking -------------

@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_device_named_as_input_or_config_is_one_line_at_once(device, tmp_path):
    """A device never ends: read, it would fill the disk with a copy (an
    input) or memory (a config) until the kernel stepped in."""
    log = tmp_path / "messages"
    log.write_bytes(MESSAGES)
    reason = "a device, not a file (a device such as /dev/zero never ends; give a file or a pipe)"
    t0 = time.perf_counter()
    for args, line in (((device,), f"no usable input: {device}: {reason}"),
                       (("--config", device, log), f"{device}: {reason}")):
        ran = run_cli("analyze", *args)
        assert (ran.returncode, ran.stderr) == (2, f"sarsleuth: {line}\n"), args
    ran = run_cli("parse", device)
    assert (ran.returncode, ran.stderr) == (2, f"sarsleuth: {device}: {reason}\n")
    # beside other inputs it is skipped, and they are read
    ran = run_cli("analyze", device, log, "--year", "2014", "--format", "json")
    assert ran.returncode == 0 and f"sarsleuth: warning: skipped {device}: {reason}\n" in ran.stderr
    assert json.loads(ran.stdout)["skipped"] == [{"path": device, "reason": reason}]
    assert time.perf_counter() - t0 < 30


def test_a_link_to_nothing_or_a_loop_of_links_says_so(tmp_path):
    """Not "no such file" for a name that is there: a link whose target is
    gone (its target said, control characters visible) or a loop of
    links, one line each from analyze, sniff and a fleet's listing."""
    from sarsleuth.fleet.hosts import input_files
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    (tmp_path / "rotated").symlink_to("/var/log/\x1b[2Jmessages.1")
    said = {tmp_path / "a": "a loop of symbolic links, not a file",
            tmp_path / "rotated": "a symbolic link to /var/log/\\x1b[2Jmessages.1, which does not exist",
            tmp_path / "gone": "no such file or directory"}
    for path, why in said.items():
        ran = run_cli("analyze", path)
        assert (ran.returncode, ran.stderr) == (2, f"sarsleuth: no usable input: {path}: {why}\n")
        ran = run_cli("sniff", path)
        assert (ran.returncode, ran.stdout, ran.stderr) == (2, "", f"sarsleuth: {path}: {why}\n")
    assert input_files([str(p) for p in said])[1][:2] == [
        (str(tmp_path / "a"), "a loop of symbolic links, not a file"),
        (str(tmp_path / "rotated"), "a symbolic link to /var/log/\x1b[2Jmessages.1, which does not exist")]


def _sparse(path: Path, size: int, head: bytes) -> Path:
    with open(path, "wb") as fh:
        fh.write(head)
        fh.truncate(size)
    return path


def test_a_file_over_the_size_cap_is_refused_before_a_byte_is_read(tmp_path):
    """A sparse file of 64 GiB + 1 behind a syslog head (it costs no disk):
    refused, as input and as config, naming the cap."""
    from sarsleuth.config import MAX_CONFIG_BYTES
    from sarsleuth.inputs.named_paths import MAX_FILE_BYTES
    huge = _sparse(tmp_path / "messages", MAX_FILE_BYTES + 1, MESSAGES[:4096])
    ran = run_cli("analyze", huge)
    assert (ran.returncode, ran.stderr) == (2, f"sarsleuth: no usable input: {huge}: {MAX_FILE_BYTES + 1} bytes, "
                                               "larger than the 64 GiB an input may hold; not read\n")
    # found in a folder, the same
    ran = run_cli("sniff", tmp_path)
    assert (ran.returncode, ran.stdout) == (0, f"{huge}\tunknown\n")
    config = _sparse(tmp_path / "site.toml", MAX_CONFIG_BYTES + 1, b'link_speed = "10G"\n')
    ran = run_cli("analyze", SAMPLES / "nginx-proxy-oom" / "error.log", "--config", config)
    assert (ran.returncode, ran.stderr) == (2, f"sarsleuth: {config}: {MAX_CONFIG_BYTES + 1} bytes, larger than "
                                               "the 1 MiB a config file may hold; not read\n")


def test_a_named_pipe_without_a_writer_is_refused_instead_of_blocking(tmp_path, monkeypatch):
    from sarsleuth.inputs import named_paths as streams
    monkeypatch.setattr(streams, "WRITER_WAIT_SECONDS", 0.3)
    fifo = tmp_path / "kern.fifo"
    os.mkfifo(fifo)
    why = "a named pipe with no writer (nothing came in 0.3 s)"
    t0 = time.perf_counter()
    ran = run_cli("analyze", fifo)
    assert (ran.returncode, ran.stderr) == (2, f"sarsleuth: no usable input: {fifo}: {why}\n")
    ran = run_cli("analyze", SAMPLES / "nginx-proxy-oom" / "error.log", "--config", fifo)
    assert (ran.returncode, ran.stderr) == (2, f"sarsleuth: {fifo}: {why}\n")
    ran = run_cli("parse", fifo)
    assert (ran.returncode, ran.stderr) == (2, f"sarsleuth: {fifo}: {why}\n")
    assert time.perf_counter() - t0 < 10


def test_a_config_given_through_a_pipe_is_read_and_checked():
    """``--config <(...)``: the shell's pipe has its writer, so it is read
    (and its mistake named), not refused."""
    read_end, write_end = os.pipe()
    with os.fdopen(write_end, "wb") as w:
        w.write(b"[detectors.oom-kill]\nmin_victims = 1\n")
    try:
        ran = run_cli("analyze", SAMPLES / "nginx-proxy-oom", "--config", f"/dev/fd/{read_end}")
    finally:
        os.close(read_end)
    assert (ran.returncode, ran.stderr) == (2, f"sarsleuth: /dev/fd/{read_end}: detector 'oom-kill' has no parameter "
                                               "min_victims (known: burst_gap_seconds, match_window_seconds)\n")


def test_standard_input_on_a_terminal_is_refused(monkeypatch):
    class Terminal(io.BytesIO):
        def isatty(self):
            return True
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(Terminal()))
    ran = run_cli("analyze", "-")
    assert (ran.returncode, ran.stderr) == (2, "sarsleuth: no usable input: <stdin>: standard input is a terminal: "
                                               "pipe a file into it (... | sarsleuth analyze -)\n")


def test_a_fleet_refuses_what_its_workers_cannot_read(tmp_path):
    """A fleet's workers read each host's files where they are: devices,
    pipes and files over the cap are listed with why, never opened."""
    from sarsleuth.fleet.hosts import input_files
    from sarsleuth.inputs.named_paths import MAX_FILE_BYTES
    fifo = tmp_path / "kern.fifo"
    os.mkfifo(fifo)
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "messages").write_bytes(MESSAGES)
    huge = _sparse(folder / "messages.1", MAX_FILE_BYTES + 1, MESSAGES[:4096])
    files, refused = input_files(["/dev/zero", str(fifo), str(tmp_path / "gone"), str(folder)])
    assert files == [str(folder / "messages")]
    assert refused == [
        ("/dev/zero", "a device, not a file (a device such as /dev/zero never ends; give a file or a pipe)"),
        (str(fifo), "a pipe, read once: a fleet's workers read files where they are (analyse it with --no-fleet)"),
        (str(tmp_path / "gone"), "no such file or directory"),
        (str(huge), f"{MAX_FILE_BYTES + 1} bytes, larger than the 64 GiB an input may hold; not read")]


def test_an_archive_piped_in_names_its_members_after_the_stream(monkeypatch):
    """``tar czf - /var/log | sarsleuth analyze -``: members are
    ``<stdin>!MEMBER`` in every output, never the private copy's path."""
    import gzip
    import tarfile
    data = MESSAGES
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        info = tarfile.TarInfo("var/log/messages")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(gzip.compress(buf.getvalue()))))
    ran = run_cli("analyze", "-", "--year", "2014", "--format", "json")
    doc = json.loads(ran.stdout)
    assert [s["path"] for s in doc["sources"]] == ["<stdin>!var/log/messages"]
    assert {e["path"] for f in doc["findings"] for e in f["evidence"]} == {"<stdin>!var/log/messages"}
    assert "sarsleuth-stdin-" not in ran.stdout + ran.stderr
