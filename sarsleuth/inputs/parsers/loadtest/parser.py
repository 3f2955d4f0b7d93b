"""The load-test kinds as the parser registry sees them: each tool's sniffer
needs only the first bytes and ``re``, so this module imports neither the
tools' readers nor their grammars; ``parse`` loads the tool's module
(:mod:`.ab`, :mod:`.httperf`, :mod:`.tsar`, :mod:`.wrk`) when a file is
read.  The parsers are defined in the order of those modules' names (the
order breaks ties between equal sniffs)."""
from __future__ import annotations

import re

from sarsleuth.inputs.parsers.base import ParseOptions, Parser

# --------------------------------------------------------------------------
# ab

_AB_STRONG = re.compile(r"This is ApacheBench, Version|Percentage of the requests served within|"
                        r"Requests per second:\s+[\d.]+ \[#/sec\]")
_AB_ABORT = re.compile(r"^\s*apr_\w+: .*\(\d+\)\s*$", re.M)
_AB_ABORT_TOTAL = re.compile(r"^\s*Total of \d+ requests completed\s*$", re.M)
_AB_WEAK = re.compile(r"^\s*(Concurrency Level:|Time taken for tests:|Complete requests:|"
                      r"Time per request:|Transfer rate:|Server Software:|Document Path:|"
                      r"apr_\w+: .*\(\d+\)|Total of \d+ requests completed)", re.M)


class AbParser(Parser):
    """ApacheBench output (one or several reports per file)."""

    kind = "ab"
    priority = 5
    description = "ApacheBench (ab) report, 2.0 to 2.4 and trunk; a run that gave up is read for how many requests completed"

    @classmethod
    def sniff(cls, head: bytes, text: str) -> float:
        if _AB_STRONG.search(text):
            return 0.95
        weak = len(set(m.group(1).split(":")[0] for m in _AB_WEAK.finditer(text)))
        if weak >= 3:
            return 0.85
        if weak >= 1 and re.search(r"(^|\s)ab\s+-", text):
            return 0.6
        if _AB_ABORT.search(text) and _AB_ABORT_TOTAL.search(text):
            # the two lines ab prints when it gives up (ab.c apr_err(), then
            # "Total of %d requests completed"): a pasted tail of a run
            return 0.8
        return 0.0

    @classmethod
    def parse(cls, path, options: ParseOptions):
        # here, not at the top: sniff loads this module
        from sarsleuth.inputs.parsers.loadtest.ab import parse_ab
        return parse_ab(path, options)


# --------------------------------------------------------------------------
# httperf

_HTTPERF_LINES = re.compile(r"^\s*(\^C)?(Maximum connect burst length:|Total: connections \d+|Connection rate: |"
                            r"Request rate: |Reply rate \[replies/s\]:|Reply status: 1xx=|Errors: total \d+|"
                            r"Net I/O: |httperf --)", re.M)


class HttperfParser(Parser):
    """httperf output (one or several reports per file)."""

    kind = "httperf"
    priority = 5
    description = "httperf load-test report"

    @classmethod
    def sniff(cls, head: bytes, text: str) -> float:
        found = {m.group(2)[:8] for m in _HTTPERF_LINES.finditer(text)}
        if len(found) >= 3:
            return 0.95
        if len(found) == 2:
            return 0.7
        return 0.0

    @classmethod
    def parse(cls, path, options: ParseOptions):
        # here, not at the top: sniff loads this module
        from sarsleuth.inputs.parsers.loadtest.httperf import parse_httperf
        return parse_httperf(path, options)


# --------------------------------------------------------------------------
# tsar

_TSAR_CHECK = re.compile(r"^\S+\s+tsar\s+[\w-]+:[\w:./-]*=\d", re.M)


class TsarParser(Parser):
    """tsar tables (history and live) and --check lines."""

    kind = "tsar"
    priority = 5
    description = "tsar (Taobao system activity reporter) tables and --check lines"

    @classmethod
    def sniff(cls, head: bytes, text: str) -> float:
        headers = len(re.findall(r"^\s*Time\s+-{2,}\S*[A-Za-z]\S*-{1,}", text, re.M))
        stamps = len(re.findall(r"^\s*\d\d/\d\d/\d\d-\d\d:\d\d(:\d\d)?\s+-?\d", text, re.M))
        if headers and (stamps or re.search(r"^\s*Time\s+[A-Za-z]", text, re.M)):
            return 0.95
        if _TSAR_CHECK.search(text):
            return 0.9
        if stamps >= 2 and re.search(r"(^|\s)tsar\b", text):
            return 0.6
        return 0.0

    @classmethod
    def parse(cls, path, options: ParseOptions):
        # here, not at the top: sniff loads this module
        from sarsleuth.inputs.parsers.loadtest.tsar import parse_tsar
        return parse_tsar(path, options)


# --------------------------------------------------------------------------
# wrk and wrk2

_RUNNING = re.compile(r"Running \d+(\.\d+)?(us|ms|s|m|h) test @")
_SUMMARY = re.compile(r"^\s*\d+ requests in \d+(\.\d+)?(us|ms|s|m|h), \d+(\.\d+)?[KMGT]?B read", re.M)
_WRK_LINES = re.compile(r"threads and \d+ connections|Thread Stats\s+Avg\s+Stdev|Requests/sec:|Transfer/sec:|"
                        r"Socket errors: connect \d+|unable to connect to ")
_WRK2_MARKS = re.compile(r"Thread calibration: mean lat\.|HdrHistogram - (Recorded|Uncorrected) Latency|"
                         r"Detailed Percentile spectrum|#\[Mean\s+=|(^|\s)wrk2?\s.*\s-R\s?\d|(^|\s)wrk2\s+-")
#: Words one of which each pattern above needs: a head of another format
#: (64 KiB of sar text or syslog) is passed over by substring tests, far
#: cheaper than the patterns' searches.
_WRK2_WORDS = ("wrk", "Thread calibration: mean lat.", "HdrHistogram - ", "Detailed Percentile spectrum", "#[Mean")
_WRK_WORDS = ("threads and ", "Thread Stats", "Requests/sec:", "Transfer/sec:", "Socket errors: connect ",
              "unable to connect to ")

#: The head scored last and its score: wrk and wrk2 sniff the same head in turn.
_last_scored: list = [None, (0.0, False)]


def _sniff_score(text: str) -> tuple[float, bool]:
    """(confidence that this is wrk-family output, whether wrk2 marks exist)."""
    if _last_scored[0] is not text:
        _last_scored[:] = [text, _score(text)]
    return _last_scored[1]


def _score(text: str) -> tuple[float, bool]:
    wrk2 = any(word in text for word in _WRK2_WORDS) and bool(_WRK2_MARKS.search(text))
    score = 0.0
    if (" test @" in text and _RUNNING.search(text)) or (" requests in " in text and _SUMMARY.search(text)):
        score = 0.9
    elif (any(word in text for word in _WRK_WORDS)
          and len(set(m.group(0)[:8] for m in _WRK_LINES.finditer(text))) >= 2):
        score = 0.8
    elif wrk2:
        score = 0.8
    elif ("unable to connect to " in text and "wrk" in text and re.search(r"unable to connect to \S+", text)
          and re.search(r"(^|\s)wrk2?\s+-", text)):
        score = 0.7
    return score, wrk2


class WrkParser(Parser):
    """wrk output (one or several reports per file)."""

    kind = "wrk"
    priority = 4
    description = "wrk load-test report"

    @classmethod
    def sniff(cls, head: bytes, text: str) -> float:
        score, wrk2 = _sniff_score(text)
        return 0.0 if wrk2 else score

    @classmethod
    def parse(cls, path, options: ParseOptions):
        # here, not at the top: sniff loads this module
        from sarsleuth.inputs.parsers.loadtest.wrk import parse_wrk_family
        return parse_wrk_family(path, options, cls.kind)


class Wrk2Parser(Parser):
    """wrk2 output: calibration, HdrHistogram spectra, -U blocks."""

    kind = "wrk2"
    priority = 5
    description = "wrk2 load-test report (HdrHistogram latency)"

    @classmethod
    def sniff(cls, head: bytes, text: str) -> float:
        score, wrk2 = _sniff_score(text)
        return max(score, 0.8) if wrk2 and score else 0.0

    @classmethod
    def parse(cls, path, options: ParseOptions):
        # here, not at the top: sniff loads this module
        from sarsleuth.inputs.parsers.loadtest.wrk import parse_wrk_family
        return parse_wrk_family(path, options, cls.kind)
