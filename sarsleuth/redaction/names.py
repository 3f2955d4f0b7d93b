"""The stand-ins: every name that identifies a machine, a network or a
person gets one, the same wherever it appears.

A :class:`Redactor` first *learns* (host and user names the case's files
give, and every address, domain and e-mail address found in its text),
then *replaces* all of them at once, longest first, as whole words
(``web07`` in ``sosreport-web07-2026...``, never inside ``web071``).
Stand-ins say what they stand for and keep what the story needs:

- host names: ``host-1``; a domain: ``domain-1.example`` (RFC 2606), a
  host in it ``host-2.domain-1.example``;
- IPv4 addresses: ``198.18.N.H`` (the benchmarking range of RFC 2544, then
  240.0.0.0/4): one fake /24 per real /24, the host part kept, so
  addresses of one subnet stay together and subnets stay apart;
- IPv6 addresses: ``fd00:0:0:N::M`` (a unique local prefix per real /64),
  link-local ones ``fe80::M``;
- MAC addresses: ``02:00:00:00:NN:NN`` (locally administered);
- user names: ``user-1``; e-mail addresses ``user-1@domain-1.example``;
- the config's own patterns: ``NAME-1``.

Loopback and unspecified addresses, netmasks, ``localhost`` and system
accounts (``root``, ``nginx``) name no one and are kept
(``knowledge/redaction.toml``).
"""
from __future__ import annotations

import ipaddress
import re
from functools import lru_cache
from importlib import resources

from publicsuffixlist import PublicSuffixList

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
#: A dotted name; not part of a longer word, path-like token or sysctl name.
_DOTTED = re.compile(rf"(?<![\w.-])({_LABEL}(?:\.{_LABEL})+)(?![\w-]|\.[A-Za-z0-9])")
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d)")
_IPV6 = re.compile(r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{1,4}|(?:\d{1,3}\.){3}\d{1,3})?"
                   r"(?:%[\w.-]+)?(?![\w:])")
_MAC = re.compile(r"(?<![0-9A-Fa-f:-])(?:[0-9A-Fa-f]{2}([:-]))(?:[0-9A-Fa-f]{2}\1){4}[0-9A-Fa-f]{2}(?![0-9A-Fa-f:-])")
_EMAIL = re.compile(rf"(?<![\w.+-])([A-Za-z0-9._%+-]+)@({_LABEL}(?:\.{_LABEL})+)(?![\w-])")
#: Where a word starts and ends for a name to be replaced in it.
_EDGE_BEFORE, _EDGE_AFTER = r"(?<![A-Za-z0-9_])", r"(?![A-Za-z0-9_]|\.\d)"

KINDS = ("host", "domain", "ipv4", "ipv6", "mac", "user", "email")


@lru_cache(maxsize=1)
def _knowledge() -> dict:
    text = resources.files("sarsleuth.knowledge").joinpath("redaction.toml").read_text("utf-8")
    data = tomllib.loads(text)
    return {"file_suffixes": frozenset(data["file_suffixes"]),
            "internal_suffixes": frozenset(data["internal_suffixes"]),
            "anonymous_hosts": frozenset(h.lower() for h in data["anonymous_hosts"]),
            "system_users": frozenset(u.lower() for u in data["system_users"]),
            "user_patterns": tuple(re.compile(p) for p in data["user_patterns"]),
            "host_patterns": tuple(re.compile(p) for p in data["host_patterns"]),
            "sysctl_namespaces": frozenset(data["sysctl_namespaces"])}


@lru_cache(maxsize=1)
def _suffixes():
    return PublicSuffixList(accept_unknown=False)


class Redactor:
    """Learns names, then replaces them; ``table`` maps each original (as
    first seen) to its stand-in, ``kinds`` says what each is."""

    def __init__(self, patterns=()):
        #: the config's own [redact.patterns]: (name, compiled RE2 pattern)
        self.patterns = tuple(patterns)
        self.table: dict[str, str] = {}
        self.kinds: dict[str, str] = {}
        self._by_lower: dict[str, str] = {}
        self._counters: dict[str, int] = {}
        self._nets4: dict = {}
        self._nets6: dict = {}
        self._regex = None
        self._lookup: dict[str, str] = {}

    # --------------------------------------------------------------- learn
    def _add(self, original: str, kind: str, stand_in: str) -> str:
        key = original.lower()
        if key not in self._by_lower:
            self._by_lower[key] = stand_in
            self.table[original] = stand_in
            self.kinds[original] = kind
            self._regex = None
        return self._by_lower[key]

    def _next(self, kind: str) -> int:
        self._counters[kind] = self._counters.get(kind, 0) + 1
        return self._counters[kind]

    def known(self, name: str) -> str | None:
        return self._by_lower.get(str(name).lower())

    def host(self, name, own: bool = False) -> str | None:
        """A host name (``web07``, ``db1.example.com``); ``own``: a file
        gives it as its machine's name, so its first label alone names the
        machine too (a name in a URL, in the domain of a public suffix,
        names it only whole)."""
        name = str(name or "").strip().rstrip(".")
        if not name or name.lower() in _knowledge()["anonymous_hosts"] or _is_address(name):
            return None
        if self.known(name):
            return self.known(name)
        if not own and "." in name and _public_suffix(name):
            return self.domain(name)
        first, _, rest = name.partition(".")
        domain = self.domain(rest) if rest and _public_suffix(rest) else None
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
        registrable = _registrable(name)
        if registrable is None:
            return None
        base = self.known(registrable) or self._add(registrable, "domain", f"domain-{self._next('domain')}.example")
        if registrable.lower() == name.lower():
            return base
        # the labels before the domain name a host only within it: "www"
        # alone is no name (www-data), unless a file gave it as a host name
        prefix = name[:-len(registrable) - 1]
        host = self.known(prefix) or f"host-{self._next('host')}"
        return self._add(name, "host", f"{host}.{base}")

    def user(self, name) -> str | None:
        name = str(name or "").strip()
        if not name or name.lower() in _knowledge()["system_users"] or name.isdigit():
            return None
        return self.known(name) or self._add(name, "user", f"user-{self._next('user')}")

    def learn(self, text: str) -> None:
        """Every address, domain, e-mail address, user name and pattern of
        ``text`` gets its stand-in."""
        if not text or not isinstance(text, str):
            return
        for name, pattern in self.patterns:
            for m in pattern.finditer(text):
                if m.group(0) and not self.known(m.group(0)):
                    self._add(m.group(0), name, f"{name}-{self._next(name)}")
        for m in _EMAIL.finditer(text):
            user, domain = m.group(1), m.group(2)
            stand_user = self.user(user) or user          # root@... stays root@
            stand_domain = self.domain(domain) or self.host(domain)
            self._add(m.group(0), "email", f"{stand_user}@{stand_domain}")
        for m in _MAC.finditer(text):
            mac = m.group(0)
            if not self.known(mac) and mac.replace(m.group(1), "").strip("0") and mac.lower() != "ff:ff:ff:ff:ff:ff":
                n = self._next("mac")
                self._add(mac, "mac", f"02:00:00:00:{n >> 8 & 0xff:02x}:{n & 0xff:02x}".replace(":", m.group(1)))
        for m in _IPV6.finditer(text):
            self._ipv6(m.group(0))
        for m in _IPV4.finditer(text):
            self._ipv4(m.group(0))
        for m in _DOTTED.finditer(text):
            name = m.group(1)
            if not self.known(name) and _public_suffix(name):
                self.domain(name)
        for pattern in _knowledge()["user_patterns"]:
            for m in pattern.finditer(text):
                self.user(m.group(1))
        for pattern in _knowledge()["host_patterns"]:
            for m in pattern.finditer(text):
                if not _is_address(m.group(1)):
                    self.host(m.group(1))

    def _ipv4(self, text: str) -> None:
        try:
            ip = ipaddress.IPv4Address(text)
        except ValueError:
            return
        if self.known(text) or ip.is_loopback or ip.is_unspecified or _is_netmask(int(ip)):
            return
        net = int(ip) >> 8
        if net not in self._nets4:
            n = len(self._nets4)
            base = (198 << 24 | 18 << 16) + (n << 8) if n < 512 else (240 << 24) + ((n - 512) << 8)
            self._nets4[net] = base
        self._add(text, "ipv4", str(ipaddress.IPv4Address(self._nets4[net] + (int(ip) & 0xFF))))

    def _ipv6(self, text: str) -> None:
        address = text.split("%", 1)[0]
        if address.count(":") < 2:
            return
        try:
            ip = ipaddress.IPv6Address(address)
        except ValueError:
            return
        if self.known(text) or ip.is_loopback or ip.is_unspecified:
            return
        if ip.ipv4_mapped is not None:
            self._ipv4(str(ip.ipv4_mapped))
        n = self._next("ipv6")
        if ip.is_link_local:
            fake = f"fe80::{n:x}"
        else:
            prefix = int(ip) >> 64
            net = self._nets6.setdefault(prefix, len(self._nets6) + 1)
            fake = f"fd00:0:0:{net:x}::{n:x}"
        self._add(text, "ipv6", fake)

    # ------------------------------------------------------------- replace
    def text(self, text):
        """``text`` with every name learned replaced by its stand-in (the
        config's patterns found anew, so nothing of theirs slips through)."""
        if not isinstance(text, str) or not text:
            return text
        for name, pattern in self.patterns:
            if pattern.search(text):
                text = pattern.sub(lambda m: self.known(m.group(0)) or self._add(
                    m.group(0), name, f"{name}-{self._next(name)}"), text)
        regex = self._compiled()
        if regex is None:
            return text
        return regex.sub(self._stand_in, text)

    def _stand_in(self, m) -> str:
        found = m.group(0)
        after = m.string[m.end():m.end() + 2]
        if found.lower() in _knowledge()["sysctl_namespaces"] and after[:1] == "." and after[1:].isalpha():
            return found          # vm.min_free_kbytes names a setting, not the host "vm"
        return self._lookup.get(found.lower(), found)

    def _compiled(self):
        if self._regex is None and self._by_lower:
            # stand-ins stand for themselves: a text already redacted is left as it is
            self._lookup = {s.lower(): s for s in self._by_lower.values()}
            self._lookup.update(self._by_lower)
            self._regex = re.compile(f"{_EDGE_BEFORE}{_trie(self._lookup)}{_EDGE_AFTER}", re.IGNORECASE)
        return self._regex

    def mapping(self) -> dict:
        """{kind: {original: stand-in}}, for the private map file."""
        out: dict = {}
        for original, stand_in in self.table.items():
            out.setdefault(self.kinds[original], {})[original] = stand_in
        return out

    def sentence(self) -> str:
        """What a redacted report says about itself."""
        counts = ", ".join(f"{len(v)} {k}" for k, v in self.mapping().items())
        return ("Redacted: host and domain names, addresses, user names and e-mail addresses are stand-ins "
                "(host-1, domain-1.example, 198.18.x.x, fd00::, 02:00:00:00:x:x, user-1), the same stand-in "
                f"for the same original everywhere{f' ({counts})' if counts else ''}; times, numbers and "
                "findings are as analysed.")


def _trie(words) -> str:
    """One pattern matching any of ``words`` (lower case), longest first,
    its alternatives factored by common prefix so that thousands of names
    cost one pass over a text."""
    root: dict = {}
    for w in words:
        node = root
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    def pattern(node) -> str:
        ends = "" in node
        branches = [re.escape(ch) + pattern(child) for ch, child in sorted(node.items()) if ch]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if ends else body
    return f"(?:{pattern(root)})"


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name.split("%", 1)[0])
        return True
    except ValueError:
        return False


def _is_netmask(value: int) -> bool:
    inverted = ~value & 0xFFFFFFFF
    return value != 0 and (inverted & (inverted + 1)) == 0 and value >> 24 == 0xFF


def _public_suffix(name: str) -> bool:
    """Does a dotted name end in a suffix that makes it a domain (and not
    a file name)?"""
    last = name.rsplit(".", 1)[-1].lower()
    if not last.isalpha() or last in _knowledge()["file_suffixes"]:
        return False
    return last in _knowledge()["internal_suffixes"] or _suffixes().publicsuffix(name.lower()) is not None


def _registrable(name: str) -> str | None:
    """The part of a domain one registers (``example.co.uk``), or the last
    two labels under a private network's suffix."""
    last = name.rsplit(".", 1)[-1].lower()
    if last in _knowledge()["internal_suffixes"]:
        labels = name.split(".")
        return ".".join(labels[-2:]) if len(labels) >= 2 else None
    found = _suffixes().privatesuffix(name.lower())
    if found is None:
        return None
    return name[-len(found):]
