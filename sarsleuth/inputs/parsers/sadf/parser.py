"""The sadf kinds as the parser registry sees them: each sniffer needs only
the first bytes and ``re``, so this module imports none of the readers;
``parse`` loads :mod:`.csv_reader`, :mod:`.json_reader` or :mod:`.xml_reader`
when a file is read.  The parsers are defined in the order of those
modules' names (the order breaks ties between equal sniffs)."""
from __future__ import annotations

import re

from sarsleuth.inputs.parsers.base import HEAD_LINES, ParseOptions, Parser
from sarsleuth.inputs.reading import decode

SADF_HEAD_RE = re.compile(r"^#\s*hostname;interval;timestamp(?:;|$)")
SADF_ROW_RE = re.compile(r"^[^;\s]+;-?\d+;(?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?: \S+)?|\d{9,});")
#: Where sadf -j and -x name the host
_JSON_HOST = re.compile(r'"nodename"\s*:\s*"((?:[^"\\]|\\.){1,255})"')
_XML_HOST = re.compile(r'<host\s[^>]*nodename="([^"]{1,255})"')


def _hosts_matching(pattern, head: bytes) -> tuple:
    return tuple(dict.fromkeys(m.group(1) for m in pattern.finditer(decode(head))))


class SadfCsvParser(Parser):
    """``sadf -d`` (and ``-dh``) semicolon-separated output."""

    kind = "sadf-csv"
    priority = 10
    description = "sadf -d CSV (# hostname;interval;timestamp;...)"

    @classmethod
    def sniff(cls, head: bytes, text: str) -> float:
        lines = [l for l in text.splitlines()[:50] if l.strip()]
        if not lines:
            return 0.0
        if any(SADF_HEAD_RE.match(l) for l in lines[:5]):
            return 0.98
        rows = sum(1 for l in lines if SADF_ROW_RE.match(l))
        return 0.8 if rows >= max(1, len(lines) // 2) else 0.0

    @classmethod
    def hosts_in(cls, path, head: bytes) -> tuple[tuple, dict]:
        """The hostname column of its first rows."""
        found = []
        for line in decode(head).splitlines()[:HEAD_LINES]:
            if line.startswith("#") or ";" not in line:
                continue
            host = line.split(";", 1)[0].strip()
            if host and host not in found:
                found.append(host)
        return tuple(found), {}

    @classmethod
    def parse(cls, path, options: ParseOptions):
        # here, not at the top: sniff loads this module
        from sarsleuth.inputs.parsers.sadf.csv_reader import read_csv
        return read_csv(cls, path, options)


class SadfJsonParser(Parser):
    """``sadf -j`` JSON: ``{"sysstat": {"hosts": [...]}}``."""

    kind = "sadf-json"
    priority = 10
    description = "sadf -j JSON ({\"sysstat\": {\"hosts\": ...}})"
    shape = "document"

    @classmethod
    def sniff(cls, head: bytes, text: str) -> float:
        start = text.lstrip()[:200]
        if start.startswith("{") and re.search(r'"sysstat"\s*:\s*\{\s*"(?:sysdata-version|hosts)"', start):
            return 0.98
        if start.startswith("{") and '"sysstat"' in start:
            return 0.7
        return 0.0

    @classmethod
    def hosts_in(cls, path, head: bytes) -> tuple[tuple, dict]:
        return _hosts_matching(_JSON_HOST, head), {}

    @classmethod
    def parse(cls, path, options: ParseOptions):
        # here, not at the top: sniff loads this module
        from sarsleuth.inputs.parsers.sadf.json_reader import read_json
        return read_json(cls, path, options)


class SadfXmlParser(Parser):
    """``sadf -x`` XML: ``<sysstat><host><statistics><timestamp>...``."""

    kind = "sadf-xml"
    priority = 10
    description = "sadf -x XML (<sysstat> ... <timestamp>)"
    shape = "document"

    @classmethod
    def sniff(cls, head: bytes, text: str) -> float:
        start = text.lstrip()[:2000]
        if re.search(r"<sysstat[\s>]", start) and ("<sysdata-version>" in start or "<host" in start):
            return 0.98
        if "<sysstat" in start:
            return 0.6
        return 0.0

    @classmethod
    def hosts_in(cls, path, head: bytes) -> tuple[tuple, dict]:
        return _hosts_matching(_XML_HOST, head), {}

    @classmethod
    def parse(cls, path, options: ParseOptions):
        # here, not at the top: sniff loads this module
        from sarsleuth.inputs.parsers.sadf.xml_reader import read_xml
        return read_xml(cls, path, options)
