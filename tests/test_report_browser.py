"""The HTML report as a reader sees it, in headless Chromium at 400, 1400
and 1920 pixels: no text overlaps other text or is cut off (folded parts
opened), every chart and timeline says its times on the clock its heading
names, every incident chart's data spans at least half of it, and the
metrics explorer zooms a range and shows the values at the time pointed
at.  The checks are shown to catch each kind of defect planted in a copy
of the report."""
from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from .conftest import SAMPLES, run_cli

WIDTHS = (400, 1400, 1920)
REPORTS = {
    "bundles": sorted((SAMPLES / "bundles").glob("*.tar.*")),
    "nginx-proxy-oom": [SAMPLES / "nginx-proxy-oom"],
    "live-loopback": [SAMPLES / "live-loopback"],
    # load-test reports and ps snapshots with no time of their own, a wall clock, no sar at all
    "image-service-ab": [SAMPLES / "image-service-ab"],
    "nginx-worker-crash": [SAMPLES / "nginx-worker-crash"],
}
#: Reports with sar data: incident charts and the explorer's sections.
CHARTED = ("bundles", "nginx-proxy-oom", "live-loopback")


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
    sections = html.count('<details class="ex-sec"')
    assert html.count('<div class="tl">') >= 2
    assert charts >= 4 and sections >= 10 if name in CHARTED else sections == (1 if name == "image-service-ab" else 0)
    for width in WIDTHS:
        result = browser.check(reports[name], width)
        assert result["problems"] == [], (name, width, result["count"])
        # every explorer section drew its charts (at least one each)
        assert result["charts"] == charts and result["explorer"] >= sections and result["texts"] > 300
        # the page just checked, as drawn (loading it again would draw the same)
        shot = tmp_path / f"{name}-{width}.png"
        browser.capture(shot)
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


#: The explorer chart drawing ``metric`` (its legend names it): where its
#: plot is in the window, and the span it shows (seconds since 1970).
FIND = """
(() => {
  const fig = [...document.querySelectorAll('.ex-chart')].find(
    f => [...f.querySelectorAll('.u-legend th')].some(th => th.textContent.trim() === %r));
  fig.scrollIntoView({block: 'center'});
  const r = fig.querySelector('.u-over').getBoundingClientRect(), u = fig.querySelector('.uplot');
  return {left: r.left, top: r.top, width: r.width, height: r.height, lo: +u.dataset.lo, hi: +u.dataset.hi};
})()
"""
#: What the legend of that chart says: {series label: value shown}.
LEGEND = """
(() => {
  const fig = [...document.querySelectorAll('.ex-chart')].find(
    f => [...f.querySelectorAll('.u-legend th')].some(th => th.textContent.trim() === %r));
  return Object.fromEntries([...fig.querySelectorAll('.u-legend tr')].map(
    tr => [tr.querySelector('th').textContent.trim(), tr.querySelector('td').textContent.trim()]));
})()
"""


def _epoch(text: str, zone: str = "Asia/Shanghai") -> float:
    return pd.Timestamp(text, tz=zone).timestamp()


@pytest.mark.parametrize("width", WIDTHS)
def test_the_explorer_zooms_a_range_and_shows_the_values_pointed_at(browser, reports, width):
    """Swap of the flagship sample (its day ends at 15:09:01): drag 14:00 to
    15:09 across %swpused, then 15:00 to 15:08, every chart of the host follows; point at 15:04:16 and every chart's
    legend reads that time, %swpused the 79.46 sar printed then."""
    line = next(ln for ln in (SAMPLES / "nginx-proxy-oom" / "sar06.txt").read_text().splitlines()
                if ln.startswith("03:04:16 PM") and " 79.46 " in ln)
    assert line.split()[2:5] == ["1722900", "6665700", "79.46"]
    browser.open(reports["nginx-proxy-oom"], width)
    browser.evaluate("""(async () => {
      document.querySelectorAll('details.ex-sec').forEach(d => {
        if (/^(Swap space|Memory) \\(/.test(d.querySelector('summary').textContent)) d.open = true; });
      await new Promise(r => setTimeout(r, 50));
    })()""")
    chart = browser.evaluate(FIND % "%swpused")
    lo, hi = chart["lo"], chart["hi"]
    assert lo <= _epoch("2014-05-06 14:00") and hi >= _epoch("2014-05-06 15:09")

    def x(t, c):
        return c["left"] + (t - c["lo"]) / (c["hi"] - c["lo"]) * c["width"]

    # the day, then the hour around the incident, then its ten minutes: a few pixels at first
    for start, end in (("14:00", "15:09"), ("15:00", "15:08")):
        chart = browser.evaluate(FIND % "%swpused")
        t1, t2 = _epoch(f"2014-05-06 {start}"), _epoch(f"2014-05-06 {end}")
        browser.drag(x(t1, chart), chart["top"] + chart["height"] / 2, x(t2, chart))
        pixel = (chart["hi"] - chart["lo"]) / chart["width"]
        for metric in ("%swpused", "%memused", "kbswpfree"):
            zoomed = browser.evaluate(FIND % metric)
            assert abs(zoomed["lo"] - t1) < 2 * pixel and abs(zoomed["hi"] - t2) < 2 * pixel, (metric, start, end)
    chart = browser.evaluate(FIND % "%swpused")
    browser.mouse("mouseMoved", x(_epoch("2014-05-06 15:04:16"), chart), chart["top"] + chart["height"] / 2)
    shown = browser.evaluate(LEGEND % "%swpused")
    assert shown["time"] == "2014-05-06 15:04:16" and shown["%swpused"] == "79.46 %"
    # the shared crosshair: the other charts of the host at the same time
    other = browser.evaluate(LEGEND % "kbswpfree")
    assert other["time"] == "2014-05-06 15:04:16" and other["kbswpfree"] == "1722900 kB"
    browser.evaluate("document.querySelector('.ex-host .ex-reset').click()")
    reset = browser.evaluate(FIND % "%memused")
    assert (reset["lo"], reset["hi"]) == (lo, hi)


def _planted(reports, tmp_path, name: str, change, report: str = "nginx-proxy-oom") -> str:
    page = tmp_path / f"{name}.html"
    page.write_text(change(reports[report].read_text()))
    return page


def _style(css: str):
    return lambda html: html.replace("</style>", css + "</style>", 1)


def _shift_labels(html: str) -> str:
    """Incident charts whose labels say their times an hour off."""
    return re.sub(r'(<text class="xt" data-t=")(\d+)', lambda m: m.group(1) + str(int(m.group(2)) + 3600), html)


@pytest.mark.parametrize("defect, width, expected, report", [
    # every level of time labels at once on a phone: they run into each other
    (_style(".tick.l2, .tick.l3 { display: block !important }"), 400, r'"\d\d:\d\d(:\d\d)?" overlaps "\d\d:\d\d',
     "live-loopback"),
    # findings that keep their desktop width: the page is wider than the phone
    (_style(".flist { min-width: 1200px }"), 400, r"page wider than the window", "nginx-proxy-oom"),
    # findings that wrap on a phone: each a card again, not a line
    (_style(".flist summary { white-space: normal }"), 400, r"finding line \d+ takes [2-9] lines",
     "nginx-proxy-oom"),
    # lane names that do not wrap in a narrow column: cut by their box
    (_style(".tl-name { flex-basis: 2rem; white-space: nowrap; overflow: hidden }"), 1400, r"cut by its box",
     "nginx-proxy-oom"),
    # a chart whose time labels were lost
    (lambda html: re.sub(r'<text class="xt"[^>]*>[^<]*</text>', "", html, count=4), 1920,
     r"chart \d+ \(.*\) has 0 time label", "nginx-proxy-oom"),
    # a timeline whose axis lost its labels
    (lambda html: re.sub(r'<span class="tick l1[^"]*"[^>]*>[^<]*</span>', "", html), 400,
     r"timeline \d+ shows 0 time label", "nginx-proxy-oom"),
    # incident charts labelled an hour off the incident's clock
    (_shift_labels, 1400, r"incident chart \d+ \(.*\): label \d\d:\d\d is not its instant on its heading's clock",
     "nginx-proxy-oom"),
    # the explorer labelling in UTC under a heading that says UTC+08:00
    (lambda html: html.replace(",28800]]", ",0]]", 1), 400,
     r"explorer chart \d+ \(.*\): label .* is not its instant on its heading's clock", "nginx-proxy-oom"),
    # the explorer's heading naming no clock
    (lambda html: html.replace('<span class="clock">UTC+08:00</span>', '<span class="clock"></span>', 1), 1920,
     r"explorer chart \d+ \(.*\): its heading names no clock", "nginx-proxy-oom"),
])
def test_the_checks_catch_a_planted_defect(browser, reports, tmp_path, defect, width, expected, report):
    result = browser.check(_planted(reports, tmp_path, "planted", defect, report), width)
    # the same report unplanted has no problem at that width: test_reports_read_at_every_width
    assert any(re.search(expected, p) for p in result["problems"]), result["problems"][:5]


def test_the_check_catches_an_incident_drawn_in_too_wide_a_window(browser, reports, tmp_path, monkeypatch):
    """The live sample's 59 s incident drawn as before, as long again as
    the incident (at least 5 minutes) either side: its sar data (2 min 21 s)
    fills a fifth of the chart, which the check reports."""
    from sarsleuth.analysis import charted
    from sarsleuth.render.formats.html import build_html

    def as_before(incident, series=()):
        span = max(pd.Timestamp(incident.end) - pd.Timestamp(incident.start), pd.Timedelta(minutes=5))
        return pd.Timestamp(incident.start) - span, pd.Timestamp(incident.end) + span

    import sarsleuth
    case = sarsleuth.load(SAMPLES / "live-loopback")
    monkeypatch.setattr(charted, "incident_frame", as_before)
    page = tmp_path / "wide.html"
    page.write_text(build_html(case))
    problems = browser.check(page, 1400)["problems"]
    assert any(re.fullmatch(r"incident chart \d+ \(.*\) draws its data over 2\d % of its width", p) for p in problems)
    # as drawn now, the same sample has no problem at 1400 px: test_reports_read_at_every_width


def test_hostile_names_stay_text_in_the_drawn_explorer(browser, tmp_path):
    """Drawn in the browser, the hostile host and interface names are the
    text of the explorer's heading, picker and captions; nothing they
    spell became an element."""
    from sarsleuth.render.formats.html import build_html
    import sarsleuth

    from .test_report_html import HOSTILE_SAR
    (tmp_path / "sar.txt").write_text(HOSTILE_SAR)
    page = tmp_path / "hostile.html"
    page.write_text(build_html(sarsleuth.load(tmp_path / "sar.txt")))
    result = browser.check(page, 400)
    assert result["problems"] == [] and result["explorer"] == 4
    shown = browser.evaluate("""JSON.stringify([document.querySelector('.ex-host h3').textContent,
      document.querySelector('select.ex-dev option').textContent,
      document.querySelector('.ex-chart figcaption').textContent,
      document.querySelectorAll('img').length + [...document.querySelectorAll('b')].filter(b => /web/.test(b.textContent)).length])""")
    assert json.loads(shown) == ["</script><b>web\\u202e1", "<img/src=x/onerror=alert(2)>",
                                 "rxpck/s, txpck/s (/s), <img/src=x/onerror=alert(2)>", 0]
