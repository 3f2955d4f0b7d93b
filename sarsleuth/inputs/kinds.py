"""What each input is, as ``sarsleuth sniff`` lists it: a line
``PATH<TAB>KIND`` per file read (``unknown`` when no parser takes it),
archive and sosreport members as ``ARCHIVE!MEMBER``, a pipe by the name
the user gave it.  Only the heads are read; nothing is parsed."""
from __future__ import annotations

import contextlib
from typing import Callable

from sarsleuth.inputs import named_paths
from sarsleuth.inputs.gathering import gather
from sarsleuth.inputs.parsers import sniff
from sarsleuth.safe_text import one_line


def kinds_of(paths, say: Callable[[str], None]) -> tuple[str, bool]:
    """The listing, and whether nothing could be read of what was named
    (every path missing or unreadable).  What is skipped and why goes to
    ``say``, a line each."""
    lines = []
    with contextlib.ExitStack() as copies:
        gathered = gather([str(p) for p in paths], copies)
        for name, why in gathered.refused:
            say(f"{name}: {why}")
        for w in gathered.warnings:
            say(w)
        for f in gathered.files:
            name = gathered.name(f)
            too_big = named_paths.refusal(f)       # a file found in a folder is capped as a named one is
            if too_big:
                say(f"{name}: {too_big}")
            kind = None if too_big else sniff(f)[0]
            lines.append(f"{one_line(name)}\t{kind or 'unknown'}\n")
    return "".join(lines), bool(gathered.named_refused) and not gathered.files
