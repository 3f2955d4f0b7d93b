"""The ticket summary in Jira wiki markup (``--format jira``): headings
``h1.``, tables ``||head||`` / ``|cell|``, evidence in ``{noformat}``
blocks, code as ``{{monospace}}``.

Text from an input is escaped only where Jira would take it as markup: the
characters of macros, links, images and tables (``{ } [ ] ! |``) always;
the marks of bold, italics, strikethrough, underline, superscript and
subscript (``* _ - + ^ ~``) where they touch a word's edge (inside a word,
``tcp_max_tw_buckets`` or ``2014-05-06``, Jira leaves them alone); a
citation's ``??``; a list or heading marker opening a line; and emoticons
such as ``(x)`` or ``(i)``, which Jira would draw as icons.
"""
from __future__ import annotations

import re

from sarsleuth.render.document import Emph, Grid, Heading, Items, Para, Strong, Verbatim, case_blocks, table_blocks
from sarsleuth.safe_text import shown, utf8
from sarsleuth.render.view import View

_ALWAYS = set("{}[]!|")
_AT_EDGES = set("*_-+^~")
#: Jira's emoticons: "(x)" is drawn as a red cross, "(i)" as an info icon...
_EMOTICON = re.compile(r"\((?:[xXiIyYnN!?/*+-]|on|off|\*[rgby])\)|[:;]-?[)(PD]")
_LINE_START = re.compile(r"(?:[*#-]+\s|h[1-6]\.|bq\.)")


def jira_escape(text, start: bool = False) -> str:
    """Text from an input, inert in Jira wiki markup (``start``: it opens a
    line, where ``* ``, ``# ``, ``h1.`` would start a list or a heading)."""
    text = shown(str(text).replace("\r", " ").replace("\n", " "))
    text = _EMOTICON.sub(lambda m: "&#" + str(ord(m.group()[0])) + ";" + m.group()[1:], text)
    out = []
    n = len(text)
    for i, ch in enumerate(text):
        prev = text[i - 1] if i else " "
        nxt = text[i + 1] if i + 1 < n else " "
        if ch in _ALWAYS:
            out.append("\\" + ch)
        elif ch in _AT_EDGES:
            inside = (prev.isalnum() and nxt.isalnum()) or (prev.isspace() and nxt.isspace())
            out.append(ch if inside else "\\" + ch)
        elif ch == "?" and "?" in (prev, nxt):
            out.append("\\?")
        elif ch == "\\" and (nxt in _ALWAYS or nxt in _AT_EDGES or nxt == "\\"):
            out.append("&#92;")              # two backslashes are a line break
        else:
            out.append(ch)
    escaped = "".join(out)
    if start and _LINE_START.match(escaped):
        escaped = "\\" + escaped
    return escaped


def _inline(spans, start: bool = False) -> str:
    out = []
    for i, s in enumerate(spans):
        if isinstance(s, (Strong, Emph)):
            mark = "*" if isinstance(s, Strong) else "_"
            inner = _inline(s.spans).strip()
            out.append(f"{mark}{inner}{mark}" if inner else "")
        elif s.style == "code" and s.text.strip():
            out.append("{{" + jira_escape(s.text) + "}}")
        else:
            out.append(jira_escape(s.text, start and i == 0) if s.text.strip() else s.text)
    return "".join(out)


def _cell(spans) -> str:
    # an empty cell must hold something, or Jira joins it with the next
    return _inline(spans).strip() or " "


def _verbatim(lines) -> str:
    """Lines as they are: ``{noformat}`` (``{code}`` when a line holds the
    word that would end a noformat block)."""
    macro = "{code}" if any("{noformat}" in ln for ln in lines) else "{noformat}"
    if macro == "{code}":
        lines = [ln.replace("{code}", "{code }") for ln in lines]
    return "\n".join([macro, *lines, macro])


def write_blocks(blocks, out) -> None:
    parts = []
    for b in blocks:
        if isinstance(b, Heading):
            parts.append(f"h{b.level}. " + _inline(b.spans))
        elif isinstance(b, Para):
            parts.append(_inline(b.spans, start=True))
        elif isinstance(b, Items):
            parts.append("\n".join(("# " if b.ordered else "* ") + _inline(item) for item in b.items))
        elif isinstance(b, Grid):
            rows = ["||" + "||".join(jira_escape(h) or " " for h in b.header) + "||"]
            rows += ["|" + "|".join(_cell(c) for c in row) + "|" for row in b.rows]
            parts.append("\n".join(rows))
        elif isinstance(b, Verbatim):
            parts.append(_verbatim([shown(ln) for ln in b.lines]))
    out.write(utf8("\n\n".join(parts)) + "\n")


def write_case(case, out, view: View | None = None) -> None:
    write_blocks(case_blocks(case, view), out)


def write_table(table, out) -> None:
    write_blocks(table_blocks(table), out)
