"""The client against stand-in servers: what it sends, how it reads
answers, its errors, connection reuse, timeouts and threads."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
import unittest
from typing import Any, Dict, List, Tuple

import tollgate
from tollgate import DEFAULT_TIMEOUT, FAIL_CAPTCHA, FAIL_DELAY, FAIL_OPEN, Client, Timeout, TollgateError, Unavailable

from .support import ALICE, ALICE_IP, ALICE_SMS, SECRETS, TEST_TOKEN, Recorded, StandIn, closed_port_url

PROCEED = b'{"action":"proceed","delay_ms":0,"retry_after":0,"reasons":[],"attempt":"at.1","device_token":""}'
JSON = {"Content-Type": "application/json"}
PROBLEM = {"Content-Type": "application/problem+json"}
LOGIN = dict(flow="login", account=ALICE, ip=ALICE_IP)


class Base(unittest.TestCase):
    def stand_in(self, status: int = 200, headers: Any = None, body: bytes = PROCEED, delay: float = 0.0) -> StandIn:
        s = StandIn(lambda _r: (status, JSON if headers is None else headers, body), delay=delay)
        self.addCleanup(s.close)
        return s

    def client(self, url: str, **kw: Any) -> Client:
        # 5 s unless a test sets it: a loaded machine must turn no stand-in's
        # answer into a timeout (test_the_default_timeout_is_250_ms holds the
        # client's own default).
        kw.setdefault("timeout", 5.0)
        c = Client(url, **kw)
        self.addCleanup(c.close)
        return c

    def no_secrets(self, err: Any) -> None:
        self.assertIsNotNone(err)
        for s in SECRETS:
            self.assertNotIn(s, str(err))
            self.assertNotIn(s, repr(err))


class Requests(Base):
    def test_a_check_sends_go_s_json_with_empty_fields_left_out(self) -> None:
        s = self.stand_in()
        v = self.client(s.url).check(**LOGIN)
        self.assertEqual((v.action, v.attempt, v.fallback, v.error), ("proceed", "at.1", False, None))
        r = s.last()
        assert r is not None
        self.assertEqual(r.body, b'{"flow":"login","account":"alice@example.com","ip":"203.0.113.7"}')
        self.assertEqual((r.method, r.path), ("POST", "/v1/check"))
        self.assertEqual(r.headers.get("Content-Type"), "application/json")
        self.assertEqual(r.headers.get("Accept"), "application/json, application/problem+json")
        self.assertEqual(r.headers.get("User-Agent"), tollgate.DEFAULT_USER_AGENT)
        self.assertNotIn("Authorization", r.headers)

    def test_every_field_in_wire_order(self) -> None:
        s = self.stand_in()
        c = self.client(s.url)
        c.check(flow="otp_verify", account="a", ip="i", device_token="d", captcha_solved=True,
                 password_fingerprint="p", destination="+1", channel="sms")
        self.assertEqual(s.last().body, b'{"flow":"otp_verify","account":"a","ip":"i","device_token":"d",'  # type: ignore[union-attr]
                         b'"captcha_solved":true,"password_fingerprint":"p","destination":"+1","channel":"sms"}')
        c.report(flow="login", outcome="success", account="a", ip="i", attempt="t", device_token="d",
                 password_fingerprint="p", destination="x", channel="email")
        self.assertEqual(s.last().body, b'{"flow":"login","account":"a","ip":"i","outcome":"success","attempt":"t",'  # type: ignore[union-attr]
                         b'"device_token":"d","password_fingerprint":"p","destination":"x","channel":"email"}')
        c.send(destination="+1", channel="sms")
        self.assertEqual(s.last().body, b'{"destination":"+1","channel":"sms"}')  # type: ignore[union-attr]
        self.assertEqual(s.last().path, "/v1/otp/send")  # type: ignore[union-attr]
        c.send(destination="+1", channel="sms", flow="f", ip="i", account="a", device_token="d", captcha_solved=True)
        self.assertEqual(s.last().body, b'{"flow":"f","destination":"+1","channel":"sms","ip":"i","account":"a",'  # type: ignore[union-attr]
                         b'"device_token":"d","captcha_solved":true}')

    def test_ref_is_sent_when_given_and_left_out_when_not(self) -> None:
        """The ref comes back in webhook events: it must reach tollgate when
        given, and no "ref" key may appear when the caller gave none."""
        s = self.stand_in()
        c = self.client(s.url)
        bodies = []
        for call in (
            lambda: c.check(flow="login", account="a", ip="203.0.113.9", ref="user-42"),
            lambda: c.report(flow="login", account="a", outcome="success", ref="user-42"),
            lambda: c.send(destination="+15550100", channel="sms", ref="user-\u00e9"),
            lambda: c.check(flow="login", account="a"),
            lambda: c.report(flow="login", account="a", outcome="failure", ref=""),
            lambda: c.send(destination="+15550100", channel="sms", ref=None),
        ):
            v = call()
            self.assertIsNone(v.error)
            bodies.append(s.last().body)  # type: ignore[union-attr]
        self.assertEqual(bodies, [
            b'{"flow":"login","account":"a","ip":"203.0.113.9","ref":"user-42"}',
            b'{"flow":"login","account":"a","outcome":"success","ref":"user-42"}',
            '{"destination":"+15550100","channel":"sms","ref":"user-\u00e9"}'.encode("utf-8"),
            b'{"flow":"login","account":"a"}',
            b'{"flow":"login","account":"a","outcome":"failure"}',
            b'{"destination":"+15550100","channel":"sms"}',
        ])

    def test_strings_are_escaped_as_go_escapes_them(self) -> None:
        s = self.stand_in()
        self.client(s.url).check(flow="login", account='<a&b>"\\\n\t\x01\x7f\u2028\u2029é\ud800')
        self.assertEqual(
            s.last().body,  # type: ignore[union-attr]
            b'{"flow":"login","account":"\\u003ca\\u0026b\\u003e\\"\\\\\\n\\t\\u0001\x7f\\u2028\\u2029'
            + "é".encode() + b'\\ufffd"}')

    def test_the_token_and_the_token_source(self) -> None:
        s = self.stand_in()
        self.client(s.url, token=TEST_TOKEN).check(**LOGIN)
        self.assertEqual(s.last().headers.get("Authorization"), "Bearer " + TEST_TOKEN)  # type: ignore[union-attr]
        calls: List[int] = []

        def source() -> str:
            calls.append(1)
            return "from-source-%d" % len(calls)

        c = self.client(s.url, token_source=source, user_agent="shop-login/2")
        c.check(**LOGIN)
        c.check(**LOGIN)
        r = s.last()
        assert r is not None
        self.assertEqual((r.headers.get("Authorization"), r.headers.get("User-Agent")), ("Bearer from-source-2", "shop-login/2"))
        self.client(s.url, token_source=lambda: "").check(**LOGIN)
        self.assertNotIn("Authorization", s.last().headers)  # type: ignore[union-attr]

    def test_a_failing_token_source_is_unavailable_and_nothing_is_sent(self) -> None:
        s = self.stand_in()

        def source() -> str:
            raise RuntimeError("identity provider down")

        v = self.client(s.url, token_source=source).check(**LOGIN, fail=FAIL_OPEN)
        self.assertIsInstance(v.error, Unavailable)
        self.assertIn("identity provider down", str(v.error))
        self.assertEqual((v.action, v.fallback), ("proceed", True))
        self.assertEqual(s.requests, [])
        v = self.client(s.url, token_source=lambda: "bad\r\ntoken").check(**LOGIN)
        self.assertIsInstance(v.error, Unavailable)
        self.assertNotIn("bad", str(v.error))

    def test_a_base_url_path_prefixes_every_route(self) -> None:
        s = self.stand_in()
        self.client(s.url + "/tg/").check(**LOGIN)
        self.assertEqual(s.last().path, "/tg/v1/check")  # type: ignore[union-attr]

    def test_entries_escapes_its_flow(self) -> None:
        s = self.stand_in(body=b'{"entries":[]}')
        c = self.client(s.url)
        self.assertEqual(c.entries("a b&c"), [])
        r = s.last()
        assert r is not None
        self.assertEqual((r.method, r.path, r.body), ("GET", "/v1/admin/entries?flow=a+b%26c", b""))
        self.assertNotIn("Content-Type", r.headers)
        c.entries()
        self.assertEqual(s.last().path, "/v1/admin/entries")  # type: ignore[union-attr]

    def test_unusable_settings_are_refused(self) -> None:
        bad: List[Tuple[str, Dict[str, Any]]] = [
            ("", {}), ("ftp://x", {}), ("http://", {}), ("http://u:p@x", {}), ("http://x/?q", {}),
            ("http://x/#f", {}), ("http://x:99999", {}), ("x", {}),
            ("http://x", {"token": "t", "token_source": lambda: "t"}),
            ("http://x", {"token": "a\nb"}), ("http://x", {"timeout": 0}), ("http://x", {"timeout": -1}),
            ("http://x", {"user_agent": ""}), ("http://x", {"fail_open_per_account": 0}),
            ("http://x", {"fail_open_per_address": 0}), ("http://x", {"fail_open_window": 0}),
            ("http://x", {"fail_open_subjects": 0}), ("http://x", {"fail_open_per_account": 1, "fail_open_window": 1e-10}),
        ]
        for url, kw in bad:
            with self.subTest(url=url, kw=kw), self.assertRaises(ValueError):
                Client(url, **kw)
        with self.assertRaises(ValueError):
            Client("http://x").check(flow="login", fail="sometimes")  # type: ignore[arg-type]
        Client("https://tollgate.internal/prefix", timeout=None, fail_open_per_account=None, fail_open_per_address=-1)


class Answers(Base):
    def verdict(self, status: int, headers: Any, body: bytes, mode: Any = FAIL_DELAY, **kw: Any) -> tollgate.Verdict:
        return self.client(self.stand_in(status, headers, body).url, **kw).check(**LOGIN, fail=mode)

    def test_problem_members_are_read(self) -> None:
        body = json.dumps({"type": tollgate.PROBLEM_BASE + "invalid-field", "title": "Invalid field", "status": 400,
                           "detail": "ip is not an IP address", "field": "ip", "request_id": "r1"}).encode()
        v = self.verdict(400, {"Content-Type": "application/problem+json; charset=utf-8", "X-Request-Id": "x"}, body, FAIL_OPEN)
        e = v.error
        assert isinstance(e, TollgateError)
        self.assertEqual((e.status, e.type, e.title, e.detail, e.field, e.request_id, e.op),
                         (400, tollgate.PROBLEM_BASE + "invalid-field", "Invalid field", "ip is not an IP address", "ip", "r1", "check"))
        self.assertEqual(str(e), "tollgate: check: 400 invalid-field: ip is not an IP address (request id r1)")
        self.assertEqual((v.action, v.reasons), ("delay", ["client_fallback"]))

    def test_answers_that_are_not_problems(self) -> None:
        cases = [
            (404, {"Content-Type": "text/plain", "X-Request-Id": "q1"}, b"not found", "Not Found", "q1"),
            (400, PROBLEM, b"{not json", "Bad Request", ""),
            (400, {"Content-Type": "application/problem+json; x"}, b'{"type":"t"}', "Bad Request", ""),
            (400, PROBLEM, b'{"type":"t","status":"400"}', "Bad Request", ""),  # a wrong type: nothing is used
            (400, PROBLEM, b'{"type":"' + b"x" * (70 << 10) + b'"}', "Bad Request", ""),  # over 64 KiB
            (302, {"Location": "http://example.com/"}, b"", "Found", ""),
        ]
        for status, headers, body, title, rid in cases:
            with self.subTest(status=status, body=body[:20]):
                v = self.verdict(status, headers, body, FAIL_OPEN)
                e = v.error
                assert isinstance(e, TollgateError)
                self.assertEqual((e.status, e.type, e.title, e.request_id), (status, "", title, rid))
                self.assertFalse(e.unavailable)
                self.assertEqual(v.action, "delay", "a refused request never fails open")

    def test_unavailable_answers(self) -> None:
        cases = [
            (200, JSON, b"proceed"), (200, JSON, b"{}"), (200, JSON, b'{"action":"allow"}'),
            (200, JSON, b'{"action":"proceed","delay_ms":"5"}'), (200, JSON, b'{"action":"proceed","delay_ms":1.0}'),
            (200, JSON, b'{"action":"proceed","reasons":[1]}'), (200, JSON, b'{"action":"proceed"} x'),
            (200, JSON, b'{"action":"proceed","delay_ms":NaN}'), (200, JSON, b"null"), (200, JSON, b"[]"),
            (200, JSON, b'\xef\xbb\xbf{"action":"proceed"}'),
            (200, JSON, b'{"action":"proceed","reasons":["' + b"r" * (1 << 20) + b'"]}'),
            (500, {"Content-Type": "text/html"}, b"<html>oops</html>"), (502, {}, b""), (429, {}, b""),
        ]
        for status, headers, body in cases:
            with self.subTest(status=status, body=body[:40]):
                for mode, want in ((FAIL_DELAY, "delay"), (FAIL_CAPTCHA, "captcha")):
                    v = self.verdict(status, headers, body, mode)
                    self.assertTrue(tollgate.is_unavailable(v.error), repr(v.error))
                    self.assertNotIsInstance(v.error, Timeout)
                    self.assertEqual((v.action, v.fallback), (want, True))
                    self.no_secrets(v.error)

    def test_the_action_is_matched_exactly_but_keys_in_any_case(self) -> None:
        v = self.verdict(200, JSON, b'{"ACTION":"proceed","Delay_MS":7,"extra":{"x":1},"reasons":null}')
        self.assertEqual((v.action, v.delay_ms, v.reasons, v.error), ("proceed", 7, [], None))
        v = self.verdict(200, JSON, b'{"action":"PROCEED"}')
        self.assertIsInstance(v.error, Unavailable)
        self.assertIn("unknown action", str(v.error))

    def test_retry_after_is_followed_up_to_a_minute(self) -> None:
        for value, want in (("7", 7000), ("120", 60000), ("0", 1000), ("1.5", 1000), ("1234567", 1000), ("", 1000)):
            with self.subTest(retry_after=value):
                v = self.verdict(503, {"Retry-After": value} if value else {}, b"")
                self.assertEqual((v.action, v.delay_ms, v.retry_after), ("delay", want, (want + 999) // 1000))
        v = self.verdict(503, {"Retry-After": "7"}, b"", FAIL_OPEN)
        self.assertEqual(v.action, "proceed")
        v = self.verdict(429, {"Retry-After": "3"}, b"")
        self.assertEqual(v.delay_ms, 3000)

    def test_admin_calls_raise(self) -> None:
        down = self.client(closed_port_url())
        with self.assertRaises(Unavailable) as cm:
            down.explain(flow="login", account=ALICE)
        self.assertNotIsInstance(cm.exception, Timeout)
        self.no_secrets(cm.exception)
        s = self.stand_in(400, PROBLEM, b'{"type":"https://tollgate.dev/problems/missing-field","title":"t","status":400,"detail":"reason is required","field":"reason"}')
        with self.assertRaises(TollgateError) as cm2:
            self.client(s.url).reset(flow="login", account=ALICE, reason="")
        self.assertEqual(cm2.exception.field, "reason")
        self.no_secrets(cm2.exception)
        s = self.stand_in(200, JSON, b'{"deleted":"1"}')
        with self.assertRaises(Unavailable):
            self.client(s.url).reset(flow="login", account=ALICE, reason="r")
        s = self.stand_in(200, JSON, b'{"deleted":2}')
        self.assertEqual(self.client(s.url).reset(ref="user-8c1f2e", reason="r", account="a", flow="login"), 2)
        self.assertEqual(s.last().body, b'{"flow":"login","account":"a","reason":"r","ref":"user-8c1f2e"}')  # type: ignore[union-attr]
        s = self.stand_in(201, JSON, b'{"id":"e1","kind":"block","length":24}')
        e = self.client(s.url).deny(ip_range="203.0.113.0/24", expires_in="1h", reason="r", action="captcha")
        self.assertEqual((e.id, e.kind, e.length), ("e1", "block", 24))
        self.assertEqual(s.last().body, b'{"ip_range":"203.0.113.0/24","action":"captcha","expires_in":"1h","reason":"r"}')  # type: ignore[union-attr]

    def test_reload_posts_an_empty_object_and_reads_its_answer_as_go_does(self) -> None:
        s = self.stand_in(200, JSON, b'{"flows":["login","signup"],"restart_needed":["listen"],"extra":1}')
        r = self.client(s.url + "/prefix", token=TEST_TOKEN).reload()
        self.assertIsInstance(r, tollgate.ReloadResult)
        self.assertEqual((r.flows, r.restart_needed), (["login", "signup"], ["listen"]))
        req = s.last()
        assert req is not None
        self.assertEqual((req.method, req.path, req.body), ("POST", "/prefix/v1/admin/reload", b"{}"))
        self.assertEqual(req.headers.get("Content-Type"), "application/json")
        self.assertEqual(req.headers.get("Authorization"), "Bearer " + TEST_TOKEN)
        # null (Go's nil) and an absent key are the empty list.
        r = self.client(self.stand_in(200, JSON, b'{"flows":null}').url).reload()
        self.assertEqual((r.flows, r.restart_needed), ([], []))
        # An answer of another shape is no answer.
        with self.assertRaises(Unavailable) as cm:
            self.client(self.stand_in(200, JSON, b'{"flows":"login","restart_needed":[]}').url).reload()
        self.assertEqual(cm.exception.op, "reload")
        # A problem is a TollgateError with its members.
        bad = self.stand_in(409, {"Content-Type": "application/problem+json", "X-Request-Id": "r7"},
                            b'{"type":"https://tollgate.dev/problems/config-invalid","title":"Configuration invalid",'
                            b'"status":409,"detail":"/etc/tollgate.yaml: yaml: line 14: mapping values are not allowed in this context"}')
        with self.assertRaises(TollgateError) as cm2:
            self.client(bad.url).reload()
        e = cm2.exception
        self.assertEqual((e.op, e.status, e.type, e.request_id, e.unavailable),
                         ("reload", 409, tollgate.PROBLEM_BASE + "config-invalid", "r7", False))
        self.assertEqual(str(e), "tollgate: reload: 409 config-invalid: /etc/tollgate.yaml: yaml: line 14: "
                                 "mapping values are not allowed in this context (request id r7)")
        with self.assertRaises(Unavailable):
            self.client(closed_port_url()).reload()

    def test_dead_letters_gets_the_list_and_replay_webhook_posts_id_and_reason_as_go_does(self) -> None:
        one = (b'{"id":"msg_1","type":"account.under_attack","tenant":"default","endpoint":"security",'
               b'"last_error":"status 503","attempts":17,"time":"2026-03-01T12:00:00Z","dead_at":"2026-03-02T12:00:00Z","extra":1}')
        s = StandIn(lambda r: (200, JSON, b'{"dead_letters":[' + one + b"]}" if r.method == "GET" else b'{"replayed":true}'))
        self.addCleanup(s.close)
        c = self.client(s.url + "/prefix", token=TEST_TOKEN)
        want = tollgate.DeadLetter(id="msg_1", type="account.under_attack", tenant="default", endpoint="security",
                                   last_error="status 503", attempts=17, time="2026-03-01T12:00:00Z",
                                   dead_at="2026-03-02T12:00:00Z")
        self.assertEqual(c.dead_letters(), [want])
        self.assertEqual(c.dead_letters(limit=5), [want])
        self.assertIs(c.replay_webhook(id="msg_1", reason="receiver fixed"), True)
        self.assertEqual([(r.method, r.path, r.body, r.headers.get("Authorization")) for r in s.requests], [
            ("GET", "/prefix/v1/admin/webhooks/dead-letters", b"", "Bearer " + TEST_TOKEN),
            ("GET", "/prefix/v1/admin/webhooks/dead-letters?limit=5", b"", "Bearer " + TEST_TOKEN),
            ("POST", "/prefix/v1/admin/webhooks/replay", b'{"id":"msg_1","reason":"receiver fixed"}', "Bearer " + TEST_TOKEN),
        ])
        with self.assertRaises(dataclasses.FrozenInstanceError):
            want.id = "msg_2"  # type: ignore[misc]
        # null (Go's nil) is the empty list; a count that is not an integer is no answer.
        self.assertEqual(self.client(self.stand_in(200, JSON, b'{"dead_letters":null}').url).dead_letters(), [])
        with self.assertRaises(Unavailable) as cm:
            self.client(self.stand_in(200, JSON, b'{"dead_letters":[{"id":"msg_1","attempts":1.5}]}').url).dead_letters()
        self.assertEqual(cm.exception.op, "dead-letters")
        # A limit that is not an int never reaches the query.
        quiet = self.stand_in(200, JSON, b'{"dead_letters":[]}')
        for bad in ("5&tenant=other", True, 1.5):
            with self.subTest(limit=bad), self.assertRaises(TypeError):
                self.client(quiet.url).dead_letters(limit=bad)  # type: ignore[arg-type]
        self.assertEqual(quiet.requests, [])
        with self.assertRaises(Unavailable) as cm:
            self.client(closed_port_url()).replay_webhook(id="msg_1", reason="r")
        self.assertEqual(cm.exception.op, "replay")

    def test_errors_never_hold_request_values(self) -> None:
        urls = [closed_port_url(), self.stand_in(200, JSON, b"no").url,
                self.stand_in(400, PROBLEM, b'{"type":"https://tollgate.dev/problems/invalid-field","detail":"ip is bad","field":"ip"}').url,
                self.stand_in(503, {}, b"").url, self.stand_in(delay=1.0).url]
        for url in urls:
            c = self.client(url, token=TEST_TOKEN, timeout=0.2)
            for v in (c.check(**LOGIN, device_token=TEST_TOKEN, password_fingerprint=TEST_TOKEN),
                      c.report(outcome="failure", attempt=TEST_TOKEN, **LOGIN),
                      c.send(destination=ALICE_SMS, channel="sms", ip=ALICE_IP, account=ALICE)):
                self.no_secrets(v.error)
                self.assertTrue(v.fallback)
            with self.assertRaises((TollgateError, Unavailable)) as cm:
                c.explain(flow="login", account=ALICE, ip=ALICE_IP, destination=ALICE_SMS)
            self.no_secrets(cm.exception)


STEP_UP = (b'{"action":"step_up","delay_ms":0,"retry_after":0,"reasons":["breached_password"],'
           b'"attempt":"ticket.1","device_token":""}')
TEXT = {"Content-Type": "text/plain; charset=utf-8"}
# "password"'s SHA-1 is 5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8.
PASSWORD_SUFFIX = "1E4C9B93F3F0682250B6CF8331B7EE68FD8"


class Breached(Base):
    def test_only_the_prefix_is_sent_and_the_suffix_matched_case_insensitively(self) -> None:
        s = self.stand_in(body=("0000000000000000000000000000000000A:3\r\n%s:12\r\n" % PASSWORD_SUFFIX.lower()).encode(),
                          headers=TEXT)
        self.assertTrue(self.client(s.url).breached("password"))
        r = s.last()
        assert r is not None
        self.assertEqual((r.method, r.path, r.body), ("GET", "/v1/breached/5BAA6", b""))

    def test_a_padding_line_and_malformed_lines_are_never_a_match(self) -> None:
        for body in ("%s:0\r\n" % PASSWORD_SUFFIX, "%s:000\n" % PASSWORD_SUFFIX, "%s:+5\r\n" % PASSWORD_SUFFIX,
                     "%s:1_0\r\n" % PASSWORD_SUFFIX, "%s:\u0665\r\n" % PASSWORD_SUFFIX, "%s\r\n" % PASSWORD_SUFFIX,
                     "%s:-3\r\n" % PASSWORD_SUFFIX, "%s:x\r\n" % PASSWORD_SUFFIX, "5BAA6%s:9\r\n" % PASSWORD_SUFFIX, ""):
            with self.subTest(body=body):
                self.assertEqual(tollgate.breached_range_count(body, PASSWORD_SUFFIX), 0)
                s = self.stand_in(body=body.encode(), headers=TEXT)
                self.assertFalse(self.client(s.url).breached("password"))
        self.assertEqual(tollgate.breached_range_count(" %s : 0042 \r\nbad\r\n" % PASSWORD_SUFFIX, PASSWORD_SUFFIX), 42)

    def test_a_breached_check_error_never_fails_the_login(self) -> None:
        """Every way the range cannot be had is False ("not known to be
        breached"), never an exception: no corpus (404), an upstream down
        (503), a redirect, nothing listening, a timeout, too large a body."""
        body = ("%s:9\r\n" % PASSWORD_SUFFIX).encode()
        cases = [
            (404, PROBLEM, b'{"type":"https://tollgate.dev/problems/breached-off","status":404}', 0.0, None),
            (503, PROBLEM, b'{"status":503}', 0.0, None),
            (302, {"Location": "/elsewhere"}, body, 0.0, None),
            (201, TEXT, body, 0.0, None),
            (200, TEXT, body, 0.5, 0.05),
            (200, TEXT, body + b"A" * (600 << 10), 0.0, None),
        ]
        for status, headers, out, delay, timeout in cases:
            with self.subTest(status=status, delay=delay):
                s = self.stand_in(status, headers, out, delay=delay)
                kw = {} if timeout is None else {"timeout": timeout}
                self.assertFalse(self.client(s.url).breached("password", **kw))
        self.assertFalse(self.client(closed_port_url()).breached("password"))
        self.assertFalse(self.client(closed_port_url()).breached(None))  # type: ignore[arg-type]

    def test_random_range_bodies_never_raise_and_match_only_a_positive_count_of_the_suffix(self) -> None:
        """The range parser fuzzed with seeded random bodies (the standard
        library has no fuzzer): lines of the suffix in any case, other hex,
        counts with signs, spaces, zeros, non-ASCII digits, stray CR, LF
        and colons, and bytes that are not UTF-8."""
        import random

        rnd = random.Random(20261206)
        pieces = [PASSWORD_SUFFIX, PASSWORD_SUFFIX.lower(), "0" * 35, "ABC", ":", "::", "\r", "\n", "\r\n", " ",
                  "0", "007", "12", "-1", "+3", "1_0", "\u0663", "\x00", "\ufffd", "F" * 36]
        for i in range(3000):
            body = "".join(rnd.choice(pieces) for _ in range(rnd.randrange(12)))
            raw = body.encode("utf-8") + (bytes([rnd.randrange(256)]) if rnd.random() < 0.2 else b"")
            n = tollgate.breached_range_count(raw, PASSWORD_SUFFIX)
            with self.subTest(i=i):
                self.assertGreaterEqual(n, 0)
                if n > 0:
                    lines = [x.strip("\r ") for x in raw.decode("utf-8", "replace").split("\n")]
                    self.assertTrue(any(x.upper().startswith(PASSWORD_SUFFIX + ":") or
                                        x.upper().replace(" ", "").startswith(PASSWORD_SUFFIX + ":") for x in lines))

    def test_the_default_breached_timeout_is_a_second(self) -> None:
        self.assertEqual(tollgate.DEFAULT_BREACHED_TIMEOUT, 1.0)
        import inspect

        self.assertEqual(inspect.signature(Client.breached).parameters["timeout"].default, 1.0)


class StepUp(Base):
    def test_report_sends_breached_last_in_wire_order_and_only_when_true(self) -> None:
        s = self.stand_in()
        c = self.client(s.url)
        c.report(flow="login", outcome="failure", account="a", ip="i", attempt="t", ref="r", breached=True)
        self.assertEqual(s.last().body, b'{"flow":"login","account":"a","ip":"i","outcome":"failure","attempt":"t",'  # type: ignore[union-attr]
                         b'"ref":"r","breached":true}')
        c.report(flow="login", outcome="failure", account="a", ip="i", breached=False)
        self.assertEqual(s.last().body, b'{"flow":"login","account":"a","ip":"i","outcome":"failure"}')  # type: ignore[union-attr]

    def test_a_success_answered_step_up_is_a_step_up_verdict_with_its_ticket(self) -> None:
        s = self.stand_in(body=STEP_UP)
        v = self.client(s.url).report(flow="login", outcome="success", account="a", breached=True)
        self.assertEqual((v.action, v.attempt, v.device_token, v.reasons, v.error),
                         (tollgate.STEP_UP, "ticket.1", "", ["breached_password"], None))

    def test_a_check_or_send_answered_step_up_is_no_verdict_and_fails_closed(self) -> None:
        """step_up answers a success report only: from a check it would
        skip the password check, so it is not a verdict there."""
        s = self.stand_in(body=STEP_UP)
        c = self.client(s.url)
        for v in (c.check(**LOGIN), c.send(destination="+1", channel="sms")):
            self.assertIsInstance(v.error, Unavailable)
            self.assertEqual((v.action, v.fallback), ("delay", True))

    def test_the_step_up_reports_carry_the_ticket_on_the_step_up_flow(self) -> None:
        s = self.stand_in()
        c = self.client(s.url)
        v = c.step_up_passed(ticket="ticket.1", account="a", ip="i", device_token="d")
        self.assertEqual(v.action, "proceed")
        self.assertEqual(s.last().body, b'{"flow":"step_up","account":"a","ip":"i","outcome":"step_up_passed",'  # type: ignore[union-attr]
                         b'"attempt":"ticket.1","device_token":"d"}')
        c.step_up_failed(ticket="ticket.1", account="a", ip="i")
        self.assertEqual(s.last().body, b'{"flow":"step_up","account":"a","ip":"i","outcome":"step_up_failed",'  # type: ignore[union-attr]
                         b'"attempt":"ticket.1"}')

    def test_a_password_change_is_a_report_without_an_attempt(self) -> None:
        s = self.stand_in()
        c = self.client(s.url)
        v = c.password_changed(account="a", ip="i")
        self.assertEqual((v.action, v.error), ("proceed", None))
        self.assertEqual(s.last().body, b'{"flow":"login","account":"a","ip":"i","outcome":"password_changed"}')  # type: ignore[union-attr]
        c.password_changed(account="a", flow="staff", ref="u-1")
        self.assertEqual(s.last().body, b'{"flow":"staff","account":"a","outcome":"password_changed","ref":"u-1"}')  # type: ignore[union-attr]

    def test_a_password_change_tollgate_does_not_answer_is_a_fallback_never_an_exception(self) -> None:
        c = self.client(closed_port_url())
        v = c.password_changed(account=ALICE, ip=ALICE_IP, fail=FAIL_OPEN)
        self.assertIsInstance(v.error, Unavailable)
        self.assertEqual((v.action, v.fallback), ("proceed", True))
        self.no_secrets(v.error)

    def test_a_responder_never_proceeds_on_step_up(self) -> None:
        a = tollgate.Responder().respond(tollgate.Verdict.from_json(STEP_UP))
        self.assertEqual((a.proceed, a.step_up, a.status, a.header("Cache-Control")), (False, True, 403, "no-store"))
        self.assertEqual(json.loads(a.body)["detail"], "Confirm it is you with a second factor to finish signing in.")
        a = tollgate.Responder(step_up=lambda: (200, {"Content-Type": "text/html"}, "<form>code</form>")).respond(
            tollgate.Verdict(action="step_up", attempt="ticket.1"))
        self.assertEqual((a.proceed, a.step_up, a.status, a.body), (False, True, 200, b"<form>code</form>"))
        self.assertEqual(a.header("Cache-Control"), "no-store")
        self.assertFalse(tollgate.Responder().respond(tollgate.Verdict(action="delay")).step_up)


class SafetyNet(Base):
    def test_an_unexpected_failure_inside_the_client_is_a_fallback(self) -> None:
        import tollgate.client as tc

        s = self.stand_in()
        real = tc._wire.decode

        def broken(*_a: Any) -> Any:
            raise KeyError("bug")

        tc._wire.decode = broken  # type: ignore[assignment]
        try:
            v = self.client(s.url).check(**LOGIN, fail=FAIL_OPEN)
        finally:
            tc._wire.decode = real  # type: ignore[assignment]
        self.assertIsInstance(v.error, Unavailable)
        self.assertEqual((v.action, v.fallback), ("proceed", True))


class Transport(Base):
    def test_a_slow_tollgate_times_out_into_the_fail_mode(self) -> None:
        s = self.stand_in(delay=3.0)
        c = self.client(s.url, timeout=0.1)
        start = time.monotonic()
        v = c.check(**LOGIN, fail=FAIL_CAPTCHA, captcha_solved=True)
        self.assertLess(time.monotonic() - start, 2.5)  # the 3 s answer was not waited for
        self.assertIsInstance(v.error, Timeout)
        self.assertIsInstance(v.error, Unavailable)
        self.assertEqual((v.action, v.fallback), ("proceed", True))
        self.assertIn("did not answer in time", str(v.error))

    def test_the_default_timeout_is_250_ms(self) -> None:
        s = self.stand_in(delay=3.0)
        c = Client(s.url)
        self.addCleanup(c.close)
        start = time.monotonic()
        v = c.check(**LOGIN)
        self.assertIsInstance(v.error, Timeout)
        self.assertGreaterEqual(time.monotonic() - start, 0.24)
        self.assertEqual(DEFAULT_TIMEOUT, 0.25)

    def test_nothing_listening_is_unavailable_not_a_timeout(self) -> None:
        v = self.client(closed_port_url()).check(**LOGIN)
        self.assertIsInstance(v.error, Unavailable)
        self.assertNotIsInstance(v.error, Timeout)
        self.assertEqual((v.action, v.delay_ms, v.reasons), ("delay", 1000, ["client_fallback"]))

    def test_connections_are_reused(self) -> None:
        s = self.stand_in()
        c = self.client(s.url)
        for _ in range(10):
            self.assertIsNone(c.check(**LOGIN).error)
        self.assertEqual(s.connections, 1)
        s2 = self.stand_in(400, PROBLEM, b'{"type":"x"}')
        c2 = self.client(s2.url)
        for _ in range(5):
            c2.check(**LOGIN)
        self.assertEqual(s2.connections, 1, "an error answer is drained and its connection reused")

    def test_a_connection_the_server_closed_is_not_reused(self) -> None:
        s = StandIn(lambda _r: (200, {"Content-Type": "application/json", "Connection": "close"}, PROCEED))
        self.addCleanup(s.close)
        c = self.client(s.url)
        for _ in range(3):
            self.assertIsNone(c.check(**LOGIN).error)
        self.assertEqual(s.connections, 3)

    def test_threads_share_one_client(self) -> None:
        s = self.stand_in()
        c = self.client(s.url, timeout=5.0)  # thread safety, not latency, on a busy test machine
        errors: List[Any] = []

        def work() -> None:
            for _ in range(20):
                v = c.check(**LOGIN)
                if v.error is not None or v.action != "proceed":
                    errors.append(v.error)

        threads = [threading.Thread(target=work) for _ in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        self.assertEqual(errors, [])
        self.assertEqual(len(s.requests), 320)
        self.assertLessEqual(s.connections, 16)

    def test_parallel_guesses_cannot_outrun_the_allowance(self) -> None:
        c = self.client(closed_port_url(), fail_open_per_account=5, fail_open_per_address=-1)
        results: List[str] = []
        lock = threading.Lock()

        def guess() -> None:
            v = c.check(**LOGIN, fail=FAIL_OPEN)
            with lock:
                results.append(v.action)

        threads = [threading.Thread(target=guess) for _ in range(40)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        self.assertEqual(results.count("proceed"), 5)
        self.assertEqual(results.count("delay"), 35)
        st = c.stats()
        self.assertEqual((st.fail_open_proceeds, st.fail_open_refused_account), (5, 35))
