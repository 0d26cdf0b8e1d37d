"""tollgate for Django, by settings alone, as django-axes is set up.

Every ``django.contrib.auth.authenticate()`` of the site is checked with
tollgate before the real backends look at the password and reported after
they did: the admin's login, the project's own views, Django REST
framework's and allauth's logins, since they all go through that call::

    INSTALLED_APPS += ["tollgate.django"]
    AUTHENTICATION_BACKENDS = ["tollgate.django.backends.TollgateBackend",
                               "django.contrib.auth.backends.ModelBackend"]
    MIDDLEWARE += ["tollgate.django.middleware.TollgateMiddleware"]
    TOLLGATE_URL = "http://127.0.0.1:8080"
    TOLLGATE_FINGERPRINT_KEY = os.environ["TOLLGATE_FINGERPRINT_KEY"]

The pieces, each in its module:

* :class:`~tollgate.django.backends.TollgateBackend`, first in
  ``AUTHENTICATION_BACKENDS``: asks tollgate's check with the account the
  credentials name, the client address (``TOLLGATE_PROXIES``), the device
  cookie and an HMAC fingerprint of the password
  (``TOLLGATE_FINGERPRINT_KEY``), and on ``delay`` or ``captcha`` stops the
  chain by raising ``PermissionDenied``, so no real backend checks the
  password; Django then sends ``user_login_failed`` and returns None.
* :mod:`~tollgate.django.receivers`: ``user_login_failed`` reports the
  attempt a real backend refused (never one tollgate stopped);
  ``user_logged_in`` reports a success.
* :class:`~tollgate.django.middleware.TollgateMiddleware`: turns a stopped
  attempt into a 429 with ``Retry-After`` (or the challenge page for
  ``captcha``), reports an ``authenticate()`` that succeeded without
  ``login()`` (an API's Basic authentication) as a success at the end of
  the request, sets the device cookie a success earns, and resumes a form
  submission held across a challenge once it is solved.
* :mod:`~tollgate.django.stepup`: a success tollgate answers ``step_up``
  (a breached password, an account or new device under attack, an
  escalated address) starts no session until a second factor passes: by
  default a 6-digit code sent with ``send_mail`` and entered on the page
  the middleware serves at ``TOLLGATE_STEP_UP_PATH``; the backend asks
  tollgate's breached-password range (k-anonymously) for each attempt it
  let through, and the reports carry the answer.

* :mod:`~tollgate.django.validators`: with one more line,
  ``AUTH_PASSWORD_VALIDATORS += [{"NAME":
  "tollgate.django.validators.ReportPasswordChange"}]``, every change of a
  user's password is reported as ``password_changed``, so the account's
  failures go (and, with ``revoke_devices_on_password_change``, its older
  device tokens stop counting).

Settings are read by :mod:`~tollgate.django.conf`; ``manage.py check``
reports a mistake in them. This package imports Django; the rest of
``tollgate`` does not, and nothing imports this package but Django's
settings.

It supports Django 3.2 and later (3.2 is Debian 12's, which its tests run
on) and Python 3.9 and later.
"""
