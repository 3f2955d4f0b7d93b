"""What each input is, as ``sarsleuth sniff`` lists it: a line
``PATH<TAB>KIND`` per file read (``unknown`` when no parser takes it),
archive and sosreport members as ``ARCHIVE!MEMBER``, a pipe by the name
the user gave it.  Only the heads are read; nothing is parsed."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from sarsleuth import streams
from sarsleuth.bundles.expand import _is_archive, expand
from sarsleuth.parsers import sniff
from sarsleuth.render._safe import one_line


def stream_head_problem(path) -> str | None:
    """Why the copied head of a stream is no input (no parser takes it and
    it is no archive), or None: judged before the rest is copied."""
    if _is_archive(Path(path)):
        return None
    kind, reason = sniff(path)
    return None if kind else f"no input kind reads it ({reason})"


def kinds_of(paths, say: Callable[[str], None]) -> tuple[str, bool]:
    """The listing, and whether nothing could be read of what was named
    (every path missing or unreadable).  What is skipped and why goes to
    ``say``, a line each."""
    paths = [str(p) for p in paths]
    why_missing = {p: why for p in paths if (why := streams.missing(p))}
    for p, why in why_missing.items():
        say(f"{p}: {why}")
    missing = list(why_missing)
    spooled = streams.Spooled()
    bundles = None
    files: list = []
    lines = []
    try:
        given = streams.spool([p for p in paths if p not in missing], spooled, judge=stream_head_problem)
        for name, reason in spooled.unreadable:
            say(f"{name}: {reason}")
        bundles = expand(given, spooled.names)
        files = bundles.entries
        for w in [*spooled.warnings, *bundles.warnings]:
            say(w)
        for label, why in bundles.refused:
            say(f"{label}: {why}")
        for f in files:
            name = spooled.names.get(str(f.path), f.name)
            too_big = streams.refusal(f.path)       # a file found in a folder is capped as a named one is
            if too_big:
                say(f"{name}: {too_big}")
            kind = None if too_big else sniff(f.path)[0]
            lines.append(f"{one_line(name)}\t{kind or 'unknown'}\n")
    finally:
        spooled.cleanup()
        if bundles is not None:
            bundles.cleanup()
    missing += [name for name, _ in spooled.unreadable]
    return "".join(lines), bool(missing) and not files
