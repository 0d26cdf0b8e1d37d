"""The client against a real tollgate: the binary TOLLGATE_BIN names, or
one built with go build, on 127.0.0.1 with the memory store and the
built-in policy (or, for reload, a configuration file the test writes),
killed after each test."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import unittest
from typing import Callable, Dict, List, Optional, Tuple

import tollgate
from tollgate import FAIL_CAPTCHA, FAIL_DELAY, FAIL_OPEN, Client, DeviceCookie, Responder, TollgateError

from .support import ALICE, ALICE_IP, ALICE_SMS, SECRETS, StandIn, Tollgate, tollgate_binary

LOGIN = dict(flow="login", account=ALICE, ip=ALICE_IP)


def built_in_flows(binary: str) -> List[str]:
    """The built-in policy's flows, sorted as reload names them, from
    ``tollgate validate-config -json`` without a file: the policy says
    which flows it has, so a flow added to it needs no edit here."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOLLGATE_")}
    out = subprocess.run([binary, "validate-config", "-json"], env=env, check=True,
                         stdout=subprocess.PIPE, timeout=60).stdout
    return sorted(f["name"] for f in json.loads(out)["flows"])


class RealBreached(unittest.TestCase):
    """breached() and the step-up reports against a real tollgate whose
    configuration has a breached-password corpus (the breached section):
    the shared vectors' breached passwords in it, the others not."""

    binary: Optional[str] = None

    @classmethod
    def setUpClass(cls) -> None:
        cls.binary = tollgate_binary()
        if cls.binary is None:
            raise unittest.SkipTest("no TOLLGATE_BIN and no go to build tollgate with")

    def setUp(self) -> None:
        import hashlib
        import json

        from .support import TESTDATA

        assert self.binary is not None
        with open(os.path.join(TESTDATA, "breached.json"), "rb") as f:
            self.cases = json.load(f)["cases"]
        tmp = tempfile.TemporaryDirectory(prefix="tollgate-python-breached-")
        self.addCleanup(tmp.cleanup)
        corpus = os.path.join(tmp.name, "pwned.txt")
        with open(corpus, "w", encoding="utf-8") as f:
            for c in self.cases:
                if c["breached"]:
                    f.write("%s:%d\n" % (hashlib.sha1(c["password"].encode("utf-8")).hexdigest().upper(), c["count"]))
            # examples/login.py's alice's password, breached here.
            f.write("%s:7\n" % hashlib.sha1(b"correct horse").hexdigest().upper())
        config = os.path.join(tmp.name, "tollgate.yaml")
        with open(config, "w", encoding="utf-8") as f:
            f.write("breached:\n  corpus: %s\n" % json.dumps(corpus))
        self.server = Tollgate(self.binary, config=config)
        self.addCleanup(self.server.stop)
        self.tg = Client(self.server.url, timeout=5.0)
        self.addCleanup(self.tg.close)

    def test_breached_answers_the_corpus_by_k_anonymity(self) -> None:
        for c in self.cases:
            with self.subTest(password=c["password"]):
                self.assertEqual(self.tg.breached(c["password"]), c["breached"])

    def test_a_stolen_breached_password_gets_step_up_and_the_device_token_only_after_the_second_factor(self) -> None:
        acct, ip = "stuffed@example.com", "198.51.100.61"
        self.assertTrue(self.tg.breached("password"))
        v = self.tg.check(flow="login", account=acct, ip=ip)
        self.assertEqual(v.action, "proceed")
        r = self.tg.report(flow="login", account=acct, ip=ip, attempt=v.attempt, outcome="success", breached=True)
        self.assertEqual((r.action, r.device_token, r.error), (tollgate.STEP_UP, "", None))
        self.assertIn(tollgate.REASON_BREACHED_PASSWORD, r.reasons)
        self.assertTrue(r.attempt)
        # A wrong code: counted on step_up's own counters; the ticket stays.
        self.assertEqual(self.tg.check(flow="step_up", account=acct, ip=ip).action, "proceed")
        f = self.tg.step_up_failed(ticket=r.attempt, account=acct, ip=ip)
        self.assertEqual((f.action, f.error), ("proceed", None))
        p = self.tg.step_up_passed(ticket=r.attempt, account=acct, ip=ip)
        self.assertEqual((p.action, p.error), ("proceed", None))
        self.assertTrue(p.device_token)
        # With that device token, the owner's next breached success is a login.
        v = self.tg.check(flow="login", account=acct, ip=ip, device_token=p.device_token)
        r2 = self.tg.report(flow="login", account=acct, ip=ip, attempt=v.attempt, device_token=p.device_token,
                            outcome="success", breached=True)
        self.assertEqual(r2.action, "proceed")
        self.assertTrue(r2.device_token)

    def test_the_readme_login_handler_starts_no_session_for_a_breached_password(self) -> None:
        from .test_readme import load_example

        ex = load_example()
        setattr(ex, "tg", self.tg)
        got = ex.login({"user": ALICE, "password": "correct horse"}, "127.0.0.1", {})
        self.assertEqual(got[0], 403)
        self.assertNotIn("Set-Cookie", dict(got[1]))
        self.assertNotIn(b"welcome", got[2])

    def test_a_forged_or_another_accounts_ticket_is_refused_on_attempt(self) -> None:
        acct, ip = "victim@example.com", "198.51.100.62"
        v = self.tg.check(flow="login", account=acct, ip=ip)
        r = self.tg.report(flow="login", account=acct, ip=ip, attempt=v.attempt, outcome="success", breached=True)
        self.assertEqual(r.action, tollgate.STEP_UP)
        for ticket, account in ((r.attempt[:-2] + "xx", acct), (r.attempt, "someone-else@example.com"), ("", acct)):
            with self.subTest(ticket=ticket[-4:], account=account):
                p = self.tg.step_up_passed(ticket=ticket, account=account, ip=ip)
                self.assertTrue(p.fallback)
                self.assertEqual(p.action, "delay")
                self.assertIsInstance(p.error, TollgateError)
                assert isinstance(p.error, TollgateError)
                self.assertEqual((p.error.status, p.error.field), (400, "attempt"))


def no_secrets(case: unittest.TestCase, err: Optional[BaseException]) -> None:
    if err is None:
        return
    for s in SECRETS:
        case.assertNotIn(s, str(err))
        case.assertNotIn(s, repr(err))


class RealTollgate(unittest.TestCase):
    binary: Optional[str] = None

    @classmethod
    def setUpClass(cls) -> None:
        cls.binary = tollgate_binary()
        if cls.binary is None:
            raise unittest.SkipTest("no TOLLGATE_BIN and no go to build tollgate with")

    def setUp(self) -> None:
        assert self.binary is not None
        self.server = Tollgate(self.binary)
        self.addCleanup(self.server.stop)
        self.tg = Client(self.server.url, timeout=5.0)  # a loaded machine must time out no call
        self.addCleanup(self.tg.close)

    def backoff_count(self) -> int:
        x = self.tg.explain(flow="login", account=ALICE)
        for r in x.rules:
            if r.rule == "account_backoff":
                return r.count
        return -1

    def fail_once(self) -> None:
        v = self.tg.check(**LOGIN)
        self.assertEqual((v.action, v.fallback, v.error), ("proceed", False, None))
        r = self.tg.report(outcome="failure", attempt=v.attempt, **LOGIN)
        self.assertIsNone(r.error)

    def test_check_then_report_a_failure_with_the_attempt_token(self) -> None:
        v = self.tg.check(**LOGIN)
        self.assertEqual(v.action, "proceed")
        self.assertTrue(v.attempt)
        self.assertFalse(v.fallback)
        self.assertEqual(self.backoff_count(), 1, "a proceed counts the attempt until reported")
        r = self.tg.report(outcome="failure", attempt=v.attempt, **LOGIN)
        self.assertEqual((r.action, r.error, r.fallback), ("proceed", None, False))
        self.assertEqual(self.backoff_count(), 1, "the report confirms the check's charge, once")
        again = self.tg.report(outcome="failure", attempt=v.attempt, **LOGIN)
        self.assertIsNone(again.error)
        self.assertEqual(self.backoff_count(), 1, "an attempt settles once")

    def test_a_password_change_after_a_stuffing_attack_clears_the_accounts_failures(self) -> None:
        for _ in range(5):
            self.fail_once()
        self.assertEqual(self.tg.check(**LOGIN).action, "delay")
        v = self.tg.password_changed(account=ALICE, ip=ALICE_IP)
        self.assertEqual((v.action, v.device_token, v.fallback, v.error), ("proceed", "", False, None))
        self.assertEqual(self.backoff_count(), 0)
        self.assertEqual(self.tg.check(**LOGIN).action, "proceed")
        # A flow that takes no password change: refused, as a fallback.
        v = self.tg.password_changed(account=ALICE, ip=ALICE_IP, flow="step_up")
        self.assertIsInstance(v.error, TollgateError)
        assert isinstance(v.error, TollgateError)
        self.assertEqual((v.error.status, v.error.field, v.fallback), (400, "outcome", True))

    def test_repeated_failures_delay_with_a_growing_retry_after(self) -> None:
        for _ in range(5):
            self.fail_once()
        rs = Responder()
        waits = []
        for _ in range(3):
            v = self.tg.check(**LOGIN, fail=FAIL_OPEN)
            self.assertEqual((v.action, v.fallback), ("delay", False))
            self.assertIn("account_backoff", v.reasons)
            a = rs.respond(v)
            self.assertFalse(a.proceed)
            self.assertEqual(a.status, 429)
            self.assertEqual(a.header("RateLimit"), '"login";r=0;t=' + a.header("Retry-After"))
            waits.append(int(a.header("Retry-After")))
            # A failure reported without an attempt token is counted on its own.
            self.tg.report(outcome="failure", **LOGIN)
        self.assertEqual(waits, sorted(waits))
        self.assertLess(waits[0], waits[-1], waits)
        # Another spelling and another address: the same account, delayed too.
        v = self.tg.check(flow="login", account=" ALICE@example.com ", ip="198.51.100.1")
        self.assertEqual(v.action, "delay")

    def test_a_success_gives_a_device_token_that_proceeds_through_a_delay(self) -> None:
        v = self.tg.check(**LOGIN)
        r = self.tg.report(outcome="success", attempt=v.attempt, **LOGIN)
        self.assertEqual(r.action, "proceed")
        self.assertTrue(r.device_token)
        cookie = DeviceCookie()
        set_cookie = cookie.set_cookie(r.device_token)
        assert set_cookie is not None
        self.assertTrue(set_cookie.startswith("__Host-tollgate-device="))
        # The browser sends back name=value.
        header = "theme=dark; " + set_cookie.split(";", 1)[0]
        device = cookie.token(header)
        self.assertEqual(device, r.device_token)
        for _ in range(6):  # an attacker delays the account...
            v = self.tg.check(flow="login", account=ALICE, ip="198.51.100.66")
            if v.action != "proceed":
                break
            self.tg.report(flow="login", account=ALICE, ip="198.51.100.66", outcome="failure", attempt=v.attempt)
        self.assertEqual(self.tg.check(flow="login", account=ALICE, ip="198.51.100.67").action, "delay")
        # ...but the owner's device goes ahead,
        v = self.tg.check(device_token=device, **LOGIN)
        self.assertEqual((v.action, v.error), ("proceed", None))
        # and so does she without it from the address she signed in from
        # (a known network of her account).
        self.assertEqual(self.tg.check(**LOGIN).action, "proceed")

    def test_send(self) -> None:
        v = self.tg.send(destination=ALICE_SMS, channel="sms", ip=ALICE_IP)
        self.assertEqual((v.action, v.error), ("proceed", None))
        again = self.tg.send(destination="+447400123456", channel="sms", ip=ALICE_IP, fail=FAIL_OPEN)
        self.assertIn(again.action, ("delay", "deny"))
        self.assertFalse(again.fallback)
        self.assertFalse(Responder().respond(again).proceed)

    def test_a_bad_request_is_a_tollgate_error_and_answered_closed(self) -> None:
        for mode in (FAIL_OPEN, FAIL_DELAY, FAIL_CAPTCHA):
            with self.subTest(mode=mode):
                v = self.tg.check(flow="login", account=ALICE, ip="not-an-ip", captcha_solved=True, fail=mode)
                e = v.error
                self.assertIsInstance(e, TollgateError)
                assert isinstance(e, TollgateError)
                self.assertEqual((e.status, e.type, e.field, e.op), (400, tollgate.PROBLEM_BASE + "invalid-field", "ip", "check"))
                self.assertTrue(e.detail)
                self.assertTrue(e.request_id)
                self.assertFalse(e.unavailable)
                self.assertFalse(tollgate.is_unavailable(e))
                self.assertTrue(v.fallback)
                self.assertEqual(v.action, "captcha" if mode is FAIL_CAPTCHA else "delay")
                self.assertFalse(Responder().respond(v).proceed)
                no_secrets(self, e)
        v = self.tg.check(flow="login", ip=ALICE_IP, fail=FAIL_OPEN)
        assert isinstance(v.error, TollgateError)
        self.assertEqual((v.error.type, v.error.field, v.action), (tollgate.PROBLEM_BASE + "missing-field", "account", "delay"))
        v = self.tg.check(flow="nope", account=ALICE, ip=ALICE_IP, fail=FAIL_OPEN)
        assert isinstance(v.error, TollgateError)
        self.assertEqual((v.error.field, v.action), ("flow", "delay"))
        no_secrets(self, v.error)

    def test_explain_and_reset(self) -> None:
        for _ in range(5):
            self.fail_once()
        x = self.tg.explain(flow="login", account=ALICE, ip=ALICE_IP)
        self.assertEqual(x.flow, "login")
        self.assertEqual(x.verdict.action, "delay")
        self.assertEqual(self.backoff_count(), 5)
        self.assertTrue(any(r.subject == "ip" for r in x.rules), [r.rule for r in x.rules])
        self.assertEqual([r.facet for r in x.rules if r.reason == "account_backoff"], [""])
        record = [r for r in x.rules if r.facet == "known_network"]
        self.assertEqual([(r.over, r.subject) for r in record], [(False, "account+network")])
        self.assertGreaterEqual(self.tg.reset(flow="login", account=ALICE, reason="test: owner verified", ref="user-8c1f2e"), 1)
        self.assertEqual(self.tg.check(**LOGIN).action, "proceed")
        with self.assertRaises(TollgateError) as cm:
            self.tg.reset(flow="login", account=ALICE, reason="")
        self.assertEqual(cm.exception.status, 400)
        no_secrets(self, cm.exception)

    def test_entries_deny_allow_remove(self) -> None:
        e = self.tg.deny(flow="login", ip_range="203.0.113.0/24", expires_in="1h", reason="test: incident")
        self.assertEqual((e.kind, e.subject, e.length), ("block", "ip_range", 24))
        v = self.tg.check(**LOGIN, fail=FAIL_OPEN)
        self.assertEqual((v.action, v.reasons, v.fallback), ("delay", ["blocked"], False))
        a = self.tg.allow(flow="login", ip_range="192.0.2.0/24", expires_in="1h", reason="test: office")
        self.assertEqual(a.kind, "allow")
        self.assertEqual([x.id for x in self.tg.entries("login")], [e.id, a.id])
        self.assertTrue(self.tg.remove(id=e.id, reason="test: closed"))
        self.assertFalse(self.tg.remove(id=e.id, reason="test: closed"))
        self.assertEqual([x.id for x in self.tg.entries()], [a.id])

    def test_an_unknown_account_and_a_wrong_password_get_identical_answers(self) -> None:
        rs = Responder()
        answers: Dict[str, tollgate.Answer] = {}
        for account in (ALICE, "nobody@example.com"):
            for _ in range(5):
                v = self.tg.check(flow="login", account=account, ip="198.51.100.%d" % len(answers))
                self.assertEqual(v.action, "proceed")
                self.tg.report(flow="login", account=account, ip="198.51.100.%d" % len(answers),
                               outcome="failure", attempt=v.attempt)
            v = self.tg.check(flow="login", account=account, ip="198.51.100.200")
            answers[account] = rs.respond(v)
        known, unknown = answers[ALICE], answers["nobody@example.com"]
        self.assertEqual(known.status, 429)
        self.assertEqual(known, unknown)

    def test_reload_without_a_file_answers_the_built_in_flows(self) -> None:
        with Client(self.server.url, timeout=5.0) as admin:  # re-reading the policy may take longer than a verdict
            r = admin.reload()
        self.assertIsInstance(r, tollgate.ReloadResult)
        assert self.binary is not None
        self.assertEqual((r.flows, r.restart_needed), (built_in_flows(self.binary), []))
        self.assertEqual(self.tg.check(**LOGIN).action, "proceed")

    def test_a_server_without_webhooks_answers_not_found_not_an_empty_list(self) -> None:
        calls: List[Callable[[], object]] = [self.tg.dead_letters, lambda: self.tg.replay_webhook(id="msg_x", reason="test")]
        for call in calls:
            with self.assertRaises(TollgateError) as cm:
                call()
            e = cm.exception
            self.assertEqual((e.status, e.type, e.unavailable), (404, tollgate.PROBLEM_BASE + "not-found", False))

    def test_a_challenge_is_issued_solved_once_and_its_solver_served(self) -> None:
        import hashlib

        ch = self.tg.challenge()
        self.assertEqual((ch.kind, ch.solver_url, ch.site_key), ("pow", "/v1/challenge/solver.js", ""))
        self.assertRegex(ch.token, r"^[A-Za-z0-9_-]{58}$")
        self.assertTrue(1 <= ch.difficulty <= 32)
        def works(n: int) -> bool:
            h = hashlib.sha256(ch.token.encode() + n.to_bytes(8, "big")).digest()
            return int.from_bytes(h, "big") >> (256 - ch.difficulty) == 0

        n = next(i for i in range(1 << 40) if works(i))
        wrong = next(i for i in range(1 << 40) if not works(i))
        r = self.tg.verify_challenge(token=ch.token, nonce=str(wrong))
        self.assertEqual((r.solved, r.reason), (False, "insufficient_work"))
        r = self.tg.verify_challenge(token=ch.token, nonce=str(n))
        self.assertEqual((r.solved, r.reason), (True, "solved"))
        r = self.tg.verify_challenge(token=ch.token, nonce=str(n))
        self.assertEqual((r.solved, r.reason), (False, "replayed"))
        self.assertIn(b"tollgateSolve", self.tg.challenge_solver())
        with self.assertRaises(TollgateError) as cm:
            self.tg.verify_challenge(token=ch.token)
        self.assertEqual((cm.exception.status, cm.exception.field), (400, "nonce"))
        with self.assertRaises(TollgateError) as cm:
            self.tg.challenge("turnstile")
        self.assertEqual((cm.exception.status, cm.exception.field), (400, "kind"))

    def test_the_readme_login_handler(self) -> None:
        from .test_readme import load_example

        ex = load_example()
        setattr(ex, "tg", self.tg)
        ok = ex.login({"user": ALICE, "password": "correct horse"}, "127.0.0.1", {})
        self.assertEqual(ok[0], 200)
        set_cookie = dict(ok[1])["Set-Cookie"]
        browser = {"Cookie": set_cookie.split(";", 1)[0]}
        results = {}
        for user in (ALICE, "nobody@example.com"):
            got = []
            for i in range(7):  # seven passwords: one repeated is no new guess
                got.append(ex.login({"user": user, "password": "guess-%d" % i}, "192.0.2.50", {}))
            results[user] = got
        # Wrong passwords and unknown accounts get the same answers, in turn
        # (from an address alice never signed in from: from hers, her known
        # network, five more go ahead before the 429s).
        self.assertEqual([g[0] for g in results[ALICE]], [200] * 5 + [429] * 2)
        self.assertEqual([g[0] for g in results["nobody@example.com"]], [200] * 5 + [429] * 2)
        # The form shows each its own typed name again, as any framework's
        # does; the answers tollgate shapes are the same bytes.
        self.assertIn(b"Wrong user or password.", results[ALICE][0][2])
        self.assertEqual([(g[0], g[1], g[2]) for g in results[ALICE][5:]],
                         [(g[0], g[1], g[2]) for g in results["nobody@example.com"][5:]])
        # One wrong password again and again is counted once (its fingerprint).
        repeated = [ex.login({"user": "carol@example.com", "password": "same"}, "192.0.2.51", {})[0] for _ in range(8)]
        self.assertEqual(repeated, [200] * 8)
        # The owner's browser still gets in at once.
        again = ex.login({"user": ALICE, "password": "correct horse"}, "127.0.0.1", browser)
        self.assertEqual(again[0], 200)


# The configuration files of RealReload: a login policy, then a new flow and
# a setting only a restart applies, then a rule that does not validate at
# line 16 (no subject, an unknown algorithm).
BEFORE = """flows:
  login:
    rules:
      - name: account_backoff
        free: 3
"""
AFTER = """log_level: debug
flows:
  login:
    rules:
      - name: account_backoff
        free: 5
  signup:
    rules:
      - name: ip_minute
        subject: ip
        algorithm: fixed_window
        counts: check
        limit: 2
        window: 1m
        past: delay
"""
BROKEN = AFTER + """      - name: broken
        algorithm: nonsense
"""


class RealReload(unittest.TestCase):
    """reload against a real tollgate reading TOLLGATE_CONFIG."""

    binary: Optional[str] = None

    @classmethod
    def setUpClass(cls) -> None:
        cls.binary = tollgate_binary()
        if cls.binary is None:
            raise unittest.SkipTest("no TOLLGATE_BIN and no go to build tollgate with")

    def setUp(self) -> None:
        assert self.binary is not None
        tmp = tempfile.TemporaryDirectory(prefix="tollgate-python-reload-")
        self.addCleanup(tmp.cleanup)
        self.file = os.path.join(tmp.name, "tollgate.yaml")
        self.write(BEFORE)
        self.server = Tollgate(self.binary, config=self.file)
        self.addCleanup(self.server.stop)
        self.tg = Client(self.server.url, timeout=5.0)
        self.addCleanup(self.tg.close)

    def write(self, text: str) -> None:
        with open(self.file, "w", encoding="utf-8") as f:
            f.write(text)

    def test_a_changed_file_applies_at_once_and_names_what_needs_a_restart(self) -> None:
        v = self.tg.check(flow="signup", ip="192.0.2.50")
        self.assertIsInstance(v.error, TollgateError)
        assert isinstance(v.error, TollgateError)
        self.assertEqual(v.error.field, "flow")
        assert self.binary is not None
        built_in = built_in_flows(self.binary)  # a file's flows come on top of the built-in ones
        self.assertIn("login", built_in)
        self.assertNotIn("signup", built_in)
        r = self.tg.reload()
        self.assertEqual((r.flows, r.restart_needed), (built_in, []))
        self.write(AFTER)
        r = self.tg.reload()
        self.assertEqual((r.flows, r.restart_needed), (sorted(built_in + ["signup"]), ["log_level"]))
        v = self.tg.check(flow="signup", ip="192.0.2.50")
        self.assertEqual((v.action, v.error), ("proceed", None))

    def test_a_file_that_does_not_validate_is_a_config_invalid_error_naming_the_line(self) -> None:
        self.write(AFTER)
        self.tg.reload()
        self.write(BROKEN)
        with self.assertRaises(TollgateError) as cm:
            self.tg.reload()
        e = cm.exception
        self.assertEqual((e.op, e.status, e.type, e.unavailable),
                         ("reload", 409, tollgate.PROBLEM_BASE + "config-invalid", False))
        self.assertRegex(e.detail, r"\bline 16\b")
        self.assertTrue(e.request_id)
        self.assertTrue(str(e).startswith("tollgate: reload: 409 config-invalid: "), str(e))
        self.assertTrue(re.search(r"\bline 16\b", str(e)), str(e))
        # The last good file's policy still runs: signup is a flow.
        v = self.tg.check(flow="signup", ip="192.0.2.51")
        self.assertIsNone(v.error)
        # Mended, the file reloads again.
        self.write(AFTER)
        self.assertEqual(self.tg.reload().restart_needed, ["log_level"])


class RealWebhooks(unittest.TestCase):
    """dead_letters and replay_webhook against a real tollgate whose
    configuration has a webhooks section, its endpoint a receiver of the
    test's on loopback."""

    binary: Optional[str] = None

    @classmethod
    def setUpClass(cls) -> None:
        cls.binary = tollgate_binary()
        if cls.binary is None:
            raise unittest.SkipTest("no TOLLGATE_BIN and no go to build tollgate with")

    def setUp(self) -> None:
        assert self.binary is not None
        receiver = StandIn(lambda _r: (204, {}, b""))
        self.addCleanup(receiver.close)
        tmp = tempfile.TemporaryDirectory(prefix="tollgate-python-webhooks-")
        self.addCleanup(tmp.cleanup)
        secret = os.path.join(tmp.name, "webhook-secret")
        with open(secret, "w", encoding="utf-8") as f:
            f.write("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n")
        config = os.path.join(tmp.name, "tollgate.yaml")
        with open(config, "w", encoding="utf-8") as f:
            f.write("webhooks:\n  endpoints:\n    - name: security\n      url: %s/tollgate/events\n"
                    "      secret_file: %s\n" % (receiver.url, secret))
        self.server = Tollgate(self.binary, config=config)
        self.addCleanup(self.server.stop)
        self.tg = Client(self.server.url, timeout=5.0)
        self.addCleanup(self.tg.close)

    def test_no_dead_letters_is_an_empty_list(self) -> None:
        self.assertEqual(self.tg.dead_letters(), [])
        self.assertEqual(self.tg.dead_letters(limit=1000), [])

    def test_a_replay_of_an_id_never_given_up_on_replays_nothing(self) -> None:
        self.assertIs(self.tg.replay_webhook(id="msg_never_was", reason="test: receiver fixed"), False)

    def test_a_limit_out_of_1_to_1000_is_an_invalid_field_error_on_limit(self) -> None:
        for limit in (0, 1001, -1):
            with self.subTest(limit=limit):
                with self.assertRaises(TollgateError) as cm:
                    self.tg.dead_letters(limit=limit)
                e = cm.exception
                self.assertEqual((e.op, e.status, e.type, e.field, e.unavailable),
                                 ("dead-letters", 400, tollgate.PROBLEM_BASE + "invalid-field", "limit", False))

    def test_a_replay_without_a_reason_is_refused(self) -> None:
        with self.assertRaises(TollgateError) as cm:
            self.tg.replay_webhook(id="msg_x", reason="")
        self.assertEqual((cm.exception.op, cm.exception.status, cm.exception.field), ("replay", 400, "reason"))


class RealHeld(unittest.TestCase):
    """held and reset_held against one real tollgate for the class, its
    configuration file turning on the held-subjects index
    (store.held_index_bytes) and auth (an HS256 secret, tokens from
    ``tollgate token``). Each test holds accounts of its own, from
    addresses of its own, and frees them before it ends."""

    REASON = "test: incident 31 ended"
    server: Tollgate
    admin: Client  # verdicts, admin:read and admin:write
    reader: Client  # verdicts and admin:read
    caller: Client  # verdicts only
    anonymous: Client  # no token

    @classmethod
    def setUpClass(cls) -> None:
        binary = tollgate_binary()
        if binary is None:
            raise unittest.SkipTest("no TOLLGATE_BIN and no go to build tollgate with")
        tmp = tempfile.TemporaryDirectory(prefix="tollgate-python-held-")
        cls.addClassCleanup(tmp.cleanup)
        key = os.path.join(tmp.name, "hs256.key")
        with open(key, "w", encoding="utf-8") as f:
            f.write("held-subjects-test-secret-of-more-than-32-bytes\n")
        config = os.path.join(tmp.name, "tollgate.yaml")
        with open(config, "w", encoding="utf-8") as f:
            f.write("store:\n  held_index_bytes: 16MiB\n"
                    "auth:\n  audience: tollgate\n"
                    "  keys:\n    - {id: local, alg: HS256, secret_file: %s}\n"
                    "  tenants:\n    - {name: shop, issuer: \"https://auth.shop.example\"}\n" % json.dumps(key))
        env = {k: v for k, v in os.environ.items() if not k.startswith("TOLLGATE_")}

        tollgate_bin: str = binary

        def token(scopes: str) -> str:
            return subprocess.run([tollgate_bin, "token", "-key", key, "-alg", "HS256", "-kid", "local", "-config", config,
                                   "-tenant", "shop", "-scopes", scopes, "-ttl", "30m"],
                                  env=env, check=True, stdout=subprocess.PIPE, timeout=60).stdout.decode().strip()

        cls.server = Tollgate(binary, config=config)
        cls.addClassCleanup(cls.server.stop)
        cls.admin = Client(cls.server.url, timeout=5.0, token=token("verdicts admin:read admin:write"))
        cls.reader = Client(cls.server.url, timeout=5.0, token=token("verdicts admin:read"))
        cls.caller = Client(cls.server.url, timeout=5.0, token=token("verdicts"))
        cls.anonymous = Client(cls.server.url, timeout=5.0)
        for c in (cls.admin, cls.reader, cls.caller, cls.anonymous):
            cls.addClassCleanup(c.close)

    def hold(self, account: str, ip: str) -> None:
        """Fail account from ip with real checks and reports until a check
        is delayed, then report three failures more: a wait of seconds,
        which a slow machine cannot run out before the list is read."""
        for _ in range(10):
            v = self.admin.check(flow="login", account=account, ip=ip)
            self.assertIsNone(v.error)
            if v.action != "proceed":
                break
            self.assertIsNone(self.admin.report(flow="login", account=account, ip=ip, outcome="failure",
                                                attempt=v.attempt).error)
        else:
            self.fail("%s not delayed after 10 failures" % account)
        for _ in range(3):
            self.assertIsNone(self.admin.report(flow="login", account=account, ip=ip, outcome="failure").error)

    def action_of(self, account: str, ip: str) -> str:
        v = self.admin.check(flow="login", account=account, ip=ip)
        self.assertIsNone(v.error)
        return v.action

    def test_an_operator_lists_the_accounts_a_guesser_holds_dry_runs_the_reset_then_frees_them_in_one_call(self) -> None:
        held = {"held-one@example.com": "203.0.113.170", "held-two@example.com": "203.0.113.171"}
        for account, ip in held.items():
            self.hold(account, ip)

        page = self.admin.held(flow="login", kind="account")
        self.assertEqual(sorted(s.subject for s in page.subjects), sorted(held))
        for s in page.subjects:
            with self.subTest(subject=s.subject):
                self.assertEqual((s.flow, s.kind, s.rule, s.reason, s.over),
                                 ("login", "account", "account_backoff", "account_backoff", False))
                self.assertGreater(s.wait_ms, 0)
                self.assertGreaterEqual(s.expires_in_ms, s.wait_ms)
                self.assertRegex(s.since, r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
        self.assertEqual((page.next, page.counts), ("", {"login:account": 2}))

        p1 = self.reader.held(flow="login", kind="account", limit=1)
        self.assertEqual(len(p1.subjects), 1)
        self.assertTrue(p1.next, "a next page")
        p2 = self.reader.held(flow="login", kind="account", limit=1, cursor=p1.next)
        self.assertEqual(p2.next, "", "the last page")
        self.assertEqual(sorted(s.subject for s in p1.subjects + p2.subjects), sorted(held))
        self.assertEqual(p2.counts, {"login:account": 2}, "every page's counts")
        self.assertEqual(self.admin.held(flow="login", kind="ip").subjects, [])

        dry = self.admin.reset_held(flow="login", kind="account", reason=self.REASON, dry_run=True)
        self.assertEqual(dry, tollgate.HeldReset(matched=2, reset=0, deleted=0, dry_run=True))
        self.assertEqual(len(self.admin.held(flow="login", kind="account").subjects), 2, "a dry run frees nobody")
        for account, ip in held.items():
            self.assertEqual(self.action_of(account, ip), "delay", account)

        done = self.admin.reset_held(flow="login", kind="account", reason=self.REASON)
        self.assertEqual((done.matched, done.reset, done.dry_run), (2, 2, False))
        self.assertGreater(done.deleted, 0)
        after = self.admin.held(flow="login")
        self.assertEqual(after.subjects, [])
        self.assertEqual(after.counts.get("login:account", 0), 0, after.counts)
        for account, ip in held.items():
            self.assertEqual(self.action_of(account, ip), "proceed", account)

    def test_a_held_call_refused_changes_nothing_and_names_nobody_then_a_reset_naming_the_account_frees_it(self) -> None:
        account, ip = "held-three@example.com", "203.0.113.172"
        self.hold(account, ip)
        refusals: List[Tuple[Callable[[], object], int, str]] = [
            (lambda: self.admin.reset_held(flow="login", subjects=[account], reason=""), 400, "missing-field"),
            (lambda: self.reader.reset_held(flow="login", subjects=[account], reason=self.REASON), 403, "forbidden"),
            (lambda: self.caller.held(flow="login"), 403, "forbidden"),
            (lambda: self.anonymous.held(flow="login"), 401, "unauthenticated"),
        ]
        for call, status, kind in refusals:
            with self.subTest(status=status, kind=kind):
                with self.assertRaises(TollgateError) as cm:
                    call()
                self.assertEqual((cm.exception.status, cm.exception.type), (status, tollgate.PROBLEM_BASE + kind))
                self.assertNotIn(account, str(cm.exception))
                self.assertNotIn(account, repr(cm.exception))
        self.assertEqual([s.subject for s in self.reader.held(flow="login", kind="account").subjects], [account],
                         "still held")
        self.assertEqual(self.action_of(account, ip), "delay")

        r = self.admin.reset_held(flow="login", subjects=[account], reason=self.REASON)
        self.assertEqual((r.matched, r.reset, r.dry_run), (1, 1, False))
        self.assertEqual(self.admin.held(flow="login", kind="account").subjects, [])
        self.assertEqual(self.action_of(account, ip), "proceed")
