"""Text cut to a length without splitting a word.

Evidence, titles and commands are cut to fit a line; a cut inside a word
would leave part of a name behind (three octets of an address, an IPv6
/48, ``web0`` of ``web07``) that no redaction can recognise afterwards.
So a cut that falls inside a run of the characters names are made of
(letters, digits, ``. : % @ + - _``) drops the whole run.
"""
from __future__ import annotations

import re

#: the characters of host names, addresses, e-mail addresses and user names
_NAME_CHARS = re.compile(r"[\w.:%@+-]+\Z")


def cut_words(text: str, limit: int, mark: str = "…") -> str:
    """``text`` as it is when it fits in ``limit`` characters, else as much
    of it as fits with ``mark`` after, never ending inside a word."""
    if len(text) <= limit:
        return text
    keep = max(limit - len(mark), 0)
    head = text[:keep]
    if keep < len(text) and _NAME_CHARS.match(text[keep]) and head:
        tail = _NAME_CHARS.search(head)
        if tail is not None:
            head = head[:tail.start()]
    return head + mark
