"""The stand-ins: every name that identifies a machine, a network or a
person gets one, the same wherever it appears and however it is spelled.

A :class:`Redactor` first *learns* (host and user names the case's files
give, and every address, domain and e-mail address found in its text),
then *replaces* all of them at once.  Names are replaced as words, longest
first; a word ends at anything but a letter or digit, so ``web07`` is
found in ``sosreport-web07_dc3``, ``zqweb77_logs`` gives ``zqweb77`` and
``rhel_web07-root`` (the volume group the installer names after the host)
``web07``, but ``web071`` is another name.  Names are case-folded
(``WEB1`` is ``web1``); a host name is also found with its ``-``, ``_``
and ``.`` swapped (``web07-dc3``, ``web07_dc3``) and with its dashes
doubled as device-mapper writes them (``rhel_web--07-root``); an e-mail
address also percent-escaped (``lena%40mail.example.com``).  Addresses
are known by their value, not their spelling (:mod:`.addresses`).

Stand-ins say what they stand for and keep what the story needs:

- host names: ``host-1``; a domain: ``domain-1.example`` (RFC 2606), a
  host in it ``host-2.domain-1.example``;
- IPv4 addresses: ``198.18.N.H`` (the benchmarking range of RFC 2544, then
  240.0.0.0/4): one fake /24 per real /24, the host part kept, so
  addresses of one subnet stay together and subnets stay apart; a fake
  /24 that holds an address of the inputs is never used;
- IPv6 addresses: ``fd00:0:0:N::M`` (a unique local prefix per real /64),
  link-local ones ``fe80::M``;
- MAC addresses: ``02:00:00:00:NN:NN`` (locally administered), longer
  hardware addresses the same length;
- user names: ``user-1``; e-mail addresses ``user-1@domain-1.example``;
- the config's own patterns: ``NAME-1``.

Loopback and unspecified addresses, netmasks, ``localhost``, system
accounts (``root``, ``nginx``) and words of the logs' own vocabulary name
no one and are kept (``knowledge/redaction.toml``).  :meth:`Redactor.leak`
is the final check every output passes (:mod:`.check`): what in a text
would still be replaced.
"""
from __future__ import annotations

import ipaddress
import re
from urllib.parse import unquote

from sarsleuth.redaction import addresses
from sarsleuth.redaction.addresses import kept as _kept
from sarsleuth.redaction.knowledge import knowledge, public_suffix, registrable, vocabulary
from sarsleuth.redaction.spellings import spellings as _spellings, trie as _trie

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
#: A dotted name; not part of a longer word, path-like token or sysctl name.
_DOTTED = re.compile(rf"(?<![\w.%-])({_LABEL}(?:\.{_LABEL})+)(?![\w-]|\.[A-Za-z0-9])")
_EMAIL = re.compile(rf"(?<![\w.+-])([A-Za-z0-9._%+-]+)@({_LABEL}(?:\.{_LABEL})+)(?![\w-])")
#: Where a word starts and ends for a name to be replaced in it: "_" and
#: "-" join words (a folder ``zqweb77_logs``, a volume group ``rhel_web07``);
#: a percent-escape just before is an edge too (``?host%3Dweb07``).
_EDGE_BEFORE, _EDGE_AFTER = r"(?:(?<![A-Za-z0-9])|(?<=%[0-9A-Fa-f]{2}))", r"(?![A-Za-z0-9]|\.\d)"
_HOST_CHARS = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")
#: A name a file gives as its machine's or a user's: anything printable (a
#: hostile syslog's "hôst1" names a machine all the same)
_GIVEN_CHARS = re.compile(r"[^\s\x00-\x1f\x7f]+\Z")

KINDS = ("host", "domain", "ipv4", "ipv6", "mac", "user", "email")
#: How the final check names what it found (never the name itself).
KIND_NAMES = {"host": "a host name", "domain": "a domain name", "ipv4": "an IPv4 address",
              "ipv6": "an IPv6 address", "mac": "a MAC address", "hw": "a hardware address",
              "user": "a user name", "email": "an e-mail address"}


class Redactor:
    """Learns names, then replaces them; ``table`` maps each original (as
    first seen) to its stand-in, ``kinds`` says what each is."""

    def __init__(self, patterns=()):
        #: the config's own [redact.patterns]: (name, compiled RE2 pattern)
        self.patterns = tuple(patterns)
        self.table: dict[str, str] = {}
        self.kinds: dict[str, str] = {}
        self._by_lower: dict[str, str] = {}
        self._spellings: dict[str, str] = {}         # every spelling of a name (lower) -> its stand-in
        self._counters: dict[str, int] = {}
        # addresses by value: (kind, key) -> stand-in, and the originals' first spellings
        self._addresses: dict = {}
        self._seen: dict = {}                         # (kind, key) -> spelling, in the order first seen
        self._fakes: dict = {}                        # (kind, key) of every stand-in address -> True
        self._nets4: dict = {}
        self._nets6: dict = {}
        self._fake_nets4 = 0
        self._nets_of_inputs: set = set()             # the /24s of the inputs' IPv4 addresses
        self._joined = self._bare = None              # learned IPv4 and MAC keys, for their other spellings
        self._regex = None
        self._lookup: dict[str, str] = {}

    # --------------------------------------------------------------- learn
    def _add(self, original: str, kind: str, stand_in: str) -> str:
        key = original.lower()
        if key not in self._by_lower:
            self._by_lower[key] = stand_in
            self.table[original] = stand_in
            self.kinds[original] = kind
            for spelling, spelled_in in _spellings(original, kind, stand_in):
                self._spellings.setdefault(spelling, spelled_in)
            self._regex = None
        return self._by_lower[key]

    def _next(self, kind: str) -> int:
        while True:
            self._counters[kind] = self._counters.get(kind, 0) + 1
            if f"{kind}-{self._counters[kind]}" not in self._by_lower:     # an input's own "host-1" is a name
                return self._counters[kind]

    def known(self, name: str) -> str | None:
        return self._by_lower.get(str(name).lower())

    def host(self, name, own: bool = False) -> str | None:
        """A host name (``web07``, ``db1.example.com``); ``own``: a file
        gives it as its machine's name, so its first label alone names the
        machine too (a name in a URL, in the domain of a public suffix,
        names it only whole).  A word of the logs' vocabulary is a host
        name only when a file gives it as its machine's name."""
        name = str(name or "").strip().rstrip(".")
        if not _could_be_host(name, own):
            return None
        if self.known(name):
            return self.known(name)
        if not own and "." in name and public_suffix(name):
            return self.domain(name)
        first, _, rest = name.partition(".")
        domain = self.domain(rest) if rest and public_suffix(rest) else None
        if not _could_be_host(first, own):
            # "app.lab.example": the whole name is one, its first word alone none
            return self._add(name, "host", f"host-{self._next('host')}" + (f".{domain}" if domain else ""))
        short = self.known(first) or self._add(first, "host", f"host-{self._next('host')}")
        if rest:
            return self._add(name, "host", f"{short}.{domain}" if domain else short)
        return short

    def domain(self, name: str) -> str | None:
        """A domain (``example.com``, ``corp.example.co.uk``): its registrable
        part one stand-in, the labels before it a host."""
        name = name.strip().rstrip(".")
        if self.known(name):
            return self.known(name)
        found = registrable(name)
        if found is None:
            return None
        base = self.known(found) or self._add(found, "domain", f"domain-{self._next('domain')}.example")
        if found.lower() == name.lower():
            return base
        # the labels before the domain name a host only within it: "www"
        # alone is no name (www-data), unless a file gave it as a host name
        prefix = name[:-len(found) - 1]
        host = self.known(prefix) or f"host-{self._next('host')}"
        return self._add(name, "host", f"{host}.{base}")

    def user(self, name, given: bool = False) -> str | None:
        """A user name; ``given``: a file gives it as one (a ps snapshot's
        user column), so even a word of the logs' vocabulary is taken."""
        name = str(name or "").strip().rstrip(".")
        low = name.lower()
        if (len(name) < 2 or low in knowledge()["system_users"] or (low in knowledge()["not_names"] and not given)
                or name.isdigit() or not (_GIVEN_CHARS if given else _HOST_CHARS).match(name)):
            return None
        return self.known(name) or self._add(name, "user", f"user-{self._next('user')}")

    def email(self, local: str, domain: str) -> str | None:
        """``local@domain`` when the domain is one (a public or internal
        suffix, or a known host): ``user@0.service`` is a systemd unit."""
        if domain.rsplit(".", 1)[-1].lower() in knowledge()["unit_suffixes"]:
            return None
        if not (public_suffix(domain) or self.known(domain)):
            return None
        original = f"{local}@{domain}"
        if self.known(original):
            return self.known(original)
        stand_domain = self.domain(domain) or self.host(domain)
        if stand_domain is None:
            return None
        low = local.lower()
        if low in knowledge()["system_users"] or low in knowledge()["mail_roles"]:
            stand_local = local                       # root@, postmaster@ name a role
        else:
            stand_local = self.known(local) or f"user-{self._next('user')}"
        return self._add(original, "email", f"{stand_local}@{stand_domain}")

    def learn(self, text: str) -> None:
        """Every address, domain, e-mail address, user name and pattern of
        ``text`` gets its stand-in (of a percent-escaped text, what it says
        unescaped too)."""
        if not text or not isinstance(text, str):
            return
        self._learn(text)
        if "%" in text:
            plain = unquote(text)
            if plain != text:
                self._learn(plain)

    def _learn(self, text: str) -> None:
        for name, pattern in self.patterns:
            for m in pattern.finditer(text):
                if m.group(0) and not self.known(m.group(0)):
                    self._add(m.group(0), name, f"{name}-{self._next(name)}")
        for found in self._found(text):
            if (found.kind, found.key) not in self._fakes and not _kept(found):
                self._note(found)
        if "." in text:
            for m in _DOTTED.finditer(text):
                name = m.group(1)
                if not self.known(name) and public_suffix(name) and not _is_address(name):
                    self.domain(name)
        for pattern in knowledge()["user_patterns"]:
            for m in pattern.finditer(text):
                self.user(m.group(1))
        for pattern in knowledge()["host_patterns"]:
            for m in pattern.finditer(text):
                self.host(m.group(1))
        # after the user names: a local part that is a user's name takes its stand-in
        if "@" in text:
            for m in _EMAIL.finditer(text):
                self.email(m.group(1), m.group(2))

    # ----------------------------------------------------------- addresses
    def _note(self, found) -> None:
        what = (found.kind, found.key)
        if what not in self._seen:
            self._seen[what] = found.text
            if found.kind == "ipv4":
                self._nets_of_inputs.add(found.key >> 8)
                self._joined = None
            elif found.kind == "mac":
                self._bare = None

    def _found(self, text: str) -> list:
        """The addresses of ``text``, left to right, none overlapping
        (hardware addresses first: an EUI-64 is no IPv6 address)."""
        spans: list = []
        taken: list = []
        if self._joined is None:
            self._joined = frozenset(k for kind, k in self._seen if kind == "ipv4")
        if self._bare is None:
            self._bare = frozenset(k for kind, k in self._seen if kind == "mac")
        joined, macs = self._joined, self._bare
        for finder in (addresses.hardware(text), addresses.ipv6s(text), addresses.ipv4s(text, joined),
                       addresses.bare_macs(text, macs)):
            for f in finder:
                if any(f.start < end and start < f.end for start, end in taken):
                    continue
                taken.append((f.start, f.end))
                spans.append(f)
        return sorted(spans, key=lambda f: f.start)

    def _stand_in_address(self, found) -> str | None:
        """The stand-in of an address (made when first needed, in the order
        the addresses were first seen), None for one kept as it is."""
        what = (found.kind, found.key)
        if what in self._fakes or _kept(found):
            return None
        self._settle()
        if what not in self._addresses:
            self._note(found)
            self._assign(what)
        return self._addresses[what]

    def _settle(self) -> None:
        for what in self._seen:
            if what not in self._addresses:
                self._assign(what)

    def _assign(self, what) -> None:
        kind, key = what
        taken = self._seen
        if kind == "ipv4":
            net = key >> 8
            if net not in self._nets4:
                while True:
                    n = self._fake_nets4
                    self._fake_nets4 += 1
                    base = (198 << 24 | 18 << 16) + (n << 8) if n < 512 else (240 << 24) + ((n - 512) << 8)
                    if base >> 8 not in self._nets_of_inputs:
                        break
                self._nets4[net] = base
            fake_key = self._nets4[net] + (key & 0xFF)
            stand_in = str(ipaddress.IPv4Address(fake_key))
        elif kind == "ipv6":
            while True:
                n = self._next("ipv6")
                if ipaddress.IPv6Address(key).is_link_local:
                    fake_key = int(ipaddress.IPv6Address(f"fe80::{n:x}"))
                else:
                    net = self._nets6.setdefault(key >> 64, len(self._nets6) + 1)
                    fake_key = int(ipaddress.IPv6Address(f"fd00:0:0:{net:x}::{n:x}"))
                if ("ipv6", fake_key) not in taken:
                    break
            stand_in = str(ipaddress.IPv6Address(fake_key))
        else:
            while True:
                n = self._next(kind)
                fake_key = "02" + f"{n:04x}".rjust(len(key) - 2, "0")
                if (kind, fake_key) not in taken:
                    break
            stand_in = ":".join(fake_key[i:i + 2] for i in range(0, len(fake_key), 2))
        self._addresses[what] = stand_in
        self._fakes[(kind, fake_key)] = True
        original = self._seen[what]
        self.table.setdefault(original, stand_in)
        self.kinds.setdefault(original, kind if kind != "hw" else "mac")

    # ------------------------------------------------------------- replace
    def text(self, text):
        """``text`` with every name learned replaced by its stand-in (the
        config's patterns and every address found anew, so nothing of
        theirs slips through)."""
        if not isinstance(text, str) or not text:
            return text
        for name, pattern in self.patterns:
            if pattern.search(text):
                text = pattern.sub(lambda m: (self.known(m.group(0)) or self._add(
                    m.group(0), name, f"{name}-{self._next(name)}")) if m.group(0) else "", text)
        parts, at = [], 0
        for found in self._found(text):
            stand_in = self._stand_in_address(found)
            if stand_in is None:
                continue
            parts.append(text[at:found.start])
            parts.append(addresses.spelled(stand_in, found))
            at = found.end
        if parts:
            text = "".join(parts) + text[at:]
        regex = self._compiled()
        if regex is None:
            return text
        return regex.sub(self._stand_in, text)

    def _stand_in(self, m) -> str:
        found = m.group(0)
        if _sysctl(m) or _identifier_part(m):
            return found          # vm.min_free_kbytes names a setting, not the host "vm"
        return self._lookup.get(found.lower(), found)

    def _compiled(self):
        if self._regex is None and self._spellings:
            # stand-ins stand for themselves: a text already redacted is left as it is
            self._lookup = {s.lower(): s for s in self._by_lower.values()}
            self._lookup.update(self._spellings)
            self._regex = re.compile(f"{_EDGE_BEFORE}{_trie(self._lookup)}{_EDGE_AFTER}", re.IGNORECASE)
        return self._regex

    # ---------------------------------------------------------------- check
    def leak(self, text: str) -> str | None:
        """What kind of name of the inputs ``text`` still holds (``"a host
        name"``...), None when it holds none: an original in any of its
        spellings, an address that is no stand-in, a match of the config's
        patterns.  Never says the name itself."""
        if not isinstance(text, str) or not text:
            return None
        for name, pattern in self.patterns:
            for m in pattern.finditer(text):
                if m.group(0) and self.known(m.group(0)) != m.group(0):
                    return f"a match of [redact.patterns] {name}"
        for found in self._found(text):
            if (found.kind, found.key) not in self._fakes and not _kept(found):
                return KIND_NAMES[found.kind]
        regex = self._compiled()
        if regex is not None:
            for m in regex.finditer(text):
                stand_in = self._lookup.get(m.group(0).lower())
                if (stand_in is not None and stand_in.lower() != m.group(0).lower() and not _sysctl(m)
                        and m.group(0).lower() not in vocabulary()):
                    original = next((o for o in self.kinds if o.lower() == m.group(0).lower()), None)
                    return KIND_NAMES.get(self.kinds.get(original, "host"), "a name")
        return None

    def mapping(self) -> dict:
        """{kind: {original: stand-in}}, for the private map file."""
        self._settle()
        out: dict = {}
        for original, stand_in in self.table.items():
            out.setdefault(self.kinds[original], {})[original] = stand_in
        return out

    def sentence(self) -> str:
        """What a redacted report says about itself."""
        counts = ", ".join(f"{len(v)} {k}" for k, v in self.mapping().items())
        return ("Redacted: host and domain names, addresses, user names and e-mail addresses are stand-ins "
                "(host-1, domain-1.example, 198.18.x.x, fd00:0:0:N::M, 02:00:00:00:x:x, user-1), the same "
                f"stand-in for the same original everywhere{f' ({counts})' if counts else ''}; times, numbers "
                "and findings are as analysed.")


def _could_be_host(name: str, own: bool = False) -> bool:
    low = name.lower()
    return (len(name) >= 2 and bool((_GIVEN_CHARS if own else _HOST_CHARS).match(name))
            and not name.replace(".", "").isdigit()
            and low not in knowledge()["anonymous_hosts"] and (own or low not in knowledge()["not_names"])
            and not _is_address(name))


def _sysctl(m) -> bool:
    after = m.string[m.end():m.end() + 2]
    return m.group(0).lower() in knowledge()["sysctl_namespaces"] and after[:1] == "." and after[1:].isalpha()


def _identifier_part(m) -> bool:
    """A word of sarsleuth's vocabulary joined by ``_`` to another
    (``proxy_buffers``, ``worker_connections``): an identifier, not a name."""
    text, start, end = m.string, m.start(), m.end()
    joined = (start > 0 and text[start - 1] == "_") or text[end:end + 1] == "_"
    return joined and m.group(0).lower() in vocabulary()


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name.split("%", 1)[0])
        return True
    except ValueError:
        return False
