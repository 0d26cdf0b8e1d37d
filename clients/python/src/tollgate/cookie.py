"""The device cookie (api/client/cookie.go).

The device token a successful report returns lets its device skip the IP
rules and keep an allowance of failed logins of its own. :class:`DeviceCookie`
keeps it in a cookie named with the ``__Host-`` prefix, ``Path=/``,
``Secure``, ``HttpOnly``, ``SameSite=Lax``, no ``Domain`` and a ``Max-Age``:
browsers accept such a cookie only from a secure origin, for the whole host,
so neither a sibling subdomain nor a plain-HTTP attacker can plant or
overwrite one, and scripts cannot read it. Browsers treat
http://localhost as secure, so it works in development there.

The token is a bearer credential for its device's own allowance: never log
it or put it in a URL.
"""

from __future__ import annotations

from typing import Iterable, List, Optional, Tuple, Union

__all__ = ["DeviceCookie", "DEFAULT_DEVICE_COOKIE_NAME", "DEFAULT_DEVICE_COOKIE_MAX_AGE"]

#: The device cookie's default name.
DEFAULT_DEVICE_COOKIE_NAME = "__Host-tollgate-device"
#: The default Max-Age in seconds: 90 days, the built-in device_token_ttl.
DEFAULT_DEVICE_COOKIE_MAX_AGE = 90 * 24 * 3600
#: The longest Max-Age browsers keep: 400 days.
MAX_DEVICE_COOKIE_AGE = 400 * 24 * 3600
#: The longest device token, as tollgate caps it.
MAX_DEVICE_TOKEN_BYTES = 1024
#: Go's net/http reads no cookie of a request with more than this many.
_MAX_COOKIES = 3000

_TCHARS = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_ASCII_SPACE = " \t\n\r"


def _is_token(s: str) -> bool:
    return bool(s) and all(c in _TCHARS for c in s)


def _valid_device_token(s: str) -> bool:
    """1 to 1024 RFC 6265 cookie-octets."""
    if not s or len(s.encode("utf-8", "surrogatepass")) > MAX_DEVICE_TOKEN_BYTES:
        return False
    return all(0x20 < ord(c) < 0x7F and c not in '",;\\' for c in s)


def _valid_cookie_value_byte(c: str) -> bool:
    o = ord(c)
    return 0x20 <= o < 0x7F and c not in '";\\'


class DeviceCookie:
    """Keeps tollgate's device token in a ``__Host-`` cookie.

    Args:
        name: the cookie's name: "__Host-" and RFC 9110 token characters.
            Give each device_trust group of flows a cookie of its own.
        max_age: how long the browser keeps the cookie after it was last
            set, in seconds from 1 to 400 days (fractions are dropped).
            Match it to the flow's device_token_ttl; the default is 90 days.

    Raises:
        ValueError: the name or max_age cannot be used.

    A DeviceCookie is immutable and safe to share between threads.
    """

    __slots__ = ("_name", "_max_age")

    def __init__(self, name: str = DEFAULT_DEVICE_COOKIE_NAME, max_age: Union[int, float] = DEFAULT_DEVICE_COOKIE_MAX_AGE) -> None:
        if not isinstance(name, str) or not name.startswith("__Host-") or not _is_token(name[len("__Host-"):]):
            raise ValueError("device cookie: name must be __Host- and token characters")
        if isinstance(max_age, bool) or not isinstance(max_age, (int, float)) or not (1 <= max_age <= MAX_DEVICE_COOKIE_AGE):
            raise ValueError("device cookie: max_age must be from 1 second to 400 days")
        self._name = name
        self._max_age = int(max_age)

    @property
    def name(self) -> str:
        """The cookie's name."""
        return self._name

    @property
    def max_age(self) -> int:
        """The cookie's Max-Age in seconds."""
        return self._max_age

    def __repr__(self) -> str:
        return "DeviceCookie(name=%r, max_age=%r)" % (self._name, self._max_age)

    def set_cookie(self, token: Optional[str]) -> Optional[str]:
        """The Set-Cookie field value that stores token:
        ``<name>=<token>; Path=/; Max-Age=<s>; HttpOnly; Secure; SameSite=Lax``.

        None for an empty token (a report that returned none), so every
        report's device_token can be passed. Raises ValueError for a token
        over 1024 bytes or with characters a cookie cannot carry.
        """
        if not token:
            return None
        if not isinstance(token, str) or not _valid_device_token(token):
            raise ValueError("device cookie: the token is too long or not cookie-safe")
        return self._cookie(token, self._max_age)

    def clear_cookie(self) -> str:
        """The Set-Cookie field value that deletes the cookie: an empty
        value, Max-Age=0 and the attributes set_cookie uses (browsers only
        accept a ``__Host-`` cookie, even to delete it, with Path=/ and
        Secure)."""
        return self._cookie("", 0)

    def _cookie(self, value: str, max_age: int) -> str:
        age = "; Max-Age=%d" % max_age if max_age > 0 else "; Max-Age=0"
        return self._name + "=" + value + "; Path=/" + age + "; HttpOnly; Secure; SameSite=Lax"

    def token(self, cookie_header: Union[None, str, Iterable[str]]) -> str:
        """The device token the request's Cookie header holds (the first, if
        it sends several), or "" when there is none or it is malformed:
        quoted, empty, over 1024 bytes or with characters a cookie cannot
        carry. It never raises: send "" as no token; tollgate verifies it.

        cookie_header is the Cookie field value (WSGI's ``HTTP_COOKIE``),
        or a list of field lines, or None.
        """
        if cookie_header is None:
            return ""
        lines: List[str] = [cookie_header] if isinstance(cookie_header, str) else [
            line for line in cookie_header if isinstance(line, str)]
        if not lines:
            return ""
        for value, quoted in _read_cookies(lines, self._name):
            if quoted or not _valid_device_token(value):
                return ""
            return value
        return ""


def _read_cookies(lines: List[str], name: str) -> List[Tuple[str, bool]]:
    """The (value, quoted) of each cookie called name, as Go's net/http
    reads a request's cookies."""
    if sum(line.count(";") + 1 for line in lines) > _MAX_COOKIES:
        return []
    out: List[Tuple[str, bool]] = []
    for line in lines:
        line = line.strip(_ASCII_SPACE)
        while line:
            part, _, line = line.partition(";")
            part = part.strip(_ASCII_SPACE)
            if not part:
                continue
            key, _, val = part.partition("=")
            key = key.strip(_ASCII_SPACE)
            if not _is_token(key) or key != name:
                continue
            quoted = False
            if len(val) > 1 and val[0] == '"' and val[-1] == '"':
                val = val[1:-1]
                quoted = True
            if not all(_valid_cookie_value_byte(c) for c in val):
                continue
            out.append((val, quoted))
    return out
