"""The end user's address behind your reverse proxies (api/client/clientip.go).

tollgate counts the end user's address, so the caller must send the real
one, not its proxy's. :class:`Proxies` reads the one forwarding header your
own proxies write, and only on connections from them, since forwarding
headers are otherwise the client's to choose; it walks the header from the
right and answers the first hop that is not one of your proxies.

Security: the answer is only as good as the configuration. ``trusted``
must hold only proxies you run (or your CDN's published ranges), each
appending the peer it saw to ``header``, and every path to the service must
go through them. When a client makes the header unreadable the answer is
the proxy's own address, so never put your proxies' or internal ranges on
an allow list.
"""

from __future__ import annotations

import ipaddress
from typing import Any, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _netip

__all__ = ["Proxies", "client_ip", "HEADER_FORWARDED", "HEADER_X_FORWARDED_FOR", "Headers"]

#: RFC 7239's Forwarded, read for its for= parameters.
HEADER_FORWARDED = "Forwarded"
#: The de facto X-Forwarded-For.
HEADER_X_FORWARDED_FOR = "X-Forwarded-For"

#: The longest Forwarded field line read (nginx's default header line limit).
MAX_FORWARDED_LINE = 8 << 10

#: A request's header fields: (name, value) field lines in order, or a
#: mapping such as a WSGI environ (``HTTP_X_FORWARDED_FOR``) or a dict of
#: name to a value or a list of values, or an object with ``get_all`` (an
#: :class:`email.message.Message`, as http.server gives) or ``getlist``
#: (Werkzeug's and Starlette's header objects).
Headers = Union[Iterable[Tuple[str, str]], Mapping[str, Any], Any]

TrustedPrefix = Union[str, ipaddress.IPv4Network, ipaddress.IPv6Network]

_TCHARS = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_ALNUM = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


class Proxies:
    """Resolves the end user's address of a request that may have come
    through trusted reverse proxies. ``Proxies()`` trusts no proxy and
    answers the connection's peer. A Proxies is immutable and safe to share
    between threads.

    Args:
        trusted: the address ranges of your own reverse proxies and load
            balancers (CIDR strings such as "10.0.0.0/8", or
            :mod:`ipaddress` networks): only a request whose connection
            comes from one of them has its header read. IPv4-mapped IPv6
            prefixes are taken as the IPv4 prefix; a prefix of length 0
            (every address) is refused.
        header: the one forwarding header those proxies write, appending
            the peer they saw: :data:`HEADER_X_FORWARDED_FOR` or
            :data:`HEADER_FORWARDED`. The other is never read: a proxy
            passes through whatever a client sends in a header it does not
            manage. Required with ``trusted``.

    Raises:
        ValueError: a prefix is not one, trusts every address or mixes
            IPv4-mapped and IPv6 addresses; ``trusted`` without a header;
            an unknown header.
    """

    __slots__ = ("_trusted", "_header", "_xff")

    def __init__(self, trusted: Sequence[TrustedPrefix] = (), header: Optional[str] = None) -> None:
        if isinstance(trusted, (str, bytes)):
            raise TypeError("trusted must be a list of prefixes, not one string")
        prefixes: List[_netip.Prefix] = []
        for item in trusted:
            text = str(item) if isinstance(item, (ipaddress.IPv4Network, ipaddress.IPv6Network)) else item
            if not isinstance(text, str):
                raise TypeError("a trusted prefix must be a CIDR string or an ipaddress network")
            pf = _netip.parse_prefix(text)
            if pf is None:
                raise ValueError("proxies: invalid trusted prefix")
            if pf.addr.is4in6:
                if pf.bits < 96:
                    raise ValueError("proxies: trusted prefix %s mixes IPv4-mapped and IPv6 addresses" % (pf,))
                pf = _netip.Prefix(pf.addr.unmap(), pf.bits - 96)
            if pf.bits == 0:
                raise ValueError(
                    "proxies: trusted prefix %s trusts every address, letting any client choose its IP" % (pf,))
            prefixes.append(pf.masked())
        if header is None:
            if prefixes:
                raise ValueError("proxies: trusted needs the header those proxies write")
            self._header = ""
        elif isinstance(header, str) and header.lower() == HEADER_FORWARDED.lower():
            self._header = HEADER_FORWARDED
        elif isinstance(header, str) and header.lower() == HEADER_X_FORWARDED_FOR.lower():
            self._header = HEADER_X_FORWARDED_FOR
        else:
            raise ValueError("proxies: unknown header (want X-Forwarded-For, Forwarded or None)")
        self._trusted = tuple(prefixes)
        self._xff = self._header == HEADER_X_FORWARDED_FOR

    @property
    def header(self) -> Optional[str]:
        """The header read, or None."""
        return self._header or None

    @property
    def trusted(self) -> Tuple[str, ...]:
        """The trusted prefixes, masked, in Go's text form."""
        return tuple(str(p) for p in self._trusted)

    def __repr__(self) -> str:
        return "Proxies(trusted=%r, header=%r)" % (list(self.trusted), self.header)

    def _is_trusted(self, a: _netip.Addr) -> bool:
        return any(p.contains(a) for p in self._trusted)

    def client_ip(self, remote_addr: Optional[str], headers: Headers = ()) -> str:
        """The end user's address, in canonical text (Go's netip form),
        never with a zone or IPv4-mapped; "" when the peer is no address.

        * The peer is remote_addr's address ("ip", "ip:port",
          "[ip%zone]:port"; port and zone dropped, unmapped), such as
          WSGI's ``REMOTE_ADDR``.
        * When it is not a trusted proxy, it is the answer: no header is
          read at all.
        * Otherwise the configured header's entries are walked from the
          right (every field line in order, each a comma-separated list,
          empty entries skipped), and the first that is not a trusted proxy
          is the answer.
        * An entry that is not an address (unparsable, "unknown", an
          obfuscated "_hidden", a Forwarded element without for= or with
          two, an address with a zone, an unquoted or unbracketed IPv6 in
          Forwarded, or a Forwarded line that is not RFC 7239 syntax or is
          over 8 KiB) stops the walk: the answer is the trusted hop that
          wrote it.
        * When every entry is trusted, or there is none, the answer is the
          left-most trusted hop.
        """
        peer = _remote_addr(remote_addr)
        if peer is None:
            return ""
        if not self._header or not self._is_trusted(peer):
            return str(peer)
        lines = _field_lines(headers, self._header)
        addr = peer
        for line in reversed(lines):
            if self._xff:
                rest = line
                while rest:
                    j = rest.rfind(",")
                    if j >= 0:
                        entry, rest = rest[j + 1 :], rest[:j]
                    else:
                        entry, rest = rest, ""
                    entry = entry.strip(" \t")
                    if not entry:
                        continue
                    a = _parse_node(entry, True)
                    if a is None:
                        return str(addr)
                    addr = a
                    if not self._is_trusted(a):
                        return str(addr)
                continue
            fors = _forwarded_fors(line)
            if fors is None:
                return str(addr)
            for value in reversed(fors):
                a = _parse_node(value, False)
                if a is None:
                    return str(addr)
                addr = a
                if not self._is_trusted(a):
                    return str(addr)
        return str(addr)


def client_ip(remote_addr: Optional[str], headers: Headers, proxies: Optional[Proxies]) -> str:
    """``proxies.client_ip(remote_addr, headers)``; with proxies None, the
    peer's address. See :meth:`Proxies.client_ip`."""
    if proxies is None:
        proxies = _NO_PROXIES
    return proxies.client_ip(remote_addr, headers)


def _as_bytes_text(s: Any) -> str:
    """s as Go sees it: one character a byte (latin-1 text, as WSGI and
    http.server give header values; other text as its UTF-8)."""
    if isinstance(s, (bytes, bytearray)):
        return bytes(s).decode("latin-1")
    text: str = s if isinstance(s, str) else str(s)
    try:
        text.encode("latin-1")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("latin-1")


def _field_lines(headers: Headers, name: str) -> List[str]:
    """The values of header name's field lines, in order."""
    if headers is None:
        return []
    lname = name.lower()
    environ = "HTTP_" + name.upper().replace("-", "_")
    values: List[Any] = []
    get_all = getattr(headers, "get_all", None)
    getlist = getattr(headers, "getlist", None)
    if callable(get_all):
        values = list(get_all(name) or [])
    elif callable(getlist):
        values = list(getlist(name) or [])
    elif isinstance(headers, Mapping):
        for key, value in headers.items():
            if not isinstance(key, str) or (key.lower() != lname and key != environ):
                continue
            if isinstance(value, (list, tuple)):
                values.extend(value)
            else:
                values.append(value)
    else:
        for pair in headers:
            key, value = pair
            if isinstance(key, bytes):
                key = key.decode("latin-1")
            if key.lower() == lname:
                values.append(value)
    return [_as_bytes_text(v) for v in values if v is not None]


def _remote_addr(s: Optional[str]) -> Optional[_netip.Addr]:
    if not s:
        return None
    s = _as_bytes_text(s)
    a = _netip.parse_addr_port(s)
    if a is None:
        a = _netip.parse_addr(s)
        if a is None:
            return None
    return a.without_zone().unmap()


def _is_port(s: str, xff: bool) -> bool:
    if len(s) < 2 or s[0] != ":":
        return False
    s = s[1:]
    if not xff and s[0] == "_":
        return len(s) > 1 and all(c in _ALNUM or c in "._-" for c in s[1:])
    if len(s) > 5:
        return False
    return all("0" <= c <= "9" for c in s)


def _parse_node(s: str, xff: bool) -> Optional[_netip.Addr]:
    """One hop: an X-Forwarded-For entry, or a Forwarded for= value
    unquoted; the unmapped address, or None for anything else."""
    if s.startswith("["):
        end = s.find("]")
        if end < 0:
            return None
        host = s[1:end]
        rest = s[end + 1 :]
        if rest and not _is_port(rest, xff):
            return None
        a = _netip.parse_addr(host)
        if a is None or not a.is6 or a.zone:
            return None
        return a.unmap()
    if xff and s.count(":") > 1:  # bare IPv6
        a = _netip.parse_addr(s)
        if a is None or a.zone:
            return None
        return a.unmap()
    host = s
    i = s.find(":")
    if i >= 0:
        if not _is_port(s[i:], xff):
            return None
        host = s[:i]
    a = _netip.parse_addr(host)
    if a is None or not a.is4:
        return None
    return a


def _skip_ows(s: str, i: int) -> int:
    while i < len(s) and s[i] in " \t":
        i += 1
    return i


def _quoted_string(s: str, i: int) -> Optional[Tuple[str, int]]:
    out: List[str] = []
    i += 1
    while i < len(s):
        c = s[i]
        o = ord(c)
        if c == '"':
            return "".join(out), i + 1
        if c == "\\":
            i += 1
            if i >= len(s) or (ord(s[i]) < 0x20 and s[i] != "\t") or ord(s[i]) == 0x7F:
                return None
            out.append(s[i])
        elif (o < 0x20 and c != "\t") or o == 0x7F:
            return None
        else:
            out.append(c)
        i += 1
    return None


def _forwarded_fors(line: str) -> Optional[List[str]]:
    """The for= value of each non-empty element of one Forwarded line ("" for
    an element without for= or with two), or None when the line is not valid
    RFC 7239 syntax or longer than MAX_FORWARDED_LINE."""
    if len(line) > MAX_FORWARDED_LINE:
        return None
    fors: List[str] = []
    i = 0
    n = len(line)
    while True:
        i = _skip_ows(line, i)
        value = ""
        nfor = 0
        non_empty = False
        while i < n and line[i] != ",":
            if line[i] == ";":
                non_empty = True
                i = _skip_ows(line, i + 1)
                continue
            start = i
            while i < n and line[i] in _TCHARS:
                i += 1
            name = line[start:i]
            if not name or i >= n or line[i] != "=":
                return None
            i += 1
            if i < n and line[i] == '"':
                q = _quoted_string(line, i)
                if q is None:
                    return None
                v, i = q
            else:
                start = i
                while i < n and line[i] in _TCHARS:
                    i += 1
                v = line[start:i]
                if not v:
                    return None
            non_empty = True
            if name.lower() == "for":
                nfor += 1
                value = v
            i = _skip_ows(line, i)
            if i < n and line[i] != ";" and line[i] != ",":
                return None
        if non_empty:
            fors.append(value if nfor == 1 else "")
        if i >= n:
            return fors
        i += 1  # the ","


_NO_PROXIES = Proxies()
