"""client_ip with the header forms frameworks give."""

from __future__ import annotations

import email.message
import ipaddress
import unittest

from tollgate import HEADER_FORWARDED, HEADER_X_FORWARDED_FOR, Proxies, client_ip

TRUSTED = ["10.0.0.0/8", "2001:db8:ffff::/48"]


class HeaderForms(unittest.TestCase):
    def setUp(self) -> None:
        self.xff = Proxies(TRUSTED, HEADER_X_FORWARDED_FOR)

    def test_pairs_mappings_environ_and_messages(self) -> None:
        forms = [
            [("x-forwarded-for", "1.1.1.1, 10.0.0.7"), ("X-Forwarded-For", "203.0.113.9")],
            [(b"X-Forwarded-For", b"1.1.1.1, 10.0.0.7"), (b"X-Forwarded-For", b"203.0.113.9")],
            {"X-Forwarded-For": ["1.1.1.1, 10.0.0.7", "203.0.113.9"]},
            {"x-forwarded-for": "1.1.1.1, 10.0.0.7, 203.0.113.9"},
            {"REMOTE_ADDR": "10.0.0.1", "HTTP_X_FORWARDED_FOR": "1.1.1.1, 10.0.0.7, 203.0.113.9"},
        ]
        m = email.message.Message()
        m["X-Forwarded-For"] = "1.1.1.1, 10.0.0.7"
        m["X-Forwarded-For"] = "203.0.113.9"
        forms.append(m)  # type: ignore[arg-type]
        for headers in forms:
            with self.subTest(headers=headers):
                self.assertEqual(self.xff.client_ip("10.0.0.1:4711", headers), "203.0.113.9")
        self.assertEqual(self.xff.client_ip("10.0.0.1", None), "10.0.0.1")
        self.assertEqual(client_ip("[::ffff:192.0.2.1]:80", {}, None), "192.0.2.1")

    def test_the_other_header_is_never_read(self) -> None:
        h = {"Forwarded": "for=198.51.100.66", "HTTP_FORWARDED": "for=198.51.100.66"}
        self.assertEqual(self.xff.client_ip("10.0.0.1", h), "10.0.0.1")
        fwd = Proxies(TRUSTED, "forwarded")
        self.assertEqual(fwd.header, HEADER_FORWARDED)
        self.assertEqual(fwd.client_ip("10.0.0.1", {"X-Forwarded-For": "203.0.113.9"}), "10.0.0.1")
        self.assertEqual(fwd.client_ip("10.0.0.1", {"HTTP_FORWARDED": 'for="[2001:db8::1]:80"'}), "2001:db8::1")

    def test_text_that_is_not_latin_1_is_an_unusable_entry(self) -> None:
        self.assertEqual(self.xff.client_ip("10.0.0.1", [("X-Forwarded-For", "203.0.113.9, ２.２.２.２")]), "10.0.0.1")
        self.assertEqual(self.xff.client_ip("١٠.0.0.1", []), "")

    def test_settings(self) -> None:
        p = Proxies([ipaddress.ip_network("10.0.0.0/8"), ipaddress.ip_network("::ffff:172.16.0.0/108"), "192.168.1.7/24"], "X-Forwarded-For")
        self.assertEqual(p.trusted, ("10.0.0.0/8", "172.16.0.0/12", "192.168.1.0/24"))
        self.assertEqual(p.client_ip("172.16.1.1", [("X-Forwarded-For", "203.0.113.9")]), "203.0.113.9")
        for trusted, header in ((["0.0.0.0/0"], "Forwarded"), (["::/0"], "X-Forwarded-For"), (["10.0.0.0/8"], None),
                                (["10.0.0.0/8"], "X-Real-IP"), (["fe80::/10%eth0"], "Forwarded"), (["10.0.0.0/8 "], "Forwarded")):
            with self.subTest(trusted=trusted, header=header), self.assertRaises(ValueError):
                Proxies(trusted, header)
        with self.assertRaises(TypeError):
            Proxies("10.0.0.0/8", "Forwarded")  # type: ignore[arg-type]
        self.assertEqual(Proxies().client_ip("203.0.113.9:1", {"X-Forwarded-For": "1.2.3.4"}), "203.0.113.9")
        self.assertIsNone(Proxies().header)
