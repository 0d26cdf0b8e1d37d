
# Appended by tollgate's e2e tests (e2e/testdata/django-plugin/settings_e2e.py)
# after clients/python/README.md's block: only what this machine changes, and
# what the tests measure with. Nothing here protects anything.

# This machine: the simulated end users' requests come from 127.0.0.1 and
# say whose address in X-Forwarded-For (each user an address of its own);
# plain HTTP on loopback, so the device cookie without __Host- and Secure.
ALLOWED_HOSTS = ['127.0.0.1', 'localhost']
TOLLGATE_PROXIES = ['127.0.0.1/32']
TOLLGATE_DEVICE_COOKIE = {'secure': False}

# The measure: every password check a real backend makes is one line
# "checked <username>" of the file TOLLGATE_E2E_EVENTS names, and every
# session started one line "logged_in <username>" (tgplugin/measure.py,
# which Django imports with the backends). ModelBackend is swapped for its
# counting subclass, in its place: the counting is Django's own backend,
# called as the README's block calls it.
AUTHENTICATION_BACKENDS = [
    'tgplugin.measure.CountingModelBackend' if b == 'django.contrib.auth.backends.ModelBackend' else b
    for b in AUTHENTICATION_BACKENDS
]

# This machine's mail: the step-up codes the plug-in sends with send_mail go
# to files in the directory TOLLGATE_E2E_MAIL names, where the tests read them.
import os as _os  # noqa: E402

EMAIL_BACKEND = 'django.core.mail.backends.filebased.EmailBackend'
EMAIL_FILE_PATH = _os.environ['TOLLGATE_E2E_MAIL']
