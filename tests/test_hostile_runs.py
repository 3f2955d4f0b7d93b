"""Runs an unlucky user or an attacker makes: each ends in a report, or in
one line saying what was refused (exit 2 for what cannot be used, 0 with a
warning for what was skipped), never an internal error.  Inputs are
generated here; the few runs that need a real process (standard output or
error closed, standard input from /dev/zero) are subprocesses."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from .conftest import ROOT, SAMPLES, run_cli

OOM = ("Nov 24 14:19:{s:02d} web1 kernel: Out of memory: Killed process {pid} (java) total-vm:1021908kB, "
       "anon-rss:524288kB, file-rss:4096kB, shmem-rss:0kB, UID:1000 pgtables:1200kB oom_score_adj:0\n")


def _process(args, **kw):
    """``sarsleuth ARGS`` as its own process, this tree's package first."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), **kw.pop("env", {})}
    return subprocess.run([sys.executable, "-c", "from sarsleuth.cli import main; main()", *map(str, args)],
                          env=env, timeout=120, **kw)


def test_a_folder_1500_levels_deep_is_read(tmp_path):
    here = tmp_path / "deep"
    here.mkdir()
    path = str(here)
    for _ in range(1500):
        path = os.path.join(path, "a")
        os.mkdir(path)
    with open(os.path.join(path, "messages"), "w") as fh:
        fh.write(OOM.format(s=10, pid=4242))
    try:
        ran = run_cli("analyze", here, "--format", "json", "--year", "2026")
        assert ran.returncode == 0, ran.stderr
        assert [f["detector"] for f in json.loads(ran.stdout)["findings"]] == ["oom-kill"]
        listed = run_cli("sniff", here)
        assert listed.returncode == 0 and listed.stdout.rstrip().endswith("/a/messages\tsyslog")
    finally:
        # removed here, a level at a time (the temporary folders' own cleanup recurses)
        os.unlink(os.path.join(path, "messages"))
        while path != str(here):
            os.rmdir(path)
            path = os.path.dirname(path)


def test_a_load_test_count_of_400_digits_is_a_warning(tmp_path):
    """ab prints its counts from 64-bit integers: 400 digits is a damaged
    or forged line, left out with a warning naming it."""
    text = (SAMPLES / "live-loopback" / "ab-c200.txt").read_text()
    big = "9" * 400
    text = re.sub(r"Complete requests:\s+\d+", f"Complete requests:      {big}", text)
    text = re.sub(r"Failed requests:\s+\d+", f"Failed requests:        {big}", text)
    (tmp_path / "ab-big.txt").write_text(text)
    ran = run_cli("compare", tmp_path / "ab-big.txt", SAMPLES / "live-loopback" / "wrk-c400.txt", "--format", "json")
    assert ran.returncode == 0, ran.stderr
    rows = json.loads(ran.stdout)
    assert rows[0]["requests_per_sec"] == 9866.85 and rows[1]["requests_per_sec"] == 2368.6
    assert f"ab-big.txt:29: complete requests: a number of 400 digits is more than a 64-bit counter holds" \
        in ran.stderr
    assert "internal error" not in ran.stderr


def test_file_names_holding_mathtext_are_drawn_as_text(tmp_path):
    """A name matplotlib would parse as TeX: drawn as written (an unknown
    command used to crash the plot, a known one drew bold math)."""
    for name, sample in (("$\\undefinedcmd{x}$.txt", "ab-c200.txt"), ("$\\mathbf{X}$.txt", "ab-k-c200.txt")):
        (tmp_path / name).write_text((SAMPLES / "live-loopback" / sample).read_text())
    plot = tmp_path / "runs.svg"
    import matplotlib
    # text written as text in the SVG: a label parsed as math would be its pieces in other fonts
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        ran = run_cli("compare", tmp_path / "$\\undefinedcmd{x}$.txt", tmp_path / "$\\mathbf{X}$.txt", "--plot", plot)
    assert ran.returncode == 0, ran.stderr
    svg = plot.read_text()
    assert ">$\\mathbf{X}$.txt:1<" in svg and ">$\\undefinedcmd{x}$.txt:1<" in svg


def test_a_case_saved_onto_a_full_filesystem_is_one_line(tmp_path, monkeypatch):
    """A small tmpfs filled up when we are root (a real ENOSPC from
    pyarrow's writer); otherwise pyarrow's write fails with the same
    OSError through a monkeypatch (said by the test's id)."""
    pytest.importorskip("pyarrow", reason="pyarrow (the parquet extra) is in the test extra")
    target = tmp_path / "full"
    target.mkdir()
    mounted = False
    if os.geteuid() == 0 and subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(target)],
                                            capture_output=True).returncode == 0:
        mounted = True
        (target / "fill").write_bytes(b"\0" * 40 * 1024)
    else:
        import pyarrow.parquet as pq
        real = pq.write_table

        def full(*args, **kwargs):
            raise OSError(28, "Error writing bytes to file. Detail: [errno 28] No space left on device")
        monkeypatch.setattr(pq, "write_table", full)
        assert real is not full
    try:
        ran = run_cli("analyze", SAMPLES / "nginx-proxy-oom", "--save", target / "case", "-q", "--format", "json")
        assert ran.returncode == 2
        assert ran.stderr.splitlines()[-1] == f"sarsleuth: {target / 'case'}: cannot write the case: No space left " \
                                              "on device"
        assert ran.stdout == "" and sorted(p.name for p in target.iterdir()) == (["fill"] if mounted else [])
    finally:
        if mounted:
            subprocess.run(["umount", str(target)], check=True)


def test_standard_output_closed_is_one_line_after_the_files(tmp_path):
    ran = _process(["analyze", SAMPLES / "nginx-proxy-oom", "-q", "--html", tmp_path / "r.html"],
                   preexec_fn=lambda: os.close(1), stderr=subprocess.PIPE, text=True)
    assert ran.returncode == 2
    assert ran.stderr.splitlines()[-1] == "sarsleuth: standard output: cannot write: it was closed when sarsleuth " \
                                          "started (>&-)"
    assert (tmp_path / "r.html").stat().st_size > 10000


def test_standard_error_closed_still_writes_the_report(tmp_path):
    """An input that warns (a line cut short by a NUL run), stderr closed:
    the warnings go nowhere, the report is written, exit 0."""
    log = tmp_path / "messages"
    log.write_bytes(OOM.format(s=10, pid=4242).encode() + b"\0" * 5000 + b"\n" + OOM.format(s=12, pid=4243).encode())
    ran = _process(["analyze", log, "-q", "--year", "2026", "--format", "json"],
                   preexec_fn=lambda: os.close(2), stdout=subprocess.PIPE, text=True)
    assert ran.returncode == 0
    doc = json.loads(ran.stdout)
    assert doc["warnings"] and doc["findings"][0]["detector"] == "oom-kill"


@pytest.mark.parametrize("value, said", [("abc", "expected a size such as 2GiB, 1500MB or auto"),
                                         ("1KiB", "a worker needs at least 256MiB"),
                                         ("100MB", "a worker needs at least 256MiB")])
def test_worker_memory_is_checked_before_anything_runs(value, said):
    ran = run_cli("analyze", SAMPLES / "nginx-proxy-oom", "--worker-memory", value)
    assert ran.returncode == 2 and said in ran.stderr and len(ran.stderr.splitlines()) == 1


def test_worker_memory_sizes():
    from sarsleuth.options import check_worker_memory
    assert check_worker_memory("2GiB") == 2 * 2**30 and check_worker_memory("1500MB") == 1500 * 10**6
    assert check_worker_memory("auto") is None and check_worker_memory(None) is None


@pytest.mark.parametrize("columns, width", [("0", 60), ("5", 60), ("-3", 80)])
def test_a_terminal_said_to_be_narrow_still_gets_the_report(monkeypatch, columns, width):
    """COLUMNS=0 gave an empty report; a width no report fits in is taken
    as 60 columns (one that is no width at all, as rich's 80)."""
    monkeypatch.setenv("COLUMNS", columns)
    ran = run_cli("analyze", SAMPLES / "nginx-proxy-oom", "-q")
    assert ran.returncode == 0
    lines = ran.stdout.splitlines()
    assert len(ran.stdout) > 5000 and max(len(line) for line in lines) == width
    assert any("Memory exhaustion" in line for line in lines)


def test_a_stream_of_zeros_is_refused_at_its_head(tmp_path):
    """``analyze - < /dev/zero`` would copy 8 GiB into TMPDIR before
    sniffing a byte: its first 64 KiB say it is nothing readable."""
    with open("/dev/zero", "rb") as zeros:
        ran = _process(["analyze", "-"], stdin=zeros, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env={"TMPDIR": str(tmp_path)})
    assert ran.returncode == 2 and ran.stdout == ""
    assert ran.stderr == ("sarsleuth: no usable input: <stdin>: refused after its first 64 KiB: no input kind reads "
                          "it (content matches no known format)\n")
    assert not any(f.is_file() for f in tmp_path.rglob("*"))


_READ_THEN_CUT = """
import os, sys
from sarsleuth.inputs.parsers import ParseOptions
from sarsleuth.inputs.parsers.sa import reader
path = sys.argv[1]
damage = []
buf, close = reader._open(path, damage)
os.truncate(path, 3000)          # cut after it was opened, before its records are read
source = reader.read_source(path, buf, ParseOptions())
close()
print(source.records, len(source.store))
"""


def test_an_sa_file_cut_while_it_is_read_never_kills_the_process(tmp_path):
    """The file is mapped from a private copy: cut under the reader (as
    sadc truncates last month's saDD), the mapping it reads does not
    shrink.  A mapping of the file itself died of SIGBUS here (exit 135)."""
    import gzip
    path = tmp_path / "sa23"
    path.write_bytes(gzip.decompress((SAMPLES / "sysstat-versions" / "12.7.9" / "sa.gz").read_bytes()))
    ran = subprocess.run([sys.executable, "-c", _READ_THEN_CUT, str(path)], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert ran.returncode == 0, (ran.returncode, ran.stderr[-500:])
    records, values = map(int, ran.stdout.split())
    assert records == 35 and values > 10000


def test_an_sa_file_cut_while_it_is_copied_is_read_as_copied(tmp_path, monkeypatch):
    """Cut between two pieces of the copy: the records before the cut are
    read, a warning says the file was cut and how much was read."""
    import gzip
    from sarsleuth.inputs.parsers import parse
    from sarsleuth.inputs.parsers.sa import spool
    path = tmp_path / "sa23"
    data = gzip.decompress((SAMPLES / "sysstat-versions" / "12.7.9" / "sa.gz").read_bytes())
    path.write_bytes(data)
    copy = os.copy_file_range
    calls = []

    def cut_after_first(src, dst, count, offset_src=None, offset_dst=None):
        calls.append(count)
        if len(calls) == 2:
            os.truncate(path, 60000)
        return copy(src, dst, count, offset_src, offset_dst)
    monkeypatch.setattr(spool, "OUTPUT_CHUNK", 40000)
    monkeypatch.setattr(os, "copy_file_range", cut_after_first)
    source = parse(path)
    assert 0 < source.records < 35
    assert any(f"the file was cut while it was read ({len(data):,} bytes when opened, 60,000 when copied): read "
               "as copied (60,000 bytes)" in w for w in source.warnings), source.warnings
