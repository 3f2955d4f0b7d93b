"""``--plots`` figures and the API's plots: the story's clock, round time
labels, a title per figure with the date said once, and matplotlib left
as the session had it (backend and settings)."""
from __future__ import annotations

import re

import pytest

from .conftest import SAMPLES, run_cli


def _texts(svg: str) -> list[str]:
    """The text of an SVG written with ``svg.fonttype: none`` (text kept as text)."""
    return [re.sub(r"<[^>]+>", "", t).strip() for t in re.findall(r"<text\b[^>]*>(.*?)</text>", svg, re.S)]


@pytest.fixture(scope="module")
def flagship_plot(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("plots")
    proc = run_cli("analyze", SAMPLES / "nginx-proxy-oom", "--plots", out, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    (svg,) = out.glob("*.svg")
    assert svg.name == "incident-01-memory-exhaustion.svg"
    return svg.read_text()


def test_a_plot_is_titled_and_on_the_story_clock(flagship_plot):
    """The flagship sample's story is on UTC+08:00 (its sa file's zone):
    the figure says so under its axis, its labels are round minutes of that
    clock (the swap climbed from 15:02; in UTC that is 07:02), its title
    names the incident, and the date is said once."""
    texts = _texts(flagship_plot)
    joined = " ".join(texts)
    assert "#1 Memory exhaustion on Cangke_107_176: available memory down to 0.9 % of RAM with reclaim" in joined
    assert joined.count("2014-05-06") == 1
    assert "time (UTC+08:00)" in texts
    times = [t for t in texts if re.fullmatch(r"\d\d:\d\d(:\d\d)?", t)]
    assert times and all(re.fullmatch(r"\d\d:\d[05]", t) for t in times), times
    # every panel says its times (8 panels), from the lead-up before the
    # memory began to fall (14:50:01, the incident's onset) to its end
    assert times.count("14:40") == 8 and times.count("15:00") == 8 and times[0] < "14:50"
    assert not any(t.startswith("07:") for t in times)


def test_plotting_leaves_the_sessions_matplotlib_as_it_was(sample_case):
    """Neither the files' figures nor the API's change the backend, the
    interactive mode or a setting of the session."""
    import matplotlib
    import matplotlib.pyplot as plt

    from sarsleuth.analysis.compare import compare_reports
    from sarsleuth.render.comparison import comparison_figure, plot_comparison
    from sarsleuth.render.plots import figure_svg, incident_figure
    case = sample_case("nginx-proxy-oom")
    before = (matplotlib.get_backend(), matplotlib.is_interactive(), dict(matplotlib.rcParams))
    svg = figure_svg(incident_figure(case, case.incidents[0]))
    assert "<svg" in svg and svg.count("<text") > 20           # text kept as text while drawing
    ax = case.plot("swap", "%swpused")
    assert ax.get_ylabel() == "%swpused (%)" and ax.get_xlabel() == "time (UTC+08:00)"
    runs = compare_reports(sorted((SAMPLES / "image-service-ab").glob("ab-*.txt")))
    comparison_figure(runs)
    plot_comparison(runs)
    plt.close("all")
    after = (matplotlib.get_backend(), matplotlib.is_interactive(), dict(matplotlib.rcParams))
    assert after[:2] == before[:2]
    assert {k: v for k, v in after[2].items() if before[2].get(k) != v} == {}
