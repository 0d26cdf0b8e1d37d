"""The package: standard library only, compiles, documented, typed."""

from __future__ import annotations

import ast
import glob
import importlib.util
import inspect
import os
import py_compile
import subprocess
import sys
import tempfile
import unittest

import tollgate

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(HERE, "src", "tollgate")
PY_FILES = sorted(glob.glob(os.path.join(HERE, "**", "*.py"), recursive=True))


def parse(path: str) -> ast.Module:
    """The syntax tree of the Python file at path."""
    with open(path, encoding="utf-8") as f:
        return ast.parse(f.read())


def stdlib_modules() -> frozenset:
    names = getattr(sys, "stdlib_module_names", None)
    if names is not None:
        return frozenset(names)
    # Python 3.9: the modules the package uses.
    return frozenset(("__future__", "dataclasses", "enum", "hashlib", "hmac", "http", "ipaddress", "json", "os",
                      "re", "select", "socket", "ssl", "threading", "time", "typing", "unicodedata", "urllib"))


class Package(unittest.TestCase):
    def test_every_file_compiles(self) -> None:
        self.assertGreater(len(PY_FILES), 15)
        with tempfile.TemporaryDirectory() as tmp:
            for i, path in enumerate(PY_FILES):
                with self.subTest(file=os.path.relpath(path, HERE)):
                    py_compile.compile(path, cfile=os.path.join(tmp, "%d.pyc" % i), doraise=True)

    def test_the_package_imports_the_standard_library_only(self) -> None:
        std = stdlib_modules()
        # tollgate.django imports Django too, and nothing else does: the
        # client stays the standard library for everyone else.
        for path in glob.glob(os.path.join(SRC, "django", "**", "*.py"), recursive=True):
            tree = parse(path)
            for node in ast.walk(tree):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    names = [node.module or ""]
                for name in names:
                    with self.subTest(file=os.path.relpath(path, SRC), module=name):
                        self.assertIn(name.split(".")[0], std | {"django"})
        for path in glob.glob(os.path.join(SRC, "*.py")):
            tree = parse(path)
            for node in ast.walk(tree):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    names = [node.module or ""]
                for name in names:
                    with self.subTest(file=os.path.basename(path), module=name):
                        self.assertIn(name.split(".")[0], std)

    def test_every_public_name_is_documented(self) -> None:
        for name in tollgate.__all__:
            obj = getattr(tollgate, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                with self.subTest(name=name):
                    self.assertTrue(inspect.getdoc(obj), name)
                    for attr, member in vars(obj).items():
                        if not attr.startswith("_") and (inspect.isfunction(member) or isinstance(member, property)):
                            self.assertTrue(inspect.getdoc(member), "%s.%s" % (name, attr))
        for path in glob.glob(os.path.join(SRC, "**", "*.py"), recursive=True):
            with self.subTest(module=os.path.relpath(path, SRC)):
                self.assertTrue(ast.get_docstring(parse(path)))

    def test_it_is_typed(self) -> None:
        self.assertTrue(os.path.exists(os.path.join(SRC, "py.typed")))
        for path in glob.glob(os.path.join(SRC, "**", "*.py"), recursive=True):
            tree = parse(path)
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    with self.subTest(file=os.path.basename(path), function=node.name):
                        args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
                        for a in args:
                            if a.arg not in ("self", "cls"):
                                self.assertIsNotNone(a.annotation, a.arg)
                        self.assertIsNotNone(node.returns)

    def test_importing_tollgate_imports_no_django(self) -> None:
        code = "import sys, tollgate; sys.exit(1 if any(m == 'django' or m.startswith(('django.', 'tollgate.django')) for m in sys.modules) else 0)"
        env = dict(os.environ, PYTHONPATH=os.path.dirname(SRC))
        res = subprocess.run([sys.executable, "-c", code], env=env, timeout=60)
        self.assertEqual(res.returncode, 0, "import tollgate imported Django or tollgate.django")

    def test_every_subpackage_is_packaged(self) -> None:
        try:
            import tomllib  # type: ignore[import-not-found]
        except ImportError:
            self.skipTest("no tomllib before Python 3.11")
        with open(os.path.join(HERE, "pyproject.toml"), "rb") as f:
            packages = tomllib.load(f)["tool"]["setuptools"]["packages"]
        found = sorted(os.path.relpath(os.path.dirname(p), os.path.dirname(SRC)).replace(os.sep, ".")
                       for p in glob.glob(os.path.join(SRC, "**", "__init__.py"), recursive=True))
        self.assertEqual(sorted(packages), found)

    def test_the_metadata(self) -> None:
        try:
            import tomllib  # type: ignore[import-not-found]
        except ImportError:
            self.skipTest("no tomllib before Python 3.11")
        with open(os.path.join(HERE, "pyproject.toml"), "rb") as f:
            meta = tomllib.load(f)
        self.assertEqual(meta["project"]["name"], "tollgate")
        self.assertEqual(meta["project"].get("dependencies", []), [])
        self.assertEqual(meta["project"]["version"], tollgate.__version__)

    def test_mypy_strict_if_installed(self) -> None:
        if importlib.util.find_spec("mypy") is None:
            if os.environ.get("CI") == "true":
                self.fail("mypy is not installed for %s with CI=true; scripts/ensure-python.sh installs Debian's python3-mypy" % sys.executable)
            self.skipTest("mypy is not installed")
        res = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--python-version", "3.9", SRC],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
        self.assertEqual(res.returncode, 0, res.stdout.decode(errors="replace"))
