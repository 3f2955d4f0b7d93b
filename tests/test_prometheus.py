"""Every sample's and bundle's metrics through a real Prometheus (each
sysstat release's day from its sa file): each
metric file is exported with ``parse --format openmetrics``, turned into
blocks by ``promtool tsdb create-blocks-from openmetrics``, and one
Prometheus (Debian's ``prometheus``, on 127.0.0.1, a free port, temporary
storage) answers range queries with the values ``parse --format csv``
printed for the same series, converted to the names' units.  The shipped
Grafana dashboard's expressions are checked against the exported names,
by promtool and by that Prometheus."""
from __future__ import annotations

import io
import json
import re
import shutil
import socket
import subprocess
import tarfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pandas as pd
import pytest

from sarsleuth.knowledge.metric_names import families, mapping_of, mappings
from sarsleuth.render.csv_columns import tidy_values

from .conftest import SAMPLES, run_cli

PROMETHEUS, PROMTOOL = shutil.which("prometheus"), shutil.which("promtool")
pytestmark = pytest.mark.skipif(PROMETHEUS is None or PROMTOOL is None,
                                reason="needs Debian's prometheus package (prometheus, promtool)")
METRIC_KINDS = {"sa", "sar-text", "sadf-csv", "sadf-json", "sadf-xml"}
#: query_range windows: consecutive sample times at most this far apart
WINDOW_GAP, WINDOW_SPAN = 120, 3000


def _metric_files(folder: Path) -> list:
    """The recorded metric files (the scripts that made them hold sar text in strings)."""
    from sarsleuth.inputs.parsers import sniff
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix not in (".py", ".sh", ".md")
                  and sniff(p)[0] in METRIC_KINDS)


def _extract(archive: Path, into: Path) -> None:
    """Every member, nested archives too (sos collect keeps one per node)."""
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    for inner in list(into.rglob("*.tar*")):
        if tarfile.is_tarfile(inner):
            _extract(inner, inner.parent / (inner.name + ".d"))


def _inputs(tmp: Path) -> list:
    """(id, what to export, the files whose csv it must equal)."""
    from sarsleuth.inputs.parsers import sniff
    out = []
    files = [f for f in _metric_files(SAMPLES) if "bundles" not in f.relative_to(SAMPLES).parts]
    # each sysstat release's day goes through Prometheus once, from its sa
    # file: test_sysstat_versions holds that release's sadf and sar renderings
    # to the sa file value by value
    for f in files:
        if "sysstat-versions" not in f.relative_to(SAMPLES).parts or sniff(f)[0] == "sa":
            out.append((str(f.relative_to(SAMPLES)), f, [f]))
    for archive in sorted((SAMPLES / "bundles").glob("*.tar.*")):
        into = tmp / "bundles" / archive.name
        _extract(archive, into)
        # a day a bundle keeps as sa file, XML and sar text is read from the sa file
        days = sorted(p for p in into.rglob("*") if p.is_file() and sniff(p)[0] == "sa")
        assert days, archive
        out.append((f"bundles/{archive.name}", archive, days))
    return out


def _expected(csv_files) -> dict:
    """{(name, labels, seconds): value} from ``parse --format csv`` (the
    first value printed for a key), each series' mapping and labels worked
    out once, times and unit conversions column by column."""
    want = {}
    for f in csv_files:
        proc = run_cli("parse", f, "--format", "csv")
        assert proc.returncode == 0, proc.stderr
        frame = pd.read_csv(io.StringIO(proc.stdout), keep_default_na=False, dtype={"device": str, "host": str})
        # naive times are UTC, as Timestamp.tz_localize("UTC").timestamp() took them
        ns = pd.to_datetime(frame["timestamp"], utc=True, format="ISO8601").dt.as_unit("ns").astype("int64").to_numpy()
        seconds = (ns / 1e9).round(6)
        values = frame["value"].astype("float64").to_numpy(copy=True)
        # plain lists: iterating pyarrow-backed string columns row by row is slow
        series = zip(*(frame[c].tolist() for c in ("host", "section", "device", "metric")))
        names, labels, factor = [], [], []
        seen: dict = {}
        for key in series:
            if key not in seen:
                host, section, device, metric = key
                m = mapping_of(section, metric)
                assert m is not None, (f, section, metric)
                label = tuple(sorted(((("host", host),) if host else ()) + m.labels(device, metric)))
                seen[key] = (m.family.name, label, m.factor)
            name, label, k = seen[key]
            names.append(name)
            labels.append(label)
            factor.append(k)
        factor = pd.Series(factor, dtype="float64").to_numpy()
        scaled = factor != 1
        values[scaled] = tidy_values(values[scaled] * factor[scaled])
        for key, v in zip(zip(names, labels, seconds.tolist()), values.tolist()):
            want.setdefault(key, v)
    return want


class Prometheus:
    def __init__(self, data: Path, log: Path):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        config = data.parent / "prometheus.yml"
        config.write_text("global:\n  scrape_interval: 1h\n")
        self.log = log.open("wb")
        self.proc = subprocess.Popen([PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={data}",
                                      f"--web.listen-address=127.0.0.1:{self.port}",
                                      "--storage.tsdb.retention.time=100y"], stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"prometheus did not start: {log.read_text()[-2000:]}")
            time.sleep(0.2)

    def get(self, path: str, **params):
        url = f"http://127.0.0.1:{self.port}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=60) as r:
            doc = json.load(r)
        assert doc["status"] == "success", doc
        return doc["data"]

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    """Prometheus serving every input's export, each labelled file=ID."""
    tmp = tmp_path_factory.mktemp("prometheus")
    data = tmp / "data"
    inputs = []
    # one promtool run over every export: each export's families, then a
    # single "# EOF" (promtool takes a family again under other labels)
    every = tmp / "every.om"
    with every.open("wb") as out:
        for n, (ident, given, csv_files) in enumerate(_inputs(tmp)):
            exposition = tmp / f"{n}.om"
            proc = run_cli("parse", given, "--format", "openmetrics", "--label", f"file={ident}", "-o", exposition)
            assert proc.returncode == 0, proc.stderr
            body = exposition.read_bytes()
            assert body.endswith(b"# EOF\n"), ident
            out.write(body[:-len(b"# EOF\n")])
            inputs.append((ident, _expected(csv_files)))
        out.write(b"# EOF\n")
    made = subprocess.run([PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", str(every), str(data)],
                          capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr[-2000:]
    server = Prometheus(data, tmp / "prometheus.log")
    try:
        yield server, inputs
    finally:
        server.stop()


def _series(result) -> dict:
    """{(name, labels without file): [(seconds, value)]} of a matrix."""
    out = {}
    for s in result["result"]:
        labels = dict(s["metric"])
        name = labels.pop("__name__")
        labels.pop("file")
        out[(name, tuple(sorted(labels.items())))] = [(float(t), float(v)) for t, v in s["values"]]
    return out


def _windows(times: list) -> list:
    windows = []
    for t in times:
        if windows and t - windows[-1][-1] <= WINDOW_GAP and t - windows[-1][0] <= WINDOW_SPAN:
            windows[-1].append(t)
        else:
            windows.append([t])
    return windows


def test_every_sample_and_bundle_answers_range_queries_with_the_csv_values(loaded):
    server, inputs = loaded
    assert len(inputs) >= 15 and any(i.startswith("bundles/") for i, _w in inputs)
    for ident, want in inputs:
        selector = '{file="%s"}' % ident
        times = sorted({t for _n, _l, t in want})
        # every raw sample: a range vector over the file's whole span
        span = int(times[-1] - times[0]) + 1
        raw = _series(server.get("query", query=f"{selector}[{span}s]", time=times[-1]))
        got = {(name, labels, t): v for (name, labels), points in raw.items() for t, v in points}
        assert got.keys() == want.keys(), (ident, sorted(got.keys() ^ want.keys())[:5])
        wrong = [(k, got[k], v) for k, v in want.items() if got[k] != v]
        assert not wrong, (ident, wrong[:5])
        # query_range, evaluated at every second of each stretch of samples
        windows = _windows(times)
        window_of = {t: i for i, window in enumerate(windows) for t in window}
        expected = [{} for _w in windows]
        for (name, labels, t), v in want.items():
            expected[window_of[t]].setdefault((name, labels), {})[t] = v
        for window, in_window in zip(windows, expected):
            ranged = _series(server.get("query_range", query=selector, start=window[0], end=window[-1], step=1))
            for key, points in in_window.items():
                at = dict(ranged.get(key, ()))
                assert all(at.get(t) == v for t, v in points.items()), (ident, key, window[0])


# ------------------------------------------------------------------ Grafana

DASHBOARD = Path(__file__).resolve().parent.parent / "sarsleuth" / "integrations" / "grafana" / "sarsleuth-sar.json"
VARIABLES = {"$host": ".*", "$device": ".*", "$iface": ".*"}


def _labels_of() -> dict:
    """Exported name -> the labels its series may carry."""
    out = {}
    for m in mappings():
        labels = out.setdefault(m.family.name, {"host"})
        if m.label:
            labels.add(m.label)
        labels |= set(re.findall(r"\{([a-z_]+)\}", m.metric))
    return out


def _dashboard():
    doc = json.loads(DASHBOARD.read_text("utf-8"))
    targets = [t["expr"] for p in doc["panels"] for t in p.get("targets", [])]
    queries = [v["query"]["query"] for v in doc["templating"]["list"] if v["type"] == "query"]
    return doc, targets, queries


def _selectors(expr: str) -> list:
    """(names the selector matches, labels it matches on) of each selector."""
    names = {f.name for f in families()}
    out = []
    for m in re.finditer(r"(sar_\w+)?\{([^}]*)\}", expr):
        matchers = dict(re.findall(r'(\w+)\s*(?:=~|!~|!=|=)\s*"([^"]*)"', m.group(2)))
        if m.group(1):
            assert m.group(1) in names, f"{m.group(1)} is not an exported name"
            selected = {m.group(1)}
        else:
            pattern = matchers.pop("__name__")
            selected = {n for n in names if re.fullmatch(pattern, n)}
            assert selected, f"{pattern} matches no exported name"
        out.append((selected, set(matchers)))
    unquoted = re.sub(r'"[^"]*"', '""', expr)
    bare = set(re.findall(r"\bsar_\w+\b(?![{\w])", unquoted))
    assert bare <= names, bare - names
    return out


def test_dashboard_expressions_use_the_exported_names_and_labels(tmp_path):
    doc, targets, queries = _dashboard()
    labels_of = _labels_of()
    panels = [p["title"] for p in doc["panels"] if p["type"] == "timeseries"]
    for topic in ("CPU", "Memory", "Swap", "Load", "Disk", "Network", "Sockets"):
        assert any(topic.lower() in t.lower() for t in panels), topic
    for expr in targets + queries:
        for selected, labels in _selectors(expr):
            for name in selected:
                assert labels <= labels_of[name], (expr, name, labels - labels_of[name])
    for query in queries:
        selector, label = re.fullmatch(r"label_values\((.*), (\w+)\)", query).groups()
        (selected, _labels), = _selectors(selector)
        assert all(label in labels_of[n] for n in selected), query
    # PromQL that promtool parses (rules files are checked expression by expression)
    rules = tmp_path / "dashboard.rules.yml"
    lines = ["groups:", "- name: dashboard", "  rules:"]
    for n, expr in enumerate(targets):
        for var, value in VARIABLES.items():
            expr = expr.replace(var, value)
        lines += [f"  - record: dashboard:target{n}", f"    expr: {json.dumps(expr)}"]
    rules.write_text("\n".join(lines) + "\n")
    checked = subprocess.run([PROMTOOL, "check", "rules", str(rules)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_every_dashboard_panel_shows_sample_data(loaded):
    server, inputs = loaded
    _doc, targets, queries = _dashboard()
    last_times = [max(t for _n, _l, t in want) for _i, want in inputs]
    for expr in targets:
        for var, value in VARIABLES.items():
            expr = expr.replace(var, value)
        assert any(server.get("query", query=expr, time=t)["result"] for t in last_times), expr
    for query in queries:
        selector, label = re.fullmatch(r"label_values\((.*), (\w+)\)", query).groups()
        for var, value in VARIABLES.items():
            selector = selector.replace(var, value)
        values = server.get(f"label/{label}/values", **{"match[]": selector})
        assert values, query
