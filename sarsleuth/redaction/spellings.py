"""How a name is written in the files: the spellings a learned name is
found in, and one pattern that finds any of thousands of them in a pass."""
from __future__ import annotations

import re


def spellings(original: str, kind: str, stand_in: str):
    """(spelling, the stand-in as that spelling writes it) of a name."""
    low = original.lower()
    yield low, stand_in
    if kind in ("host", "domain"):
        parts = re.split(r"[-_.]", low)
        if len(parts) > 1:
            for sep in "-_.":
                yield sep.join(parts), stand_in
        if "-" in low:
            # device-mapper doubles the dashes of volume group and volume names
            yield low.replace("-", "--"), stand_in.replace("-", "--")
    if kind == "email":
        yield low.replace("@", "%40"), stand_in.replace("@", "%40")


def trie(words) -> str:
    """One pattern matching any of ``words`` (lower case), longest first,
    its alternatives factored by common prefix so that thousands of names
    cost one pass over a text."""
    root: dict = {}
    for w in words:
        node = root
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    def pattern(node) -> str:
        ends = "" in node
        branches = [re.escape(ch) + pattern(child) for ch, child in sorted(node.items()) if ch]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if ends else body
    return f"(?:{pattern(root)})"
