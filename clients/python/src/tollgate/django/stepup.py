"""The second factor a ``step_up`` verdict asks for before a login is one.

tollgate answers a login's success report ``step_up`` when the password
was right but should not be enough on its own: it is in a breach corpus,
the account or a new device is under attack, or the address is escalated
(the verdict's reasons). The plug-in then starts **no session**: the
``user_logged_in`` receiver undoes what ``login()`` put in the session
(the session is flushed, ``request.user`` is anonymous again, nothing
after ``login()`` in the view runs) and hands the login to the hook that
``TOLLGATE_STEP_UP_HOOK`` names, whose answer the browser gets.

The default hook, :func:`email_code`, e-mails a 6-digit code with Django's
``send_mail`` (your ``EMAIL_BACKEND`` and ``DEFAULT_FROM_EMAIL``) to the
user's e-mail address and sends the browser to the page the middleware
serves at ``TOLLGATE_STEP_UP_PATH`` (``/tollgate/step-up/``): nothing to
add to your URLs. Each code posted there is

* checked with tollgate on flow ``step_up`` first: a delay is a 429 with
  ``Retry-After``, and the code is not even compared;
* compared in constant time with the code's HMAC kept in the server-side
  session (never the code itself: a signed-cookie session holds nothing a
  browser could read or forge), for :data:`CODE_TTL` seconds at most, and
  spent once even by two posts at once (an atomic add to the
  ``TOLLGATE_CHALLENGE_CACHE`` cache);
* reported ``step_up_passed`` or ``step_up_failed`` with the verdict's
  ticket. A pass signs the user in with the backend that checked the
  password, sets the device cookie from the device token the pass
  returned, and spends the code; :data:`MAX_WRONG_CODES` wrong codes spend
  it too (sign in again for a new one).

A user without an e-mail address cannot get a code: the login is refused
with a page that says why by the reason (a breached password: reset it;
otherwise: reset it or ask the site's administrator), and no session.

A hook of your own (a TOTP app, an SMS) takes ``(request, user, step_up)``
and returns the response for the browser: the :class:`StepUp` is pending
in the session; your page calls :func:`check` before verifying each
answer, then :func:`finish` with whether it passed, whose response (sign-in
and redirect, or the form's next answer) it returns.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
import time
from dataclasses import asdict, dataclass, field
from typing import Any, List, Optional

from django.conf import settings as django_settings  # type: ignore[import]
from django.core.exceptions import PermissionDenied  # type: ignore[import]
from django.http import HttpResponse, HttpResponseRedirect  # type: ignore[import]

from ..errors import TollgateError
from ..failmode import PROCEED, REASON_BREACHED_PASSWORD, Verdict
from . import conf, pages, state

__all__ = ["StepUp", "StepUpRequired", "pending", "check", "finish", "refuse", "email_code", "set_code",
           "verify_code", "CODE_TTL", "MAX_WRONG_CODES", "SESSION_KEY"]

log = logging.getLogger("tollgate.django")

#: Seconds a code is good for: tollgate's step-up ticket is good for the
#: step_up flow's ttl (10 minutes by default) and no longer.
CODE_TTL = 600
#: Wrong codes after which the code is spent: tollgate's step_up flow
#: delays guesses well before, and this bounds them while tollgate is down.
MAX_WRONG_CODES = 5
#: The session key of the pending step-up.
SESSION_KEY = "_tollgate_step_up"


class StepUpRequired(PermissionDenied):  # type: ignore[misc]
    """Raised out of ``login()`` (by the ``user_logged_in`` receiver) when
    tollgate answered step_up: the view stops there, and the middleware
    answers with the hook's response. Without the middleware it is a 403,
    never a session."""


@dataclass
class StepUp:
    """A login waiting for its second factor, kept in the session. It holds
    what the step-up reports and the sign-in need, never the password."""

    #: The user's primary key, as the session keeps it.
    user: str
    #: The backend that checked the password (user.backend).
    backend: str
    #: The account as the login named it, the address and device token.
    account: str
    ip: str
    device: str
    #: The step-up ticket (the step_up verdict's attempt).
    ticket: str
    #: Why tollgate asked (breached_password, account_under_attack, ...).
    reasons: List[str] = field(default_factory=list)
    #: Where the login was going (checked against the host), and where it
    #: was posted, to sign in again.
    next: str = "/"
    login: str = "/"
    #: When it stops being accepted (Unix seconds).
    expires: int = 0
    #: The code's HMAC, or "" before a code was sent.
    mac: str = ""
    #: Wrong codes so far.
    wrong: int = 0
    #: The attempt of this try's step_up check ("" for none): its report
    #: settles the failure that check charged, so a wrong code counts once.
    attempt: str = ""


def pending(request: Any) -> Optional[StepUp]:
    """The request's pending step-up, or None (none, expired, or not one)."""
    d = request.session.get(SESSION_KEY)
    if not isinstance(d, dict):
        return None
    try:
        su = StepUp(**d)
    except TypeError:
        return None
    if su.expires < time.time():
        return None
    return su


def _save(request: Any, su: StepUp) -> None:
    request.session[SESSION_KEY] = asdict(su)


def _drop(request: Any) -> None:
    request.session.pop(SESSION_KEY, None)


def _key() -> bytes:
    return hashlib.sha256(b"tollgate.django step-up code\x00" + str(django_settings.SECRET_KEY).encode("utf-8")).digest()


def _mac(su: StepUp, code: str) -> str:
    msg = b"\x00".join((su.ticket.encode("ascii", "replace"), su.user.encode("utf-8", "surrogatepass"),
                        code.encode("utf-8", "surrogatepass")))
    return hmac.new(_key(), msg, hashlib.sha256).hexdigest()


def set_code(request: Any, su: StepUp, code: str) -> None:
    """Keep code's HMAC (bound to the ticket and the user) as su's code."""
    su.mac, su.wrong = _mac(su, code), 0
    _save(request, su)


def verify_code(su: StepUp, code: str) -> bool:
    """Whether code is su's, compared in constant time."""
    code = "".join(code.split())
    return bool(su.mac) and hmac.compare_digest(_mac(su, code), su.mac)


def begin(request: Any, user: Any, a: state.Attempt, v: Verdict, s: conf.Settings) -> Any:
    """Undo the login() that v answered step_up, keep the pending step-up in
    a fresh session and return the hook's response."""
    from django.contrib.auth.models import AnonymousUser  # type: ignore[import]

    request.session.flush()
    if hasattr(request, "user"):
        request.user = AnonymousUser()
    su = StepUp(user=user._meta.pk.value_to_string(user), backend=str(getattr(user, "backend", "") or ""),
                account=a.account, ip=a.ip, device=a.device, ticket=v.attempt, reasons=list(v.reasons),
                next=_next(request), login=request.get_full_path(), expires=int(time.time()) + CODE_TTL)
    _save(request, su)
    try:
        return s.step_up_hook(request, user, su)
    except Exception as e:  # a hook that fails lets nobody in: no second factor, no session
        log.warning("tollgate.django: the step-up hook failed (%s); the login is refused", type(e).__name__)
        return refuse(request, su)


def _next(request: Any) -> str:
    from django.utils.http import url_has_allowed_host_and_scheme  # type: ignore[import]

    for src in (request.POST, request.GET):
        url = src.get("next", "")
        if url and url_has_allowed_host_and_scheme(url, allowed_hosts={request.get_host()},
                                                   require_https=request.is_secure()):
            return str(url)
    from django.shortcuts import resolve_url  # type: ignore[import]

    return str(resolve_url(getattr(django_settings, "LOGIN_REDIRECT_URL", "/")))


def check(request: Any, su: StepUp) -> Optional[Any]:
    """Ask tollgate's step_up flow whether a code may be tried now: None to
    go ahead, else the 429 (or challenge) answer to return."""
    s = conf.get()
    v = s.client.check(flow=s.step_up_flow, account=su.account, ip=su.ip or None, device_token=su.device or None,
                       fail=s.fail)
    if v.error is not None:
        log.warning("tollgate.django: the step-up check got no verdict (%s); answering %s", v.error, v.action)
    su.attempt = v.attempt or ""
    answer = _responder(request, s).respond(v)
    if answer.proceed:
        return None
    return _response(answer)


def finish(request: Any, su: StepUp, passed: bool) -> Any:
    """Report the second factor's outcome and return the answer: on a pass
    tollgate accepts, the sign-in (login() with the password's backend, the
    device cookie) and a redirect to where the login was going."""
    s = conf.get()
    st = state.of(request)
    if not passed:
        su.wrong += 1
        v = s.client.step_up_failed(ticket=su.ticket, account=su.account, ip=su.ip or None,
                                    device_token=su.device or None, flow=s.step_up_flow, fail=s.fail,
                                    attempt=su.attempt or None)
        su.attempt = ""
        if su.wrong >= MAX_WRONG_CODES:
            _drop(request)
            return _again(request, su, "Too many wrong codes. Please sign in again for a new one.")
        _save(request, su)
        if v.action != PROCEED:
            return _response(_responder(request, s).respond(v))
        return _code_form(request, "That code is not right. Please check it and try again.", 200)
    if not _claim(su, s):
        # Another post of the same code (two at once) got it first.
        _drop(request)
        return _again(request, su, "This sign-in has expired. Please sign in again.")
    v = s.client.step_up_passed(ticket=su.ticket, account=su.account, ip=su.ip or None,
                                device_token=su.device or None, flow=s.step_up_flow, fail=s.fail,
                                attempt=su.attempt or None)
    if isinstance(v.error, TollgateError) and 400 <= v.error.status < 500 and v.error.status != 429:
        # The ticket is expired or not tollgate's: only a new login gets one.
        _drop(request)
        return _again(request, su, "This sign-in has expired. Please sign in again.")
    if v.action != PROCEED:
        if v.error is not None:
            log.warning("tollgate.django: the step-up report got no verdict (%s); answering %s", v.error, v.action)
        return _response(_responder(request, s).respond(v))
    _drop(request)
    from django.contrib.auth import load_backend, login  # type: ignore[import]

    try:
        user = load_backend(su.backend).get_user(su.user)
    except Exception:  # a backend no longer configured: sign in again
        user = None
    if user is None:
        return _again(request, su, "This sign-in has expired. Please sign in again.")
    login(request, user, backend=su.backend)
    if v.device_token:
        st.device_token = v.device_token
    return HttpResponseRedirect(su.next)


def _claim(su: StepUp, s: conf.Settings) -> bool:
    """Spend su's code once, whatever the number of posts in flight: an
    atomic add to the cache every process shares (TOLLGATE_CHALLENGE_CACHE);
    a cache that does not answer leaves the session's own single use."""
    from django.core.cache import caches  # type: ignore[import]

    key = "tollgate:step-up:" + hashlib.sha256(su.ticket.encode("ascii", "replace") + b"\x00" + su.mac.encode()).hexdigest()
    try:
        return bool(caches[s.challenge_cache].add(key, 1, timeout=CODE_TTL))
    except Exception:
        return True


def refuse(request: Any, su: StepUp) -> Any:
    """Refuse the login outright (no second factor can be had), with a page
    that says what to do by the reason; the pending step-up is dropped."""
    _drop(request)
    if REASON_BREACHED_PASSWORD in su.reasons:
        text = ("This password appears in a known data breach, so it cannot sign you in on its own, and this "
                "account has no e-mail address to confirm it is you. Please reset your password.")
    else:
        text = ("Signing in from here needs a confirmation sent to the account's e-mail address, and this "
                "account has none. Please reset your password, or ask the site's administrator.")
    status, headers, body = pages.step_up_refused(text, su.login)
    return _raw(status, headers, body)


def email_code(request: Any, user: Any, su: StepUp) -> Any:
    """The default hook: a 6-digit code by e-mail (Django's send_mail) and a
    redirect to the code page; a user without an e-mail address, or a mail
    that cannot be sent, is refused (:func:`refuse`)."""
    from django.core.mail import send_mail  # type: ignore[import]

    s = conf.get()
    try:
        address = str(getattr(user, user.get_email_field_name(), "") or "")
    except AttributeError:  # a user model with no e-mail field
        address = ""
    if not address:
        return refuse(request, su)
    code = "%06d" % secrets.randbelow(1000000)
    set_code(request, su, code)
    minutes = CODE_TTL // 60
    try:
        send_mail("Your sign-in code",
                  "Your sign-in code is %s. It is good for %d minutes.\n\nIf you did not just sign in, someone else "
                  "knows your password: change it.\n" % (code, minutes),
                  None, [address], fail_silently=False)
    except Exception as e:  # never the address or the code in the log
        log.warning("tollgate.django: the step-up code could not be sent (%s); the login is refused",
                    type(e).__name__)
        return refuse(request, su)
    return HttpResponseRedirect(s.step_up_path)


def serve(request: Any) -> Any:
    """The code page at TOLLGATE_STEP_UP_PATH: the form (GET), or a code
    checked, compared and reported (POST)."""
    su = pending(request)
    if su is None or not su.mac:
        from django.shortcuts import resolve_url

        return HttpResponseRedirect(resolve_url(getattr(django_settings, "LOGIN_URL", "/")))
    if request.method != "POST":
        return _code_form(request, "", 200)
    from django.middleware.csrf import CsrfViewMiddleware  # type: ignore[import]

    # The page is served before any view, so CSRF is checked here, as
    # CsrfViewMiddleware checks a view's post (its request half first, for
    # a site whose MIDDLEWARE lacks it).
    csrf = CsrfViewMiddleware(lambda r: None)
    if "CSRF_COOKIE" not in request.META:
        csrf.process_request(request)
    refused = csrf.process_view(request, None, (), {})
    if refused is not None:
        return refused
    early = check(request, su)
    if early is not None:
        return early
    code = request.POST.get("code", "")
    return finish(request, su, isinstance(code, str) and verify_code(su, code))


def _code_form(request: Any, error: str, status: int) -> Any:
    from django.middleware.csrf import get_token

    s = conf.get()
    st, headers, body = pages.step_up_form(get_token(request), s.step_up_path, error, status)
    return _raw(st, headers, body)


def _again(request: Any, su: StepUp, text: str) -> Any:
    status, headers, body = pages.step_up_refused(text, su.login)
    return _raw(status, headers, body)


def _responder(request: Any, s: conf.Settings) -> Any:
    accept = request.META.get("HTTP_ACCEPT", "")
    return s.html_responder if isinstance(accept, str) and "text/html" in accept.lower() else s.responder


def _raw(status: int, headers: Any, body: bytes) -> Any:
    r = HttpResponse(body, status=status)
    for name, value in headers:
        r[name] = value
    return r


def _response(a: Any) -> Any:
    return _raw(a.status, a.headers, a.body)
