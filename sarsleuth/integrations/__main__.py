"""``python -m sarsleuth.integrations [lnav|grafana]``: the path of each
shipped file (``lnav -i "$(python -m sarsleuth.integrations lnav)"``)."""
from __future__ import annotations

import sys

from sarsleuth.integrations import FILES, path


def main(argv: list) -> int:
    names = argv or list(FILES)
    unknown = [n for n in names if n not in FILES]
    if unknown:
        sys.stderr.write(f"unknown: {', '.join(unknown)} (expected {', '.join(FILES)})\n")
        return 2
    for name in names:
        sys.stdout.write(f"{path(name)}\n" if argv else f"{name}\t{path(name)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
