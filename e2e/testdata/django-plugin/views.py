"""The project's own login form (copied into the test project as
tgplugin/views.py): authenticate() and login(), and on a wrong password the
form again, status 200, as Django's LoginView answers. It knows nothing of
tollgate: settings alone protect it."""

from django.contrib.auth import authenticate, login
from django.http import HttpResponse, HttpResponseRedirect
from django.middleware.csrf import get_token
from django.utils.html import escape

FORM = """<!doctype html><html><head><title>Sign in</title></head><body>
<form id="login-form" method="post" action="/login/">%s
<input type="hidden" name="csrfmiddlewaretoken" value="%s">
<input id="id_username" name="username" value="%s">
<input id="id_password" name="password" type="password">
<input type="submit" value="Sign in"></form></body></html>"""


def login_view(request):
    error, username = '', ''
    if request.method == 'POST':
        username = request.POST.get('username', '')
        user = authenticate(request, username=username, password=request.POST.get('password', ''))
        if user is not None:
            login(request, user)
            return HttpResponseRedirect('/home/')
        error = '<p class="errornote">Wrong username or password.</p>'
    return HttpResponse(FORM % (error, get_token(request), escape(username)))


def home(request):
    return HttpResponse('<!doctype html><p id="home">Signed in as %s</p>' % escape(request.user.get_username()))
