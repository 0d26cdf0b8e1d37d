"""Report every password change to tollgate, by one settings line::

    AUTH_PASSWORD_VALIDATORS += [{"NAME": "tollgate.django.validators.ReportPasswordChange"}]

Once a user's password has changed, however it changed (Django's
PasswordChangeView and PasswordResetConfirmView, the admin's password
form, ``manage.py changepassword``, a project's ``user.set_password();
user.save()``), tollgate is told ``password_changed`` on TOLLGATE_FLOW for
the account the user's logins are checked as: it clears the account's
failures there (and in the flows sharing its device trust), so the owner
who just changed a password an attacker was guessing signs in at once,
and with ``revoke_devices_on_password_change`` it makes the device tokens
issued before the change count as none (a leaked cookie stops helping).

Why a validator, and not a receiver connected by the app: Django's one
public hook for "the password changed" is the validators'
``password_changed(password, user)``, which ``AbstractBaseUser.save()``
calls after saving a password ``set_password()`` set, and never for a
hash upgraded at login (``check_password`` clears it first). Connecting
without a setting would mean a ``post_save`` receiver reading the model's
private ``_password``, which Django may rename in any release; a validator
is documented API, and the one line says where reports come from. Its
``validate()`` accepts every password: it judges none.

The report never stops the change: the password is saved before Django
calls the hook, and nothing the hook meets (tollgate down or refusing, the
settings unreadable) is raised; it is logged without the account, the
address or the password. A user's first password (``create_user``) is a
change too, and is reported as one.
"""

from __future__ import annotations

import logging
from typing import Any, Optional

from . import conf, state
from .backends import client_ip

__all__ = ["ReportPasswordChange", "account_of", "SERVER_IP"]

log = logging.getLogger("tollgate.django")

#: The address reported for a change no request made (``manage.py
#: changepassword``, a shell, a task): the server's own. The built-in login
#: flow requires an address on every report, and password_changed counts
#: and clears nothing of it, so it only says where the change came from;
#: leaving the change unreported for want of one would keep the account's
#: failures, and a made-up outside address would blame someone.
SERVER_IP = "127.0.0.1"


def account_of(user: Any, s: conf.Settings) -> Optional[str]:
    """The account user's logins are checked as: the value of the first of
    TOLLGATE_ACCOUNT_FIELDS that user has, as the backend takes the first
    credential present. A credential "username" is the user model's
    USERNAME_FIELD (so ModelBackend reads it, and AuthenticationForm sends
    an e-mail login as "username"); any other name is the user's field of
    that name. Not normalised here: tollgate normalises every account it
    is sent, the login's and this alike."""
    username_field = getattr(user, "USERNAME_FIELD", "username")
    for name in s.account_fields:
        if name in ("username", username_field):
            value = user.get_username()
        else:
            value = getattr(user, name, None)
        if isinstance(value, str) and value:
            return value
    return None


class ReportPasswordChange:
    """A password validator that judges no password and reports each
    change to tollgate; see the module's documentation."""

    def validate(self, password: str, user: Any = None) -> None:
        """Accept every password: this validator only reports changes."""
        return None

    def get_help_text(self) -> str:
        """Nothing to tell the user. Django lists every validator's text
        under a password form, so that list gains an empty item: the one
        visible cost of using the public hook."""
        return ""

    def password_changed(self, password: str, user: Any = None) -> None:
        """user's password is now password (never read here): report it.
        Never raises."""
        try:
            _report(user)
        except Exception as e:  # the change is saved: nothing may undo or fail it now
            log.warning("tollgate.django: the password change was not reported (%s)", type(e).__name__)


def _report(user: Any) -> None:
    if user is None:
        return
    s = conf.get()
    if not s.enabled:
        return
    account = account_of(user, s)
    if account is None:
        log.warning("tollgate.django: a password change of a user with no account to report was not reported")
        return
    request = state.current()
    ip = client_ip(state.http_request(request), s) if request is not None else ""
    v = s.client.password_changed(account=account, ip=ip or SERVER_IP, flow=s.flow, fail=s.fail)
    if v.error is not None:
        log.warning("tollgate.django: the password change report got no verdict (%s)", v.error)
