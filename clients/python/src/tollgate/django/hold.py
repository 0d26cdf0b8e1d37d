"""A form submission held sealed across its challenge.

A captcha verdict stops a login form's post before any password check; the
end user should not have to type it all again once the challenge is
solved. The submission (the form's fields, the password among them) is
kept on the server, in a Django cache shared by the site's processes,
under a random handle that only the challenge page holds, and is given back
once, to the post of a solved challenge that names the handle.

It is sealed under a key derived from the handle and Django's SECRET_KEY,
so neither a copy of the cache (a database or Memcached cache included)
nor the secret alone reads it, and the cache key is a hash of the handle.
The standard library has no block cipher: the seal is HMAC-SHA-256 in
counter mode for the keystream and an HMAC-SHA-256 tag over the binding
and the ciphertext (encrypt-then-MAC). Each key seals one submission, so a
keystream is never reused. The binding ties the submission to the path it
was posted to, the challenge issued for it and the browser's CSRF cookie:
a handle that leaks is no use elsewhere or to another browser.

The page never holds the submission: the server never echoes a password
into HTML, sealed or not.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Any, Optional, Tuple

__all__ = ["new_handle", "put", "peek", "take", "MAX_HELD_BYTES"]

#: The largest submission held: a login form is far smaller; a bigger post
#: gets no challenge page.
MAX_HELD_BYTES = 16 << 10
_TAG = 32
_PREFIX = "tollgate:hold:"


def new_handle() -> str:
    """A fresh handle: 256 random bits, URL-safe."""
    return secrets.token_urlsafe(32)


def _keys(secret: bytes, handle: str) -> Tuple[bytes, bytes]:
    k = hmac.new(secret, b"tollgate.django hold\x00" + handle.encode("ascii"), hashlib.sha256).digest()
    return hmac.new(k, b"enc", hashlib.sha256).digest(), hmac.new(k, b"mac", hashlib.sha256).digest()


def _stream(key: bytes, data: bytes) -> bytes:
    out = bytearray(len(data))
    for block in range(0, len(data), 32):
        ks = hmac.new(key, block.to_bytes(8, "big"), hashlib.sha256).digest()
        for i, b in enumerate(data[block:block + 32]):
            out[block + i] = b ^ ks[i]
    return bytes(out)


def _cache_key(handle: str) -> str:
    return _PREFIX + hashlib.sha256(handle.encode("ascii")).hexdigest()


def _well_formed(handle: str) -> bool:
    return 40 <= len(handle) <= 64 and all(c.isascii() and (c.isalnum() or c in "-_") for c in handle)


def put(cache: Any, secret: bytes, handle: str, binding: bytes, body: bytes, ttl: int) -> bool:
    """Hold body sealed under handle for ttl seconds; False when it is too
    large to hold or the cache refused it."""
    if len(body) > MAX_HELD_BYTES or not _well_formed(handle):
        return False
    enc, mac = _keys(secret, handle)
    sealed = _stream(enc, body)
    tag = hmac.new(mac, binding + b"\x00" + sealed, hashlib.sha256).digest()
    try:
        cache.set(_cache_key(handle), sealed + tag, timeout=ttl)
    except Exception:  # a cache that does not answer: no challenge page, a plain answer
        return False
    return True


def peek(cache: Any, secret: bytes, handle: str, binding: bytes) -> Optional[bytes]:
    """The submission held under handle for binding, left held; None when
    there is none, it expired, or it was held for another path, challenge or
    browser."""
    if not _well_formed(handle):
        return None
    try:
        blob = cache.get(_cache_key(handle))
    except Exception:
        return None
    if not isinstance(blob, bytes) or len(blob) < _TAG:
        return None
    sealed, tag = blob[:-_TAG], blob[-_TAG:]
    enc, mac = _keys(secret, handle)
    if not hmac.compare_digest(tag, hmac.new(mac, binding + b"\x00" + sealed, hashlib.sha256).digest()):
        return None
    return _stream(enc, sealed)


def take(cache: Any, secret: bytes, handle: str, binding: bytes) -> Optional[bytes]:
    """As peek, and the submission is no longer held: it is given out once."""
    body = peek(cache, secret, handle, binding)
    if body is not None:
        try:
            cache.delete(_cache_key(handle))
        except Exception:
            pass  # it expires with its ttl; the challenge it was bound to is spent already
    return body
