"""``--redact``: host and domain names, addresses, user names and e-mail
addresses replaced by consistent stand-ins in every output, before a report
leaves the company (:mod:`~sarsleuth.redaction.names` says which stand-in
each gets; :mod:`~sarsleuth.redaction.case` applies them to a case)."""
from __future__ import annotations

from sarsleuth.redaction.names import Redactor

__all__ = ["Redactor"]
