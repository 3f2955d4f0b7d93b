#!/usr/bin/env python3
"""Write every list of input kinds from the parser registry, the one place
a kind is defined (a parser's ``kind`` and ``description``): the README's
table, CONTRACT.md's list and the ``kind`` enum of the JSON document's
schema (``sarsleuth/schema/analysis.schema.json``).

Run it after adding a parser::

    python tools/input_kinds.py            # writes the three
    python tools/input_kinds.py --check    # exit 1 when one is stale

``tests/test_architecture.py`` fails while one of them differs from what
this writes.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sarsleuth.inputs.parsers import kinds, kinds_table  # noqa: E402

BEGIN = "<!-- input kinds: written by tools/input_kinds.py -->"
END = "<!-- end of input kinds -->"
SCHEMA = ROOT / "sarsleuth" / "schema" / "analysis.schema.json"
#: the schema's line holding the enum of a source's kind
_ENUM = re.compile(r'("kind": \{"enum": )\[[^\]]*\]', re.S)


def _between(text: str, body: str, where: str) -> str:
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{where}: the markers {BEGIN} ... {END} are missing")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{body}{END}{tail}"


def written() -> dict:
    """{file: its text as it should be}."""
    listed = ", ".join(f"`{k}`" for k in kinds())
    readme = ROOT / "README.md"
    contract = ROOT / "CONTRACT.md"
    schema = SCHEMA.read_text("utf-8")
    enum = json.dumps(kinds())
    if not _ENUM.search(schema):
        raise SystemExit(f"{SCHEMA}: no kind enum found")
    return {
        readme: _between(readme.read_text("utf-8"), kinds_table(), "README.md"),
        contract: _between(contract.read_text("utf-8"), listed + ".\n", "CONTRACT.md"),
        SCHEMA: _ENUM.sub(lambda m: m.group(1) + enum, schema, count=1),
    }


def stale() -> list:
    return [path for path, text in written().items() if path.read_text("utf-8") != text]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare, do not write")
    args = ap.parse_args()
    if args.check:
        late = stale()
        for path in late:
            print(f"{path.relative_to(ROOT)}: stale: run tools/input_kinds.py")
        return 1 if late else 0
    for path, text in written().items():
        if path.read_text("utf-8") != text:
            path.write_text(text, "utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
