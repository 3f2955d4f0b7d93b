"""Every number true: the story audited against its own data.

The audit (``analyze --audit``, :mod:`sarsleuth.analysis.audit`) over
every bundled sample; each class of number the issue found wrong, on
real files and on lines written the way sar prints them, with its near
miss: one definition per figure, counter anomalies, time honest to the
sampling, roles by onset, limits and defaults, one clock and clean markup.
The lab's cases are audited with their score (tests/test_lab.py), the
corpus with its detectors (tests/test_corpus_detectors.py).
"""
from __future__ import annotations

import html
import io
import re
import shutil
import subprocess
from dataclasses import replace

import pandas as pd
import pytest
from rich.console import Console

import sarsleuth
from sarsleuth.analysis.audit import Audit, Difference, audit
from sarsleuth.model import shortened

from .conftest import SAMPLES, run_cli

#: Every folder of samples/ an operator would analyse, and each bundle.
SAMPLE_INPUTS = sorted([p.name for p in SAMPLES.iterdir() if p.is_dir() and p.name not in ("record", "bundles",
                                                                                           "sysstat-versions")]
                       + [f"bundles/{p.name}" for p in (SAMPLES / "bundles").glob("*.tar.*")]
                       + [f"sysstat-versions/{p.name}" for p in (SAMPLES / "sysstat-versions").iterdir()
                          if p.is_dir()])


@pytest.mark.parametrize("name", SAMPLE_INPUTS)
def test_every_sample_s_story_agrees_with_its_data(sample_case, name):
    case = sample_case(name)
    found = audit(case)
    assert found.lines() == [], name
    if any(f.figures for f in case.findings):
        assert found.figures > 0 and found.checked >= found.figures


def test_the_flagship_sample_is_checked_figure_by_figure(sample_case):
    found = audit(sample_case("nginx-proxy-oom"))
    assert found.figures >= 40 and found.numbers >= 40 and found.times >= 25
    assert found.summary().endswith(", 0 differences")


# ----------------------------------------------------- what a difference is
def test_a_number_the_data_do_not_give_is_a_difference(sample_case):
    """A title whose await is not its figure's, a figure whose value is
    not what its definition measures, an effect told before its cause:
    each one line; the untouched case none."""
    case = sample_case("nginx-proxy-oom")
    assert audit(case).differences == []
    disk = next(f for f in case.findings if f.detector == "disk-saturation")
    peak = next(g for g in disk.figures if g.name == "peak_await_ms")
    told = replace(disk, title=disk.title.replace("202.55", "151.55"))
    wrong = replace(disk, figures=[replace(g, value=101.55) if g is peak else g for g in disk.figures])
    for bad, said in ((told, ["the title says 151.55, which none of its figures gives"]),
                      (wrong, ["peak_await_ms is 101.55 (max of await sda), the data give 202.55",
                               "the title says 202.55, which none of its figures gives"])):
        found = audit(_with(case, [bad if f is disk else f for f in case.findings]))
        assert [d.what for d in found.differences] == said
        assert found.lines()[0].startswith('disk-saturation "Disk sda saturated')


def _with(case, findings):
    class View:
        pass
    out = View()
    for name in ("store", "events", "reports", "sources", "hosts", "clock", "options"):
        setattr(out, name, getattr(case, name))
    out.findings, out.incidents = findings, []
    return out


def test_analyze_audit_says_how_many_figures_agree(samples):
    ran = run_cli("analyze", samples / "tengine-720k", "--audit", "--format", "json")
    assert ran.returncode == 0
    (said,) = [ln for ln in ran.stderr.splitlines() if "audit:" in ln]
    assert re.fullmatch(r"sarsleuth: audit: [\d,]+ figures checked \(.*\), 0 differences", said)
    import json
    doc = json.loads(ran.stdout)
    assert doc["audit"]["differences"] == [] and doc["audit"]["checked"] > 20


def test_analyze_audit_exits_3_on_a_difference(samples, monkeypatch):
    def found(case):
        return Audit(figures=1, differences=[Difference('disk-saturation "Disk sda saturated"',
                                                        "the title says 101.55, which none of its figures gives")])
    monkeypatch.setattr("sarsleuth.case.audit_story", found)
    ran = run_cli("analyze", samples / "tengine-720k", "--audit")
    assert ran.returncode == 3
    assert ('sarsleuth: audit: disk-saturation "Disk sda saturated": the title says 101.55, which none of its '
            "figures gives") in ran.stderr
    assert "1 figures checked (1 measured again, 0 numbers and 0 times of the story), 1 difference" in ran.stderr


def test_a_fleet_is_audited_host_by_host_only(samples):
    ran = run_cli("analyze", samples / "tengine-720k", "--audit", "--fleet")
    assert ran.returncode == 2 and "--audit audits one case's story: add --no-fleet" in ran.stderr


# ------------------------------------------------ 1. one definition per figure
def test_disk_saturation_states_await_as_sar_prints_it(sample_case):
    """The proxy's sda: await's largest value over the episode is 202.55 ms
    (15:06:05), 56.54 ms at %util's peak (15:02:03): the title states the
    first as "up to", the evidence the second at its time, both as sar
    prints them."""
    case = sample_case("nginx-proxy-oom")
    f = next(f for f in case.findings if f.detector == "disk-saturation")
    assert f.title == ("Disk sda saturated: %util 96.00 %, await up to 202.55 ms (usual 0.28 ms), "
                       "aqu-sz up to 61.00")
    assert f.evidence[0].text == "sda at 15:02:03, its %util peak: %util 96.00, aqu-sz 61.00, await 56.54 ms"
    figures = {g.name: g for g in f.figures}
    assert (figures["peak_await_ms"].stat, figures["peak_await_ms"].at.strftime("%H:%M:%S")) == ("max", "15:06:05")
    # the sustained level it was judged on: the median of the episode's eight rows, 15:02:03 to 15:09:01
    # (the disk still 61 % busy with 9 requests queued at 15:08 and 15:09): (81.30 + 90.58) / 2
    assert figures["median_await_ms"].text() == "85.94"
    if shutil.which("sar") is None:
        pytest.skip("sysstat's sar is not installed")
    rows = subprocess.run(["sar", "-d", "-f", str(SAMPLES / "nginx-proxy-oom" / "sa06")], capture_output=True,
                          text=True, env={"LC_ALL": "C", "TZ": "Asia/Shanghai", "PATH": "/usr/bin:/bin"}).stdout
    head = next(ln.split() for ln in rows.splitlines() if "DEV" in ln.split())
    sda = {ln.split()[0]: dict(zip(head[1:], ln.split()[1:])) for ln in rows.splitlines()
           if len(ln.split()) == len(head) and ln.split()[1] == "sda" and "15:02:03" <= ln.split()[0] <= "15:07:01"}
    assert max(sda, key=lambda t: float(sda[t]["await"])) == "15:06:05"
    assert sda["15:06:05"]["await"] == "202.55" and sda["15:02:03"]["await"] == "56.54"
    assert sda["15:02:03"]["%util"] == "96.00"


# ------------------------------------------------------ 3. physical bounds
def _sar_fs(iused: str, pct: str) -> str:
    """sar -F of sysstat 12, ten minutes apart, a root filesystem whose
    inode count reads as 2^64 - 33 at one sample."""
    rows = [("10:10:01", "1213", "19201", "19201593", "455", "0.00")] * 3
    out = ["Linux 5.14.0-70.el9.x86_64 (db-9) \t03/02/2024 \t_x86_64_\t(4 CPU)", "",
           "10:00:01     MBfsfree  MBfsused   %fsused  %ufsused     Ifree     Iused    %Iused FILESYSTEM"]
    times = ["10:10:01", "10:20:01", "10:30:01", "10:40:01"]
    for t, (_, free, used, ifree, iu, ip) in zip(times, rows + [rows[0]]):
        if t == "10:30:01":
            iu, ip = iused, pct
        out.append(f"{t}  {free:>11} {used:>9}     94.06     95.32 {ifree:>9} {iu:>9} {ip:>9} /dev/vda1")
    return "\n".join(out) + "\n"


def test_an_inode_count_read_as_unsigned_is_a_counter_anomaly(tmp_path):
    (tmp_path / "sar.txt").write_text(_sar_fs("18446744073709551583", "755597903192239.62"))
    case = sarsleuth.load(tmp_path / "sar.txt")
    assert not [f for f in case.findings if f.detector == "filesystem-full"]
    (said,) = [w for w in case.warnings if "counter anomal" in w]
    assert "filesystem /dev/vda1 at 2024-03-02 10:30:01: Iused 18446744073709551616 (outside 0-2^63), %Iused " \
           "755597903192239.62 (outside 0-100): counter anomalies, left out of the analysis" in said
    assert "(record: line 6: 10:30:01 1213 19201 94.06 95.32 19201593 18446744073709551583 755597903192239.62" in said
    assert audit(case).differences == []


def test_an_inode_table_really_full_is_said(tmp_path):
    """The near miss: %Iused 99.50 is in range, and is a full filesystem."""
    (tmp_path / "sar.txt").write_text(_sar_fs("19201000", "99.50"))
    case = sarsleuth.load(tmp_path / "sar.txt")
    (f,) = [f for f in case.findings if f.detector == "filesystem-full"]
    assert f.title.startswith("/dev/vda1 out of inodes: %Iused 99.50 at 10:30:01 (was 0.00 at 10:10:01)")
    assert not [w for w in case.warnings if "counter anomal" in w]


AVERAGES_ONLY = """Linux 3.10.0-1160.el7.x86_64 (db01) \t03/14/2024 \t_x86_64_\t(8 CPU)

Average:        CPU     %user     %nice   %system   %iowait    %steal     %idle
Average:        all     12.30      0.00      3.10      0.20      0.00    104.40
Average:          0     11.90      0.00      3.00      0.10      0.00     85.00
"""


def test_a_paste_of_averages_alone_is_said_and_its_figures_bound_checked(tmp_path):
    """A paste of sar's Average rows only: nothing timed to judge (said),
    and %idle 104.40 no CPU can reach is a counter anomaly, told once with
    its line; CPU 0's row, in range, is not."""
    (tmp_path / "sar.txt").write_text(AVERAGES_ONLY)
    case = sarsleuth.load(tmp_path / "sar.txt")
    assert case.incidents == []
    said = [w for w in case.warnings if "counter anomal" in w]
    assert said == [f"{tmp_path / 'sar.txt'}: cpu all Average row: %idle 104.40 (outside 0-100): counter anomaly "
                    "(line 4: Average: all 12.30 0.00 3.10 0.20 0.00 104.40)"]
    assert any("only sar's Average rows, no timed sample" in w and w.endswith("(line 4)") for w in case.warnings)
    near = AVERAGES_ONLY.replace("104.40", " 84.40")
    (tmp_path / "near.txt").write_text(near)
    assert not [w for w in sarsleuth.load(tmp_path / "near.txt").warnings if "counter anomal" in w]


def _sar_psi(peak: str) -> str:
    """sar -q CPU of sysstat 12.7 (1 s), CPU pressure a minute long."""
    out = ["Linux 6.1.0-18-amd64 (app-3) \t11/24/2026 \t_x86_64_\t(2 CPU)", "",
           "13:00:00     %scpu-10  %scpu-60 %scpu-300     %scpu"]
    for s in range(1, 121):
        value = "2.00" if s < 30 or s > 90 else ("71.40" if s != 60 else peak)
        out.append(f"13:{s // 60:02d}:{s % 60:02d}        40.00     20.00      5.00 {value:>9}")
    return "\n".join(out) + "\n"


def test_psi_over_100_is_left_out_and_the_stall_told_from_the_rest(tmp_path):
    (tmp_path / "sar.txt").write_text(_sar_psi("100.60"))
    case = sarsleuth.load(tmp_path / "sar.txt")
    (f,) = [f for f in case.findings if f.detector == "cpu-stall"]
    assert "peak 71.4 %" in f.title and "100.6" not in f.title
    assert any("%scpu 100.60 (outside 0-100)" in w for w in case.warnings)
    (tmp_path / "near.txt").write_text(_sar_psi("99.90"))          # in range: the peak
    (g,) = [f for f in sarsleuth.load(tmp_path / "near.txt").findings if f.detector == "cpu-stall"]
    assert "peak 99.9 %" in g.title


def test_disk_util_over_100_never_makes_a_peak(corpus):
    """sysstat printed %util 105-110 for the Fedora 23 host's vda (io_ticks
    counted past the interval): those samples are said once and left out."""
    case = sarsleuth.load(corpus / "sar-text" / "sarstats--f23_sar07")
    assert not [f for f in case.findings if any(g.value > 100 for g in f.figures if g.series[1:2] == ("%util",))]
    assert [w for w in case.warnings if "dev252-0 at 2016-04-07 15:18:02: %util 110.27" in w]


# -------------------------------------------------- 4. time and the sampling
def _sar_swap(rows: list[tuple[str, str]], banner_date: str = "05/06/2024") -> str:
    head = [f"Linux 5.15.0-91-generic (cache-2) \t{banner_date} \t_x86_64_\t(8 CPU)", "",
            "00:00:01    kbswpfree kbswpused  %swpused  kbswpcad   %swpcad"]
    body = []
    for t, pct in rows:
        used = round(8388604 * float(pct) / 100)
        body.append(f"{t}     {8388604 - used:>8} {used:>9} {pct:>9}         0      0.00")
    return "\n".join(head + body) + "\n"


def test_a_climb_inside_one_interval_is_told_between_two_samples(tmp_path):
    """0 % at 14:50:01, 43.35 % at 15:00:01 (10-minute samples): the climb
    happened somewhere in that interval, never "in 0 s"; the near miss,
    a climb over two intervals, is told with its duration and samples."""
    calm = [(f"{h:02d}:{m:02d}:01", "0.00") for h in range(13, 15) for m in range(0, 60, 10)][:-1]
    one = calm + [("14:50:01", "0.00"), ("15:00:01", "43.35"), ("15:10:01", "43.30"), ("15:20:01", "43.20")]
    (tmp_path / "one.txt").write_text(_sar_swap(one))
    (f,) = [f for f in sarsleuth.load(tmp_path / "one.txt").findings if f.detector == "swap-climb"]
    assert f.title == "Swap climbed from 0.00 % to 43.35 % between 14:50:01 and 15:00:01 (one 10-minute sample)"
    two = calm + [("14:50:01", "0.00"), ("15:00:01", "20.35"), ("15:10:01", "43.41"), ("15:20:01", "43.40")]
    (tmp_path / "two.txt").write_text(_sar_swap(two))
    (g,) = [f for f in sarsleuth.load(tmp_path / "two.txt").findings if f.detector == "swap-climb"]
    assert g.title == "Swap climbed from 0.00 % to 43.41 % in 20 min (3 samples)"


def test_a_climb_never_spans_a_gap_in_the_records(tmp_path):
    """sa files of the 1st and the 30th of one month printed one after the
    other: 2 % on the first, 91-100 % on the other; nothing climbed "from
    2 %" across the 29 days."""
    first = _sar_swap([(f"23:{m:02d}:01", "2.00") for m in range(0, 60, 10)], "04/01/2024")
    later = _sar_swap([("00:10:01", "91.00"), ("00:20:01", "95.50"), ("00:28:01", "100.00"), ("00:40:01", "99.90")],
                      "04/30/2024")
    (tmp_path / "sar.txt").write_text(first + "\n" + later)
    case = sarsleuth.load(tmp_path / "sar.txt")
    for f in case.findings:
        assert "from 2 %" not in f.title, f.title
        if f.detector != "sar-gap":         # the hole itself, said as such
            assert f.start >= pd.Timestamp("2024-04-30", tz=f.start.tz), f.title
    assert [f.title for f in case.findings if f.detector == "sar-gap"] == [
        "No sar samples for 2420400 s (usual interval 600 s)"]
    assert audit(case).differences == []


def _sar_load(values: list[float], cpus: int = 2) -> str:
    out = [f"Linux 5.15.0-91-generic (batch-4) \t05/06/2024 \t_x86_64_\t({cpus} CPU)", "",
           "00:00:01      runq-sz  plist-sz   ldavg-1   ldavg-5  ldavg-15   blocked"]
    for i, v in enumerate(values):
        t = pd.Timestamp("2024-05-06 00:00:01") + pd.Timedelta(minutes=10 * (i + 1))
        out.append(f"{t:%H:%M:%S}            3       412 {v:9.2f} {v:9.2f} {v:9.2f}         0")
    return "\n".join(out) + "\n"


def test_a_load_that_wanders_does_not_jump(tmp_path):
    """Load between 4.2 and 5.6 on 2 CPUs for hours, then 5.50: no jump
    (nor an onset past the CPU count: it was already there)."""
    wander = [4.92, 5.31, 4.40, 5.62, 4.21, 5.08, 4.77, 5.44, 4.35, 5.12, 4.66, 4.92, 5.50, 5.02, 4.61]
    (tmp_path / "sar.txt").write_text(_sar_load(wander))
    assert [f.title for f in sarsleuth.load(tmp_path / "sar.txt").findings if f.detector == "load-spike"] == []


def test_a_load_that_leaves_its_level_jumps(tmp_path):
    """The near miss: from 0.8 to 4.02 on 12 CPUs is a jump, told so."""
    (tmp_path / "sar.txt").write_text(_sar_load([0.81, 0.79, 0.80, 0.82, 0.78, 0.80, 4.02, 3.10, 0.90], cpus=12))
    (f,) = [f for f in sarsleuth.load(tmp_path / "sar.txt").findings if f.detector == "load-spike"]
    assert f.title == "Load average jumped to 4.02 (baseline 0.80, 12 CPUs)"


# --------------------------------------------------------- 5. roles by onset
def test_no_effect_is_told_before_its_cause(sample_case):
    """The proxy: memory began to fall in the sample of 14:50:01 (88.38 %
    of RAM available at 14:40:01, 51.24 % then); the load was 6.41 then
    and 33.19 only at 15:02:03: each timeline row says what held at its
    time."""
    inc = sample_case("nginx-proxy-oom").incidents[0]
    rows = [(r["clock"], r["role"], r["what"]) for r in inc.story["timeline"]]
    assert rows[0] == ("14:50:01", "cause", "Available memory began to fall: 88.38 % of RAM at 14:40:01, "
                                            "51.24 % at 14:50:01")
    load = [r for r in rows if "ldavg-1" in r[2] or "Load average" in r[2]]
    assert load[0] == ("14:50:01", "effect", "ldavg-1 6.41, already above its usual 1.06")
    assert load[1] == ("15:02:03", "effect", "Load average jumped to 33.19 (baseline 1.06, 24 CPUs)")
    assert inc.start == pd.Timestamp("2014-05-06 14:50:01", tz=inc.start.tz)


# ---------------------------------------------------- 6. limits and defaults
def test_a_limit_not_read_from_the_inputs_is_said_as_assumed(sample_case):
    inc = sample_case("tengine-720k").incidents[0]
    tw = next(f for f in inc.findings if f.detector == "tcp-timewait")
    assert "(100 % of tcp_max_tw_buckets: the kernel default, 180,000, assumed)" in tw.title
    assert "tcp_max_tw_buckets" not in tw.metrics
    assert not [r for r in inc.recommendations if "(now" in r]


def test_a_limit_read_from_a_bundle_is_quoted_as_the_host_s(sample_case):
    case = sample_case("bundles/sosreport-web07-2026-11-23-pvrqaru.tar.xz")
    tw = next(f for f in case.findings if f.detector == "tcp-timewait")
    assert "assumed" not in tw.title and tw.metrics["tcp_max_tw_buckets"] == 4096
    limit = next(g for g in tw.figures if g.name == "tcp_max_tw_buckets")
    assert limit.origin.endswith("sos_commands/kernel/sysctl_-a:405")
    assert limit.series == ("limit", "net.ipv4.tcp_max_tw_buckets")


# ------------------------------------------------- 7 and 8. clock and markup
def test_shortened_cuts_at_a_word_outside_code():
    said = "Memory exhausted: down to 0.9 % of RAM; nginx may hold 256 MiB (`proxy_buffers 1024 256k;`): 125 busy"
    assert shortened(said, 74) == "Memory exhausted: down to 0.9 % of RAM; nginx may hold 256 MiB…"
    assert shortened(said, 90) == "Memory exhausted: down to 0.9 % of RAM; nginx may hold 256 MiB…"
    assert shortened("at 15:02:03 and 15:02:04", 14) == "at 15:02:03…"
    assert shortened(said, 200) == said


def test_outputs_show_code_as_code_and_no_emptied_parentheses(sample_case):
    from sarsleuth.render.formats.html import build_html
    from sarsleuth.render.formats.markdown import render_markdown
    from sarsleuth.render.formats.text import render_text
    case = sample_case("bundles/sos-collector-incident-2026-11-23-234bd0.tar.gz")
    buf = io.StringIO()
    render_text(case, Console(file=buf, width=100))
    text, page, markdown = buf.getvalue(), html.unescape(build_html(case, plots=False)), render_markdown(case)
    for shown in (text, page, markdown):
        assert "( , )" not in shown
        assert "..." not in re.sub(r"`[^`]*`", "", shown)
    assert "`" not in text
    assert "`" not in re.sub(r"<script.*?</script>", "", page, flags=re.S)
    assert "<code>proxy_buffers 1024 256k;</code>" in build_html(case, plots=False)
    # every time of the list on the clock its heading names
    assert "times: each on its host's clock, its UTC offset beside it" in text
    assert "07:02:03" not in text and "2014-05-06 14:50:01 UTC+08:00" in text


_PS = """USER       PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND
root      8700  0.0  0.0  77312 10200 ?        SLs  14:23   0:00 stress-ng --matrix 0 --timeout 55s
root      8701 98.7  0.0  77504  2880 ?        R    14:23   0:29 stress-ng-matrix [run]
root      8702 99.1  0.0  77504  2884 ?        R    14:23   0:29 stress-ng-matrix [run]
root      8800  0.0  0.0   7060  2900 ?        R    14:23   0:00 ps aux
"""


def test_a_ps_snapshot_is_told_on_its_finding_s_clock(tmp_path):
    """A snapshot taken at 14:24:10 UTC named in a finding told on a Paris
    host's clock (UTC+01:00 in November) is "ps at 15:24:10", the sentence's
    own clock; the near miss, a finding on UTC, says 14:24:10."""
    import os
    from sarsleuth.analysis.attribution import attribute
    from sarsleuth.model import Finding
    when = pd.Timestamp("2026-11-24 14:24:10", tz="UTC")
    path = tmp_path / "ps-aux.txt"
    path.write_text(_PS)
    os.utime(path, (when.timestamp(), when.timestamp()))
    sources = sarsleuth.load(path, tz="UTC").sources
    for zone, said in (("Europe/Paris", "in ps at 15:24:10"), ("UTC", "in ps at 14:24:10")):
        f = Finding(detector="cpu-saturation", title="t", severity="high", host=None,
                    start=(when - pd.Timedelta(seconds=30)).tz_convert(zone),
                    end=(when + pd.Timedelta(seconds=20)).tz_convert(zone))
        attribute([f], sources)
        assert said in f.refs["responsible"], (zone, f.refs.get("responsible"))


def test_titles_are_never_cut_inside_code(sample_case):
    case = sample_case("bundles/sos-collector-incident-2026-11-23-234bd0.tar.gz")
    for inc in case.incidents:
        assert inc.title.count("`") % 2 == 0, inc.title
        assert not re.search(r"\d…", inc.title), inc.title


def _sar_w_q(switches: list[float], loads: list[float], cpus: int | None = None) -> str:
    """sar -w -q of a RHEL 4 host every 5 minutes (sysstat 5.0: a banner
    without the CPU count, one cswch/s column, the queue without
    `blocked`)."""
    stamps = [pd.Timestamp("2011-03-14 09:35:01") + pd.Timedelta(minutes=5 * i) for i in range(len(loads) + 1)]
    out = [f"Linux 2.6.9-89.ELsmp (db2)\t03/14/2011\t({cpus} CPU)" if cpus else "Linux 2.6.9-89.ELsmp (db2)\t03/14/2011",
           "", f"{stamps[0]:%I:%M:%S %p}   cswch/s"]
    out += [f"{t:%I:%M:%S %p} {v:9.2f}" for t, v in zip(stamps[1:], switches)]
    out += ["", f"{stamps[0]:%I:%M:%S %p}   runq-sz  plist-sz   ldavg-1   ldavg-5  ldavg-15"]
    out += [f"{t:%I:%M:%S %p} {int(v):9d}      1300 {v:9.2f} {v:9.2f} {v:9.2f}" for t, v in zip(stamps[1:], loads)]
    return "\n".join(out) + "\n"


#: ldavg-1 every 5 minutes: 7 for a while, then a storm whose middle dips
#: (85 -> 58) without ever coming near its level before
_STORM = [7.10, 7.42, 7.31, 29.53, 58.97, 85.29, 70.71, 58.03, 77.59, 97.88, 80.77, 77.55, 121.49, 135.49, 14.40, 7.80]


def test_a_storm_that_dips_in_its_middle_is_one_jump_with_its_context_switches(tmp_path):
    """The level to jump from is the one before the storm, and so is its
    spread: the storm's own rise is no usual wander (judged against the
    spread of its first rows, 58 after 85 was no jump and the storm split
    in two)."""
    switches = [4702.1, 4850.3, 4774.95, 27342.76, 196015.02, 337021.92, 347007.79, 309210.99, 308174.09, 350074.07,
                350716.36, 329279.95, 319551.01, 312952.02, 130142.16, 6056.06]
    (tmp_path / "sar.txt").write_text(_sar_w_q(switches, _STORM))
    case = sarsleuth.load(tmp_path / "sar.txt")
    (f,) = [f for f in case.findings if f.detector == "load-spike"]
    assert (f.start, f.end) == (pd.Timestamp("2011-03-14 09:55:01"), pd.Timestamp("2011-03-14 10:45:01"))
    assert f.title == "Load average jumped to 135.49 (baseline 7.31), cswch/s up to 350,716.36 (usually 4,774.95)"
    assert f.metrics["cswch_ratio"] == pytest.approx(350716.36 / 4774.95)
    advice = case.incidents[0].recommendations
    assert advice[0].startswith("Context switches rose to 350,716.36 a second (cswch/s; usually 4,774.95)")
    assert not any("fork storm (`sar -w` proc/s)" in r for r in advice)
    assert audit(case).differences == []


def test_a_storm_without_more_context_switches_names_none(tmp_path):
    """Near miss: the same load with context switches at their usual rate."""
    (tmp_path / "sar.txt").write_text(_sar_w_q([4800.0 + 10 * i for i in range(len(_STORM))], _STORM))
    case = sarsleuth.load(tmp_path / "sar.txt")
    (f,) = [f for f in case.findings if f.detector == "load-spike"]
    assert f.title == "Load average jumped to 135.49 (baseline 7.31)" and f.metrics["cswch_ratio"] < 1.1
    assert not any("Context switches" in r for r in case.incidents[0].recommendations)
