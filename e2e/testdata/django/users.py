# Run by `manage.py shell` (e2e/setup_test.go): the accounts of the tests
# besides alice (createsuperuser). carol signs in to the admin too; bob is
# attacked through two proxies; user01..user50 are sprayed; dave's password
# is in the step-up test's breached-password corpus. One hash for
# the sprayed accounts, since each PBKDF2 hash takes a third of a second
# on a busy core.
import os

from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import User

User.objects.create_superuser('carol', 'carol@example.test', os.environ['E2E_CAROL_PASSWORD'])
User.objects.create_user('bob', 'bob@example.test', os.environ['E2E_BOB_PASSWORD'])
User.objects.create_superuser('dave', 'dave@example.test', os.environ['E2E_DAVE_PASSWORD'])
sprayed = make_password(os.environ['E2E_SPRAYED_PASSWORD'])
User.objects.bulk_create([User(username='user%02d' % i, password=sprayed) for i in range(1, 51)])
