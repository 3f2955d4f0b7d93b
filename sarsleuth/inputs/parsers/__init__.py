"""Parser registry with content sniffing.

Every module in this package that defines subclasses of
:class:`~sarsleuth.inputs.parsers.base.Parser` with a ``kind`` is registered
automatically.  A file's kind is decided from its first bytes (after
transparent decompression), never from its name.
"""
from __future__ import annotations

import importlib
import os
import pkgutil
import tempfile
from pathlib import Path

from sarsleuth.inputs import named_paths as streams
from sarsleuth.errors import InputError
from sarsleuth.inputs import pastes
from sarsleuth.inputs.reading import HEAD_BYTES, decode, iter_text_lines, read_head, utf16_head_as_utf8
from sarsleuth.inputs.parsers.base import ParseOptions, Parser

#: Kinds fixed by the contract, in the order ``sniff`` documents them.
KINDS = ["sa", "sar-text", "sadf-csv", "sadf-json", "sadf-xml", "syslog", "journal", "journal-file", "journal-export",
         "dmesg", "nginx-error", "postgresql-log", "mysql-log", "php-fpm-log", "ab", "wrk", "wrk2", "httperf", "tsar", "ps",
         "package-log"]

#: Below this confidence a file is ``unknown``.
MIN_CONFIDENCE = 0.3
#: A sniffer's confidence is at most this.
MAX_CONFIDENCE = 1.0

_registry: dict[str, type[Parser]] | None = None


def registry() -> dict[str, type[Parser]]:
    global _registry
    if _registry is None:
        found: dict[str, type[Parser]] = {}
        for name in _parser_modules():
            module = importlib.import_module(name)
            for obj in vars(module).values():
                if isinstance(obj, type) and issubclass(obj, Parser) and obj is not Parser and obj.kind:
                    if obj.__module__ == module.__name__:
                        found[obj.kind] = obj
        _registry = found
    return _registry


def _parser_modules():
    """Names of the modules that may hold parsers, in the order of their
    paths (the order breaks ties between equal sniffs).  One module per
    format, grouped by family in subpackages; a family that names the
    modules holding its parsers (``PARSER_MODULES``) is not walked, so that
    sniffing imports none of the code that reads (scanners, grammars,
    numpy, pandas)."""
    for info in pkgutil.iter_modules(__path__, prefix=f"{__name__}."):
        leaf = info.name.rsplit(".", 1)[-1]
        if leaf.startswith("_") or leaf == "base":
            continue
        if not info.ispkg:
            yield info.name
            continue
        family = importlib.import_module(info.name)
        named = getattr(family, "PARSER_MODULES", None)
        if named is not None:
            yield from (f"{info.name}.{module}" for module in sorted(named))
            continue
        for sub in pkgutil.walk_packages(family.__path__, prefix=f"{info.name}."):
            leaf = sub.name.rsplit(".", 1)[-1]
            if not sub.ispkg and not leaf.startswith("_") and leaf != "base":
                yield sub.name


def kinds() -> list[str]:
    """Every registered kind: the contract's in its order, then the others."""
    reg = registry()
    ordered = [k for k in KINDS if k in reg]
    return ordered + sorted(k for k in reg if k not in ordered)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def kinds_table() -> str:
    """The markdown table of every kind and what it reads (its parser's
    ``description``): the README's, written by ``tools/input_kinds.py``."""
    reg = registry()
    rows = ["| kind | what |", "|---|---|"]
    rows += [f"| `{kind}` | {_cell(reg[kind].description)} |" for kind in kinds()]
    return "\n".join(rows) + "\n"


#: Answers for heads already sniffed, by a digest of the head: parsing a
#: file sniffs its head again, and a bundle of thousands of small logs
#: would pay each sniff twice in full.
_sniffed: dict = {}
_SNIFFED_MAX = 8192


def sniff_bytes(head: bytes) -> tuple[str | None, float]:
    """Best (kind, confidence) for a file head, or (None, 0)."""
    if not head:
        return None, 0.0
    key = _digest(head)
    known = _sniffed.get(key)
    if known is not None:
        return known
    answer = _sniff_bytes(head)
    if len(_sniffed) >= _SNIFFED_MAX:
        _sniffed.clear()
    _sniffed[key] = answer
    return answer


def _digest(head: bytes) -> bytes:
    try:
        # hashlib's own BLAKE2, without the OpenSSL library hashlib loads first
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover - an interpreter without the module
        from hashlib import blake2b
    return blake2b(head, digest_size=16).digest()


def _sniff_bytes(head: bytes) -> tuple[str | None, float]:
    text = decode(head)
    # a text reader only sees what comes before a NUL byte: binary content
    # (an sa file of any format) never sniffs as a log, while a log with NUL
    # padding after genuine lines still does
    nul = head.find(b"\0", 0, 4096)
    text_head = head if nul < 0 else head[:nul]
    text_text = text if nul < 0 else decode(text_head)
    best: tuple[str | None, float, int] = (None, 0.0, -10**9)
    for kind, parser in registry().items():
        binary = getattr(parser, "binary", False)
        try:
            score = float(parser.sniff(head, text) if binary else
                          parser.sniff(text_head, text_text) if text_head else 0.0)
        except Exception:  # a sniffer must never take the others down
            score = 0.0
        score = min(score, MAX_CONFIDENCE)
        if score > best[1] or (score == best[1] and score > 0 and parser.priority > best[2]):
            best = (kind, score, parser.priority)
    if best[1] < MIN_CONFIDENCE:
        return None, best[1]
    return best[0], best[1]


def sniff(path) -> tuple[str | None, str]:
    """(kind or None, reason) for one path."""
    p = Path(path)
    if not p.exists():
        return None, "no such file"
    if p.is_dir():
        return None, "is a directory"
    try:
        head = read_head(p, HEAD_BYTES)
    except InputError as exc:
        return None, exc.reason
    if not head:
        return None, "empty file"
    utf8_head = utf16_head_as_utf8(head)
    if utf8_head is not None:
        return _sniff_utf16(utf8_head)
    if b"\0" not in head[:4096]:
        from sarsleuth.inputs.documents import recognise
        document = recognise(decode(head))
        if document:
            return None, document
    kind, score = sniff_bytes(head)
    peeling, peeled = _paste_of(head, score)
    if peeling is not None:
        from sarsleuth.inputs import pastes
        return peeled[0], f"confidence {peeled[1]:.2f}, {pastes.describe(peeling)}"
    if kind is None:
        from sarsleuth.inputs.unread_outputs import unread_output
        return None, unread_output(decode(head)) or "content matches no known format"
    return kind, f"confidence {score:.2f}"


def _sniff_utf16(head: bytes) -> tuple[str | None, str]:
    """A UTF-16 file, sniffed from its head in UTF-8: taken when its kind's
    parser reads UTF-16 (the logs), else refused saying how to convert it."""
    kind, score = sniff_bytes(head)
    if kind is None:
        return None, "UTF-16 text whose content matches no known format"
    if not registry()[kind].reads_utf16:
        return None, (f"UTF-16 text that reads as {kind}, which is read in UTF-8 only "
                      "(convert it: iconv -f UTF-16 -t UTF-8)")
    return kind, f"confidence {score:.2f}, UTF-16 text"


#: How much better a peeled paste must sniff than the file as it is.
PEELED_MARGIN = 0.2


def _paste_of(head: bytes, raw_score: float):
    """(how a pasted log is wrapped, (kind, score) once peeled) when peeling
    makes it read clearly better (or it carries wall broadcasts), else
    (None, None)."""
    if b"\0" in head[:4096]:
        return None, None
    peeling = pastes.detect(decode(head))
    if peeling is None:
        return None, None
    if not peeling.rewrites and raw_score + PEELED_MARGIN > MAX_CONFIDENCE:
        # no peeled reading could beat the file as it is by the margin (sar
        # text and grep -n output both start lines with "12:"): not sniffed again
        return None, None
    peeled = "".join(pastes.peel_lines(decode(head).splitlines(keepends=True), peeling))
    kind, score = sniff_bytes(peeled.encode("utf-8"))
    if kind is None or (score < raw_score + PEELED_MARGIN and not peeling.rewrites):
        return None, None
    return peeling, (kind, score)


def parse(path, kind: str | None = None, options: ParseOptions | None = None):
    """Parse one file into a Source; raises InputError when unusable."""
    options = options or ParseOptions()
    if kind is None:
        kind, reason = sniff(path)
        if kind is None:
            raise InputError(path, reason)
    reg = registry()
    if kind not in reg:
        raise InputError(path, f"unknown kind {kind!r} (known: {', '.join(kinds())})")
    head = read_head(Path(path), HEAD_BYTES)
    peeling, _ = _paste_of(head, sniff_bytes(head)[1])
    if peeling is not None:
        return _parse_peeled(path, kind, options, peeling)
    return reg[kind].parse(path, options)


def _parse_peeled(path, kind, options, peeling):
    """Parse a pasted log from a cleaned copy (private, removed after), one
    line per line of the file, and name the file as the user gave it."""
    peeling.done.clear()     # counted again over the whole file
    fd, copy = tempfile.mkstemp(prefix="sarsleuth-paste-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
            lines = (text + "\n" for _, text in iter_text_lines(path))
            for line in pastes.peel_lines(lines, peeling):
                out.write(line)
        src = registry()[kind].parse(copy, options)
        streams.relabel(src, copy, str(path))
        if src.events is not None and "offset" in src.events:
            import pandas as pd
            src.events["offset"] = pd.array([pd.NA] * len(src.events), dtype="Int64")     # offsets in the copy, not in the file
        src.warnings.insert(0, f"{path}: {pastes.describe(peeling)}")
        return src
    finally:
        os.unlink(copy)
