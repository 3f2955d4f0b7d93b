"""Files that are documents, not data: reports (sarsleuth's own among them),
READMEs and notes in a bundle.

Kernel words in a README ("page allocation failure", "segfault at") must not
become incidents, and a bundle analysed again after ``--html report.html``
was written into it must give the same story.  :func:`recognise` looks at a
file's head before any parser is asked and names what the file is; the case
lists it as skipped with that reason.

A log pasted into a ticket stays a log: lines quoted with ``> `` or inside
a code fence count as log lines, not prose, so only files mostly made of
prose, headings and tables are documents.
"""
from __future__ import annotations

import re

#: Marks only sarsleuth's own outputs carry (text, markdown, HTML, JSON).
_OWN_MARKS = (
    re.compile(r'\A\s*\{\s*"sarsleuth_version"\s*:'),
    re.compile(r"<title>sarsleuth report\b"),
    re.compile(r"\A\s*# sarsleuth incident summary\b"),
    re.compile(r"\A\s*sarsleuth: incidents, most important first\b"),
)
_HTML = re.compile(r"\A\s*(?:<\?xml[^>]*>\s*)?(?:<!--.*?-->\s*)*<(?:!DOCTYPE\s+html|html)\b", re.I | re.S)
_HEADING = re.compile(r"^ {0,3}(?:#{1,6} \S|=+\s*$|-{3,}\s*$)")
_TABLE = re.compile(r"^\s*\|.*\|\s*$")
_FENCE = re.compile(r"^\s*(?:```|~~~)")
_QUOTE = re.compile(r"^\s*>")
_LIST = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+\S")
#: A line that starts the way log lines start: a time, a date, a [stamp],
#: a level in brackets, or a syslog month.
_LOGISH = re.compile(
    r"^\s*(?:\[\s*\d+\.\d+\]|\d{4}[-/]\d\d[-/]\d\d|\d\d:\d\d:\d\d|\[[A-Z][a-z]{2} |"
    r"(?:(?:19|20)\d\d )?(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d |<\d+>|Linux \d)")
#: Words of prose (a sentence, not a field dump).
_WORD = re.compile(r"\b[A-Za-z][a-z]{2,}\b")


def recognise(text: str) -> str | None:
    """Why a file is a document rather than an input, or None."""
    head = text[:65536]
    for mark in _OWN_MARKS:
        if mark.search(head):
            return "sarsleuth's own report (an output of an earlier run), not an input"
    if _HTML.match(head):
        return "an HTML document, not a log"
    return _markdown_or_prose(head)


def _markdown_or_prose(head: str) -> str | None:
    lines = [ln for ln in head.splitlines() if ln.strip()]
    if len(lines) < 4:
        return None
    structure = prose = logish = 0
    fenced = False
    for line in lines:
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced or _QUOTE.match(line):
            logish += 1           # pasted material: judged by the log readers, not here
            continue
        if _LOGISH.match(line):
            logish += 1
        elif _HEADING.match(line) or _TABLE.match(line) or _LIST.match(line):
            structure += 1
        elif len(_WORD.findall(line)) >= 5:
            prose += 1
    # a document: headings/tables/lists and sentences, far more than log lines
    if structure >= 2 and structure + prose >= 0.6 * len(lines) and logish <= 0.2 * len(lines):
        return "a document (markdown or notes), not a log"
    return None
