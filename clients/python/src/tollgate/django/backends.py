"""The authentication backend that asks tollgate first.

List it FIRST in ``AUTHENTICATION_BACKENDS``, before the backends that
check passwords::

    AUTHENTICATION_BACKENDS = ["tollgate.django.backends.TollgateBackend",
                               "django.contrib.auth.backends.ModelBackend"]

It never returns a user. For each ``authenticate(request, **credentials)``
that names an account and a password it asks tollgate's check, for the
account as typed, the client address, the device cookie and the
password's fingerprint; then:

* on ``proceed`` it asks tollgate's breached-password range whether the
  password is breached (k-anonymously; best-effort, an error is "no") and
  returns None, and Django asks the next backends, which check the
  password; the signals report how that ended, with that answer;
* on ``delay`` or ``captcha`` it raises ``PermissionDenied``: Django stops
  asking backends, sends ``user_login_failed`` and returns None, so the
  view answers as for a wrong password and the middleware replaces that
  answer with the 429 or the challenge page. No backend looked at the
  password, and the receiver does not report it as a failure;
* when tollgate refuses the account as an identifier it raises
  ``PermissionDenied`` too, answered as a wrong password.

This is how django-axes' AxesStandaloneBackend stops a locked-out login.
Every account is asked about alike, known or not: the backend never
looks the account up, so an unknown account's answer is a known one's.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import time
from typing import Any, Optional

from django.contrib.auth.backends import BaseBackend  # type: ignore[import]
from django.core.exceptions import PermissionDenied  # type: ignore[import]

from ..errors import TollgateError
from ..failmode import CAPTCHA
from . import conf, state

__all__ = ["TollgateBackend", "RequestRequired", "fingerprint", "device_token", "client_ip"]

log = logging.getLogger("tollgate.django")


class RequestRequired(ValueError):
    """authenticate() was called without the request: the plug-in cannot
    tell the client's address or device, nor answer it. Pass request, as
    django-axes requires too."""


def fingerprint(key: bytes, password: str) -> str:
    """The password's fingerprint as tollgate counts it: hex HMAC-SHA-256
    of its UTF-8 under key (TOLLGATE_FINGERPRINT_KEY), as tollgate's own
    proxy computes it. One password tried on many accounts has one
    fingerprint; without the key it cannot be turned back into the
    password by trying candidates."""
    return hmac.new(key, password.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()


def device_token(request: Any, s: conf.Settings) -> str:
    """The device token of the request's cookie, or ""."""
    value = request.COOKIES.get(s.cookie_name, "")
    if not isinstance(value, str) or not 0 < len(value) <= 1024:
        return ""
    if not all(0x20 < ord(c) < 0x7F and c not in '",;\\' for c in value):
        return ""
    return value


def client_ip(request: Any, s: conf.Settings) -> str:
    """The client's address: REMOTE_ADDR, or behind TOLLGATE_PROXIES the
    first address in their header that is not one of them."""
    meta = request.META
    return s.proxies.client_ip(meta.get("REMOTE_ADDR"), meta)


def _account(credentials: Any, s: conf.Settings) -> Optional[str]:
    for name in s.account_fields:
        v = credentials.get(name)
        if isinstance(v, str) and v:
            return v
    return None


class TollgateBackend(BaseBackend):  # type: ignore[misc]
    """Asks tollgate before the real backends check a password; see the
    module's documentation."""

    def authenticate(self, request: Any, **credentials: Any) -> None:
        """Ask tollgate's check; None lets the next backends run.

        Raises:
            PermissionDenied: tollgate said delay or captcha (or refused the
                account): no backend may check the password now.
            RequestRequired: request is None.
        """
        s = conf.get()
        if not s.enabled:
            return None
        if request is None:
            raise RequestRequired("tollgate.django: authenticate() needs the request (authenticate(request, ...))")
        http = state.http_request(request)
        st = state.of(http)
        account, password = _account(credentials, s), credentials.get("password")
        if account is None or not isinstance(password, str):
            st.attempts.append(state.Attempt(state.SKIPPED))
            return None
        a = state.Attempt(state.OPEN, account=account, ip=client_ip(http, s), device=device_token(http, s),
                          fingerprint=fingerprint(s.fingerprint_key, password))
        st.attempts.append(a)
        solved, st.captcha_solved = st.captcha_solved, False  # one solved challenge, one check
        v = s.client.check(flow=s.flow, account=a.account, ip=a.ip or None, device_token=a.device or None,
                           captcha_solved=solved, password_fingerprint=a.fingerprint, fail=s.fail)
        if v.error is not None:
            if isinstance(v.error, TollgateError) and v.error.field == "account":
                a.status = state.REFUSED
                raise PermissionDenied("tollgate refuses this account as an identifier")
            log.warning("tollgate.django: the check got no verdict (%s); answering %s", v.error, v.action)
        answer = s.responder.respond(v)
        if answer.proceed:
            a.token = v.attempt
            if answer.hold > 0:
                time.sleep(answer.hold)  # a queueing rule's place; it goes ahead without asking again
            if s.breached:
                # Asked now, while the password is at hand (the signals that
                # report never see it), for a success and a failure alike:
                # failures of breached passwords are how tollgate tells
                # credential stuffing. Best-effort: any error is False.
                a.breached = s.client.breached(password, timeout=s.breached_timeout)
            return None
        a.status = state.BLOCKED
        if st.blocked is None:
            st.blocked = v
        raise PermissionDenied("tollgate: %s" % ("captcha" if v.action == CAPTCHA else "delay"))
