"""Tests of tollgate's Python client.

Run from the repository root:

    python3 -m unittest discover -s clients/python/tests -t clients/python

The package is imported from clients/python/src, so nothing needs
installing; with TOLLGATE_TEST_INSTALLED set (tests/test_installed.py sets
it to a venv holding the built wheel) it is imported as installed. The tests against a real tollgate use the binary named by
TOLLGATE_BIN, or build one with ``go build`` (skipped when Go is missing).
"""

import os
import sys

_SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
if not os.environ.get("TOLLGATE_TEST_INSTALLED") and _SRC not in sys.path:
    sys.path.insert(0, _SRC)
