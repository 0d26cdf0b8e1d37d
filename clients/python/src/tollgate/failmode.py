"""Verdicts, and what a call site answers when tollgate gives none.

A login must not hang or break because tollgate is down, and it must not
become a bypass either. Each call site of :meth:`Client.check`,
:meth:`Client.report` and :meth:`Client.send` picks a :class:`FailMode`;
when tollgate gives no verdict the call returns the mode's answer, a
:class:`Verdict` with ``fallback`` set, the reason
:data:`REASON_FALLBACK` and the error that explains it. Which answer
(api/client/failmode.go):

* When tollgate is unavailable (down, slow, shedding with 503 overloaded, a
  5xx, a 429 from a proxy, an answer that is no verdict): the mode's own.
  :data:`FAIL_OPEN` proceeds within a local allowance per account (a send's
  destination) and per address, and past it delays (reasons
  :data:`REASON_FALLBACK`, :data:`REASON_FALLBACK_ALLOWANCE`);
  :data:`FAIL_DELAY` delays by :data:`FALLBACK_DELAY`, or by the Retry-After
  an answer asked for, up to :data:`MAX_FALLBACK_DELAY`;
  :data:`FAIL_CAPTCHA` asks for a CAPTCHA, and proceeds when the request
  says the end user solved one.
* Otherwise (tollgate refused the request or the token with a 4xx): closed
  whatever the mode. FAIL_CAPTCHA asks for a CAPTCHA even when one was
  solved; FAIL_OPEN and FAIL_DELAY delay. A broken request must show up in
  the caller's log, not turn protection off.

A fallback proceed carries no attempt token (report without one: it is
counted on its own) and a fallback report no device token.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, List, Mapping, Optional, Union

from . import _wire
from .errors import TollgateError, is_unavailable

__all__ = [
    "FailMode",
    "FAIL_OPEN",
    "FAIL_DELAY",
    "FAIL_CAPTCHA",
    "Verdict",
    "PROCEED",
    "DELAY",
    "CAPTCHA",
    "DENY",
    "STEP_UP",
    "ACTIONS",
    "CHECK_ACTIONS",
    "REASON_BREACHED_PASSWORD",
    "REASON_ACCOUNT_UNDER_ATTACK",
    "REASON_NEW_DEVICE_UNDER_ATTACK",
    "REASON_ADDRESS_ESCALATED",
    "OUTCOME_STEP_UP_PASSED",
    "OUTCOME_STEP_UP_FAILED",
    "OUTCOME_PASSWORD_CHANGED",
    "REASON_FALLBACK",
    "REASON_FALLBACK_ALLOWANCE",
    "FALLBACK_DELAY",
    "MAX_FALLBACK_DELAY",
]

#: Check the credential, or send the code, now.
PROCEED = "proceed"
#: Do not check the credential: answer the end user 429 with Retry-After.
DELAY = "delay"
#: Show a CAPTCHA, then check again with ``captcha_solved=True``.
CAPTCHA = "captcha"
#: Only from sends: do not send the code; answer as if it were sent.
DENY = "deny"
#: Only from a login's success report, once the password was verified: do
#: not sign the end user in yet. Ask for a second factor (or a password
#: reset, by the verdict's reasons), then report ``step_up_passed`` or
#: ``step_up_failed`` with the verdict's attempt, the step-up ticket
#: (:meth:`Client.step_up_passed`); the device token comes with the pass.
STEP_UP = "step_up"
#: Every action tollgate answers.
ACTIONS = frozenset((PROCEED, DELAY, CAPTCHA, DENY, STEP_UP))
#: The actions a check or a send may answer (step_up answers reports only).
CHECK_ACTIONS = frozenset((PROCEED, DELAY, CAPTCHA, DENY))

#: The reasons of a step_up verdict, one or more.
REASON_BREACHED_PASSWORD = "breached_password"
REASON_ACCOUNT_UNDER_ATTACK = "account_under_attack"
REASON_NEW_DEVICE_UNDER_ATTACK = "new_device_under_attack"
REASON_ADDRESS_ESCALATED = "address_escalated"

#: The outcomes a step-up flow's report takes.
OUTCOME_STEP_UP_PASSED = "step_up_passed"
OUTCOME_STEP_UP_FAILED = "step_up_failed"
#: The outcome a login flow's report takes once the caller changed or reset
#: the account's password (account and ip, no attempt): it clears the
#: account's counters of the password, never an address's.
OUTCOME_PASSWORD_CHANGED = "password_changed"

#: The reason of every fallback verdict; tollgate itself never answers it.
REASON_FALLBACK = "client_fallback"
#: Follows REASON_FALLBACK when FAIL_OPEN delayed because the account (a
#: send's destination) or address had spent its allowance.
REASON_FALLBACK_ALLOWANCE = "client_fallback_allowance"

#: FAIL_DELAY's delay in seconds when tollgate asked for none.
FALLBACK_DELAY = 1.0
#: The longest Retry-After, in seconds, that FAIL_DELAY follows.
MAX_FALLBACK_DELAY = 60.0


class FailMode(enum.Enum):
    """What a call site answers when tollgate gives no verdict."""

    #: Proceed while tollgate is unavailable, within a small allowance per
    #: account and per address (see Client); past it, delay.
    OPEN = "open"
    #: Delay: the end user gets 429 and tries again shortly. Fails closed.
    DELAY = "delay"
    #: Ask for a CAPTCHA, or proceed for a solved one while tollgate is
    #: unavailable. Fails closed behind a CAPTCHA.
    CAPTCHA = "captcha"

    def __str__(self) -> str:
        return self.value


#: :attr:`FailMode.OPEN`.
FAIL_OPEN = FailMode.OPEN
#: :attr:`FailMode.DELAY`, the default of every call.
FAIL_DELAY = FailMode.DELAY
#: :attr:`FailMode.CAPTCHA`.
FAIL_CAPTCHA = FailMode.CAPTCHA


@dataclass
class Verdict:
    """Tollgate's verdict, or a call site's fail-mode answer when it gave none.

    Attributes:
        action: "proceed", "delay", "captcha", "deny", or from a success
            report "step_up" (not signed in yet: a second factor first).
        delay_ms: with delay, how long to wait; with proceed, a queued
            call's place in its queue (hold it that long, then go ahead).
        retry_after: delay_ms in whole seconds, rounded up.
        reasons: stable codes for the caller's logs, never for end users.
        attempt: a check's attempt token, to pass back with the report; with
            step_up, the step-up ticket for the step-up report.
        device_token: a success report's device token, for the cookie ("" with
            step_up: the step-up pass brings it).
        fallback: True when tollgate gave no verdict and this is the fail
            mode's answer; ``error`` then says why.
        error: why tollgate gave no verdict (log it), or None.
    """

    action: str
    delay_ms: int = 0
    retry_after: int = 0
    reasons: List[str] = field(default_factory=list)
    attempt: str = ""
    device_token: str = ""
    fallback: bool = False
    error: Optional[BaseException] = None

    @classmethod
    def from_json(cls, data: Union[bytes, str, Mapping[str, Any]]) -> "Verdict":
        """Decode a verdict as tollgate writes it (JSON bytes or text, or an
        already decoded mapping), as the Go client decodes it: absent or
        null fields are zero, unknown keys ignored. The action is not
        checked (Responder answers any unknown action as a delay).

        Raises ValueError when a field has the wrong type.
        """
        if isinstance(data, (bytes, str)):
            obj = _wire.parse(data.encode("utf-8") if isinstance(data, str) else data)
        else:
            obj = _wire.parse(_wire_mapping(data))
        d = _wire.decode(obj, _wire.VERDICT)
        return cls(**d)


def _wire_mapping(data: Mapping[str, Any]) -> bytes:
    import json

    return json.dumps(dict(data)).encode("utf-8")


def coerce_mode(mode: Union[FailMode, str]) -> FailMode:
    """mode as a FailMode; its value ("open", "delay", "captcha") is taken too."""
    if isinstance(mode, FailMode):
        return mode
    try:
        return FailMode(mode)
    except ValueError:
        raise ValueError("unknown fail mode (want FAIL_OPEN, FAIL_DELAY or FAIL_CAPTCHA)") from None


def fallback(mode: FailMode, captcha_solved: bool, err: BaseException) -> Verdict:
    """mode's answer to a call that failed with err (api/client/failmode.go)."""
    if not is_unavailable(err):
        # Refused: closed whatever the mode.
        captcha_solved = False
        if mode is not FailMode.CAPTCHA:
            mode = FailMode.DELAY
    v = Verdict(action="", reasons=[REASON_FALLBACK], fallback=True, error=err)
    if mode is FailMode.OPEN or (mode is FailMode.CAPTCHA and captcha_solved):
        v.action = PROCEED
    elif mode is FailMode.CAPTCHA:
        v.action = CAPTCHA
    else:
        d = int(FALLBACK_DELAY * 1000)
        if isinstance(err, TollgateError) and err.retry_after * 1000 > d:
            d = min(err.retry_after * 1000, int(MAX_FALLBACK_DELAY * 1000))
        v.action = DELAY
        v.delay_ms = d
        v.retry_after = (d + 999) // 1000
    return v
