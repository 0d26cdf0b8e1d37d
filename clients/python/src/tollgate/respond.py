"""The end user's answer to a verdict (api/client/respond.go).

:class:`Responder` turns a verdict into an :class:`Answer` for any web
framework: a status, header fields and body bytes, or "go ahead". It reads
only the verdict's action, delay_ms and retry_after, never its reasons,
tokens or the account, so two end users with the same verdict get the same
bytes, and an answer never tells an unknown account from a wrong password.

* proceed: nothing to write; go ahead after ``hold`` seconds (a queued call).
* delay: 429 Too Many Requests with ``Retry-After`` in whole seconds (at
  least 1), ``RateLimit: "<policy>";r=0;t=<seconds>``
  (draft-ietf-httpapi-ratelimit-headers-10), ``Cache-Control: no-store`` and
  an RFC 9457 problem document whose detail says only how long to wait.
* captcha: your captcha hook's page, or a 429 problem asking for one.
* deny (sends only): the answer a sent code gets (:meth:`Responder.accept`).
* step_up (a success report's): never a proceed, for it is not a login
  yet: your step_up hook's page, or a 403 problem saying a second factor is
  needed; ``step_up`` is set on the answer. A plug-in serves its own
  second factor instead (tollgate.django does).
* anything else, a missing action included: a delay, never a proceed.
"""

from __future__ import annotations

import http
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, List, Mapping, Optional, Tuple, Union

from . import _wire
from .failmode import CAPTCHA, DENY, PROCEED, STEP_UP, Verdict

__all__ = ["Responder", "Answer", "HookAnswer"]

#: What a hook returns: a status, header fields (pairs or a mapping) and a
#: body (bytes, or text sent as UTF-8).
HookAnswer = Tuple[int, Union[Iterable[Tuple[str, str]], Mapping[str, str]], Union[bytes, str]]

_MAX_DELAY_SECONDS = 1 << 31
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")


@dataclass
class Answer:
    """What to tell the end user.

    Attributes:
        proceed: True when the caller goes ahead (checks the credential or
            sends the code) after ``hold``; nothing is to be written then.
            When False, write status, headers and body, and nothing more.
        hold: with proceed, seconds to hold the call before going ahead
            without checking again (a queued call's place); 0 otherwise.
        status: the HTTP status, or 0 with proceed.
        headers: the header fields, in order.
        body: the body bytes.
        step_up: True for a step_up verdict: the password was right, but
            no session may start until a second factor passes.
    """

    proceed: bool
    hold: float = 0.0
    status: int = 0
    headers: List[Tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    step_up: bool = False

    @property
    def status_line(self) -> str:
        """The status with its reason phrase, as WSGI's start_response takes
        it, such as "429 Too Many Requests"."""
        try:
            phrase = http.HTTPStatus(self.status).phrase
        except ValueError:
            phrase = "Unknown"
        return "%d %s" % (self.status, phrase)

    def header(self, name: str) -> Optional[str]:
        """The first value of header name (any case), or None."""
        lname = name.lower()
        for k, v in self.headers:
            if k.lower() == lname:
                return v
        return None


def _printable_ascii(s: str) -> bool:
    return bool(s) and all(0x20 <= ord(c) <= 0x7E for c in s)


def _sf_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _absolute_uri(s: str) -> bool:
    """Whether s is an absolute URI as the Go client checks it (url.Parse
    without error, with a scheme, printable ASCII, none of ``"<>\\^`{|}``
    or space)."""
    if not _printable_ascii(s) or any(c in ' "<>\\^`{|}' for c in s):
        return False
    m = _SCHEME.match(s)
    if m is None:
        return False
    rest = s[m.end():]
    rest, _, fragment = rest.partition("#")
    if _BAD_ESCAPE.search(fragment):
        return False
    rest, _, _query = rest.partition("?")
    if rest.startswith("//"):
        authority, slash, path = rest[2:].partition("/")
        host = authority.rpartition("@")[2]
        if host.startswith("["):
            end = host.find("]")
            if end < 0:
                return False
            port = host[end + 1:]
            if port and (port[0] != ":" or not port[1:].isdigit() and port[1:] != ""):
                return False
        elif ":" in host:
            port = host.rpartition(":")[2]
            if port and not port.isdigit():
                return False
        if _BAD_ESCAPE.search(authority):
            return False
        rest = slash + path
    return not _BAD_ESCAPE.search(rest)


def _hook_answer(result: HookAnswer, name: str) -> Tuple[int, List[Tuple[str, str]], bytes]:
    try:
        status, headers, body = result
    except (TypeError, ValueError):
        raise TypeError("the %s hook must return (status, headers, body)" % name) from None
    items = list(headers.items()) if isinstance(headers, Mapping) else [(k, v) for k, v in headers]
    if isinstance(body, str):
        body = body.encode("utf-8")
    return int(status), [(str(k), str(v)) for k, v in items], bytes(body)


def _retry_after_of(v: Verdict) -> int:
    secs = v.retry_after
    ms = v.delay_ms
    if ms > 0:
        secs = max(secs, -(-ms // 1000))
    return min(max(secs, 1), _MAX_DELAY_SECONDS)


class Responder:
    """Turns verdicts into the answers end users get. Every setting is the
    same for every end user: nothing in it can depend on the account or on
    why a verdict was given. A Responder is safe to share between threads.

    Args:
        policy: the quota policy named in a delay's RateLimit field: use the
            flow's name; 1 to 64 printable ASCII characters.
        problem_type: the type URI of the problem documents, an absolute
            URI. "about:blank" pairs with the status phrase as title
            (RFC 9457 §4.2.1): set both or neither.
        title: the problem documents' title, the same for every answer;
            by default the answer's status phrase, as "about:blank" asks:
            "Too Many Requests", or "Forbidden" for a step_up's 403.
        captcha: called with no arguments for a captcha verdict; returns
            (status, headers, body): your page that shows a CAPTCHA and,
            once your provider confirms it, lets the end user try again
            with ``captcha_solved=True``. It never sees the verdict; it must
            not tell end users apart by anything (the account least of
            all). By default: a 429 problem asking for a CAPTCHA, without
            Retry-After (waiting does not lift it).
        accepted: called with no arguments for a send flow's answer once a
            code is on its way (a 2xx, best 202, the same for every end
            user); :meth:`respond` serves it for deny and you serve it with
            :meth:`accept` after sending, so a refused send and a sent one
            look alike. By default: 202 with an empty body.
        delay: called with the wait in whole seconds (at least 1) for a
            delay verdict; returns (status, headers, body), status 429.
            Retry-After, RateLimit and Cache-Control: no-store come first
            in the answer; a field of the same name the hook returns
            replaces one of them. The wait is all it may depend on. By
            default: a problem document saying how long to wait.
        step_up: called with no arguments for a success report's step_up
            verdict; returns (status, headers, body): your page that asks
            for the second factor (Cache-Control: no-store is added unless
            it sets its own). By default: a 403 problem saying a second
            factor is needed.

    An empty policy, problem_type or title means its default, as in Go.

    Raises:
        ValueError: policy or problem_type cannot be sent as given.
    """

    __slots__ = ("_policy", "_problem_type", "_title", "_captcha", "_accepted", "_delay", "_step_up")

    def __init__(
        self,
        policy: str = "login",
        problem_type: str = "about:blank",
        title: str = "",
        captcha: Optional[Callable[[], HookAnswer]] = None,
        accepted: Optional[Callable[[], HookAnswer]] = None,
        delay: Optional[Callable[[int], HookAnswer]] = None,
        step_up: Optional[Callable[[], HookAnswer]] = None,
    ) -> None:
        policy = policy or "login"
        if len(policy.encode("utf-8")) > 64 or not _printable_ascii(policy):
            raise ValueError("responder: policy must be 1 to 64 printable ASCII characters")
        problem_type = problem_type or "about:blank"
        if not _absolute_uri(problem_type):
            raise ValueError("responder: problem_type must be an absolute URI")
        self._policy = _sf_string(policy)
        self._problem_type = problem_type
        self._title = title
        self._captcha = captcha
        self._accepted = accepted
        self._delay = delay
        self._step_up = step_up

    def respond(self, verdict: Union[Verdict, Mapping[str, Any]]) -> Answer:
        """The answer to verdict (a :class:`Verdict`, or a verdict as a
        decoded JSON mapping); see the module's documentation."""
        v = verdict if isinstance(verdict, Verdict) else Verdict.from_json(verdict)
        if v.action == PROCEED:
            return Answer(proceed=True, hold=v.delay_ms / 1000.0 if v.delay_ms > 0 else 0.0)
        if v.action == CAPTCHA:
            if self._captcha is not None:
                status, headers, body = _hook_answer(self._captcha(), "captcha")
                return Answer(proceed=False, status=status, headers=headers, body=body)
            return self._problem(429, "Complete a CAPTCHA to continue.", [])
        if v.action == DENY:
            return self.accept()
        if v.action == STEP_UP:
            if self._step_up is not None:
                status, headers, body = _hook_answer(self._step_up(), "step_up")
                if not any(k.lower() == "cache-control" for k, _ in headers):
                    headers = [("Cache-Control", "no-store")] + headers
                return Answer(proceed=False, status=status, headers=headers, body=body, step_up=True)
            a = self._problem(403, "Confirm it is you with a second factor to finish signing in.", [])
            a.step_up = True
            return a
        # delay, and any action this client does not know: fail closed
        wait = _retry_after_of(v)
        secs = str(wait)
        limit = [("Retry-After", secs), ("RateLimit", self._policy + ";r=0;t=" + secs)]
        if self._delay is not None:
            status, headers, body = _hook_answer(self._delay(min(wait, (1 << 31) - 1)), "delay")
            names = {k.lower() for k, _ in headers}
            base = [h for h in limit + [("Cache-Control", "no-store")] if h[0].lower() not in names]
            return Answer(proceed=False, status=status, headers=base + headers, body=body)
        unit = " second." if secs == "1" else " seconds."
        return self._problem(429, "Try again in " + secs + unit, limit)

    def accept(self) -> Answer:
        """The answer of a send flow once a code is on its way: the accepted
        hook's, or 202 with an empty body and Cache-Control: no-store.
        Serve it after sending a code; respond serves it for deny."""
        if self._accepted is not None:
            status, headers, body = _hook_answer(self._accepted(), "accepted")
            return Answer(proceed=False, status=status, headers=headers, body=body)
        return Answer(proceed=False, status=202, headers=[("Cache-Control", "no-store"), ("Content-Length", "0")])

    def _problem(self, status: int, detail: str, extra: List[Tuple[str, str]]) -> Answer:
        # Without a title, status's phrase: RFC 9457 §4.2.1 has about:blank's
        # title be the status phrase, so a step_up's 403 must not say "Too
        # Many Requests".
        title = self._title or http.HTTPStatus(status).phrase
        body = _wire.encode(
            [("type", self._problem_type), ("title", title), ("status", status), ("detail", detail)]
        ) + b"\n"
        headers = [
            ("Content-Type", "application/problem+json"),
            ("Content-Length", str(len(body))),
            ("Cache-Control", "no-store"),
        ] + extra
        return Answer(proceed=False, status=status, headers=headers, body=body)
