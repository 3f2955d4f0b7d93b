"""Outputs of other programs sarsleuth does not read (``vmstat``,
``iostat``, ``top``, a System V ``sar``...), recognised so that their
refusal says what they are and where the same figures come from, as
``knowledge/unread_outputs.toml`` lists them."""
from __future__ import annotations

import re
from functools import lru_cache

from sarsleuth.knowledge import read_toml

#: How many lines of a head are looked at.
HEAD_LINES = 60


@lru_cache(maxsize=1)
def _outputs() -> tuple:
    return tuple((entry["name"], tuple(re.compile(p) for p in entry["patterns"]), entry["instead"])
                 for entry in read_toml("unread_outputs.toml")["output"])


def unread_output(text: str) -> str | None:
    """What a file's head is when it is another program's output sarsleuth
    does not read: ``"vmstat output (line 2), which sarsleuth does not read:
    ..."``, else None."""
    lines = text.splitlines()[:HEAD_LINES]
    for name, patterns, instead in _outputs():
        for number, line in enumerate(lines, 1):
            if any(p.search(line) for p in patterns):
                return f"{name} output (line {number}), which sarsleuth does not read: {instead}"
    return None
