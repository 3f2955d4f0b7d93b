"""``sadf -x``: the XML rendering, walked element by element, each value
keeping the line its element starts on (evidence quotes that line)."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING
from xml.parsers import expat
from xml.parsers.expat import ExpatError

from sarsleuth.errors import InputError, located
from sarsleuth.inputs.reading import DECOMPRESSION_ERRORS, open_binary
from sarsleuth.inputs.parsers.sar_text import sections
from sarsleuth.inputs.parsers.sar_text.lines import LineIndex
from sarsleuth.inputs.parsers.base import ParseOptions
from sarsleuth.inputs.parsers.sadf.assembly import (MAX_NESTING, _Clock, _Collector, _emit, _event, _finish,
                                            _structured_stamp)

if TYPE_CHECKING:
    from sarsleuth.model import Source


def read_xml(parser, path, options: ParseOptions) -> Source:
    """A ``sadf -x`` document, as a Source of ``parser``'s kind."""
    options = options or ParseOptions()
    clock = _Clock(path, options)
    out = _Collector()
    warnings: list[str] = []
    meta: dict = {"format": "sadf -x", "hosts": []}
    host = None
    first_host = None
    seen_sysstat = False
    fh = open_binary(path)
    try:
        for event, elem in _elements(fh):
            tag = _local(elem.tag)
            if event == "start":
                if tag == "sysstat":
                    seen_sysstat = True
                elif tag == "host":
                    host = elem.get("nodename")
                    first_host = first_host or host
                    meta["hosts"].append(host)
                continue
            if tag == "timestamp" and elem.get("date") is not None:
                ts = _structured_stamp(clock, elem.attrib)
                for child in elem:
                    _xml_walk(child, None, ts, host, out)
                elem.clear()
            elif tag in ("boot", "comment") and elem.get("date") is not None:
                ts = _structured_stamp(clock, elem.attrib)
                at = elem.get(LINE_KEY)
                if tag == "boot":
                    n = elem.get("cpu_count")
                    msg = f"LINUX RESTART ({n} CPU)" if n else "LINUX RESTART"
                    out.events.append(_event(ts, host, "sar-restart", msg, path, at))
                else:
                    out.events.append(_event(ts, host, "sar-comment", elem.get("com", ""), path, at))
            elif tag in _METADATA:
                meta.setdefault(_METADATA[tag], (elem.text or "").strip())
    except ExpatError as exc:
        line = exc.lineno
        if not out.values and not out.events:
            raise InputError(path, f"not valid XML: {exc}", line=line) from None
        warnings.append(located(path, f"XML damaged ({exc}); statistics before it were kept",
                                line=line))
    except DECOMPRESSION_ERRORS + (LookupError,) as exc:   # LookupError: an unknown encoding="..."
        if not out.values:
            raise InputError(path, f"unreadable: {exc}") from None
        warnings.append(located(path, f"stream damaged ({exc}); statistics before it were kept"))
    finally:
        fh.close()
    if not seen_sysstat:
        raise InputError(path, "XML without a <sysstat> element: not sadf -x output")
    if out.too_deep:
        warnings.append(located(path, f"{out.too_deep} element(s) nested deeper than sadf ever writes "
                                      "were skipped"))
    if isinstance(meta.get("ncpu"), str) and meta["ncpu"].isdigit():
        meta["ncpu"] = int(meta["ncpu"])
    meta["line_index"] = LineIndex(path)
    metrics = out.frame()
    return _finish(parser, path, options, metrics, out.events, first_host, meta, warnings, clock)


#: Bytes handed to the XML parser at a time.
FEED_BYTES = 1 << 16

#: Where an element keeps the line its start tag is on: an attribute key
#: no XML attribute can have (names hold no spaces), never read as a field.
LINE_KEY = " line"

#: Header elements and the meta keys they fill.
_METADATA = {"release": "kernel", "machine": "arch", "number-of-cpus": "ncpu", "file-date": "date",
             "sysdata-version": "sysdata_version"}
#: Elements whose start (the rest: whose end) the reader acts on.
_STARTS = {"sysstat", "host"}
_ENDS = {"timestamp", "boot", "comment", *_METADATA}


def _elements(fh):
    """``(event, element)`` of an XML stream as ``iterparse`` gives them,
    for the elements the reader acts on only; every element keeps the line
    its start tag is on (``LINE_KEY``).  expat is driven directly because
    ElementTree does not say where an element was."""
    builder = ET.TreeBuilder()
    parser = expat.ParserCreate(namespace_separator="}")
    parser.buffer_text = True
    ready: list = []

    def start(tag, attrs):
        attrs[LINE_KEY] = parser.CurrentLineNumber
        elem = builder.start(tag, attrs)
        if tag.rpartition("}")[2] in _STARTS:
            ready.append(("start", elem))

    def end(tag):
        elem = builder.end(tag)
        if tag.rpartition("}")[2] in _ENDS:
            ready.append(("end", elem))

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = builder.data
    while True:
        chunk = fh.read(FEED_BYTES)
        try:
            parser.Parse(chunk, not chunk)
        except expat.ExpatError:
            yield from ready        # what was read before the damage counts
            raise
        yield from ready
        ready.clear()
        if not chunk:
            return


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _xml_walk(elem, activity, ts, host, out: _Collector, depth: int = 0):
    if depth > MAX_NESTING:
        out.too_deep += 1
        return
    tag = _local(elem.tag)
    if tag in sections.STRUCTURED_ACTIVITIES:
        activity = tag
    fields = dict(elem.attrib)
    line = fields.pop(LINE_KEY, None)
    lines: int | dict | None = line
    for child in elem:
        ctag = _local(child.tag)
        if len(child.attrib) == 1 and not len(child) and (child.text or "").strip():
            fields[ctag] = child.text.strip()   # <memfree>1437740</memfree>, on a line of its own
            if not isinstance(lines, dict):
                lines = dict.fromkeys(fields, line)
            lines[ctag] = child.get(LINE_KEY)
        else:
            _xml_walk(child, activity, ts, host, out, depth + 1)
    if activity and fields:
        _emit(activity, fields, ts, host, out, lines)
