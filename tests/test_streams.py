"""Standard input and pipes are read once, copied for sniffing, and named as
the user gave them."""
from __future__ import annotations

import io
import os
import sys
import threading
from pathlib import Path

import sarsleuth

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
