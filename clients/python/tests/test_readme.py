"""README.md's login snippet is examples/login.py's, verbatim, so that the
two cannot drift; test_real runs the handler against a real tollgate."""

from __future__ import annotations

import importlib.util
import os
import re
import types
import unittest

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(HERE, "examples", "login.py")
README = os.path.join(HERE, "README.md")


def example_snippet() -> str:
    with open(EXAMPLE, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"# --- snippet start\n(.*?)# --- snippet end\n", text, re.S)
    if m is None:
        raise AssertionError("examples/login.py has no snippet markers")
    return m.group(1)


def python_blocks(text: str) -> list:
    return re.findall(r"```python\n(.*?)```", text, re.S)


def load_example() -> types.ModuleType:
    """examples/login.py as a fresh module."""
    os.environ.setdefault("TOLLGATE_FINGERPRINT_KEY", "tollgate-python-tests-fingerprint-key-32+")
    spec = importlib.util.spec_from_file_location("tollgate_example_login", EXAMPLE)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class Readme(unittest.TestCase):
    def test_the_login_snippet_is_the_example(self) -> None:
        with open(README, encoding="utf-8") as f:
            readme = f.read()
        self.assertIn(example_snippet(), python_blocks(readme),
                      "README's login block differs from examples/login.py's snippet")

    def test_every_python_block_compiles(self) -> None:
        with open(README, encoding="utf-8") as f:
            blocks = python_blocks(f.read())
        self.assertGreaterEqual(len(blocks), 5)
        for i, block in enumerate(blocks):
            with self.subTest(block=i):
                compile(block, "README.md block %d" % i, "exec")

    def test_the_example_loads(self) -> None:
        mod = load_example()
        self.assertTrue(callable(mod.login))
        self.assertFalse(mod.check_password("nobody", "x"))
        self.assertTrue(mod.check_password("alice@example.com", "correct horse"))
