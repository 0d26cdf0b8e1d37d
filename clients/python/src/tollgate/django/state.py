"""What one request's authentications left for the signals and the
middleware: each ``authenticate()`` call's attempt, in order, and what to
answer once the view is done.

Django's ``authenticate()`` asks the backends in order and, when none
returned a user (or one raised PermissionDenied), sends
``user_login_failed`` before it returns, in the same thread. The backend
is first, so every call records exactly one :class:`Attempt` before any
other backend runs, and the failure signal of that call belongs to the
newest attempt no signal has claimed yet.
"""

from __future__ import annotations

import contextvars
from typing import Any, List, Optional

from ..failmode import Verdict

__all__ = ["Attempt", "State", "of", "find", "enter", "leave", "current", "OPEN", "BLOCKED", "REFUSED", "SKIPPED", "FAILED", "SUCCEEDED"]

#: tollgate said proceed: the real backends check the password; the
#: outcome is still to report.
OPEN = "open"
#: tollgate said delay or captcha: no backend checked the password.
BLOCKED = "blocked"
#: tollgate refused the account as an identifier: answered as a wrong
#: password, with no backend asked.
REFUSED = "refused"
#: Not a password login (no account or password among the credentials),
#: or the plug-in is off: tollgate was not asked.
SKIPPED = "skipped"
#: Reported as a failure.
FAILED = "failed"
#: Reported as a success.
SUCCEEDED = "succeeded"

_ATTR = "_tollgate_state"


class Attempt:
    """One ``authenticate()`` call as the backend saw it. It keeps what the
    report needs (the account as sent, the address, the device token, the
    password's fingerprint and the attempt token), never the password."""

    __slots__ = ("status", "account", "ip", "device", "fingerprint", "token", "claimed", "breached")

    def __init__(self, status: str, account: str = "", ip: str = "", device: str = "", fingerprint: str = "",
                 token: str = "") -> None:
        self.status = status
        self.account = account
        self.ip = ip
        self.device = device
        self.fingerprint = fingerprint
        self.token = token
        #: Whether a user_login_failed signal has claimed it.
        self.claimed = False
        #: Whether the password was found in tollgate's breached corpus
        #: (asked once tollgate let the attempt through; False on error).
        self.breached = False


class State:
    """One request's attempts, and what the middleware is to answer."""

    __slots__ = ("attempts", "blocked", "captcha_solved", "device_token", "errored", "step_up")

    def __init__(self) -> None:
        self.attempts: List[Attempt] = []
        #: The verdict of the first blocked attempt, or None.
        self.blocked: Optional[Verdict] = None
        #: Whether the request carried a solved challenge, not yet spent
        #: on a check.
        self.captcha_solved = False
        #: The device token a success report returned, for the cookie.
        self.device_token = ""
        #: Whether the view raised: an open attempt's outcome is unknown.
        self.errored = False
        #: The answer to a success tollgate answered step_up (the hook's, or
        #: the Responder's for a login without a session), or None.
        self.step_up: Any = None


def http_request(request: Any) -> Any:
    """Django's HttpRequest behind request (Django REST framework's Request
    wraps one as _request), or None."""
    if request is None:
        return None
    inner = getattr(request, "_request", None)
    return inner if inner is not None and hasattr(inner, "META") else request


def of(request: Any) -> State:
    """request's state, made on first use."""
    r = http_request(request)
    st = getattr(r, _ATTR, None)
    if st is None:
        st = State()
        setattr(r, _ATTR, st)
    return st


def find(request: Any) -> Optional[State]:
    """request's state, or None when no authentication recorded one."""
    r = http_request(request)
    return None if r is None else getattr(r, _ATTR, None)


# The request the middleware is answering, for code Django calls without
# it: a validator's password_changed(password, user) is told the user
# alone. A context variable, not a thread's: under ASGI, sync_to_async
# carries it into the thread that runs the view.
_current: "contextvars.ContextVar[Any]" = contextvars.ContextVar("tollgate.django.request", default=None)


def enter(request: Any) -> "contextvars.Token[Any]":
    """Make request the current one (the middleware, around the view)."""
    return _current.set(request)


def leave(token: "contextvars.Token[Any]") -> None:
    """Restore the current request enter replaced."""
    _current.reset(token)


def current() -> Any:
    """The request the middleware is answering, or None (a management
    command, a shell, a task queue's worker)."""
    return _current.get()
