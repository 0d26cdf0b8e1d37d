/**
 * Responder's hooks and writeAnswer on a real node:http server.
 */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { test } from "node:test";

import { Responder, writeAnswer, type Answer, type Page } from "../src/index.js";
import { standIn, vectorsDir } from "./helpers.js";

/** GETs base and answers the status, the raw header lines and the body bytes. */
function get(base: string): Promise<{ status: number; raw: string[]; body: Buffer }> {
  return new Promise((ok, fail) => {
    const req = request(base, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => ok({ status: res.statusCode ?? 0, raw: res.rawHeaders, body: Buffer.concat(chunks) }));
    });
    req.on("error", fail);
    req.end();
  });
}

test("writeAnswer writes each respond.json answer's exact status, fields and bytes over node:http", async () => {
  const doc = JSON.parse(readFileSync(join(vectorsDir, "respond.json"), "utf8")) as {
    cases: Array<{ name: string; config: { policy?: string; problem_type?: string; title?: string; step_up_page?: Page }; verdict: Record<string, unknown>; want: { status: number; headers: Record<string, string>; body: string } }>;
  };
  let current: Answer | undefined;
  const srv = await standIn((_req, res) => writeAnswer(res, current as Answer));
  try {
    let n = 0;
    for (const c of doc.cases) {
      const page = c.config.step_up_page;
      const rs = new Responder({ policy: c.config.policy, problemType: c.config.problem_type, title: c.config.title,
        stepUp: page === undefined ? undefined : () => ({ ...page, headers: { ...page.headers } }) });
      current = rs.respond(c.verdict);
      if (current.proceed) {
        assert.throws(() => writeAnswer({} as never, current as Answer), /nothing to write/);
        continue;
      }
      n++;
      const got = await get(srv.base);
      assert.equal(got.status, c.want.status, c.name);
      assert.equal(got.body.toString("utf8"), c.want.body, c.name);
      const fields: Record<string, string> = {};
      for (let i = 0; i < got.raw.length; i += 2) fields[got.raw[i]!.toLowerCase()] = got.raw[i + 1]!;
      for (const [k, v] of Object.entries(c.want.headers)) assert.equal(fields[k], v, `${c.name}: ${k}`);
      assert.equal(Number(fields["content-length"]), got.body.byteLength, `${c.name}: Content-Length in bytes`);
    }
    assert.ok(n >= 10);
  } finally {
    await srv.close();
  }
});

test("Responder hooks: captcha, delay (with its seconds and the limit fields) and accepted", () => {
  const seen: number[] = [];
  const rs = new Responder({
    policy: "otp_send",
    captcha: () => ({ body: "<form>captcha</form>", headers: { "Content-Type": "text/html; charset=utf-8" } }),
    delay: (seconds) => (seen.push(seconds), { status: 429, body: `wait ${seconds}s` }),
    accepted: () => ({ body: "If this number can receive codes, one is on its way." }),
  });
  const cap = rs.respond({ action: "captcha" });
  assert.deepEqual(cap, {
    proceed: false,
    holdMs: 0,
    status: 429,
    headers: { "content-type": "text/html; charset=utf-8", "content-length": "20" },
    body: "<form>captcha</form>",
  });
  const d = rs.respond({ action: "delay", delay_ms: 2500, retry_after: 3 });
  assert.deepEqual(seen, [3]);
  assert.equal(d.status, 429);
  assert.equal(d.headers["retry-after"], "3");
  assert.equal(d.headers["ratelimit"], '"otp_send";r=0;t=3');
  assert.equal(d.headers["cache-control"], "no-store");
  assert.equal(d.headers["content-type"], "text/plain; charset=utf-8");
  assert.equal(d.body, "wait 3s");
  const deny = rs.respond({ action: "deny", reasons: ["number_type"] } as never);
  assert.deepEqual(deny, rs.accept(), "a deny is the answer of a sent code");
  assert.equal(deny.status, 202);
  assert.equal(deny.body, "If this number can receive codes, one is on its way.");
});

test("Responder never proceeds on anything but the action proceed", () => {
  const rs = new Responder();
  for (const v of [undefined, null, {}, { action: "Proceed" }, { action: "proceed " }, { action: 1 as never }, { action: "allow", delay_ms: 0 }]) {
    const a = rs.respond(v);
    assert.equal(a.proceed, false, JSON.stringify(v));
    assert.equal(a.status, 429);
    assert.equal(a.headers["retry-after"], "1");
  }
  assert.deepEqual(rs.respond({ action: "proceed", delay_ms: -5 }), { proceed: true, holdMs: 0, status: 0, headers: {}, body: "" });
  assert.equal(rs.respond({ action: "delay", delay_ms: Number.NaN, retry_after: Number.POSITIVE_INFINITY }).headers["retry-after"], "2147483648");
});

test("Responder refuses options and pages that cannot be sent", () => {
  assert.throws(() => new Responder({ policy: "p".repeat(65) }));
  assert.throws(() => new Responder({ problemType: "no-scheme" }));
  assert.throws(() => new Responder({ problemType: "https://example.com/%zz" }));
  assert.throws(() => new Responder({ captcha: "page" as never }));
  assert.throws(() => new Responder({ captcha: () => ({ status: 99, body: "" }) }).respond({ action: "captcha" }), /status/);
  assert.throws(() => new Responder({ captcha: () => ({ body: "", headers: { "x-a": "1\r\nSet-Cookie: a=b" } }) }).respond({ action: "captcha" }), /malformed/);
  assert.throws(() => new Responder({ accepted: () => ({}) as never }).accept(), /string body/);
});

test("the title and type are escaped as Go's json.Marshal does, and Content-Length counts bytes", () => {
  const a = new Responder({ title: "Trop de requêtes <&>" }).respond({ action: "delay", retry_after: 2 });
  assert.equal(a.body, '{"type":"about:blank","title":"Trop de requ\u00eates \\u003c\\u0026\\u003e","status":429,"detail":"Try again in 2 seconds."}\n');
  assert.equal(a.headers["content-length"], String(Buffer.byteLength(a.body)));
  assert.notEqual(a.headers["content-length"], String(a.body.length));
});
