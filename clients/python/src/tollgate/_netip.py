"""A port of the parts of Go's net/netip that the client relies on.

The Go client parses and prints addresses with net/netip, and the shared
vectors hold every client to its answers: which strings are addresses (no
leading zeros in IPv4, at most four hex digits a group, zones only on IPv6),
how a zone is split off, and the canonical text (RFC 5952, IPv4-mapped
addresses as ``::ffff:a.b.c.d``). :mod:`ipaddress` differs in small ways
(zones containing ``%``, the text of mapped addresses before Python 3.13), so
this module parses and prints by Go's rules. Strings are taken as Go takes
bytes: callers pass text whose characters are the bytes (latin-1).

This module is private: its names may change without notice.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

__all__ = ["Addr", "Prefix", "parse_addr", "parse_addr_port", "parse_prefix"]

_V4_IN_V6 = bytes(10) + b"\xff\xff"


class Addr(NamedTuple):
    """An IP address: 4 bytes (IPv4) or 16 bytes (IPv6), with an IPv6 zone."""

    ip: bytes
    zone: str = ""

    @property
    def is4(self) -> bool:
        """Whether the address is IPv4 (not IPv4-mapped IPv6)."""
        return len(self.ip) == 4

    @property
    def is6(self) -> bool:
        """Whether the address is IPv6, IPv4-mapped ones included."""
        return len(self.ip) == 16

    @property
    def is4in6(self) -> bool:
        """Whether the address is an IPv4-mapped IPv6 address."""
        return len(self.ip) == 16 and self.ip[:12] == _V4_IN_V6

    @property
    def bit_len(self) -> int:
        """32 for IPv4, 128 for IPv6."""
        return len(self.ip) * 8

    def unmap(self) -> "Addr":
        """The IPv4 address of an IPv4-mapped one (zone dropped), else self."""
        if self.is4in6:
            return Addr(self.ip[12:])
        return self

    def without_zone(self) -> "Addr":
        """The address without its zone."""
        return Addr(self.ip) if self.zone else self

    def __str__(self) -> str:
        if self.is4:
            return ".".join(str(b) for b in self.ip)
        if self.is4in6:
            s = "::ffff:" + ".".join(str(b) for b in self.ip[12:])
        else:
            s = _string6(self.ip)
        return s + "%" + self.zone if self.zone else s


class Prefix(NamedTuple):
    """An IP prefix: an address (never with a zone) and a length in bits."""

    addr: Addr
    bits: int

    def masked(self) -> "Prefix":
        """The prefix with every bit past its length cleared."""
        return Prefix(_mask(self.addr, self.bits), self.bits)

    def contains(self, a: Addr) -> bool:
        """Whether a, of the same family and without zone, is in the prefix."""
        if a.zone or a.bit_len != self.addr.bit_len:
            return False
        return _mask(a, self.bits).ip == _mask(self.addr, self.bits).ip

    def __str__(self) -> str:
        return "%s/%d" % (self.addr, self.bits)


def _mask(a: Addr, bits: int) -> Addr:
    n = int.from_bytes(a.ip, "big")
    total = len(a.ip) * 8
    keep = ((1 << bits) - 1) << (total - bits) if bits else 0
    return Addr((n & keep).to_bytes(len(a.ip), "big"))


def _string6(ip: bytes) -> str:
    groups = [ip[i] << 8 | ip[i + 1] for i in range(0, 16, 2)]
    zero_start, zero_end = 255, 255
    for i in range(8):
        j = i
        while j < 8 and groups[j] == 0:
            j += 1
        length = j - i
        if length >= 2 and length > zero_end - zero_start:
            zero_start, zero_end = i, j
    out = []
    i = 0
    while i < 8:
        if i == zero_start:
            out.append("::")
            i = zero_end
            if i >= 8:
                break
        elif i > 0:
            out.append(":")
        out.append("%x" % groups[i])
        i += 1
    return "".join(out)


def _parse_ipv4_fields(s: str) -> Optional[bytes]:
    fields = bytearray(4)
    val = pos = dig_len = 0
    for i, c in enumerate(s):
        if "0" <= c <= "9":
            if dig_len == 1 and val == 0:
                return None  # leading zero
            val = val * 10 + ord(c) - 48
            dig_len += 1
            if val > 255:
                return None
        elif c == ".":
            if i == 0 or i == len(s) - 1 or s[i - 1] == ".":
                return None
            if pos == 3:
                return None
            fields[pos] = val
            pos += 1
            val = dig_len = 0
        else:
            return None
    if pos < 3:
        return None
    fields[3] = val
    return bytes(fields)


def _parse_ipv6(text: str) -> Optional[Addr]:
    s = text
    zone = ""
    k = s.find("%")
    if k != -1:
        s, zone = s[:k], s[k + 1 :]
        if zone == "":
            return None
    ip = bytearray(16)
    ellipsis = -1
    if len(s) >= 2 and s[0] == ":" and s[1] == ":":
        ellipsis = 0
        s = s[2:]
        if not s:
            return Addr(bytes(16), zone)
    i = 0
    while i < 16:
        off = 0
        acc = 0
        while off < len(s):
            c = s[off]
            if "0" <= c <= "9":
                acc = (acc << 4) + ord(c) - 48
            elif "a" <= c <= "f":
                acc = (acc << 4) + ord(c) - 87
            elif "A" <= c <= "F":
                acc = (acc << 4) + ord(c) - 55
            else:
                break
            if off > 3 or acc > 0xFFFF:
                return None
            off += 1
        if off == 0:
            return None
        if off < len(s) and s[off] == ".":
            if ellipsis < 0 and i != 12:
                return None
            if i + 4 > 16:
                return None
            v4 = _parse_ipv4_fields(s)
            if v4 is None:
                return None
            ip[i : i + 4] = v4
            s = ""
            i += 4
            break
        ip[i] = acc >> 8
        ip[i + 1] = acc & 0xFF
        i += 2
        s = s[off:]
        if not s:
            break
        if s[0] != ":" or len(s) == 1:
            return None
        s = s[1:]
        if s[0] == ":":
            if ellipsis >= 0:
                return None
            ellipsis = i
            s = s[1:]
            if not s:
                break
    if s:
        return None
    if i < 16:
        if ellipsis < 0:
            return None
        n = 16 - i
        for j in range(i - 1, ellipsis - 1, -1):
            ip[j + n] = ip[j]
        for j in range(ellipsis, ellipsis + n):
            ip[j] = 0
    elif ellipsis >= 0:
        return None
    return Addr(bytes(ip), zone)


def parse_addr(s: str) -> Optional[Addr]:
    """Go's netip.ParseAddr: the address s spells, or None."""
    for c in s:
        if c == ".":
            v4 = _parse_ipv4_fields(s)
            return Addr(v4) if v4 is not None else None
        if c == ":":
            return _parse_ipv6(s)
        if c == "%":
            return None
    return None


def parse_addr_port(s: str) -> Optional[Addr]:
    """Go's netip.ParseAddrPort, answering the address only, or None."""
    i = s.rfind(":")
    if i == -1:
        return None
    host, port = s[:i], s[i + 1 :]
    if not host or not port:
        return None
    v6 = False
    if host[0] == "[":
        if len(host) < 2 or host[-1] != "]":
            return None
        host = host[1:-1]
        v6 = True
    if not port.isascii() or not port.isdigit() or int(port) > 0xFFFF:
        return None
    a = parse_addr(host)
    if a is None or (v6 and a.is4) or (not v6 and a.is6):
        return None
    return a


def parse_prefix(s: str) -> Optional[Prefix]:
    """Go's netip.ParsePrefix (not masked), or None."""
    i = s.rfind("/")
    if i < 0:
        return None
    a = parse_addr(s[:i])
    if a is None or a.zone:
        return None
    bits = s[i + 1 :]
    if len(bits) > 1 and not ("1" <= bits[0] <= "9"):
        return None
    if len(bits) == 1 and bits[0] == "+":
        return None
    if not bits or not bits.isascii() or not bits.isdigit():
        return None
    n = int(bits)
    if n > a.bit_len:
        return None
    return Prefix(a, n)
