"""Addresses found in text whatever their spelling, each with the one key
that names it (the address as a number or its bytes), so that every
spelling of one address gets one stand-in and none escapes.

- IPv4: dotted, with leading zeros (``010.077.001.009``), glued to
  letters or ``_`` (``dump_10.77.3.9_nightly.sql``) or to a
  percent-escape (``?ip%3D10.77.4.9``); a learned address is also found
  joined by ``-`` or ``_`` (``ip-10-77-3-9``), as cloud host names write it.
- IPv6: compressed, expanded, mixed case, with an IPv4 tail, a zone
  (``%eth0``, kept) or ``%3A`` for its colons: all one address.
- Hardware addresses: six bytes with ``:`` or ``-`` (a MAC), in Cisco's
  dotted form (``0077.1122.3344``), as 12 bare hex digits after a word
  that says it is one (``ether``, ``MAC``, ``hwaddr``...), and longer
  runs: iptables' ``MAC=`` field (14 bytes: destination, source, type:
  each MAC on its own), InfiniBand's 20 bytes, an EUI-64.

Each finder yields :class:`Found` spans; :func:`spelled` writes a stand-in
the way the original was written (separator, case, percent-escapes).
"""
from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

#: a percent-escape just before a name (``%3D``, ``%40``): a word edge
_ESCAPE_BEFORE = r"(?<=%[0-9A-Fa-f]{2})"
_OCTET = r"0*(\d{1,3})"
_IPV4 = re.compile(rf"(?:(?<![0-9.])|{_ESCAPE_BEFORE}){_OCTET}\.{_OCTET}\.{_OCTET}\.{_OCTET}(?![0-9]|\.\d)")
#: an address joined by "-" or "_" (one separator throughout), found only when learned dotted
_IPV4_JOINED = re.compile(r"(?<![0-9])0*(\d{1,3})([-_])0*(\d{1,3})(?:\2)0*(\d{1,3})(?:\2)0*(\d{1,3})(?![0-9]|[-_.]\d)")
_HEX4 = r"[0-9A-Fa-f]{1,4}"
_COLON = r"(?::|%3[Aa])"
#: two colons at least (a time of day has two too: it fails as an address), an IPv4 tail, a zone
_IPV6 = re.compile(rf"(?:(?<![0-9A-Za-z:.%])|{_ESCAPE_BEFORE})(?:{_HEX4})?(?:{_COLON}(?:{_HEX4})?){{2,8}}"
                   rf"(?:\.\d{{1,3}}){{0,3}}(?:%[0-9A-Za-z][\w.-]*)?(?![0-9A-Za-z:])")
_HEX_RUN = re.compile(r"(?<![0-9A-Fa-f:-])[0-9A-Fa-f]{2}([:-])[0-9A-Fa-f]{2}(?:\1[0-9A-Fa-f]{2})+(?![0-9A-Fa-f])"
                      r"(?!\1[0-9A-Fa-f])")
_CISCO = re.compile(r"(?<![0-9A-Za-z.])([0-9A-Fa-f]{4})\.([0-9A-Fa-f]{4})\.([0-9A-Fa-f]{4})(?![0-9A-Za-z]|\.[0-9A-Za-z])")
#: 12 bare hex digits are a MAC only where the line says so (else a hash, a container id)
_BARE_MAC = re.compile(r"(?i)(?:\b(?:mac|ether|hwaddr|lladdr|hw ?addr(?:ess)?|bssid|chaddr|mac[_ -]?addr(?:ess)?)"
                       r"\b[\s:=\"'#]{0,3})([0-9a-f]{12})(?![0-9a-z])")
_BARE_12 = re.compile(r"(?<![0-9A-Za-z])([0-9A-Fa-f]{12})(?![0-9A-Za-z])")


@dataclass(frozen=True)
class Found:
    start: int
    end: int
    kind: str            # "ipv4", "ipv6", "mac", "hw" (a hardware address other than six bytes)
    key: object          # int for addresses, lower-case hex for hardware ones
    text: str            # the spelling found


def ipv4s(text: str, joined: frozenset = frozenset()):
    """Dotted IPv4 addresses; ``joined``: the keys of learned addresses,
    also found written with ``-`` or ``_``."""
    if "." in text:
        for m in _IPV4.finditer(text):
            octets = [int(g) for g in m.groups()]
            if max(octets) <= 255:
                yield Found(m.start(), m.end(), "ipv4", _ipv4_key(octets), m.group(0))
    if joined and ("-" in text or "_" in text):
        for m in _IPV4_JOINED.finditer(text):
            octets = [int(m.group(i)) for i in (1, 3, 4, 5)]
            if max(octets) <= 255 and _ipv4_key(octets) in joined:
                yield Found(m.start(), m.end(), "ipv4", _ipv4_key(octets), m.group(0))


def _ipv4_key(octets) -> int:
    a, b, c, d = octets
    return a << 24 | b << 16 | c << 8 | d


def ipv6s(text: str):
    """IPv6 addresses in any spelling (``key``: the address as an integer;
    a zone after it is left out of the span, so it stays)."""
    if ":" not in text and "%3" not in text:
        return
    for m in _IPV6.finditer(text):
        found = m.group(0)[:_zone_start(m.group(0))]
        while found:
            plain = re.sub(r"%3[Aa]", ":", found)
            if plain.count(":") < 2:
                break
            try:
                ip = ipaddress.IPv6Address(plain)
            except ValueError:
                # a sentence's full stop or colon after the address
                if found[-1] in ".:":
                    found = found[:-1]
                    continue
                break
            yield Found(m.start(), m.start() + len(found), "ipv6", int(ip), found)
            break


def _zone_start(found: str) -> int:
    """Where the zone (``%eth0``) begins in a spelling whose colons may be ``%3A``."""
    i = 0
    while True:
        j = found.find("%", i)
        if j < 0:
            return len(found)
        if found[j + 1:j + 3].lower() != "3a":
            return j
        i = j + 3


def hardware(text: str):
    """MACs and longer hardware addresses (``key``: lower-case hex)."""
    if ":" in text or "-" in text:
        for m in _HEX_RUN.finditer(text):
            sep = m.group(1)
            parts = m.group(0).split(sep)
            if len(parts) == 6:
                yield Found(m.start(), m.end(), "mac", "".join(parts).lower(), m.group(0))
            elif len(parts) == 14:
                # iptables' MAC=: destination, source, then the frame type (kept)
                for first in (0, 6):
                    start = m.start() + first * 3
                    yield Found(start, start + 17, "mac", "".join(parts[first:first + 6]).lower(),
                                m.group(0)[first * 3:first * 3 + 17])
            elif len(parts) >= 8:
                yield Found(m.start(), m.end(), "hw", "".join(parts).lower(), m.group(0))
    if "." in text:
        for m in _CISCO.finditer(text):
            yield Found(m.start(), m.end(), "mac", "".join(m.groups()).lower(), m.group(0))
    for m in _BARE_MAC.finditer(text):
        yield Found(m.start(1), m.end(1), "mac", m.group(1).lower(), m.group(1))


def bare_macs(text: str, known: frozenset):
    """12 bare hex digits that spell a MAC learned elsewhere."""
    for m in _BARE_12.finditer(text):
        key = m.group(1).lower()
        if key in known:
            yield Found(m.start(), m.end(), "mac", key, m.group(0))


def spelled(stand_in: str, found: Found) -> str:
    """The stand-in written the way ``found`` was: a MAC's separator and
    case, Cisco's dots, bare digits, an address's percent-escapes and
    zero padding left out (an address is one address however written)."""
    original = found.text
    if found.kind in ("mac", "hw"):
        digits = stand_in.replace(":", "")
        if "." in original and ":" not in original and "-" not in original:
            out = f"{digits[:4]}.{digits[4:8]}.{digits[8:]}"
        elif len(original) == len(digits):
            out = digits
        else:
            sep = "-" if "-" in original else ":"
            out = sep.join(digits[i:i + 2] for i in range(0, len(digits), 2))
        return out.upper() if original.upper() == original and any(c.isalpha() for c in original) else out
    if found.kind == "ipv4" and ("-" in original or "_" in original) and "." not in original:
        return stand_in.replace(".", "-" if "-" in original else "_")
    if found.kind == "ipv6" and re.search(r"%3[Aa]", original):
        return stand_in.replace(":", "%3A")
    return stand_in


def kept(found) -> bool:
    """Addresses that name no one: loopback, unspecified, netmasks, the
    broadcast and all-zero hardware addresses."""
    if found.kind == "ipv4":
        ip = ipaddress.IPv4Address(found.key)
        return ip.is_loopback or ip.is_unspecified or _is_netmask(found.key)
    if found.kind == "ipv6":
        ip = ipaddress.IPv6Address(found.key)
        return ip.is_loopback or ip.is_unspecified
    return not found.key.strip("0") or not found.key.strip("f")


def _is_netmask(value: int) -> bool:
    inverted = ~value & 0xFFFFFFFF
    return value != 0 and (inverted & (inverted + 1)) == 0 and value >> 24 == 0xFF
