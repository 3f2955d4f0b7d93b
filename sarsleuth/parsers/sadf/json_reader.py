"""``sadf -j``: one JSON document, read whole (bounded), a damaged one
closed at its last complete record."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING

from sarsleuth.errors import InputError, located
from sarsleuth.textio import decode, read_all_bytes
from sarsleuth.parsers.base import ParseOptions
from sarsleuth.parsers.sadf._common import (_Clock, _Collector, _event, _finish, _json_walk, _list,
                                            _structured_stamp)

if TYPE_CHECKING:
    from sarsleuth.model import Source

#: Upper bound on a JSON document read whole (json has no streaming reader
#: in the standard library, and the parsed document takes several times its
#: size); a day of ``sadf -j -- -A`` at 10-minute samples is a few MB.
#: ``sadf -d`` output, which is streamed, has no such bound.
JSON_LIMIT = 256 << 20


def read_json(parser, path, options: ParseOptions) -> Source:
    """A ``sadf -j`` document, as a Source of ``parser``'s kind."""
    options = options or ParseOptions()
    raw = read_all_bytes(path, JSON_LIMIT)
    try:
        doc = json.loads(decode(raw))
    except json.JSONDecodeError as exc:
        doc = _json_prefix(path, raw, exc)
    except RecursionError:
        raise InputError(path, "JSON nested too deeply to be sadf -j output") from None
    hosts = (doc.get("sysstat") or {}).get("hosts") if isinstance(doc, dict) else None
    if not isinstance(hosts, list):
        raise InputError(path, "JSON without sysstat.hosts: not sadf -j output")
    clock = _Clock(path, options)
    out = _Collector()
    warnings: list[str] = []
    meta: dict = {"format": "sadf -j", "hosts": []}
    if isinstance(doc.get("sysstat"), dict) and doc["sysstat"].get("sysdata-version"):
        meta["sysdata_version"] = doc["sysstat"]["sysdata-version"]
    for host in hosts:
        _json_host(path, host, clock, out, meta)
    if out.too_deep:
        warnings.append(located(path, f"{out.too_deep} value(s) nested deeper than sadf ever writes "
                                      "were skipped"))
    metrics = out.frame()
    first = hosts[0].get("nodename") if hosts and isinstance(hosts[0], dict) else None
    return _finish(parser, path, options, metrics, out.events, first, meta, warnings + _partial(doc), clock)


class _Partial(dict):
    """A JSON document recovered from a damaged file, with the warning."""

    warning: str = ""


def _partial(doc) -> list[str]:
    return [doc.warning] if isinstance(doc, _Partial) and doc.warning else []


#: Places a damaged ``sadf -j`` document is tried closed at (each try parses
#: the whole prefix again: the number of tries must stay small).
MAX_PREFIX_TRIES = 20


def _json_prefix(path, raw: bytes, exc: json.JSONDecodeError):
    """A cut ``sadf -j`` file: keep the statistics before the damage."""
    text = decode(raw)[: exc.pos]
    cut = text.rfind("\n\t\t\t\t}")
    tries = 0
    while cut > 0 and tries < MAX_PREFIX_TRIES:
        tries += 1
        candidate = text[: cut + 6] + "]}]}}"
        try:
            doc = _Partial(json.loads(candidate))
            doc.warning = located(path, f"JSON damaged at character {exc.pos} ({exc.msg}); "
                                        "statistics before it were kept", line=exc.lineno)
            return doc
        except (json.JSONDecodeError, RecursionError):
            cut = text.rfind("\n\t\t\t\t}", 0, cut)
    raise InputError(path, f"not valid JSON: {exc.msg}", line=exc.lineno)


def _json_host(path, host: dict, clock: _Clock, out: _Collector, meta: dict):
    if not isinstance(host, dict):
        return
    name = host.get("nodename")
    if name is not None and not isinstance(name, str):
        name = str(name)
    meta["hosts"].append(name)
    meta.setdefault("kernel", host.get("release"))
    meta.setdefault("arch", host.get("machine"))
    meta.setdefault("ncpu", host.get("number-of-cpus"))
    meta.setdefault("date", host.get("file-date"))
    for sample in _list(host.get("statistics")):
        if not isinstance(sample, dict) or not isinstance(sample.get("timestamp"), dict):
            continue
        ts = _structured_stamp(clock, sample["timestamp"])
        for key, value in sample.items():
            if key != "timestamp":
                _json_walk(key, value, None, ts, name, out)
    for item in _list(host.get("restarts")):
        boot = item.get("boot") if isinstance(item, dict) else None
        if isinstance(boot, dict):
            ts = _structured_stamp(clock, boot)
            n = boot.get("cpu_count")
            msg = f"LINUX RESTART ({n} CPU)" if n is not None else "LINUX RESTART"
            out.events.append(_event(ts, name, "sar-restart", msg, path))
    for item in _list(host.get("comments")):
        com = item.get("comment") if isinstance(item, dict) else None
        if isinstance(com, dict):
            out.events.append(_event(_structured_stamp(clock, com), name, "sar-comment",
                                     str(com.get("com", "")), path))


