
# Appended by tollgate's e2e tests (e2e/testdata/django/settings_tail.py) to
# the settings `django-admin startproject` wrote.

# The proxy passes the client's Host through (as Django's CSRF and
# redirects expect): the proxy's loopback address.
ALLOWED_HOSTS = ['127.0.0.1', 'localhost']

# Every password check Django makes is one line of the file named by
# TOLLGATE_E2E_EVENTS, written by Django's own signals: "login_failed
# <username>" for a failed check (user_login_failed, sent by
# django.contrib.auth.authenticate whether or not the account exists), and
# "logged_in <username>" for a session started (user_logged_in). The tests
# count what reached Django here, never from tollgate's metrics.
import os as _os
import threading as _threading

from django.contrib.auth.signals import user_logged_in as _user_logged_in
from django.contrib.auth.signals import user_login_failed as _user_login_failed

_EVENTS = _os.environ['TOLLGATE_E2E_EVENTS']
_events_lock = _threading.Lock()  # runserver answers each request in a thread


def _record(kind, username):
    with _events_lock, open(_EVENTS, 'a') as f:
        f.write('%s %s\n' % (kind, username))


def _on_login_failed(sender, credentials, request=None, **kwargs):
    _record('login_failed', credentials.get('username', ''))


def _on_logged_in(sender, request, user, **kwargs):
    _record('logged_in', user.get_username())


_user_login_failed.connect(_on_login_failed, weak=False)
_user_logged_in.connect(_on_logged_in, weak=False)
