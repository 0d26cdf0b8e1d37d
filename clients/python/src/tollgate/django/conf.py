"""The ``TOLLGATE_*`` settings, read once and checked.

:func:`get` returns them as a frozen :class:`Settings`, built on first use
and again after a test's ``override_settings``; a mistake raises
``ImproperlyConfigured`` naming the setting (never its value), and
``manage.py check`` reports it before the first request does.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from django.conf import settings as django_settings  # type: ignore[import]
from django.core.exceptions import ImproperlyConfigured  # type: ignore[import]

from ..client import DEFAULT_BREACHED_TIMEOUT, DEFAULT_TIMEOUT, STEP_UP_FLOW, Client
from ..clientip import HEADER_FORWARDED, HEADER_X_FORWARDED_FOR, Proxies
from ..cookie import DEFAULT_DEVICE_COOKIE_MAX_AGE, DEFAULT_DEVICE_COOKIE_NAME, MAX_DEVICE_COOKIE_AGE, _is_token
from ..failmode import FailMode, coerce_mode
from ..respond import Responder

__all__ = ["Settings", "get", "reset", "MIN_FINGERPRINT_KEY_BYTES", "CHALLENGE_KINDS"]

#: The shortest TOLLGATE_FINGERPRINT_KEY: 32 bytes, the HMAC-SHA-256 key
#: length below which a key adds nothing a guess could not.
MIN_FINGERPRINT_KEY_BYTES = 32
#: What TOLLGATE_CHALLENGE may name: tollgate's proof of work, or a provider
#: tollgate verifies (configured in tollgate, with its secret).
CHALLENGE_KINDS = ("pow", "turnstile", "hcaptcha", "recaptcha")
#: The device cookie's name without Secure (development over plain HTTP):
#: a ``__Host-`` cookie must be Secure.
INSECURE_DEVICE_COOKIE_NAME = "tollgate-device"


@dataclass(frozen=True)
class Settings:
    """The plug-in's settings, as read from Django's."""

    #: TOLLGATE_ENABLED: False turns every piece off (a test run, as
    #: AXES_ENABLED = False does). The default is True.
    enabled: bool
    #: TOLLGATE_URL: where tollgate's API listens. Required.
    url: str
    #: TOLLGATE_TOKEN: the bearer token of tollgate's auth (scope verdicts).
    #: The default is None: no token.
    token: Optional[str]
    #: TOLLGATE_TIMEOUT: seconds each call to tollgate may take before the
    #: fail mode answers. The default is 0.25.
    timeout: float
    #: TOLLGATE_FLOW: the flow of every check and report. The default is
    #: "login".
    flow: str
    #: TOLLGATE_FAIL_MODE: "open", "delay" or "captcha", the answer while
    #: tollgate is unavailable. The default is "delay".
    fail: FailMode
    #: TOLLGATE_FINGERPRINT_KEY: the HMAC key of the password fingerprints,
    #: at least 32 bytes, the same on every instance. Required.
    fingerprint_key: bytes
    #: TOLLGATE_PROXIES and TOLLGATE_PROXY_HEADER: your own reverse proxies
    #: and the one header they write. The default trusts none: the
    #: connection's peer is the client.
    proxies: Proxies
    #: TOLLGATE_DEVICE_COOKIE["name"]: the default is
    #: "__Host-tollgate-device", or "tollgate-device" when not secure.
    cookie_name: str
    #: TOLLGATE_DEVICE_COOKIE["max_age"]: seconds; the default is 90 days.
    cookie_max_age: int
    #: TOLLGATE_DEVICE_COOKIE["secure"]: False only for development over
    #: plain HTTP. The default is True.
    cookie_secure: bool
    #: TOLLGATE_CHALLENGE: the challenge a captcha verdict shows a form's
    #: submitter ("pow", "turnstile", "hcaptcha", "recaptcha"), or None for
    #: a plain 429. The default is "pow".
    challenge: Optional[str]
    #: TOLLGATE_CHALLENGE_CACHE: the Django cache that holds a sealed
    #: submission across its challenge; shared by every process of the
    #: site. The default is "default".
    challenge_cache: str
    #: TOLLGATE_CHALLENGE_TTL: seconds a held submission waits for its
    #: solution. The default is 300.
    challenge_ttl: int
    #: TOLLGATE_DELAY_TEMPLATE: a template rendered for a delayed browser,
    #: with retry_after (seconds) as its only variable. The default is None:
    #: a built-in page.
    delay_template: Optional[str]
    #: TOLLGATE_ACCOUNT_FIELDS: the credentials' keys that name the account,
    #: the first present wins. The default is "username", the user model's
    #: USERNAME_FIELD, then "email".
    account_fields: Tuple[str, ...]
    #: TOLLGATE_BREACHED: ask tollgate's breached-password range
    #: (k-anonymously: five hex digits of the password's SHA-1) for each
    #: attempt tollgate let through, and report what it says; False asks
    #: nothing and reports every password as not breached. The default is
    #: True (a tollgate without a corpus answers 404: not breached).
    breached: bool
    #: TOLLGATE_BREACHED_TIMEOUT: seconds the range may take; past them the
    #: password is not known to be breached and the login goes on. The
    #: default is 1.0.
    breached_timeout: float
    #: TOLLGATE_STEP_UP_HOOK: the callable (or its dotted path) that a
    #: success answered step_up is handed to, as hook(request, user,
    #: step_up), returning the browser's response (tollgate.django.stepup).
    #: The default is "tollgate.django.stepup.email_code": a 6-digit code by
    #: Django's send_mail.
    step_up_hook: Callable[..., Any]
    #: TOLLGATE_STEP_UP_PATH: the path at which the middleware serves the
    #: code page (no URL to add). The default is "/tollgate/step-up/".
    step_up_path: str
    #: TOLLGATE_STEP_UP_FLOW: the flow of the second factor's checks and
    #: reports. The default is "step_up".
    step_up_flow: str
    #: The client, built from url, token and timeout; shared by threads.
    client: Client
    #: The answers of a blocked attempt: an RFC 9457 problem for an API
    #: client, a page for a browser.
    responder: Responder
    html_responder: Responder


_lock = threading.Lock()
_cached: Dict[str, Settings] = {}


def get() -> Settings:
    """The settings, read on first use. Raises ImproperlyConfigured."""
    s = _cached.get("s")
    if s is not None:
        return s
    with _lock:
        s = _cached.get("s")
        if s is None:
            s = _read(django_settings)
            _cached["s"] = s
        return s


def reset(**kwargs: Any) -> None:
    """Forget the settings read (a receiver of Django's setting_changed)."""
    setting = kwargs.get("setting")
    if setting is not None and not str(setting).startswith("TOLLGATE_") and setting != "AUTH_USER_MODEL":
        return
    with _lock:
        old = _cached.pop("s", None)
    if old is not None:
        old.client.close()


def _setting(s: Any, name: str, default: Any) -> Any:
    return getattr(s, name, default)


def _read(s: Any) -> Settings:
    enabled = _setting(s, "TOLLGATE_ENABLED", True)
    if not isinstance(enabled, bool):
        raise ImproperlyConfigured("TOLLGATE_ENABLED must be True or False")
    url = _setting(s, "TOLLGATE_URL", None)
    if not isinstance(url, str) or not url:
        raise ImproperlyConfigured("TOLLGATE_URL is required: where tollgate's API listens, such as http://127.0.0.1:8080")
    token = _setting(s, "TOLLGATE_TOKEN", None)
    if token is not None and not isinstance(token, str):
        raise ImproperlyConfigured("TOLLGATE_TOKEN must be a string or None")
    timeout = _setting(s, "TOLLGATE_TIMEOUT", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ImproperlyConfigured("TOLLGATE_TIMEOUT must be a positive number of seconds")
    flow = _setting(s, "TOLLGATE_FLOW", "login")
    if not isinstance(flow, str) or not flow:
        raise ImproperlyConfigured("TOLLGATE_FLOW must be a flow's name")
    try:
        fail = coerce_mode(_setting(s, "TOLLGATE_FAIL_MODE", FailMode.DELAY))
    except ValueError:
        raise ImproperlyConfigured('TOLLGATE_FAIL_MODE must be "open", "delay" or "captcha"') from None
    key = _fingerprint_key(_setting(s, "TOLLGATE_FINGERPRINT_KEY", None))
    proxies = _proxies(_setting(s, "TOLLGATE_PROXIES", ()), _setting(s, "TOLLGATE_PROXY_HEADER", HEADER_X_FORWARDED_FOR))
    name, max_age, secure = _cookie(_setting(s, "TOLLGATE_DEVICE_COOKIE", {}))
    challenge = _setting(s, "TOLLGATE_CHALLENGE", "pow")
    if challenge is not None and challenge not in CHALLENGE_KINDS:
        raise ImproperlyConfigured("TOLLGATE_CHALLENGE must be one of %s, or None" % ", ".join(CHALLENGE_KINDS))
    cache = _setting(s, "TOLLGATE_CHALLENGE_CACHE", "default")
    if not isinstance(cache, str) or cache not in _setting(s, "CACHES", {"default": {}}):
        raise ImproperlyConfigured("TOLLGATE_CHALLENGE_CACHE must name one of CACHES")
    ttl = _setting(s, "TOLLGATE_CHALLENGE_TTL", 300)
    if isinstance(ttl, bool) or not isinstance(ttl, int) or not 10 <= ttl <= 3600:
        raise ImproperlyConfigured("TOLLGATE_CHALLENGE_TTL must be whole seconds from 10 to 3600")
    template = _setting(s, "TOLLGATE_DELAY_TEMPLATE", None)
    if template is not None and (not isinstance(template, str) or not template):
        raise ImproperlyConfigured("TOLLGATE_DELAY_TEMPLATE must be a template name or None")
    fields = _setting(s, "TOLLGATE_ACCOUNT_FIELDS", None)
    if fields is None:
        fields = _default_account_fields(s)
    if isinstance(fields, str) or not fields or not all(isinstance(f, str) and f for f in fields):
        raise ImproperlyConfigured("TOLLGATE_ACCOUNT_FIELDS must be a list of credential names")
    breached = _setting(s, "TOLLGATE_BREACHED", True)
    if not isinstance(breached, bool):
        raise ImproperlyConfigured("TOLLGATE_BREACHED must be True or False")
    btimeout = _setting(s, "TOLLGATE_BREACHED_TIMEOUT", DEFAULT_BREACHED_TIMEOUT)
    if isinstance(btimeout, bool) or not isinstance(btimeout, (int, float)) or not 0 < btimeout <= 10:
        raise ImproperlyConfigured("TOLLGATE_BREACHED_TIMEOUT must be a number of seconds above 0, at most 10")
    hook = _hook(_setting(s, "TOLLGATE_STEP_UP_HOOK", "tollgate.django.stepup.email_code"))
    step_up_path = _setting(s, "TOLLGATE_STEP_UP_PATH", "/tollgate/step-up/")
    if not isinstance(step_up_path, str) or not step_up_path.startswith("/") or step_up_path.startswith("//") \
            or not step_up_path.isascii() or not step_up_path.isprintable() or any(c in step_up_path for c in "?# "):
        raise ImproperlyConfigured("TOLLGATE_STEP_UP_PATH must be a path of this site, starting with one slash")
    step_up_flow = _setting(s, "TOLLGATE_STEP_UP_FLOW", STEP_UP_FLOW)
    if not isinstance(step_up_flow, str) or not step_up_flow:
        raise ImproperlyConfigured("TOLLGATE_STEP_UP_FLOW must be a flow's name")
    try:
        client = Client(url, token=token or None, timeout=float(timeout))
    except ValueError as e:
        raise ImproperlyConfigured("TOLLGATE_URL or TOLLGATE_TOKEN: %s" % e) from None
    from .pages import captcha_page, delay_page

    policy = flow if len(flow) <= 64 and flow.isascii() and flow.isprintable() else "login"
    responder = Responder(policy=policy)
    html_responder = Responder(policy=policy, delay=lambda secs: delay_page(template, secs), captcha=captcha_page)
    return Settings(
        enabled=enabled, url=url, token=token or None, timeout=float(timeout), flow=flow, fail=fail,
        fingerprint_key=key, proxies=proxies, cookie_name=name, cookie_max_age=max_age, cookie_secure=secure,
        challenge=challenge, challenge_cache=cache, challenge_ttl=ttl, delay_template=template,
        account_fields=tuple(dict.fromkeys(fields)), breached=breached, breached_timeout=float(btimeout),
        step_up_hook=hook, step_up_path=step_up_path, step_up_flow=step_up_flow, client=client,
        responder=responder, html_responder=html_responder,
    )


def _hook(hook: Any) -> Callable[..., Any]:
    if isinstance(hook, str):
        from django.utils.module_loading import import_string  # type: ignore[import]

        try:
            hook = import_string(hook)
        except ImportError:
            raise ImproperlyConfigured("TOLLGATE_STEP_UP_HOOK names nothing that can be imported") from None
    if not callable(hook):
        raise ImproperlyConfigured("TOLLGATE_STEP_UP_HOOK must be a callable or its dotted path")
    return hook  # type: ignore[no-any-return]


def _fingerprint_key(key: Any) -> bytes:
    if isinstance(key, str):
        key = key.encode("utf-8")
    if not isinstance(key, bytes) or len(key) < MIN_FINGERPRINT_KEY_BYTES:
        raise ImproperlyConfigured(
            "TOLLGATE_FINGERPRINT_KEY is required: a random secret of at least %d bytes, the same on every "
            "instance, kept out of the repository (python3 -c 'import secrets; print(secrets.token_urlsafe(32))')"
            % MIN_FINGERPRINT_KEY_BYTES)
    return key


def _proxies(trusted: Any, header: Any) -> Proxies:
    if isinstance(trusted, str):
        raise ImproperlyConfigured("TOLLGATE_PROXIES must be a list of CIDR prefixes, not one string")
    if header not in (HEADER_X_FORWARDED_FOR, HEADER_FORWARDED):
        raise ImproperlyConfigured('TOLLGATE_PROXY_HEADER must be "X-Forwarded-For" or "Forwarded"')
    try:
        return Proxies(trusted=list(trusted or ()), header=header)
    except (TypeError, ValueError) as e:
        raise ImproperlyConfigured("TOLLGATE_PROXIES: %s" % e) from None


def _cookie(c: Any) -> Tuple[str, int, bool]:
    if not isinstance(c, Mapping) or set(c) - {"name", "max_age", "secure"}:
        raise ImproperlyConfigured('TOLLGATE_DEVICE_COOKIE must be a dict of "name", "max_age" and "secure"')
    secure = c.get("secure", True)
    if not isinstance(secure, bool):
        raise ImproperlyConfigured('TOLLGATE_DEVICE_COOKIE["secure"] must be True or False')
    name = c.get("name", DEFAULT_DEVICE_COOKIE_NAME if secure else INSECURE_DEVICE_COOKIE_NAME)
    if not isinstance(name, str) or not _is_token(name):
        raise ImproperlyConfigured('TOLLGATE_DEVICE_COOKIE["name"] must be a cookie name')
    # __Host- keeps a sibling subdomain or a plain-HTTP attacker from
    # planting the cookie; browsers take such a cookie only when Secure.
    if secure and not name.startswith("__Host-"):
        raise ImproperlyConfigured('TOLLGATE_DEVICE_COOKIE["name"] must start with __Host- when secure')
    if not secure and name.startswith(("__Host-", "__Secure-")):
        raise ImproperlyConfigured('TOLLGATE_DEVICE_COOKIE: a __Host- or __Secure- name needs secure')
    max_age = c.get("max_age", DEFAULT_DEVICE_COOKIE_MAX_AGE)
    if isinstance(max_age, bool) or not isinstance(max_age, int) or not 1 <= max_age <= MAX_DEVICE_COOKIE_AGE:
        raise ImproperlyConfigured('TOLLGATE_DEVICE_COOKIE["max_age"] must be whole seconds from 1 to 400 days')
    return name, max_age, secure


def _default_account_fields(s: Any) -> Tuple[str, ...]:
    from django.contrib.auth import get_user_model  # type: ignore[import]

    try:
        field = str(get_user_model().USERNAME_FIELD)
    except Exception:  # no user model yet (settings read before the apps): the common case
        field = "username"
    return ("username", field, "email")
