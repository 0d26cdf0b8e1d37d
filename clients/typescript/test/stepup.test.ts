/**
 * The Express middleware's breached check and second factor against a
 * stand-in tollgate that answers as the contract says (step_up for a
 * success reported breached, a ticket, the step_up flow's check and
 * reports), with the real express and passport-local: no session before
 * the second factor passes, a wrong code reported and throttled, a
 * breached check that fails never failing the login.
 */

import assert from "node:assert/strict";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, test } from "node:test";

import express from "express";
import passport from "passport";
import { Strategy as LocalStrategy } from "passport-local";

import { Client, Proxies, passwordRange } from "../src/index.js";
import { MemoryStepUps, attemptOf, codeFactor, stepUpCookieName, tollgate, type StepUpDone, type StepUpOptions } from "../src/express.js";
import { standIn, type StandIn } from "./helpers.js";

const breachedPassword = "password"; // in the stand-in's corpus (clients/testdata/breached.json's range)
const cleanPassword = "tollgate-never-breached-8f3a";
const users: Record<string, string> = { alice: breachedPassword, bob: cleanPassword };
const loopback = new Proxies({ trusted: ["127.0.0.0/8", "::1/128"], header: "x-forwarded-for" });

/** How the stand-in answers the range query. */
type RangeMode = "corpus" | "down" | "silent";

interface Tollgate {
  srv: StandIn;
  /** The JSON bodies of the check and report calls, in order. */
  calls: () => Array<{ path: string; body: Record<string, unknown> }>;
  /** The range queries it got. */
  ranges: () => string[];
  setRange(m: RangeMode): void;
  /** step_up_failed reports past which the step_up flow delays. */
  failLimit: number;
  /** Makes every login check answer a delay. */
  delayLogins: boolean;
}

const verdict = (action: string, extra: Record<string, unknown> = {}): string =>
  JSON.stringify({ action, delay_ms: 0, retry_after: 0, reasons: [], attempt: "", device_token: "", ...extra });

/**
 * A stand-in tollgate: a login success reported breached is answered
 * step_up with ticket.1 unless its device token is the one a step-up
 * returned (the owner's known device); step_up_passed with ticket.1 gives
 * dev.stepped; step_up_failed is counted, and past failLimit the step_up
 * flow's check and reports answer a delay.
 */
async function standInTollgate(): Promise<Tollgate> {
  const { range } = { range: new Map<string, string>() };
  // The range of "password"'s prefix holds its suffix (count 9), and padding.
  const pw = passwordRange(breachedPassword);
  range.set(pw.prefix, `0000000000000000000000000000000000A:0\r\n${pw.suffix}:9\r\nFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF:3\r\n`);
  let mode: RangeMode = "corpus";
  let failures = 0;
  const t: Partial<Tollgate> = { failLimit: 2, delayLogins: false };
  const srv = await standIn((req: IncomingMessage, res: ServerResponse, raw: string) => {
    const url = req.url ?? "";
    if (url.startsWith("/v1/breached/")) {
      if (mode === "silent") return; // never answers
      const body = range.get(url.slice("/v1/breached/".length));
      if (mode === "down" || body === undefined) {
        res.writeHead(mode === "down" ? 503 : 404, { "content-type": "application/problem+json" });
        res.end("{}");
        return;
      }
      res.writeHead(200, { "content-type": "text/plain; charset=utf-8" });
      res.end(body);
      return;
    }
    const b = JSON.parse(raw) as Record<string, string | boolean | undefined>;
    res.writeHead(200, { "content-type": "application/json" });
    const throttled = failures >= (t.failLimit ?? 2);
    if (url === "/v1/check") {
      if (b["flow"] === "step_up") return res.end(throttled ? verdict("delay", { delay_ms: 4000, retry_after: 4 }) : verdict("proceed"));
      if (t.delayLogins) return res.end(verdict("delay", { delay_ms: 2000, retry_after: 2 }));
      return res.end(verdict("proceed", { attempt: "at.1" }));
    }
    if (b["flow"] === "step_up") {
      if (b["outcome"] === "step_up_passed" && b["attempt"] === "ticket.1") return res.end(verdict("proceed", { device_token: "dev.stepped" }));
      failures++;
      return res.end(failures >= (t.failLimit ?? 2) ? verdict("delay", { delay_ms: 4000, retry_after: 4 }) : verdict("proceed"));
    }
    if (b["outcome"] === "success" && b["breached"] === true && b["device_token"] !== "dev.stepped") {
      return res.end(verdict("step_up", { attempt: "ticket.1", reasons: ["breached_password"] }));
    }
    return res.end(verdict("proceed", { device_token: b["outcome"] === "success" ? "dev.login" : "" }));
  });
  return Object.assign(t, {
    srv,
    calls: () => srv.requests.filter((r) => r.method === "POST").map((r) => ({ path: r.path, body: JSON.parse(r.body) as Record<string, unknown> })),
    ranges: () => srv.requests.filter((r) => r.method === "GET").map((r) => r.path),
    setRange: (m: RangeMode) => void (mode = m),
  }) as Tollgate;
}

const servers: Server[] = [];
const standIns: StandIn[] = [];
after(async () => {
  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
  for (const s of standIns) await s.close();
});

interface App {
  base: string;
  tg: Tollgate;
  /** The sessions the app created. */
  sessions: Array<{ account: string; via: string }>;
  /** The codes the sender sent. */
  sent: Array<{ account: string; code: string }>;
}

async function listen(a: express.Express): Promise<string> {
  const server = a.listen(0, "127.0.0.1");
  servers.push(server);
  await new Promise<void>((ok) => server.once("listening", ok));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A login route behind the guard, with the default code factor whose sender records the codes. */
async function plainApp(stepUp: Partial<StepUpOptions> = {}, breachedTimeoutMs = 5000): Promise<App> {
  const tg = await standInTollgate();
  standIns.push(tg.srv);
  const sessions: App["sessions"] = [];
  const sent: App["sent"] = [];
  const client = new Client({ baseURL: tg.srv.base, timeoutMs: 5000, breachedTimeoutMs });
  const guard = tollgate({
    client, accountField: "username", proxies: loopback,
    stepUp: {
      sendCode: (account, code) => void sent.push({ account, code }),
      signIn: (_req, res, d: StepUpDone) => {
        sessions.push({ account: (d.user as { name: string }).name, via: "step-up" });
        res.statusCode = 303;
        res.setHeader("location", "/home");
        res.end();
      },
      ...stepUp,
    },
  });
  const a = express();
  const form = express.urlencoded({ extended: false });
  a.use(form, guard.stepUpRoutes());
  a.post("/login", form, guard.before(), async (req, res) => {
    const { username, password } = req.body as { username?: string; password?: string };
    const ok = username !== undefined && users[username] === password;
    const attempt = attemptOf(req);
    if (attempt === undefined) throw new Error("no attempt");
    const v = await attempt.report(ok ? "success" : "failure");
    if (!ok) return void res.status(200).send("wrong");
    if (v.action === "step_up") return attempt.stepUp({ name: username });
    sessions.push({ account: username, via: "password" });
    res.redirect(303, "/home");
  });
  return { base: await listen(a), tg, sessions, sent };
}

/** A browser of one address: a cookie jar, no redirects followed. */
function browser(base: string, ip: string) {
  const jar = new Map<string, string>();
  const go = async (method: string, path: string, form?: Record<string, string>): Promise<Response> => {
    const headers: Record<string, string> = { "x-forwarded-for": ip };
    if (jar.size > 0) headers["cookie"] = [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
    const init: RequestInit = { method, headers, redirect: "manual" };
    if (form !== undefined) {
      headers["content-type"] = "application/x-www-form-urlencoded";
      init.body = new URLSearchParams(form).toString();
    }
    const res = await fetch(base + path, init);
    for (const c of res.headers.getSetCookie()) {
      const [pair = "", ...attrs] = c.split(";");
      const eq = pair.indexOf("=");
      const name = pair.slice(0, eq).trim();
      if (attrs.some((x) => /^\s*max-age=0\s*$/i.test(x)) || pair.slice(eq + 1) === "") jar.delete(name);
      else jar.set(name, pair.slice(eq + 1));
    }
    return res;
  };
  return { jar, go };
}

const login = (b: ReturnType<typeof browser>, username: string, password: string) => b.go("POST", "/login", { username, password });

test("AStolenBreachedPasswordGetsNoSessionWithoutTheSecondFactor: the code page, not a session; the code signs in once", async () => {
  const app = await plainApp();
  const b = browser(app.base, "198.51.100.7");
  const r = await login(b, "alice", breachedPassword);
  assert.equal(r.status, 303);
  assert.equal(r.headers.get("location"), "/login/step-up");
  assert.deepEqual(app.sessions, [], "no session before the second factor");
  assert.ok(b.jar.has(stepUpCookieName), "the waiting login's cookie");
  const cookie = r.headers.getSetCookie().find((c) => c.startsWith(stepUpCookieName)) ?? "";
  assert.match(cookie, /; HttpOnly/);
  assert.match(cookie, /; Secure/);
  assert.ok(!cookie.includes("alice") && !cookie.includes(app.sent[0]?.code ?? "x"), "the cookie holds neither the account nor the code");
  assert.equal(app.sent.length, 1);
  assert.equal(app.sent[0]?.account, "alice");
  assert.match(app.sent[0]?.code ?? "", /^[0-9]{6}$/);
  const report = app.tg.calls().find((c) => c.body["flow"] === "login" && c.body["outcome"] === "success");
  assert.equal(report?.body["breached"], true, "the report says breached");
  assert.deepEqual(app.tg.ranges(), ["/v1/breached/" + passwordRange(breachedPassword).prefix], "only the prefix was asked");

  const page = await b.go("GET", "/login/step-up");
  assert.equal(page.status, 200);
  const html = await page.text();
  assert.match(html, /name="code"/);
  assert.ok(!html.includes("alice"), "the page does not echo the account");

  // Someone else's browser with the password but not the cookie gets nothing.
  const thief = browser(app.base, "203.0.113.66");
  const stolen = await thief.go("POST", "/login/step-up", { code: app.sent[0]?.code ?? "" });
  assert.equal(stolen.status, 303);
  assert.equal(stolen.headers.get("location"), "/login");
  const forged = browser(app.base, "203.0.113.66");
  forged.jar.set(stepUpCookieName, (b.jar.get(stepUpCookieName) ?? "").replace(/\..*/, ".AAAA"));
  assert.equal((await forged.go("POST", "/login/step-up", { code: app.sent[0]?.code ?? "" })).headers.get("location"), "/login", "a forged signature");

  const cookieBefore = b.jar.get(stepUpCookieName) ?? "";
  const ok = await b.go("POST", "/login/step-up", { code: app.sent[0]?.code ?? "" });
  assert.equal(ok.status, 303);
  assert.equal(ok.headers.get("location"), "/home");
  assert.deepEqual(app.sessions, [{ account: "alice", via: "step-up" }]);
  assert.equal(b.jar.get("__Host-tollgate-device"), "dev.stepped", "the device cookie from the step_up_passed report");
  assert.equal(b.jar.has(stepUpCookieName), false, "the waiting login's cookie is cleared");
  const su = app.tg.calls().filter((c) => c.body["flow"] === "step_up");
  assert.deepEqual(su.map((c) => [c.path, c.body["outcome"], c.body["attempt"]]), [
    ["/v1/check", undefined, undefined],
    ["/v1/report", "step_up_passed", "ticket.1"],
  ]);
  assert.equal(su[0]?.body["account"], "alice");

  // Single-use: the same cookie and code again sign no one in.
  b.jar.set(stepUpCookieName, cookieBefore);
  const again = await b.go("POST", "/login/step-up", { code: app.sent[0]?.code ?? "" });
  assert.equal(again.headers.get("location"), "/login");
  assert.equal(app.sessions.length, 1);
});

test("TheOwnersKnownDeviceSignsInWithoutStepUp: the device cookie of an earlier stepped-up login goes straight in", async () => {
  const app = await plainApp();
  const b = browser(app.base, "198.51.100.8");
  await login(b, "alice", breachedPassword);
  await b.go("POST", "/login/step-up", { code: app.sent[0]?.code ?? "" });
  assert.equal(b.jar.get("__Host-tollgate-device"), "dev.stepped");
  const r = await login(b, "alice", breachedPassword);
  assert.equal(r.headers.get("location"), "/home");
  assert.deepEqual(app.sessions.map((s) => s.via), ["step-up", "password"]);
  assert.equal(app.sent.length, 1, "no second code");
  const last = app.tg.calls().filter((c) => c.body["flow"] === "login").slice(-2);
  assert.deepEqual(last.map((c) => c.body["device_token"]), ["dev.stepped", "dev.stepped"], "check and report carry the cookie's token");
});

test("AWrongSecondFactorCodeIsReportedAndThrottled: each wrong code is a step_up_failed; then 429 with Retry-After, and the right code waits too", async () => {
  const app = await plainApp();
  const b = browser(app.base, "198.51.100.9");
  await login(b, "alice", breachedPassword);
  const code = app.sent[0]?.code ?? "";
  const wrong = code === "000000" ? "000001" : "000000";
  const r1 = await b.go("POST", "/login/step-up", { code: wrong });
  assert.equal(r1.status, 200);
  assert.match(await r1.text(), /not right/);
  const r2 = await b.go("POST", "/login/step-up", { code: wrong });
  assert.equal(r2.status, 429, "the failed report's delay");
  assert.equal(r2.headers.get("retry-after"), "4");
  const r3 = await b.go("POST", "/login/step-up", { code });
  assert.equal(r3.status, 429, "the step_up check's delay comes before the code");
  assert.equal(r3.headers.get("retry-after"), "4");
  assert.deepEqual(app.sessions, [], "no session");
  const reports = app.tg.calls().filter((c) => c.path === "/v1/report" && c.body["flow"] === "step_up");
  assert.deepEqual(reports.map((c) => c.body["outcome"]), ["step_up_failed", "step_up_failed"]);
  // Once tollgate lets it through again, the right code still works.
  app.tg.failLimit = 100;
  const r4 = await b.go("POST", "/login/step-up", { code });
  assert.equal(r4.headers.get("location"), "/home");
  assert.equal(app.sessions.length, 1);
});

test("a waiting login is dropped after maxTries wrong codes", async () => {
  const app = await plainApp({ maxTries: 3 });
  app.tg.failLimit = 100;
  const b = browser(app.base, "198.51.100.10");
  await login(b, "alice", breachedPassword);
  const code = app.sent[0]?.code ?? "";
  const wrong = code === "000000" ? "000001" : "000000";
  assert.equal((await b.go("POST", "/login/step-up", { code: wrong })).status, 200);
  assert.equal((await b.go("POST", "/login/step-up", { code: "" })).status, 200);
  assert.equal((await b.go("POST", "/login/step-up", { code: wrong })).status, 403);
  const r = await b.go("POST", "/login/step-up", { code });
  assert.equal(r.headers.get("location"), "/login", "the right code is no use any more");
  assert.deepEqual(app.sessions, []);
});

test("ABreachedCheckErrorNeverFailsTheLogin: a corpus that is down or silent, and the login goes on, reported not breached", async () => {
  for (const mode of ["down", "silent"] as const) {
    const app = await plainApp({}, 100);
    app.tg.setRange(mode);
    const b = browser(app.base, "198.51.100.11");
    const r = await login(b, "alice", breachedPassword);
    assert.equal(r.headers.get("location"), "/home", mode);
    assert.deepEqual(app.sessions, [{ account: "alice", via: "password" }], mode);
    const report = app.tg.calls().find((c) => c.path === "/v1/report");
    assert.equal(report?.body["breached"], undefined, `${mode}: not known to be breached`);
    assert.equal(app.tg.ranges().length, 1, mode);
  }
});

test("failures are checked too (the stuffing signal); a delayed login checks nothing", async () => {
  const app = await plainApp();
  const b = browser(app.base, "198.51.100.12");
  await login(b, "bob", breachedPassword); // a wrong password that is breached
  await login(b, "bob", cleanPassword);
  const reports = app.tg.calls().filter((c) => c.path === "/v1/report");
  assert.deepEqual(reports.map((c) => [c.body["outcome"], c.body["breached"]]), [["failure", true], ["success", undefined]]);
  assert.deepEqual(app.sessions, [{ account: "bob", via: "password" }], "a clean password signs in at once");
  const n = app.tg.ranges().length;
  app.tg.delayLogins = true;
  assert.equal((await login(b, "alice", breachedPassword)).status, 429);
  assert.equal(app.tg.ranges().length, n, "no password was checked, so no range asked");
});

test("a step_up without a second factor configured: no session, a page saying so", async () => {
  const tg = await standInTollgate();
  standIns.push(tg.srv);
  const warnings: string[] = [];
  const guard = tollgate({ client: new Client({ baseURL: tg.srv.base, timeoutMs: 5000 }), accountField: "username", proxies: loopback, warn: (l) => void warnings.push(l) });
  const a = express();
  let sessions = 0;
  a.post("/login", express.urlencoded({ extended: false }), guard.before(), async (req, res) => {
    const attempt = attemptOf(req);
    const v = await attempt?.report("success");
    if (v?.action === "step_up") return attempt?.stepUp({ name: "alice" });
    sessions++;
    res.end("in");
  });
  const b = browser(await listen(a), "198.51.100.13");
  const r = await login(b, "alice", breachedPassword);
  assert.equal(r.status, 503);
  assert.equal(sessions, 0);
  assert.ok(warnings.some((w) => w.includes("no second factor")), "the operator is told");
  assert.ok(!warnings.join("\n").includes("alice") && !warnings.join("\n").includes(breachedPassword), "no identifier in the log");
});

test("stepUp refuses what it cannot use", () => {
  const client = new Client({ baseURL: "http://127.0.0.1:1" });
  assert.throws(() => tollgate({ client, accountField: "u", stepUp: { store: new MemoryStepUps() } }), /stepUp.key/);
  assert.throws(() => tollgate({ client, accountField: "u", stepUp: { key: Buffer.alloc(8) } }), /32 bytes/);
  assert.throws(() => tollgate({ client, accountField: "u", stepUp: { path: "login" } }), /path/);
  assert.throws(() => tollgate({ client, accountField: "u", stepUp: { factor: {} as never } }), /factor/);
});

test("MemoryStepUps: bounded, expired records gone", async () => {
  let now = 1_000;
  const m = new MemoryStepUps({ max: 2, now: () => now });
  const r = { account: "", ip: "", device: "", ticket: "", ref: "", reasons: [], user: undefined, expiresAt: 0, tries: 0, factor: {} };
  await m.put("a", r, 100);
  await m.put("b", r, 50);
  await m.put("c", r, 200); // full: b, closest to expiry, gives way
  assert.equal(m.size, 2);
  assert.ok((await m.get("a")) !== undefined);
  assert.equal(await m.get("b"), undefined);
  now += 150;
  assert.equal(await m.get("a"), undefined, "expired");
  assert.ok((await m.get("c")) !== undefined);
});

test("AStolenBreachedPasswordGetsNoSessionWithoutTheSecondFactor, with Passport: no req.user until the code, then logIn and successRedirect", async () => {
  const tg = await standInTollgate();
  standIns.push(tg.srv);
  const sent: string[] = [];
  const guard = tollgate({
    client: new Client({ baseURL: tg.srv.base, timeoutMs: 5000 }), accountField: "username", proxies: loopback,
    stepUp: { sendCode: (_a, code) => void sent.push(code), successRedirect: "/home" },
  });
  const pp = new passport.Passport();
  pp.use(new LocalStrategy({ passReqToCallback: true }, guard.passport(async (u: string, p: string) => (users[u] === p ? { name: u } : false))));
  pp.serializeUser((u: Express.User, done) => done(null, (u as { name: string }).name));
  const stored: Array<Record<string, unknown>> = [];
  const a = express();
  // A stand-in for express-session: enough for req.logIn.
  a.use((req, _res, next) => {
    const session: Record<string, unknown> = {
      regenerate: (cb: (e?: unknown) => void) => cb(),
      save: (cb: (e?: unknown) => void) => (stored.push({ ...session }), cb()),
    };
    (req as unknown as { session: unknown }).session = session;
    next();
  });
  a.use(pp.initialize());
  const form = express.urlencoded({ extended: false });
  a.use(form, guard.stepUpRoutes());
  let successes = 0;
  a.post("/login", form, guard.before(), pp.authenticate("local", { failureRedirect: "/login?failed=1" }), (_req, res) => {
    successes++;
    res.redirect(303, "/home");
  });
  const base = await listen(a);
  const b = browser(base, "198.51.100.14");
  const r = await login(b, "alice", breachedPassword);
  assert.equal(r.headers.get("location"), "/login/step-up");
  assert.equal(successes, 0);
  assert.deepEqual(stored, [], "Passport stored no user");
  const ok = await b.go("POST", "/login/step-up", { code: sent[0] ?? "" });
  assert.equal(ok.headers.get("location"), "/home");
  assert.deepEqual(stored.map((s) => s["passport"]), [{ user: "alice" }], "logged in by the code page");
  const clean = browser(base, "198.51.100.15");
  const c = await login(clean, "bob", cleanPassword);
  assert.equal(c.headers.get("location"), "/home");
  assert.equal(successes, 1, "a clean password goes through Passport as before");
});

test("codeFactor: a code passes once, in constant time over hashes, and not after it expires", async () => {
  let now = 0;
  let sent = "";
  const f = codeFactor({ sendCode: (_a, code) => void (sent = code), now: () => now, ttlMs: 1000 });
  const r = { account: "a", ip: "", device: "", ticket: "", ref: "", reasons: [], user: undefined, expiresAt: 0, tries: 0, factor: {} as Record<string, unknown> };
  await f.start(r);
  assert.match(sent, /^[0-9]{6}$/);
  assert.ok(!JSON.stringify(r).includes(sent), "the record keeps a hash, never the code");
  assert.equal(await f.verify(r, { code: "12345" }), false, "short");
  assert.equal(await f.verify(r, { code: sent + "0" }), false, "long");
  const [a, b] = await Promise.all([f.verify(r, { code: ` ${sent} ` }), f.verify(r, { code: sent })]);
  assert.deepEqual([a, b], [true, false], "two posts of the right code at once: one passes");
  await f.start(r);
  now = 1000;
  assert.equal(await f.verify(r, { code: [sent] }), false, "expired");
});

test("AStolenBreachedPasswordGetsNoSessionWithoutTheSecondFactor, as JSON: a 403 problem document that says where the code goes", async () => {
  const app = await plainApp();
  app.tg.failLimit = 100;
  const post = async (path: string, body: Record<string, string>, cookie = "") => {
    const headers: Record<string, string> = { "content-type": "application/json", "x-forwarded-for": "198.51.100.16" };
    if (cookie !== "") headers["cookie"] = cookie;
    return fetch(app.base + path, { method: "POST", redirect: "manual", headers, body: JSON.stringify(body) });
  };
  const r = await post("/login", { username: "alice", password: breachedPassword });
  assert.equal(r.status, 403);
  assert.equal(r.headers.get("content-type"), "application/problem+json");
  const doc = (await r.json()) as { status: number; step_up?: { path: string; field: string } };
  assert.deepEqual(doc.step_up, { path: "/login/step-up", field: "code" });
  assert.deepEqual(app.sessions, []);
  const cookie = (r.headers.getSetCookie().find((c) => c.startsWith(stepUpCookieName)) ?? "").split(";")[0] ?? "";
  assert.notEqual(cookie, "");
  const code = app.sent[0]?.code ?? "";
  const bad = await post("/login/step-up", { code: code === "000000" ? "000001" : "000000" }, cookie);
  assert.equal(bad.status, 403);
  assert.equal(((await bad.json()) as { step_up?: unknown }).step_up !== undefined, true, "still waiting on a code");
  const ok = await post("/login/step-up", { code }, cookie);
  assert.equal(ok.status, 303);
  assert.deepEqual(app.sessions, [{ account: "alice", via: "step-up" }]);
  const none = await post("/login/step-up", { code }, cookie);
  assert.equal(none.status, 403, "spent: sign in again");
  assert.equal(((await none.json()) as { step_up?: unknown }).step_up, undefined);
});
