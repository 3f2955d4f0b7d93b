"""Progress on a terminal: shown on standard error once reading takes a
while, never on standard output, never when asked quiet or when standard
error is no terminal.  Real pseudo-terminals, real child processes."""
from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import threading

import pytest

from sarsleuth import progress

#: The command line with the progress shown from the first byte (the delay
#: is the only thing changed: a small file is read in well under 2 s).
_RUN = "import sys; import sarsleuth.progress as p; p.SHOW_AFTER_S = float(sys.argv.pop(1)); " \
       "from sarsleuth.cli import main; sys.argv[0] = 'sarsleuth'; main()"

NOISE = b"May  6 15:04:10 web1 CROND[21000]: (root) CMD (/usr/lib64/sa/sa1 1 1) run-parts /etc/cron.hourly\n"
KILL = (b"May  6 15:04:11 web1 kernel: Out of memory: Killed process 4242 (nginx) total-vm:1021908kB, "
        b"anon-rss:524288kB, file-rss:4096kB, shmem-rss:0kB\n")


@pytest.fixture(scope="module")
def log(tmp_path_factory):
    path = tmp_path_factory.mktemp("progress") / "messages"
    with open(path, "wb") as fh:
        for _ in range(40):
            fh.write(NOISE * 9_999 + KILL)          # 40 MB, several blocks of the scan
    return path


def run(args, delay: float, stderr_tty: bool = True):
    """(exit code, standard output, what reached standard error)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p), COLUMNS="100", TERM="xterm")
    if not stderr_tty:
        proc = subprocess.run([sys.executable, "-c", _RUN, str(delay), *map(str, args)], capture_output=True,
                              env=env, timeout=120)
        return proc.returncode, proc.stdout, proc.stderr
    master, slave = pty.openpty()
    seen = bytearray()

    def drain():
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                return
            if not chunk:
                return
            seen.extend(chunk)
    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        proc = subprocess.run([sys.executable, "-c", _RUN, str(delay), *map(str, args)], stdout=subprocess.PIPE,
                              stderr=slave, env=env, timeout=120)
    finally:
        os.close(slave)
        reader.join(5)
        os.close(master)
    return proc.returncode, proc.stdout, bytes(seen)


def test_a_terminal_sees_the_bytes_read_and_json_stays_clean(log):
    code, out, err = run(["analyze", log, "--year", "2014", "--format", "json"], delay=0.0)
    assert code == 0, err
    doc = json.loads(out)                           # nothing but the document on standard output
    assert any(f["detector"] == "oom-kill" for f in doc["findings"])
    text = err.decode("utf-8", "replace")
    assert "read 0 of 1 file(s)" in text and "messages" in text and "MB" in text
    assert b"\x1b[" in err                           # drawn and cleared as a terminal shows it


def test_quiet_or_no_terminal_or_a_short_run_shows_nothing(log, samples):
    small = samples / "nginx-worker-crash" / "error.log"          # read in a few milliseconds
    for path, args, delay, tty in ((log, ["--quiet"], 0.0, True), (log, [], 0.0, False),
                                   (small, [], progress.SHOW_AFTER_S, True)):
        code, out, err = run(["analyze", path, "--year", "2014", "--format", "json", *args], delay, tty)
        assert code == 0 and json.loads(out)["findings"]
        assert b"file(s)" not in err and b"\x1b[" not in err, (args, delay, tty, err[:200])


def test_parse_of_an_sa_file_shows_its_records_read(samples):
    code, out, err = run(["parse", samples / "nginx-proxy-oom" / "sa06", "--format", "csv"], delay=0.0)
    assert code == 0 and out.startswith(b"timestamp,host,section,device,metric,value\n")
    assert b"sa06" in err and b"read 0 of 1 file(s)" in err


def test_within_a_file_counts_its_share_of_the_bytes():
    clock = iter([0.0, 0.5, 1.0]).__next__
    reading = progress.Reading([1000, 3000], enabled=False, clock=clock)
    reading.open("a", 1000)
    reading.within(50, 100)                          # a reader's own units: half of the file
    assert (reading.done_bytes, reading.inside) == (0, 500)
    reading.close()
    reading.open("b", 3000)
    reading.within(1, 4)
    assert (reading.done_bytes, reading.inside, reading.total, reading.done_files) == (1000, 750, 4000, 1)
