"""The command line: outputs, exit codes, one-line errors, start-up.  Every
command runs in-process (``sarsleuth.cli.run``); one test runs the installed
console script."""
from __future__ import annotations

import contextlib
import errno
import importlib.util
import io
import json
import re
import subprocess
import sys

from pathlib import Path

import pytest

from sarsleuth import render

from .conftest import SAMPLES, run_cli

run = run_cli


@pytest.mark.parametrize("content", [b"", b"\x00\x01\x02\xff" * 4096, b"hello world\nthis is not a log\n"])
def test_unusable_input_is_one_line_exit_2(tmp_path, content):
    p = tmp_path / "input.bin"
    p.write_bytes(content)
    proc = run("analyze", p)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert lines and all(str(p) in ln for ln in lines)
    assert lines[-1].startswith("sarsleuth: no usable input")
    assert "Traceback" not in proc.stderr


def test_missing_path(tmp_path):
    proc = run("analyze", tmp_path / "nope")
    assert proc.returncode == 2
    assert "no such file" in proc.stderr and "Traceback" not in proc.stderr


def test_unknown_file_is_skipped_not_fatal(tmp_path):
    junk = tmp_path / "junk.txt"
    junk.write_text("nothing to see\n")
    proc = run("analyze", SAMPLES / "tengine-720k", junk, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert any(s["path"] == str(junk) for s in doc["skipped"])
    assert f"skipped {junk}" in proc.stderr


@pytest.mark.parametrize("args, says", [
    (("analyze", SAMPLES / "tengine-720k", "--tz", "Mars/Olympus"), "--tz 'Mars/Olympus'"),
    (("analyze", SAMPLES / "tengine-720k", "--window", "yesterday"), "--window 'yesterday'"),
    (("analyze", SAMPLES / "tengine-720k", "--year", "1812"), "--year 1812"),
    (("parse", SAMPLES / "tengine-720k" / "messages", "--kind", "nonsense"), "--kind 'nonsense'"),
    (("parse", SAMPLES / "tengine-720k" / "messages", "--tz", "Nowhere"), "--tz 'Nowhere'"),
    (("analyze", SAMPLES / "tengine-720k", "--frmat", "json"), "No such option: --frmat"),
    (("analyze", SAMPLES / "tengine-720k", "--format", "yaml"), "--format"),
    (("analyze",), "Missing argument"),
    (("nonsense",), "No such command"),
])
def test_bad_options_are_one_line_exit_2(args, says):
    proc = run(*args)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("sarsleuth: ") and says in lines[0], proc.stderr
    assert proc.stdout == ""


def test_sniff_samples():
    proc = run("sniff", *sorted(SAMPLES.glob("*/*")))
    kinds = dict(line.split("\t") for line in proc.stdout.strip().splitlines())
    expect = {
        "nginx-proxy-oom/sar06.txt": "sar-text", "nginx-proxy-oom/messages": "syslog",
        "nginx-proxy-oom/error.log": "nginx-error", "image-service-ab/ab-2m-image.txt": "ab",
        "image-service-ab/sar-n-DEV.txt": "sar-text", "tengine-720k/messages": "syslog",
        "nginx-worker-crash/dmesg": "dmesg", "nginx-worker-crash/ps-after.txt": "ps",
        "nginx-worker-crash/error.log": "nginx-error",
    }
    for suffix, kind in expect.items():
        path = str(SAMPLES / suffix)
        assert kinds[path] == kind, (suffix, kinds[path])


def test_parse_csv_metrics():
    proc = run("parse", SAMPLES / "nginx-proxy-oom" / "sar06.txt", "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "timestamp,host,section,device,metric,value"
    assert "2014-05-06T15:05:03,Cangke_107_176,cpu,all,%iowait,64.94" in lines
    assert "2014-05-06T15:06:05,Cangke_107_176,swap,,%swpused,97.76" in lines


def test_parse_csv_values_are_the_numbers_sar_prints():
    """Values computed from counters (136 ticks of 10000: 1.36 %) are written
    as 1.36, not with the 17th digit of float arithmetic."""
    proc = run("parse", SAMPLES / "nginx-proxy-oom" / "sa06")
    assert proc.returncode == 0, proc.stderr
    assert "2014-05-06T00:20:01+08:00,Cangke_107_176,cpu,all,%usr,1.36" in proc.stdout.splitlines()
    values = [ln.rsplit(",", 1)[1] for ln in proc.stdout.splitlines()[1:]]
    digits = {v: re.sub(r"\D", "", v.split("e")[0]).lstrip("0") for v in values}
    assert not [v for v, d in digits.items() if len(d) > 15], "a 16th or 17th significant digit"
    assert all(float(v) == float(repr(float(v))) for v in values)


def test_parse_csv_events():
    proc = run("parse", SAMPLES / "nginx-worker-crash" / "error.log")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "timestamp,host,source,kind,pid,process,message,file,line,repeats"
    assert sum(",worker-signal-exit," in ln for ln in lines) == 6


def test_markdown_and_html(tmp_path):
    out = tmp_path / "r.html"
    proc = run("analyze", SAMPLES / "tengine-720k", "--format", "markdown", "--html", out)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("# sarsleuth incident summary")
    assert "Connection flood" in proc.stdout
    # the same story parts as text and HTML, numbers as people read them
    for part in ("### Timeline (host wall clock, zone unknown)", "### Cause", "**Why:**", "### Effects",
                 "### What to do", "peak_tcp_tw 180,000", "tcp_max_tw_buckets 180,000"):
        assert part in proc.stdout, part
    assert "e+0" not in proc.stdout
    html = out.read_text()
    assert "<svg" in html
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", html)
    assert f"wrote {out}" in proc.stderr


def test_every_registered_format_renders_a_case_and_a_table():
    assert set(render.names("case")) >= {"text", "markdown", "json", "html"}
    assert render.names("case")[0] == "text"
    for name in render.names("case"):
        proc = run("analyze", SAMPLES / "tengine-720k", "--format", name)
        assert proc.returncode == 0, (name, proc.stderr)
        assert "Connection flood" in proc.stdout, name
    for name in render.names("table"):
        proc = run("detectors", "--format", name)
        assert proc.returncode == 0 and "tcp-timewait" in proc.stdout, (name, proc.stderr)


def test_one_registry_of_formats_for_every_command(tmp_path):
    """Each command offers the formats of the registry that write what it
    shows; a format that cannot show it is one line naming those that can."""
    assert render.names("rows") == ["csv", "json", "parquet"]
    assert render.names("result") == ["text", "csv", "json"]
    assert render.names("reports") == ["json"]
    assert render.names("metrics") == ["openmetrics"]
    assert set(render.names("case")) >= {"jsonl", "jira"} and set(render.names("table")) >= {"jsonl", "jira"}
    assert set(render.names("fleet")) >= {"text", "markdown", "json", "jsonl", "html"}
    assert "jira" not in render.names("fleet")
    for name in render.names("rows"):
        if name == "parquet" and importlib.util.find_spec("pyarrow") is None:
            continue        # the parquet extra
        proc = run("parse", SAMPLES / "nginx-proxy-oom" / "messages", "--format", name, "-o", tmp_path / name)
        assert proc.returncode == 0 and (tmp_path / name).stat().st_size > 300, (name, proc.stderr)
    proc = run("detectors", "--format", "parquet")
    assert proc.returncode == 2 and "'parquet'" in proc.stderr and "text" in proc.stderr
    # the formats that write every metric of the inputs take several; the others one file
    inputs = [SAMPLES / "nginx-proxy-oom" / name for name in ("sa06", "sar06.txt")]
    proc = run("parse", *inputs, "--format", "csv")
    assert proc.returncode == 2 and "several inputs are for --format openmetrics" in proc.stderr
    proc = run("parse", *inputs, "--format", "openmetrics", "-o", tmp_path / "om")
    assert proc.returncode == 0 and (tmp_path / "om").read_text().endswith("# EOF\n"), proc.stderr


def test_json_document_is_built_by_the_json_output(sample_case):
    from sarsleuth.render.formats.json import document
    case = sample_case("nginx-proxy-oom")
    doc = document(case)
    assert doc == json.loads(json.dumps(case.to_json(), default=str))
    assert doc["incidents"][0]["category"] == "memory-exhaustion"
    assert [s["kind"] for s in doc["sources"]].count("sa") == 1


def test_rich_markup_in_titles_is_shown_not_eaten():
    proc = run("analyze", SAMPLES / "nginx-proxy-oom")
    assert proc.returncode == 0, proc.stderr
    assert "#1 [critical] Memory exhaustion" in proc.stdout
    assert "[critical]" in proc.stdout.split("#1 [critical]", 1)[1]          # findings keep theirs too


def test_detectors_listing():
    proc = run("detectors", "--format", "json")
    ids = {d["id"] for d in json.loads(proc.stdout)}
    contract = {"swap-climb", "memory-pressure", "iowait-spike", "cpu-saturation", "load-spike", "nic-saturation",
                "tcp-timewait", "page-allocation-failure", "nic-rx-alloc-failure", "oom-kill", "segfault", "hung-task",
                "tcp-tw-bucket-overflow", "socket-memory", "syn-flood", "conntrack-full", "worker-signal-exit",
                "worker-pid-gaps", "worker-connections-exhausted", "too-many-open-files", "upstream-timeout",
                "loadtest-errors", "loadtest-tail-latency", "loadtest-link-saturation"}
    assert contract <= ids
    md = run("detectors", "--format", "markdown").stdout.splitlines()
    assert md[2] == "| detector | category | what it looks for |"
    assert sum(ln.startswith("| `") for ln in md) == len(ids)


def test_compare_runs(tmp_path):
    png = tmp_path / "runs.png"
    runs = (SAMPLES / "image-service-ab" / "ab-50k-image.txt", SAMPLES / "image-service-ab" / "ab-2m-image.txt")
    proc = run("compare", *runs, "--format", "json", "--plot", png)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    rps = sorted(r["requests_per_sec"] for r in rows)
    assert rps == [510.51, 3359.59]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    assert run("compare", SAMPLES / "tengine-720k" / "messages").returncode == 2


def test_compare_markdown_without_tabulate():
    runs = (SAMPLES / "image-service-ab" / "ab-50k-image.txt", SAMPLES / "image-service-ab" / "ab-2m-image.txt")
    proc = run("compare", *runs, "--format", "markdown")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    header = lines.index("| run | c | req/s | p50 | p90 | p99 | max | errors | MB/s |")
    assert lines[header + 1] == "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    assert lines[header + 2] == "| ab-50k-image.txt:1 (ab) | 100 | 3,360 | 18 | 31 | 264 | 1,026 | 0 | 174.90 |"


def test_version():
    from sarsleuth import __version__
    proc = run("--version")
    assert proc.returncode == 0 and proc.stdout == f"sarsleuth {__version__}\n"


# --- standard output that goes away or fills up --------------------------------------------------

class _Failing(io.TextIOBase):
    """A standard output whose writes fail like a closed pipe or a full disk."""

    def __init__(self, error):
        self.error = error

    def writable(self):
        return True

    def write(self, text):
        raise self.error

    def isatty(self):
        return False


@pytest.mark.parametrize("args", [("parse", SAMPLES / "nginx-proxy-oom" / "sa06"),
                                  ("analyze", SAMPLES / "tengine-720k", "--format", "json"),
                                  ("analyze", SAMPLES / "tengine-720k"),
                                  ("sniff", SAMPLES / "tengine-720k" / "messages")])
def test_closed_pipe_is_quiet_and_full_stdout_is_one_line(args):
    from sarsleuth.cli import run as cli_run
    for error, code, says in ((BrokenPipeError(errno.EPIPE, "Broken pipe"), 0, None),
                              (OSError(errno.ENOSPC, "No space left on device"), 2,
                               "sarsleuth: standard output: cannot write: No space left on device")):
        err = io.StringIO()
        with contextlib.redirect_stdout(_Failing(error)), contextlib.redirect_stderr(err):
            assert cli_run([str(a) for a in args]) == code
        lines = [ln for ln in err.getvalue().splitlines() if not ln.startswith("sarsleuth: warning")]
        assert lines == ([says] if says else []), err.getvalue()


def test_dev_full_is_one_line(tmp_path):
    from sarsleuth.cli import run as cli_run
    full = open("/dev/full", "w")
    err = io.StringIO()
    try:
        with contextlib.redirect_stdout(full), contextlib.redirect_stderr(err):
            assert cli_run(["parse", str(SAMPLES / "nginx-proxy-oom" / "sar06.txt")]) == 2
    finally:
        with contextlib.suppress(OSError):
            full.close()
    assert err.getvalue() == "sarsleuth: standard output: cannot write: No space left on device\n"


# --- start-up ------------------------------------------------------------------------------------

def test_help_and_sniff_start_light():
    """``--help`` imports neither pandas nor matplotlib; ``sniff FILE`` skips
    building the typer app (its pydantic adapters) and rich."""
    code = ("import sys, io, contextlib\n"
            "from sarsleuth.cli import run\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    run(['sniff', sys.argv[1]])\n"
            "print(sorted(m for m in ('pandas', 'matplotlib', 'pydantic', 'rich', 'jinja2') if m in sys.modules))\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    run(['--help'])\n"
            "print(sorted(m for m in ('pandas', 'matplotlib') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code, str(SAMPLES / "tengine-720k" / "messages")],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["[]", "[]"]


def test_installed_console_script_runs_from_elsewhere(tmp_path):
    """The entry point works outside the source tree (templates, knowledge
    base and grammars ship in the package), and stops quietly when its
    reader goes away (``| head``)."""
    import shutil
    exe = shutil.which("sarsleuth")
    if exe is None:
        pytest.skip("the sarsleuth console script is not installed (pip install .)")
    out = tmp_path / "r.html"
    proc = subprocess.run([exe, "analyze", str(SAMPLES / "image-service-ab"), "--format", "json", "--html", str(out)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["incidents"][0]["category"] == "network-saturation"
    assert out.stat().st_size > 10000
    head = subprocess.run(f"'{exe}' parse '{SAMPLES / 'nginx-proxy-oom' / 'sa06'}' 2>'{tmp_path / 'err'}' | head -1; "
                          "echo \"${PIPESTATUS[0]}\"", shell=True, executable="/bin/bash",
                          capture_output=True, text=True, timeout=120)
    assert head.stdout.splitlines() == ["timestamp,host,section,device,metric,value", "0"]
    assert (tmp_path / "err").read_text() == ""


# --- parse: the exported table --------------------------------------------------------------------

def _awkward_table():
    """Every kind of cell the exporters meet, and the ones they should not."""
    import numpy as np
    import pandas as pd
    rng = np.random.default_rng(7)
    n = 4000
    stamps = pd.date_range("2021-10-31 00:30", periods=n, freq="1min", tz="Europe/Berlin")   # a DST fold
    stamps = stamps + pd.to_timedelta(rng.choice([0, 0, 250_000, 1_234_567_000, 999], n), unit="ns")
    mags = 10.0 ** rng.uniform(-10, 20, n) * rng.choice([-1, 1], n)
    special = [1.3599999999999999, 0.0, -0.0, 2.0, 1e15, 1e16, 123456789012345.0, float("nan"), float("inf"),
               -float("inf"), 0.1 + 0.2, 5e-324, 8388604.0, 1e-4, 9.999999e8, 1e9 + 0.5]
    values = np.concatenate([special, np.round(mags[:n // 2], 2), mags[n // 2:]])[:n]
    texts = ['plain', 'a,b', 'say "hi"', 'two\nlines', 'cr\ronly', '', None, 'é漢\t', 'bad\udcffbyte', ' lead']
    frame = pd.DataFrame({
        "timestamp": pd.Series(stamps).where(np.arange(n) % 97 != 5),
        "host": pd.Categorical(rng.choice(["web1", "a,b", 'q"t'], n)),
        "message": pd.Series([texts[i % len(texts)] for i in range(n)], dtype=object),
        "pid": pd.array([None if i % 11 == 0 else i for i in range(n)], dtype="Int64"),
        "value": values,
    })
    return frame


def test_csv_writers_with_and_without_pyarrow_agree():
    import csv
    from sarsleuth.model import iso
    from sarsleuth.render.formats.csv import write_rows as write_csv
    from sarsleuth.render.csv_columns import tidy_values
    frame = _awkward_table()
    fast, plain = io.BytesIO(), io.BytesIO()
    write_csv(frame, fast, arrow=True)
    write_csv(frame, plain, arrow=False)
    assert fast.getvalue() == plain.getvalue()
    rows = list(csv.reader(io.StringIO(fast.getvalue().decode("utf-8"), newline="")))
    assert rows[0] == ["timestamp", "host", "message", "pid", "value"] and len(rows) == len(frame) + 1
    tidy = tidy_values(frame["value"].to_numpy())
    for i, row in enumerate(rows[1:]):
        assert row[0] == (iso(frame["timestamp"][i]) or "")
        assert row[1] == frame["host"][i]
        message = frame["message"][i]
        assert row[2] == ("" if message is None else message.replace("\udcff", "\ufffd"))
        assert row[3] == ("" if i % 11 == 0 else str(i))
        v = tidy[i]
        assert row[4] == ("" if v != v else repr(float(v))), (frame["value"][i], row[4])


def test_csv_of_labels_times_and_numbers_is_the_same_from_byte_blocks():
    """A metrics-like table (no free text) is written from fixed-width byte
    blocks without pyarrow: the same bytes as pyarrow's and as the columns
    of text joined."""
    from sarsleuth.render.formats.csv import write_rows as write_csv
    from sarsleuth.render.csv_columns import NumpyColumns
    frame = _awkward_table().drop(columns="message")
    fast, blocks = io.BytesIO(), io.BytesIO()
    write_csv(frame, fast, arrow=True)
    write_csv(frame, blocks, arrow=False)
    assert NumpyColumns()._blocks(frame) is not None
    joined = NumpyColumns()
    joined._blocks = lambda chunk: None
    assert fast.getvalue() == blocks.getvalue() == b"timestamp,host,pid,value\n" + joined.lines(frame)


def test_floats_written_digit_by_digit_are_what_repr_writes():
    """The byte-block writer finds each value's digits in numpy (the fewest
    decimals that read back as the value) and leaves to repr only what it
    cannot: exponents, infinities, more than 15 digits."""
    import numpy as np
    from sarsleuth.render.byte_columns import floats, place
    from sarsleuth.render.csv_columns import tidy_values
    rng = np.random.default_rng(11)
    n = 20_000
    mags = 10.0 ** rng.uniform(-8, 17, n) * rng.choice([-1, 1], n)
    values = np.concatenate([
        [0.0, -0.0, 0.1, 0.5, -12.5, 1 / 3, 1e-4, 9.999e-5, 0.000123, 99.99, 100.0, 999999999999999.0,
         99999999999999.9, 999999999999999.9, 1e15, 1e16, 5e-324, float("inf"), -float("inf"), float("nan")],
        mags, tidy_values(mags), np.round(mags, 2), rng.integers(0, 10**6, n) / 100,
        rng.integers(-10**15, 10**15, n) / 10.0 ** rng.integers(0, 16, n)])
    block, rest = floats(values)
    block = place(block, rest, ["" if v != v else repr(v) for v in values[rest].tolist()])
    written = [bytes(row[row != 0]).decode() for row in block]
    assert written == ["" if v != v else repr(v) for v in values.tolist()]
    # a metrics table's values (hundredths, whole counts) never reach repr
    hundredths = range(20 + 3 * n, 20 + 4 * n)
    assert not set(rest.tolist()) & set(hundredths)


def test_tidy_values_drop_only_float_noise():
    from sarsleuth.render.csv_columns import tidy_values
    got = tidy_values([1.3599999999999999, 0.30000000000000004, 79.3103448275862, 2**53 + 0.0, 1e-9 / 3, 4.5])
    assert [repr(float(v)) for v in got] == ["1.36", "0.3", "79.3103448275862", "9007199254740992.0",
                                             repr(1e-9 / 3), "4.5"]


def test_csv_goes_out_in_bounded_chunks(monkeypatch):
    import sarsleuth.render.export as export
    from sarsleuth.inputs.parsers import parse
    from sarsleuth.render import rows as _rows
    from sarsleuth.render.formats import csv
    table = export.source_table(parse(SAMPLES / "nginx-proxy-oom" / "sa06"))

    class Recording(io.BytesIO):
        sizes: list = []

        def write(self, data):
            self.sizes.append(len(memoryview(data)))
            return super().write(data)

    whole = io.BytesIO()
    csv.write_rows(table, whole)
    monkeypatch.setattr(_rows, "CHUNK_ROWS", 1000)
    chunked = Recording()
    csv.write_rows(table, chunked)
    assert chunked.getvalue() == whole.getvalue()
    assert len(chunked.sizes) == 1 + -(-len(table) // 1000)
    assert max(chunked.sizes) < 1000 * 80


def test_parquet_columns_are_typed(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow (the parquet extra) is not installed")
    import numpy as np
    import pandas as pd
    from sarsleuth.inputs.parsers import parse
    out = tmp_path / "sa06.parquet"
    assert run("parse", SAMPLES / "nginx-proxy-oom" / "sa06", "--format", "parquet", "-o", out).returncode == 0
    schema = pq.read_schema(out)
    assert str(schema.field("timestamp").type) == "timestamp[ns, tz=+08:00]"
    assert str(schema.field("metric").type).startswith("dictionary<values=string")
    assert str(schema.field("value").type) == "double"
    back = pd.read_parquet(out)
    src = parse(SAMPLES / "nginx-proxy-oom" / "sa06").metrics
    assert (back["timestamp"] == src["timestamp"]).all()
    assert np.allclose(back["value"], src["value"], rtol=1e-13, atol=0)   # 16th-digit noise dropped
    first = back[(back["section"] == "cpu") & (back["device"] == "all") & (back["metric"] == "%sys")].iloc[0]
    assert first["value"] == 1.36           # sar -u of 2014-05-06 00:10:01: %system 1.36
    events = tmp_path / "error.parquet"
    assert run("parse", SAMPLES / "nginx-worker-crash" / "error.log", "-f", "parquet", "-o", events).returncode == 0
    schema = pq.read_schema(events)
    assert str(schema.field("timestamp").type) == "timestamp[ns]"
    assert str(schema.field("pid").type) == "int64" and str(schema.field("line").type) == "int64"


def test_parquet_to_a_terminal_is_refused():
    proc = run("parse", SAMPLES / "nginx-proxy-oom" / "sa06", "--format", "parquet", tty=True)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "binary" in proc.stderr and "-o FILE" in proc.stderr


# ----------------------------------------------- what each output leaves out
@pytest.fixture(scope="module")
def many_incidents():
    import sarsleuth
    bundles = Path(__file__).resolve().parent / "bundles"
    folders = [p for p in sorted(SAMPLES.iterdir()) if p.is_dir() and p.name not in ("record", "sysstat-versions")]
    return sarsleuth.load(*folders, *sorted(p for p in bundles.iterdir() if p.is_dir()))


def _render(name, case, **view):
    import io

    from sarsleuth import render
    from sarsleuth.render.view import View
    out = io.StringIO()
    render.write_case(name, case, out, view=View(**view))
    return out.getvalue()


@pytest.mark.parametrize("view, told", [({}, 5), ({"top": 2}, 2), ({"everything": True}, None)])
def test_text_and_markdown_tell_every_incident_or_say_how_many_they_leave_out(many_incidents, view, told):
    total = len(many_incidents.incidents)
    assert total > 5
    told = total if told is None else told
    text = " ".join(_render("text", many_incidents, **view).split())
    md = _render("markdown", many_incidents, **view)
    assert len(re.findall(r"#\d+ \[(?:low|medium|high|critical)\]", text)) == told
    assert len(re.findall(r"(?m)^## \d+\. ", md)) == told
    for out in (text, md):
        if told < total:
            assert f"{total - told} more incident(s) not shown here" in out and "--all" in out
        else:
            assert "more incident(s) not shown" not in out
    # the guesses are said in every output, whatever is cut
    from sarsleuth.render.formats.markdown import md_escape
    for note in many_incidents.notes:
        assert "".join(note.split()) in "".join(text.split()) and md_escape(note) in md


def test_html_shows_every_incident(many_incidents):
    from sarsleuth.render.formats.html import build_html
    html = build_html(many_incidents, plots=False)
    for inc in many_incidents.incidents:
        assert f'id="incident-{inc.id}"' in html and f'href="#incident-{inc.id}"' in html
        for i, _f in enumerate(inc.findings, 1):      # every finding reachable from the list of all
            assert f'id="finding-{inc.id}-{i}"' in html and f'href="#finding-{inc.id}-{i}"' in html


def test_top_and_all_options(tmp_path):
    proc = run_cli("analyze", SAMPLES / "live-loopback", "--top", "1")
    assert proc.returncode == 0
    flat = " ".join(re.sub(r"[\u2500-\u257f]", " ", proc.stdout).split())     # without the panel's box lines
    assert "1 more incident(s) not shown here: --top 2 or --all tells every one." in flat
    for part in ("Timeline (UTC)", "06:22:13 cause 47 x 'worker_connections are not enough' error.log:29",
                 "Cause: 47 x", "Why: It comes first on the connection limit chain", "Effects:", "Context:",
                 "What to do: 1. Raise worker_connections together with worker_rlimit_nofile",
                 "note: times without a zone of vm are taken to be in UTC"):
        assert part in flat, part
    proc = run_cli("analyze", SAMPLES / "live-loopback", "--all", "--format", "markdown")
    assert proc.returncode == 0 and "not shown here" not in proc.stdout and "## 2. Worker crashes" in proc.stdout
    assert run_cli("analyze", SAMPLES / "live-loopback", "--top", "0").returncode == 2
