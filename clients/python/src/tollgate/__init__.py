"""tollgate's Python client, for auth systems written in Python.

It calls tollgate (https://github.com/tollgate-auth/tollgate) before and
after each credential check and before each one-time-code send, and turns
the verdicts into answers for the end user. It uses the standard library
only and behaves as the Go client (api/client) does; the shared vectors in
clients/testdata hold both to the same answers.

* :class:`Client`: :meth:`~Client.check`, :meth:`~Client.report` (with
  ``breached=``, from :meth:`~Client.breached`'s k-anonymous range query;
  a success may answer :data:`STEP_UP`, settled by
  :meth:`~Client.step_up_passed` or :meth:`~Client.step_up_failed`) and
  :meth:`~Client.send`, each with a :class:`FailMode` for when tollgate is
  unreachable or slow (:data:`FAIL_OPEN`, :data:`FAIL_DELAY`,
  :data:`FAIL_CAPTCHA`), returning a :class:`Verdict` and never raising
  because of tollgate; and the admin calls, which raise
  :class:`TollgateError` or :class:`Unavailable`.
* :class:`Responder`: the end user's answer to a verdict (429 with
  Retry-After and RateLimit, a CAPTCHA hook, a deny like a sent code), the
  same bytes for an unknown account as for a wrong password.
* :class:`Proxies` and :func:`client_ip`: the client address behind your
  own reverse proxies.
* :class:`DeviceCookie`: the ``__Host-`` cookie that keeps the device token.
* :func:`verify_webhook`: checks an event tollgate posted (Standard
  Webhooks signatures) and returns the :class:`WebhookEvent`.
* :mod:`tollgate.django`: the same for a Django site by settings alone
  (an authentication backend, a middleware, the login signals); it is
  the one module that imports anything beyond the standard library, and
  only Django.
"""

from .allowance import (
    DEFAULT_FAIL_OPEN_PER_ACCOUNT,
    DEFAULT_FAIL_OPEN_PER_ADDRESS,
    DEFAULT_FAIL_OPEN_SUBJECTS,
    DEFAULT_FAIL_OPEN_WINDOW,
    Stats,
)
from .client import (
    DEFAULT_BREACHED_TIMEOUT,
    DEFAULT_TIMEOUT,
    STEP_UP_FLOW,
    DEFAULT_USER_AGENT,
    Challenge,
    ChallengeResult,
    Client,
    DeadLetter,
    Entry,
    Explanation,
    HeldList,
    HeldReset,
    HeldSubject,
    ReloadResult,
    RuleState,
    breached_range_count,
)
from .clientip import HEADER_FORWARDED, HEADER_X_FORWARDED_FOR, Proxies, client_ip
from .cookie import DEFAULT_DEVICE_COOKIE_MAX_AGE, DEFAULT_DEVICE_COOKIE_NAME, DeviceCookie
from .errors import PROBLEM_BASE, Timeout, TollgateError, Unavailable, is_unavailable
from .failmode import (
    CAPTCHA,
    DELAY,
    DENY,
    FAIL_CAPTCHA,
    FAIL_DELAY,
    FAIL_OPEN,
    FALLBACK_DELAY,
    MAX_FALLBACK_DELAY,
    OUTCOME_PASSWORD_CHANGED,
    OUTCOME_STEP_UP_FAILED,
    OUTCOME_STEP_UP_PASSED,
    PROCEED,
    REASON_ACCOUNT_UNDER_ATTACK,
    REASON_ADDRESS_ESCALATED,
    REASON_BREACHED_PASSWORD,
    REASON_NEW_DEVICE_UNDER_ATTACK,
    REASON_FALLBACK,
    REASON_FALLBACK_ALLOWANCE,
    STEP_UP,
    FailMode,
    Verdict,
)
from .respond import Answer, Responder
from .webhook import (
    DEFAULT_WEBHOOK_TOLERANCE,
    WEBHOOK_EVENT_TYPES,
    WebhookData,
    WebhookEvent,
    WebhookVerificationError,
    verify_webhook,
)

__version__ = "1.0.0"

__all__ = [
    "Client",
    "Verdict",
    "Explanation",
    "HeldList",
    "HeldReset",
    "HeldSubject",
    "RuleState",
    "Entry",
    "ReloadResult",
    "DeadLetter",
    "Challenge",
    "ChallengeResult",
    "Stats",
    "FailMode",
    "FAIL_OPEN",
    "FAIL_DELAY",
    "FAIL_CAPTCHA",
    "PROCEED",
    "DELAY",
    "CAPTCHA",
    "DENY",
    "STEP_UP",
    "STEP_UP_FLOW",
    "OUTCOME_STEP_UP_PASSED",
    "OUTCOME_STEP_UP_FAILED",
    "OUTCOME_PASSWORD_CHANGED",
    "REASON_BREACHED_PASSWORD",
    "REASON_ACCOUNT_UNDER_ATTACK",
    "REASON_NEW_DEVICE_UNDER_ATTACK",
    "REASON_ADDRESS_ESCALATED",
    "DEFAULT_BREACHED_TIMEOUT",
    "breached_range_count",
    "REASON_FALLBACK",
    "REASON_FALLBACK_ALLOWANCE",
    "FALLBACK_DELAY",
    "MAX_FALLBACK_DELAY",
    "DEFAULT_TIMEOUT",
    "DEFAULT_USER_AGENT",
    "DEFAULT_FAIL_OPEN_PER_ACCOUNT",
    "DEFAULT_FAIL_OPEN_PER_ADDRESS",
    "DEFAULT_FAIL_OPEN_WINDOW",
    "DEFAULT_FAIL_OPEN_SUBJECTS",
    "TollgateError",
    "Unavailable",
    "Timeout",
    "is_unavailable",
    "PROBLEM_BASE",
    "Responder",
    "Answer",
    "Proxies",
    "client_ip",
    "HEADER_FORWARDED",
    "HEADER_X_FORWARDED_FOR",
    "DeviceCookie",
    "DEFAULT_DEVICE_COOKIE_NAME",
    "DEFAULT_DEVICE_COOKIE_MAX_AGE",
    "verify_webhook",
    "WebhookEvent",
    "WebhookData",
    "WebhookVerificationError",
    "WEBHOOK_EVENT_TYPES",
    "DEFAULT_WEBHOOK_TOLERANCE",
]
