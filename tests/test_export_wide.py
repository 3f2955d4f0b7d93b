"""``parse --format csv --layout wide``: an sa file in ``sadf -d``'s own
layout, checked line for line against the real sadf."""
from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess

import pytest

from .conftest import SAMPLES, run_cli

SADC = "/usr/lib/sysstat/sadc"
needs_sadf = pytest.mark.skipif(shutil.which("sadf") is None, reason="sysstat's sadf is not installed")


def sadf_d(path) -> list[str]:
    out = subprocess.run(["sadf", "-d", str(path), "--", "-A"], capture_output=True, text=True, check=True,
                         env={"TZ": "UTC", "LC_ALL": "C", "PATH": "/usr/bin:/bin"}).stdout
    return out.splitlines()


def wide(path) -> list[str]:
    ran = run_cli("parse", path, "--format", "csv", "--layout", "wide")
    assert ran.returncode == 0, ran.stderr
    return ran.stdout.splitlines()


@needs_sadf
def test_restarts_and_rounded_intervals_as_sadf_prints_them(tmp_path):
    """A restart before the first record and one between two stretches, an
    interval of 60.5 s: sadf's output, byte for byte."""
    from sarsleuth.inputs.parsers.sa.writer import write_sa
    t0 = dt.datetime(2024, 3, 1, 10, 0, 0, tzinfo=dt.timezone(dt.timedelta(hours=-5)))

    def stats(k, uptime):
        return {"time": t0 + dt.timedelta(minutes=k), "uptime_cs": uptime,
                "cpu": [[0] * 10] + [[1000 + 600 * k, 3 * k, 500 + 301 * k, 90000 + 5100 * k, 0, 7 * k, 0, 0, 0, 0]] * 2,
                "net-sock": {"sock_inuse": 40 + k, "tcp_inuse": 20, "tcp_tw": 7 * k}}
    records = [{"time": t0 - dt.timedelta(minutes=1), "type": "restart"}, stats(0, 1000), stats(1, 7000),
               stats(2, 13000), {"time": t0 + dt.timedelta(minutes=2, seconds=30), "type": "comment", "text": "v2"},
               {"time": t0 + dt.timedelta(minutes=3), "type": "restart"}, stats(4, 500), stats(5, 6500),
               stats(6, 12550)]
    path = write_sa(tmp_path / "sa01", host="web1", kernel="6.1.0", ncpu=2, records=records, utc_offset_minutes=-300)
    ours, theirs = wide(path), sadf_d(path)
    assert ours == theirs
    assert sum("LINUX-RESTART" in line for line in ours) == 2 and "web1;61;2024-03-01 15:06:00 UTC;-1;" in \
        "\n".join(ours)


@needs_sadf
@pytest.mark.skipif(not os.access(SADC, os.X_OK), reason="sysstat's sadc is not installed")
def test_a_fresh_xall_recording_reads_as_sadf_prints_it(tmp_path):
    """Every activity sadc -S XALL records on this machine: the same heads,
    rows and values; sadf names disks by this machine's /dev where the file
    records devM-N."""
    path = tmp_path / "sa"
    subprocess.run([SADC, "-S", "XALL", "1", "3", str(path)], check=True, capture_output=True, timeout=60)
    ours, theirs = wide(path), sadf_d(path)
    assert len(ours) == len(theirs) and sum(line.startswith("#") for line in ours) >= 30
    heads = [line for line in theirs if line.startswith("#")]
    assert [line for line in ours if line.startswith("#")] == heads
    disk = False
    for mine, sadf in zip(ours, theirs):
        if mine.startswith("#"):
            disk = ";DEV;" in mine
        if mine != sadf:
            a, b = mine.split(";"), sadf.split(";")
            assert disk and a[:3] + a[4:] == b[:3] + b[4:] and a[3].startswith("dev"), (mine, sadf)


def _blocks(lines) -> dict:
    out: dict = {}
    rows = None
    for line in lines:
        if line.startswith("#"):
            rows = out.setdefault(line, [])
        elif rows is not None:
            rows.append(line)
    return out


def test_corpus_file_reads_as_sadf_printed_it(corpus):
    """sysstat 12.0.0's test file against the CSV sadf 12.6.1 wrote of it:
    every table with the same heads has the same rows.  The others are the
    columns sysstat 12.0.0 did not record (sadf 12.6.1 prints 0.00 there,
    sarsleuth leaves them out: dtps, kbhugrsvd, blg_len...) or recorded
    differently (svctm), and the sensors' and USB devices' names, which
    sarsleuth does not keep."""
    reference = _blocks((corpus / "sysstat" / "sadf-d" / "data-12.0.0.csv").read_text().splitlines())
    ours = _blocks(wide(corpus / "sysstat" / "binary" / "data-12.0.0"))
    same = [head for head in reference if head in ours]
    assert len(same) == 28
    for head in same:
        assert ours[head] == reference[head], head
    differ = {head.split(";")[3] for head in reference if head not in ours}
    assert differ == {"tps", "kbhugfree", "DEV", "CPU", "FAN", "TEMP", "IN", "manufact"}


def test_the_wide_layout_is_for_sa_files_and_csv():
    ran = run_cli("parse", SAMPLES / "nginx-worker-crash" / "error.log", "--layout", "wide")
    assert ran.returncode == 2 and "the wide layout is sadf -d's, of a binary sa file" in ran.stderr
    ran = run_cli("parse", SAMPLES / "nginx-proxy-oom" / "sa06", "--format", "json", "--layout", "wide")
    assert ran.returncode == 2 and "--layout wide is a CSV layout" in ran.stderr


def test_integer_and_two_decimal_columns():
    from sarsleuth.render.export_wide import _hundredths, _integers
    import numpy as np
    printed = (0.125, 0.135, 1.005, -0.004, -0.05, -12.345, 99.995, 1e7 / 3, 1.8e17, 123456789012345.67)
    text = _hundredths(np.array(printed + (float("nan"),)))
    rows = [bytes(r[r != 0]).decode() for r in text]
    assert rows == ["%.2f" % v for v in printed] + [""]
    assert [bytes(r[r != 0]).decode() for r in _integers(np.array([0.0, 7.0, 4066192.0]))] == ["0", "7", "4066192"]
