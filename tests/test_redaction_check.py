"""The last look of a redacted run: an output that would name an original
(a redaction that missed something) is not written, whatever it is (the
report on standard output in each format, --html, --plots, --save, a line
on standard error), exit 2 with one line naming the output and the kind of
name, never the name; outputs that would overwrite each other are refused
before anything is written."""
from __future__ import annotations

from pathlib import Path

import pytest

from sarsleuth import render
from sarsleuth.redaction.check import say_redacted
from sarsleuth.redaction.names import Redactor

from .conftest import run_cli
from .test_redaction_spellings import _sar_f

HOST = "web77q"
_LINES = [f"Nov 24 14:19:{s:02d} {HOST} kernel: Out of memory: Killed process {4200 + s} (java) total-vm:1021908kB, "
          f"anon-rss:524288kB, file-rss:4096kB, shmem-rss:0kB, UID:1000 pgtables:1200kB oom_score_adj:0"
          for s in range(10, 14)]


@pytest.fixture
def log(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    path = folder / "messages"
    path.write_text("\n".join(_LINES) + "\n")
    (folder / "sar-F.txt").write_text(_sar_f(HOST))        # metrics to plot
    return path


def _refused(ran, output: str, kind: str = "a host name"):
    assert ran.returncode == 2, ran.stderr
    assert ran.stdout == "" and HOST not in ran.stderr
    (line,) = ran.stderr.splitlines()
    assert line.startswith(f"sarsleuth: {output}") and f"it would hold {kind} of the inputs" in line, line


@pytest.mark.parametrize("fmt", render.names("case"))
def test_a_report_that_would_name_a_host_is_not_written(monkeypatch, log, fmt):
    """A redaction that misses every name (its replacement undone): the
    report in any format is refused before a byte of it is written."""
    monkeypatch.setattr(Redactor, "text", lambda self, text: text)
    _refused(run_cli("analyze", log, "--redact", "--format", fmt), "standard output")


def test_each_file_output_is_looked_over_before_it_is_written(monkeypatch, log, tmp_path):
    """Each output with a name slipped into it alone: the HTML page, an
    SVG plot's text, the saved case (a folder named after the host); none
    of them is written, and nothing is put on standard output."""
    import sarsleuth.fleet.save as save
    import sarsleuth.render.plots as plots
    import sarsleuth.render.formats.html as html
    out = tmp_path / "out"
    out.mkdir()
    build = html.build_html
    monkeypatch.setattr(html, "build_html", lambda case, **kw: build(case, **kw) + f"<!-- {HOST} -->")
    _refused(run_cli("analyze", log, "--redact", "--html", out / "r.html", "--format", "json"), str(out / "r.html"))
    assert not list(out.iterdir())
    monkeypatch.setattr(html, "build_html", build)

    figure = plots.incident_figure

    def labelled(case, inc):
        fig = figure(case, inc)
        if fig is not None:
            fig.text(0, 0, f"drawn for {HOST}")
        return fig
    monkeypatch.setattr("sarsleuth.render.plot_files.incident_figure", labelled)
    ran = run_cli("analyze", log.parent, "--redact", "--plots", out / "plots", "--no-fleet")
    _refused(ran, str(out / "plots"))
    assert not (out / "plots").exists()
    monkeypatch.setattr("sarsleuth.render.plot_files.incident_figure", figure)

    pytest.importorskip("pyarrow", reason="pyarrow (the parquet extra) is in the test extra")
    write = save._save_case

    def leaky(case, base):
        write(case, base)
        (Path(base) / f"notes-{HOST}.txt").write_text("x")
    monkeypatch.setattr(save, "_save_case", leaky)
    _refused(run_cli("analyze", log.parent, "--redact", "--save", out / "case"), str(out / "case"))
    assert not (out / "case").exists() and not list(out.glob(".case*"))


def test_a_line_on_standard_error_never_names_a_host(log, tmp_path):
    """A file skipped is named on stderr by its path, which holds the host
    name: said with the stand-in; a line that would still hold one after
    redaction is withheld, said so."""
    (log.parent / f"{HOST}-notes.bin").write_bytes(b"\0\1\2" * 100)
    ran = run_cli("analyze", log.parent, "--redact", "--format", "json")
    assert ran.returncode == 0 and HOST not in ran.stderr + ran.stdout
    assert "host-1-notes.bin" in ran.stderr
    said = []
    r = Redactor()
    r.host(HOST, own=True)
    r.text = lambda text: text                 # a redaction that misses it
    say_redacted(r, said.append)(f"warning: {HOST} said something")
    assert said == ["(a line withheld: it would hold a host name of the inputs)"]


@pytest.mark.parametrize("options", [("--redact-map", "{x}", "--html", "{x}"),
                                     ("--plots", "{d}", "--save", "{d}"),
                                     ("--html", "{d}/r.html", "--save", "{d}")])
def test_outputs_that_would_overwrite_each_other_are_refused_first(log, tmp_path, options):
    args = [o.format(x=tmp_path / "x", d=tmp_path / "d") for o in options]
    ran = run_cli("analyze", log, "--redact", *args)
    assert ran.returncode == 2 and "one output would overwrite the other" in ran.stderr
    assert not (tmp_path / "x").exists() and not (tmp_path / "d").exists()


def test_kept_addresses_and_stand_ins_are_no_leak():
    r = Redactor()
    r.learn("from 10.1.2.3 via 127.0.0.1 mask 255.255.255.0 ::1 ff:ff:ff:ff:ff:ff")
    stand_in = r.text("10.1.2.3")
    assert stand_in.startswith("198.18.") and r.leak(f"{stand_in} 127.0.0.1 255.255.255.0 ::1") is None
    assert r.leak("from 010.001.002.003") == "an IPv4 address"
    assert r.leak("a new peer 10.9.9.9") == "an IPv4 address"
