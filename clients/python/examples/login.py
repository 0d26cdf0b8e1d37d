"""A login handler on tollgate's Python client, framework-agnostic.

README.md shows the part between the snippet markers verbatim;
tests/test_readme.py holds the two together and runs the handler against a
real tollgate.
"""

import hashlib
import hmac
import html
import os
import time

_USERS = {"alice@example.com": "correct horse"}
_FORM = """<!doctype html><title>Sign in</title><form method="post">%s
<input name="user" value="%s"><input name="password" type="password"><button>Sign in</button></form>"""


def login_form(user: str = "", error: str = "") -> bytes:
    """Your login page; a wrong password shows it again with the error."""
    return (_FORM % (error, html.escape(user))).encode()


def check_password(user: str, password: str) -> bool:
    """A stand-in for your password check: unknown users fail like wrong
    passwords (compare against a dummy so both take as long)."""
    want = _USERS.get(user, "\x00 no such user")
    return hmac.compare_digest(want.encode(), password.encode()) and user in _USERS


# --- snippet start
import tollgate

tg = tollgate.Client("http://127.0.0.1:8080", token=os.environ.get("TOLLGATE_TOKEN"))
proxies = tollgate.Proxies(trusted=["10.0.0.0/8"], header=tollgate.HEADER_X_FORWARDED_FOR)
answer = tollgate.Responder()  # 429 + Retry-After + RateLimit, a CAPTCHA hook
cookie = tollgate.DeviceCookie()  # __Host-tollgate-device
FINGERPRINT_KEY = os.environ["TOLLGATE_FINGERPRINT_KEY"].encode()  # 32+ random bytes, the same on every instance


def login(form, remote_addr, headers):
    """POST /login: returns (status, headers, body) for the end user."""
    user, ip = form["user"], proxies.client_ip(remote_addr, headers)
    device = cookie.token(headers.get("Cookie"))
    # One password tried on many accounts from many addresses has one fingerprint.
    fp = hmac.new(FINGERPRINT_KEY, form["password"].encode(), hashlib.sha256).hexdigest()
    v = tg.check(flow="login", account=user, ip=ip, device_token=device, password_fingerprint=fp,
                 fail=tollgate.FAIL_DELAY)
    # log v.error when it is set; v is usable either way
    a = answer.respond(v)
    if not a.proceed:
        return a.status, a.headers, a.body  # delayed or challenged: the same for every account
    time.sleep(a.hold)  # 0 unless a queueing rule holds the call
    ok = check_password(user, form["password"])  # unknown users fail like wrong passwords
    breached = tg.breached(form["password"])  # k-anonymous, best-effort: False on any error
    r = tg.report(flow="login", account=user, ip=ip, attempt=v.attempt, device_token=device,
                  password_fingerprint=fp, outcome="success" if ok else "failure", breached=breached,
                  fail=tollgate.FAIL_DELAY)
    if not ok:  # the form again, as a framework answers a wrong password (never a bare 401)
        return 200, [("Content-Type", "text/html; charset=utf-8")], login_form(user, "Wrong user or password.")
    if r.action == tollgate.STEP_UP:  # right password, no session yet: a second factor first
        a = answer.respond(r)  # 403 by default; keep r.attempt and ask for the code instead
        return a.status, a.headers, a.body
    set_cookie = cookie.set_cookie(r.device_token)  # this device skips the IP rules next time
    # ... start the session
    return 200, [("Set-Cookie", set_cookie)] if set_cookie else [], b"welcome"
# --- snippet end
