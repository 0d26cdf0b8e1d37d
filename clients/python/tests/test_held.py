"""The held-subjects admin calls against a stand-in: what they send (the
query, the body in Go's wire order) and what they decode."""

from __future__ import annotations

import unittest
from typing import Any

from tollgate import Client, HeldList, HeldReset, HeldSubject, TollgateError, Unavailable

from .support import StandIn

JSON = {"Content-Type": "application/json"}
HELD = (
    b'{"subjects":[{"subject":"alice@example.com","flow":"login","kind":"account","rule":"account_backoff",'
    b'"reason":"account_backoff","wait_ms":1000,"over":false,"since":"2026-12-06T03:00:00Z","expires_in_ms":86400000}],'
    b'"next":"bG9naW46YWNjb3VudDpo","counts":{"login:account":1}}'
)


class HeldTest(unittest.TestCase):
    def stand_in(self, status: int = 200, body: bytes = HELD) -> StandIn:
        s = StandIn(lambda _r: (status, JSON if status == 200 else {"Content-Type": "application/problem+json"}, body))
        self.addCleanup(s.close)
        return s

    def client(self, url: str, **kw: Any) -> Client:
        kw.setdefault("timeout", 5.0)
        c = Client(url, **kw)
        self.addCleanup(c.close)
        return c

    def test_held_sends_its_query_and_decodes_a_page(self) -> None:
        s = self.stand_in()
        c = self.client(s.url)
        page = c.held(flow="login", kind="account", cursor="a/b", limit=50)
        self.assertEqual(page, HeldList(
            subjects=[HeldSubject(subject="alice@example.com", flow="login", kind="account", rule="account_backoff",
                                  reason="account_backoff", wait_ms=1000, over=False, since="2026-12-06T03:00:00Z",
                                  expires_in_ms=86400000)],
            next="bG9naW46YWNjb3VudDpo", counts={"login:account": 1}))
        r = s.last()
        assert r is not None
        self.assertEqual((r.method, r.path), ("GET", "/v1/admin/held?flow=login&kind=account&cursor=a%2Fb&limit=50"))
        c.held()
        self.assertEqual(s.last().path, "/v1/admin/held")  # type: ignore[union-attr]

    def test_reset_held_sends_gos_body(self) -> None:
        s = self.stand_in(body=b'{"matched":2,"reset":0,"deleted":0,"dry_run":true}')
        c = self.client(s.url)
        r = c.reset_held(flow="login", reason="incident 3", subjects=["alice@example.com", 'b"ob'], dry_run=True)
        self.assertEqual(r, HeldReset(matched=2, reset=0, deleted=0, dry_run=True))
        self.assertEqual(s.last().body,  # type: ignore[union-attr]
                         b'{"flow":"login","subjects":["alice@example.com","b\\"ob"],"reason":"incident 3","dry_run":true}')
        c.reset_held(flow="login", kind="account", reason="incident 3")
        self.assertEqual(s.last().body, b'{"flow":"login","kind":"account","reason":"incident 3"}')  # type: ignore[union-attr]
        with self.assertRaises(TypeError):
            c.reset_held(flow="login", reason="x", subjects="alice")

    def test_held_while_the_index_is_off_is_tollgates_404(self) -> None:
        s = self.stand_in(404, b'{"type":"https://tollgate.dev/problems/not-found","title":"Not found","status":404}')
        with self.assertRaises(TollgateError) as e:
            self.client(s.url).held(flow="login")
        self.assertEqual(e.exception.status, 404)

    def test_a_page_of_the_wrong_shape_is_unavailable(self) -> None:
        for body in (b'{"subjects":[],"counts":{"login:account":"x"}}', b'{"subjects":[],"counts":{"login:account":1.5}}',
                     b'{"subjects":[],"counts":[1]}', b'[]'):
            with self.subTest(body=body):
                s = self.stand_in(body=body)
                with self.assertRaises(Unavailable):
                    self.client(s.url).held()

    def test_counts_decode_as_gos_map_of_ints(self) -> None:
        cases = [
            (b'null', {}),
            (b'{"subjects":[],"counts":null}', {}),
            (b'{"subjects":[]}', {}),
            (b'{"subjects":[],"Counts":{"login:ip":3}}', {"login:ip": 3}),
            (b'{"subjects":[],"counts":{"login:ip":3,"Login:IP":null,"login:ip":4}}', {"login:ip": 4, "Login:IP": 0}),
        ]
        for body, want in cases:
            with self.subTest(body=body):
                s = self.stand_in(body=body)
                page = self.client(s.url).held()
                self.assertEqual((page.subjects, page.next, page.counts), ([], "", want))


if __name__ == "__main__":
    unittest.main()
