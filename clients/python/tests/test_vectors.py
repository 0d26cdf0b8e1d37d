"""The shared vectors of clients/testdata, run as api/client/vectors_test.go
runs them: the Go, TypeScript and Python clients each run every one, so
that a change of behaviour in one client fails until all three agree."""

from __future__ import annotations

import glob
import json
import os
import unicodedata
import unittest
from typing import Any, Dict, Iterable, List, Mapping, Optional

from tollgate import (
    FAIL_CAPTCHA,
    FAIL_DELAY,
    FAIL_OPEN,
    Client,
    DeviceCookie,
    Proxies,
    Responder,
    Timeout,
    TollgateError,
    Unavailable,
    Verdict,
    WebhookVerificationError,
    client_ip,
    verify_webhook,
)

from tollgate.allowance import fold_account

from .support import TESTDATA, StandIn, closed_port_url

#: Every vector file, each read by a test below.
VECTOR_FILES = ("account_fold.json", "breached.json", "client_ip.json", "device_cookie.json", "fail_modes.json", "respond.json", "webhooks.json")

#: How many cases each file's test ran, for the report.
RAN: Dict[str, int] = {}


def read_vectors(name: str) -> Any:
    """clients/testdata/name, decoded."""
    if name not in VECTOR_FILES:
        raise AssertionError("%s is not in VECTOR_FILES" % name)
    with open(os.path.join(TESTDATA, name), "rb") as f:
        return json.load(f)


def strict(obj: Any, allowed: Iterable[str], where: str) -> None:
    """Fail on a key outside allowed, as Go's DisallowUnknownFields does, so
    that a misspelt vector fails rather than tests nothing."""
    if not isinstance(obj, dict):
        raise AssertionError("%s: not an object" % where)
    unknown = set(obj) - set(allowed)
    if unknown:
        raise AssertionError("%s: unknown keys %s" % (where, sorted(unknown)))


PROXIES_KEYS = ("name", "trusted", "header")


def vector_proxies(v: Mapping[str, Any]) -> Proxies:
    header = v.get("header", "")
    return Proxies(trusted=v.get("trusted") or [], header=None if header == "none" else header)


class ClientIPVectors(unittest.TestCase):
    def test_client_ip(self) -> None:
        doc = read_vectors("client_ip.json")
        strict(doc, ("about", "groups", "config_errors", "config_ok"), "client_ip.json")
        n = 0
        for g in doc["groups"]:
            strict(g, PROXIES_KEYS + ("cases",), g.get("name", "group"))
            p = vector_proxies(g)
            for c in g["cases"]:
                strict(c, ("name", "peer", "lines", "want"), c.get("name", "case"))
                n += 1
                with self.subTest(group=g["name"], case=c["name"]):
                    lines = [(k, v) for k, v in c["lines"]]
                    self.assertEqual(client_ip(c["peer"], lines, p), c["want"])
                    self.assertEqual(p.client_ip(c["peer"], lines), c["want"])
        for c in doc["config_errors"]:
            strict(c, PROXIES_KEYS, c.get("name", "config error"))
            with self.subTest(config_error=c["name"]):
                with self.assertRaises(ValueError):
                    vector_proxies(c)
        for c in doc["config_ok"]:
            strict(c, PROXIES_KEYS, c.get("name", "config"))
            with self.subTest(config_ok=c["name"]):
                vector_proxies(c)
        self.assertGreaterEqual(n, 60, "the vectors did not load")
        self.assertTrue(doc["config_errors"], "the vectors did not load")
        RAN["client_ip.json"] = n + len(doc["config_errors"]) + len(doc["config_ok"])


RESPONDER_KEYS = ("policy", "problem_type", "title", "step_up_page")


def vector_responder(config: Mapping[str, Any]) -> Responder:
    strict(config, RESPONDER_KEYS, "responder config")
    kw = dict(config)
    page = kw.pop("step_up_page", None)
    if page is not None:
        # The operator's page: exactly this status, these fields and this body.
        strict(page, ("status", "headers", "body"), "step_up_page")
        kw["step_up"] = lambda: (page["status"], dict(page["headers"]), page["body"])
    return Responder(**kw)


class RespondVectors(unittest.TestCase):
    def test_respond(self) -> None:
        doc = read_vectors("respond.json")
        strict(doc, ("about", "cases", "config_errors"), "respond.json")
        for c in doc["cases"]:
            strict(c, ("name", "config", "verdict", "want"), c.get("name", "case"))
            strict(c["want"], ("status", "headers", "body", "proceed", "step_up", "hold_ms"), c["name"])
            with self.subTest(case=c["name"]):
                rs = vector_responder(c["config"])
                v = Verdict.from_json(json.dumps(c["verdict"]))
                a = rs.respond(v)
                w = c["want"]
                self.assertEqual(a.proceed, w["proceed"])
                self.assertEqual(a.step_up, w["step_up"])
                self.assertEqual(round(a.hold * 1000), w["hold_ms"])
                self.assertEqual(a.status, w["status"])
                got: Dict[str, List[str]] = {}
                for k, val in a.headers:
                    got.setdefault(k.lower(), []).append(val)
                self.assertEqual({k: ", ".join(vs) for k, vs in got.items()}, w["headers"])
                self.assertEqual(a.body, w["body"].encode("utf-8"))
                # A mapping is taken as the same verdict.
                self.assertEqual(rs.respond(c["verdict"]), a)
        for c in doc["config_errors"]:
            strict(c, ("name", "config"), c.get("name", "config error"))
            with self.subTest(config_error=c["name"]):
                with self.assertRaises(ValueError):
                    vector_responder(c["config"])
        self.assertGreaterEqual(len(doc["cases"]), 10, "the vectors did not load")
        self.assertTrue(doc["config_errors"], "the vectors did not load")
        self.assertTrue([c for c in doc["cases"] if c["want"]["step_up"]], "no step_up case")
        RAN["respond.json"] = len(doc["cases"]) + len(doc["config_errors"])


def vector_cookie(config: Mapping[str, Any]) -> DeviceCookie:
    strict(config, ("name", "max_age_s"), "cookie config")
    kw: Dict[str, Any] = {}
    if config.get("name"):  # Go's zero value: the default
        kw["name"] = config["name"]
    if config.get("max_age_s"):
        kw["max_age"] = config["max_age_s"]
    return DeviceCookie(**kw)


class DeviceCookieVectors(unittest.TestCase):
    def test_device_cookie(self) -> None:
        doc = read_vectors("device_cookie.json")
        strict(doc, ("about", "set", "clear", "token", "config_errors"), "device_cookie.json")
        for c in doc["set"]:
            strict(c, ("name", "config", "token", "want", "error"), c.get("name", "set"))
            with self.subTest(set=c["name"]):
                dc = vector_cookie(c["config"])
                if c.get("error"):
                    with self.assertRaises(ValueError):
                        dc.set_cookie(c["token"])
                else:
                    self.assertEqual(dc.set_cookie(c["token"]), c["want"])
        for c in doc["clear"]:
            strict(c, ("name", "config", "want"), c.get("name", "clear"))
            with self.subTest(clear=c["name"]):
                self.assertEqual(vector_cookie(c["config"]).clear_cookie(), c["want"])
        for c in doc["token"]:
            strict(c, ("name", "config", "cookie", "want"), c.get("name", "token"))
            with self.subTest(token=c["name"]):
                self.assertEqual(vector_cookie(c["config"]).token(c["cookie"]), c["want"])
        for c in doc["config_errors"]:
            strict(c, ("name", "config"), c.get("name", "config error"))
            with self.subTest(config_error=c["name"]):
                with self.assertRaises(ValueError):
                    vector_cookie(c["config"])
        self.assertTrue(doc["set"] and doc["token"] and doc["config_errors"], "the vectors did not load")
        RAN["device_cookie.json"] = sum(len(doc[k]) for k in ("set", "clear", "token", "config_errors"))


MODES = {"open": FAIL_OPEN, "delay": FAIL_DELAY, "captcha": FAIL_CAPTCHA}
CALL_KEYS = {
    "check": ("flow", "account", "ip", "device_token", "captcha_solved", "password_fingerprint", "destination", "channel"),
    "report": ("flow", "account", "ip", "outcome", "attempt", "device_token", "password_fingerprint", "destination", "channel"),
    "send": ("flow", "destination", "channel", "ip", "account", "device_token", "captcha_solved"),
}


def error_kind(err: Optional[BaseException]) -> str:
    """err named as the vectors name it."""
    if err is None:
        return "none"
    if isinstance(err, Timeout):
        return "timeout"
    if isinstance(err, Unavailable) or (isinstance(err, TollgateError) and err.unavailable):
        return "unavailable"
    if isinstance(err, TollgateError):
        return "refused"
    return "other: %r" % (err,)


class FailModeVectors(unittest.TestCase):
    def test_fail_modes(self) -> None:
        doc = read_vectors("fail_modes.json")
        strict(doc, ("about", "cases"), "fail_modes.json")
        steps = 0
        for c in doc["cases"]:
            with self.subTest(case=c["name"]):
                steps += self._run_case(c)
        self.assertGreaterEqual(steps, 50, "the vectors did not load")
        RAN["fail_modes.json"] = steps

    def _run_case(self, c: Mapping[str, Any]) -> int:
        strict(c, ("name", "client", "server", "steps", "want_request"), c["name"])
        cfg = c.get("client") or {}
        strict(cfg, ("timeout_ms", "fail_open_per_account", "fail_open_per_address"), c["name"] + " client")
        server = c["server"]
        strict(server, ("down", "delay_ms", "status", "headers", "body"), c["name"] + " server")
        stand_in: Optional[StandIn] = None
        if server.get("down"):
            base = closed_port_url()
        else:
            payload = (server.get("body") or "").encode("utf-8")

            def answer(_rec: Any) -> Any:
                return server.get("status", 200), server.get("headers") or {}, payload

            stand_in = StandIn(answer, delay=(server.get("delay_ms") or 0) / 1000.0)
            self.addCleanup(stand_in.close)
            base = stand_in.url
        # A case without timeout_ms runs with 5 s, not the client's 0.25 s
        # default: a stand-in's answer on a loaded machine must not turn into
        # a timeout (CI saw 358 ms once in the TypeScript runner).
        kw: Dict[str, Any] = {"timeout": 5.0}
        if cfg.get("timeout_ms"):
            kw["timeout"] = cfg["timeout_ms"] / 1000.0
        for k in ("fail_open_per_account", "fail_open_per_address"):
            if cfg.get(k):  # Go's zero value: the default
                kw[k] = cfg[k]
        client = Client(base, **kw)
        self.addCleanup(client.close)
        n = 0
        for i, s in enumerate(c["steps"]):
            n += 1
            strict(s, ("call", "mode", "request", "want"), "%s step %d" % (c["name"], i))
            w = s["want"]
            strict(w, ("action", "delay_ms", "retry_after", "reasons", "fallback", "error"), "%s step %d" % (c["name"], i))
            req = s["request"]
            strict(req, CALL_KEYS[s["call"]], "%s step %d request" % (c["name"], i))
            call = {"check": client.check, "report": client.report, "send": client.send}[s["call"]]
            v = call(fail=MODES[s["mode"]], **req)
            where = "%s: step %d (%s %s)" % (c["name"], i, s["call"], s["mode"])
            self.assertEqual(
                (v.action, v.delay_ms, v.retry_after, v.reasons, v.fallback),
                (w["action"], w["delay_ms"], w["retry_after"], w.get("reasons") or [], w["fallback"]),
                where,
            )
            we = w.get("error")
            if we is None:
                self.assertIsNone(v.error, where)
            else:
                strict(we, ("kind", "status", "type", "field"), where + " error")
                self.assertEqual(error_kind(v.error), we["kind"], "%s: %r" % (where, v.error))
                if we.get("status") or we.get("type") or we.get("field"):
                    e = v.error
                    self.assertIsInstance(e, TollgateError, where)
                    assert isinstance(e, TollgateError)
                    if we.get("status"):
                        self.assertEqual(e.status, we["status"], where)
                    if we.get("type"):
                        self.assertEqual(e.type, we["type"], where)
                    if we.get("field"):
                        self.assertEqual(e.field, we["field"], where)
            wr = c.get("want_request")
            if wr is not None:
                strict(wr, ("method", "path", "content_type"), c["name"] + " want_request")
                assert stand_in is not None
                r = stand_in.last()
                self.assertIsNotNone(r, where)
                assert r is not None
                self.assertEqual((r.method, r.path.split("?")[0], r.headers.get("Content-Type")),
                                 (wr["method"], wr["path"], wr["content_type"]), where)
        return n


class WebhookVectors(unittest.TestCase):
    def test_webhooks(self) -> None:
        doc = read_vectors("webhooks.json")
        strict(doc, ("about", "tolerance_seconds", "cases"), "webhooks.json")
        self.assertEqual(doc["tolerance_seconds"], 300)
        n = 0
        for c in doc["cases"]:
            strict(c, ("name", "secret", "headers", "body", "now", "want", "event"), "webhooks case")
            n += 1
            headers: Dict[str, str] = c["headers"]
            # The body as bytes, as a str, and the headers as a dict and as (name, value) pairs: the same answer.
            for body, hs in ((c["body"].encode("utf-8"), headers), (c["body"], list(headers.items()))):
                with self.subTest(c["name"], body=type(body).__name__):
                    try:
                        e = verify_webhook(c["secret"], hs, body, now=c["now"])
                        got = "ok"
                    except WebhookVerificationError as err:
                        got = err.kind
                    self.assertEqual(got, c["want"])
                    if got == "ok":
                        want = c["event"]
                        self.assertEqual(
                            {"id": e.id, "type": e.type, "timestamp": e.timestamp, "tenant": e.tenant,
                             "data": {"flow": e.data.flow, "rule": e.data.rule, "reason": e.data.reason,
                                      "subject": e.data.subject, "ref": e.data.ref, "details": e.data.details}},
                            want)
        self.assertGreaterEqual(n, 40, "the vectors did not load")
        RAN["webhooks.json"] = n


class AccountFoldVectors(unittest.TestCase):
    def test_account_fold(self) -> None:
        """The allowance keys each account as tollgate's NormalizeAccount
        does. The Unicode data is unicodedata's: a vector with a character
        this Python's version does not assign (3.11 has Unicode 14, the
        vectors tollgate's) is skipped, and counted."""
        doc = read_vectors("account_fold.json")
        strict(doc, ("about", "unicode_version", "cases", "chars", "marks"), "account_fold.json")
        pairs: List[List[str]] = []
        for c in doc["cases"]:
            strict(c, ("name", "in", "key"), c.get("name", "case"))
            pairs.append([c["name"], c["in"], c["key"]])
        for name in ("chars", "marks"):
            pairs.extend([name, p[0], p[1]] for p in doc[name])
        ran = skipped = 0
        for name, given, key in pairs:
            if any(unicodedata.category(ch) == "Cn" for ch in given):
                skipped += 1
                continue
            ran += 1
            with self.subTest(name, account=given):
                self.assertEqual(fold_account(given), key)
        self.assertGreaterEqual(ran, 3000, "the vectors did not load")
        self.assertLess(skipped, 100, "%d vectors skipped for Unicode %s" % (skipped, unicodedata.unidata_version))
        RAN["account_fold.json"] = ran


class BreachedVectors(unittest.TestCase):
    def test_breached(self) -> None:
        """The SHA-1 of the password's UTF-8 bytes, its five-digit prefix
        the only part sent, the range matched on its suffix (count 0 is
        padding); through a stand-in serving each case's range."""
        import hashlib

        from tollgate import breached_range_count

        doc = read_vectors("breached.json")
        strict(doc, ("about", "cases"), "breached.json")
        ranges = {c["prefix"]: c["range"].encode("utf-8") for c in doc["cases"]}
        s = StandIn(lambda r: (200, {"Content-Type": "text/plain; charset=utf-8"},
                               ranges.get(r.path.rsplit("/", 1)[-1], b"")))
        self.addCleanup(s.close)
        c = Client(s.url, timeout=5.0)
        self.addCleanup(c.close)
        for case in doc["cases"]:
            strict(case, ("password", "sha1", "prefix", "suffix", "range", "count", "breached"), case["password"])
            with self.subTest(password=case["password"]):
                digest = hashlib.sha1(case["password"].encode("utf-8")).hexdigest().upper()
                self.assertEqual((digest, digest[:5], digest[5:]), (case["sha1"], case["prefix"], case["suffix"]))
                self.assertEqual(breached_range_count(case["range"], case["suffix"]), case["count"])
                self.assertEqual(breached_range_count(case["range"], case["suffix"].lower()), case["count"])
                self.assertEqual(c.breached(case["password"]), case["breached"])
                r = s.last()
                assert r is not None
                self.assertEqual((r.method, r.path, r.body), ("GET", "/v1/breached/" + case["prefix"], b""))
                self.assertNotIn(case["suffix"], repr(vars(r)))
        RAN["breached.json"] = len(doc["cases"])


class VectorFiles(unittest.TestCase):
    def test_every_vector_file_is_read(self) -> None:
        """A vector file that no test here reads fails, so that the three
        clients cannot drift through a file only some of them run."""
        names = sorted(os.path.basename(p) for p in glob.glob(os.path.join(TESTDATA, "*.json")))
        self.assertEqual(names, sorted(VECTOR_FILES), "give a new vector file a test in every client")
