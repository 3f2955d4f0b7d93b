"""The streaming first pass: candidate finders, blocks, hostile input."""
from __future__ import annotations

import bz2
import gzip
import lzma
import re

import pandas as pd
import pytest

from sarsleuth.inputs.parsers.logs import engine as log_engine
from sarsleuth.inputs.parsers.logs import scan as logscan
from sarsleuth.inputs.parsers.logs.pattern_syntax import re2_superset
from sarsleuth.inputs.parsers.logs.scan import LogFormat, scan
from sarsleuth.inputs.parsers import parse, sniff
from sarsleuth.inputs.parsers.logs import syslog as syslog_parser
from sarsleuth.inputs.parsers.base import ParseOptions


ENGINES = [pytest.param("hyperscan", marks=pytest.mark.skipif(
    not log_engine.hyperscan_available(), reason="hyperscan has no wheel for this platform")), "re2"]


def _lines_matching(data: bytes, regex) -> list[tuple[int, int]]:
    out, pos = [], 0
    for line in data.split(b"\n")[:-1]:
        if regex.search(line):
            out.append((pos, pos + len(line)))
        pos += len(line) + 1
    return out


def test_re2_supersets_keep_pythons_meaning():
    """Built-in patterns are Python's: RE2 runs them written from Python's
    parse, so RE2's syntax cannot change what they find."""
    import re2
    options = re2.Options()
    options.encoding = re2.Options.Encoding.LATIN1
    cases = [(r"Out of\s+memory", b"Out of\x0bmemory"),          # RE2's \s lacks the vertical tab
             (r"a{,3}b", b"aab"),                                 # {,3} is a literal to RE2
             (r"(?<=code=)E42\b", b"failed code=E42 again"),       # lookbehind: dropped, a superset
             (r"(?i:nic link is down)", b"NIC Link is Down"),
             ("Can(?:'|\u2019)?t alloc", "Can\u2019t alloc".encode())]
    for pattern, line in cases:
        assert re.search(pattern.encode(), line), pattern
        assert re2.compile(re2_superset(pattern), options).search(line), pattern


@pytest.mark.parametrize("engine", ENGINES)
def test_engines_find_every_signature_line(corpus, engine):
    """Line for line, on every corpus log (CR stripped as the scan does),
    each engine finds exactly the lines the full regex accepts."""
    patterns = tuple(log_engine.candidate_patterns())
    finder = (log_engine.HyperscanFinder if engine == "hyperscan" else log_engine.Re2Finder)(patterns)
    full = logscan.candidate_regex()
    for path in sorted((corpus / "logs").glob("*.log")):
        data = path.read_bytes().replace(b"\r", b"")
        if not data.endswith(b"\n"):
            data += b"\n"
        assert [(s, e) for s, e, _ in finder.find(data)] == _lines_matching(data, full), path.name


@pytest.mark.skipif(not log_engine.hyperscan_available(), reason="hyperscan has no wheel for this platform")
def test_both_engines_give_the_same_events(corpus):
    from sarsleuth.inputs.parsers.logs import dmesg, journal, nginx_error
    modules = {"syslog": syslog_parser, "dmesg": dmesg, "nginx-error": nginx_error, "journal": journal}
    for path in sorted((corpus / "logs").glob("*.log")):
        kind = sniff(path)[0]
        if kind is None:
            continue
        module = modules[kind]
        a = module.read_events(path, ParseOptions(year=2020), engine="re2")
        b = module.read_events(path, ParseOptions(year=2020), engine="hyperscan")
        assert (a.meta["engine"], b.meta["engine"]) == ("re2", "hyperscan")
        pd.testing.assert_frame_equal(a.events, b.events, check_dtype=False)


def test_the_default_engine_is_hyperscan_where_it_is_installed(tmp_path, monkeypatch):
    monkeypatch.delenv("SARSLEUTH_LOG_ENGINE", raising=False)
    path = tmp_path / "messages"
    path.write_bytes(b"May  6 15:04:14 web1 kernel: Out of socket memory\n")
    src = parse(path, options=ParseOptions(year=2014))
    assert src.meta["engine"] == ("hyperscan" if log_engine.hyperscan_available() else "re2")


@pytest.mark.parametrize("engine", ENGINES)
def test_matches_never_cross_a_line(engine):
    """``[^)]*`` and ``\\s`` may run over a newline inside an engine: a line
    is a candidate only when it holds a match by itself."""
    patterns = (r"Killed process \d+ \([^)]*\)", r"Out of\s+memory")
    data = b"Killed process 12 (java\nx) Out of\nmemory\nKilled process 13 (nginx)\n"
    finder = (log_engine.HyperscanFinder if engine == "hyperscan" else log_engine.Re2Finder)(patterns)
    assert [(s, e) for s, e, _ in finder.find(data)] == [(41, 66)]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_match_over_a_newline_hides_no_line(engine):
    """RE2 searches on from the line after a match's start: a match running
    into the next line cannot swallow that line's own match."""
    patterns = (r"segfault at [0-9a-f]+", r"upstream\s+timed out")
    data = b"x upstream\nupstream timed out (110)\ny segfault at 7f\n"
    finder = (log_engine.HyperscanFinder if engine == "hyperscan" else log_engine.Re2Finder)(patterns)
    assert [data[s:e] for s, e, _ in finder.find(data)] == [b"upstream timed out (110)", b"y segfault at 7f"]


def test_finders_are_built_once_per_pattern_set():
    a, kinds = log_engine.make_finder(engine="re2")
    assert log_engine.make_finder(engine="re2") == (a, kinds) and a.name == "re2"
    with pytest.raises(ValueError, match="unknown log engine"):
        log_engine.make_finder(engine="grep")


def test_reports_spanning_block_boundaries(corpus):
    path = corpus / "logs" / "dmesg-oom-sysrq-5.4-hotsos.log"
    from sarsleuth.inputs.parsers.logs import dmesg
    fmt = LogFormat("dmesg", dmesg.parse_line, logscan.VolumeSpec(regex=dmesg._VOLUME_REGEX))
    whole = scan(path, fmt)
    small = scan(path, fmt, block_bytes=1000)
    assert whole.lines == small.lines == 207
    pd.testing.assert_frame_equal(pd.DataFrame(whole.events.columns(True)), pd.DataFrame(small.events.columns(True)))
    assert whole.events.stamps() == small.events.stamps()
    assert whole.volume_keys == small.volume_keys


HOSTILE = (b"May  6 15:04:13 web1 kernel: \xff\xfe nginx: page allocation failure. order:0, mode:0x20\r\n"
           b"May  6 15:04:14 web1 kernel: \x00\x00Out of socket memory\r\n"
           b"May  6 15:04:15 web1 kernel: segfault at " + b"A" * (5 * 1024 * 1024) + b"\n"
           b"May  6 15:04:16 web1 nginx[77]: accept4() failed (24: Too many open files)\n"
           b"\x00\x00\x00\x00\n"
           b"May  6 15:04:20 web1 kernel: TCP: time wait bucket table overflow")


def test_hostile_input_is_parsed_around(tmp_path):
    path = tmp_path / "messages"
    path.write_bytes(HOSTILE)
    src = parse(path, options=ParseOptions(year=2014))
    ev = src.events
    assert list(ev["kind"]) == ["page-allocation-failure", "socket-memory", "segfault", "too-many-open-files",
                                "tcp-tw-bucket-overflow"]
    assert list(ev["line"]) == [1, 2, 3, 4, 6]
    assert ev.iloc[0]["message"] == "\ufffd\ufffd nginx: page allocation failure. order:0, mode:0x20"
    assert ev.iloc[1]["message"] == "Out of socket memory"
    assert len(ev.iloc[2]["message"]) < 20000
    assert ev.iloc[3]["pid"] == 77 and ev.iloc[4]["timestamp"] == pd.Timestamp("2014-05-06 15:04:20")
    assert src.records == 6
    text = " | ".join(src.warnings)
    for fragment in ("invalid UTF-8", "NUL", "were cut", "ends in the middle of a line"):
        assert fragment in text


@pytest.mark.parametrize("compress", [gzip.compress, lzma.compress, bz2.compress, "zstd"])
def test_compressed_logs(corpus, tmp_path, compress):
    raw = (corpus / "logs" / "nginx-error-signal11-core-dumped-respawn-openresty.log").read_bytes()
    if compress == "zstd":
        zstandard = pytest.importorskip("zstandard", reason="zstandard (the zstd extra) is not installed")
        data = zstandard.ZstdCompressor().compress(raw)
    else:
        data = compress(raw)
    path = tmp_path / "error.log.1"
    path.write_bytes(data)
    assert sniff(path)[0] == "nginx-error"
    ev = parse(path).events
    assert dict(ev["kind"].value_counts()) == {"worker-start": 5, "worker-signal-exit": 4}


def test_progress_callback(corpus):
    seen = []
    syslog_parser.read_events(corpus / "logs" / "messages-2.6.5-fedora-loghub-linux2k.log",
                              ParseOptions(year=2005), progress=lambda done, total: seen.append((done, total)))
    size = (corpus / "logs" / "messages-2.6.5-fedora-loghub-linux2k.log").stat().st_size
    assert seen and seen[-1] == (size, size) and all(d <= size for d, _ in seen)


def test_hostile_input_with_small_reads(tmp_path):
    """The 5 MB line spans many reads: it is cut, the lines around it survive."""
    path = tmp_path / "messages"
    path.write_bytes(HOSTILE)
    fmt = LogFormat("syslog", syslog_parser.parse_line, syslog_parser.volume_spec(HOSTILE[:4096])[1])
    result = scan(path, fmt, block_bytes=64 * 1024)
    events = result.events.columns(True)
    assert list(events["kind"]) == ["page-allocation-failure", "socket-memory", "segfault", "too-many-open-files",
                                    "tcp-tw-bucket-overflow"]
    assert list(events["line"]) == [1, 2, 3, 4, 6]
    assert result.lines == 6
    assert any("longer than" in w and "bytes were cut" in w for w in result.warnings)


@pytest.mark.parametrize("kind", ["nginx-error", "syslog", "dmesg", "journal"])
def test_long_lines_of_word_characters_stay_fast(tmp_path, kind):
    """No regex may go quadratic on a 2 MB line without spaces or colons."""
    import time
    from sarsleuth.inputs.parsers import parse as parse_kind
    first = {"nginx-error": b"2012/12/24 16:39:56 [alert] 13661#0: worker process 13666 exited on signal 11\n",
             "syslog": b"May  6 15:04:13 web1 kernel: Out of socket memory\n",
             "dmesg": b"[  12.000001] TCP: too many orphaned sockets\n",
             "journal": b"-- Logs begin at Fri 2022-02-04 09:34:04 UTC. --\n"
                        b"Feb 04 09:35:00 web1 kernel: Out of socket memory\n"}[kind]
    path = tmp_path / "log"
    path.write_bytes(first + b"x" * (2 * 1024 * 1024) + b" Too many open files " + b"y" * 20000 + b"\n" + first)
    t0 = time.perf_counter()
    src = parse_kind(path, kind=kind, options=ParseOptions(year=2014))
    assert time.perf_counter() - t0 < 10
    assert src.records == 2 * first.count(b"\n") + 1 and src.events["repeats"].sum() >= 2


@pytest.mark.parametrize("engine", ENGINES)
def test_patterns_an_engine_lacks_still_find_their_lines(engine):
    """A lookbehind (refused by config checks, but a format may bring one)
    runs as a Hyperscan prefilter or an RE2 superset; the line check keeps
    the true lines."""
    patterns = tuple(log_engine.candidate_patterns()) + (r"(?<=code=)E42\b",)
    data = b"May  6 15:04:13 web1 app[1]: failed code=E42 again\nMay  6 15:04:14 web1 app[1]: E42 alone\n"
    finder = (log_engine.HyperscanFinder if engine == "hyperscan" else log_engine.Re2Finder)(patterns)
    assert [(s, e) for s, e, _ in finder.find(data)] == [(0, 50)]


def test_scans_in_threads_share_the_finder(tmp_path, corpus):
    """One cached finder serves scans running at once in several threads."""
    from concurrent.futures import ThreadPoolExecutor
    path = corpus / "logs" / "messages-2.6.5-fedora-loghub-linux2k.log"
    one = syslog_parser.read_events(path, ParseOptions(year=2005)).events
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: syslog_parser.read_events(path, ParseOptions(year=2005)).events, range(8)))
    for events in results:
        pd.testing.assert_frame_equal(events, one)


@pytest.mark.parametrize("engine", ENGINES)
def test_kinds_read_from_the_patterns_a_line_holds_are_classifys(corpus, engine):
    """The scan classifies a candidate line by the patterns its engine saw
    on it: the same kind as the whole table gives its message."""
    from sarsleuth.knowledge.signatures import classify
    from sarsleuth.inputs.parsers.logs import dmesg, nginx_error
    finder, kinds = log_engine.make_finder(engine=engine)
    parsers = {"syslog": syslog_parser.parse_line, "dmesg": dmesg.parse_line, "nginx-error": nginx_error.parse_line}
    compared = 0
    for path in sorted((corpus / "logs").glob("*.log")):
        parse_line = parsers.get(sniff(path)[0])
        if parse_line is None:
            continue
        data = path.read_bytes().replace(b"\r", b"")
        for start, end, ids in finder.find(data):
            message = parse_line(data[start:end].decode("utf-8", "replace")).message
            if message.isascii():
                assert kinds.kind(message, ids) == classify(message), message
                compared += 1
    assert compared > 200
