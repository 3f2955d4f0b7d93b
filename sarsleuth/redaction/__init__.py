"""``--redact``: host and domain names, addresses, user names and e-mail
addresses replaced by consistent stand-ins in every output, before a report
leaves the company (:mod:`~sarsleuth.redaction.names` says which stand-in
each gets; :mod:`~sarsleuth.redaction.case` applies them to a case)."""
from __future__ import annotations

import json

from sarsleuth.redaction.names import Redactor
from sarsleuth.render.files import atomic_output

__all__ = ["Redactor", "write_map"]


def write_map(redactor, path, inputs=()) -> None:
    """Which original each stand-in replaces (``{kind: {original:
    stand-in}}``), readable by its owner only, never over an input."""
    with atomic_output(path, inputs, mode=0o600) as fh:
        fh.write(json.dumps(redactor.mapping(), indent=2, ensure_ascii=False) + "\n")
