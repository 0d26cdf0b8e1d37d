"""A step-up report carries its try's own step_up check's attempt after
the ticket, so that tollgate settles the failure that check charged: a
wrong code counts once, a pass not at all."""

from __future__ import annotations

import unittest

from tollgate import Client

from .support import StandIn

PROCEED = b'{"action":"proceed","delay_ms":0,"retry_after":0,"reasons":[],"attempt":"","device_token":""}'


class StepUpAttempt(unittest.TestCase):
    def test_the_step_up_reports_carry_the_trys_attempt_after_the_ticket(self) -> None:
        s = StandIn(lambda _r: (200, {"Content-Type": "application/json"}, PROCEED))
        self.addCleanup(s.close)
        c = Client(s.url, timeout=5.0)
        self.addCleanup(c.close)
        c.step_up_failed(ticket="ticket.1", account="a", ip="i", attempt="at.9")
        self.assertEqual(s.last().body, b'{"flow":"step_up","account":"a","ip":"i","outcome":"step_up_failed",'  # type: ignore[union-attr]
                         b'"attempt":"ticket.1,at.9"}')
        c.step_up_passed(ticket="ticket.1", account="a", ip="i", attempt="at.10")
        self.assertEqual(s.last().body, b'{"flow":"step_up","account":"a","ip":"i","outcome":"step_up_passed",'  # type: ignore[union-attr]
                         b'"attempt":"ticket.1,at.10"}')
        c.step_up_failed(ticket="ticket.1", account="a", ip="i")
        self.assertEqual(s.last().body, b'{"flow":"step_up","account":"a","ip":"i","outcome":"step_up_failed",'  # type: ignore[union-attr]
                         b'"attempt":"ticket.1"}')


if __name__ == "__main__":
    unittest.main()
