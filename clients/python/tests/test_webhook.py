"""verify_webhook beyond the shared vectors (which test_vectors runs): the
header shapes Python servers hand over, the options, and what its errors may
hold."""

from __future__ import annotations

import base64
import email.parser
import hashlib
import hmac
import json
import os
import random
import unittest
from typing import Dict, List, Tuple

from tollgate import WebhookVerificationError, verify_webhook

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
NOW = 1767225600
BODY = json.dumps({
    "type": "account.under_attack", "timestamp": "2026-01-01T00:00:00Z", "tenant": "default",
    "data": {"flow": "login", "rule": "account_backoff", "reason": "account_backoff",
             "subject": "alice@example.com", "ref": "user-42", "details": {"failures": 120}},
}).encode()


def sign(secret: str, id_: str, ts: int, body: bytes) -> str:
    key = base64.b64decode(secret[6:] if secret.startswith("whsec_") else secret)
    mac = hmac.new(key, ("%s.%d." % (id_, ts)).encode() + body, hashlib.sha256)
    return "v1," + base64.b64encode(mac.digest()).decode()


def kind(secret: str, headers: object, body: bytes, **kw: float) -> str:
    try:
        verify_webhook(secret, headers, body, **kw)  # type: ignore[arg-type]
        return "ok"
    except WebhookVerificationError as e:
        return e.kind


class Webhook(unittest.TestCase):
    def test_a_rotated_secret_on_a_second_header_line_of_an_http_message(self) -> None:
        """http.server hands over an HTTPMessage, which keeps repeated
        header lines: a match on any line counts."""
        old = "whsec_" + base64.b64encode(os.urandom(32)).decode()
        raw = ("Webhook-Id: msg_1\r\nWebhook-Timestamp: %d\r\nWebhook-Signature: %s\r\nwebhook-signature: %s\r\n\r\n"
               % (NOW, sign(old, "msg_1", NOW, BODY), sign(SECRET, "msg_1", NOW, BODY)))
        msg = email.parser.Parser().parsestr(raw)
        e = verify_webhook(SECRET, msg, BODY, now=NOW)
        self.assertEqual((e.id, e.type, e.data.ref, e.data.details), ("msg_1", "account.under_attack", "user-42", {"failures": 120}))

    def test_a_replay_an_hour_later_is_refused_unless_the_tolerance_allows_it(self) -> None:
        h = {"webhook-id": "msg_1", "webhook-timestamp": str(NOW), "webhook-signature": sign(SECRET, "msg_1", NOW, BODY)}
        self.assertEqual(kind(SECRET, h, BODY, now=NOW + 3600), "timestamp")
        self.assertEqual(kind(SECRET, h, BODY, now=NOW + 3600, tolerance=7200), "ok")
        self.assertEqual(kind(SECRET, h, BODY, now=NOW + 301, tolerance=0), "timestamp")
        self.assertEqual(kind(SECRET, h, BODY, now=float("nan")), "timestamp")
        self.assertEqual(kind(SECRET, h, BODY, now=NOW + 0.999), "ok")

    def test_errors_never_hold_the_body_a_header_or_the_secret(self) -> None:
        body = b'{"type":7,"data":{"subject":"victim@example.com"}}'
        for h in (
            {"webhook-id": "msg_secretid", "webhook-timestamp": str(NOW), "webhook-signature": sign(SECRET, "msg_secretid", NOW, body)},
            {"webhook-id": "msg_secretid", "webhook-timestamp": str(NOW), "webhook-signature": "v1,forgedforged"},
            {"webhook-id": "msg_secretid", "webhook-timestamp": "forgedforged", "webhook-signature": "v1,x"},
        ):
            with self.assertRaises(WebhookVerificationError) as cm:
                verify_webhook(SECRET, h, body, now=NOW)
            for x in ("victim", "secretid", "forged", "MfKQ"):
                self.assertNotIn(x, str(cm.exception))

    def test_mutated_requests_are_refused_and_raise_nothing_else(self) -> None:
        """A fuzz loop: nothing raises but WebhookVerificationError, and
        nothing mutated is accepted."""
        rnd = random.Random(28)
        sig = sign(SECRET, "msg_1", NOW, BODY)
        orig: List[str] = ["msg_1", str(NOW), sig, BODY.decode()]
        for _ in range(3000):
            parts = list(orig)
            k = rnd.randrange(4)
            s = parts[k]
            i = rnd.randrange(len(s) + 1)
            op = rnd.randrange(3)
            parts[k] = s[:i] + s[i + 1:] if op == 0 else s[:i] + chr(rnd.randrange(0x3000)) + s[i:] if op == 1 else s[:i] + s[i:][::-1]
            pairs: List[Tuple[str, str]] = [("webhook-id", parts[0]), ("webhook-timestamp", parts[1]), ("webhook-signature", parts[2])]
            got = kind(SECRET, pairs, parts[3].encode("utf-8", errors="surrogatepass"), now=NOW)
            same = parts[:2] == orig[:2] and parts[3] == orig[3] and sig in parts[2].split(" ")
            if not same:
                self.assertNotEqual(got, "ok", parts)

    def test_a_parsed_body_is_a_type_error(self) -> None:
        h = {"webhook-id": "msg_1", "webhook-timestamp": str(NOW), "webhook-signature": sign(SECRET, "msg_1", NOW, BODY)}
        for parsed in (json.loads(BODY), {}, None, 42):
            with self.assertRaises(TypeError):
                verify_webhook(SECRET, h, parsed, now=NOW)  # type: ignore[arg-type]

    def test_headers_that_are_not_strings_are_ignored(self) -> None:
        h: Dict[str, object] = {"webhook-id": b"msg_1", "webhook-timestamp": NOW, "webhook-signature": None}
        self.assertEqual(kind(SECRET, h, BODY, now=NOW), "headers")


if __name__ == "__main__":
    unittest.main()
