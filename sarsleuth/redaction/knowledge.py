"""What counts as a name, read once from ``knowledge/redaction.toml``:
the words and accounts that name no one, the forms in which logs write a
user or a host name (each with samples and near misses, checked by the
tests), and which dotted names are domains (the public suffix list)."""
from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

from publicsuffixlist import PublicSuffixList

from sarsleuth.knowledge import read_toml


@lru_cache(maxsize=1)
def knowledge() -> dict:
    data = read_toml("redaction.toml")
    return {"file_suffixes": frozenset(data["file_suffixes"]),
            "internal_suffixes": frozenset(data["internal_suffixes"]),
            "unit_suffixes": frozenset(data["unit_suffixes"]),
            "anonymous_hosts": frozenset(h.lower() for h in data["anonymous_hosts"]),
            "system_users": frozenset(u.lower() for u in data["system_users"]),
            "mail_roles": frozenset(u.lower() for u in data["mail_roles"]),
            "not_names": frozenset(w.lower() for w in data["not_names"]),
            "user_patterns": tuple(re.compile(f["pattern"]) for f in data["user_form"]),
            "host_patterns": tuple(re.compile(f["pattern"]) for f in data["host_form"]),
            "sysctl_namespaces": frozenset(data["sysctl_namespaces"])}


@lru_cache(maxsize=1)
def vocabulary() -> frozenset:
    """The words of sarsleuth's own texts (its knowledge files, its HTML
    templates), lower case.  A name that is one of them (a host called
    ``proxy``, a user ``data``) is replaced in what came from the inputs,
    but not where ``_`` joins it to a word (``proxy_buffers`` is nginx's),
    and the last look does not refuse an output for it: the output's own
    words hold it."""
    words: set = set()
    texts = [resources.files("sarsleuth.knowledge").joinpath(name).read_text("utf-8")
             for name in ("kb.toml", "bundle_layout.toml", "metric_names.toml")]
    texts += [t.read_text("utf-8") for t in resources.files("sarsleuth.render").joinpath("templates").iterdir()
              if t.name.endswith(".j2")]
    for text in texts:
        words.update(w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9]*", text))
    return frozenset(words)


def forms() -> dict:
    """{"user_form": [...], "host_form": [...]} as the file has them
    (pattern, samples, near misses), for the tests."""
    data = read_toml("redaction.toml")
    return {"user_form": data["user_form"], "host_form": data["host_form"]}


@lru_cache(maxsize=1)
def _suffixes():
    return PublicSuffixList(accept_unknown=False)


def public_suffix(name: str) -> bool:
    """Does a dotted name end in a suffix that makes it a domain (and not
    a file name)?"""
    last = name.rsplit(".", 1)[-1].lower()
    if not last.isalpha() or last in knowledge()["file_suffixes"]:
        return False
    return last in knowledge()["internal_suffixes"] or _suffixes().publicsuffix(name.lower()) is not None


def registrable(name: str) -> str | None:
    """The part of a domain one registers (``example.co.uk``), or the last
    two labels under a private network's suffix."""
    last = name.rsplit(".", 1)[-1].lower()
    if last in knowledge()["internal_suffixes"]:
        labels = name.split(".")
        return ".".join(labels[-2:]) if len(labels) >= 2 else None
    found = _suffixes().privatesuffix(name.lower())
    if found is None:
        return None
    return name[-len(found):]
