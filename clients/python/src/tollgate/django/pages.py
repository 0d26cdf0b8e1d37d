"""The pages a browser gets for a blocked attempt.

Each is built from what every end user with the same verdict shares (the
wait, a challenge and its handle) and nothing of the submission: no
account, no address and never the password, so an unknown account's page
is byte for byte a known one's, and no page echoes a credential.
"""

from __future__ import annotations

import base64
import html
import secrets
from typing import List, Optional, Tuple

from ..client import Challenge

__all__ = ["delay_page", "captcha_page", "challenge_page", "step_up_form", "step_up_refused", "WIDGETS"]

_HTML = "text/html; charset=utf-8"
_STYLE = ("body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#222}"
          "h1{font-size:1.3rem}#tollgate-status{color:#555}")

# A provider's widget: its script, the element it renders into, and the
# origins its scripts, frames, styles and calls come from, as the providers
# document them for a CSP (tollgate's challenge/page.go has the same).
WIDGETS = {
    "turnstile": ("https://challenges.cloudflare.com/turnstile/v0/api.js", "cf-turnstile",
                  "https://challenges.cloudflare.com"),
    "hcaptcha": ("https://js.hcaptcha.com/1/api.js", "h-captcha", "https://hcaptcha.com https://*.hcaptcha.com"),
    "recaptcha": ("https://www.google.com/recaptcha/api.js", "g-recaptcha",
                  "https://www.google.com/recaptcha/ https://www.gstatic.com/recaptcha/ "
                  "https://recaptcha.google.com/recaptcha/"),
}

Page = Tuple[int, List[Tuple[str, str]], bytes]


def delay_page(template: Optional[str], seconds: int) -> Page:
    """A delayed browser's page: TOLLGATE_DELAY_TEMPLATE rendered with
    retry_after alone, or a built-in one; 429 (the Responder adds
    Retry-After, RateLimit and Cache-Control)."""
    if template:
        from django.template.loader import render_to_string  # type: ignore[import]

        body = render_to_string(template, {"retry_after": seconds}).encode("utf-8")
    else:
        unit = "second" if seconds == 1 else "seconds"
        body = _page("Too many attempts",
                     "<p>Please wait %d %s, then <a href=\"\">try again</a>.</p>" % (seconds, unit))
    return 429, [("Content-Type", _HTML), ("Content-Length", str(len(body)))], body


def captcha_page() -> Page:
    """A browser's page for a captcha verdict when no challenge can be shown
    (not a form's post, TOLLGATE_CHALLENGE = None, or tollgate issues
    none): 429, without Retry-After, since waiting does not lift it."""
    body = _page("Too many attempts from here",
                 "<p>Signing in needs a check this page cannot show. Please try again later.</p>")
    return 429, [("Content-Type", _HTML), ("Content-Length", str(len(body))), ("Cache-Control", "no-store")], body


def challenge_page(ch: Challenge, handle: str, action: str, solver: bytes) -> Page:
    """The challenge page: a form that posts the handle, the token and the
    solution back to action once the solver (tollgate's, inlined under a CSP
    nonce) or the provider's widget is done. It holds the handle and the
    challenge, never the held submission; 429, not cached, not framed."""
    nonce = base64.b64encode(secrets.token_bytes(16)).decode("ascii")
    esc = html.escape
    attrs = ""
    if ch.kind == "pow":
        attrs = ' data-token="%s" data-difficulty="%d"' % (esc(ch.token), ch.difficulty)
    fields = ['<input type="hidden" name="tollgate_handle" value="%s">' % esc(handle),
              '<input type="hidden" name="tollgate_token" value="%s">' % esc(ch.token)]
    widget = WIDGETS.get(ch.kind)
    if widget is None:
        fields.append('<input type="hidden" name="tollgate_nonce" value="">')
        fields.append('<p id="tollgate-status">Your browser is working on a short puzzle; this takes a second or two '
                      'and then continues on its own.</p>')
    else:
        fields.append('<input type="hidden" name="tollgate_response" value="">')
        fields.append('<p id="tollgate-status">Please complete the check below; you will then continue on your '
                      'own.</p>')
        fields.append('<div class="%s" data-sitekey="%s" data-callback="tollgateProviderDone"></div>'
                      % (widget[1], esc(ch.site_key)))
    # The solver is tollgate's own script; "</" cannot end the element early.
    script = solver.decode("utf-8").replace("</", "<\\/")
    body = (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n<meta name="robots" content="noindex">\n'
        '<title>One moment…</title>\n<style nonce="%s">%s</style>\n</head>\n<body>\n<main>\n'
        '<h1>Checking that this request is not automated</h1>\n'
        '<form id="tollgate-challenge" method="post" action="%s" data-tollgate-challenge data-kind="%s"%s>\n%s\n'
        '</form>\n<noscript><p>This check needs JavaScript. Please turn it on and reload the page.</p></noscript>\n'
        '</main>\n<script nonce="%s">%s</script>\n%s</body>\n</html>\n'
    ) % (nonce, _STYLE, esc(action), esc(ch.kind), attrs, "\n".join(fields), nonce, script,
         '<script nonce="%s" src="%s" async defer></script>\n' % (nonce, widget[0]) if widget else "")
    b = body.encode("utf-8")
    headers = [
        ("Content-Type", _HTML),
        ("Content-Length", str(len(b))),
        ("Content-Security-Policy", _csp(nonce, widget[2] if widget else "")),
        ("Cache-Control", "no-store"),
        ("X-Content-Type-Options", "nosniff"),
        # same-origin, not no-referrer: Django's CSRF check of the post
        # that resumes the login wants a Referer over HTTPS (3.2) or an
        # Origin that is not "null" (4.0 and later).
        ("Referrer-Policy", "same-origin"),
        ("X-Frame-Options", "DENY"),
    ]
    return 429, headers, b


def step_up_form(csrf: str, action: str, error: str, status: int) -> Page:
    """The code page: a form for the 6-digit code that was e-mailed, posted
    to action with the CSRF token; error (fixed text) above it. It names no
    account and no address: whoever sees it typed the password already."""
    esc = html.escape
    note = '<p id="tollgate-error" role="alert">%s</p>\n' % esc(error) if error else ""
    body = _page("Confirm it is you",
                 '<p>We sent a 6-digit code to the e-mail address of this account. Enter it to finish signing '
                 'in.</p>\n%s<form method="post" action="%s" data-tollgate-step-up>\n'
                 '<input type="hidden" name="csrfmiddlewaretoken" value="%s">\n'
                 '<label for="tollgate-code">Code</label>\n'
                 '<input id="tollgate-code" name="code" inputmode="numeric" autocomplete="one-time-code" '
                 'pattern="[0-9 ]*" maxlength="12" required autofocus>\n'
                 '<button type="submit">Continue</button>\n</form>' % (note, esc(action), esc(csrf)))
    return status, _private(body), body


def step_up_refused(text: str, login: str) -> Page:
    """A login that cannot go on (no second factor to be had, too many wrong
    codes, an expired sign-in): why, and the way back to the login form;
    403, no session."""
    body = _page("Cannot sign you in", "<p>%s</p>\n<p><a href=\"%s\">Back to sign in</a></p>"
                 % (html.escape(text), html.escape(login)))
    return 403, _private(body), body


def _private(body: bytes) -> List[Tuple[str, str]]:
    return [("Content-Type", _HTML), ("Content-Length", str(len(body))), ("Cache-Control", "no-store"),
            ("X-Frame-Options", "DENY"), ("Content-Security-Policy",
                                          "default-src 'none'; form-action 'self'; frame-ancestors 'none'; "
                                          "base-uri 'none'"),
            ("Referrer-Policy", "same-origin")]


def _csp(nonce: str, origins: str) -> str:
    """Nothing runs but the page's nonce-carrying script and style (and a
    provider's widget); no form-action, since the login the post resumes
    may redirect anywhere and browsers apply it to redirects."""
    extra = " " + origins if origins else ""
    frames = "; frame-src %s; connect-src %s" % (origins, origins) if origins else ""
    return ("default-src 'none'; script-src 'nonce-%s'%s; style-src 'nonce-%s'%s%s; img-src 'self'; "
            "base-uri 'none'; frame-ancestors 'none'" % (nonce, extra, nonce, extra, frames))


def _page(title: str, content: str) -> bytes:
    return ('<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n<meta name="robots" content="noindex">\n'
            '<title>%s</title>\n</head>\n<body>\n<main>\n<h1>%s</h1>\n%s\n</main>\n</body>\n</html>\n'
            % (title, title, content)).encode("utf-8")
