"""The command line a report was made with, found in a paste and read
into its options."""
from __future__ import annotations

import re
import shlex

_PROMPT_GLYPHS = "$#>%❯➜»"
#: Longer lines are not command lines (and would make the prompt search slow).
_MAX_COMMAND_CHARS = 4096


def find_command(text: str, programs: tuple[str, ...]) -> str | None:
    """The command line (from the program name on) when ``text`` runs one of
    ``programs`` with options, behind any shell prompt; else None."""
    if len(text) > _MAX_COMMAND_CHARS:
        return None
    names = "|".join(re.escape(p) for p in programs)
    pattern = re.compile(rf"(?:^|(?<=[\s{re.escape(_PROMPT_GLYPHS)}\]]))(?:\S*/)?({names})(?:\.exe)?\s+(-{{1,2}}[A-Za-z_].*)$")
    m = pattern.search(text.strip())
    if not m:
        return None
    return f"{m.group(1)} {m.group(2).strip()}"


def command_options(command: str) -> dict:
    """Options of a command line: ``{'-c': '100', '-k': True, 'url': ...}``.

    Short options glued to their value (``-c100``) and long ``--opt=value``
    forms are both understood; a bare word that looks like a URL or a
    host:port is the target."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    options: dict = {}
    i = 1 if words and not words[0].startswith("-") else 0
    while i < len(words):
        word = words[i]
        nxt = words[i + 1] if i + 1 < len(words) else None
        if word.startswith("-") and len(word) > 1:
            # --key=value / --key value / -kvalue / -k value / a bare flag
            if word.startswith("--"):
                key, sep, value = word.partition("=")
                inline = bool(sep)
            else:
                key, value = word[:2], word[2:]
                inline = bool(value)
            if inline:
                options[key] = value
            elif nxt is not None and not nxt.startswith("-") and not _looks_like_target(nxt):
                options[key] = nxt
                i += 1
            else:
                options[key] = True
        elif _looks_like_target(word):
            options["url"] = word
        i += 1
    return options


def _looks_like_target(word: str) -> bool:
    return bool(re.match(r"^(https?://|[\w.-]+:\d+(/|$))", word))


# --------------------------------------------------------------------------
