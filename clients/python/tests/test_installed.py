"""The package as published: scripts/build-python.sh builds the sdist and
the wheel offline, the wheel is installed with pip from the file alone
(--no-index) into a venv that sees the system's Django
(--system-site-packages), and the Django tests run there against the
installed package, not the source tree.

Skipped where the build cannot run (no python3-build, no venv); with
CI=true, scripts/ensure-python.sh has installed both, so it fails instead.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import subprocess
import sys
import tarfile
import tempfile
import unittest
import zipfile

from .support import REPO

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _missing() -> str:
    """What the build needs that this interpreter lacks, or ""."""
    for mod in ("build", "setuptools", "wheel", "venv", "ensurepip"):
        if importlib.util.find_spec(mod) is None:
            return mod
    if importlib.util.find_spec("django") is None:
        return "django"
    return ""


class Installed(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        missing = _missing()
        if missing:
            if os.environ.get("CI") == "true":
                raise AssertionError("%s lacks %s with CI=true; scripts/ensure-python.sh installs it"
                                     % (sys.executable, missing))
            raise unittest.SkipTest("%s lacks %s" % (sys.executable, missing))
        cls.tmp = tempfile.TemporaryDirectory(prefix="tollgate-installed-")
        out = os.path.join(cls.tmp.name, "dist")
        res = subprocess.run([os.path.join(REPO, "scripts", "build-python.sh"), out],
                             env=dict(os.environ, PYTHON=sys.executable),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
        if res.returncode != 0:
            raise AssertionError("build-python.sh failed:\n" + res.stdout.decode(errors="replace"))
        cls.wheel = glob.glob(os.path.join(out, "*.whl"))
        cls.sdist = glob.glob(os.path.join(out, "*.tar.gz"))
        cls.venv = os.path.join(cls.tmp.name, "venv")

    @classmethod
    def tearDownClass(cls) -> None:
        cls.tmp.cleanup()

    def test_the_wheel_and_sdist_hold_the_package_and_the_licence(self) -> None:
        self.assertEqual((len(self.wheel), len(self.sdist)), (1, 1))
        with open(os.path.join(REPO, "LICENSE"), "rb") as f:
            licence = f.read()
        with zipfile.ZipFile(self.wheel[0]) as z:
            names = z.namelist()
            self.assertIn("tollgate/django/backends.py", names)
            self.assertIn("tollgate/django/management/commands/tollgate_reset.py", names)
            self.assertIn("tollgate/py.typed", names)
            self.assertEqual(z.read(next(n for n in names if n.endswith(".dist-info/LICENSE"))), licence)
            self.assertFalse([n for n in names if n.startswith("tests/")])
        with tarfile.open(self.sdist[0]) as t:
            top = os.path.basename(self.sdist[0])[:-len(".tar.gz")]
            member = t.extractfile(top + "/LICENSE")
            assert member is not None
            self.assertEqual(member.read(), licence)
            self.assertTrue(all(m.uid == 0 and m.gid == 0 for m in t.getmembers()))

    def test_the_django_tests_pass_against_the_installed_wheel(self) -> None:
        run = lambda *argv, **kw: subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,  # noqa: E731
                                                 timeout=600, **kw)
        res = run(sys.executable, "-m", "venv", "--system-site-packages", self.venv)
        self.assertEqual(res.returncode, 0, res.stdout.decode(errors="replace"))
        py = os.path.join(self.venv, "bin", "python")
        res = run(py, "-m", "pip", "install", "--no-index", "--no-deps", "--quiet", self.wheel[0])
        self.assertEqual(res.returncode, 0, res.stdout.decode(errors="replace"))
        env = dict(os.environ, TOLLGATE_TEST_INSTALLED=self.venv, PYTHONDONTWRITEBYTECODE="1")
        env.pop("PYTHONPATH", None)
        res = run(py, "-W", "ignore", "-m", "unittest", "-v", "tests.test_django", cwd=HERE, env=env)
        out = res.stdout.decode(errors="replace")
        self.assertEqual(res.returncode, 0, out)
        self.assertRegex(out, r"test_the_package_under_test_is_the_installed_one_when_asked \(.*\) \.\.\. ok")
