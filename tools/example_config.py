#!/usr/bin/env python3
"""Write ``docs/sarsleuth.example.toml``: a configuration for ``--config``
holding every detector's thresholds at their defaults (from the detectors
themselves, so it never says a default that is not), the link speed, and
commented examples of a signature of one's own and a redaction pattern.

    python tools/example_config.py            # writes the file
    python tools/example_config.py --check    # exit 1 when it is stale

``tests/test_cli_habits.py`` loads it, checks that it changes nothing,
and fails while it differs from what this writes.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sarsleuth.detectors import registry  # noqa: E402

EXAMPLE = ROOT / "docs" / "sarsleuth.example.toml"

HEAD = """\
# sarsleuth's configuration: `sarsleuth analyze ... --config FILE`.
#
# Every detector's thresholds are below at their defaults: copy this file,
# change what your hosts need and delete the rest (a detector or parameter
# this version does not know is refused, naming the line's table).  Written
# by tools/example_config.py from the detectors themselves.

# The NIC capacity load-test checks judge against when sar cannot tell it
# (sar before sysstat 10 records no link speed), as --link-speed does.
# link_speed = "10G"

# A log line of your own, no Python needed: matched on the message after
# the syslog or nginx prefix, RE2 syntax; every match is a finding.
# [[signature]]
# id = "myapp-panic"
# patterns = ['panic: runtime error']
# severity = "high"
# explanation = "myapp crashed; see its core file"

# Names of your own that --redact replaces (RE2 syntax): each match
# becomes NAME-1, NAME-2...
# [redact.patterns]
# customer = 'ACME-[0-9]+'
"""


def _value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    return repr(v)


def example() -> str:
    out = [HEAD]
    for det_id, det in sorted(registry().items()):
        if not det.defaults:
            continue
        out.append(f"\n# {det.summary}\n[detectors.{det_id}]\n")
        out.extend(f"{name} = {_value(value)}\n" for name, value in det.defaults.items())
    return "".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare, do not write")
    args = ap.parse_args()
    text = example()
    if args.check:
        stale = not EXAMPLE.exists() or EXAMPLE.read_text("utf-8") != text
        print(f"{EXAMPLE.relative_to(ROOT)}: {'stale: run tools/example_config.py' if stale else 'up to date'}")
        return 1 if stale else 0
    EXAMPLE.write_text(text, "utf-8")
    print(f"wrote {EXAMPLE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
