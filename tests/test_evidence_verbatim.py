"""Evidence is the line as the file has it, at its number, whatever way
the file came: piped into standard input (plain or gzipped) or packed in a
tarball; and the lines around it are the file's own lines."""
from __future__ import annotations

import gzip
import io
import sys
import tarfile

import pytest

import sarsleuth
from sarsleuth.quotes import AROUND, cut

from .conftest import SAMPLES, run_cli

FOLDERS = ["nginx-proxy-oom", "image-service-ab", "tengine-720k", "nginx-worker-crash", "live-loopback"]


def _lines(path) -> list[str]:
    return path.read_bytes().decode("utf-8", "replace").splitlines()


def _cited(case) -> list:
    return [e for f in case.findings for e in f.evidence if e.line]


def _assert_verbatim(evidence, file_lines, where):
    assert evidence.text == cut(file_lines[evidence.line - 1].rstrip()) or \
        evidence.text == cut(file_lines[evidence.line - 1]), (where, evidence.line, evidence.text)
    assert evidence.around, where
    for n, text in evidence.around:
        assert text == cut(file_lines[n - 1]), (where, n)
    assert [n for n, _t in evidence.around] == list(range(max(1, evidence.line - AROUND),
                                                          min(len(file_lines), evidence.line + AROUND) + 1))


@pytest.mark.parametrize("name", FOLDERS)
def test_evidence_from_a_tarball_is_the_members_line(name, tmp_path):
    folder = SAMPLES / name
    archive = tmp_path / f"{name}.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for f in sorted(folder.iterdir()):
            if f.is_file():
                tar.add(f, arcname=f"{name}/{f.name}")
    case = sarsleuth.load(archive)
    cited = [e for e in _cited(case) if "!" in e.path]
    assert cited, name
    for e in cited:
        member = e.path.rsplit("!", 1)[1]
        _assert_verbatim(e, _lines(SAMPLES / member), e.path)


def _through_stdin(monkeypatch, data: bytes, *rest):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    return sarsleuth.load("-", *rest)


@pytest.mark.parametrize("name", FOLDERS)
def test_evidence_from_standard_input_is_the_piped_line(name, sample_case, monkeypatch):
    """Each file the sample's evidence cites, piped in with the sample's
    other files beside it: ``<stdin>:N`` quotes line N as piped."""
    folder = SAMPLES / name
    files = sorted({e.path for e in _cited(sample_case(name))})
    assert files, name
    for path in files:
        others = [f for f in sorted(folder.iterdir()) if f.is_file() and str(f) != path]
        case = _through_stdin(monkeypatch, open(path, "rb").read(), *others)
        cited = [e for e in _cited(case) if e.path == "<stdin>"]
        assert cited, (name, path)
        for e in cited:
            _assert_verbatim(e, _lines(SAMPLES / name / path.rsplit("/", 1)[-1]), path)


def test_evidence_of_a_gzipped_log_piped_in_is_its_line(monkeypatch):
    messages = SAMPLES / "nginx-proxy-oom" / "messages"
    case = _through_stdin(monkeypatch, gzip.compress(messages.read_bytes()), SAMPLES / "nginx-proxy-oom" / "sa06")
    cited = [e for e in _cited(case) if e.path == "<stdin>"]
    assert {e.line for e in cited} >= {11, 49}
    for e in cited:
        _assert_verbatim(e, _lines(messages), "<stdin>")
    assert cited[0].text.startswith("May  6 15:04:13 Cangke_107_176 kernel: ")


def test_a_window_without_data_says_so(tmp_path):
    proc = run_cli("analyze", SAMPLES / "nginx-proxy-oom", "--window", "2020-01-01..2020-01-02")
    assert proc.returncode == 0
    flat = " ".join(proc.stdout.split())
    assert ("--window 2020-01-01T00:00:00..2020-01-02T00:00:00 holds no data: the inputs cover 2014-05-06 "
            "00:10:01 to 2014-05-06 15:50:01 (UTC+08:00)") in flat
    assert "all quiet" not in flat
    doc = run_cli("analyze", SAMPLES / "nginx-proxy-oom", "--window", "2020-01-01..2020-01-02", "--format", "json")
    import json
    assert json.loads(doc.stdout)["summary"].startswith("--window 2020-01-01T00:00:00..2020-01-02T00:00:00 holds no")
    # a window that holds data says nothing of the kind
    inside = run_cli("analyze", SAMPLES / "nginx-proxy-oom", "--window", "2014-05-06T15:00..2014-05-06T15:10")
    assert inside.returncode == 0 and "holds no data" not in inside.stdout
