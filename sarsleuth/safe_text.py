"""Text from inputs made safe for where it goes.

Text is also cut to a length without splitting a word
(:func:`cut_words`): evidence, titles and commands are cut to fit a line,
and a cut inside a word would leave part of a name behind (three octets of
an address, an IPv6 /48, ``web0`` of ``web07``) that no redaction can
recognise afterwards.

File names and log lines are attacker-controlled: they may carry terminal
escape sequences (set the window title, clear the screen, fake a prompt) and,
as file names, bytes that are not UTF-8 (Python hands those over as lone
surrogates, which cannot be encoded and crash a UTF-8 writer).

- :func:`shown` is for the terminal: control characters and undecodable
  bytes are written as ``\\xNN`` (what ``ls -b`` does), so they are seen, not
  obeyed; newlines and tabs may be kept for multi-line text.
- :func:`one_line` is :func:`shown` for one line of stderr.
- :func:`visible` is for documents (JSON, HTML): each undecodable byte
  becomes U+FFFD, the Unicode replacement character, and control and
  bidirectional characters are written as the terminal shows them
  (``\\x1b``, ``\\u202e``), so a report printed with ``cat`` or opened in a
  browser neither obeys nor hides them.  The same rule as the terminal's,
  in one place: text and markdown show what JSON and HTML show.
- :func:`utf8` is for data exports written to a file (CSV, JSON lines):
  undecodable bytes become U+FFFD, everything else is kept as read (on a
  terminal they take :func:`shown`).
"""
from __future__ import annotations

import re

#: C0 controls but newline and tab, DEL, C1 controls (U+0080-U+009F: 8-bit
#: CSI and OSC on some terminals), bidirectional overrides (which make a
#: terminal show text in another order than it is) and lone surrogates.
_UNSAFE = "\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_UNSAFE_MULTILINE = re.compile(f"[\x00-\x08\x0b-\x1f{_UNSAFE}]")
_UNSAFE_LINE = re.compile(f"[\x00-\x1f{_UNSAFE}]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escape(match) -> str:
    ch = match.group()
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:
        # a byte that was not UTF-8 (os.fsdecode's surrogateescape): show the byte
        return f"\\x{code - 0xDC00:02x}"
    if code > 0xFF:
        return f"\\u{code:04x}"
    return f"\\x{code:02x}"


def shown(text, *, multiline: bool = True) -> str:
    """``text`` as a terminal may display it."""
    pattern = _UNSAFE_MULTILINE if multiline else _UNSAFE_LINE
    return pattern.sub(_escape, str(text))


def one_line(text) -> str:
    """One line for stderr: newlines and every control character escaped."""
    return shown(text, multiline=False)


def utf8(text) -> str:
    """``text`` encodable as UTF-8: undecodable bytes become U+FFFD."""
    text = str(text)
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def visible(text) -> str:
    """``text`` for a document: UTF-8 safe, control and bidirectional
    characters written as visible escapes (newlines and tabs kept)."""
    return shown(utf8(text))


def visible_tree(value):
    """A JSON-ready structure with every string (keys too) made
    :func:`visible` and non-finite floats (NaN, inf) turned into null, which
    JSON cannot hold."""
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, dict):
        return {visible_tree(k) if isinstance(k, str) else k: visible_tree(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [visible_tree(v) for v in value]
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None
    return value


#: the characters of host names, addresses, e-mail addresses and user names
_NAME_CHARS = re.compile(r"[\w.:%@+-]+\Z")
#: What a title quotes as an input wrote it: `a command`, 'a message',
#: "a message" (never a word's apostrophe): its digits are the input's.
QUOTED = re.compile(r"""(`[^`]*`|(?<!\w)'[^'\n]*'(?!\w)|(?<!\w)"[^"\n]*"(?!\w))""")


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
