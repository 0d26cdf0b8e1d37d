/**
 * The demo in front of a real tollgate configured with a small breached
 * corpus (testdata/breached-corpus.txt, which lists bob's password):
 * bob's right password gets the guard's code page and no session until
 * the code (read from the demo's sender file, STEP_UP_CODES_FILE) passed;
 * a wrong code is reported and throttled; a password not in the corpus
 * signs in as before; the device cookie of a stepped-up login signs the
 * owner in without a second code.
 */

import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { Processes, appDir } from "./helpers.js";

const procs = new Processes();
let dir = "";
let base = "";
const sentCodes = () => procs.sentCodes();

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "express-login-stepup-"));
  const config = join(dir, "tollgate.yaml");
  writeFileSync(config, ["breached:", `  corpus: ${JSON.stringify(join(appDir, "testdata", "breached-corpus.txt"))}`, ""].join("\n"));
  base = await procs.startDemo({ TOLLGATE_CONFIG: config });
});

after(() => {
  procs.stop();
  if (dir !== "") rmSync(dir, { recursive: true, force: true });
});

/** A browser of one address: a cookie jar, no redirects followed. */
function browser(ip: string) {
  const jar = new Map<string, string>();
  const go = async (method: string, path: string, form?: Record<string, string>): Promise<{ status: number; headers: Headers; body: string }> => {
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
    return { status: res.status, headers: res.headers, body: await res.text() };
  };
  return { jar, go };
}

const session = "__Host-demo-session";

test("AStolenBreachedPasswordGetsNoSessionWithoutTheSecondFactor: bob's breached password gets the code page, and only its code leads on", async () => {
  const thief = browser("203.0.113.80");
  const r = await thief.go("POST", "/login", { username: "bob", password: "builder-42" });
  assert.equal(r.status, 303, r.body);
  assert.equal(r.headers.get("location"), "/login/step-up");
  assert.equal(thief.jar.has(session), false, "no session before the second factor");
  assert.equal((await thief.go("GET", "/otp")).headers.get("location"), "/login", "not even the code step");
  assert.equal((await thief.go("GET", "/")).headers.get("location"), "/login");
  const page = await thief.go("GET", "/login/step-up");
  assert.equal(page.status, 200);
  assert.ok(page.body.includes("Confirm it is you") && page.body.includes('name="code"'), page.body);
  assert.ok(!page.body.includes("bob"), "the page does not name the account");
  const sent = sentCodes();
  assert.equal(sent.length, 1);
  assert.equal(sent[0]?.user, "bob");

  // The owner's code, entered in the browser that typed the password.
  const ok = await thief.go("POST", "/login/step-up", { code: sent[0]?.code ?? "" });
  assert.equal(ok.status, 303, ok.body);
  assert.equal(ok.headers.get("location"), "/otp");
  assert.ok(thief.jar.has(session), "the pending session once the second factor passed");
  assert.ok((await thief.go("GET", "/otp")).body.includes("Password accepted. Second step"));
});

test("ABreachedCheckErrorNeverFailsTheLogin, and a password not in the corpus: alice signs in as before, without a second code", async () => {
  const b = browser("203.0.113.82");
  const n = sentCodes().length;
  const r = await b.go("POST", "/login", { username: "alice", password: "wonderland-42" });
  assert.equal(r.headers.get("location"), "/otp", r.body);
  assert.equal(sentCodes().length, n, "no step-up code");
});

test("TheOwnersKnownDeviceSignsInWithoutStepUp: after a stepped-up login, bob's browser goes straight to the code step", async () => {
  const b = browser("203.0.113.83");
  await b.go("POST", "/login", { username: "bob", password: "builder-42" });
  const stepped = await b.go("POST", "/login/step-up", { code: sentCodes().at(-1)?.code ?? "" });
  assert.equal(stepped.headers.get("location"), "/otp");
  await b.go("POST", "/otp/send", {});
  const otp = await b.go("GET", "/otp?sent=1");
  const sms = /class="sms-code">(\d{6})</.exec(otp.body)?.[1] ?? "";
  assert.notEqual(sms, "", otp.body);
  const done = await b.go("POST", "/otp/verify", { code: sms });
  assert.equal(done.headers.get("location"), "/", done.body);
  assert.ok(b.jar.has("__Host-tollgate-device"), "the device cookie after both steps");
  await b.go("POST", "/logout", {});
  const n = sentCodes().length;
  const again = await b.go("POST", "/login", { username: "bob", password: "builder-42" });
  assert.equal(again.headers.get("location"), "/otp", "the known device skips the second factor");
  assert.equal(sentCodes().length, n, "no second step-up code");
});

// Last: its wrong codes count on bob's step_up counters, which would delay the tests above.
test("AWrongSecondFactorCodeIsReportedAndThrottled: wrong codes get no session, tollgate's step_up flow delays them, and five drop the login", async () => {
  const b = browser("203.0.113.81");
  assert.equal((await b.go("POST", "/login", { username: "bob", password: "builder-42" })).headers.get("location"), "/login/step-up");
  const code = sentCodes().at(-1)?.code ?? "";
  const wrong = code === "000000" ? "000001" : "000000";
  const got: string[] = [];
  for (let i = 0; i < 8; i++) {
    const a = await b.go("POST", "/login/step-up", { code: wrong });
    got.push(a.status === 429 ? `429 Retry-After: ${a.headers.get("retry-after")}` : a.status === 303 ? `303 ${a.headers.get("location")}` : String(a.status));
    assert.equal(b.jar.has(session), false, `wrong code ${i + 1}: no session`);
    if (a.status === 403 || a.status === 303) break;
    if (a.status === 429) break;
  }
  assert.ok(got.some((g) => g.startsWith("429") || g === "403"), `wrong codes: ${got.join(", ")}; want a 429 from tollgate or the login dropped`);
  assert.ok(!got.includes("303 /otp"), `a wrong code signed in: ${got.join(", ")}`);
});
