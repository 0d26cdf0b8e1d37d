"""The receivers of Django's login signals, connected by the app's ready():
they report how each attempt tollgate let through ended, with its attempt
token, so that tollgate settles the charge its check made.

* ``user_login_failed``: the newest attempt of the request no signal has
  claimed is this call's (the backend runs first and records one per
  call). Reported as a failure only when tollgate let it through: an
  attempt tollgate stopped reached no password check and is not counted
  again, and one it refused as an identifier neither.
* ``user_logged_in``: the newest open attempt is reported as a success,
  whose device token the middleware puts in the cookie. When tollgate
  answers ``step_up``, the login is undone before it is one: the session
  is flushed, the step-up hook (:mod:`~tollgate.django.stepup`) answers,
  and :class:`~tollgate.django.stepup.StepUpRequired` stops the view.

Each report says whether the password was breached, as the backend found
out (for a failure too: breached failures are how tollgate tells
credential stuffing).

An ``authenticate()`` that returned a user without ``login()`` (an API's
Basic authentication) is reported by the middleware at the end of the
request (:func:`settle`).
"""

from __future__ import annotations

import logging
from typing import Any, Optional

from ..failmode import STEP_UP, Verdict
from . import conf, state

__all__ = ["on_login_failed", "on_logged_in", "settle", "report"]

log = logging.getLogger("tollgate.django")


def report(a: state.Attempt, outcome: str, s: conf.Settings) -> Verdict:
    """Report a's outcome to tollgate; returns the verdict (a success's
    carries the device token, or is step_up). A fallback never steps up."""
    v = s.client.report(flow=s.flow, outcome=outcome, account=a.account, ip=a.ip or None, attempt=a.token or None,
                        device_token=a.device or None, password_fingerprint=a.fingerprint or None,
                        breached=a.breached, fail=s.fail)
    a.status = state.SUCCEEDED if outcome == "success" else state.FAILED
    if v.error is not None:
        log.warning("tollgate.django: the %s report got no verdict (%s)", outcome, v.error)
        v.device_token = ""
    return v


def on_login_failed(sender: Any, credentials: Any = None, request: Any = None, **kwargs: Any) -> None:
    """user_login_failed: report the failure of the attempt it ends."""
    st = state.find(request)
    if st is None:
        return
    a: Optional[state.Attempt] = None
    for x in reversed(st.attempts):
        if not x.claimed:
            a = x
            break
    if a is None:
        return
    a.claimed = True
    if a.status == state.OPEN:
        report(a, "failure", conf.get())


def on_logged_in(sender: Any, request: Any = None, user: Any = None, **kwargs: Any) -> None:
    """user_logged_in: report the success of the attempt it ends."""
    st = state.find(request)
    if st is None:
        return
    for a in reversed(st.attempts):
        if a.status == state.OPEN:
            s = conf.get()
            v = report(a, "success", s)
            if v.action == STEP_UP and user is not None:
                from . import stepup

                st.step_up = stepup.begin(state.http_request(request), user, a, v, s)
                raise stepup.StepUpRequired("tollgate: a second factor before this login")
            if v.device_token:
                st.device_token = v.device_token
            return


def settle(st: state.State, status: int) -> None:
    """At the end of the request: an attempt still open was let through,
    checked and not refused (no failure signal), so its authenticate()
    returned a user: a success, unless the view failed (a 5xx, or an
    exception), when its outcome is unknown and its charge stays counted,
    the safe side."""
    if st.errored or status >= 500:
        return
    s: Optional[conf.Settings] = None
    for a in st.attempts:
        if a.status == state.OPEN and not a.claimed:
            s = s or conf.get()
            v = report(a, "success", s)
            if v.action == STEP_UP:
                # No login() and so no session; but the view has answered
                # already, so its answer is replaced (what does not hold:
                # the view ran). An API has no page for a second factor.
                if st.step_up is None:
                    st.step_up = s.responder.respond(v)
                continue
            if v.device_token:
                st.device_token = v.device_token
