"""The client of tollgate's HTTP API (api/client/client.go).

A login calls :meth:`Client.check` before looking at the credential and
:meth:`Client.report` after it; a code send calls :meth:`Client.send`
first. Each takes a fail mode and always returns a usable
:class:`~tollgate.Verdict`: tollgate's, or, when tollgate gave none, the
fail mode's answer, marked ``fallback`` with the error that explains it.
These calls never raise because of tollgate. The admin calls (explain,
reset, allow, deny, entries, remove, reload, dead_letters, replay_webhook) raise
:class:`~tollgate.TollgateError` or :class:`~tollgate.Unavailable` instead.
"""

from __future__ import annotations

import hashlib
import http.client
import re
import select
import socket
import ssl
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from . import _held, _wire
from ._held import HeldList, HeldReset, HeldSubject
from .allowance import (
    DEFAULT_FAIL_OPEN_PER_ACCOUNT,
    DEFAULT_FAIL_OPEN_PER_ADDRESS,
    DEFAULT_FAIL_OPEN_SUBJECTS,
    DEFAULT_FAIL_OPEN_WINDOW,
    Allowance,
    Stats,
    Subject,
    check_subject,
    send_subject,
)
from .errors import STATUS_TEXT, Timeout, TollgateError, Unavailable
from .failmode import (
    ACTIONS,
    CHECK_ACTIONS,
    FAIL_DELAY,
    OUTCOME_PASSWORD_CHANGED,
    OUTCOME_STEP_UP_FAILED,
    OUTCOME_STEP_UP_PASSED,
    PROCEED,
    REASON_FALLBACK_ALLOWANCE,
    FailMode,
    Verdict,
    coerce_mode,
    fallback,
)

__all__ = ["Client", "Explanation", "RuleState", "Entry", "ReloadResult", "DeadLetter", "Challenge",
           "ChallengeResult", "DEFAULT_TIMEOUT", "DEFAULT_USER_AGENT", "DEFAULT_BREACHED_TIMEOUT", "STEP_UP_FLOW",
           "breached_range_count", "HeldList", "HeldReset", "HeldSubject"]

#: Seconds each call may take unless the Client says otherwise: tollgate
#: answers in a few milliseconds, and past this the fail mode answers.
DEFAULT_TIMEOUT = 0.25
#: Seconds :meth:`Client.breached` waits for its range unless told otherwise:
#: a tollgate that asks an upstream corpus may take longer than a verdict,
#: and past this the password is taken as not known to be breached.
DEFAULT_BREACHED_TIMEOUT = 1.0
#: The built-in flow of second-factor checks and step-up reports.
STEP_UP_FLOW = "step_up"
#: The most read of a breached range: HIBP's largest ranges are some 40
#: KiB; tollgate's padded ones are smaller.
MAX_RANGE_BYTES = 512 << 10
#: The User-Agent header unless the Client says otherwise.
DEFAULT_USER_AGENT = "tollgate-python-client/1"

#: The most read of an answer.
MAX_RESPONSE_BYTES = 1 << 20
#: The most read of an error answer.
MAX_PROBLEM_BYTES = 64 << 10

_MAX_IDLE = 64
_IDLE_TIMEOUT = 90.0
_READ_CHUNK = 64 << 10
_ACCEPT = "application/json, application/problem+json"

Field = Tuple[str, Union[str, int, bool]]

_HEX40 = re.compile(r"[0-9A-F]{40}")
_COUNT = re.compile(r"[0-9]+")


@dataclass
class RuleState:
    """One rule's state in an :class:`Explanation`. facet is "" for the
    rule's own state; else the part the row shows: "known_network" (over:
    the network is known), "network_allowance", "network_slot", or on a send
    flow "verified_destination", "verified_network", "owner_codes",
    "owner_resend" (no rule names these: rule and reason are then "")."""

    rule: str = ""
    reason: str = ""
    subject: str = ""
    algorithm: str = ""
    facet: str = ""
    count: int = 0
    remaining: int = 0
    wait_ms: int = 0
    over: bool = False
    reset_ms: int = 0


@dataclass
class Entry:
    """An allow or deny entry, as tollgate keeps it (never with its range)."""

    id: str = ""
    kind: str = ""
    flow: str = ""
    subject: str = ""
    family: str = ""
    length: int = 0
    country: str = ""
    reason: str = ""
    by: str = ""
    created_at: str = ""
    expires_at: str = ""


@dataclass
class Explanation:
    """Why a subject is delayed: every rule of the flow that counts it, the
    entries that decide for it, and the verdict a check would get now."""

    flow: str = ""
    verdict: Verdict = field(default_factory=lambda: Verdict(action=""))
    rules: List[RuleState] = field(default_factory=list)
    entries: List[Entry] = field(default_factory=list)


@dataclass
class ReloadResult:
    """The answer to :meth:`Client.reload`: the policy now in force."""

    #: The default tenant's flows after the reload, sorted.
    flows: List[str] = field(default_factory=list)
    #: The settings the file changes that only a restart applies (listen,
    #: redis, secret, auth, tls, ...), sorted; empty when none. The running
    #: process keeps their old values.
    restart_needed: List[str] = field(default_factory=list)


@dataclass(frozen=True)
class DeadLetter:
    """A webhook delivery tollgate gave up on: its endpoint did not answer
    2xx before the event's age limit (webhooks.max_age). It holds no event
    data (no account, destination or ref), only what names it."""

    #: The event's webhook-id, the same in every delivery of it; what
    #: :meth:`Client.replay_webhook` takes.
    id: str = ""
    #: The event type, such as "login.new_device".
    type: str = ""
    #: The tenant whose event it is.
    tenant: str = ""
    #: The endpoint's name in tollgate's configuration.
    endpoint: str = ""
    #: Why the last attempt failed, such as "status 503" or "timeout".
    last_error: str = ""
    #: How many deliveries were tried.
    attempts: int = 0
    #: When the event happened, RFC 3339 in UTC.
    time: str = ""
    #: When it was given up on, RFC 3339 in UTC.
    dead_at: str = ""


@dataclass(frozen=True)
class Challenge:
    """A challenge tollgate issued for a captcha verdict (POST
    /v1/challenge): the built-in proof of work, or a provider CAPTCHA that
    tollgate verifies. Send it back with the solution to
    :meth:`Client.verify_challenge`."""

    #: The signed challenge, opaque; it expires at expires_at and is spent
    #: by its first successful verification.
    token: str = ""
    #: "pow", "turnstile", "hcaptcha" or "recaptcha".
    kind: str = ""
    #: The leading zero bits a proof-of-work solution needs; 0 for a
    #: provider.
    difficulty: int = 0
    #: When the token stops being accepted, RFC 3339.
    expires_at: str = ""
    #: The path of the solver script on tollgate (/v1/challenge/solver.js).
    solver_url: str = ""
    #: A provider's site key for its widget; "" for proof of work.
    site_key: str = ""


@dataclass(frozen=True)
class ChallengeResult:
    """tollgate's verdict on a challenge's solution
    (POST /v1/challenge/verify)."""

    #: True at most once per token or provider response: send
    #: captcha_solved=True with the next check only then.
    solved: bool = False
    #: "solved", or why not: "malformed", "invalid", "expired", "replayed",
    #: "insufficient_work", "not_configured", "provider_rejected",
    #: "provider_unavailable".
    reason: str = ""


def _base_url(raw: str) -> urllib.parse.SplitResult:
    if not raw:
        raise ValueError("client: a base_url is required")
    try:
        u = urllib.parse.urlsplit(raw)
        u.port  # noqa: B018 - validates the port
    except ValueError:
        raise ValueError("client: base_url is not a URL") from None
    if u.scheme not in ("http", "https"):
        raise ValueError("client: base_url must be an http or https URL")
    if not u.hostname:
        raise ValueError("client: base_url has no host")
    if u.username is not None or u.password is not None or "@" in u.netloc:
        raise ValueError("client: base_url must not hold user info; use token")
    if "?" in raw or "#" in raw:
        raise ValueError("client: base_url must not have a query or fragment")
    return u


def _valid_header_value(s: str) -> bool:
    return all(not (ord(c) < 0x20 and c != "\t") and ord(c) != 0x7F for c in s)


def _media_type(value: Optional[str]) -> Optional[str]:
    """Go's mime.ParseMediaType's media type, or None when it errs."""
    if value is None:
        return None
    tspecials = '()<>@,;:\\"/[]?='

    def token(s: str) -> Tuple[str, str]:
        i = 0
        while i < len(s) and 0x20 < ord(s[i]) < 0x7F and s[i] not in tspecials:
            i += 1
        return s[:i], s[i:]

    base, _, _ = value.partition(";")
    mt = base.lower().strip()
    typ, rest = token(mt)
    if not typ:
        return None
    if rest:
        if not rest.startswith("/"):
            return None
        sub, rest = token(rest[1:])
        if not sub or rest:
            return None
    v = value[len(base):]
    seen: Dict[str, str] = {}
    while v:
        v = v.lstrip()
        if not v:
            break
        rest = v
        if not rest.startswith(";"):
            return None
        rest = rest[1:].lstrip()
        key, rest = token(rest)
        if not key:
            if v.strip() == ";":
                break
            return None
        rest = rest.lstrip()
        if not rest.startswith("="):
            return None
        rest = rest[1:].lstrip()
        if rest.startswith('"'):
            out, i = [], 1
            while i < len(rest) and rest[i] != '"':
                if rest[i] == "\\" and i + 1 < len(rest):
                    i += 1
                out.append(rest[i])
                i += 1
            if i >= len(rest):
                return None
            val, rest = "".join(out), rest[i + 1:]
        else:
            val, rest = token(rest)
            if not val:
                return None
        key = key.lower()
        if key in seen and seen[key] != val:
            return None
        seen[key] = val
        v = rest
    return mt


def _retry_after(v: Optional[str]) -> int:
    if not v or len(v) > 6 or not all("0" <= c <= "9" for c in v):
        return 0
    return int(v)


_BOOL_FIELDS = ("captcha_solved", "breached")


def breached_range_count(body: Union[bytes, str], suffix: str) -> int:
    """The count a range body (HIBP's format: ``SUFFIX:COUNT`` lines) gives
    suffix, the last 35 hex digits of a SHA-1; 0 when it is not there.

    Lines are split on LF and trimmed of CR and spaces; the suffix is
    compared without regard to case; the count is decimal digits, leading
    zeros allowed. A malformed line is skipped, and a count of 0 is padding,
    never a match.
    """
    if isinstance(body, bytes):
        body = body.decode("utf-8", errors="replace")
    want = suffix.strip().upper()
    for line in body.split("\n"):
        line = line.strip("\r ")
        name, sep, count = line.partition(":")
        if not sep or name.strip().upper() != want:
            continue
        count = count.strip()
        if not _COUNT.fullmatch(count):
            continue
        n = int(count)
        if n > 0:
            return n
    return 0


def _omit_empty(fields: Sequence[Tuple[str, Any, bool]]) -> List[Field]:
    """The request's fields in order: (name, value, always); optional ones
    are left out when empty, as Go's omitempty does."""
    out: List[Field] = []
    for name, value, always in fields:
        if value is None:
            value = False if name in _BOOL_FIELDS else ""
        if isinstance(value, bool):
            if name not in _BOOL_FIELDS:
                raise TypeError("%s must be a string" % name)
        elif not isinstance(value, str):
            raise TypeError("%s must be a string" % name)
        if always or value:
            out.append((name, value))
    return out


class _Pool:
    """Idle keep-alive connections to one host, shared by every thread."""

    def __init__(self, factory: Callable[[float], http.client.HTTPConnection]) -> None:
        self._factory = factory
        self._lock = threading.Lock()
        self._idle: List[Tuple[http.client.HTTPConnection, float]] = []

    def get(self, timeout: float) -> Tuple[http.client.HTTPConnection, bool]:
        """A connection and whether it is fresh."""
        now = time.monotonic()
        while True:
            with self._lock:
                if not self._idle:
                    break
                conn, since = self._idle.pop()
            sock = conn.sock
            if sock is not None and now - since < _IDLE_TIMEOUT:
                try:
                    readable, _, _ = select.select([sock], [], [], 0)
                except (OSError, ValueError):
                    readable = [sock]
                if not readable:  # not closed by the server, nothing pending
                    return conn, False
            conn.close()
        return self._factory(timeout), True

    def put(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < _MAX_IDLE:
                self._idle.append((conn, time.monotonic()))
                return
        conn.close()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn, _ in idle:
            conn.close()


class Client:
    """Calls one tollgate. Make one and share it between threads: the
    FAIL_OPEN allowance lives in it, and it reuses connections.

    Args:
        base_url: where tollgate listens, such as "http://127.0.0.1:8080" or
            "https://tollgate.internal/prefix": http or https, a host, no
            user info, query or fragment.
        token: a bearer token sent with every call (tollgate with auth:
            scope verdicts, admin:read or admin:write for the admin calls).
        token_source: instead of token, called for the token of every call
            (hand out a cached token, refresh it ahead of expiry); an
            exception fails the call as Unavailable; "" or None sends none.
        timeout: seconds each call may take, token source included; past it
            the call fails with Timeout and the fail mode answers. None
            leaves calls unbounded (not advised).
        user_agent: the User-Agent header.
        fail_open_per_account: FAIL_OPEN's fallback proceeds per account of
            a check's flow (and per destination of a send's) while tollgate
            gives no verdict; they come back evenly over fail_open_window.
            Past them FAIL_OPEN delays. Negative or None: no limit.
        fail_open_per_address: the same per client address (IPv4, IPv6
            /64). Negative or None: no limit; raise it if many users share
            one NAT address.
        fail_open_window: seconds a spent allowance takes to come back.
        fail_open_subjects: how many accounts and, separately, addresses
            the allowance tracks (as keyed hashes, never identifiers).
        clock: the allowance's clock, in seconds (time.monotonic).
        ssl_context: the TLS settings of an https base_url (by default
            ssl.create_default_context()).

    Raises:
        ValueError: a setting cannot be used.
    """

    def __init__(
        self,
        base_url: str,
        *,
        token: Optional[str] = None,
        token_source: Optional[Callable[[], Optional[str]]] = None,
        timeout: Optional[float] = DEFAULT_TIMEOUT,
        user_agent: str = DEFAULT_USER_AGENT,
        fail_open_per_account: Optional[int] = DEFAULT_FAIL_OPEN_PER_ACCOUNT,
        fail_open_per_address: Optional[int] = DEFAULT_FAIL_OPEN_PER_ADDRESS,
        fail_open_window: float = DEFAULT_FAIL_OPEN_WINDOW,
        fail_open_subjects: int = DEFAULT_FAIL_OPEN_SUBJECTS,
        clock: Callable[[], float] = time.monotonic,
        ssl_context: Optional[ssl.SSLContext] = None,
    ) -> None:
        u = _base_url(base_url)
        if token and token_source is not None:
            raise ValueError("client: set token or token_source, not both")
        if token is not None and (not isinstance(token, str) or not _valid_header_value(token)):
            raise ValueError("client: token is not a valid header value")
        if timeout is not None and not timeout > 0:
            raise ValueError("client: timeout must be positive, or None for no bound")
        if not user_agent or not _valid_header_value(user_agent):
            raise ValueError("client: user_agent is not a valid header value")
        self._allow = Allowance(fail_open_per_account, fail_open_per_address, fail_open_window, fail_open_subjects)
        self._host = u.hostname or ""
        self._port = u.port
        self._https = u.scheme == "https"
        self._prefix = u.path.rstrip("/")
        self._base = base_url.rstrip("/")
        self._token = token or ""
        self._source = token_source
        self._timeout = timeout
        self._agent = user_agent
        self._clock = clock
        self._ssl = ssl_context
        self._pool = _Pool(self._connect)

    def __repr__(self) -> str:
        return "Client(%r)" % (self._base,)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the idle connections. The Client stays usable."""
        self._pool.close()

    def stats(self) -> Stats:
        """The counts of the FAIL_OPEN allowance."""
        return self._allow.stats()

    # The verdict calls.

    def check(
        self,
        *,
        flow: str,
        account: Optional[str] = None,
        ip: Optional[str] = None,
        device_token: Optional[str] = None,
        captcha_solved: bool = False,
        password_fingerprint: Optional[str] = None,
        destination: Optional[str] = None,
        channel: Optional[str] = None,
        ref: Optional[str] = None,
        fail: Union[FailMode, str] = FAIL_DELAY,
    ) -> Verdict:
        """May this attempt go ahead now? Call it before looking at the
        credential, and keep a proceed's attempt token for the report.

        Always returns a usable Verdict. When ``error`` is None it is
        tollgate's; otherwise it is fail's answer (``fallback`` is set) and
        ``error`` says why, for the log. On a TollgateError with field
        "account", do not check the credential: answer the end user as for
        a wrong password. FAIL_OPEN proceeds within the allowance of the
        account and address, and delays past it.

        destination and channel name where an otp_verify code was sent.
        ref is your own opaque reference for the end user (your user id; at
        most 128 bytes, no control characters): tollgate never counts it and
        hands it back in the events the call causes (:func:`verify_webhook`).
        report and send take it too.
        """
        mode = coerce_mode(fail)
        body = _omit_empty([
            ("flow", flow, True), ("account", account, False), ("ip", ip, False),
            ("device_token", device_token, False), ("captcha_solved", bool(captcha_solved), False),
            ("password_fingerprint", password_fingerprint, False), ("destination", destination, False),
            ("channel", channel, False), ("ref", ref, False),
        ])
        subject = check_subject(flow or "", account or "", ip or "", bool(captcha_solved))
        return self._verdict_call("check", "/v1/check", body, mode, subject, CHECK_ACTIONS)

    def report(
        self,
        *,
        flow: str,
        outcome: str,
        account: Optional[str] = None,
        ip: Optional[str] = None,
        attempt: Optional[str] = None,
        device_token: Optional[str] = None,
        password_fingerprint: Optional[str] = None,
        destination: Optional[str] = None,
        channel: Optional[str] = None,
        ref: Optional[str] = None,
        breached: bool = False,
        fail: Union[FailMode, str] = FAIL_DELAY,
    ) -> Verdict:
        """How did the attempt end? outcome is "failure" or "success", with
        the attempt token the check returned; report failures of unknown
        accounts exactly as of known ones. The verdict is the next attempt's;
        a success carries a fresh device token, or is ``step_up``: the
        password was right, but sign the end user in only once a second
        factor passed (:meth:`step_up_passed`).

        breached: the password typed was found in a breached-password corpus
        (:meth:`breached`), for a success and a failure alike; only this
        boolean is sent, never the password or its hash.

        A report may be sent again after an error: an attempt settles once.
        As for check, the verdict is always usable; FAIL_CAPTCHA asks for a
        CAPTCHA, and FAIL_OPEN always proceeds (a report lets no one in, so
        the allowance neither holds nor counts it).
        """
        mode = coerce_mode(fail)
        body = _omit_empty([
            ("flow", flow, True), ("account", account, False), ("ip", ip, False),
            ("outcome", outcome, True), ("attempt", attempt, False), ("device_token", device_token, False),
            ("password_fingerprint", password_fingerprint, False), ("destination", destination, False),
            ("channel", channel, False), ("ref", ref, False), ("breached", bool(breached), False),
        ])
        return self._verdict_call("report", "/v1/report", body, mode, None, ACTIONS)

    def step_up_passed(
        self,
        *,
        ticket: str,
        account: str,
        ip: Optional[str] = None,
        device_token: Optional[str] = None,
        flow: str = STEP_UP_FLOW,
        fail: Union[FailMode, str] = FAIL_DELAY,
        attempt: Optional[str] = None,
    ) -> Verdict:
        """The second factor a ``step_up`` verdict asked for passed: report
        it with the ticket (that verdict's attempt), the login's account,
        address and device token. A proceed carries the device token the
        login earned: sign the end user in now and set the cookie. A ticket
        tollgate does not take (expired, another account's) comes back as a
        fallback whose error is a TollgateError of status 400: ask the end
        user to sign in again."""
        return self._step_up(OUTCOME_STEP_UP_PASSED, ticket, account, ip, device_token, flow, fail, attempt)

    def step_up_failed(
        self,
        *,
        ticket: str,
        account: str,
        ip: Optional[str] = None,
        device_token: Optional[str] = None,
        flow: str = STEP_UP_FLOW,
        fail: Union[FailMode, str] = FAIL_DELAY,
        attempt: Optional[str] = None,
    ) -> Verdict:
        """A second-factor code was wrong: counted on the step-up flow's own
        counters (never the password's). The verdict is the next code's
        (proceed, or delay); the ticket stays usable until it expires.

        Pass ``attempt``, the attempt of this try's own check on the step-up
        flow, to both reports: tollgate then settles the failure that check
        charged, so a wrong code counts once and a pass not at all. Without
        it the report is counted on its own, on top of the check's charge."""
        return self._step_up(OUTCOME_STEP_UP_FAILED, ticket, account, ip, device_token, flow, fail, attempt)

    def _step_up(self, outcome: str, ticket: str, account: str, ip: Optional[str], device_token: Optional[str],
                 flow: str, fail: Union[FailMode, str], attempt: Optional[str]) -> Verdict:
        # The try's check's attempt after the ticket, as tollgate reads it.
        both = ticket + "," + attempt if attempt else ticket
        return self.report(flow=flow, outcome=outcome, account=account, ip=ip, attempt=both,
                           device_token=device_token, fail=fail)

    def password_changed(
        self,
        *,
        account: str,
        ip: Optional[str] = None,
        flow: str = "login",
        ref: Optional[str] = None,
        fail: Union[FailMode, str] = FAIL_DELAY,
    ) -> Verdict:
        """The account's password was changed or reset, by a change you made
        once it took effect (after whatever it asks for: the old password, a
        link, a code): report it on the flow that checks that password, with
        the account as its logins name it and the address the change came
        from (required when the flow counts addresses, as the built-in login
        does). No attempt token: a change settles no attempt.

        tollgate clears the account's counters in flow and in every flow
        sharing its device trust (never an address's), emits account.reset,
        and with revoke_devices_on_password_change makes the account's
        device tokens issued before now count as none. A proceed carries no
        device token: a change is not a sign-in. As for report, the verdict
        is always usable and ``error`` says why it is a fallback; a change
        tollgate refuses (a step-up flow, one counting no account) is a
        fallback whose error is a TollgateError of status 400. Never make
        the change wait on it: the change has happened whatever tollgate
        answers.
        """
        return self.report(flow=flow, outcome=OUTCOME_PASSWORD_CHANGED, account=account, ip=ip, ref=ref, fail=fail)

    def breached(self, password: str, *, timeout: Optional[float] = DEFAULT_BREACHED_TIMEOUT) -> bool:
        """Whether password was found in tollgate's breached-password corpus,
        asked k-anonymously: the SHA-1 of its UTF-8 bytes is computed here
        and only its first five hex digits are sent (GET
        /v1/breached/{prefix}); the answer, a padded range, is matched here.

        Best-effort: any error, a timeout (timeout seconds, by default
        :data:`DEFAULT_BREACHED_TIMEOUT`), or an answer other than 200 (404
        when tollgate has no corpus) is False, "not known to be breached";
        it never raises and never fails a login. Call it once the password
        was checked, for a success and a failure alike, and pass the answer
        as report's ``breached``.
        """
        try:
            if not isinstance(password, str):
                return False
            digest = hashlib.sha1(password.encode("utf-8", "surrogatepass")).hexdigest().upper()
            if not _HEX40.fullmatch(digest):  # pragma: no cover - hexdigest is always this
                return False
            body = self._call("breached", "/v1/breached/" + digest[:5], None, raw=True, timeout=timeout,
                              limit=MAX_RANGE_BYTES, status=(200,))
            return breached_range_count(body, digest[5:]) > 0
        except Exception:  # best-effort: a range that cannot be had is "not known"
            return False

    def send(
        self,
        *,
        destination: str,
        channel: str,
        flow: Optional[str] = None,
        ip: Optional[str] = None,
        account: Optional[str] = None,
        device_token: Optional[str] = None,
        captcha_solved: bool = False,
        ref: Optional[str] = None,
        fail: Union[FailMode, str] = FAIL_DELAY,
    ) -> Verdict:
        """May a one-time code be sent to destination now? Send it on proceed
        only, and show the end user the same message whatever the verdict
        (serve :meth:`Responder.accept` after sending).

        channel is "sms", "voice", "whatsapp" or "email"; flow defaults to
        "otp_send". FAIL_OPEN sends within the allowance of the destination
        (counted like an account, whatever the channel) and address;
        FAIL_CAPTCHA asks for a CAPTCHA first.
        """
        mode = coerce_mode(fail)
        body = _omit_empty([
            ("flow", flow, False), ("destination", destination, True), ("channel", channel, True),
            ("ip", ip, False), ("account", account, False), ("device_token", device_token, False),
            ("captcha_solved", bool(captcha_solved), False), ("ref", ref, False),
        ])
        subject = send_subject(flow or "", destination or "", channel or "", ip or "", bool(captcha_solved))
        return self._verdict_call("send", "/v1/otp/send", body, mode, subject, CHECK_ACTIONS)

    def _verdict_call(self, op: str, path: str, body: List[Field], mode: FailMode, subject: Optional[Subject],
                      actions: Any) -> Verdict:
        try:
            obj = self._call(op, path, body)
            d = _wire.decode(obj, _wire.VERDICT)
            if d["action"] not in actions:
                raise Unavailable(op, "the answer is not a verdict (unknown action)")
            return Verdict(**d)
        except _wire.WireError:
            err: BaseException = Unavailable(op, "the answer is not the JSON this call expects")
        except (TollgateError, Unavailable) as e:
            err = e
        except Exception as e:  # never let a login break on the client's own failure
            err = Unavailable(op, "unexpected error (%s)" % type(e).__name__)
            err.__cause__ = e
        if subject is None:
            return fallback(mode, False, err)
        return self._fallback_for(mode, subject, err)

    def _fallback_for(self, mode: FailMode, s: Subject, err: BaseException) -> Verdict:
        v = fallback(mode, s.captcha_solved, err)
        if mode is not FailMode.OPEN or v.action != PROCEED:
            return v
        if self._allow.take(int(self._clock() * 1_000_000_000), s):
            return v
        v = fallback(FAIL_DELAY, False, err)
        v.reasons.append(REASON_FALLBACK_ALLOWANCE)
        return v

    # The admin calls.

    def explain(
        self,
        *,
        flow: str,
        account: Optional[str] = None,
        ip: Optional[str] = None,
        destination: Optional[str] = None,
        channel: Optional[str] = None,
    ) -> Explanation:
        """Why is a subject delayed? Every rule of the flow that counts it,
        with its state, and the verdict a check would get now; nothing is
        counted. Needs admin:read with auth. Raises TollgateError or
        Unavailable."""
        body = _omit_empty([
            ("flow", flow, True), ("account", account, False), ("ip", ip, False),
            ("destination", destination, False), ("channel", channel, False),
        ])
        d = self._admin("explain", "/v1/admin/explain", body, _wire.EXPLANATION)
        return Explanation(
            flow=d["flow"],
            verdict=Verdict(**d["verdict"]),
            rules=[RuleState(**r) for r in d["rules"]],
            entries=[Entry(**e) for e in d["entries"]],
        )

    def reset(
        self,
        *,
        flow: str,
        reason: str,
        account: Optional[str] = None,
        ip: Optional[str] = None,
        destination: Optional[str] = None,
        channel: Optional[str] = None,
        ref: Optional[str] = None,
    ) -> int:
        """Clear one subject's state in a flow; returns how many keys went.
        tollgate audits it with reason (write no identifier in it). ref, with
        account, is your own reference for its owner, passed only to the
        account.reset notice, as in check. Needs admin:write with auth.
        Raises TollgateError or Unavailable."""
        body = _omit_empty([
            ("flow", flow, True), ("account", account, False), ("ip", ip, False),
            ("destination", destination, False), ("channel", channel, False), ("reason", reason, True),
            ("ref", ref, False),
        ])
        return int(self._admin("reset", "/v1/admin/reset", body, _wire.RESET_RESULT)["deleted"])

    def allow(
        self,
        *,
        expires_in: str,
        reason: str,
        flow: Optional[str] = None,
        ip_range: Optional[str] = None,
        destination_prefix: Optional[str] = None,
        country: Optional[str] = None,
    ) -> Entry:
        """Add a temporary allow entry (exactly one of ip_range,
        destination_prefix, country; expires_in such as "4h"): matching
        calls skip the rules on that kind of subject until it expires.
        Needs admin:write with auth. Raises TollgateError or Unavailable."""
        body = _omit_empty([
            ("flow", flow, False), ("ip_range", ip_range, False), ("destination_prefix", destination_prefix, False),
            ("country", country, False), ("expires_in", expires_in, True), ("reason", reason, True),
        ])
        return Entry(**self._admin("allow", "/v1/admin/allow", body, _wire.ENTRY))

    def deny(
        self,
        *,
        expires_in: str,
        reason: str,
        flow: Optional[str] = None,
        ip_range: Optional[str] = None,
        destination_prefix: Optional[str] = None,
        country: Optional[str] = None,
        action: Optional[str] = None,
    ) -> Entry:
        """Add a temporary block (action "block" or None) or "captcha"
        entry, answered before any rule counts a matching call. Needs
        admin:write with auth. Raises TollgateError or Unavailable."""
        body = _omit_empty([
            ("flow", flow, False), ("ip_range", ip_range, False), ("destination_prefix", destination_prefix, False),
            ("country", country, False), ("action", action, False), ("expires_in", expires_in, True),
            ("reason", reason, True),
        ])
        return Entry(**self._admin("deny", "/v1/admin/deny", body, _wire.ENTRY))

    def entries(self, flow: Optional[str] = None) -> List[Entry]:
        """The tenant's unexpired entries, oldest first; with flow, those
        that apply to it. Needs admin:read with auth. Raises TollgateError
        or Unavailable."""
        path = "/v1/admin/entries"
        if flow:
            path += "?flow=" + urllib.parse.quote_plus(flow, safe="")
        d = self._admin("entries", path, None, _wire.ENTRIES)
        return [Entry(**e) for e in d["entries"]]

    def remove(self, *, id: str, reason: str) -> bool:
        """Delete an entry by id; False when the tenant had no such entry.
        Needs admin:write with auth. Raises TollgateError or Unavailable."""
        body = _omit_empty([("id", id, True), ("reason", reason, True)])
        return bool(self._admin("remove", "/v1/admin/remove", body, _wire.REMOVED)["removed"])

    def held(
        self,
        *,
        flow: Optional[str] = None,
        kind: Optional[str] = None,
        cursor: Optional[str] = None,
        limit: int = 0,
    ) -> HeldList:
        """A page of the subjects held back now (accounts in backoff,
        addresses over a limit), with their identifiers, from tollgate's
        held-subjects index: of flow and kind ("account" or "ip") when
        given; cursor is the previous page's next; limit 1 to 1000 (0:
        tollgate's 100). A TollgateError of status 404 while the index is
        off. Needs admin:read with auth. Raises TollgateError or
        Unavailable."""
        query = [(k, v) for k, v in (("flow", flow), ("kind", kind), ("cursor", cursor)) if v]
        if limit:
            query.append(("limit", str(int(limit))))
        path = "/v1/admin/held" + ("?" + urllib.parse.urlencode(query) if query else "")
        d = self._admin("held", path, None, _held.HELD_LIST)
        return HeldList(subjects=[HeldSubject(**x) for x in d["subjects"]], next=d["next"], counts=d["counts"])

    def reset_held(
        self,
        *,
        flow: str,
        reason: str,
        kind: Optional[str] = None,
        subjects: Optional[Sequence[str]] = None,
        dry_run: bool = False,
    ) -> HeldReset:
        """Free the held subjects of a flow in one call: those named in
        subjects (as held() gives them), or every one the index lists (of
        kind); dry_run only counts them. tollgate audits it with reason
        (write no identifier in it). Needs admin:write with auth. Raises
        TollgateError or Unavailable."""
        body: List[Field] = [("flow", flow)]
        if kind:
            body.append(("kind", kind))
        if subjects:
            if isinstance(subjects, str) or not all(isinstance(x, str) for x in subjects):
                raise TypeError("subjects must be a sequence of strings")
            body.append(("subjects", list(subjects)))  # type: ignore[arg-type]
        body.append(("reason", reason))
        if dry_run:
            body.append(("dry_run", True))
        return HeldReset(**self._admin("reset-held", "/v1/admin/reset-held", body, _held.HELD_RESET))

    def reload(self) -> ReloadResult:
        """Have tollgate re-read its configuration file and swap its policy
        at once, as SIGHUP does; returns the flows in force and the settings
        the file changed that only a restart applies. A file that does not
        validate raises a TollgateError of status 409 and type
        ``PROBLEM_BASE + "config-invalid"`` whose detail names the line; the
        running policy stays. Needs admin:write of the default tenant with
        auth. Raises TollgateError or Unavailable."""
        d = self._admin("reload", "/v1/admin/reload", [], _wire.RELOAD_RESULT)
        return ReloadResult(flows=d["flows"], restart_needed=d["restart_needed"])

    def dead_letters(self, limit: Optional[int] = None) -> List[DeadLetter]:
        """The tenant's webhook dead letters, newest first: the deliveries
        tollgate gave up on, each naming its event and holding none of its
        data. limit is how many at most, 1 to 1000; None asks for the
        server's default (100), and any other value raises a TollgateError
        of status 400, type ``PROBLEM_BASE + "invalid-field"`` and field
        "limit". A server that sends no webhooks (no ``webhooks`` section in
        its configuration) raises a TollgateError of status 404 and type
        ``PROBLEM_BASE + "not-found"``. Needs admin:read with auth. Raises
        TollgateError or Unavailable, and TypeError when limit is not an
        int."""
        path = "/v1/admin/webhooks/dead-letters"
        if limit is not None:
            if isinstance(limit, bool) or not isinstance(limit, int):
                raise TypeError("limit must be an int")
            path += "?limit=%d" % limit
        d = self._admin("dead-letters", path, None, _wire.DEAD_LETTERS)
        return [DeadLetter(**x) for x in d["dead_letters"]]

    def replay_webhook(self, *, id: str, reason: str) -> bool:
        """Put the tenant's dead letter id back for delivery to its endpoint,
        with the same webhook-id (a receiver that handled it already drops
        it) and a new age limit; tollgate audits it with reason (write no
        identifier in it). False when the tenant has no dead letter by that
        id. As :meth:`dead_letters`, a server that sends no webhooks raises a
        404 not-found TollgateError. Needs admin:write with auth. Raises
        TollgateError or Unavailable."""
        body = _omit_empty([("id", id, True), ("reason", reason, True)])
        return bool(self._admin("replay", "/v1/admin/webhooks/replay", body, _wire.REPLAYED)["replayed"])

    # The challenge calls, for a framework plug-in that answers a captcha
    # verdict with tollgate's proof of work or a provider CAPTCHA.

    def challenge(self, kind: Optional[str] = None) -> Challenge:
        """Issue a challenge for the page that answers a captcha verdict:
        kind "pow" (None: the built-in proof of work) or a provider tollgate
        is configured with ("turnstile", "hcaptcha", "recaptcha"). Needs the
        verdicts scope with auth. Raises TollgateError (404 not-found when
        the server issues no challenges) or Unavailable."""
        body = _omit_empty([("kind", kind, False)])
        return Challenge(**self._admin("challenge", "/v1/challenge", body, _wire.CHALLENGE))

    def verify_challenge(
        self,
        *,
        token: Optional[str] = None,
        nonce: Optional[str] = None,
        provider: Optional[str] = None,
        response: Optional[str] = None,
        remote_ip: Optional[str] = None,
    ) -> ChallengeResult:
        """Verify a solution, once: a proof-of-work token and its nonce (in
        decimal), or a provider's widget response with provider (the token
        too if :meth:`challenge` issued one, and the end user's remote_ip if
        known). ``solved`` is true at most once per token or response, on
        every instance sharing tollgate's store. A solution of the wrong
        shape raises a 400 TollgateError; a store that does not answer a
        503 one. Raises TollgateError or Unavailable."""
        body = _omit_empty([
            ("token", token, False), ("nonce", nonce, False), ("provider", provider, False),
            ("response", response, False), ("remote_ip", remote_ip, False),
        ])
        return ChallengeResult(**self._admin("verify-challenge", "/v1/challenge/verify", body,
                                             _wire.CHALLENGE_VERIFIED))

    def challenge_solver(self) -> bytes:
        """The proof-of-work solver script (GET /v1/challenge/solver.js):
        self-contained JavaScript to serve from your own origin or inline
        under a CSP nonce. Raises TollgateError or Unavailable."""
        out = self._call("solver", "/v1/challenge/solver.js", None, raw=True)
        assert isinstance(out, bytes)
        return out

    def _admin(self, op: str, path: str, body: Optional[List[Field]], schema: _wire.Schema) -> Dict[str, Any]:
        try:
            return _wire.decode(self._call(op, path, body), schema)
        except _wire.WireError:
            raise Unavailable(op, "the answer is not the JSON this call expects") from None

    # The transport.

    def _connect(self, timeout: float) -> http.client.HTTPConnection:
        t = timeout if timeout > 0 else None
        if self._https:
            ctx = self._ssl or ssl.create_default_context()
            return http.client.HTTPSConnection(self._host, self._port, timeout=t, context=ctx)
        return http.client.HTTPConnection(self._host, self._port, timeout=t)

    def _call(self, op: str, path: str, body: Optional[List[Field]], raw: bool = False,
              timeout: Union[Optional[float], str] = "client", limit: int = MAX_RESPONSE_BYTES,
              status: Tuple[int, ...] = (200, 201)) -> Any:
        """Send body (None: a GET) to path and return an answer of a status
        in status parsed as JSON (with raw, its bytes, at most limit);
        raises TollgateError, Unavailable or WireError. timeout is the
        client's unless given. Errors never hold a request value."""
        t = self._timeout if timeout == "client" else timeout
        deadline = None if t is None else time.monotonic() + float(t)

        def remaining() -> Optional[float]:
            if deadline is None:
                return None
            left = deadline - time.monotonic()
            if left <= 0:
                raise Timeout(op)
            return left

        token = self._token
        if self._source is not None:
            try:
                token = self._source() or ""
            except Exception as e:  # the source's own failure: no token
                raise Unavailable(op, "no bearer token from the token source", e) from e
            if not isinstance(token, str) or not _valid_header_value(token):
                raise Unavailable(op, "the token source gave a token that is not a valid header value")
        headers = {"Accept": _ACCEPT, "User-Agent": self._agent}
        data = None
        method = "GET"
        if body is not None:
            method = "POST"
            data = _wire.encode(body)
            headers["Content-Type"] = "application/json"
        if token:
            headers["Authorization"] = "Bearer " + token
        encoded = {k: v.encode("utf-8") for k, v in headers.items()}

        left = remaining()
        conn, _ = self._pool.get(left if left is not None else 0)
        reusable = False
        try:
            try:
                if conn.sock is not None:
                    conn.sock.settimeout(left)
                conn.timeout = left
                conn.request(method, self._prefix + path, body=data, headers=encoded)  # type: ignore[arg-type]
                self._settimeout(conn, remaining())
                res = conn.getresponse()
            except Timeout:
                raise
            except (socket.timeout, TimeoutError) as e:
                raise Timeout(op, e) from e
            except (OSError, http.client.HTTPException) as e:
                raise Unavailable(op, "tollgate does not answer", e) from e
            except ValueError:  # http.client refused to write it; no detail: it may quote a value
                raise Unavailable(op, "the request could not be written") from None
            if res.status not in status:
                err = self._problem(op, res, conn, remaining)
                reusable = self._drain(res, conn, deadline)
                raise err
            b = self._read(op, res, conn, limit + 1, remaining)
            if len(b) > limit:
                raise Unavailable(op, "the answer is too large")
            reusable = res.isclosed() and not res.will_close
            return b if raw else _wire.parse(b)
        finally:
            if reusable:
                self._pool.put(conn)
            else:
                conn.close()

    @staticmethod
    def _settimeout(conn: http.client.HTTPConnection, left: Optional[float]) -> None:
        if conn.sock is not None:
            conn.sock.settimeout(left)

    def _read(
        self,
        op: str,
        res: http.client.HTTPResponse,
        conn: http.client.HTTPConnection,
        limit: int,
        remaining: Callable[[], Optional[float]],
    ) -> bytes:
        chunks: List[bytes] = []
        total = 0
        try:
            while total < limit:
                self._settimeout(conn, remaining())
                b = res.read(min(_READ_CHUNK, limit - total))
                if not b:
                    break
                chunks.append(b)
                total += len(b)
        except Timeout:
            raise
        except (socket.timeout, TimeoutError) as e:
            raise Timeout(op, e) from e
        except (OSError, http.client.HTTPException) as e:
            raise Unavailable(op, "reading the answer", e) from e
        return b"".join(chunks)

    def _problem(
        self,
        op: str,
        res: http.client.HTTPResponse,
        conn: http.client.HTTPConnection,
        remaining: Callable[[], Optional[float]],
    ) -> TollgateError:
        status = res.status
        h = res.msg
        fields = {"type": "", "title": "", "detail": "", "field": "", "request_id": h.get("X-Request-Id") or ""}
        if _media_type(h.get("Content-Type")) == "application/problem+json":
            try:
                p = _wire.decode(_wire.parse(self._read(op, res, conn, MAX_PROBLEM_BYTES, remaining)), _wire.PROBLEM)
            except (_wire.WireError, Unavailable):
                p = None
            if p is not None:
                for k in ("type", "title", "detail", "field"):
                    fields[k] = p[k]
                if p["request_id"]:
                    fields["request_id"] = p["request_id"]
        if not fields["title"]:
            fields["title"] = STATUS_TEXT.get(status, "")
        return TollgateError(status, retry_after=_retry_after(h.get("Retry-After")), op=op, **fields)

    def _drain(self, res: http.client.HTTPResponse, conn: http.client.HTTPConnection, deadline: Optional[float]) -> bool:
        """Read what is left of an error answer, so that the connection can
        be reused; False when it cannot be."""
        try:
            total = 0
            while not res.isclosed() and total <= MAX_RESPONSE_BYTES:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._settimeout(conn, left)
                b = res.read(_READ_CHUNK)
                if not b:
                    break
                total += len(b)
        except (OSError, http.client.HTTPException):
            return False
        return res.isclosed() and not res.will_close
