"""The HTML report as a reader sees it, in headless Chromium at 400, 1400
and 1920 pixels: no text overlaps other text or is cut off (folded parts
opened), every chart and timeline says its times.  The check is shown to
catch each kind of defect planted in a copy of the report."""
from __future__ import annotations

import re

import pytest

from .conftest import SAMPLES, run_cli

WIDTHS = (400, 1400, 1920)
REPORTS = {
    "bundles": sorted((SAMPLES / "bundles").glob("*.tar.*")),
    "nginx-proxy-oom": [SAMPLES / "nginx-proxy-oom"],
}


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict:
    out = {}
    for name, paths in REPORTS.items():
        page = tmp_path_factory.mktemp("reports") / f"{name}.html"
        proc = run_cli("analyze", *paths, "--html", page, "--format", "json")
        assert proc.returncode == 0, proc.stderr
        out[name] = page
    return out


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_reports_read_at_every_width(browser, reports, name, tmp_path):
    html = reports[name].read_text()
    charts = html.count('<svg class="chart"')
    assert charts >= 20 and html.count('<div class="tl">') >= 2
    for width in WIDTHS:
        result = browser.check(reports[name], width)
        assert result["problems"] == [], (name, width, result["count"])
        assert result["charts"] == charts and result["texts"] > 1000
        shot = tmp_path / f"{name}-{width}.png"
        browser.screenshot(reports[name], width, shot)
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _planted(reports, tmp_path, name: str, change) -> str:
    page = tmp_path / f"{name}.html"
    page.write_text(change(reports["nginx-proxy-oom"].read_text()))
    return page


def _style(css: str):
    return lambda html: html.replace("</style>", css + "</style>", 1)


@pytest.mark.parametrize("defect, width, expected", [
    # every level of time labels at once on a phone: they run into each other
    (_style(".tick.l2, .tick.l3 { display: block !important }"), 400, r'"\d\d:\d\d(:\d\d)?" overlaps "\d\d:\d\d'),
    # a table that keeps its desktop width: the page is wider than the phone
    (_style("table.findings { min-width: 1200px }"), 400, r"page wider than the window"),
    # lane names that do not wrap in a narrow column: cut by their box
    (_style(".tl-name { flex-basis: 2rem; white-space: nowrap; overflow: hidden }"), 1400, r"cut by its box"),
    # a chart whose time labels were lost
    (lambda html: re.sub(r'<text class="xt"[^>]*>[^<]*</text>', "", html, count=4), 1920,
     r"chart \d+ \(.*\) has 0 time label"),
    # a timeline whose axis lost its labels
    (lambda html: re.sub(r'<span class="tick l1[^"]*"[^>]*>[^<]*</span>', "", html), 400,
     r"timeline \d+ shows 0 time label"),
])
def test_the_layout_check_catches_a_planted_defect(browser, reports, tmp_path, defect, width, expected):
    result = browser.check(_planted(reports, tmp_path, "planted", defect), width)
    assert any(re.search(expected, p) for p in result["problems"]), result["problems"][:5]
    assert browser.check(reports["nginx-proxy-oom"], width)["problems"] == []
