"""The HTML and markdown reports: self-contained, and everything that came
from a log is shown as text, never run."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

import sarsleuth
from sarsleuth.render.html import build_html
from sarsleuth.render.markdown import render_markdown


HOSTILE = [
    '<script>alert("pwned")</script>',
    '<img src=x onerror=alert(1)>',
    '"><svg onload=alert(2)>',
    "javascript:alert(3)",
]


@pytest.fixture()
def hostile_bundle(tmp_path):
    """A kernel log whose OOM victim and segfaulting process names, and an
    nginx error.log whose client/host fields, were written by an attacker."""
    msgs = [f"May  6 15:04:1{i} web1 kernel: {name}[4{i}21]: segfault at 0 ip 00000000004c2d27 sp 00007fff2b3e8b40 error 4"
            for i, name in enumerate(["<script>alert(\"pwned\")</script>", "<img src=x onerror=alert(1)>"])]
    msgs.append('May  6 15:04:19 web1 kernel: Out of memory: Killed process 4242 ("><svg onload=alert(2)>) '
                "total-vm:1021908kB, anon-rss:524288kB, file-rss:4096kB, shmem-rss:0kB")
    (tmp_path / "messages").write_text("\n".join(msgs) + "\n")
    (tmp_path / "error.log").write_text(
        "2014/05/06 15:04:20 [alert] 100#0: worker process 4021 exited on signal 11 (core dumped)\n"
        '2014/05/06 15:04:21 [error] 101#0: *5 upstream timed out (110: Connection timed out) while reading response '
        'header from upstream, client: <script>alert("pwned")</script>, server: javascript:alert(3), request: "GET / HTTP/1.1", '
        'upstream: "http://10.0.0.1:80/<img src=x onerror=alert(1)>", host: "x"\n')
    return tmp_path


def test_html_escapes_hostile_log_lines(hostile_bundle):
    case = sarsleuth.load(hostile_bundle, year=2014)
    assert case.findings, "the hostile lines must still be detected"
    html = build_html(case)
    for bad in HOSTILE[:3]:
        assert bad not in html
    assert "&lt;script&gt;alert(" in html
    tags = _tags(html)
    assert not any(tag == "script" for tag, _ in tags)
    assert not any(name.startswith("on") for _, attrs in tags for name, _ in attrs)
    assert not any(value and "javascript:" in value for _, attrs in tags for _, value in attrs)


def _tags(html):
    """Every start tag in the document, as a browser's tokenizer sees it."""
    from html.parser import HTMLParser

    class Collector(HTMLParser):
        def __init__(self):
            super().__init__()
            self.tags = []

        def handle_starttag(self, tag, attrs):
            self.tags.append((tag, attrs))

    c = Collector()
    c.feed(html)
    return c.tags


def test_markdown_escapes_hostile_log_lines(hostile_bundle):
    md = render_markdown(sarsleuth.load(hostile_bundle, year=2014))
    assert "<script>" not in md and "<img" not in md and "<svg" not in md


def test_html_is_self_contained(tmp_path, sample_case):
    case = sample_case("nginx-proxy-oom")
    out = tmp_path / "report.html"
    case.report(out)
    html = out.read_text()
    assert "<svg" in html                                  # plots inlined
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", html)   # nothing fetched
    assert "Memory exhaustion" in html and "97.76" in html
    assert "Sources" in html and "sar06.txt" in html


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.mark.skipif(_chromium() is None, reason="headless Chromium not installed (the CI script installs Debian's chromium)")
def test_report_renders_in_headless_chromium(tmp_path, sample_case):
    case = sample_case("nginx-proxy-oom")
    out = tmp_path / "report.html"
    case.report(out)
    profile = tmp_path / "profile"
    cmd = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", "--dump-dom", out.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    dom = proc.stdout
    assert "sarsleuth post-mortem report" in dom
    assert dom.count("<svg") >= 1 and "Memory exhaustion" in dom
    console_errors = [ln for ln in proc.stderr.splitlines() if "CONSOLE" in ln and "ERROR" in ln.upper()]
    assert console_errors == []
    png = tmp_path / "shot.png"
    subprocess.run(cmd[:-2] + [f"--screenshot={png}", "--window-size=1200,2000", out.as_uri()],
                   capture_output=True, timeout=120)
    assert png.exists() and png.stat().st_size > 20000
