"""``manage.py check``: the mistakes that would leave logins unprotected
or break them, reported before the first request."""

from __future__ import annotations

from typing import Any, List

from django.conf import settings as django_settings  # type: ignore[import]
from django.core import checks  # type: ignore[import]
from django.core.exceptions import ImproperlyConfigured  # type: ignore[import]

from . import conf

__all__ = ["check_settings", "BACKEND", "MIDDLEWARE"]

#: The backend's and the middleware's paths, as the settings name them.
BACKEND = "tollgate.django.backends.TollgateBackend"
MIDDLEWARE = "tollgate.django.middleware.TollgateMiddleware"


def check_settings(app_configs: Any = None, **kwargs: Any) -> List[Any]:
    """The TOLLGATE_* settings read (tollgate.E001), the backend first in
    AUTHENTICATION_BACKENDS (E002: a backend before it checks passwords
    tollgate never hears of) and the middleware in MIDDLEWARE (E003:
    without it nothing reports a success or answers a blocked attempt)."""
    errors: List[Any] = []
    try:
        s = conf.get()
    except ImproperlyConfigured as e:
        return [checks.Error(str(e), id="tollgate.E001")]
    if not s.enabled:
        return []
    backends = list(getattr(django_settings, "AUTHENTICATION_BACKENDS", []))
    if not backends or backends[0] != BACKEND:
        errors.append(checks.Error(
            "%s must be the first of AUTHENTICATION_BACKENDS" % BACKEND,
            hint="A backend listed before it checks passwords that tollgate is never asked about.",
            id="tollgate.E002"))
    if MIDDLEWARE not in list(getattr(django_settings, "MIDDLEWARE", None) or []):
        errors.append(checks.Error(
            "%s is not in MIDDLEWARE" % MIDDLEWARE,
            hint="Without it a blocked attempt is answered as a wrong password and no success is reported.",
            id="tollgate.E003"))
    return errors
