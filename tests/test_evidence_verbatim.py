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
from sarsleuth.inputs.evidence_lines import AROUND, cut

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
            "00:10:01 to 2014-05-06 15:10:59 (UTC+08:00)") in flat
    assert "all quiet" not in flat
    doc = run_cli("analyze", SAMPLES / "nginx-proxy-oom", "--window", "2020-01-01..2020-01-02", "--format", "json")
    import json
    assert json.loads(doc.stdout)["summary"].startswith("--window 2020-01-01T00:00:00..2020-01-02T00:00:00 holds no")
    # a window that holds data says nothing of the kind
    inside = run_cli("analyze", SAMPLES / "nginx-proxy-oom", "--window", "2014-05-06T15:00..2014-05-06T15:10")
    assert inside.returncode == 0 and "holds no data" not in inside.stdout


@pytest.mark.parametrize("block", [64, 4096, 8 << 20])
def test_lines_of_a_gzipped_file_are_read_back_across_its_blocks(block, tmp_path, monkeypatch):
    """A compressed log is read again block by block, its newlines counted:
    every line asked for is the file's, wherever the blocks cut it, and so
    is the last line when no newline ends it."""
    from sarsleuth.inputs import evidence_lines as quotes
    text = (SAMPLES / "nginx-proxy-oom" / "messages").read_bytes()
    body = text.rstrip(b"\n") + b"\r\nlast line, no newline"
    log = tmp_path / "messages.gz"
    log.write_bytes(gzip.compress(body))
    monkeypatch.setattr(quotes, "_COMPRESSED_BLOCK", block)
    lines = body.decode("utf-8", "replace").split("\n")
    wanted = {1, 2, 11, 49, len(lines) - 1, len(lines), len(lines) + 3}
    got = quotes.read_lines(str(log), wanted)
    assert got == {n: lines[n - 1].rstrip("\r") for n in wanted if n <= len(lines)}
    assert got[len(lines)] == "last line, no newline"


@pytest.mark.parametrize("block", [64, 4096, 8 << 20])
def test_lines_around_offsets_read_back_alike_from_a_plain_and_a_gzipped_file(block, tmp_path, monkeypatch):
    """Where the scan noted a line's offset in the content, a compressed
    file is decompressed once up to the last offset asked and gives the
    same lines as the plain file read around each offset; an offset that
    is no line start (the file changed since) is said to be missed."""
    from sarsleuth.inputs import evidence_lines as quotes
    body = (SAMPLES / "nginx-proxy-oom" / "messages").read_bytes()
    plain, gz = tmp_path / "messages", tmp_path / "messages.gz"
    plain.write_bytes(body)
    gz.write_bytes(gzip.compress(body))
    monkeypatch.setattr(quotes, "_COMPRESSED_BLOCK", block)
    monkeypatch.setattr(quotes, "_BACK_BYTES", 2048)       # five lines above, fewer than a block
    starts = [0] + [i + 1 for i, b in enumerate(body) if b == 0x0A][:-1]
    lines = body.decode("utf-8", "replace").split("\n")[:-1]
    asks = [(starts[n - 1], n, AROUND, 8) for n in (1, 11, 30, 49, len(lines))] + [(starts[20] + 3, 21, 2, 2)]
    expected = {m: lines[m - 1] for n in (1, 11, 30, 49, len(lines))
                for m in range(max(1, n - AROUND), min(len(lines), n + 8) + 1)}
    for path in (plain, gz):
        got, missed = quotes._lines_at_offsets(str(path), asks)
        assert (got, missed) == (expected, {starts[20] + 3}), path.name
