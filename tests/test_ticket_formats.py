"""The ticket formats: markdown that reads as plain text (no HTML entity,
no backslash before a parenthesis, a backslash only where a renderer would
take markup) and still renders as written; Jira wiki markup with its own
tables and code blocks."""
from __future__ import annotations

import io
import re

import pytest

import sarsleuth
from sarsleuth import render

from .conftest import SAMPLES

CASES = ["nginx-proxy-oom", "image-service-ab", "tengine-720k", "nginx-worker-crash", "live-loopback",
         "sysstat-versions"]


def _render(fmt: str, case) -> str:
    out = io.StringIO()
    render.write_case(fmt, case, out)
    return out.getvalue()


@pytest.fixture(scope="module")
def bundle_case():
    return sarsleuth.load(*sorted((SAMPLES / "bundles").glob("*.tar.*")))


def _cases(sample_case, bundle_case):
    return [(name, sample_case(name)) for name in CASES] + [("bundles", bundle_case)]


def _rendered(md: str) -> str:
    from markdown_it import MarkdownIt
    return MarkdownIt("commonmark").enable("table").enable("strikethrough").render(md)


def test_markdown_reads_as_plain_text_and_renders_as_written(sample_case, bundle_case):
    for name, case in _cases(sample_case, bundle_case):
        md = _render("markdown", case)
        assert not re.search(r"&(?:#\d+|#x[0-9a-fA-F]+|[A-Za-z]+);", md), name
        assert "\\(" not in md and "\\)" not in md, name
        assert "-&gt;" not in md and "->" in md or not case.incidents, name
        html = _rendered(md)
        # every table row has its columns: no pipe from an input split a cell
        for table in re.findall(r"<table>.*?</table>", html, re.S):
            widths = {len(re.findall(r"<t[hd][ >]", row)) for row in re.findall(r"<tr>.*?</tr>", table, re.S)}
            assert len(widths) == 1, (name, widths)
        # no emphasis but the report's own: bold headlines and titles, italic notes
        emphasised = re.findall(r"<em>(.*?)</em>", html, re.S)
        assert all(e.endswith((".", ")")) or "not shown here" in e for e in emphasised), (name, emphasised[:3])
        # evidence lines are fenced, as the files have them
        for inc in case.incidents[:5]:
            for f in inc.findings:
                for e in f.evidence[:3]:
                    if e.line:
                        assert f":{e.line}  {e.text}" in md, (name, e.path, e.line)


def test_markdown_escapes_what_would_be_markup():
    from sarsleuth.render.formats.markdown import md_escape
    assert md_escape("proxy_buffers 1024 256k (nginx_-T:28) -> swap") == "proxy_buffers 1024 256k (nginx\\_-T:28) -> swap"
    assert md_escape("<script>alert(1)</script> &amp; [x](javascript:y) *b* `c`") == \
        "\\<script>alert(1)\\</script> \\&amp; [x\\](javascript:y) \\*b\\* \\`c\\`"
    assert md_escape("| a | b |", cell=True) == "\\| a \\| b \\|"
    assert md_escape("# not a heading", start=True) == "\\# not a heading"
    assert md_escape("1. not a list", start=True) == "1\\. not a list"
    assert md_escape("2 * 3 = 6 and __init__") == "2 * 3 = 6 and \\_\\_init\\_\\_"


def test_jira_renders_tables_and_code_blocks(sample_case, bundle_case):
    for name, case in _cases(sample_case, bundle_case):
        jira = _render("jira", case)
        assert jira.startswith("h1. sarsleuth incident summary\n"), name
        assert "```" not in jira and "|---" not in jira and "**" not in jira and "&lt;" not in jira, name
        if case.incidents:
            assert "\n||#||severity||start||end||incident||score||\n" in jira, name
            rows = re.findall(r"(?m)^\|(?!\|).*\|$", jira)
            assert len(rows) >= len(case.incidents), name
            assert "\nh2. 1. " in jira and "\nh3. Timeline (" in jira and "\nh3. Evidence" in jira, name
            blocks = jira.split("{noformat}")
            assert len(blocks) % 2 == 1 and len(blocks) >= 3, name          # opened and closed
            first = case.incidents[0].findings[0].evidence[0]
            assert f"{first.text}" in blocks[1], name                       # verbatim inside
    table = io.StringIO()
    render.write_table("jira", _detectors_table(), table)
    assert table.getvalue().splitlines()[2] == "||detector||category||what it looks for||"
    assert "|{{oom-kill}}|memory-exhaustion|" in table.getvalue()


def _detectors_table():
    from sarsleuth.detectors import registry
    from sarsleuth.render.table import Column, Table, key
    records = [{"id": d.id, "category": d.category, "summary": d.summary} for d in registry().values()]
    return Table(title="detectors", records=records, columns=[
        Column("detector", key("id"), code=True), Column("category", key("category")),
        Column("what it looks for", key("summary"))])


def test_jira_escapes_what_would_be_markup():
    from sarsleuth.render.formats.jira import jira_escape
    assert jira_escape("tcp_max_tw_buckets 2014-05-06 a - b") == "tcp_max_tw_buckets 2014-05-06 a - b"
    assert jira_escape("{code} [x|http://e] !img.png! *b* --all (x)") == \
        "\\{code\\} \\[x\\|http://e\\] \\!img.png\\! \\*b\\* \\-\\-all &#40;x)"
    assert jira_escape("# not a list", start=True) == "\\# not a list"
