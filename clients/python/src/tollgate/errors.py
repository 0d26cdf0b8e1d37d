"""The errors of tollgate's calls.

Two kinds, as in the Go client (api/client/errors.go):

* :class:`TollgateError`: tollgate (or whatever answers at its address)
  answered with a status other than 200 or 201. A 5xx or a 429 is an
  unavailability (:attr:`TollgateError.unavailable`); any other 4xx means
  the request or its token was refused, and no fail mode waves it through.
* :class:`Unavailable`: tollgate could not be asked or gave no usable answer
  (unreachable, an answer that is not the JSON the call expects, no token
  from the token source); :class:`Timeout` when it ran out of time.

No message ever holds a request's value (account, address, destination,
tokens): those travel in request bodies only. Messages hold the call, the
status, tollgate's problem type and detail (which never repeat input), and
transport errors, which name tollgate's address.
"""

from __future__ import annotations

from typing import Optional

__all__ = ["TollgateError", "Unavailable", "Timeout", "is_unavailable", "PROBLEM_BASE"]

#: The prefix of every problem type URI tollgate answers with.
PROBLEM_BASE = "https://tollgate.dev/problems/"

#: Go's net/http StatusText, the title of an answer that is not a problem.
STATUS_TEXT = {
    100: "Continue", 101: "Switching Protocols", 102: "Processing", 103: "Early Hints",
    200: "OK", 201: "Created", 202: "Accepted", 203: "Non-Authoritative Information",
    204: "No Content", 205: "Reset Content", 206: "Partial Content", 207: "Multi-Status",
    208: "Already Reported", 226: "IM Used", 300: "Multiple Choices", 301: "Moved Permanently",
    302: "Found", 303: "See Other", 304: "Not Modified", 305: "Use Proxy",
    307: "Temporary Redirect", 308: "Permanent Redirect", 400: "Bad Request",
    401: "Unauthorized", 402: "Payment Required", 403: "Forbidden", 404: "Not Found",
    405: "Method Not Allowed", 406: "Not Acceptable", 407: "Proxy Authentication Required",
    408: "Request Timeout", 409: "Conflict", 410: "Gone", 411: "Length Required",
    412: "Precondition Failed", 413: "Request Entity Too Large", 414: "Request URI Too Long",
    415: "Unsupported Media Type", 416: "Requested Range Not Satisfiable",
    417: "Expectation Failed", 418: "I'm a teapot", 421: "Misdirected Request",
    422: "Unprocessable Entity", 423: "Locked", 424: "Failed Dependency", 425: "Too Early",
    426: "Upgrade Required", 428: "Precondition Required", 429: "Too Many Requests",
    431: "Request Header Fields Too Large", 451: "Unavailable For Legal Reasons",
    500: "Internal Server Error", 501: "Not Implemented", 502: "Bad Gateway",
    503: "Service Unavailable", 504: "Gateway Timeout", 505: "HTTP Version Not Supported",
    506: "Variant Also Negotiates", 507: "Insufficient Storage", 508: "Loop Detected",
    510: "Not Extended", 511: "Network Authentication Required",
}


class TollgateError(Exception):
    """An answer other than 200 or 201: a problem document's members, or
    the status alone when the answer was not ``application/problem+json``.

    Attributes:
        op: the call: "check", "report", "send", "explain", "reset", "allow",
            "deny", "entries", "remove", "reload", "dead-letters"
            (dead_letters) or "replay" (replay_webhook).
        status: the HTTP status code.
        type: the problem type URI; "" when the answer was not a problem.
        title: the problem's title, or the status text.
        detail: the problem's detail, for the caller's developer.
        field: on a 400, the request field at fault, such as "ip".
        request_id: the request's id in tollgate's log.
        retry_after: the seconds the Retry-After header asked for, or 0.
    """

    def __init__(
        self,
        status: int,
        type: str = "",
        title: str = "",
        detail: str = "",
        field: str = "",
        request_id: str = "",
        retry_after: int = 0,
        *,
        op: str = "",
    ) -> None:
        self.op = op
        self.status = status
        self.type = type
        self.title = title
        self.detail = detail
        self.field = field
        self.request_id = request_id
        self.retry_after = retry_after
        super().__init__(self._message())

    @property
    def unavailable(self) -> bool:
        """True for a 5xx (such as 503 overloaded) or a 429: tollgate, or a
        proxy in front of it, gave no verdict, and the fail mode answers."""
        return self.status >= 500 or self.status == 429

    def _message(self) -> str:
        parts = ["tollgate: ", self.op or "call", ": ", str(self.status)]
        if self.type.startswith(PROBLEM_BASE):
            parts += [" ", self.type[len(PROBLEM_BASE):]]
            if self.detail:
                parts += [": ", self.detail]
        elif self.title:
            parts += [" ", self.title]
        if self.request_id:
            parts += [" (request id ", self.request_id, ")"]
        return "".join(parts)

    def __str__(self) -> str:
        return self._message()

    def __repr__(self) -> str:
        return "TollgateError(%r, type=%r, field=%r, op=%r)" % (
            self.status, self.type, self.field, self.op)


class Unavailable(Exception):
    """Tollgate could not be asked, or gave no answer the call can use.

    Attributes:
        op: the call, as for :class:`TollgateError`.
        reason: what went wrong, without any request value.
        cause: the underlying exception, if any (also ``__cause__``).
    """

    def __init__(self, op: str, reason: str, cause: Optional[BaseException] = None) -> None:
        self.op = op
        self.reason = reason
        self.cause = cause
        msg = "tollgate: %s: %s" % (op, reason)
        if cause is not None:
            text = str(cause) or type(cause).__name__
            msg += ": " + text
        super().__init__(msg)
        if cause is not None:
            self.__cause__ = cause


class Timeout(Unavailable):
    """A call that ran out of time: connecting, waiting for the answer or
    reading it. Every Timeout is also :class:`Unavailable`."""

    def __init__(self, op: str, cause: Optional[BaseException] = None) -> None:
        super().__init__(op, "tollgate did not answer in time", cause)


def is_unavailable(err: Optional[BaseException]) -> bool:
    """Whether err means tollgate gave no verdict: an :class:`Unavailable`
    (timeouts included) or a :class:`TollgateError` that is a 5xx or 429.
    The fail modes answer these with their own verdict; anything else (a
    refused request) is answered closed."""
    if isinstance(err, Unavailable):
        return True
    return isinstance(err, TollgateError) and err.unavailable
