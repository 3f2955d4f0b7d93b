"""The command line: outputs, exit codes, one-line errors, start-up speed."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from .conftest import SAMPLES


def run(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "sarsleuth.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("content", [b"", b"\x00\x01\x02\xff" * 4096, b"hello world\nthis is not a log\n"])
def test_unusable_input_is_one_line_exit_2(tmp_path, content):
    p = tmp_path / "input.bin"
    p.write_bytes(content)
    proc = run("analyze", p)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert lines and all(str(p) in ln for ln in lines)
    assert lines[-1].startswith("sarsleuth: no usable input")
    assert "Traceback" not in proc.stderr


def test_missing_path(tmp_path):
    proc = run("analyze", tmp_path / "nope")
    assert proc.returncode == 2
    assert "no such file" in proc.stderr and "Traceback" not in proc.stderr


def test_unknown_file_is_skipped_not_fatal(tmp_path):
    junk = tmp_path / "junk.txt"
    junk.write_text("nothing to see\n")
    proc = run("analyze", SAMPLES / "tengine-720k", junk, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert any(s["path"] == str(junk) for s in doc["skipped"])
    assert f"skipped {junk}" in proc.stderr


def test_bad_options_exit_2():
    assert run("analyze", SAMPLES / "tengine-720k", "--tz", "Mars/Olympus").returncode == 2
    assert run("analyze", SAMPLES / "tengine-720k", "--window", "yesterday").returncode == 2
    assert run("parse", SAMPLES / "tengine-720k" / "messages", "--kind", "nonsense").returncode == 2


def test_sniff_samples():
    proc = run("sniff", *sorted(SAMPLES.glob("*/*")))
    kinds = dict(line.split("\t") for line in proc.stdout.strip().splitlines())
    expect = {
        "nginx-proxy-oom/sar06.txt": "sar-text", "nginx-proxy-oom/messages": "syslog",
        "nginx-proxy-oom/error.log": "nginx-error", "image-service-ab/ab-2m-image.txt": "ab",
        "image-service-ab/sar-n-DEV.txt": "sar-text", "tengine-720k/messages": "syslog",
        "nginx-worker-crash/dmesg": "dmesg", "nginx-worker-crash/ps-after.txt": "ps",
        "nginx-worker-crash/error.log": "nginx-error",
    }
    for suffix, kind in expect.items():
        path = str(SAMPLES / suffix)
        assert kinds[path] == kind, (suffix, kinds[path])


def test_parse_csv_metrics():
    proc = run("parse", SAMPLES / "nginx-proxy-oom" / "sar06.txt", "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "timestamp,host,section,device,metric,value"
    assert "2014-05-06T15:05:03,Cangke_107_176,cpu,all,%iowait,64.94" in lines
    assert "2014-05-06T15:06:05,Cangke_107_176,swap,,%swpused,97.76" in lines


def test_parse_csv_events():
    proc = run("parse", SAMPLES / "nginx-worker-crash" / "error.log")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "timestamp,host,source,kind,pid,process,message,file,line"
    assert sum(",worker-signal-exit," in ln for ln in lines) == 6


def test_markdown_and_html(tmp_path):
    out = tmp_path / "r.html"
    proc = run("analyze", SAMPLES / "tengine-720k", "--format", "markdown", "--html", out)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("# sarsleuth incident summary")
    assert "Socket table exhaustion" in proc.stdout
    html = out.read_text()
    assert "<svg" in html
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", html)


def test_detectors_listing():
    proc = run("detectors", "--format", "json")
    ids = {d["id"] for d in json.loads(proc.stdout)}
    contract = {"swap-climb", "memory-pressure", "iowait-spike", "cpu-saturation", "load-spike", "nic-saturation",
                "tcp-timewait", "page-allocation-failure", "nic-rx-alloc-failure", "oom-kill", "segfault", "hung-task",
                "tcp-tw-bucket-overflow", "socket-memory", "syn-flood", "conntrack-full", "worker-signal-exit",
                "worker-pid-gaps", "worker-connections-exhausted", "too-many-open-files", "upstream-timeout",
                "loadtest-errors", "loadtest-tail-latency", "loadtest-link-saturation"}
    assert contract <= ids


def test_help_does_not_import_pandas():
    code = "import sys, sarsleuth.cli; print('pandas' in sys.modules, 'matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.split()
    assert out == ["False", "False"]


def test_installed_console_script_runs_from_elsewhere(tmp_path):
    """The entry point works outside the source tree (templates, knowledge
    base and grammars ship in the package)."""
    import shutil
    exe = shutil.which("sarsleuth")
    if exe is None:
        pytest.skip("the sarsleuth console script is not installed (pip install .)")
    out = tmp_path / "r.html"
    proc = subprocess.run([exe, "analyze", str(SAMPLES / "image-service-ab"), "--format", "json", "--html", str(out)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["incidents"][0]["category"] == "network-saturation"
    assert out.stat().st_size > 10000


def test_compare_runs(tmp_path):
    png = tmp_path / "runs.png"
    proc = run("compare", SAMPLES / "image-service-ab" / "ab-50k-image.txt",
               SAMPLES / "image-service-ab" / "ab-2m-image.txt", "--format", "json", "--plot", png)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    rps = sorted(r["requests_per_sec"] for r in rows)
    assert rps == [510.51, 3359.59]
    assert png.stat().st_size > 5000
    assert run("compare", SAMPLES / "tengine-720k" / "messages").returncode == 2
