/**
 * The Express middleware (`@tollgate/client/express`) with the real
 * `express` and `passport-local` from npm, in front of a real tollgate
 * ($TOLLGATE_BIN, or one built from this repository) on the memory store
 * and the built-in policy: the answers a login's end users get, the
 * challenge round trip solved as the browser's solver does, Passport's
 * verify callback reported without the app writing it.
 */

import assert from "node:assert/strict";
import { createHash, createHmac } from "node:crypto";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";

import express from "express";
import passport from "passport";
import { Strategy as LocalStrategy } from "passport-local";

import { Client, DeviceCookie, Proxies, Responder, passwordRange } from "../src/index.js";
import { MemoryHolds, attemptOf, headerChallengeNonce, headerChallengeToken, tollgate, type Guard, type GuardOptions } from "../src/express.js";
import { standIn, startTollgate, tollgateBinary, type Tollgate } from "./helpers.js";

let tg: Tollgate | undefined;
let cleanup: () => void = () => undefined;
let client: Client;
const servers: Server[] = [];

const wrong = "Wrong username or password.";
const fpKey = Buffer.from("express-test-fingerprint-key-32-bytes!!!");

before(async () => {
  const bin = tollgateBinary();
  cleanup = bin.cleanup;
  tg = await startTollgate(bin.path);
  client = new Client({ baseURL: tg.base, timeoutMs: 5000 });
});

after(async () => {
  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
  await tg?.stop();
  cleanup();
});

/** The accounts of the test's login. */
const users: Record<string, string> = { bob: "builder-42", ursula: "u-pass-1", pat: "p-pass-1", quinn: "q-pass-1" };

/** Every address X-Forwarded-For may name: the test plays many from loopback. */
const loopback = new Proxies({ trusted: ["127.0.0.0/8", "::1/128"], header: "x-forwarded-for" });

/** What the login handlers saw. */
interface Seen {
  logins: Array<Record<string, unknown>>;
  refused: number;
  /** The step-up codes the guard sent. */
  codes: string[];
}

let apps = 0;

/** A login behind the guard, on 127.0.0.1 and a free port: its base URL, the guard and what it saw. */
async function app(options: Partial<GuardOptions> = {}, parse = true): Promise<{ base: string; guard: Guard; seen: Seen; holds: MemoryHolds }> {
  const seen: Seen = { logins: [], refused: 0, codes: [] };
  const holds = new MemoryHolds();
  const guard = tollgate({
    client, accountField: "username", fingerprintKey: fpKey, proxies: loopback,
    holds, holdKey: Buffer.from("express-test-hold-key-of-32-bytes-or-more"),
    refused: (_req, res) => {
      seen.refused++;
      res.statusCode = 200;
      res.setHeader("content-type", "text/html; charset=utf-8");
      res.end(`<form method="post"><p>${wrong}</p></form>`);
    },
    stepUp: {
      sendCode: (_account, code) => void seen.codes.push(code),
      signIn: (_req, res) => {
        res.statusCode = 303;
        res.setHeader("location", "/home");
        res.end();
      },
    },
    ...options,
  });
  const a = express();
  a.use("/login/step-up", express.urlencoded({ extended: false }));
  a.use(guard.stepUpRoutes());
  const parsers = parse ? [express.urlencoded({ extended: false }), express.json()] : [];
  a.post("/login", ...parsers, guard.before(), async (req, res) => {
    const body = req.body as { username?: string; password?: string; json?: string };
    seen.logins.push({ ...body });
    const ok = typeof body.username === "string" && users[body.username] === body.password;
    const v = await guard.report(req, res, ok ? "success" : "failure");
    if (ok && v.action === "step_up") return attemptOf(req)?.stepUp({ name: body.username });
    if (ok) return res.redirect(303, "/home");
    if (body.json !== undefined) return res.json({ signed_in: false });
    res.status(200).type("html").send(`<form method="post"><p>${wrong}</p><input name="username"><input name="password" type="password"></form>`);
  });
  // Passport: the verify callback wrapped, failures redirected as Passport does.
  const strategy = `guarded-${++apps}`;
  passport.use(strategy, new LocalStrategy({ passReqToCallback: true }, guard.passport<{ name: string }>((username, password, done) => {
    seen.logins.push({ username, password });
    done(null, users[username] === password ? { name: username } : false);
  }, (u) => u.name)));
  a.post("/passport", express.urlencoded({ extended: false }), guard.before(),
    passport.authenticate(strategy, { session: false, successRedirect: "/home", failureRedirect: "/passport?failed=1" }));
  const server = a.listen(0, "127.0.0.1");
  servers.push(server);
  await new Promise<void>((ok) => server.once("listening", () => ok()));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, guard, seen, holds };
}

interface Got {
  status: number;
  headers: Headers;
  body: string;
}

/** Posts a form from ip without following redirects. */
async function post(base: string, ip: string, form: Record<string, string>, extra: Record<string, string> = {}, path = "/login"): Promise<Got> {
  const res = await fetch(base + path, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", accept: "text/html", "x-forwarded-for": ip, ...extra },
    body: new URLSearchParams(form).toString(),
  });
  return { status: res.status, headers: res.headers, body: await res.text() };
}

/** Posts JSON from ip. */
async function postJSON(base: string, ip: string, body: Record<string, string>, extra: Record<string, string> = {}): Promise<Got> {
  const res = await fetch(base + "/login", {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/json", "x-forwarded-for": ip, ...extra },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: await res.text() };
}

/** Fails ten made-up accounts from ip, once each, so that ip_spray asks the next attempt from ip for a CAPTCHA. */
async function spray(base: string, ip: string): Promise<void> {
  for (let i = 1; i <= 10; i++) {
    // A password of its own for each address: one password on many
    // accounts would meet password_spray, from any address.
    const a = await post(base, ip, { username: `user${String(i).padStart(2, "0")}`, password: `Spray-${ip}` });
    assert.equal(a.status, 200, `spray ${i}: ${a.body}`);
  }
}

/** A challenge page's handle, token and difficulty. */
function challengeOf(a: Got): { handle: string; token: string; difficulty: number } {
  const h = /name="tollgate_handle" value="([^"]*)"/.exec(a.body);
  const t = /name="tollgate_token" value="([^"]*)"/.exec(a.body);
  const d = /data-difficulty="(\d+)"/.exec(a.body);
  assert.ok(a.status === 429 && h && t && d, `not a challenge page: ${a.status}\n${a.body.slice(0, 400)}`);
  return { handle: h[1]!, token: t[1]!, difficulty: Number(d[1]) };
}

/** A proof-of-work nonce, found as the browser's solver finds it. */
function solve(token: string, difficulty: number): string {
  const buf = Buffer.alloc(Buffer.byteLength(token) + 8);
  buf.write(token);
  for (let n = 0; n < 2 ** 28; n++) {
    buf.writeUInt32BE(Math.floor(n / 2 ** 32), buf.length - 8);
    buf.writeUInt32BE(n >>> 0, buf.length - 4);
    const h = createHash("sha256").update(buf).digest();
    let bits = difficulty;
    let i = 0;
    for (; bits >= 8 && h[i] === 0; bits -= 8) i++;
    if (bits === 0 || (bits < 8 && h[i]! >> (8 - bits) === 0)) return String(n);
  }
  throw new Error("no nonce found");
}

describe("@tollgate/client/express in front of a real tollgate", () => {
  test("an unknown account gets the same bytes as a known one's wrong password: the form (200), then the same 429", async () => {
    const { base, seen } = await app();
    for (let i = 1; i <= 6; i++) {
      const known = await post(base, `198.51.100.${i}`, { username: "ursula", password: `guess-${i}` });
      const unknown = await post(base, `192.0.2.${i}`, { username: "nobody", password: `guess-${i}` });
      if (i < 6) {
        assert.equal(known.status, 200);
        assert.ok(known.body.includes(wrong));
      } else {
        assert.equal(known.status, 429, known.body);
        assert.equal(known.headers.get("retry-after"), "1");
        assert.equal(known.headers.get("ratelimit"), `"login";r=0;t=1`);
        assert.match(known.headers.get("content-type") ?? "", /^text\/html/);
        assert.ok(known.body.includes("try again in 1 second."), known.body);
      }
      assert.equal(unknown.status, known.status, `attempt ${i}`);
      assert.equal(unknown.body, known.body, `attempt ${i}`);
      assert.equal(unknown.headers.get("retry-after"), known.headers.get("retry-after"));
    }
    assert.equal(seen.logins.length, 10, "the delayed attempts never reach the password check");
  });

  test("a sprayed address meets a challenge; solved, the held form goes on, never echoed into the page", async () => {
    const { base, seen, holds } = await app();
    const ip = "203.0.113.66";
    await spray(base, ip);
    const n = seen.logins.length;
    const page = await post(base, ip, { username: "bob", password: "builder-42" });
    const c = challengeOf(page);
    assert.equal(seen.logins.length, n, "the login ran for a captcha verdict");
    assert.ok(!page.body.includes("builder-42") && !page.body.includes("bob"), "the page holds the submission");
    assert.equal(page.headers.get("retry-after"), null);
    assert.match(page.headers.get("content-security-policy") ?? "", /script-src 'nonce-/);
    assert.ok(page.body.includes("tollgateSolve"), "the page inlines tollgate's solver");
    assert.equal(holds.size, 1);

    const done = await post(base, ip, { tollgate_handle: c.handle, tollgate_token: c.token, tollgate_nonce: solve(c.token, c.difficulty) });
    assert.equal(done.status, 303, done.body);
    // A right password from the address tollgate escalated is answered
    // step_up (address_escalated): the code page first, no device cookie.
    assert.equal(done.headers.get("location"), "/login/step-up");
    const waiting = done.headers.getSetCookie().find((x) => x.startsWith("__Host-tollgate-step-up=")) ?? "";
    assert.ok(!done.headers.getSetCookie().some((x) => x.startsWith("__Host-tollgate-device=")), "no device cookie before the second factor");
    const passed = await post(base, ip, { code: seen.codes.at(-1) ?? "" }, { cookie: waiting.split(";")[0] ?? "" }, "/login/step-up");
    assert.equal(passed.status, 303, passed.body);
    assert.equal(passed.headers.get("location"), "/home");
    assert.ok(passed.headers.getSetCookie().some((x) => /^__Host-tollgate-device=[^;]+; Path=\/; Max-Age=7776000; HttpOnly; Secure; SameSite=Lax$/.test(x)), "the device cookie once it passed");
    assert.deepEqual(seen.logins.at(-1), { username: "bob", password: "builder-42" }, "the login saw bob's own form");
    assert.equal(holds.size, 0);

    // The same post again runs nothing: the hold is taken, the solution spent.
    const again = await post(base, ip, { tollgate_handle: c.handle, tollgate_token: c.token, tollgate_nonce: "1" });
    assert.equal(again.status, 303);
    assert.equal(again.headers.get("location"), "/login");
    assert.equal(seen.logins.length, n + 1);
  });

  test("a wrong solution gets a fresh challenge for the same form, never the login", async () => {
    const { base, seen } = await app();
    const ip = "203.0.113.67";
    await spray(base, ip);
    const c = challengeOf(await post(base, ip, { username: "bob", password: "builder-42" }));
    const n = seen.logins.length;
    const fresh = challengeOf(await post(base, ip, { tollgate_handle: c.handle, tollgate_token: c.token, tollgate_nonce: "0" === solve(c.token, c.difficulty) ? "1" : "0" }));
    assert.notEqual(fresh.handle, c.handle);
    assert.equal(seen.logins.length, n);
    const done = await post(base, ip, { tollgate_handle: fresh.handle, tollgate_token: fresh.token, tollgate_nonce: solve(fresh.token, fresh.difficulty) });
    assert.equal(done.status, 303);
    assert.equal(seen.logins.at(-1)?.["password"], "builder-42");
  });

  test("JSON gets problem documents: the challenge, then the request again with the solution's header fields", async () => {
    const { base, seen } = await app();
    const ip = "203.0.113.70";
    await spray(base, ip);
    const body = { username: "bob", password: "builder-42", json: "1" };
    const a = await postJSON(base, ip, body);
    assert.equal(a.status, 429);
    assert.equal(a.headers.get("content-type"), "application/problem+json");
    const doc = JSON.parse(a.body) as { challenge: { token: string; kind: string; difficulty: number } };
    assert.equal(doc.challenge.kind, "pow");
    const n = seen.logins.length;
    const bad = await postJSON(base, ip, body, { [headerChallengeToken]: doc.challenge.token, [headerChallengeNonce]: "x" });
    assert.equal(bad.status, 429);
    assert.equal(seen.logins.length, n);
    const ok = await postJSON(base, ip, body, { [headerChallengeToken]: doc.challenge.token, [headerChallengeNonce]: solve(doc.challenge.token, doc.challenge.difficulty) });
    // The right password from the escalated address: step_up, as a problem document.
    assert.equal(ok.status, 403, ok.body);
    assert.deepEqual((JSON.parse(ok.body) as { step_up?: unknown }).step_up, { path: "/login/step-up", field: "code" });
    assert.equal(seen.logins.at(-1)?.["password"], "builder-42");

    for (let i = 1; i <= 5; i++) await postJSON(base, `198.51.100.${20 + i}`, { username: "carol", password: `g${i}`, json: "1" });
    const d = await postJSON(base, "198.51.100.29", { username: "carol", password: "g9", json: "1" });
    assert.equal(d.status, 429);
    assert.equal(d.headers.get("retry-after"), "1");
    assert.equal(d.headers.get("content-type"), "application/problem+json");
    assert.match(d.body, /Try again in 1 second\./);
  });

  test("a forged X-Forwarded-For from a peer that is no trusted proxy does not take a spray past ip_spray", async () => {
    const { base } = await app({ proxies: new Proxies() });
    let challenged = 0;
    for (let i = 1; i <= 12; i++) {
      const a = await post(base, `198.18.0.${i}`, { username: `forged${i}`, password: "Forged-2026" });
      if (a.status === 429 && a.body.includes("tollgate_handle")) challenged++;
    }
    assert.equal(challenged, 2, "the 11th and 12th accounts, counted under the peer's address");
  });

  test("with the fingerprint a repeated wrong password is one guess, and tollgate never gets the password", async () => {
    const { base } = await app();
    for (let i = 1; i <= 8; i++) {
      const a = await post(base, `198.51.100.${40 + i}`, { username: "dave", password: "the-same-old-one" });
      assert.equal(a.status, 200, `repeat ${i}: the same wrong password is counted once (same_password_window)`);
    }
    const { base: noFP } = await app({ fingerprintKey: undefined });
    const got: number[] = [];
    for (let i = 1; i <= 6; i++) got.push((await post(noFP, `198.51.100.${50 + i}`, { username: "erin", password: "the-same-old-one" })).status);
    assert.deepEqual(got, [200, 200, 200, 200, 200, 429], "without a fingerprint every repeat counts");

    const recorder = await standIn((_req, res) => {
      res.setHeader("content-type", "application/json");
      res.end(`{"action":"proceed","delay_ms":0,"retry_after":0,"reasons":[],"attempt":"a1","device_token":""}`);
    });
    try {
      const { base: rec } = await app({ client: new Client({ baseURL: recorder.base, timeoutMs: 5000 }) });
      await post(rec, "198.51.100.60", { username: "bob", password: "Summer2026!" });
      const want = createHmac("sha256", fpKey).update("Summer2026!").digest("hex");
      const posts = recorder.requests.filter((r) => r.method === "POST");
      assert.equal(posts.length, 2);
      // The breached check sends five hex digits of the password's SHA-1, nothing more.
      assert.deepEqual(recorder.requests.filter((r) => r.method === "GET").map((r) => r.path), ["/v1/breached/" + passwordRange("Summer2026!").prefix]);
      for (const r of posts) {
        assert.ok(!r.body.includes("Summer2026"), `tollgate got the password: ${r.body}`);
        assert.equal((JSON.parse(r.body) as { password_fingerprint?: string }).password_fingerprint, want);
      }
    } finally {
      await recorder.close();
    }
  });

  test("an account tollgate will not count is answered by refused, and its password is never checked", async () => {
    const { base, seen } = await app();
    const a = await post(base, "198.51.100.70", { username: "a".repeat(300), password: "x" });
    assert.equal(a.status, 200);
    assert.ok(a.body.includes(wrong));
    assert.equal(seen.refused, 1);
    assert.equal(seen.logins.length, 0);
  });

  test("without a body parser the middleware reads the form itself; unreadable bodies are a 400 with nothing checked", async () => {
    const { base, seen } = await app({}, false);
    const a = await post(base, "198.51.100.80", { username: "bob", password: "builder-42" });
    assert.equal(a.status, 303, a.body);
    assert.equal(seen.logins.at(-1)?.["username"], "bob");
    const bad = await fetch(base + "/login", { method: "POST", headers: { "content-type": "application/json" }, body: "{\"username\":" });
    assert.equal(bad.status, 400);
    assert.equal(bad.headers.get("content-type"), "application/problem+json");
    const big = await post(base, "198.51.100.81", { username: "a".repeat(70 << 10) });
    assert.equal(big.status, 400);
  });

  test("Passport: the wrapped verify callback reports; a wrong password is Passport's redirect, the same for an unknown account, then 429", async () => {
    const { base } = await app();
    const got: string[] = [];
    for (let i = 1; i <= 6; i++) {
      const known = await post(base, `198.51.100.${100 + i}`, { username: "pat", password: `p-${i}` }, {}, "/passport");
      const unknown = await post(base, `192.0.2.${100 + i}`, { username: "nobody-else", password: `p-${i}` }, {}, "/passport");
      assert.equal(unknown.status, known.status);
      assert.equal(unknown.body, known.body);
      assert.equal(unknown.headers.get("location"), known.headers.get("location"));
      got.push(`${known.status} ${known.headers.get("location") ?? known.headers.get("retry-after")}`);
    }
    assert.deepEqual(got, [...Array(5).fill("302 /passport?failed=1"), "429 1"], "counted by tollgate: five failures, then a delay");
    const ok = await post(base, "203.0.113.90", { username: "pat", password: "p-pass-1" }, {}, "/passport");
    assert.equal(ok.status, 429, "pat's account is delayed for a browser without his cookie");
  });

  test("Passport: a success sets the device cookie, and with it the owner goes ahead while his account is delayed", async () => {
    const { base } = await app();
    const ok = await post(base, "203.0.113.91", { username: "quinn", password: "q-pass-1" }, {}, "/passport");
    assert.equal(ok.status, 302);
    assert.equal(ok.headers.get("location"), "/home");
    const cookie = new DeviceCookie().token(ok.headers.get("set-cookie")?.split(";")[0]);
    assert.ok(cookie !== "", "a device cookie");
    for (let i = 1; i <= 6; i++) await post(base, `198.51.100.${120 + i}`, { username: "quinn", password: `q-${i}` }, {}, "/passport");
    const stranger = await post(base, "203.0.113.92", { username: "quinn", password: "q-pass-1" }, {}, "/passport");
    assert.equal(stranger.status, 429);
    const owner = await post(base, "203.0.113.93", { username: "quinn", password: "q-pass-1" }, { cookie: `__Host-tollgate-device=${cookie}` }, "/passport");
    assert.equal(owner.status, 302, owner.body);
    assert.equal(owner.headers.get("location"), "/home");
  });

  test("deferDeviceCookie leaves the cookie to the route; the attempt holds the token", async () => {
    let token = "";
    const guard = tollgate({ client, accountField: "username", proxies: loopback, deferDeviceCookie: true });
    const a = express();
    a.post("/login", express.urlencoded({ extended: false }), guard.before(), async (req, res) => {
      await guard.report(req, res, "success");
      token = attemptOf(req)?.deviceToken ?? "";
      res.redirect(303, "/otp");
    });
    const server = a.listen(0, "127.0.0.1");
    servers.push(server);
    await new Promise<void>((ok) => server.once("listening", () => ok()));
    const got = await post(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, "203.0.113.95", { username: "frank", password: "x" });
    assert.equal(got.status, 303);
    assert.equal(got.headers.get("set-cookie"), null);
    assert.ok(token !== "", "the success report's token, for the route to set later");
  });

  test("pages: the delay page is the app's own", async () => {
    const pages = new Responder({ delay: (s) => ({ headers: { "content-type": "text/html" }, body: `<p>wait ${s}</p>` }) });
    const { base } = await app({ pages });
    let last: Got | undefined;
    for (let i = 1; i <= 6; i++) last = await post(base, `198.51.100.${150 + i}`, { username: "gina", password: `g${i}` });
    assert.equal(last?.status, 429);
    assert.equal(last?.body, "<p>wait 1</p>");
  });
});

describe("@tollgate/client/express, any body", () => {
  test("a fuzz of bodies, content types and challenge fields: 400, an answer or the route, never a 500 or a crash", async () => {
    const stub = await standIn((req, res, _body) => {
      res.setHeader("content-type", "application/json");
      if (req.url === "/v1/challenge/verify") res.end(`{"solved":false,"reason":"invalid"}`);
      else if (req.url === "/v1/challenge") res.end(`{"token":"t","kind":"pow","difficulty":1,"expires_at":"2030-01-01T00:00:00Z","solver_url":"/v1/challenge/solver.js"}`);
      else if (req.url === "/v1/challenge/solver.js") res.end("/* solver */");
      else res.end(`{"action":"${req.url === "/v1/check" && _body.includes("captcha") ? "captcha" : "proceed"}","delay_ms":0,"retry_after":0,"reasons":[],"attempt":"a","device_token":""}`);
    });
    try {
      const { base } = await app({ client: new Client({ baseURL: stub.base, timeoutMs: 5000 }) }, false);
      // A seeded generator, so that a failure reproduces.
      let seed = 0x2545f491;
      const rnd = (n: number): number => ((seed = (seed * 1103515245 + 12345) >>> 0) % n);
      const pieces = ["username=", "password=", "tollgate_handle=", "tollgate_token=", "tollgate_nonce=", "&", "%", "%zz", "=", "{", "}", "\"", ":", "[", "]", "\u0000", "\xff", "captcha", "a".repeat(50), "é", "😀"];
      const types = ["application/x-www-form-urlencoded", "application/json", "text/plain", "application/problem+json", "multipart/form-data; boundary=x", "", "application/x-www-form-urlencoded; charset=latin1"];
      for (let i = 0; i < 300; i++) {
        let body = "";
        for (let j = rnd(12); j > 0; j--) body += pieces[rnd(pieces.length)];
        const headers: Record<string, string> = { "x-forwarded-for": "198.51.100.200" };
        const ct = types[rnd(types.length)]!;
        if (ct !== "") headers["content-type"] = ct;
        if (rnd(4) === 0) headers[headerChallengeToken] = body.slice(0, 10).replace(/[^\x21-\x7e]/g, "x");
        const res = await fetch(base + "/login", { method: "POST", redirect: "manual", headers, body });
        await res.arrayBuffer();
        assert.ok([200, 303, 400, 429].includes(res.status), `status ${res.status} for ${JSON.stringify([ct, body])}`);
      }
    } finally {
      await stub.close();
    }
  });
});

describe("MemoryHolds", () => {
  test("stays within its bounds and frees what expired", () => {
    let now = 0;
    const m = new MemoryHolds({ maxBytes: 100, maxHolds: 3, now: () => now });
    assert.equal(m.put("a", new Uint8Array(40), 60_000), true);
    assert.equal(m.put("b", new Uint8Array(40), 60_000), true);
    assert.equal(m.put("c", new Uint8Array(40), 60_000), false, "over the bytes");
    assert.equal(m.put("c", new Uint8Array(20), 60_000), true);
    assert.equal(m.put("d", new Uint8Array(1), 60_000), false, "over the count");
    now = 60_000;
    assert.equal(m.get("a"), undefined);
    assert.equal(m.put("e", new Uint8Array(90), 60_000), true);
    assert.equal(m.size, 1);
    m.delete("e");
    assert.equal(m.size, 0);
  });
});
