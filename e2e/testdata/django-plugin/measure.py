"""What reached Django, counted on Django's side (copied into the test
project as tgplugin/measure.py by e2e/plugin_setup_test.go): each password
check the real backend makes ("checked <username>", and "check_failed
<username>" when the password was wrong or the account unknown), and each
session started ("logged_in <username>"). tollgate's own metrics are never
the measure."""

import os
import threading

from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.signals import user_logged_in

_EVENTS = os.environ['TOLLGATE_E2E_EVENTS']
_lock = threading.Lock()  # runserver answers each request in a thread


def _record(kind, username):
    with _lock, open(_EVENTS, 'a') as f:
        f.write('%s %s\n' % (kind, username))


class CountingModelBackend(ModelBackend):
    """ModelBackend, writing down each password check it makes."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        user = super().authenticate(request, username=username, password=password, **kwargs)
        _record('checked', username)
        if user is None:
            _record('check_failed', username)
        return user


def _on_logged_in(sender, request, user, **kwargs):
    _record('logged_in', user.get_username())


user_logged_in.connect(_on_logged_in, weak=False, dispatch_uid='tgplugin.measure')
