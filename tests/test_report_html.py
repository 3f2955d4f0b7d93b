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


# ------------------------------------------------------ layout at 1400 px
#: Run in a copy of the report (the report itself carries no script and
#: forbids any): every <text> of every SVG, as the browser laid it out, must
#: not overlap another text of the same SVG.
OVERLAP_CHECK = """
(function () {
  var found = [], svgs = document.querySelectorAll("svg");
  for (var s = 0; s < svgs.length; s++) {
    var boxes = [], texts = svgs[s].querySelectorAll("text");
    for (var i = 0; i < texts.length; i++) {
      var label = (texts[i].textContent || "").trim(), r = texts[i].getBoundingClientRect();
      if (label && r.width > 0.5 && r.height > 0.5) boxes.push([label, r.left, r.top, r.width, r.height]);
    }
    for (var a = 0; a < boxes.length; a++) for (var b = a + 1; b < boxes.length; b++) {
      var p = boxes[a], q = boxes[b];
      var ox = Math.min(p[1] + p[3], q[1] + q[3]) - Math.max(p[1], q[1]);
      var oy = Math.min(p[2] + p[4], q[2] + q[4]) - Math.max(p[2], q[2]);
      if (ox > 1 && oy > 1) found.push([s, p[0], q[0]]);
    }
  }
  var pre = document.createElement("pre");
  pre.id = "layout-check";
  pre.textContent = JSON.stringify({svgs: svgs.length, overlaps: found});
  document.body.appendChild(pre);
})();
"""


def _layout(tmp_path, html: str, name: str) -> dict:
    import json
    html = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html)
    page = tmp_path / f"{name}.html"
    page.write_text(html.replace("</body>", f"<script>{OVERLAP_CHECK}</script></body>"), encoding="utf-8")
    cmd = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync",
           "--disable-background-networking", "--disable-component-update", f"--user-data-dir={tmp_path / 'profile'}",
           "--window-size=1400,3000", "--virtual-time-budget=5000"]
    dom = subprocess.run(cmd + ["--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120).stdout
    m = re.search(r'<pre id="layout-check">(.*?)</pre>', dom, re.S)
    assert m, "the layout check did not run"
    shot = tmp_path / f"{name}.png"
    subprocess.run(cmd + [f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=120)
    assert shot.exists() and shot.stat().st_size > 20000
    return json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))


@pytest.mark.skipif(_chromium() is None, reason="headless Chromium not installed (the CI script installs Debian's chromium)")
def test_layout_check_sees_overlapping_labels(tmp_path):
    page = ('<!DOCTYPE html><html><body><svg width="400" height="50"><text x="10" y="20">15:04:13</text>'
            '<text x="30" y="22">15:04:14</text></svg></body></html>')
    assert _layout(tmp_path, page, "overlap")["overlaps"]


@pytest.mark.skipif(_chromium() is None, reason="headless Chromium not installed (the CI script installs Debian's chromium)")
@pytest.mark.parametrize("name", ["nginx-proxy-oom", "live-loopback"])
def test_timeline_and_charts_render_without_overlapping_labels_at_1400px(tmp_path, sample_case, name):
    case = sample_case(name)
    result = _layout(tmp_path, build_html(case), name)
    assert result["svgs"] >= 2              # the cross-source timeline and at least one chart
    assert result["overlaps"] == []


def test_html_tells_the_story_with_a_cross_source_timeline(sample_case):
    case = sample_case("nginx-proxy-oom")
    html = build_html(case, plots=False)
    svg = re.search(r'<svg[^>]*class="timeline".*?</svg>', html, re.S).group(0)
    assert "<script" not in svg
    # a lane per source (its name in the label column), the incident window shaded
    for s in case.sources:
        assert f"<title>{s.path}</title>" in svg
    assert svg.count('class="window"') == len(case.incidents)
    inc = case.incidents[0]
    for part in ("Timeline (UTC+08:00)", "<h3>Cause</h3>", "<b>Why:</b>", "<h3>Effects</h3>", "<h3>Context</h3>",
                 "<h3>What to do</h3>"):
        assert part in html
    assert inc.story["headline"].split(" (")[0] in html
    # code in recommendations rendered as code, never as raw backticks
    recs = re.search(r'<ol class="recs">(.*?)</ol>', html, re.S).group(1)
    assert "<code>proxy_buffer_size 32k; proxy_buffers 16 32k;</code>" in recs and "`" not in recs
    # every finding reachable
    for i, _f in enumerate(inc.findings, 1):
        assert f'id="finding-{inc.id}-{i}"' in html
    # guesses are said
    for note in case.notes:
        assert note in html
