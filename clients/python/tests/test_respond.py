"""Responder beyond the vectors: hooks, identical bytes, fallbacks."""

from __future__ import annotations

import json
import unittest
from typing import List

from tollgate import Responder, Verdict


class Respond(unittest.TestCase):
    def test_the_answer_depends_on_action_and_wait_only(self) -> None:
        rs = Responder()
        a = rs.respond(Verdict(action="delay", delay_ms=2500, retry_after=3, reasons=["account_backoff"], attempt="x"))
        b = rs.respond(Verdict(action="delay", delay_ms=2500, retry_after=3, reasons=["ip_spray"], device_token="y",
                               fallback=True, error=RuntimeError("down")))
        self.assertEqual(a, b)
        self.assertEqual(a.status_line, "429 Too Many Requests")
        self.assertEqual(json.loads(a.body), {"type": "about:blank", "title": "Too Many Requests", "status": 429,
                                              "detail": "Try again in 3 seconds."})

    def test_anything_but_a_known_action_is_a_delay(self) -> None:
        rs = Responder()
        for v in (Verdict(action=""), Verdict(action="allow"), Verdict(action=" proceed"), {}, {"action": None}):
            with self.subTest(verdict=v):
                a = rs.respond(v)  # type: ignore[arg-type]
                self.assertFalse(a.proceed)
                self.assertEqual((a.status, a.header("retry-after")), (429, "1"))

    def test_a_hold(self) -> None:
        a = Responder().respond(Verdict(action="proceed", delay_ms=1500))
        self.assertEqual((a.proceed, a.hold, a.status, a.headers, a.body), (True, 1.5, 0, [], b""))

    def test_hooks(self) -> None:
        waits: List[int] = []

        def delay(seconds: int):  # type: ignore[no-untyped-def]
            waits.append(seconds)
            return 429, [("Content-Type", "text/html"), ("Cache-Control", "private, no-store")], "<p>%d s</p>" % seconds

        rs = Responder(
            policy="otp_send",
            captcha=lambda: (200, {"Content-Type": "text/html"}, b"<form>captcha</form>"),
            accepted=lambda: (202, [("Content-Type", "text/plain")], "a code is on its way"),
            delay=delay,
        )
        c = rs.respond(Verdict(action="captcha"))
        self.assertEqual((c.status, c.headers, c.body), (200, [("Content-Type", "text/html")], b"<form>captcha</form>"))
        d = rs.respond(Verdict(action="deny"))
        self.assertEqual(d, rs.accept())
        self.assertEqual((d.status, d.body), (202, b"a code is on its way"))
        w = rs.respond(Verdict(action="delay", delay_ms=4001, retry_after=2))
        self.assertEqual(waits, [5])
        self.assertEqual(w.headers, [("Retry-After", "5"), ("RateLimit", '"otp_send";r=0;t=5'),
                                     ("Content-Type", "text/html"), ("Cache-Control", "private, no-store")])
        self.assertEqual((w.status, w.body), (429, b"<p>5 s</p>"))
        huge = rs.respond(Verdict(action="delay", retry_after=1 << 40))
        self.assertEqual(waits[-1], (1 << 31) - 1)
        self.assertEqual(huge.header("Retry-After"), str(1 << 31))

    def test_go_s_json_escaping_in_the_body(self) -> None:
        a = Responder(title="<b> & \u2028").respond(Verdict(action="captcha"))
        self.assertEqual(a.body, b'{"type":"about:blank","title":"\\u003cb\\u003e \\u0026 \\u2028","status":429,'
                                 b'"detail":"Complete a CAPTCHA to continue."}\n')
        self.assertEqual(a.header("Content-Length"), str(len(a.body)))

    def test_settings(self) -> None:
        for ok in ("urn:tollgate:slow", "https://example.com/p?x=1#y", "https://[::1]:8443/p", "about:blank"):
            Responder(problem_type=ok)
        for bad in ("/relative", "https://example.com/a b", "1http://x", "https://x/%zz", "https://x:port/", "https://[::1/"):
            with self.subTest(problem_type=bad), self.assertRaises(ValueError):
                Responder(problem_type=bad)
        for bad in ("p" * 65, "é", "a\tb"):
            with self.subTest(policy=bad), self.assertRaises(ValueError):
                Responder(policy=bad)
        self.assertEqual(Responder(policy="", title="").respond(Verdict(action="delay")),
                         Responder().respond(Verdict(action="delay")))
