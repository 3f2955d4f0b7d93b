"""The scripts the HTML report carries and how it lets them run: uPlot
(its released file, unmodified, under ``render/uplot/`` with its MIT
license) and the explorer's own script (``templates/explorer.js``), both
inline so that the report stays one file; the page's Content-Security-Policy
names their SHA-256 digests, so no other script (one smuggled in through
an input, say) runs.  Data for a script goes in a
``<script type="application/json">`` block, written so that nothing in it
can end the block."""
from __future__ import annotations

import base64
import hashlib
import json
from functools import lru_cache
from importlib import resources

#: The files of the uPlot release shipped with sarsleuth (npm package
#: ``uplot``, its ``dist/`` files and LICENSE, unmodified).
UPLOT_VERSION = "1.6.32"
UPLOT_SCRIPT = "uPlot.iife.min.js"
UPLOT_STYLE = "uPlot.min.css"


def _read(*parts: str) -> str:
    return resources.files("sarsleuth.render").joinpath(*parts).read_text("utf-8")


@lru_cache(maxsize=1)
def uplot_script() -> str:
    return _read("uplot", UPLOT_SCRIPT)


@lru_cache(maxsize=1)
def uplot_style() -> str:
    return _read("uplot", UPLOT_STYLE)


@lru_cache(maxsize=1)
def explorer_script() -> str:
    return _read("templates", "explorer.js")


def digest(script: str) -> str:
    """The SHA-256 of a script, base64, as a Content-Security-Policy names it."""
    return base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")


def json_for_script(value) -> str:
    """``value`` as JSON that may sit between ``<script ...>`` and
    ``</script>``: ``<``, ``>`` and ``&`` (and the line separators older
    parsers end a string at) written as escapes."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for ch, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                        ("\u2029", "\\u2029")):
        text = text.replace(ch, escaped)
    return text
