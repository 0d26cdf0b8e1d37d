"""DeviceCookie beyond the vectors."""

from __future__ import annotations

import unittest

from tollgate import DeviceCookie


class Cookie(unittest.TestCase):
    def test_round_trip(self) -> None:
        c = DeviceCookie()
        set_cookie = c.set_cookie("dt.abc-DEF_123")
        assert set_cookie is not None
        self.assertEqual(c.token(set_cookie.split(";", 1)[0]), "dt.abc-DEF_123")
        self.assertEqual(c.token(["theme=dark", "__Host-tollgate-device=x; a=b"]), "x")
        self.assertEqual(c.token([]), "")
        self.assertEqual(c.token("__Host-tollgate-device=a\\b; __Host-tollgate-device=ok"), "ok",
                         "a value Go's reader drops is skipped")
        self.assertEqual(c.token("__Host-tollgate-device=a b"), "", "read, then refused as a token")
        self.assertIsNone(c.set_cookie(None))
        self.assertEqual((c.name, c.max_age), ("__Host-tollgate-device", 7776000))
        self.assertEqual(DeviceCookie(max_age=3600.9).max_age, 3600)
        for bad in ({"name": ""}, {"max_age": True}, {"max_age": "3600"}, {"name": "__Host-a;b"}):
            with self.subTest(kw=bad), self.assertRaises(ValueError):
                DeviceCookie(**bad)  # type: ignore[arg-type]

    def test_more_than_3000_cookies_are_none(self) -> None:
        header = "; ".join(["a=b"] * 3000) + "; __Host-tollgate-device=x"
        self.assertEqual(DeviceCookie().token(header), "")
        self.assertEqual(DeviceCookie().token("; ".join(["a=b"] * 2999) + "; __Host-tollgate-device=x"), "x")
