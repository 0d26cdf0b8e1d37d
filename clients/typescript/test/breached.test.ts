/**
 * Breached passwords and step-up in the client: the k-anonymous range
 * query (the shared vectors, clients/testdata/breached.json, are run in
 * vectors.test.ts, and here through a stand-in), its
 * best-effort answers, `breached` on a report, the step_up action and the
 * step-up report, against stand-in servers.
 */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { Client, Responder, failDelay, failOpen, passwordRange, rangeHas } from "../src/index.js";
import { closedPort, standIn, vectorsDir } from "./helpers.js";

interface BreachedCase {
  password: string;
  sha1: string;
  prefix: string;
  suffix: string;
  range: string;
  count: number;
  breached: boolean;
}

const cases = (JSON.parse(readFileSync(join(vectorsDir, "breached.json"), "utf8")) as { cases: BreachedCase[] }).cases;

test("range lines: padding, leading zeros, CRLF or LF, spaces, malformed lines skipped", () => {
  const s = "1E4C9B93F3F0682250B6CF8331B7EE68FD8";
  const tests: Array<{ name: string; body: string; want: boolean }> = [
    { name: "LF only", body: `AAAA:1\n${s}:3\n`, want: true },
    { name: "lower-case suffix in the body", body: `${s.toLowerCase()}:3\r\n`, want: true },
    { name: "leading zeros", body: `${s}:0007\r\n`, want: true },
    { name: "padding, count 0", body: `${s}:0\r\n`, want: false },
    { name: "padding with zeros", body: `${s}:0000\r\n`, want: false },
    { name: "spaces around", body: `  ${s}:12 \r\n`, want: true },
    { name: "no count", body: `${s}:\r\n`, want: false },
    { name: "count not decimal", body: `${s}:0x10\r\n${s}:-1\r\n${s}:1.5\r\n`, want: false },
    { name: "no colon", body: `${s}\r\n`, want: false },
    { name: "a prefix of the suffix", body: `${s.slice(0, 30)}:9\r\n`, want: false },
    { name: "the suffix with more", body: `${s}0:9\r\n`, want: false },
    { name: "a malformed line before the match", body: `garbage\r\n::\r\n${s}:9`, want: true },
    { name: "empty", body: "", want: false },
  ];
  for (const tt of tests) assert.equal(rangeHas(tt.body, s), tt.want, tt.name);
  assert.equal(rangeHas(`:5\r\n`, ""), false, "an empty suffix never matches");
});

test("breached sends only the five-digit prefix, by GET, and matches the range here", async () => {
  const byPrefix = new Map(cases.map((c) => [c.prefix, c.range]));
  const srv = await standIn((req, res) => {
    const prefix = (req.url ?? "").replace(/^\/v1\/breached\//, "");
    const body = byPrefix.get(prefix);
    if (body === undefined) {
      res.writeHead(404, { "content-type": "application/problem+json" });
      res.end('{"type":"https://tollgate.dev/problems/breached-off","title":"Not Found","status":404}');
      return;
    }
    res.writeHead(200, { "content-type": "text/plain; charset=utf-8" });
    res.end(body);
  });
  try {
    const c = new Client({ baseURL: srv.base, breachedTimeoutMs: 5000 });
    for (const tc of cases) assert.equal(await c.breached(tc.password), tc.breached, tc.password);
    assert.equal(srv.requests.length, cases.length);
    for (const [i, r] of srv.requests.entries()) {
      const tc = cases[i] as BreachedCase;
      assert.equal(r.method, "GET");
      assert.equal(r.path, "/v1/breached/" + tc.prefix);
      assert.equal(r.body, "", "nothing but the prefix leaves the process");
      assert.equal(r.headers["accept"], "text/plain");
      const all = JSON.stringify(r.headers) + r.path;
      assert.ok(!all.includes(tc.suffix) && !all.includes(tc.password), "neither the suffix nor the password is sent");
    }
  } finally {
    await srv.close();
  }
});

test("ABreachedCheckErrorNeverFailsTheLogin: any error, refusal or strange answer is not breached, never a rejection", async () => {
  const pw = cases[0] as BreachedCase; // breached in its own range
  const answers: Array<{ name: string; status: number; headers: Record<string, string>; body: string }> = [
    { name: "no corpus: 404 breached-off", status: 404, headers: { "content-type": "application/problem+json" }, body: "{}" },
    { name: "upstream down: 503", status: 503, headers: { "content-type": "application/problem+json" }, body: "{}" },
    { name: "a 500 whose body lists the suffix", status: 500, headers: {}, body: pw.range },
    { name: "a redirect", status: 302, headers: { location: "/elsewhere" }, body: pw.range },
    { name: "401 unauthenticated", status: 401, headers: {}, body: "" },
  ];
  for (const a of answers) {
    const srv = await standIn((_req, res) => {
      res.writeHead(a.status, a.headers);
      res.end(a.body);
    });
    try {
      const c = new Client({ baseURL: srv.base, breachedTimeoutMs: 5000 });
      assert.equal(await c.breached(pw.password), false, a.name);
    } finally {
      await srv.close();
    }
  }
  const closed = new Client({ baseURL: await closedPort() });
  assert.equal(await closed.breached(pw.password), false, "nothing listens");
  const silent = await standIn(() => undefined); // never answers
  try {
    const c = new Client({ baseURL: silent.base, breachedTimeoutMs: 50 });
    assert.equal(await c.breached(pw.password), false, "no answer in time");
  } finally {
    await silent.close();
  }
  const c = new Client({ baseURL: "http://127.0.0.1:1" });
  assert.equal(await c.breached(undefined as never), false, "no password from untyped code");
  const aborted = new Client({ baseURL: silent.base });
  assert.equal(await aborted.breached(pw.password, { signal: AbortSignal.abort() }), false, "the caller's cancellation");
});

test("breachedTimeoutMs must be a number", () => {
  assert.throws(() => new Client({ baseURL: "http://127.0.0.1:1", breachedTimeoutMs: Number.NaN }), /breachedTimeoutMs/);
});

test("report sends breached last, as Go's struct, and only when true", async () => {
  const srv = await standIn((_req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end('{"action":"proceed","delay_ms":0,"retry_after":0,"reasons":[],"attempt":"","device_token":"dt"}');
  });
  try {
    const c = new Client({ baseURL: srv.base, timeoutMs: 5000 });
    await c.report({ breached: true, flow: "login", account: "a", ip: "203.0.113.9", outcome: "failure", ref: "u1" });
    await c.report({ flow: "login", outcome: "success", breached: false });
    assert.equal(srv.requests[0]?.body, '{"flow":"login","account":"a","ip":"203.0.113.9","outcome":"failure","ref":"u1","breached":true}');
    assert.equal(srv.requests[1]?.body, '{"flow":"login","outcome":"success"}');
  } finally {
    await srv.close();
  }
});

test("AStolenBreachedPasswordGetsNoSessionWithoutTheSecondFactor: step_up is tollgate's verdict, and no answer makes it a proceed", async () => {
  const stepUp = '{"action":"step_up","delay_ms":0,"retry_after":0,"reasons":["breached_password"],"attempt":"ticket.1","device_token":""}';
  const srv = await standIn((_req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(stepUp);
  });
  try {
    const c = new Client({ baseURL: srv.base, timeoutMs: 5000 });
    const v = await c.report({ flow: "login", account: "a", outcome: "success", breached: true }, failOpen);
    assert.equal(v.action, "step_up", "the verdict as tollgate gave it, not a fallback");
    assert.equal(v.fallback, false);
    assert.equal(v.attempt, "ticket.1");
    assert.deepEqual(v.reasons, ["breached_password"]);
    const a = new Responder().respond(v);
    assert.equal(a.proceed, false, "a step_up is not a login yet");
    assert.equal(a.stepUp, true);
    assert.equal(a.status, 403);
    assert.equal(a.headers["retry-after"], undefined, "waiting does not lift it");
    const hooked = new Responder({ stepUp: () => ({ body: "second factor please" }) }).respond(v);
    assert.deepEqual([hooked.proceed, hooked.stepUp, hooked.status, hooked.body], [false, true, 403, "second factor please"]);
    assert.equal(new Responder().respond({ action: "proceed" }).stepUp, undefined, "only a step_up says so");
    // A check or a send answered step_up is no verdict (as an unknown
    // action): the fail mode's answer, never the step_up itself.
    const check = await c.check({ flow: "login", account: "a" }, failDelay);
    assert.deepEqual([check.action, check.fallback], ["delay", true], "a check's step_up is not a verdict");
    const send = await c.send({ destination: "+15550100", channel: "sms" }, failDelay);
    assert.deepEqual([send.action, send.fallback], ["delay", true]);
  } finally {
    await srv.close();
  }
});

test("reportStepUp reports the ticket on the step_up flow, passed or failed", async () => {
  const srv = await standIn((_req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end('{"action":"proceed","delay_ms":0,"retry_after":0,"reasons":[],"attempt":"","device_token":"dev.2"}');
  });
  try {
    const c = new Client({ baseURL: srv.base, timeoutMs: 5000 });
    const v = await c.reportStepUp({ account: "a", ip: "203.0.113.9", ticket: "ticket.1", passed: true, device_token: "dev.1" });
    assert.equal(v.device_token, "dev.2");
    await c.reportStepUp({ account: "a", ip: "203.0.113.9", ticket: "ticket.1", passed: false }, failDelay);
    await c.reportStepUp({ flow: "admin_step_up", account: "a", ticket: "t", passed: "yes" as never });
    assert.equal(srv.requests[0]?.body,
      '{"flow":"step_up","account":"a","ip":"203.0.113.9","outcome":"step_up_passed","attempt":"ticket.1","device_token":"dev.1"}');
    assert.equal(srv.requests[1]?.body, '{"flow":"step_up","account":"a","ip":"203.0.113.9","outcome":"step_up_failed","attempt":"ticket.1"}');
    assert.equal(srv.requests[2]?.body, '{"flow":"admin_step_up","account":"a","outcome":"step_up_failed","attempt":"t"}', "only true passes");
  } finally {
    await srv.close();
  }
});

test("rangeHas on 3,000 random bodies (a seeded fuzz): never throws; padding never matches; a counted line always does", () => {
  let seed = 0x9e3779b9;
  const rand = (n: number): number => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) % n;
  };
  const suffix = "1E4C9B93F3F0682250B6CF8331B7EE68FD8";
  const parts = ["\r\n", "\n", "\r", ":", " ", "0", "7", "00", "x", "é", "\u0000", suffix, suffix.toLowerCase(), suffix.slice(0, 20), "FFFF"];
  for (let i = 0; i < 3000; i++) {
    let body = "";
    for (let n = rand(12); n > 0; n--) body += parts[rand(parts.length)];
    const got = rangeHas(body, suffix);
    assert.equal(typeof got, "boolean");
    assert.equal(rangeHas(body + "\n" + suffix + ":000\r\n", suffix), got, `padding changed the answer for ${JSON.stringify(body)}`);
    assert.equal(rangeHas(body + "\n" + suffix.toLowerCase() + ":1\r\n", suffix), true, `a counted line missed after ${JSON.stringify(body)}`);
  }
});
