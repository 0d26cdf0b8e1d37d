"""The test site of tests/test_django.py: its URLs, its own views and the
backend that counts real password checks.

The views are a project's own code and know nothing of tollgate: a login
form that calls authenticate() and login() and re-renders itself (200) on
a wrong password, as Django's LoginView does, and an API that
authenticates every request with HTTP Basic and no session, as Django REST
framework's BasicAuthentication does. Settings alone protect them.
"""

from __future__ import annotations

import base64
import binascii
import html
import threading
from typing import Any, Dict, List

from django.contrib import admin  # type: ignore[import]
from django.contrib.auth import authenticate, login  # type: ignore[import]
from django.contrib.auth.backends import ModelBackend  # type: ignore[import]
from django.contrib.auth.views import PasswordResetConfirmView  # type: ignore[import]
from django.http import HttpResponse, HttpResponseRedirect, JsonResponse  # type: ignore[import]
from django.urls import path  # type: ignore[import]
from django.views.decorators.csrf import csrf_exempt  # type: ignore[import]

_lock = threading.Lock()
#: The username of every password check a real backend made, in order.
CHECKED: List[str] = []


class CountingBackend(ModelBackend):  # type: ignore[misc]
    """ModelBackend that writes down each password check it makes: what an
    attacker got to try, counted on Django's side."""

    def authenticate(self, request: Any, username: Any = None, password: Any = None, **kwargs: Any) -> Any:
        with _lock:
            CHECKED.append(str(username))
        return super().authenticate(request, username=username, password=password, **kwargs)


def checked(username: str) -> int:
    """How many times a real backend checked username's password."""
    with _lock:
        return CHECKED.count(username)


_FORM = """<!doctype html><title>Sign in</title>
<form method="post"><input name="csrfmiddlewaretoken" type="hidden" value="%s">
%s<input name="username" value="%s"><input name="password" type="password"><button>Sign in</button></form>"""


def login_view(request: Any) -> Any:
    """A project's own login form: a wrong password re-renders it (200)."""
    from django.middleware.csrf import get_token  # type: ignore[import]

    error, username = "", ""
    if request.method == "POST":
        username = request.POST.get("username", "")
        user = authenticate(request, username=username, password=request.POST.get("password", ""))
        if user is not None:
            login(request, user)
            return HttpResponseRedirect("/home/")
        error = "<p class=errornote>Wrong username or password.</p>"
    return HttpResponse(_FORM % (get_token(request), error, html.escape(username)))


@csrf_exempt
def api_view(request: Any) -> Any:
    """An API authenticated by HTTP Basic on every request, no session."""
    header = request.META.get("HTTP_AUTHORIZATION", "")
    creds: Dict[str, str] = {}
    if header.startswith("Basic "):
        try:
            user, _, password = base64.b64decode(header[6:]).decode("utf-8").partition(":")
            creds = {"username": user, "password": password}
        except (binascii.Error, UnicodeDecodeError):
            pass
    user = authenticate(request, **creds) if creds else None
    if user is None:
        r = JsonResponse({"detail": "Invalid username or password."}, status=401)
        r["WWW-Authenticate"] = 'Basic realm="api"'
        return r
    return JsonResponse({"username": user.get_username()})


def home(request: Any) -> Any:
    """Where a login lands."""
    return HttpResponse("home of %s" % html.escape(request.user.get_username()))


urlpatterns = [
    path("admin/", admin.site.urls),
    path("login/", login_view),
    path("api/whoami/", api_view),
    path("home/", home),
    path("reset/<uidb64>/<token>/", PasswordResetConfirmView.as_view(success_url="/home/")),
]
