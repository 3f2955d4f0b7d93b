"""Each host's incident told on that host's wall clock, with its offset; a
view across hosts on one stated zone.  On the sos collect archive of two
hosts (Asia/Shanghai and Europe/Paris) and on a case of two hosts written
here the way sar and rsyslog write them."""
from __future__ import annotations

import html
import io
import re

import pytest
from rich.console import Console

import sarsleuth
from sarsleuth.render.formats.html import build_html
from sarsleuth.render.formats.json import document
from sarsleuth.render.formats.markdown import render_markdown
from sarsleuth.render.formats.text import render_text
from sarsleuth.timebase.clock import Clock

from .conftest import SAMPLES

TWO_ZONE_BUNDLE = SAMPLES / "bundles" / "sos-collector-incident-2026-11-23-234bd0.tar.gz"


def outputs(case) -> dict:
    buf = io.StringIO()
    render_text(case, Console(file=buf, width=400, markup=False, emoji=False, highlight=False))
    # markdown as read: its escapes (``\(``, ``\+``) taken off
    markdown = re.sub(r"\\(.)", r"\1", render_markdown(case))
    return {"text": buf.getvalue(), "markdown": markdown, "html": build_html(case, plots=False),
            "json": document(case)}


def incident_on(doc: dict, host: str, category: str | None = None) -> dict:
    found = [i for i in doc["incidents"] if i["hosts"] == [host] and category in (None, i["category"])]
    assert found, [i["hosts"] for i in doc["incidents"]]
    return found[0]


# --------------------------------------------------- the two-zone sos archive
@pytest.fixture(scope="module")
def bundle_case():
    return sarsleuth.load(TWO_ZONE_BUNDLE)


def test_each_bundle_host_is_told_on_its_own_clock(bundle_case):
    """sa06 of Cangke_107_176 records +08:00: memory began to run out in
    the sample of 06:50:01 UTC, 14:50:01 there (past its floor at 15:02:03);
    web07 (+01:00) filled its TIME_WAIT table at 05:25:03 UTC, 06:25:03 in
    Paris."""
    out = outputs(bundle_case)
    tengine = incident_on(out["json"], "Cangke_107_176")
    web = incident_on(out["json"], "web07")
    # the 10-minute sample stamped 14:50:01 covers 14:40:01 onwards: where it began is said as that interval
    assert "from between 2014-05-06 14:40:01 and 14:50:01 to 15:09:01 (UTC+08:00)" in tengine["summary"]
    assert tengine["story"]["headline"].startswith(
        "Memory exhaustion on Cangke_107_176 from between 2014-05-06 14:40:01 and 14:50:01 to 15:09:01 (UTC+08:00)")
    assert tengine["start"] == "2014-05-06T14:50:01+08:00"
    assert "from 2026-11-23 06:25:03 to 06:25:36 (UTC+01:00)" in web["summary"]
    assert web["start"].endswith("+01:00") and web["start"].startswith("2026-11-23T06:25:03")
    # the story's own times: the timeline, the cause's span and the evidence
    assert tengine["story"]["timeline"][0]["clock"] == "14:50:01"
    assert "use from between 14:40:01 and 14:50:01 to 15:07:01, past its threshold from 15:02:03, peak at 15:06:05" in tengine["story"]["cause"]
    assert "between 15:02:03 and 15:07:01" in tengine["story"]["cause"]
    evidence = [e["text"] for f in tengine["findings"] for e in f["evidence"]]
    # log evidence is the line as the bundle's file has it, on the host's clock
    assert any(t.startswith("May  6 15:04:13 Cangke_107_176 kernel: ") for t in evidence)
    assert not any("07:04:13" in t for t in evidence)
    for f in tengine["findings"]:
        assert f["start"] is None or f["start"].endswith("+08:00")
    for fmt in ("text", "markdown", "html"):
        shown = out[fmt]
        assert "between 2014-05-06 14:40:01 and 14:50:01 to 15:09:01 (UTC+08:00)" in shown, fmt
        assert "2026-11-23 06:25:03 to 06:25:36 (UTC+01:00)" in shown, fmt
        assert "Timeline (UTC+08:00)" in shown and "Timeline (UTC+01:00)" in shown, fmt


def test_the_list_across_hosts_says_each_time_on_its_own_clock(bundle_case):
    """One report, one clock per heading: the incident list gives each time
    as its incident's story does (15:02:03 in the list and in the card,
    never 07:02:03 above 15:02:03), with the offset beside it, and its
    heading says so."""
    out = outputs(bundle_case)
    assert bundle_case.tz == "UTC"
    said = "times: each on its host's clock, its UTC offset beside it"
    assert said in out["text"] and said + "." in out["markdown"] and said + ";" in html.unescape(out["html"])
    assert re.search(r"\| 1 \| critical \| 2014-05-06 14:50:01 UTC\+08:00 \| 2014-05-06 15:09:01 UTC\+08:00 \|",
                     out["markdown"])
    assert re.search(r"\| 2 \| high \| 2026-11-23 06:25:03 UTC\+01:00 \|", out["markdown"])
    assert re.search(r"│ critical +│ 2014-05-06 14:50:01 UTC\+08:00 +│", out["text"])
    assert re.search(r"│ high +│ 2026-11-23 06:25:03 UTC\+01:00 +│", out["text"])
    assert "07:02:03" not in out["text"] + out["markdown"] + out["html"]
    assert ("hosts record different time zones (+01:00, +08:00); each host's story is told on its own clock, "
            "with its offset, and the case's tables are in UTC") in out["json"]["notes"]


# ---------------------------------------- two hosts of two zones, written here
def _sar_cpu(host: str, busy_from: int, busy_to: int) -> str:
    """`sar -u 1` for 90 s from 10:00:00, as sysstat 12 prints it."""
    lines = [f"Linux 6.1.0-13-amd64 ({host}) \t11/21/2026 \t_x86_64_\t(2 CPU)", "",
             "10:00:00        CPU     %user     %nice   %system   %iowait    %steal     %idle"]
    for s in range(90):
        user = 99.20 if busy_from <= s < busy_to else 4.00
        idle = max(0.0, 100 - user - 0.5)
        lines.append(f"10:{s // 60:02d}:{s % 60:02d}        all {user:9.2f}      0.00      0.50      0.00      0.00"
                     f" {idle:9.2f}")
    return "\n".join(lines) + "\n\n"


def _rsyslog(host: str, offset: str) -> str:
    """rsyslog's RFC 3339 template: the host's wall clock and its offset (a
    SYN flood two hours before, the line that gives the host its zone)."""
    return (f"2026-11-21T08:00:01.104211{offset} {host} kernel: TCP: request_sock_TCP: Possible SYN flooding "
            "on port 80. Sending cookies.  Check SNMP counters.\n"
            f"2026-11-21T09:59:58.104211{offset} {host} systemd[1]: Starting sysstat-collect.service...\n")


@pytest.fixture(scope="module")
def two_zone_case(tmp_path_factory):
    root = tmp_path_factory.mktemp("two-zones")
    for host, offset in (("shanghai-web", "+08:00"), ("paris-web", "+01:00")):
        (root / host).mkdir()
        (root / host / "sar.txt").write_text(_sar_cpu(host, 20, 80))
        (root / host / "messages").write_text(_rsyslog(host, offset))
    return sarsleuth.load(root)


def test_each_sar_host_is_told_on_its_own_clock(two_zone_case):
    """Both hosts' CPUs were busy from 10:00:20 on their own clocks: 02:00:20
    and 09:00:20 UTC, two incidents, each told at 10:00:20 with its offset."""
    out = outputs(two_zone_case)
    for host, offset, utc in (("shanghai-web", "+08:00", "02:00:20"), ("paris-web", "+01:00", "09:00:20")):
        inc = incident_on(out["json"], host, "cpu-saturation")
        assert inc["start"] == f"2026-11-21T10:00:20{offset}"
        said = f"{host} from 2026-11-21 10:00:20 to 10:01:19 (UTC{offset})"
        assert said in inc["summary"] and said in inc["story"]["headline"]
        assert inc["story"]["timeline"][0]["clock"] == "10:00:20"
        for fmt in ("text", "markdown", "html"):
            assert said in out[fmt], (fmt, host)
            assert f"Timeline (UTC{offset})" in out[fmt], (fmt, host)
        # the list across hosts: each time on its own clock, its offset beside it (never UTC's {utc})
        assert f"2026-11-21 10:00:20 UTC{offset}" in out["markdown"] and f"2026-11-21 {utc}" not in out["markdown"]
    assert two_zone_case.tz == "UTC"


def test_story_zone_decides_one_clock_per_incident():
    clock = Clock(zone="UTC", host_zones={"a": "Asia/Shanghai", "b": "Europe/Paris", "c": "Asia/Shanghai"})
    assert clock.story_zone(["a"]) == "Asia/Shanghai"
    assert clock.story_zone(["a", "c"]) == "Asia/Shanghai"
    assert clock.story_zone(["a", "b"]) == "UTC"
    assert clock.story_zone(["x"], otherwise=clock.zone) == "UTC"
    assert Clock().story_zone(["x"]) is None
    # --tz names one clock for every story
    assert Clock(zone="Europe/Paris", host_zones=clock.host_zones, one_clock=True).story_zone(["a"]) is None


# ------------------------------------------------------- a zone that is a guess
def test_a_guessed_zone_is_said_in_every_output():
    """error.log and the syslog of slbv2test04.cm3 carry no zone: they are
    read in +08:00, which sa06 of the other host records, and every output
    says that this is a guess; both hosts are told on +08:00."""
    case = sarsleuth.load(SAMPLES / "tengine-720k", SAMPLES / "nginx-proxy-oom")
    guess = "times without a zone of slbv2test04.cm3 are taken to be in +08:00"
    out = outputs(case)
    assert any(n.startswith(guess) and "a guess" in n for n in out["json"]["notes"])
    for fmt in ("text", "markdown", "html"):
        flat = " ".join(out[fmt].split())
        assert guess in flat, fmt
    socket = incident_on(out["json"], "slbv2test04.cm3")
    assert "(UTC+08:00)" in socket["story"]["headline"]


# ---------------------------------------------- one incident across two zones
def test_an_incident_across_hosts_of_two_zones_is_told_in_utc_and_says_so():
    """A kill on the Paris host without a time on the shared clock, joined
    by PID to memory running out on the Shanghai host: one incident, told
    in UTC with the reason, each finding's time keeping its host's offset."""
    import pandas as pd
    from sarsleuth.analysis.correlate import correlate
    from sarsleuth.model import Finding
    start = pd.Timestamp("2014-05-06 15:02:03", tz="Asia/Shanghai")
    timed = Finding(detector="memory-pressure", title="Memory exhausted", severity="high", start=start,
                    end=start + pd.Timedelta(minutes=5), host="sh", refs={"pids": [4242]})
    untimed = Finding(detector="oom-kill", title="1 process(es) killed by the OOM killer", severity="critical",
                      start=None, end=None, host="par", aligned=False, refs={"pids": [4242]})
    clock = Clock(zone="UTC", host_zones={"sh": "Asia/Shanghai", "par": "Europe/Paris"})
    (inc,) = correlate([timed, untimed], clock)
    assert inc.hosts == ["par", "sh"] and inc.zone == "UTC"
    assert "from 2014-05-06 07:02:03 to 07:07:03 (UTC: par, sh are in different time zones)" in inc.summary
    assert inc.story["timeline"][0]["clock"] == "07:02:03"
    assert timed.start.isoformat() == "2014-05-06T15:02:03+08:00"
