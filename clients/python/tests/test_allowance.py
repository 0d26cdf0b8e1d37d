"""FAIL_OPEN's allowance: GCRA buckets, keyed hashes, the eviction rule."""

from __future__ import annotations

import unittest
from typing import Any, List

from tollgate import FAIL_OPEN, Client
from tollgate.allowance import Allowance, address_key, check_subject, fold_account, send_subject

from .support import ALICE, closed_port_url


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


class Refill(unittest.TestCase):
    def setUp(self) -> None:
        self.clock = FakeClock()
        self.client = Client(closed_port_url(), clock=self.clock, fail_open_per_address=-1)
        self.addCleanup(self.client.close)

    def guess(self, account: str = ALICE, ip: str = "198.51.100.1") -> str:
        v = self.client.check(flow="login", account=account, ip=ip, fail=FAIL_OPEN)
        self.assertTrue(v.fallback)
        return v.action

    def test_five_at_once_then_one_every_six_minutes(self) -> None:
        self.assertEqual([self.guess(ip="198.51.100.%d" % i) for i in range(6)], ["proceed"] * 5 + ["delay"])
        v = self.client.check(flow="login", account=ALICE, ip="198.51.100.9", fail=FAIL_OPEN)
        self.assertEqual(v.reasons, ["client_fallback", "client_fallback_allowance"])
        self.assertEqual((v.delay_ms, v.retry_after), (1000, 1))
        self.clock.t += 359
        self.assertEqual(self.guess(), "delay")
        self.clock.t += 1
        self.assertEqual([self.guess(), self.guess()], ["proceed", "delay"])
        self.clock.t += 1800
        self.assertEqual([self.guess() for _ in range(6)], ["proceed"] * 5 + ["delay"])
        st = self.client.stats()
        self.assertEqual((st.fail_open_proceeds, st.tracked_accounts, st.tracked_addresses), (11, 1, 0))
        self.clock.t += 1800
        self.assertEqual(self.guess(account="bob"), "proceed")
        self.assertEqual(self.client.stats().tracked_accounts, 1, "a refilled subject is dropped")

    def test_a_fifteen_minute_stuffing_run_gets_seven_guesses(self) -> None:
        got = 0
        for _ in range(900):  # one guess a second, from a new address each time
            got += self.guess(ip="198.51.%d.%d" % (self.clock.t % 200, self.clock.t % 250)) == "proceed"
            self.clock.t += 1
        self.assertEqual(got, 7)


class Spellings(unittest.TestCase):
    def test_fail_open_five_spellings_of_one_account_share_one_allowance(self) -> None:
        """TestFailOpen_FiveSpellingsOfOneAccountShareOneAllowance: one
        account written five ways that tollgate counts as one (full-width
        letters, a zero-width joiner, a zero-width non-joiner, İ, a
        full-width capital) shares one allowance of 5 proceeds during an
        outage, where a fold of case and white space alone gave each its
        own 5 (25)."""
        spellings = (
            "\uff41\uff4c\uff49\uff43\uff45@example.com",
            "al\u200dice@example.com",
            "al\u200cice@example.com",
            "al\u0130ce@example.com",
            "\uff21lice@example.com",
        )
        c = Client(closed_port_url(), clock=FakeClock(), fail_open_per_address=-1)
        self.addCleanup(c.close)
        n = 0
        for account in spellings:
            for i in range(5):
                v = c.check(flow="login", account=account, ip="10.0.0.%d" % i, fail=FAIL_OPEN)
                self.assertTrue(v.fallback)
                n += v.action == "proceed"
        self.assertEqual(n, 5)


class Table(unittest.TestCase):
    def test_a_full_table_evicts_the_subject_closest_to_full(self) -> None:
        clock = FakeClock()
        c = Client(closed_port_url(), clock=clock, fail_open_per_account=2, fail_open_per_address=-1, fail_open_subjects=3)
        self.addCleanup(c.close)

        def guess(account: str) -> str:
            return c.check(flow="login", account=account, fail=FAIL_OPEN).action

        self.assertEqual([guess("a"), guess("a")], ["proceed", "proceed"])  # a: spent
        clock.t += 1
        guess("b")
        clock.t += 1
        guess("c")
        clock.t += 1
        self.assertEqual(guess("d"), "proceed")  # evicts b, the closest to full
        st = c.stats()
        self.assertEqual((st.tracked_accounts, st.evicted), (3, 1))
        self.assertEqual(guess("a"), "delay", "the spent account was kept")

    def test_keys_are_keyed_hashes_never_identifiers(self) -> None:
        a = Allowance(5, 50, 1800.0, 100)
        b = Allowance(5, 50, 1800.0, 100)
        s = check_subject("login", ALICE, "203.0.113.7", False)
        self.assertTrue(a.take(1, s))
        self.assertTrue(b.take(1, s))
        keys_a = list(a._accounts.by_key) + list(a._addresses.by_key)  # type: ignore[union-attr]
        keys_b = list(b._accounts.by_key) + list(b._addresses.by_key)  # type: ignore[union-attr]
        self.assertTrue(all(isinstance(k, bytes) and len(k) == 16 for k in keys_a))
        self.assertFalse(set(keys_a) & set(keys_b), "each allowance has its own key")
        seen: List[Any] = []

        def walk(o: Any, depth: int = 0) -> None:
            if depth > 6:
                return
            seen.append(o)
            if isinstance(o, dict):
                for k, v in o.items():
                    walk(k, depth + 1)
                    walk(v, depth + 1)
            elif isinstance(o, (list, tuple)):
                for v in o:
                    walk(v, depth + 1)
            elif hasattr(o, "__dict__") or hasattr(o, "__slots__"):
                for name in getattr(o, "__slots__", ()) or vars(o):
                    walk(getattr(o, name, None), depth + 1)

        walk(a)
        for o in seen:
            if isinstance(o, (str, bytes)):
                for secret in (ALICE, "203.0.113.7", "alice"):
                    self.assertNotIn(secret, o if isinstance(o, str) else o.decode("latin-1"))

    def test_subject_forms(self) -> None:
        self.assertEqual(fold_account("  ALICE@Example.COM \t x "), "alice@example.com x")
        self.assertEqual(address_key("192.0.2.1"), "192.0.2.1")
        self.assertEqual(address_key("::ffff:192.0.2.1"), "192.0.2.1")
        self.assertEqual(address_key("2001:db8:1:2:3:4:5:6"), "2001:db8:1:2::/64")
        self.assertEqual(address_key("fe80::1%eth0"), "fe80::/64")
        self.assertEqual(address_key("not-an-ip"), "?not-an-ip")
        self.assertEqual(send_subject("", "+1 (555) 0100", "voice", "", False).account, "p:15550100")
        self.assertEqual(send_subject("", " Bob@Example.com", "sms", "", False).account, "e:bob@example.com")
        self.assertEqual(send_subject("", "Bob", "email", "", False).account, "e:bob")
        self.assertEqual(send_subject("", "x", "sms", "", False).flow, "otp_send")

    def test_both_limits_off_proceed_every_time(self) -> None:
        c = Client(closed_port_url(), fail_open_per_account=None, fail_open_per_address=None)
        self.addCleanup(c.close)
        for _ in range(20):
            self.assertEqual(c.check(flow="login", account=ALICE, fail=FAIL_OPEN).action, "proceed")
        self.assertEqual(c.stats().fail_open_proceeds, 20)

    def test_calls_without_account_or_address_are_not_counted_on_them(self) -> None:
        c = Client(closed_port_url(), fail_open_per_account=1, fail_open_per_address=1)
        self.addCleanup(c.close)
        for _ in range(3):
            self.assertEqual(c.check(flow="login", fail=FAIL_OPEN).action, "proceed")
