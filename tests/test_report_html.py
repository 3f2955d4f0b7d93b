"""The HTML and markdown reports: self-contained, and everything that came
from a log is shown as text, never run."""
from __future__ import annotations

import json
import re

import pytest

import sarsleuth
from sarsleuth.render.formats.html import build_html
from sarsleuth.render.formats.markdown import render_markdown


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


def test_a_notebook_shows_an_incident_as_escaped_html(hostile_bundle):
    """``case.incidents[0]`` displayed in Jupyter: the incident fragment the
    report embeds, its hostile names as text."""
    case = sarsleuth.load(hostile_bundle, year=2014)
    html = case.incidents[0]._repr_html_()
    assert html.startswith(f'<section class="incident sev-critical" id="incident-{case.incidents[0].id}">')
    assert "killed 1 process(es): &#34;&gt;&lt;svg onload=alert(2 (largest rss 516.0 MiB)" in html
    assert "&lt;script&gt;alert(&#34;pwned&#34;)&lt;/script&gt;" in html
    assert [tag for tag, _ in _tags(html) if tag in ("script", "img", "svg")] == []


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
    from .test_hostile_inputs import _outside_code
    md = render_markdown(sarsleuth.load(hostile_bundle, year=2014))
    # outside code (shown literally) every tag is escaped: \<script> reads as text
    assert not re.search(r"(?<!\\)<(?:script|img|svg)", _outside_code(md))
    assert "script" in md


def test_html_is_self_contained(tmp_path, sample_case):
    case = sample_case("nginx-proxy-oom")
    out = tmp_path / "report.html"
    case.report(out)
    html = out.read_text()
    assert "<svg" in html                                  # plots inlined
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", html)   # nothing fetched
    assert "Memory exhaustion" in html and "97.76" in html
    assert "Sources" in html and "sar06.txt" in html


def test_html_tells_the_story_with_a_cross_source_timeline(sample_case):
    case = sample_case("nginx-proxy-oom")
    html = build_html(case, plots=False)
    overview = re.search(r'<h2 id="cross-source">.*?<p class="sub">', html, re.S).group(0)
    assert "<script" not in html
    # a lane per source (its path in the lane name's title), grouped under its host, named once
    for s in case.sources:
        assert f'<div class="tl-name">{s.path.rsplit("/", 1)[-1]} <span class="kind">({s.kind})' in overview
    assert overview.count('<div class="tl-host">Cangke_107_176</div>') == 1
    # the incident window shaded on every lane, its number linking to it
    assert overview.count('class="win"') == len(case.sources)
    assert f'href="#incident-{case.incidents[0].id}"' in overview
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


def test_warnings_travel_in_the_html_and_the_text(tmp_path):
    """A log cut short is read up to the cut, with a warning; the report
    attached to a ticket says it (the HTML and the text, as JSON and
    markdown do), not only standard error."""
    import gzip
    import io
    from html import escape

    from rich.console import Console

    from sarsleuth.render.formats.text import render_text
    from .conftest import SAMPLES
    data = gzip.compress((SAMPLES / "nginx-proxy-oom" / "messages").read_bytes())
    (tmp_path / "messages.gz").write_bytes(data[:-40])
    case = sarsleuth.load(tmp_path, year=2014)
    cut = [w for w in case.warnings if "compressed stream ends before its end marker (cut short)" in w]
    assert len(cut) == 1 and cut[0].startswith(f"{tmp_path / 'messages.gz'} (byte ")
    html = build_html(case)
    warned = re.search(r'<div class="warnings">(.*?)</div>', html, re.S).group(1)
    assert f"Warnings ({len(case.warnings)})" in warned and f"<li>{escape(cut[0])}</li>" in warned
    out = io.StringIO()
    render_text(case, Console(file=out, width=1000, markup=False, emoji=False, highlight=False))
    assert f"warning: {cut[0]}\n" in out.getvalue()


#: sar text whose host and interface names were written by an attacker: a
#: host that closes the page's script block, an interface that is a tag.
HOSTILE_SAR = (
    "Linux 5.10.0-8-amd64 (</script><b>web\u202e1) \t01/06/2014 \t_x86_64_\t(2 CPU)\n\n"
    "10:00:01 AM     IFACE   rxpck/s   txpck/s    rxkB/s    txkB/s   rxcmp/s   txcmp/s  rxmcst/s   %ifutil\n"
    + "".join(f"10:{m}:01 AM {iface:>9} {rx:9.2f}      5.00      1.00      0.50      0.00      0.00      0.00      0.00\n"
              for m, rx in (("10", 10.0), ("20", 12.0)) for iface in ("lo", "<img/src=x/onerror=alert(2)>")))


def test_the_explorer_writes_hostile_names_as_text(tmp_path):
    """Names from inputs reach the explorer as text: escaped in its markup,
    and in its data with nothing that ends the script block or makes a
    tag; control and bidirectional characters shown as escapes, as
    everywhere in the page; no script but the page's own two."""
    (tmp_path / "sar.txt").write_text(HOSTILE_SAR)
    case = sarsleuth.load(tmp_path / "sar.txt")
    assert [s.host for s in case.sources] == ["</script><b>web\u202e1"]
    html = build_html(case)
    data = re.search(r'<script type="application/json" id="explorer-data">(.*?)</script>', html, re.S).group(1)
    assert "<" not in data and ">" not in data and "\u202e" not in data
    assert json.loads(data)["hosts"][0]["name"] == "</script><b>web\\u202e1"
    assert "<h3>&lt;/script&gt;&lt;b&gt;web\\u202e1</h3>" in html
    assert '<option value="0">&lt;img/src=x/onerror=alert(2)&gt;</option>' in html
    scripts = re.findall(r"<script\b[^>]*>", html)
    assert scripts == ['<script type="application/json" id="explorer-data">', "<script>", "<script>"]
    assert [t for t, _ in _tags(html) if t == "img"] == [] and "<b>web" not in html
