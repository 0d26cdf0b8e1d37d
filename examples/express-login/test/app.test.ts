/**
 * The Express demo (dist/server.js, built with `npm run build`) in front of
 * a real tollgate ($TOLLGATE_BIN, or one built from this repository with
 * go build), both started on free loopback ports and killed by their PIDs
 * at the end: what a script gets from the password step behind
 * @tollgate/client/express, and that the client installed is the packed
 * tarball, not the source tree. The browser's side (the challenge solved
 * by tollgate's solver in Chromium) is e2e/browser's expresslogin test.
 */

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, lstatSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { Processes, appDir } from "./helpers.js";

const wrong = "Wrong username or password.";
const procs = new Processes();
let base = "";

before(async () => {
  base = await procs.startDemo();
});

after(() => procs.stop());

interface Got {
  status: number;
  headers: Headers;
  body: string;
}

/** Posts the login form from ip (through the app's trust of loopback's X-Forwarded-For). */
async function post(ip: string, form: Record<string, string>, cookie = ""): Promise<Got> {
  const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded", "x-forwarded-for": ip };
  if (cookie !== "") headers["cookie"] = cookie;
  const res = await fetch(base + "/login", { method: "POST", redirect: "manual", headers, body: new URLSearchParams(form).toString() });
  return { status: res.status, headers: res.headers, body: await res.text() };
}

/** A proof-of-work nonce, found as tollgate's solver finds it. */
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

test("the client installed is the packed tarball: no link to the source tree, no stale cached copy", () => {
  const dir = join(appDir, "node_modules", "@tollgate", "client");
  assert.equal(lstatSync(dir).isSymbolicLink(), false, "node_modules/@tollgate/client links to the source tree");
  const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { scripts?: unknown; exports?: Record<string, unknown> };
  assert.equal(pkg.scripts, undefined, "the installed package.json has its build scripts: not scripts/build-npm.sh's tarball");
  assert.ok(pkg.exports?.["./express"] !== undefined, "the tarball lacks the express subpath");
  assert.ok(existsSync(join(dir, "LICENSE")), "the tarball lacks LICENSE");
  // npm ci would take a file: tarball with an integrity from its cache,
  // by that hash, and install the client as it was when the lockfile was
  // written: the entry must have none.
  const lock = JSON.parse(readFileSync(join(appDir, "package-lock.json"), "utf8")) as { packages: Record<string, { resolved?: string; integrity?: string }> };
  const entry = lock.packages["node_modules/@tollgate/client"];
  assert.equal(entry?.resolved, "file:../../build/npm/tollgate-client-0.1.0.tgz");
  assert.equal(entry?.integrity, undefined, "package-lock.json pins the client tarball's hash: delete its integrity line");
});

test("an unknown account gets the same bytes as a known one's wrong password: the form (200), then the same 429", async () => {
  for (let i = 1; i <= 6; i++) {
    const known = await post(`198.51.100.${i}`, { username: "bob", password: `guess-${i}` });
    const unknown = await post(`192.0.2.${i}`, { username: "nobody", password: `guess-${i}` });
    if (i < 6) {
      assert.equal(known.status, 200, known.body);
      assert.ok(known.body.includes(wrong));
    } else {
      assert.equal(known.status, 429);
      assert.equal(known.headers.get("retry-after"), "1");
      assert.ok(known.body.includes("Too many attempts, try again in 1 second."), known.body);
    }
    assert.equal(unknown.status, known.status, `attempt ${i}`);
    assert.equal(unknown.body, known.body, `attempt ${i}`);
    assert.equal(unknown.headers.get("retry-after"), known.headers.get("retry-after"));
  }
});

test("a sprayed address meets tollgate's challenge; solved, alice's held form goes on, through the second factor, to the code step", async () => {
  const ip = "203.0.113.66";
  for (let i = 1; i <= 10; i++) {
    const a = await post(ip, { username: `user${String(i).padStart(2, "0")}`, password: "Spray-2026!" });
    assert.equal(a.status, 200, `spray ${i}`);
  }
  const page = await post(ip, { username: "alice", password: "wonderland-42" });
  assert.equal(page.status, 429);
  assert.equal(page.headers.get("retry-after"), null, "waiting does not lift a CAPTCHA");
  assert.ok(page.body.includes("Checking that this request is not automated"), page.body);
  assert.ok(!page.body.includes("wonderland-42") && !page.body.includes("alice"), "the page holds the submission");
  const handle = /name="tollgate_handle" value="([^"]+)"/.exec(page.body)?.[1] ?? "";
  const token = /name="tollgate_token" value="([^"]+)"/.exec(page.body)?.[1] ?? "";
  const difficulty = Number(/data-difficulty="(\d+)"/.exec(page.body)?.[1]);
  const done = await post(ip, { tollgate_handle: handle, tollgate_token: token, tollgate_nonce: solve(token, difficulty) });
  assert.equal(done.status, 303, done.body);
  // Her right password from an address tollgate escalated (the spray) is
  // answered step_up (address_escalated): the code page first, no session.
  assert.equal(done.headers.get("location"), "/login/step-up");
  assert.ok(!(done.headers.get("set-cookie") ?? "").includes("__Host-demo-session"), "no session before the second factor");
  const stepUp = (done.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
  const code = procs.sentCodes().at(-1);
  assert.equal(code?.user, "alice");
  const passed = await fetch(base + "/login/step-up", {
    method: "POST", redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", "x-forwarded-for": ip, cookie: stepUp },
    body: new URLSearchParams({ code: code?.code ?? "" }).toString(),
  });
  assert.equal(passed.status, 303, await passed.text());
  assert.equal(passed.headers.get("location"), "/otp");
  const session = passed.headers.getSetCookie().find((c) => c.startsWith("__Host-demo-session=")) ?? "";
  const otp = await fetch(base + "/otp", { headers: { cookie: session.split(";")[0] ?? "" } });
  assert.ok((await otp.text()).includes("Password accepted. Second step"));
});

test("an account tollgate will not count is answered as a wrong password", async () => {
  const a = await post("198.51.100.90", { username: "a".repeat(300), password: "x" });
  assert.equal(a.status, 200);
  assert.ok(a.body.includes(wrong));
});
