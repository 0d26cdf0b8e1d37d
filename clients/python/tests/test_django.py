"""tollgate.django on Django itself (Debian's python3-django, 3.2), against
a real tollgate and against stand-ins: the admin's login and the project's
own views protected by settings alone (tests/django_site.py knows nothing
of tollgate), what reaches the real backend counted on Django's side.

Skipped when Django is not importable, except with CI=true, where
scripts/ensure-python.sh has installed it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import html.parser
import json
import os
import re
import sys
import unittest
from typing import Any, Dict, List, Optional, Tuple

from .support import Recorded, StandIn, Tollgate, closed_port_url, tollgate_binary

try:
    import django
except ImportError:  # pragma: no cover - CI installs it
    django = None

KEY = "tollgate-django-tests-fingerprint-key-0123456789"
SETTINGS: Dict[str, Any] = dict(
    DEBUG=False,
    SECRET_KEY="tollgate-django-tests-secret-key-not-for-production",
    ALLOWED_HOSTS=["testserver"],
    INSTALLED_APPS=[
        "django.contrib.admin", "django.contrib.auth", "django.contrib.contenttypes", "django.contrib.sessions",
        "django.contrib.messages", "tollgate.django",
    ],
    MIDDLEWARE=[
        "django.middleware.security.SecurityMiddleware",
        "django.contrib.sessions.middleware.SessionMiddleware",
        "django.middleware.common.CommonMiddleware",
        "django.middleware.csrf.CsrfViewMiddleware",
        "django.contrib.auth.middleware.AuthenticationMiddleware",
        "django.contrib.messages.middleware.MessageMiddleware",
        "tollgate.django.middleware.TollgateMiddleware",
    ],
    AUTHENTICATION_BACKENDS=["tollgate.django.backends.TollgateBackend", "tests.django_site.CountingBackend"],
    ROOT_URLCONF="tests.django_site",
    DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}},
    TEMPLATES=[{
        "BACKEND": "django.template.backends.django.DjangoTemplates", "APP_DIRS": True,
        "OPTIONS": {"context_processors": [
            "django.template.context_processors.request", "django.contrib.auth.context_processors.auth",
            "django.contrib.messages.context_processors.messages"]},
    }],
    PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"],
    USE_TZ=True,
    DEFAULT_AUTO_FIELD="django.db.models.AutoField",
    # The plug-in's own: the test client connects from 127.0.0.1, the
    # site's proxy, and says whose address in X-Forwarded-For.
    TOLLGATE_URL="http://127.0.0.1:9",
    TOLLGATE_FINGERPRINT_KEY=KEY,
    TOLLGATE_PROXIES=["127.0.0.1/32"],
    TOLLGATE_DEVICE_COOKIE={"secure": False},
    TOLLGATE_TIMEOUT=5.0,
)
PASSWORDS = {"alice": "alice-Tg-3f9c-right", "carol": "carol-Tg-81aa-right", "bob": "bob-Tg-0c2e-right"}
SPRAYED = ["user%02d" % i for i in range(1, 16)]
BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
ADMIN_LOGIN = "/admin/login/?next=/admin/"


def setUpModule() -> None:
    if django is None:
        if os.environ.get("CI") == "true":
            raise AssertionError("Django is not installed for %s with CI=true; scripts/ensure-python.sh installs "
                                 "Debian's python3-django" % sys.executable)
        raise unittest.SkipTest("Django is not installed")
    from django.conf import settings

    if not settings.configured:
        settings.configure(**SETTINGS)
        django.setup()
        from django.core.management import call_command
        from django.test.utils import setup_test_environment

        setup_test_environment()
        call_command("migrate", verbosity=0, interactive=False)
        from django.contrib.auth.models import User

        for name, pw in PASSWORDS.items():
            User.objects.create_user(name, "%s@example.test" % name, pw, is_staff=True, is_superuser=True)
        for name in SPRAYED:
            User.objects.create_user(name, "%s@example.test" % name, "sprayed-" + name)


def browser(ip: str, **extra: Any) -> Any:
    """A test client that is a browser at ip behind the site's proxy."""
    from django.test import Client

    return Client(**dict({"HTTP_X_FORWARDED_FOR": ip, "HTTP_ACCEPT": BROWSER}, **extra))


def api(ip: str) -> Any:
    """A test client that is an API client (no text/html) at ip."""
    from django.test import Client

    return Client(HTTP_X_FORWARDED_FOR=ip, HTTP_ACCEPT="application/json")


def admin_login(c: Any, username: str, password: str) -> Any:
    return c.post(ADMIN_LOGIN, {"username": username, "password": password, "next": "/admin/"})


def user(name: str, password: str = "") -> str:
    """A staff user of the test's own (a password, or none usable)."""
    from django.contrib.auth.models import User

    User.objects.create_user(name, "", password or None, is_staff=True)
    return name


def checked(username: str) -> int:
    from tests import django_site

    return django_site.checked(username)


def solve(token: str, difficulty: int) -> str:
    """A proof-of-work nonce, as tollgate's solver.js finds one."""
    prefix = token.encode("ascii")
    n = 0
    while True:
        h = hashlib.sha256(prefix + n.to_bytes(8, "big")).digest()
        if int.from_bytes(h, "big") >> (256 - difficulty) == 0:
            return str(n)
        n += 1


class _Form(html.parser.HTMLParser):
    """The challenge page's form: its action, data attributes and fields."""

    def __init__(self) -> None:
        super().__init__()
        self.action: Optional[str] = None
        self.attrs: Dict[str, str] = {}
        self.fields: Dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: List[Tuple[str, Optional[str]]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form" and "data-tollgate-challenge" in a:
            self.action, self.attrs = a.get("action", ""), a
        elif tag == "input" and self.action is not None:
            self.fields[a.get("name", "")] = a.get("value", "")


def post_form(c: Any, action: str, fields: Dict[str, str]) -> Any:
    """Post fields as the challenge page's form does: urlencoded."""
    from urllib.parse import urlencode

    return c.post(action, urlencode(fields), content_type="application/x-www-form-urlencoded")


def challenge_form(body: bytes) -> _Form:
    p = _Form()
    p.feed(body.decode("utf-8"))
    return p


class _Base(unittest.TestCase):
    url = "http://127.0.0.1:9"

    @classmethod
    def setUpClass(cls) -> None:
        from django.test import override_settings

        cls._override = override_settings(TOLLGATE_URL=cls.url, **cls.settings())
        cls._override.enable()

    @classmethod
    def tearDownClass(cls) -> None:
        cls._override.disable()

    @classmethod
    def settings(cls) -> Dict[str, Any]:
        return {}


class RealTollgate(_Base):
    """Against a real tollgate serve with the built-in policy, started for
    the class (a fresh memory store), each test on accounts and addresses
    of its own."""

    tg: Tollgate

    @classmethod
    def setUpClass(cls) -> None:
        binary = tollgate_binary()
        if binary is None:
            raise unittest.SkipTest("no tollgate binary: Go is not installed and TOLLGATE_BIN is unset")
        cls.tg = Tollgate(binary)
        cls.url = cls.tg.url
        super().setUpClass()

    @classmethod
    def tearDownClass(cls) -> None:
        super().tearDownClass()
        cls.tg.stop()

    def failures(self, account: str) -> int:
        """The failures tollgate's account_backoff holds for account."""
        from tollgate.django import conf

        e = conf.get().client.explain(flow="login", account=account)
        return sum(r.count for r in e.rules if r.rule == "account_backoff")


class AdminLogin(RealTollgate):
    def test_a_guesser_gets_free_real_checks_then_429_and_the_blocked_attempt_is_not_counted_again(self) -> None:
        c = browser("203.0.113.10")
        for i in range(5):
            r = admin_login(c, "bob", "wrong-%d" % i)
            self.assertEqual(r.status_code, 200, "a wrong password re-renders the admin's form")
        self.assertEqual(checked("bob"), 5)
        self.assertEqual(self.failures("bob"), 5)
        r = admin_login(c, "bob", "wrong-5")
        self.assertEqual(r.status_code, 429)
        self.assertGreaterEqual(int(r["Retry-After"]), 1)
        self.assertEqual(r["Cache-Control"], "no-store")
        self.assertIn(b"Too many attempts", r.content)
        self.assertEqual(checked("bob"), 5, "a blocked attempt reached the real backend")
        # PermissionDenied made Django send user_login_failed: reported, it
        # would have been charged again (a report without an attempt token).
        self.assertEqual(self.failures("bob"), 5, "the blocked attempt was reported as a failure")

    def test_a_success_is_reported_and_earns_the_device_cookie_that_lets_the_owner_in_during_an_attack(self) -> None:
        owner, attacker = browser("198.51.100.20"), browser("203.0.113.20")
        r = admin_login(owner, "alice", PASSWORDS["alice"])
        self.assertEqual((r.status_code, r["Location"]), (302, "/admin/"))
        cookie = owner.cookies.get("tollgate-device")
        self.assertIsNotNone(cookie, "no device cookie after a success")
        assert cookie is not None
        self.assertTrue(cookie.value and cookie["httponly"] and cookie["path"] == "/" and cookie["samesite"] == "Lax")
        self.assertEqual(self.failures("alice"), 0, "the success was not reported (its charge stays a failure)")
        for i in range(8):
            admin_login(attacker, "alice", "guess-%d" % i)
        self.assertEqual(admin_login(attacker, "alice", "guess-8").status_code, 429)
        self.assertEqual(checked("alice"), 1 + 5)
        owner.post("/admin/logout/")
        r = admin_login(owner, "alice", PASSWORDS["alice"])
        self.assertEqual((r.status_code, r["Location"]), (302, "/admin/"), "the owner's device cookie did not let her in")

    def test_an_unknown_account_gets_the_same_bytes_as_a_known_one(self) -> None:
        for i, accept in enumerate((BROWSER, "application/json")):
            with self.subTest(accept=accept):
                known, unknown = user("frank%d" % i, "frank-Tg-right"), "nobody-%d" % i
                c = browser("203.0.113.3%d" % i, HTTP_ACCEPT=accept)
                for i in range(5):
                    for name in (known, unknown):
                        self.assertEqual(admin_login(c, name, "wrong-%d" % i).status_code, 200)
                a, b = admin_login(c, known, "wrong"), admin_login(c, unknown, "wrong")
                self.assertEqual((a.status_code, b.status_code), (429, 429))
                self.assertEqual(a.content, b.content)
                self.assertEqual(sorted(a.items()), sorted(b.items()))

    def test_the_projects_own_form_is_protected_and_answers_a_wrong_password_with_its_form(self) -> None:
        c = browser("203.0.113.40")
        erin = user("erin", "erin-Tg-right")
        for i in range(5):
            r = c.post("/login/", {"username": erin, "password": "nope-%d" % i})
            self.assertEqual(r.status_code, 200)
            self.assertIn(b"Wrong username or password", r.content)
            self.assertNotIn("WWW-Authenticate", r)
        self.assertEqual(c.post("/login/", {"username": erin, "password": "nope"}).status_code, 429)
        self.assertEqual(checked(erin), 5)

    def test_an_api_that_authenticates_without_login_is_not_slowed_by_its_own_successes(self) -> None:
        c = api("198.51.100.50")
        auth = "Basic " + base64.b64encode(("carol:" + PASSWORDS["carol"]).encode()).decode()
        before = checked("carol")
        for _ in range(12):  # unreported, every proceed would stay a failure: the 6th would wait
            r = c.get("/api/whoami/", HTTP_AUTHORIZATION=auth)
            self.assertEqual(r.status_code, 200, r.content)
        self.assertEqual(checked("carol") - before, 12)

    def test_a_spray_of_one_password_from_many_addresses_gets_ten_real_checks(self) -> None:
        answers = []
        for i, name in enumerate(SPRAYED):
            answers.append(api("192.0.2.%d" % (100 + i)).post("/login/", {"username": name, "password": "Summer2026!"}))
        checks = sum(checked(n) for n in SPRAYED)
        self.assertEqual(checks, 10, "password_spray's limit is 10 accounts an hour per fingerprint")
        self.assertEqual([a.status_code for a in answers], [200] * 10 + [429] * 5)
        self.assertEqual(json.loads(answers[-1].content)["detail"], "Complete a CAPTCHA to continue.")

    def test_a_captcha_address_gets_the_challenge_and_the_held_submission_signs_in_once_solved(self) -> None:
        from django.contrib.auth.models import User

        ip = "192.0.2.77"
        for i in range(10):  # ip_spray: 10 accounts an hour from one address
            User.objects.get_or_create(username="ghost%02d" % i)
            admin_login(api(ip), "ghost%02d" % i, "Spray-%d" % i)
        dave_pw = "dave-Tg-77c1-right"
        User.objects.create_user("dave", "", dave_pw, is_staff=True)
        c = browser(ip, enforce_csrf_checks=True)
        page = c.get(ADMIN_LOGIN)  # the form, and the CSRF cookie the held submission is bound to
        csrf = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page.content)
        assert csrf is not None
        r = c.post(ADMIN_LOGIN, {"username": "dave", "password": dave_pw, "next": "/admin/",
                                 "csrfmiddlewaretoken": csrf.group(1).decode()})
        self.assertEqual(r.status_code, 429)
        self.assertIn("nonce-", r["Content-Security-Policy"])
        self.assertEqual(r["Referrer-Policy"], "same-origin")  # the resuming post's CSRF check over HTTPS
        self.assertNotIn(dave_pw.encode(), r.content, "the page echoes the password")
        self.assertNotIn(b"dave", r.content, "the page echoes the account")
        self.assertEqual(checked("dave"), 0)
        form = challenge_form(r.content)
        self.assertEqual(form.action, ADMIN_LOGIN)
        self.assertEqual(set(form.fields), {"tollgate_handle", "tollgate_token", "tollgate_nonce"})
        solution = dict(form.fields, tollgate_nonce=solve(form.attrs["data-token"], int(form.attrs["data-difficulty"])))
        r = post_form(c, form.action, solution)
        self.assertEqual((r.status_code, r.get("Location")), (302, "/admin/"), r.content[:300])
        self.assertEqual(checked("dave"), 1)
        self.assertEqual(self.failures("dave"), 0)
        # The same post again: the submission was given out once.
        r = post_form(c, form.action, solution)
        self.assertEqual((r.status_code, r.get("Location")), (302, ADMIN_LOGIN))
        self.assertEqual(checked("dave"), 1)

    def test_a_wrong_solution_gets_a_fresh_challenge_and_no_check(self) -> None:
        from django.contrib.auth.models import User

        ip = "192.0.2.78"
        for i in range(10):
            User.objects.get_or_create(username="spook%02d" % i)
            admin_login(api(ip), "spook%02d" % i, "Spray-%d" % i)
        c = browser(ip)
        c.get(ADMIN_LOGIN)
        form = challenge_form(admin_login(c, "carol", PASSWORDS["carol"]).content)
        before = checked("carol")
        r = post_form(c, form.action, dict(form.fields, tollgate_nonce="1"))
        self.assertEqual(r.status_code, 429)
        again = challenge_form(r.content)
        self.assertNotEqual(again.fields["tollgate_token"], form.fields["tollgate_token"])
        self.assertEqual(checked("carol"), before)
        r = post_form(c, again.action, dict(again.fields, tollgate_nonce=solve(again.attrs["data-token"],
                                                                          int(again.attrs["data-difficulty"]))))
        self.assertEqual((r.status_code, r.get("Location")), (302, "/admin/"))

    def test_a_handle_is_no_use_to_another_browser(self) -> None:
        from django.contrib.auth.models import User

        ip = "192.0.2.79"
        for i in range(10):
            User.objects.get_or_create(username="wisp%02d" % i)
            admin_login(api(ip), "wisp%02d" % i, "Spray-%d" % i)
        victim = browser(ip)
        victim.cookies["csrftoken"] = "a" * 64
        form = challenge_form(admin_login(victim, "carol", PASSWORDS["carol"]).content)
        thief = browser(ip)
        thief.cookies["csrftoken"] = "b" * 64
        before = checked("carol")
        r = post_form(thief, form.action, dict(form.fields, tollgate_nonce=solve(form.attrs["data-token"],
                                                                            int(form.attrs["data-difficulty"]))))
        self.assertEqual((r.status_code, r.get("Location")), (302, ADMIN_LOGIN))
        self.assertEqual(checked("carol"), before)
        self.assertNotIn("sessionid", thief.cookies)


class Reset(RealTollgate):
    def test_tollgate_reset_unlocks_a_user_as_axes_reset_username_did(self) -> None:
        import io
        from unittest import mock

        from django.core.management import call_command

        c = browser("203.0.113.90")
        gina = user("gina", "gina-Tg-right")
        for i in range(6):
            admin_login(c, gina, "wrong-%d" % i)
        self.assertEqual(admin_login(c, gina, "gina-Tg-right").status_code, 429)
        out = io.StringIO()
        with mock.patch("sys.stdin", io.StringIO(gina + "\n")):
            call_command("tollgate_reset", reason="test: owner verified", stdout=out)
        self.assertRegex(out.getvalue(), r"tollgate deleted [1-9]\d* keys")
        self.assertEqual(self.failures(gina), 0)
        self.assertEqual(admin_login(c, gina, "gina-Tg-right").status_code, 302)


class TollgateDown(_Base):
    url = closed_port_url()

    def test_fail_delay_answers_429_and_checks_nothing(self) -> None:
        with self.assertLogs("tollgate.django", "WARNING") as logs:
            r = admin_login(api("203.0.113.60"), "alice", PASSWORDS["alice"])
        self.assertFalse([m for m in logs.output if "alice" in m or "203.0.113.60" in m], logs.output)
        self.assertEqual(r.status_code, 429)
        self.assertEqual(r["Retry-After"], "1")
        self.assertEqual(r["Content-Type"], "application/problem+json")


class TollgateDownFailOpen(_Base):
    url = closed_port_url()

    @classmethod
    def settings(cls) -> Dict[str, Any]:
        return {"TOLLGATE_FAIL_MODE": "open"}

    def test_fail_open_lets_the_allowance_through(self) -> None:
        before = checked("alice")
        with self.assertLogs("tollgate.django", "WARNING"):
            r = admin_login(api("203.0.113.61"), "alice", PASSWORDS["alice"])
        self.assertEqual(r.status_code, 302)
        self.assertEqual(checked("alice") - before, 1)


PROCEED = {"action": "proceed", "delay_ms": 0, "retry_after": 0, "reasons": [], "attempt": "at.1", "device_token": ""}


class StandInTollgate(_Base):
    """Against a stand-in that answers check with self.verdict and records
    every request: what the plug-in sends."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.answers: Dict[str, Tuple[int, Dict[str, str], bytes]] = {}
        cls.stand_in = StandIn(cls._answer)
        cls.url = cls.stand_in.url
        super().setUpClass()

    @classmethod
    def tearDownClass(cls) -> None:
        super().tearDownClass()
        cls.stand_in.close()

    @classmethod
    def _answer(cls, r: Recorded) -> Tuple[int, Dict[str, str], bytes]:
        default = (200, {"Content-Type": "application/json"},
                   json.dumps(dict(PROCEED, device_token="dev.1" if r.path == "/v1/report" else "")).encode())
        return cls.answers.get(r.path, default)

    def setUp(self) -> None:
        self.answers.clear()
        with self.stand_in._lock:
            self.stand_in.requests.clear()

    def sent(self, path: str) -> List[Dict[str, Any]]:
        with self.stand_in._lock:
            return [json.loads(r.body) for r in self.stand_in.requests if r.path == path]

    def test_check_and_report_carry_the_fingerprint_the_account_and_the_attempt_never_the_password(self) -> None:
        r = admin_login(browser("203.0.113.70"), "alice", "wrong-horse")
        self.assertEqual(r.status_code, 200)
        fp = hmac.new(KEY.encode(), b"wrong-horse", hashlib.sha256).hexdigest()
        self.assertEqual(self.sent("/v1/check"), [{"flow": "login", "account": "alice", "ip": "203.0.113.70",
                                                   "password_fingerprint": fp}])
        self.assertEqual(self.sent("/v1/report"), [{"flow": "login", "account": "alice", "ip": "203.0.113.70",
                                                    "outcome": "failure", "attempt": "at.1",
                                                    "password_fingerprint": fp}])
        with self.stand_in._lock:
            self.assertFalse(any(b"wrong-horse" in x.body for x in self.stand_in.requests))

    def test_an_account_tollgate_refuses_is_answered_as_a_wrong_password_and_not_reported(self) -> None:
        self.answers["/v1/check"] = (400, {"Content-Type": "application/problem+json"}, json.dumps({
            "type": "https://tollgate.dev/problems/invalid-field", "title": "Bad Request", "status": 400,
            "detail": "is not an identifier", "field": "account"}).encode())
        before = checked("alice\u200b")
        r = admin_login(browser("203.0.113.71"), "alice\u200b", "pw")
        self.assertEqual(r.status_code, 200)
        self.assertEqual(checked("alice\u200b"), before)
        self.assertEqual(self.sent("/v1/report"), [])

    def test_the_device_cookie_is_sent_back_on_the_next_check(self) -> None:
        c = browser("198.51.100.72")
        self.assertEqual(admin_login(c, "alice", PASSWORDS["alice"]).status_code, 302)
        self.assertEqual(self.sent("/v1/report")[-1]["outcome"], "success")
        c.post("/admin/logout/")
        admin_login(c, "alice", "typo")
        self.assertEqual(self.sent("/v1/check")[-1]["device_token"], "dev.1")

    def test_a_login_that_is_not_a_password_is_not_checked(self) -> None:
        from django.contrib.auth import authenticate
        from django.test import RequestFactory

        self.assertIsNone(authenticate(RequestFactory().get("/"), token="abc"))
        self.assertEqual(self.sent("/v1/check"), [])

    def test_authenticate_without_the_request_is_refused(self) -> None:
        from django.contrib.auth import authenticate

        from tollgate.django.backends import RequestRequired

        with self.assertRaises(RequestRequired):
            authenticate(username="alice", password="x")

    def test_a_captcha_for_an_api_client_is_a_429_problem(self) -> None:
        self.answers["/v1/check"] = (200, {"Content-Type": "application/json"},
                                     json.dumps(dict(PROCEED, action="captcha", attempt="")).encode())
        r = admin_login(api("203.0.113.73"), "alice", "pw")
        self.assertEqual(r.status_code, 429)
        self.assertEqual(r["Content-Type"], "application/problem+json")
        self.assertNotIn("Retry-After", r)

    def test_a_captcha_without_a_challenge_server_falls_back_to_a_page(self) -> None:
        self.answers["/v1/check"] = (200, {"Content-Type": "application/json"},
                                     json.dumps(dict(PROCEED, action="captcha", attempt="")).encode())
        self.answers["/v1/challenge"] = (404, {"Content-Type": "application/problem+json"}, b"{}")
        with self.assertLogs("tollgate.django", "WARNING"):
            r = admin_login(browser("203.0.113.74"), "alice", "pw")
        self.assertEqual(r.status_code, 429)
        self.assertIn(b"Too many attempts from here", r.content)

    def test_disabled_asks_nothing(self) -> None:
        from django.test import override_settings

        with override_settings(TOLLGATE_ENABLED=False):
            admin_login(browser("203.0.113.75"), "alice", "pw")
        self.assertEqual(self.sent("/v1/check"), [])

    def test_a_forged_solution_post_is_sent_back_to_the_form_and_checks_nothing(self) -> None:
        import random
        from urllib.parse import urlencode

        from tollgate.django import hold

        rnd = random.Random(20261206)
        alphabet = "AZaz09-_./%\x00\u00e9\u202e=&;\"'<>"
        junk = lambda n: "".join(rnd.choice(alphabet) for _ in range(rnd.randrange(n)))  # noqa: E731
        c = browser("203.0.113.99")
        for i in range(200):
            fields = {"tollgate_handle": rnd.choice([junk(80), hold.new_handle(), ""]),
                      "tollgate_token": junk(70), "tollgate_nonce": rnd.choice([junk(25), str(rnd.getrandbits(64))])}
            if rnd.random() < 0.5:
                fields["username"] = junk(20)
            r = c.post(ADMIN_LOGIN, urlencode(fields), content_type="application/x-www-form-urlencoded")
            with self.subTest(i=i):
                self.assertEqual((r.status_code, r.get("Location")), (302, ADMIN_LOGIN))
        self.assertEqual(self.sent("/v1/check"), [])
        self.assertEqual(self.sent("/v1/challenge/verify"), [])

    def test_any_cached_blob_unseals_to_nothing(self) -> None:
        import random

        from django.core.cache.backends.locmem import LocMemCache

        from tollgate.django import hold

        rnd = random.Random(7)
        cache = LocMemCache("tollgate-garbage", {})
        h = hold.new_handle()
        for n in list(range(0, 40)) + [64, 100, 1000]:
            cache.set(hold._cache_key(h), bytes(rnd.getrandbits(8) for _ in range(n)))
            self.assertIsNone(hold.peek(cache, b"k" * 32, h, b"bind"))
        for value in (None, "text", 42, ["list"], {"d": 1}):
            cache.set(hold._cache_key(h), value)
            self.assertIsNone(hold.take(cache, b"k" * 32, h, b"bind"))


class Settings(unittest.TestCase):
    def test_every_mistake_is_improperly_configured_naming_the_setting(self) -> None:
        from django.core.exceptions import ImproperlyConfigured
        from django.test import override_settings

        from tollgate.django import conf

        cases = [
            ("TOLLGATE_URL", None), ("TOLLGATE_URL", "ftp://x"), ("TOLLGATE_FINGERPRINT_KEY", None),
            ("TOLLGATE_FINGERPRINT_KEY", "short"), ("TOLLGATE_FAIL_MODE", "sometimes"),
            ("TOLLGATE_PROXIES", "10.0.0.0/8"), ("TOLLGATE_PROXIES", ["0.0.0.0/0"]),
            ("TOLLGATE_PROXY_HEADER", "X-Real-IP"), ("TOLLGATE_DEVICE_COOKIE", {"name": "dev"}),
            ("TOLLGATE_DEVICE_COOKIE", {"secure": False, "name": "__Host-x"}), ("TOLLGATE_CHALLENGE", "puzzle"),
            ("TOLLGATE_CHALLENGE_CACHE", "elsewhere"), ("TOLLGATE_TIMEOUT", 0), ("TOLLGATE_ENABLED", "yes"),
            ("TOLLGATE_ACCOUNT_FIELDS", "username"),
        ]
        for name, value in cases:
            with self.subTest(setting=name, value=value), override_settings(**{name: value}):
                with self.assertRaises(ImproperlyConfigured) as cm:
                    conf.get()
                self.assertIn(name.split("[")[0], str(cm.exception))
                if isinstance(value, str) and len(value) > 3:
                    self.assertNotIn(value, str(cm.exception).replace(name, ""))

    def test_manage_py_check_names_a_backend_out_of_place_and_a_missing_middleware(self) -> None:
        from django.test import override_settings

        from tollgate.django.checks import check_settings

        self.assertEqual(check_settings(), [])
        with override_settings(AUTHENTICATION_BACKENDS=["django.contrib.auth.backends.ModelBackend",
                                                        "tollgate.django.backends.TollgateBackend"]):
            self.assertEqual([e.id for e in check_settings()], ["tollgate.E002"])
        with override_settings(MIDDLEWARE=SETTINGS["MIDDLEWARE"][:-1]):
            self.assertEqual([e.id for e in check_settings()], ["tollgate.E003"])
        with override_settings(TOLLGATE_FINGERPRINT_KEY=None):
            self.assertEqual([e.id for e in check_settings()], ["tollgate.E001"])


class ReadmeSettings(unittest.TestCase):
    def test_the_readme_block_is_all_a_startproject_needs(self) -> None:
        from django.test import override_settings

        from tollgate.django.checks import check_settings

        with open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md"),
                  encoding="utf-8") as f:
            readme = f.read()
        m = re.search(r"<!-- e2e/plugin_setup_test.go appends this block verbatim[^\n]*\n```python\n(.*?)```", readme, re.S)
        assert m is not None, "README.md has no marked Django settings block"
        # What django-admin startproject writes, then the block.
        ns: Dict[str, Any] = {
            "INSTALLED_APPS": [a for a in SETTINGS["INSTALLED_APPS"] if a != "tollgate.django"],
            "MIDDLEWARE": SETTINGS["MIDDLEWARE"][:-1],
        }
        os.environ.setdefault("TOLLGATE_FINGERPRINT_KEY", KEY)
        exec(compile(m.group(1), "README.md", "exec"), ns)
        lines = [x for x in m.group(1).splitlines() if x.strip()]
        self.assertLessEqual(len(lines), 12, "the settings block is meant to fit on a screen")
        block = {k: v for k, v in ns.items() if k.isupper()}
        self.assertEqual(block["INSTALLED_APPS"], SETTINGS["INSTALLED_APPS"])
        self.assertEqual(block["MIDDLEWARE"], SETTINGS["MIDDLEWARE"])
        with override_settings(**block):
            self.assertEqual(check_settings(), [])


class Hold(unittest.TestCase):
    def setUp(self) -> None:
        from django.core.cache.backends.locmem import LocMemCache

        self.cache = LocMemCache("tollgate-hold-tests", {})
        self.secret = b"s" * 32

    def test_a_submission_is_sealed_in_the_cache_and_given_out_once(self) -> None:
        from tollgate.django import hold

        h = hold.new_handle()
        body = b"username=alice&password=correct+horse+battery"
        self.assertTrue(hold.put(self.cache, self.secret, h, b"bind", body, 60))
        stored = [v for v in self.cache._cache.values()]
        self.assertEqual(len(stored), 1)
        self.assertNotIn(b"correct", stored[0])
        self.assertNotIn(h, "".join(self.cache._cache.keys()))
        self.assertEqual(hold.take(self.cache, self.secret, h, b"bind"), body)
        self.assertIsNone(hold.take(self.cache, self.secret, h, b"bind"))

    def test_another_binding_secret_or_handle_gets_nothing(self) -> None:
        from tollgate.django import hold

        h = hold.new_handle()
        hold.put(self.cache, self.secret, h, b"bind", b"x=1", 60)
        self.assertIsNone(hold.peek(self.cache, self.secret, h, b"other"))
        self.assertIsNone(hold.peek(self.cache, b"t" * 32, h, b"bind"))
        self.assertIsNone(hold.peek(self.cache, self.secret, h[:-1] + ("A" if h[-1] != "A" else "B"), b"bind"))
        self.assertIsNone(hold.peek(self.cache, self.secret, "../etc", b"bind"))
        self.assertEqual(hold.peek(self.cache, self.secret, h, b"bind"), b"x=1")

    def test_a_tampered_seal_is_refused(self) -> None:
        from tollgate.django import hold

        h = hold.new_handle()
        hold.put(self.cache, self.secret, h, b"bind", b"username=alice", 60)
        key = next(iter(self.cache._cache))
        import pickle

        blob = bytearray(pickle.loads(self.cache._cache[key]))
        blob[0] ^= 1
        self.cache._cache[key] = pickle.dumps(bytes(blob))
        self.assertIsNone(hold.peek(self.cache, self.secret, h, b"bind"))

    def test_too_large_a_submission_is_not_held(self) -> None:
        from tollgate.django import hold

        self.assertFalse(hold.put(self.cache, self.secret, hold.new_handle(), b"", b"x" * (hold.MAX_HELD_BYTES + 1), 60))


class Installed(unittest.TestCase):
    def test_the_package_under_test_is_the_installed_one_when_asked(self) -> None:
        import tollgate

        venv = os.environ.get("TOLLGATE_TEST_INSTALLED")
        if not venv:
            self.skipTest("run from the source tree (tests/test_installed.py runs this module against the wheel)")
        self.assertTrue(os.path.realpath(tollgate.__file__).startswith(os.path.realpath(venv)), tollgate.__file__)
        self.assertNotIn(os.sep + "src" + os.sep, tollgate.__file__)


if __name__ == "__main__":  # pragma: no cover
    unittest.main()
