"""Verifying the events tollgate posts to webhook endpoints.

As the Go client's ``VerifyWebhook`` (api/client/webhook.go), held to the
same vectors (clients/testdata/webhooks.json). tollgate signs each event as
Standard Webhooks do: ``webhook-id``, ``webhook-timestamp`` (Unix seconds)
and ``webhook-signature`` (``v1,`` and the base64 HMAC-SHA256 of
``id.timestamp.body`` under the base64 key after ``whsec_``; several
space-separated signatures while a secret is rotated).
"""

from __future__ import annotations

import base64
import email.message
import hashlib
import hmac
import json
import math
import re
import time
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple, Union

__all__ = [
    "verify_webhook",
    "WebhookEvent",
    "WebhookData",
    "WebhookVerificationError",
    "WEBHOOK_EVENT_TYPES",
    "DEFAULT_WEBHOOK_TOLERANCE",
]

#: The event types tollgate posts. A later tollgate may post others: handle
#: the ones you know and answer 2xx to the rest.
WEBHOOK_EVENT_TYPES = (
    "login.new_device",
    "account.under_attack",
    "account.reset",
    "ip.escalated",
    "otp.pumping_hold",
    "otp.budget",
    "store.degraded",
    "store.recovered",
)

#: How far the timestamp may be from now, either way, in seconds: 5
#: minutes, as Standard Webhooks recommends.
DEFAULT_WEBHOOK_TOLERANCE = 300

_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")
_TIMESTAMP = re.compile(r"[0-9]{1,18}")

_KIND_TEXT = {
    "secret": "the secret is not whsec_ and base64",
    "headers": "missing or malformed webhook headers",
    "timestamp": "timestamp outside the tolerance",
    "signature": "no matching signature",
    "payload": "the body is not an event",
}


class WebhookVerificationError(ValueError):
    """A webhook not to be acted on: answer it 400. Its message never holds
    the body or a header's value.

    :attr:`kind` says why, checked in this order: ``"secret"`` (the secret,
    less an optional ``whsec_`` prefix, is empty or not padded base64: your
    configuration), ``"headers"`` (a header missing or empty, or the
    timestamp not a decimal Unix time of at most 18 digits),
    ``"timestamp"`` (further from now than the tolerance: a replay),
    ``"signature"`` (no v1 signature matches: forged, tampered with, or
    another secret's) or ``"payload"`` (signed, but not an event).
    """

    def __init__(self, kind: str) -> None:
        super().__init__("tollgate: webhook: " + _KIND_TEXT[kind])
        self.kind = kind


@dataclass(frozen=True)
class WebhookData:
    """What an event is about. Fields tollgate left out are ``""``."""

    #: The flow of the call, such as "login".
    flow: str = ""
    #: The policy rule that fired.
    rule: str = ""
    #: The verdict's reason.
    reason: str = ""
    #: The account or destination as the caller sent it in that call. It
    #: identifies an end user: do not log it.
    subject: str = ""
    #: The caller's own opaque ref (a user id) given to check, report or
    #: send, or "".
    ref: str = ""
    #: The event's other facts.
    details: Dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class WebhookEvent:
    """A verified event."""

    #: The webhook-id header: the same for every delivery of one event.
    #: Delivery is at least once: deduplicate by it.
    id: str
    #: One of :data:`WEBHOOK_EVENT_TYPES`, or a later tollgate's type.
    type: str
    #: When tollgate saw the event, in RFC 3339 as tollgate wrote it (the
    #: signed webhook-timestamp header is what the tolerance applies to).
    timestamp: str
    #: The tenant of the call that caused the event.
    tenant: str
    #: What the event is about.
    data: WebhookData


#: The request headers: a mapping (a dict, a framework's headers), an
#: :class:`email.message.Message` such as http.server's
#: :class:`http.client.HTTPMessage`, or (name, value) pairs.
HeadersLike = Union[Mapping[str, str], "email.message.Message", Iterable[Tuple[str, str]]]


def verify_webhook(
    secret: str,
    headers: HeadersLike,
    body: Union[bytes, bytearray, memoryview, str],
    *,
    now: Optional[float] = None,
    tolerance: float = DEFAULT_WEBHOOK_TOLERANCE,
) -> WebhookEvent:
    """Check that body, with the webhook-id, webhook-timestamp and
    webhook-signature headers, was signed by tollgate under secret and sent
    within tolerance seconds of now (Unix seconds; default
    :func:`time.time`), and return the event it holds.

    body must be the request's bytes exactly as they arrived (a ``str`` is
    taken as UTF-8): a body decoded and encoded again is not what was
    signed. headers is any mapping (a dict, :class:`http.client.HTTPMessage`,
    a framework's headers) or a list of (name, value) pairs; names are
    matched in any case. Any one of the space-separated signatures may
    match, so that a secret can be rotated; versions other than v1 are
    skipped. Signatures are compared with :func:`hmac.compare_digest`.

    Raises :class:`WebhookVerificationError` with the reason's kind, and
    TypeError when body is not bytes or str (a parsed body).
    """
    if not isinstance(body, (bytes, bytearray, memoryview, str)):
        # A parsed body (request.json) cannot be verified: its bytes are gone.
        raise TypeError("verify_webhook: body must be the raw request body (bytes), not a parsed one")
    raw = secret[6:] if isinstance(secret, str) and secret.startswith("whsec_") else secret
    if not isinstance(raw, str) or raw == "" or _BASE64.fullmatch(raw) is None:
        raise WebhookVerificationError("secret")
    key = base64.b64decode(raw)

    id_ = _first(headers, "webhook-id")
    ts = _first(headers, "webhook-timestamp")
    sigs = " ".join(_values(headers, "webhook-signature"))
    if not id_ or not ts or not sigs or _TIMESTAMP.fullmatch(ts) is None:
        raise WebhookVerificationError("headers")

    now_s = time.time() if now is None else float(now)
    if not math.isfinite(now_s):  # no time is within the tolerance of NaN
        raise WebhookVerificationError("timestamp")
    tol = DEFAULT_WEBHOOK_TOLERANCE if not tolerance > 0 else int(tolerance) if math.isfinite(tolerance) else 1 << 62
    if abs(math.floor(now_s) - int(ts)) > tol:
        raise WebhookVerificationError("timestamp")

    data = body.encode("utf-8") if isinstance(body, str) else bytes(body)
    mac = hmac.new(key, id_.encode("utf-8") + b"." + ts.encode("ascii") + b"." + data, hashlib.sha256)
    want = base64.b64encode(mac.digest())
    found = False
    for sig in sigs.split(" "):
        version, comma, got = sig.partition(",")
        if not comma or version != "v1":
            continue
        if hmac.compare_digest(got.encode("utf-8"), want):
            found = True  # no early exit
    if not found:
        raise WebhookVerificationError("signature")

    return _parse(data, id_)


def _values(headers: HeadersLike, name: str) -> List[str]:
    """The values of the header name, whatever the case of its name."""
    pairs: Iterable[Any]
    get_all = getattr(headers, "get_all", None)
    if callable(get_all):  # email.message.Message, http.client.HTTPMessage: case-insensitive, repeated lines kept
        found = get_all(name)
        return [v for v in found if isinstance(v, str)] if found else []
    if isinstance(headers, Mapping):
        pairs = sorted(headers.items(), key=lambda kv: str(kv[0]))
    else:
        pairs = headers
    out: List[str] = []
    for pair in pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            continue
        k, v = pair
        if isinstance(k, str) and k.lower() == name and isinstance(v, str):
            out.append(v)
    return out


def _first(headers: HeadersLike, name: str) -> str:
    v = _values(headers, name)
    return v[0] if v else ""


def _reject_constant(name: str) -> Any:
    raise ValueError("not JSON: " + name)


def _parse(data: bytes, id_: str) -> WebhookEvent:
    """The event in a signed body."""
    try:
        v = json.loads(data.decode("utf-8", errors="replace"), parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        raise WebhookVerificationError("payload") from None
    if not isinstance(v, dict):
        raise WebhookVerificationError("payload")
    d = v.get("data")
    d = {} if d is None else d
    if not isinstance(d, dict):
        raise WebhookVerificationError("payload")
    details = d.get("details")
    details = {} if details is None else details
    if not isinstance(details, dict):
        raise WebhookVerificationError("payload")

    def s(o: Mapping[str, Any], k: str) -> str:
        x = o.get(k)
        if x is None:
            return ""
        if not isinstance(x, str):
            raise WebhookVerificationError("payload")
        return x

    return WebhookEvent(
        id=id_, type=s(v, "type"), timestamp=s(v, "timestamp"), tenant=s(v, "tenant"),
        data=WebhookData(flow=s(d, "flow"), rule=s(d, "rule"), reason=s(d, "reason"),
                         subject=s(d, "subject"), ref=s(d, "ref"), details=details),
    )

