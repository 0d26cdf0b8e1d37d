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
import time
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
        User.objects.create_user("dave", "dave@example.test", dave_pw, is_staff=True)
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
        # The right password from an address past ip_spray's CAPTCHA is
        # answered step_up (address_escalated): the code, then the session.
        self.assertEqual((r.status_code, r.get("Location")), (302, STEP_UP_PATH), r.content[:300])
        self.assertEqual(checked("dave"), 1)
        self.assertEqual(self.failures("dave"), 0)
        self.assertEqual(authenticated_sessions("dave"), 0)
        page = c.get(STEP_UP_PATH)
        csrf = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page.content)
        assert csrf is not None
        self.assertEqual(c.post(STEP_UP_PATH, {"code": mailed_code("dave@example.test")}).status_code, 403,
                         "the code page took a post without its CSRF token")
        r = c.post(STEP_UP_PATH, {"code": mailed_code("dave@example.test"), "csrfmiddlewaretoken": csrf.group(1).decode()})
        self.assertEqual((r.status_code, r.get("Location")), (302, "/admin/"), r.content[:300])
        self.assertEqual(authenticated_sessions("dave"), 1)
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
        self.assertEqual((r.status_code, r.get("Location")), (302, STEP_UP_PATH))
        # A wrong code is reported to tollgate's step_up flow (its own
        # counters, not the password's); the right one then signs in.
        code = mailed_code("carol@example.test")
        r = c.post(STEP_UP_PATH, {"code": "%06d" % ((int(code) + 1) % 1000000)})
        self.assertEqual(r.status_code, 200)
        self.assertIn(b"not right", r.content)
        r = c.post(STEP_UP_PATH, {"code": code})
        self.assertEqual((r.status_code, r.get("Location")), (302, "/admin/"))
        self.assertIsNotNone(c.cookies.get("tollgate-device"), "no device cookie after the step-up passed")

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


BREACHED_PASSWORDS = ("Summer2026!", "hank-Tg-breached-1", "ivy-Tg-breached-1", "june-Tg-breached-1",
                      "kim-Tg-breached-1", "lee-Tg-breached-1", "max-Tg-breached-1", "ned-Tg-breached-1")
STEP_UP_PATH = "/tollgate/step-up/"


def sha1(password: str) -> str:
    return hashlib.sha1(password.encode("utf-8")).hexdigest().upper()


def authenticated_sessions(name: str) -> int:
    """The sessions Django keeps signed in as name: counted in its own
    session table, whatever any signal said."""
    from django.contrib.auth.models import User
    from django.contrib.sessions.models import Session

    pk = str(User.objects.get(username=name).pk)
    return sum(1 for x in Session.objects.all() if x.get_decoded().get("_auth_user_id") == pk)


def mailed_code(to: str) -> str:
    from django.core import mail

    sent = [m for m in mail.outbox if m.to == [to]]
    assert sent, "no code was mailed"
    m = re.search(r"\b(\d{6})\b", sent[-1].body)
    assert m is not None, sent[-1].body
    return m.group(1)


class StepUpStandIn(_Base):
    """A stand-in that answers as the contract says tollgate does: a
    breached password's success is answered step_up unless the device
    token is one a step-up pass handed out; the step_up flow's check
    delays once three codes failed for the account."""

    breached_status: Any = 200

    @classmethod
    def setUpClass(cls) -> None:
        cls.stand_in = StandIn(cls._answer)
        cls.url = cls.stand_in.url
        cls.failed_codes: Dict[str, int] = {}
        super().setUpClass()

    @classmethod
    def tearDownClass(cls) -> None:
        super().tearDownClass()
        cls.stand_in.close()

    @classmethod
    def _answer(cls, r: Recorded) -> Tuple[int, Dict[str, str], bytes]:
        ok = {"Content-Type": "application/json"}
        if r.path.startswith("/v1/breached/"):
            prefix = r.path.rsplit("/", 1)[-1]
            lines = ["%s:%d" % (sha1(p)[5:], 10 + i) for i, p in enumerate(BREACHED_PASSWORDS) if sha1(p)[:5] == prefix]
            lines += ["%035X:0" % i for i in range(5)]  # padding
            if cls.breached_status == "slow":
                time.sleep(0.5)  # the stand-in's own answer, past the plug-in's timeout
            elif cls.breached_status == 299:
                return 200, {"Content-Type": "text/plain"}, ("%s:x\r\n%s\r\n" % (sha1("lee-Tg-breached-1")[5:],
                                                                            sha1("lee-Tg-breached-1")[5:])).encode()
            elif cls.breached_status != 200:
                return cls.breached_status, {"Content-Type": "application/problem+json"}, b'{"status":503}'
            return 200, {"Content-Type": "text/plain; charset=utf-8"}, "\r\n".join(lines).encode()
        body = json.loads(r.body) if r.body else {}
        verdict = dict(PROCEED, attempt="")
        if r.path == "/v1/check":
            if body["flow"] == "step_up" and cls.failed_codes.get(body["account"], 0) >= 3:
                verdict = dict(PROCEED, action="delay", delay_ms=4000, retry_after=4, reasons=["account_backoff"])
            elif body["flow"] == "login":
                verdict["attempt"] = "at.%s" % body["account"]
        elif r.path == "/v1/report":
            if body["flow"] == "login" and body["outcome"] == "success":
                if body.get("breached") and body.get("device_token") != "dev.stepped":
                    verdict = dict(PROCEED, action="step_up", attempt="ticket.%s" % body["account"],
                                   reasons=["breached_password"])
                else:
                    verdict["device_token"] = "dev.1"
            elif body["flow"] == "step_up":
                if body.get("attempt") != "ticket.%s" % body["account"]:
                    return 400, {"Content-Type": "application/problem+json"}, json.dumps({
                        "type": "https://tollgate.dev/problems/invalid-field", "status": 400,
                        "field": "attempt"}).encode()
                if body["outcome"] == "step_up_passed":
                    verdict["device_token"] = "dev.stepped"
                else:
                    cls.failed_codes[body["account"]] = cls.failed_codes.get(body["account"], 0) + 1
        return 200, ok, json.dumps(verdict).encode()

    def setUp(self) -> None:
        from django.core import mail

        mail.outbox = []
        type(self).breached_status = 200
        with self.stand_in._lock:
            self.stand_in.requests.clear()

    def sent(self, path: str, **match: Any) -> List[Dict[str, Any]]:
        with self.stand_in._lock:
            out = [json.loads(r.body) for r in self.stand_in.requests if r.path == path]
        return [b for b in out if all(b.get(k) == v for k, v in match.items())]

    def breached_user(self, name: str, email: str = "") -> Tuple[str, str]:
        from django.contrib.auth.models import User

        password = "%s-Tg-breached-1" % name
        assert password in BREACHED_PASSWORDS
        User.objects.create_user(name, email if email is not None else "", password, is_staff=True,
                                 is_superuser=True)
        return name, password

    def test_a_stolen_breached_password_gets_no_session_without_the_second_factor(self) -> None:
        name, pw = self.breached_user("hank", "hank@example.test")
        c = browser("203.0.113.120")
        r = admin_login(c, name, pw)
        self.assertEqual((r.status_code, r.get("Location")), (302, STEP_UP_PATH))
        self.assertEqual(authenticated_sessions(name), 0, "a session before the second factor")
        self.assertEqual(c.get("/admin/").status_code, 302, "the admin let the password alone in")
        self.assertNotIn("tollgate-device", c.cookies)
        reports = self.sent("/v1/report", flow="login")
        self.assertEqual([(x["outcome"], x.get("breached")) for x in reports], [("success", True)])
        with self.stand_in._lock:
            self.assertEqual([x.path for x in self.stand_in.requests if "/breached/" in x.path],
                             ["/v1/breached/" + sha1(pw)[:5]])
            self.assertFalse(any(pw.encode() in x.body or sha1(pw)[5:].encode() in x.path.encode()
                                 for x in self.stand_in.requests))
        page = c.get(STEP_UP_PATH)
        self.assertEqual(page.status_code, 200)
        self.assertIn(b'name="code"', page.content)
        self.assertNotIn(b"hank", page.content)
        code = mailed_code("hank@example.test")
        from django.contrib.sessions.models import Session

        self.assertFalse(any(code in str(x.get_decoded()) for x in Session.objects.all()), "the code in clear in a session")
        r = c.post(STEP_UP_PATH, {"code": code})
        self.assertEqual((r.status_code, r.get("Location")), (302, "/admin/"), r.content[:300])
        self.assertEqual(authenticated_sessions(name), 1)
        self.assertEqual(c.get("/admin/").status_code, 200)
        self.assertEqual(c.cookies["tollgate-device"].value, "dev.stepped")
        self.assertEqual(self.sent("/v1/report", flow="step_up"), [{
            "flow": "step_up", "account": name, "ip": "203.0.113.120", "outcome": "step_up_passed",
            "attempt": "ticket.hank"}])
        self.assertEqual([x["flow"] for x in self.sent("/v1/check")], ["login", "step_up"])
        # Single use: the same code again finds no pending sign-in.
        c.post("/admin/logout/")
        r = c.post(STEP_UP_PATH, {"code": code})
        self.assertEqual(r.status_code, 302)
        self.assertNotEqual(r.get("Location"), "/admin/")
        self.assertEqual(authenticated_sessions(name), 0)

    def test_a_code_posted_twice_at_once_signs_in_once(self) -> None:
        """Two posts of the right code in flight together both find the
        pending step-up in the session they loaded; only one may pass."""
        from tollgate.django import stepup

        from django.contrib.auth.models import User

        User.objects.create_user("rosa", "rosa@example.test", "Summer2026!", is_staff=True)
        c = browser("203.0.113.131")
        admin_login(c, "rosa", "Summer2026!")
        code = mailed_code("rosa@example.test")
        saved = c.session[stepup.SESSION_KEY]
        self.assertEqual(c.post(STEP_UP_PATH, {"code": code}).status_code, 302)
        # The second post, as it would have read the session before the first.
        sess = c.session
        sess[stepup.SESSION_KEY] = saved
        sess.save()
        r = c.post(STEP_UP_PATH, {"code": code})
        self.assertEqual(r.status_code, 403, r.get("Location"))
        self.assertEqual(authenticated_sessions("rosa"), 1)
        self.assertEqual([x["outcome"] for x in self.sent("/v1/report", flow="step_up")], ["step_up_passed"])

    def test_a_wrong_second_factor_code_is_reported_and_throttled(self) -> None:
        name, pw = self.breached_user("ivy", "ivy@example.test")
        c = browser("203.0.113.121")
        self.assertEqual(admin_login(c, name, pw).status_code, 302)
        code = mailed_code("ivy@example.test")
        wrong = "%06d" % ((int(code) + 1) % 1000000)
        for i in range(3):
            r = c.post(STEP_UP_PATH, {"code": wrong})
            self.assertEqual(r.status_code, 200)
            self.assertIn(b"not right", r.content)
        self.assertEqual([x["outcome"] for x in self.sent("/v1/report", flow="step_up")], ["step_up_failed"] * 3)
        self.assertTrue(all(x["attempt"] == "ticket.ivy" for x in self.sent("/v1/report", flow="step_up")))
        # tollgate's step_up flow now delays: not even the right code is compared.
        r = c.post(STEP_UP_PATH, {"code": code})
        self.assertEqual(r.status_code, 429)
        self.assertGreaterEqual(int(r["Retry-After"]), 1)
        self.assertEqual(len(self.sent("/v1/report", flow="step_up")), 3)
        self.assertEqual(authenticated_sessions(name), 0)
        self.assertEqual(c.get("/admin/").status_code, 302)

    def test_wrong_codes_spend_the_code_while_tollgate_does_not_throttle(self) -> None:
        from tollgate.django import stepup

        name, pw = self.breached_user("june", "june@example.test")
        c = browser("203.0.113.122")
        admin_login(c, name, pw)
        code = mailed_code("june@example.test")
        type(self).failed_codes[name] = -100  # a tollgate that never delays
        for i in range(stepup.MAX_WRONG_CODES):
            r = c.post(STEP_UP_PATH, {"code": "%06d" % ((int(code) + 1 + i) % 1000000)})
        self.assertEqual(r.status_code, 403)
        self.assertIn(b"sign in again", r.content)
        r = c.post(STEP_UP_PATH, {"code": code})
        self.assertEqual(r.status_code, 302)
        self.assertEqual(authenticated_sessions(name), 0)

    def test_an_expired_code_signs_nobody_in(self) -> None:
        import time
        from unittest import mock

        from tollgate.django import stepup

        name, pw = self.breached_user("kim", "kim@example.test")
        c = browser("203.0.113.123")
        admin_login(c, name, pw)
        code = mailed_code("kim@example.test")
        later = time.time() + stepup.CODE_TTL + 1
        with mock.patch("tollgate.django.stepup.time.time", return_value=later):
            r = c.post(STEP_UP_PATH, {"code": code})
        self.assertEqual(r.status_code, 302)
        self.assertEqual(authenticated_sessions(name), 0)
        self.assertEqual(self.sent("/v1/report", flow="step_up"), [])

    def test_a_breached_check_error_never_fails_the_login(self) -> None:
        """The range answers 503, 404 (no corpus), garbage, or too late:
        the password is not known to be breached, and the owner signs in."""
        from django.test import override_settings

        name, pw = self.breached_user("lee", "lee@example.test")
        c = browser("203.0.113.124")
        for status in (503, 404, 299, "slow"):
            with self.subTest(status=status), override_settings(TOLLGATE_BREACHED_TIMEOUT=0.1):
                type(self).breached_status = status  # type: ignore[assignment]
                with self.stand_in._lock:
                    self.stand_in.requests.clear()
                r = admin_login(c, name, pw)
                self.assertEqual((r.status_code, r.get("Location")), (302, "/admin/"))
                self.assertEqual(authenticated_sessions(name), 1)
                self.assertEqual([x.get("breached") for x in self.sent("/v1/report")], [None])
                c.post("/admin/logout/")

    def test_the_owners_known_device_signs_in_without_step_up(self) -> None:
        name, pw = self.breached_user("max", "max@example.test")
        c = browser("198.51.100.125")
        admin_login(c, name, pw)
        r = c.post(STEP_UP_PATH, {"code": mailed_code("max@example.test")})
        self.assertEqual(r.status_code, 302)
        c.post("/admin/logout/")
        from django.core import mail

        mail.outbox = []
        r = admin_login(c, name, pw)
        self.assertEqual((r.status_code, r.get("Location")), (302, "/admin/"))
        self.assertEqual(self.sent("/v1/report", flow="login")[-1]["device_token"], "dev.stepped")
        self.assertEqual(mail.outbox, [])
        self.assertEqual(authenticated_sessions(name), 1)

    def test_a_user_without_an_email_is_refused_with_a_reset_message(self) -> None:
        name, pw = self.breached_user("ned", "")
        c = browser("203.0.113.126")
        r = admin_login(c, name, pw)
        self.assertEqual(r.status_code, 403)
        self.assertIn(b"reset your password", r.content.lower())
        self.assertEqual(authenticated_sessions(name), 0)
        self.assertEqual(c.get(STEP_UP_PATH).status_code, 302)
        from django.core import mail

        self.assertEqual(mail.outbox, [])

    def test_a_breached_failure_is_reported_breached_and_steps_nothing_up(self) -> None:
        r = admin_login(browser("203.0.113.127"), "alice", "Summer2026!")
        self.assertEqual(r.status_code, 200)
        self.assertEqual([(x["outcome"], x.get("breached")) for x in self.sent("/v1/report")], [("failure", True)])
        r = admin_login(browser("203.0.113.127"), "alice", "not-breached-Tg-1")
        self.assertEqual([x.get("breached") for x in self.sent("/v1/report")], [True, None])

    def test_a_failing_hook_lets_nobody_in(self) -> None:
        from django.test import override_settings

        def broken(request: Any, user: Any, step_up: Any) -> Any:
            raise RuntimeError("the SMS gateway is down")

        from django.contrib.auth.models import User

        User.objects.create_user("pia", "pia@example.test", "Summer2026!", is_staff=True)
        with override_settings(TOLLGATE_STEP_UP_HOOK=broken), self.assertLogs("tollgate.django", "WARNING") as logs:
            r = admin_login(browser("203.0.113.129"), "pia", "Summer2026!")
        self.assertEqual(r.status_code, 403)
        self.assertEqual(authenticated_sessions("pia"), 0)
        self.assertFalse([m for m in logs.output if "pia" in m or "203.0.113.129" in m], logs.output)

    def test_a_hook_of_ones_own_gets_the_pending_step_up_and_answers_the_browser(self) -> None:
        from django.http import HttpResponse
        from django.test import override_settings

        seen: List[Any] = []

        def totp(request: Any, user: Any, step_up: Any) -> Any:
            from tollgate.django import stepup

            seen.append((user.get_username(), step_up.ticket, step_up.reasons, stepup.pending(request) == step_up))
            return HttpResponse("enter the code of your app", status=200)

        from django.contrib.auth.models import User

        User.objects.create_user("quin", "", "Summer2026!", is_staff=True)
        with override_settings(TOLLGATE_STEP_UP_HOOK=totp):
            r = admin_login(browser("203.0.113.130"), "quin", "Summer2026!")
        self.assertEqual((r.status_code, r.content), (200, b"enter the code of your app"))
        self.assertEqual(seen, [("quin", "ticket.quin", ["breached_password"], True)])
        self.assertEqual(authenticated_sessions("quin"), 0)

    def test_an_api_login_without_a_session_gets_a_403_not_the_view(self) -> None:
        from django.contrib.auth.models import User

        User.objects.create_user("opal", "opal@example.test", "Summer2026!")
        auth = "Basic " + base64.b64encode(b"opal:Summer2026!").decode()
        r = api("203.0.113.128").get("/api/whoami/", HTTP_AUTHORIZATION=auth)
        self.assertEqual(r.status_code, 403)
        self.assertEqual(r["Content-Type"], "application/problem+json")
        self.assertNotIn(b"opal", r.content)
        self.assertEqual(authenticated_sessions("opal"), 0)


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
            ("TOLLGATE_ACCOUNT_FIELDS", "username"), ("TOLLGATE_BREACHED", "yes"), ("TOLLGATE_BREACHED_TIMEOUT", 0),
            ("TOLLGATE_BREACHED_TIMEOUT", 60), ("TOLLGATE_STEP_UP_HOOK", "no.such.module.hook"),
            ("TOLLGATE_STEP_UP_HOOK", 42), ("TOLLGATE_STEP_UP_PATH", "tollgate/step-up/"),
            ("TOLLGATE_STEP_UP_PATH", "//evil.example/"), ("TOLLGATE_STEP_UP_FLOW", ""),
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
            "AUTH_PASSWORD_VALIDATORS": [{"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"}],
        }
        os.environ.setdefault("TOLLGATE_FINGERPRINT_KEY", KEY)
        exec(compile(m.group(1), "README.md", "exec"), ns)
        lines = [x for x in m.group(1).splitlines() if x.strip()]
        self.assertLessEqual(len(lines), 12, "the settings block is meant to fit on a screen")
        block = {k: v for k, v in ns.items() if k.isupper()}
        self.assertEqual(block["INSTALLED_APPS"], SETTINGS["INSTALLED_APPS"])
        self.assertEqual(block["MIDDLEWARE"], SETTINGS["MIDDLEWARE"])
        self.assertEqual(block["AUTH_PASSWORD_VALIDATORS"][-1], REPORT_CHANGES["AUTH_PASSWORD_VALIDATORS"][0])
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


REPORT_CHANGES = {"AUTH_PASSWORD_VALIDATORS": [{"NAME": "tollgate.django.validators.ReportPasswordChange"}]}


def change_password(c: Any, old: str, new: str) -> Any:
    """Django's own PasswordChangeView, as the admin serves it."""
    return c.post("/admin/password_change/", {"old_password": old, "new_password1": new, "new_password2": new})


class PasswordChange(RealTollgate):
    """The one settings line of tollgate.django.validators against a real
    tollgate: each password change reported as password_changed."""

    @classmethod
    def settings(cls) -> Dict[str, Any]:
        return dict(REPORT_CHANGES)

    def test_a_password_change_after_a_stuffing_attack_lets_the_owner_in_at_once(self) -> None:
        old, new = "ivan-Tg-5d1e-old", "ivan-Tg-5d1e-new"
        ivan = user("pwc-ivan", old)
        owner = browser("198.51.100.80")
        self.assertEqual(admin_login(owner, ivan, old).status_code, 302)  # her session from before the attack
        attacker = browser("203.0.113.80")
        for i in range(6):
            admin_login(attacker, ivan, "stuffed-%d" % i)
        self.assertEqual(self.failures(ivan), 5)
        laptop = browser("198.51.100.81")  # a device tollgate does not know yet
        self.assertEqual(admin_login(laptop, ivan, old).status_code, 429, "the attack did not hold the account")
        self.assertEqual(authenticated_sessions(ivan), 1)
        r = change_password(owner, old, new)
        self.assertEqual((r.status_code, r.get("Location")), (302, "/admin/password_change/done/"), r.content[:300])
        self.assertEqual(self.failures(ivan), 0, "the change was not reported")
        r = admin_login(browser("198.51.100.82"), ivan, new)
        self.assertEqual((r.status_code, r.get("Location")), (302, "/admin/"), "the owner waits out the attacker's ramp")
        self.assertEqual(authenticated_sessions(ivan), 2)

    def test_a_reset_link_after_a_stuffing_attack_lets_the_locked_out_owner_in_at_once(self) -> None:
        """The owner the attack keeps out resets her password with the
        mailed link (Django's PasswordResetConfirmView) and signs in."""
        from django.contrib.auth.models import User
        from django.contrib.auth.tokens import default_token_generator
        from django.utils.encoding import force_bytes
        from django.utils.http import urlsafe_base64_encode

        pia = user("pwc-pia", "pia-Tg-8b2d-old")
        c = browser("203.0.113.84")
        for i in range(6):
            admin_login(c, pia, "stuffed-%d" % i)
        owner = browser("198.51.100.86")
        self.assertEqual(admin_login(owner, pia, "pia-Tg-8b2d-old").status_code, 429)
        u = User.objects.get(username=pia)
        link = "/reset/%s/%s/" % (urlsafe_base64_encode(force_bytes(u.pk)), default_token_generator.make_token(u))
        r = owner.get(link)
        self.assertEqual(r.status_code, 302, r.content[:300])
        r = owner.post(r["Location"], {"new_password1": "pia-Tg-8b2d-new", "new_password2": "pia-Tg-8b2d-new"})
        self.assertEqual((r.status_code, r.get("Location")), (302, "/home/"), r.content[:300])
        r = admin_login(owner, pia, "pia-Tg-8b2d-new")
        self.assertEqual((r.status_code, r.get("Location")), (302, "/admin/"))
        self.assertEqual(authenticated_sessions(pia), 1)

    def test_a_password_set_outside_a_request_is_reported_too(self) -> None:
        """set_password(); save() in a shell, a task or changepassword: no
        request, so the server's own address (the flow requires one)."""
        from django.contrib.auth.models import User

        judy = user("pwc-judy", "judy-Tg-90ab-old")
        c = browser("203.0.113.81")
        for i in range(6):
            admin_login(c, judy, "stuffed-%d" % i)
        self.assertEqual(self.failures(judy), 5)
        u = User.objects.get(username=judy)
        u.set_password("judy-Tg-90ab-new")
        u.save()
        self.assertEqual(self.failures(judy), 0)
        r = admin_login(browser("198.51.100.83"), judy, "judy-Tg-90ab-new")
        self.assertEqual((r.status_code, r.get("Location")), (302, "/admin/"))

    def test_manage_py_changepassword_after_a_stuffing_attack_lets_the_owner_in_at_once(self) -> None:
        import io
        from unittest import mock

        from django.core.management import call_command

        lena = user("pwc-lena", "lena-Tg-3a7f-old")
        c = browser("203.0.113.83")
        for i in range(6):
            admin_login(c, lena, "stuffed-%d" % i)
        self.assertEqual(admin_login(browser("198.51.100.84"), lena, "lena-Tg-3a7f-old").status_code, 429)
        with mock.patch("getpass.getpass", return_value="lena-Tg-3a7f-new"):
            call_command("changepassword", lena, stdout=io.StringIO())
        r = admin_login(browser("198.51.100.85"), lena, "lena-Tg-3a7f-new")
        self.assertEqual((r.status_code, r.get("Location")), (302, "/admin/"))

    def test_a_hash_upgraded_at_login_is_no_change(self) -> None:
        """check_password() rehashing a password is Django's, not the
        user's: nothing is reported, the failures stay."""
        from django.contrib.auth.hashers import make_password
        from django.contrib.auth.models import User

        kim = user("pwc-kim", "kim-Tg-44aa-right")
        c = browser("203.0.113.82")
        for i in range(3):
            admin_login(c, kim, "stuffed-%d" % i)
        self.assertEqual(self.failures(kim), 3)
        with self.settings_hashers(["django.contrib.auth.hashers.MD5PasswordHasher",
                                    "django.contrib.auth.hashers.SHA1PasswordHasher"]):
            User.objects.filter(username=kim).update(password=make_password("kim-Tg-44aa-right", hasher="sha1"))
            self.assertTrue(User.objects.get(username=kim).check_password("kim-Tg-44aa-right"))
        self.assertTrue(User.objects.get(username=kim).password.startswith("md5$"), "no upgrade happened")
        self.assertEqual(self.failures(kim), 3)

    def settings_hashers(self, hashers: List[str]) -> Any:
        from django.test import override_settings

        return override_settings(PASSWORD_HASHERS=hashers)


class PasswordChangeTollgateDown(_Base):
    url = closed_port_url()

    @classmethod
    def settings(cls) -> Dict[str, Any]:
        return dict(REPORT_CHANGES)

    def test_the_change_succeeds_and_the_log_names_no_one(self) -> None:
        from django.contrib.auth.models import User

        User.objects.create_user("pwc-leo", "", None, is_staff=True)  # no password: nothing reported
        u = User.objects.get(username="pwc-leo")
        with self.assertLogs("tollgate.django", "WARNING") as logs:
            u.set_password("leo-Tg-61f0-new")
            u.save()
        self.assertTrue(User.objects.get(username="pwc-leo").check_password("leo-Tg-61f0-new"))
        self.assertEqual(len(logs.output), 1, logs.output)
        self.assertFalse([m for m in logs.output if "pwc-leo" in m or "127.0.0.1" in m], logs.output)

    def test_settings_that_cannot_be_read_fail_no_change(self) -> None:
        from django.contrib.auth.models import User
        from django.test import override_settings

        User.objects.create_user("pwc-mia", "", None)
        u = User.objects.get(username="pwc-mia")
        with override_settings(TOLLGATE_URL=None), self.assertLogs("tollgate.django", "WARNING") as logs:
            u.set_password("mia-Tg-0b3c-new")
            u.save()
        self.assertTrue(User.objects.get(username="pwc-mia").check_password("mia-Tg-0b3c-new"))
        self.assertIn("ImproperlyConfigured", logs.output[0])


class PasswordChangeStandIn(_Base):
    """What a change sends: against a stand-in that records it."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.stand_in = StandIn(lambda _r: (200, {"Content-Type": "application/json"}, json.dumps(PROCEED).encode()))
        cls.url = cls.stand_in.url
        super().setUpClass()

    @classmethod
    def tearDownClass(cls) -> None:
        super().tearDownClass()
        cls.stand_in.close()

    @classmethod
    def settings(cls) -> Dict[str, Any]:
        return dict(REPORT_CHANGES, TOLLGATE_FLOW="staff_login")

    def reports(self) -> List[Dict[str, Any]]:
        with self.stand_in._lock:
            return [json.loads(r.body) for r in self.stand_in.requests if r.path == "/v1/report"]

    def test_the_view_reports_the_account_as_logins_name_it_from_the_requests_address(self) -> None:
        old, new = "nina-Tg-7e21-old", "nina-Tg-7e21-new"
        nina = user("pwc-Nina", old)
        c = browser("203.0.113.90")
        self.assertEqual(admin_login(c, nina, old).status_code, 302)
        r = change_password(c, old, new)
        self.assertEqual(r.status_code, 302, r.content[:300])
        self.assertEqual(self.reports()[-1], {"flow": "staff_login", "account": "pwc-Nina", "ip": "203.0.113.90",
                                              "outcome": "password_changed"})
        with self.stand_in._lock:
            self.assertFalse(any(pw.encode() in x.body for pw in (old, new) for x in self.stand_in.requests))

    def test_nothing_is_reported_when_the_plug_in_is_off(self) -> None:
        from django.contrib.auth.models import User
        from django.test import override_settings

        User.objects.create_user("pwc-omar", "", None)
        u = User.objects.get(username="pwc-omar")
        before = len(self.reports())
        with override_settings(TOLLGATE_ENABLED=False):
            u.set_password("omar-Tg-5e0a-new")
            u.save()
        self.assertEqual(len(self.reports()), before)

    def test_an_email_login_reports_the_email(self) -> None:
        from django.contrib.auth.models import User
        from django.test import override_settings

        User.objects.create_user("pwc-olga", "pwc-olga@example.test", None)
        u = User.objects.get(username="pwc-olga")
        with override_settings(TOLLGATE_ACCOUNT_FIELDS=["email"]):
            u.set_password("olga-Tg-2c9d-new")
            u.save()
        self.assertEqual(self.reports()[-1], {"flow": "staff_login", "account": "pwc-olga@example.test",
                                              "ip": "127.0.0.1", "outcome": "password_changed"})
