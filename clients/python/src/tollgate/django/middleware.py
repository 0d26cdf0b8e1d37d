"""The middleware: what a request's authentications leave to answer.

Add it to ``MIDDLEWARE`` (last, as django-axes' is)::

    MIDDLEWARE += ["tollgate.django.middleware.TollgateMiddleware"]

Around the view it

* resumes a login held across a challenge: a post of the challenge page
  (its handle, token and solution) is verified with tollgate, once, and
  the request goes on as the submission that met the challenge, with the
  next check told the challenge was solved (CSRF is checked on that
  submission, as for any post);
* once the view is done, reports as a success an ``authenticate()`` that
  returned a user without ``login()`` (:func:`receivers.settle`);
* replaces the view's answer to an attempt tollgate stopped: for
  ``delay``, a 429 with ``Retry-After``, ``RateLimit`` and
  ``Cache-Control: no-store`` (a page for a browser, an RFC 9457 problem
  otherwise); for ``captcha``, the challenge page when the attempt was a
  browser's form post (the submission is held sealed on the server,
  :mod:`~tollgate.django.hold`), else a 429;
* sets the device cookie a success report returned, so that this device
  is counted apart from everyone else's next time;
* answers a login whose success tollgate answered ``step_up`` with the
  step-up hook's response instead of the view's (no session was kept),
  and serves the second factor's code page at ``TOLLGATE_STEP_UP_PATH``
  (:mod:`~tollgate.django.stepup`), so no URL needs adding.

The answers depend on the verdict alone: an unknown account's are a known
one's, byte for byte.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from typing import Any, Callable, Dict, Optional

from django.conf import settings as django_settings  # type: ignore[import]
from django.core.cache import caches  # type: ignore[import]
from django.http import HttpResponse, HttpResponseRedirect, QueryDict  # type: ignore[import]
from django.utils.datastructures import MultiValueDict  # type: ignore[import]

from ..errors import TollgateError, Unavailable
from ..failmode import CAPTCHA
from ..respond import Answer
from . import conf, hold, pages, receivers, state
from .backends import client_ip

__all__ = ["TollgateMiddleware"]

log = logging.getLogger("tollgate.django")

_FORM = "application/x-www-form-urlencoded"
# The fields of a challenge page's post: the handle and token it holds,
# and the solution, the solver's or a provider widget's.
_SOLUTION_FIELDS = ("tollgate_handle", "tollgate_token", "tollgate_nonce", "tollgate_response")
_WIDGET_FIELDS = {"turnstile": "cf-turnstile-response", "hcaptcha": "h-captcha-response",
                  "recaptcha": "g-recaptcha-response"}


class TollgateMiddleware:
    """See the module's documentation."""

    def __init__(self, get_response: Callable[[Any], Any]) -> None:
        self.get_response = get_response
        self._solver: Dict[str, bytes] = {}
        self._solver_lock = threading.Lock()

    def __call__(self, request: Any) -> Any:
        s = conf.get()
        if not s.enabled:
            return self.get_response(request)
        token = state.enter(request)  # for a password change's report (validators.py): its address
        try:
            return self._answer(request, s)
        finally:
            state.leave(token)

    def _answer(self, request: Any, s: conf.Settings) -> Any:
        st = state.of(request)
        if request.path == s.step_up_path:
            from . import stepup

            response = stepup.serve(request)
            if st.device_token:
                self._set_cookie(response, st.device_token, s)
            return response
        # Only a urlencoded post can be the challenge page's: a multipart
        # one is left unread, for a view that sets its own upload handlers.
        if request.method == "POST" and _media_type(request) == _FORM and "tollgate_handle" in request.POST:
            early = self._resume(request, st, s)
            if early is not None:
                return early
        response = self.get_response(request)
        receivers.settle(st, int(getattr(response, "status_code", 200)))
        if st.blocked is not None:
            response = self._blocked(request, st, s)
        if st.step_up is not None:
            # Whatever the view made of the stopped login (a 403, a 500 page
            # of a view that caught the exception): the second factor's answer.
            return _step_up_response(st.step_up)
        if st.device_token:
            self._set_cookie(response, st.device_token, s)
        return response

    def process_exception(self, request: Any, exception: BaseException) -> Optional[Any]:
        """A view that raised leaves its attempts' outcomes unknown; one that
        a step-up stopped in login() gets the hook's answer."""
        st = state.find(request)
        if st is None:
            return None
        if st.step_up is not None:
            return _step_up_response(st.step_up)
        st.errored = True
        return None

    # The answers.

    def _blocked(self, request: Any, st: state.State, s: conf.Settings) -> Any:
        v = st.blocked
        assert v is not None
        browser = _wants_html(request)
        if v.action == CAPTCHA and browser and s.challenge is not None and _is_form_post(request):
            page = self._challenge(request, s, request.POST.urlencode().encode("utf-8"))
            if page is not None:
                return page
        return _response((s.html_responder if browser else s.responder).respond(v))

    def _challenge(self, request: Any, s: conf.Settings, body: bytes) -> Optional[Any]:
        """The challenge page holding body, or None when none can be shown
        (tollgate issues no challenge, or the cache refuses the hold)."""
        try:
            ch = s.client.challenge(None if s.challenge == "pow" else s.challenge)
            solver = self._solver_script(s)
        except (TollgateError, Unavailable) as e:
            log.warning("tollgate.django: no challenge to show (%s); answering 429", e)
            return None
        handle = hold.new_handle()
        if not hold.put(caches[s.challenge_cache], _secret(), handle, _binding(request, ch.token), body, s.challenge_ttl):
            log.warning("tollgate.django: the challenge cache did not hold the submission; answering 429")
            return None
        status, headers, page = pages.challenge_page(ch, handle, request.get_full_path(), solver)
        return _response(Answer(proceed=False, status=status, headers=headers, body=page))

    def _solver_script(self, s: conf.Settings) -> bytes:
        with self._solver_lock:
            b = self._solver.get(s.url)
        if b is None:
            b = s.client.challenge_solver()
            with self._solver_lock:
                self._solver[s.url] = b
        return b

    # A challenge page's post.

    def _resume(self, request: Any, st: state.State, s: conf.Settings) -> Optional[Any]:
        """Verify the post's solution and make the request the submission it
        held; an answer instead when it cannot go on."""
        post = request.POST
        handle, token = post.get("tollgate_handle", ""), post.get("tollgate_token", "")
        cache, secret, binding = caches[s.challenge_cache], _secret(), _binding(request, token)
        held = hold.peek(cache, secret, handle, binding)
        if held is None:
            # Expired, taken, or held for another path, challenge or browser:
            # the form again, to be filled in anew.
            return HttpResponseRedirect(request.get_full_path())
        try:
            if s.challenge in _WIDGET_FIELDS:
                response = post.get("tollgate_response", "") or post.get(_WIDGET_FIELDS[s.challenge], "")
                r = s.client.verify_challenge(token=token or None, provider=s.challenge, response=response or None,
                                              remote_ip=client_ip(request, s) or None)
            else:
                r = s.client.verify_challenge(token=token or None, nonce=post.get("tollgate_nonce", "") or None)
        except (TollgateError, Unavailable) as e:
            log.warning("tollgate.django: the challenge's solution could not be verified (%s)", e)
            hold.take(cache, secret, handle, binding)
            return self._challenge(request, s, held) or _response(s.html_responder.respond(_captcha()))
        taken = hold.take(cache, secret, handle, binding) is not None  # the handle is spent either way
        if not r.solved or not taken:
            # A fresh challenge for the same submission: each one is solved
            # once, so a wrong solution costs another.
            return self._challenge(request, s, held) or _response(s.html_responder.respond(_captcha()))
        request._post = QueryDict(held, encoding=request.encoding)
        request._files = MultiValueDict()
        st.captcha_solved = True
        return None

    def _set_cookie(self, response: Any, token: str, s: conf.Settings) -> None:
        if not 0 < len(token) <= 1024 or not all(0x20 < ord(c) < 0x7F and c not in '",;\\' for c in token):
            log.warning("tollgate.django: the device token cannot be a cookie; not set")
            return
        response.set_cookie(s.cookie_name, token, max_age=s.cookie_max_age, path="/", secure=s.cookie_secure,
                            httponly=True, samesite="Lax")


def _step_up_response(x: Any) -> Any:
    """The response the step-up left: the hook's, or an Answer."""
    return _response(x) if isinstance(x, Answer) else x


def _captcha() -> Any:
    from ..failmode import Verdict

    return Verdict(action=CAPTCHA)


def _response(a: Answer) -> Any:
    r = HttpResponse(a.body, status=a.status)
    for name, value in a.headers:
        r[name] = value
    return r


def _media_type(request: Any) -> str:
    ct = request.META.get("CONTENT_TYPE", "")
    return ct.split(";", 1)[0].strip().lower() if isinstance(ct, str) else ""


def _is_form_post(request: Any) -> bool:
    """Whether the request is a form's post whose fields can be held: a
    urlencoded form, or a multipart one without files."""
    if request.method != "POST":
        return False
    mt = _media_type(request)
    return mt == _FORM or (mt == "multipart/form-data" and not request.FILES)


def _wants_html(request: Any) -> bool:
    """Whether the client is a browser: it takes text/html."""
    accept = request.META.get("HTTP_ACCEPT", "")
    return isinstance(accept, str) and "text/html" in accept.lower()


def _secret() -> bytes:
    return hashlib.sha256(b"tollgate.django hold key\x00" + str(django_settings.SECRET_KEY).encode("utf-8")).digest()


def _binding(request: Any, token: str) -> bytes:
    """What a held submission is bound to: the path it was posted to, the
    challenge issued for it, and the browser's CSRF cookie (a hash)."""
    name = getattr(django_settings, "CSRF_COOKIE_NAME", "csrftoken")
    csrf = request.COOKIES.get(name, "")
    return b"\x00".join((request.path.encode("utf-8", "surrogatepass"), token.encode("ascii", "replace"),
                         hashlib.sha256(csrf.encode("utf-8", "surrogatepass")).digest()))
