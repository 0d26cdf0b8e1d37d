"""The Django app: ``INSTALLED_APPS += ["tollgate.django"]`` connects the
login signals' receivers and the system checks, and brings the
``tollgate_reset`` command."""

from __future__ import annotations

from django.apps import AppConfig  # type: ignore[import]

__all__ = ["TollgateConfig"]


class TollgateConfig(AppConfig):  # type: ignore[misc]
    """tollgate.django's app configuration."""

    name = "tollgate.django"
    # "django" would be the label by default: Django's own apps are not
    # called that, but a reader of the migrations or the admin would think so.
    label = "tollgate"
    verbose_name = "tollgate"

    def ready(self) -> None:
        """Connect the receivers (strongly, once) and register the checks."""
        from django.contrib.auth.signals import user_logged_in, user_login_failed  # type: ignore[import]
        from django.core import checks  # type: ignore[import]
        from django.test.signals import setting_changed  # type: ignore[import]

        from . import conf
        from .checks import check_settings
        from .receivers import on_logged_in, on_login_failed

        user_login_failed.connect(on_login_failed, dispatch_uid="tollgate.django.on_login_failed")
        user_logged_in.connect(on_logged_in, dispatch_uid="tollgate.django.on_logged_in")
        setting_changed.connect(conf.reset, dispatch_uid="tollgate.django.conf.reset")
        checks.register(check_settings)
