"""``sadf -x``: the XML rendering, walked element by element."""
from __future__ import annotations

from typing import TYPE_CHECKING

from sarsleuth.errors import InputError, located
from sarsleuth.textio import DECOMPRESSION_ERRORS, open_binary
from sarsleuth.parsers.sar_text import sections
from sarsleuth.parsers.base import ParseOptions
from sarsleuth.parsers.sadf._common import (MAX_NESTING, _Clock, _Collector, _emit, _event, _finish,
                                            _structured_stamp)

if TYPE_CHECKING:
    from sarsleuth.model import Source


def read_xml(parser, path, options: ParseOptions) -> Source:
    """A ``sadf -x`` document, as a Source of ``parser``'s kind."""
    import xml.etree.ElementTree as ET
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
        for event, elem in ET.iterparse(fh, events=("start", "end")):
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
                if tag == "boot":
                    n = elem.get("cpu_count")
                    msg = f"LINUX RESTART ({n} CPU)" if n else "LINUX RESTART"
                    out.events.append(_event(ts, host, "sar-restart", msg, path))
                else:
                    out.events.append(_event(ts, host, "sar-comment", elem.get("com", ""), path))
            elif tag in ("release", "machine", "number-of-cpus", "file-date", "sysdata-version"):
                key = {"release": "kernel", "machine": "arch", "number-of-cpus": "ncpu",
                       "file-date": "date", "sysdata-version": "sysdata_version"}[tag]
                meta.setdefault(key, (elem.text or "").strip())
    except ET.ParseError as exc:
        line, _col = exc.position
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
    metrics = out.frame()
    return _finish(parser, path, options, metrics, out.events, first_host, meta, warnings, clock)


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _xml_walk(elem, activity, ts, host, out: _Collector, depth: int = 0):
    if depth > MAX_NESTING:
        out.too_deep += 1
        return
    tag = _local(elem.tag)
    if tag in sections.STRUCTURED_ACTIVITIES:
        activity = tag
    fields = {k: v for k, v in elem.attrib.items()}
    children = list(elem)
    for child in children:
        ctag = _local(child.tag)
        if not child.attrib and not len(child) and (child.text or "").strip():
            fields[ctag] = child.text.strip()   # <memfree>1437740</memfree>
        else:
            _xml_walk(child, activity, ts, host, out, depth + 1)
    if activity and fields:
        _emit(activity, fields, ts, host, out)
