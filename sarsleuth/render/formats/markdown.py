"""A ticket-ready markdown summary that also reads as plain text.

Text from an input is escaped only where a markdown renderer would take it
as markup (emphasis, code, links, HTML tags and entities, a pipe in a
table, a list or heading marker opening a block): parentheses, arrows and
underscores inside words stay as they are, and no HTML entity is written.
Evidence lines are fenced code blocks, as the files have them.
"""
from __future__ import annotations

import io
import re

from sarsleuth.render.document import Emph, Grid, Heading, Items, Para, Strong, Verbatim, case_blocks, table_blocks
from sarsleuth.render.fleet_text import fleet_text
from sarsleuth.safe_text import shown, utf8
from sarsleuth.render.view import View

_ASCII_PUNCT = set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
#: A block marker at the start of a text: heading, quote, list item, numbered item.
_BLOCK_START = re.compile(r"(#+(?=\s|$)|>|[-+*](?=\s)|\d{1,9}(?=[.)]\s))")
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{0,31});")


def md_escape(text, cell: bool = False, start: bool = False) -> str:
    """Text from an input, inert in markdown and still plain to read:
    control characters shown escaped, and a backslash only before what
    would be markup (``cell``: inside a table, where ``|`` splits cells;
    ``start``: the text opens a paragraph or list item, where ``# `` or
    ``1. `` would start a heading or a list)."""
    text = shown(str(text).replace("\r", " ").replace("\n", " "))
    out = []
    n = len(text)
    for i, ch in enumerate(text):
        prev = text[i - 1] if i else " "
        nxt = text[i + 1] if i + 1 < n else " "
        if ch == "\\" and nxt in _ASCII_PUNCT:
            out.append("\\\\")                  # else the renderer eats it
        elif ch == "`":
            out.append("\\`")
        elif ch in "*~":
            # emphasis and strikethrough need a non-blank beside the mark
            out.append(ch if prev.isspace() and nxt.isspace() else "\\" + ch)
        elif ch == "_":
            # inside a word (proxy_buffers) an underscore never emphasises
            out.append(ch if (prev.isalnum() and nxt.isalnum()) or (prev.isspace() and nxt.isspace()) else "\\_")
        elif ch == "]" and nxt in "([":
            out.append("\\]")                  # [text](link), [text][ref]
        elif ch == "<" and (nxt.isalpha() or nxt in "/!?"):
            out.append("\\<")                  # a tag, a comment, an autolink
        elif ch == "&" and _ENTITY.match(text, i):
            out.append("\\&")
        elif ch == "|" and cell:
            out.append("\\|")
        else:
            out.append(ch)
    escaped = "".join(out)
    m = _BLOCK_START.match(escaped) if start else None
    if m:
        at = m.end() if m.group().isdigit() else m.start()     # 1\. , \# , \> , \-
        escaped = escaped[:at] + "\\" + escaped[at:]
    elif start and escaped.startswith("["):
        escaped = "\\" + escaped               # [label]: a link definition
    if re.search(r"\s#+$", escaped):
        escaped = re.sub(r"(#+)$", lambda t: "\\" + t.group(1), escaped)     # a heading's closing marks
    return escaped


def md_code(text, cell: bool = False) -> str:
    """``text`` as inline code: shown literally, fenced by more backticks
    than it holds."""
    text = shown(str(text).replace("\r", " ").replace("\n", " "))
    if cell:
        text = text.replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _inline(spans, cell: bool = False, block: bool = False) -> str:
    """``block``: the spans open a paragraph or list item."""
    out = []
    for i, s in enumerate(spans):
        if isinstance(s, (Strong, Emph)):
            mark = "**" if isinstance(s, Strong) else "*"
            inner = _inline(s.spans, cell).strip()
            out.append(f"{mark}{inner}{mark}" if inner else "")
        elif s.style == "code" and s.text.strip():
            out.append(md_code(s.text, cell))
        else:
            out.append(md_escape(s.text, cell, block and i == 0) if s.text.strip() else s.text)
    return "".join(out)


def _fence(lines) -> str:
    """A fence longer than any backtick run at a line's start."""
    runs = [len(re.match(r"\s*(`*)", ln).group(1)) for ln in lines]
    return "`" * max(3, max(runs, default=0) + 1)


def write_blocks(blocks, out) -> None:
    parts = []
    for b in blocks:
        if isinstance(b, Heading):
            parts.append("#" * b.level + " " + _inline(b.spans))
        elif isinstance(b, Para):
            parts.append(_inline(b.spans, block=True))
        elif isinstance(b, Items):
            parts.append("\n".join(f"{f'{i}.' if b.ordered else '-'} {_inline(item, block=True)}"
                                   for i, item in enumerate(b.items, 1)))
        elif isinstance(b, Grid):
            rows = ["| " + " | ".join(md_escape(h, cell=True) for h in b.header) + " |",
                    "|" + "|".join("---:" if (b.numeric[i] if i < len(b.numeric) else False) else "---"
                                   for i in range(len(b.header))) + "|"]
            rows += ["| " + " | ".join(_inline(c, cell=True) for c in row) + " |" for row in b.rows]
            parts.append("\n".join(rows))
        elif isinstance(b, Verbatim):
            lines = [shown(ln) for ln in b.lines]
            fence = _fence(lines)
            parts.append("\n".join([fence + "text", *lines, fence]))
    out.write(utf8("\n\n".join(parts)) + "\n")


def render_markdown(case, max_incidents: int | None = None, view: View | None = None) -> str:
    buf = io.StringIO()
    write_blocks(case_blocks(case, view or View(top=max_incidents)), buf)
    return buf.getvalue()


def write_case(case, out, view: View | None = None) -> None:
    write_blocks(case_blocks(case, view), out)


def write_table(table, out) -> None:
    """A pipe table (GitHub-flavoured markdown)."""
    write_blocks(table_blocks(table), out)


def write_fleet(fleet, out) -> None:
    out.write(fleet_text(fleet, md_escape))
