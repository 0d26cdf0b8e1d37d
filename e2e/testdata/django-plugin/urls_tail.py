
# Appended by tollgate's e2e tests (e2e/testdata/django-plugin/urls_tail.py):
# the project's own login form beside the admin's.
from tgplugin import views as _views  # noqa: E402

urlpatterns += [path('login/', _views.login_view), path('home/', _views.home)]
