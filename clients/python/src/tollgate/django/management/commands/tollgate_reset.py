"""``manage.py tollgate_reset``: forget a user's failures in tollgate, as
``axes_reset_username`` forgot them in django-axes' tables.

The account is read from standard input, so that it stays out of shell
history and the process list, as ``tollgate admin reset`` reads it::

    echo alice | python manage.py tollgate_reset --reason "ticket 4711"

Needs a TOLLGATE_TOKEN with the admin:write scope when tollgate has auth.
"""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError  # type: ignore[import]

from ....errors import TollgateError, Unavailable
from ... import conf


class Command(BaseCommand):  # type: ignore[misc]
    """Reset one account (or, with --ip, one address) in tollgate's flow."""

    help = ("Forget an account's failures in tollgate (read from standard input), or an address's with --ip. "
            "The reason is audited by tollgate; write no identifier in it.")

    def add_arguments(self, parser: Any) -> None:
        """--reason (required), --ip, --flow."""
        parser.add_argument("--reason", required=True, help="why, for tollgate's audit log (no identifiers)")
        parser.add_argument("--ip", action="store_true", help="the line read is an address, not an account")
        parser.add_argument("--flow", default=None, help="the flow (TOLLGATE_FLOW by default)")

    def handle(self, *args: Any, **options: Any) -> None:
        """Read the subject from standard input and ask tollgate's reset."""
        s = conf.get()
        subject = sys.stdin.readline().strip()
        if not subject:
            raise CommandError("give the account (or, with --ip, the address) on standard input")
        kind = {"ip": subject} if options["ip"] else {"account": subject}
        try:
            deleted = s.client.reset(flow=options["flow"] or s.flow, reason=options["reason"], **kind)
        except (TollgateError, Unavailable) as e:
            raise CommandError("tollgate refused the reset: %s" % e) from None
        self.stdout.write("tollgate deleted %d keys" % deleted)
