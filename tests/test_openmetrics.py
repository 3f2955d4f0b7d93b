"""``parse --format openmetrics``: every sar metric has one Prometheus name
(the mapping is data, its table generated), and the exposition carries the
values of ``parse --format csv`` in the names' units, valid OpenMetrics.
Loading it into a real Prometheus is tests/test_prometheus.py."""
from __future__ import annotations

import re

import pandas as pd
import pytest

from sarsleuth.knowledge.metric_names import BASE_UNITS, LABEL, NAME, data, families, mapping_of, mappings, markdown_table
from sarsleuth.inputs.parsers.sar_text import sections

from .conftest import ROOT, SAMPLES, run_cli

prometheus_client = pytest.importorskip("prometheus_client", reason="the test extra prometheus-client")
from prometheus_client.openmetrics.parser import text_string_to_metric_families  # noqa: E402


def _families(text: str) -> dict:
    """name -> [(labels, value, timestamp)], read by prometheus_client's
    OpenMetrics parser, which refuses interleaved families, units that are
    not the name's suffix, times going back and a missing # EOF."""
    out = {}
    for fam in text_string_to_metric_families(text):
        assert fam.type == "gauge", fam.name
        out[fam.name] = [(s.labels, s.value, float(s.timestamp)) for s in fam.samples]
    return out


def _export(*args, ok=True):
    proc = run_cli("parse", *args, "--format", "openmetrics")
    if ok:
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.endswith("# EOF\n")
    return proc


def _csv(path) -> pd.DataFrame:
    proc = run_cli("parse", path, "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    import io
    return pd.read_csv(io.StringIO(proc.stdout), keep_default_na=False, dtype={"device": str})


# ------------------------------------------------------------------ the mapping

def test_metric_table_is_the_one_generated_from_the_mapping():
    assert (ROOT / "docs" / "metric-names.md").read_text("utf-8") == markdown_table(), \
        "stale: run python tools/metric_names.py"
    assert "docs/metric-names.md" in (ROOT / "README.md").read_text("utf-8")


def test_every_sar_metric_has_a_prometheus_name():
    known = set()
    for section, spec in sections.SECTIONS.items():
        for column in spec.metrics:
            owner = sections.structured_section(section, column)   # sysstat 7's swap columns in -r
            metric = sections.metric_name(section, column)
            assert mapping_of(owner, metric) is not None, (owner, metric)
            known.add((owner, metric))
    # per-CPU interrupt columns (sysstat 12.5.6+, and sysstat 7's i000/s tables turned round)
    for column in ("CPU0", "CPU17", "CPU8191"):
        m = mapping_of("interrupts", column)
        assert m.family.name == "sar_cpu_interrupts_per_second"
        assert m.labels("9", column) == (("irq", "9"), ("cpu", column[3:]))
    assert mapping_of("interrupts", "CPUx") is None and mapping_of("tsar-cpu", "util") is None
    # and nothing that sar never printed
    invented = {(m.section, m.metric) for m in mappings() if "{" not in m.metric} - known
    assert invented == set()


def test_names_follow_prometheus_conventions():
    current = [m for m in mappings() if m.same_as is None]
    names = [m.family.name for m in current]
    assert len(names) == len(set(names)), "two sar metrics exported under one name"
    for m in mappings():
        name = m.family.name
        assert NAME.match(name) and name.startswith("sar_"), name
        assert not name.endswith("_total") and m.family.type == "gauge", name
        assert m.family.help.endswith("."), name
        if m.metric.startswith("%"):
            assert name.endswith("_percent") and m.factor == 1.0, name     # sar's numbers, 0-100
        if m.unit_from in ("kB", "MB", "sectors", "blocks", "B"):
            assert "_bytes" in name, name
        if m.unit_from == "ms":
            assert name.endswith("_seconds") and m.factor == 0.001, name
        if m.metric.endswith("/s"):
            assert name.endswith("_per_second"), name
        if m.same_as:
            target = mapping_of(m.section, m.same_as)
            assert target.same_as is None and target.family == m.family
        assert m.label is None or LABEL.match(m.label)
    assert mapping_of("disk", "rd_sec/s").factor == 512 and mapping_of("disk", "rkB/s").factor == 1024
    assert mapping_of("memory", "kbmemfree").family.unit == "bytes"
    assert mapping_of("disk", "await").family.unit == "seconds"
    assert mapping_of("net-dev", "rxkB/s").family.unit is None          # a rate says its unit in its name
    assert set(data()["units"]) >= {m.unit_from for m in mappings() if m.unit_from}
    assert all(u in {f.unit for f in families()} for u in ("bytes", "seconds", "percent", "hertz", "celsius"))
    assert set(BASE_UNITS) >= {f.unit for f in families() if f.unit}


# ------------------------------------------------------------------ the text

def test_values_are_the_csv_values_in_the_names_units():
    sa06 = SAMPLES / "nginx-proxy-oom" / "sa06"
    proc = _export(sa06)
    fams = _families(proc.stdout)
    at = pd.Timestamp("2014-05-06T15:06:05+08:00").timestamp()
    host = {"host": "Cangke_107_176"}

    def value(name, **labels):
        (v,) = [v for lab, v, t in fams[name] if t == at and lab == {**host, **labels}]
        return v
    assert at == 1399359965.0
    assert value("sar_memory_free_bytes") == 88412 * 1024                 # kbmemfree 88412
    assert value("sar_disk_await_seconds", device="sda") == 0.202549271636675   # 202.549271636675 ms
    assert value("sar_cpu_iowait_percent", cpu="all") == 57.5477150537634
    assert value("sar_network_receive_bytes_per_second", iface="lo") == 19.53125 * 1024
    # every value of the file, once, as csv has it
    csv = _csv(sa06)
    assert sum(len(samples) for samples in fams.values()) == len(csv)
    header = re.findall(r"^# (TYPE|UNIT|HELP) (\S+)", proc.stdout, re.M)
    assert len({n for k, n in header if k == "TYPE"}) == len([1 for k, n in header if k == "TYPE"])
    assert ("UNIT", "sar_memory_free_bytes") in header and ("UNIT", "sar_load1") not in header
    assert "sar_cpu_usr_percent" in fams and "_total" not in proc.stdout


def test_older_names_export_as_the_current_series():
    """sysstat 9.1.5's sar text and sadf print rd_sec/s (sectors), the sa
    file is read as rkB/s: the store holds one name, rkB/s (the text's
    sectors / 2, as sysstat computes kB), and the export one series."""
    folder = SAMPLES / "sysstat-versions" / "9.1.5"
    fams = _families(_export(folder).stdout)
    case_store = __import__("sarsleuth").load(folder).store
    keys = {k for k in case_store.runs if k[1] == "disk" and k[3] in ("rkB/s", "rd_sec/s")}
    assert {k[3] for k in keys} == {"rkB/s"}
    for device in {k[2] for k in keys}:
        current = case_store.series(("vm", "disk", device, "rkB/s"))
        got = {t: v for lab, v, t in fams["sar_disk_read_bytes_per_second"] if lab["device"] == device}
        assert len(got) == len(current)
        for t, v in current.items():
            assert got[t.timestamp()] == pytest.approx(v * 1024, rel=1e-14)


def test_a_wall_clock_is_said_and_tz_makes_instants():
    folder = SAMPLES / "tengine-720k"
    plain = _export(folder)
    assert "are the host's wall clock" in plain.stderr and "written as if UTC" in plain.stderr
    shanghai = _export(folder, "--tz", "Asia/Shanghai")
    assert "wall clock" not in shanghai.stderr
    a, b = _families(plain.stdout), _families(shanghai.stdout)
    assert a.keys() == b.keys()
    first = {name: min(t for _l, _v, t in s) for name, s in a.items()}
    assert all(min(t for _l, _v, t in b[name]) == first[name] - 8 * 3600 for name in a)


def test_labels_of_the_user(tmp_path):
    out = tmp_path / "m.om"
    proc = run_cli("parse", SAMPLES / "tengine-720k", "--format", "openmetrics", "--label", "case=INC-42",
                   "--label", "env=prod", "-o", out)
    assert proc.returncode == 0, proc.stderr
    fams = _families(out.read_text())
    assert all(lab["case"] == "INC-42" and lab["env"] == "prod" for s in fams.values() for lab, _v, _t in s)
    for bad, why in (("host=x", "sets that label itself"), ("iface=x", "sets that label itself"),
                     ("9x=1", "expected NAME=VALUE"), ("novalue", "expected NAME=VALUE")):
        proc = run_cli("parse", SAMPLES / "tengine-720k", "--format", "openmetrics", "--label", bad)
        assert proc.returncode == 2 and why in proc.stderr and len(proc.stderr.splitlines()) == 1, proc.stderr
    proc = run_cli("parse", SAMPLES / "tengine-720k" / "messages", "--label", "a=b")
    assert proc.returncode == 2 and "--label is for --format openmetrics" in proc.stderr


def test_many_hosts_and_days_at_once():
    proc = _export(SAMPLES / "nginx-proxy-oom", SAMPLES / "live-loopback", SAMPLES / "sysstat-versions" / "12.7.9")
    fams = _families(proc.stdout)
    hosts = {lab.get("host") for s in fams.values() for lab, _v, _t in s}
    assert hosts == {"Cangke_107_176", "vm"}
    days = {pd.Timestamp(t, unit="s").date() for t in {t for _l, _v, t in fams["sar_load1"]}}
    assert len(days) >= 3        # 2014-05-06, 2026-11-21 and the sysstat-versions day
    # each series once, in time order (the parser refuses times going back)
    for name, samples in fams.items():
        seen = set()
        for lab, _v, t in samples:
            key = (tuple(sorted(lab.items())), t)
            assert key not in seen, (name, key)
            seen.add(key)


def test_a_saved_case_exports_the_same(tmp_path):
    pytest.importorskip("pyarrow", reason="saved cases need the parquet extra")
    folder = SAMPLES / "nginx-proxy-oom"
    saved = tmp_path / "case"
    proc = run_cli("analyze", folder, "--save", saved, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    from_case = _export(saved)
    assert from_case.stdout == _export(folder).stdout
    proc = run_cli("parse", saved, folder, "--format", "openmetrics")
    assert proc.returncode == 2 and "a saved case is exported on its own" in proc.stderr


def test_inputs_without_metrics_and_formats_of_one_file():
    proc = _export(SAMPLES / "nginx-worker-crash", ok=False)
    assert proc.returncode == 2 and proc.stderr.splitlines()[-1].startswith("sarsleuth: no metrics in the inputs")
    proc = run_cli("parse", SAMPLES / "nginx-proxy-oom" / "sa06", SAMPLES / "live-loopback" / "sa21")
    assert proc.returncode == 2 and "several inputs are for --format openmetrics" in proc.stderr


def test_every_sample_and_bundle_metric_has_a_name():
    from sarsleuth.case import Case
    # the metrics read, not the findings: no detector needs to run
    cases = [Case.load(SAMPLES / n, analyse=False)
             for n in ("nginx-proxy-oom", "live-loopback", "image-service-ab", "tengine-720k")]
    cases += [Case.load(p, analyse=False) for p in sorted((SAMPLES / "sysstat-versions").glob("[0-9]*"))]
    cases += [Case.load(p, analyse=False) for p in sorted((SAMPLES / "bundles").glob("*.tar.*"))]
    missing = {(k[1], k[3]) for c in cases for k in c.store.runs if mapping_of(k[1], k[3]) is None}
    assert missing == set()


def test_every_corpus_metric_has_a_name(corpus):
    """Real files of every sysstat generation (sa files, sar and sadf texts)."""
    from sarsleuth.case import Case
    from sarsleuth.inputs.parsers import sniff
    files = [p for p in sorted(corpus.rglob("*")) if p.is_file() and p.suffix != ".md"
             and sniff(p)[0] in ("sa", "sar-text", "sadf-csv", "sadf-json", "sadf-xml")]
    assert len(files) > 50
    missing = {}
    for f in files:
        for key in Case.load(f, analyse=False).store.runs:
            if mapping_of(key[1], key[3]) is None:
                missing.setdefault((key[1], key[3]), f.name)
    assert missing == {}


def test_label_values_are_escaped_and_a_terminal_gets_no_control_sequences(tmp_path):
    text = tmp_path / "sar.txt"
    # a host name as a hostile banner may carry it: a quote, a backslash, an OSC title sequence
    text.write_text("Linux 5.10.0 (we\"b\\1\x1b]0;x\x07)  05/06/2024  _x86_64_  (2 CPU)\n\n"
                    "10:00:01 AM     CPU     %user     %nice   %system   %iowait    %steal     %idle\n"
                    "10:10:01 AM     all      2.00      0.00      1.00      0.50      0.00     96.50\n")
    proc = _export(text)
    fams = _families(proc.stdout)
    assert {lab["host"] for lab, _v, _t in fams["sar_cpu_idle_percent"]} == {"we\"b\\1\x1b]0;x\x07"}
    shown = run_cli("parse", text, "--format", "openmetrics", tty=True)
    assert proc.returncode == 0 and "\x1b" not in shown.stdout and "\x07" not in shown.stdout
    assert 'host="we\\"b\\\\1\\\\x1b]0;x\\\\x07"' in shown.stdout
    refused = run_cli("parse", text, "--format", "openmetrics", "-o", text)
    assert refused.returncode == 2 and "refusing to overwrite an input file" in refused.stderr
