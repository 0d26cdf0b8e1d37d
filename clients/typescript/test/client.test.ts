/**
 * The Client against stand-in servers: what it sends, how it reads
 * answers and errors, its limits, and that no error repeats a request
 * value.
 */

import assert from "node:assert/strict";
import { test } from "node:test";
import { inspect } from "node:util";

import {
  CanceledError,
  Client,
  TimeoutError,
  TollgateError,
  UnavailableError,
  failCaptcha,
  failDelay,
  failOpen,
  isUnavailable,
  reasonFallback,
  reasonFallbackAllowance,
  type CheckRequest,
  type Verdict,
} from "../src/index.js";
import { closedPort, standIn, type StandIn } from "./helpers.js";

const verdictJSON = '{"action":"proceed","delay_ms":0,"retry_after":0,"reasons":[],"attempt":"at.1","device_token":""}';

/** A stand-in that answers every call with status, headers and body. */
function answering(status: number, headers: Record<string, string>, body: string | Buffer): Promise<StandIn> {
  return standIn((_req, res) => {
    res.writeHead(status, headers);
    res.end(body);
  });
}

// The tests below that talk to a stand-in set a 5 s timeout: a loaded machine
// must turn no answer into a timeout; "the default timeout is 250 ms" holds the
// default.
test("check sends Go's body: wire order, empty optional fields left out, unknown keys never sent", async () => {
  const srv = await answering(200, { "content-type": "application/json" }, verdictJSON);
  try {
    const c = new Client({ baseURL: srv.base + "/prefix/", token: "tok-1", timeoutMs: 5000 });
    const req = { flow: "login", captcha_solved: false, ip: "203.0.113.9", account: "a", device_token: "", extra: "x" } as CheckRequest;
    const v = await c.check(req, failDelay);
    assert.equal(v.action, "proceed");
    assert.equal(v.attempt, "at.1");
    await c.report({ flow: "", outcome: "failure" });
    await c.send({ destination: "+15550100", channel: "sms", captcha_solved: true });
    await c.reset({ flow: "login", reason: "" });
    await c.reset({ ref: "user-8c1f2e", reason: "ticket 4711", account: "a", flow: "login" });
    const [check, report, send, reset, resetRef] = srv.requests;
    assert.equal(check?.path, "/prefix/v1/check");
    assert.equal(check?.method, "POST");
    assert.equal(check?.body, '{"flow":"login","account":"a","ip":"203.0.113.9"}');
    assert.equal(check?.headers["content-type"], "application/json");
    assert.equal(check?.headers["accept"], "application/json, application/problem+json");
    assert.equal(check?.headers["user-agent"], "tollgate-typescript-client/1");
    assert.equal(check?.headers["authorization"], "Bearer tok-1");
    assert.equal(report?.body, '{"flow":"","outcome":"failure"}');
    assert.equal(send?.path, "/prefix/v1/otp/send");
    assert.equal(send?.body, '{"destination":"+15550100","channel":"sms","captcha_solved":true}');
    assert.equal(reset?.body, '{"flow":"login","reason":""}');
    assert.equal(resetRef?.body, '{"flow":"login","account":"a","reason":"ticket 4711","ref":"user-8c1f2e"}');
  } finally {
    await srv.close();
  }
});

// The ref comes back in webhook events: it must reach tollgate when given,
// and no "ref" key may appear when the caller gave none (an empty one is none).
test("ref is sent as \"ref\" by check, report and send when given, and left out when not", async () => {
  const srv = await answering(200, { "content-type": "application/json" }, verdictJSON);
  try {
    const c = new Client({ baseURL: srv.base, timeoutMs: 5000 });
    await c.check({ flow: "login", account: "a", ip: "203.0.113.9", ref: "user-42" });
    await c.report({ flow: "login", account: "a", outcome: "success", ref: "user-42" });
    await c.send({ destination: "+15550100", channel: "sms", ref: "user-é" });
    await c.check({ flow: "login", account: "a" });
    await c.report({ flow: "login", account: "a", outcome: "failure", ref: "" });
    await c.send({ destination: "+15550100", channel: "sms", ref: undefined });
    const bodies = srv.requests.map((r) => r.body);
    assert.deepEqual(bodies, [
      '{"flow":"login","account":"a","ip":"203.0.113.9","ref":"user-42"}',
      '{"flow":"login","account":"a","outcome":"success","ref":"user-42"}',
      '{"destination":"+15550100","channel":"sms","ref":"user-é"}',
      '{"flow":"login","account":"a"}',
      '{"flow":"login","account":"a","outcome":"failure"}',
      '{"destination":"+15550100","channel":"sms"}',
    ]);
  } finally {
    await srv.close();
  }
});

test("entries is a GET with the flow escaped as Go's url.QueryEscape", async () => {
  const srv = await answering(200, { "content-type": "application/json" }, '{"entries":[{"id":"e1","kind":"allow"}]}');
  try {
    const c = new Client({ baseURL: srv.base, userAgent: "ua/2", timeoutMs: 5000 });
    const l = await c.entries("a b&c/é!");
    assert.equal(l[0]?.id, "e1");
    assert.equal(l[0]?.length, 0, "missing fields are Go's zero values");
    await c.entries();
    assert.equal(srv.requests[0]?.method, "GET");
    assert.equal(srv.requests[0]?.path, "/v1/admin/entries?flow=a+b%26c%2F%C3%A9%21");
    assert.equal(srv.requests[0]?.headers["content-type"], undefined);
    assert.equal(srv.requests[0]?.headers["user-agent"], "ua/2");
    assert.equal(srv.requests[1]?.path, "/v1/admin/entries");
  } finally {
    await srv.close();
  }
});

test("allow takes a 201; a token source is asked with the call's signal", async () => {
  const srv = await answering(201, { "content-type": "application/json" }, '{"id":"e2","kind":"allow","subject":"ip_range","length":24}');
  try {
    let asked: AbortSignal | undefined;
    const c = new Client({ baseURL: srv.base, timeoutMs: 5000, tokenSource: async (signal) => ((asked = signal), "fresh") });
    const e = await c.allow({ ip_range: "192.0.2.0/24", expires_in: "1h", reason: "r" });
    assert.equal(e.length, 24);
    assert.ok(asked instanceof AbortSignal);
    assert.equal(srv.requests[0]?.headers["authorization"], "Bearer fresh");
    assert.equal(srv.requests[0]?.body, '{"ip_range":"192.0.2.0/24","expires_in":"1h","reason":"r"}');
  } finally {
    await srv.close();
  }
});

test("a token source that fails or hangs: unavailable, or a timeout", async () => {
  const srv = await answering(200, { "content-type": "application/json" }, verdictJSON);
  try {
    const failing = new Client({ baseURL: srv.base, tokenSource: () => Promise.reject(new Error("vault down")) });
    const v = await failing.check({ flow: "login" }, failOpen);
    assert.ok(v.error instanceof UnavailableError && !(v.error instanceof TimeoutError), String(v.error));
    assert.match(v.error.message, /no bearer token from the token source: vault down/);
    const hanging = new Client({ baseURL: srv.base, timeoutMs: 50, tokenSource: () => new Promise<string>(() => undefined) });
    const h = await hanging.check({ flow: "login" }, failOpen);
    assert.ok(h.error instanceof TimeoutError, String(h.error));
    assert.equal(h.action, "proceed");
    assert.equal(srv.requests.length, 0);
  } finally {
    await srv.close();
  }
});

test("options that cannot work are refused", () => {
  for (const baseURL of ["", "127.0.0.1:8080", "ftp://x", "http://user:pw@x", "http://@x", "http://x/?", "http://x/?a=1", "http://x/#f", "http://"]) {
    assert.throws(() => new Client({ baseURL }), Error, baseURL);
  }
  assert.throws(() => new Client({ baseURL: "http://x", token: "t", tokenSource: async () => "t" }));
  assert.throws(() => new Client({ baseURL: "http://x", failOpenWindowMs: -1 }));
  assert.throws(() => new Client({ baseURL: "http://x", failOpenSubjects: -1 }));
  assert.throws(() => new Client({ baseURL: "http://x", failOpenPerAccount: 1.5 }));
  assert.throws(() => new Client({ baseURL: "http://x", failOpenPerAccount: 2_000_000_000, failOpenWindowMs: 1 }), /too short/);
  assert.doesNotThrow(() => new Client({ baseURL: "https://tollgate.internal/prefix", failOpenPerAccount: -1, failOpenPerAddress: -1 }));
});

test("answers that are no verdict are unavailability, never a proceed", async () => {
  const bodies = [
    "proceed",
    "{}",
    "null",
    "[]",
    '{"action":"allow"}',
    '{"action":"PROCEED"}',
    '{"action":"proceed","delay_ms":"5"}',
    '{"action":"proceed","delay_ms":1.5}',
    '{"action":"proceed","reasons":"x"}',
    '{"action":5}',
    "\ufeff" + verdictJSON,
  ];
  for (const body of bodies) {
    const srv = await answering(200, { "content-type": "application/json" }, body);
    try {
      const c = new Client({ baseURL: srv.base, timeoutMs: 5000 });
      const v = await c.check({ flow: "login", account: "a", ip: "192.0.2.1" }, failDelay);
      assert.equal(v.action, "delay", body);
      assert.equal(v.fallback, true);
      assert.ok(v.error instanceof UnavailableError, body);
      const x = await c.check({ flow: "login" }, failCaptcha);
      assert.equal(x.action, "captcha", body);
    } finally {
      await srv.close();
    }
  }
});

test("keys match case-insensitively and unknown keys are ignored, as Go's encoding/json", async () => {
  const srv = await answering(200, { "content-type": "application/json" }, '{"Action":"delay","DELAY_MS":1500,"retry_after":2,"reasons":null,"new_field":[1]}');
  try {
    const v = await new Client({ baseURL: srv.base, timeoutMs: 5000 }).check({ flow: "login" });
    assert.deepEqual({ ...v }, { action: "delay", delay_ms: 1500, retry_after: 2, reasons: [], attempt: "", device_token: "", fallback: false });
  } finally {
    await srv.close();
  }
});

test("answers over 1 MiB are unavailability; up to 1 MiB are read", async () => {
  const pad = (n: number): string => verdictJSON + " ".repeat(n - Buffer.byteLength(verdictJSON));
  for (const [size, ok] of [
    [1 << 20, true],
    [(1 << 20) + 1, false],
  ] as const) {
    const srv = await answering(200, { "content-type": "application/json" }, pad(size));
    try {
      const v = await new Client({ baseURL: srv.base, timeoutMs: 5000 }).check({ flow: "login" });
      assert.equal(v.fallback, !ok, `size ${size}`);
      if (!ok) assert.match(String(v.error), /too large/);
    } finally {
      await srv.close();
    }
  }
});

test("problem documents: read up to 64 KiB, parsed into TollgateError; anything else keeps the status", async () => {
  const problem = (extra: string): string =>
    `{"type":"https://tollgate.dev/problems/invalid-field","title":"Invalid field","status":400,"detail":"ip is not an IP address","field":"ip","request_id":"r9"${extra}}`;
  const cases: Array<[string, Record<string, string>, string, Partial<TollgateError>]> = [
    ["problem", { "content-type": "application/problem+json" }, problem(""), { type: "https://tollgate.dev/problems/invalid-field", field: "ip", requestId: "r9", title: "Invalid field" }],
    ["with parameters", { "content-type": "Application/Problem+JSON; charset=utf-8" }, problem(""), { field: "ip" }],
    ["a malformed parameter is no problem+json", { "content-type": "application/problem+json; charset" }, problem(""), { field: "", title: "Bad Request" }],
    ["just under 64 KiB", { "content-type": "application/problem+json" }, problem(`,"x":"${"p".repeat((64 << 10) - 200)}"`), { field: "ip" }],
    ["over 64 KiB is cut and so unreadable", { "content-type": "application/problem+json" }, problem(`,"x":"${"p".repeat(64 << 10)}"`), { field: "", title: "Bad Request" }],
    ["malformed", { "content-type": "application/problem+json", "x-request-id": "hdr-1" }, "{not json", { type: "", title: "Bad Request", requestId: "hdr-1" }],
    ["a wrong type voids it all", { "content-type": "application/problem+json" }, '{"type":"t","status":"400","field":"ip"}', { type: "", field: "" }],
    ["not a problem", { "content-type": "text/plain" }, problem(""), { type: "", field: "", title: "Bad Request" }],
  ];
  for (const [name, headers, body, want] of cases) {
    const srv = await answering(400, headers, body);
    try {
      const v = await new Client({ baseURL: srv.base, timeoutMs: 5000 }).check({ flow: "login" }, failOpen);
      assert.ok(v.error instanceof TollgateError, name);
      assert.equal(v.error.status, 400);
      for (const [k, w] of Object.entries(want)) assert.equal(v.error[k as keyof TollgateError], w, `${name}: ${k}`);
      assert.equal(v.action, "delay", `${name}: a refusal is never waved through`);
      assert.equal(isUnavailable(v.error), false);
    } finally {
      await srv.close();
    }
  }
});

test("a TollgateError's message: the call, status, type slug and tollgate's detail only", () => {
  const e = new TollgateError({ op: "check", status: 400, type: "https://tollgate.dev/problems/invalid-field", title: "Invalid field", detail: "ip must be an IP address", field: "ip", requestId: "r1", retryAfterMs: 0 });
  assert.equal(e.message, "tollgate: check: 400 invalid-field: ip must be an IP address (request id r1)");
  const other = new TollgateError({ op: "send", status: 502, type: "https://example.com/x", title: "Bad Gateway", detail: "upstream said: alice", field: "", requestId: "", retryAfterMs: 0 });
  assert.equal(other.message, "tollgate: send: 502 Bad Gateway", "a detail from anything but tollgate is left out");
  assert.equal(other.unavailable, true);
});

test("a redirect is not followed: it is a refusal", async () => {
  const target = await answering(200, { "content-type": "application/json" }, verdictJSON);
  const srv = await answering(307, { location: target.base + "/v1/check" }, "");
  try {
    const v = await new Client({ baseURL: srv.base, timeoutMs: 5000 }).check({ flow: "login" }, failOpen);
    assert.ok(v.error instanceof TollgateError);
    assert.equal(v.error.status, 307);
    assert.equal(v.action, "delay");
    assert.equal(target.requests.length, 0);
  } finally {
    await srv.close();
    await target.close();
  }
});

test("the caller's signal: an abort is a cancellation answered closed, a timeout is a timeout", async () => {
  const srv = await standIn(() => undefined); // never answers
  try {
    const c = new Client({ baseURL: srv.base, timeoutMs: -1 });
    const ac = new AbortController();
    const pending = c.check({ flow: "login", account: "a", captcha_solved: true }, failCaptcha, { signal: ac.signal });
    setTimeout(() => ac.abort(), 20);
    const v = await pending;
    assert.ok(v.error instanceof CanceledError, String(v.error));
    assert.equal(isUnavailable(v.error), false);
    assert.equal(v.action, "captcha", "closed: a solved CAPTCHA does not pass a canceled call");
    const o = await c.check({ flow: "login", account: "a" }, failOpen, { signal: AbortSignal.abort() });
    assert.equal(o.action, "delay");
    const t = await c.check({ flow: "login", account: "a" }, failOpen, { signal: AbortSignal.timeout(30) });
    assert.ok(t.error instanceof TimeoutError, String(t.error));
    assert.equal(t.action, "proceed");
  } finally {
    await srv.close();
  }
});

test("the default timeout is 250 ms", async () => {
  const srv = await standIn(() => undefined);
  try {
    const start = Date.now();
    const v = await new Client({ baseURL: srv.base }).check({ flow: "login" }, failDelay);
    const took = Date.now() - start;
    assert.ok(v.error instanceof TimeoutError);
    assert.ok(took >= 240 && took < 2000, `took ${took} ms`);
  } finally {
    await srv.close();
  }
});

test("admin calls reject with the call's error", async () => {
  const down = await closedPort();
  const c = new Client({ baseURL: down });
  await assert.rejects(c.explain({ flow: "login", account: "a" }), (e: unknown) => e instanceof UnavailableError && e.op === "explain");
  await assert.rejects(c.remove({ id: "x" }), UnavailableError);
  const srv = await answering(409, { "content-type": "application/problem+json" }, '{"type":"https://tollgate.dev/problems/too-many-entries","title":"Too many entries","status":409,"detail":"d"}');
  try {
    await assert.rejects(new Client({ baseURL: srv.base, timeoutMs: 5000 }).deny({ country: "FR", expires_in: "1h", reason: "r" }), (e: unknown) => e instanceof TollgateError && e.status === 409 && e.op === "deny");
  } finally {
    await srv.close();
  }
});

test("reload posts {} to /v1/admin/reload and reads {flows, restart_needed} as Go does", async () => {
  const srv = await answering(200, { "content-type": "application/json" }, '{"flows":["login","signup"],"restart_needed":["listen"],"extra":1}');
  try {
    const c = new Client({ baseURL: srv.base + "/prefix", token: "tok-r" });
    assert.deepEqual(await c.reload(), { flows: ["login", "signup"], restart_needed: ["listen"] });
    const [req] = srv.requests;
    assert.equal(req?.method, "POST");
    assert.equal(req?.path, "/prefix/v1/admin/reload");
    assert.equal(req?.body, "{}");
    assert.equal(req?.headers["content-type"], "application/json");
    assert.equal(req?.headers["authorization"], "Bearer tok-r");
  } finally {
    await srv.close();
  }
  // null (Go's nil) and an absent key are the empty list.
  const nulls = await answering(200, { "content-type": "application/json" }, '{"flows":null}');
  try {
    assert.deepEqual(await new Client({ baseURL: nulls.base }).reload(), { flows: [], restart_needed: [] });
  } finally {
    await nulls.close();
  }
  // An answer of another shape is no answer.
  const wrong = await answering(200, { "content-type": "application/json" }, '{"flows":"login","restart_needed":[]}');
  try {
    await assert.rejects(new Client({ baseURL: wrong.base }).reload(), (e: unknown) => e instanceof UnavailableError && e.op === "reload" && /not the JSON/.test(e.message));
  } finally {
    await wrong.close();
  }
  // A problem is a TollgateError with the problem's members.
  const bad = await answering(409, { "content-type": "application/problem+json", "x-request-id": "r7" }, '{"type":"https://tollgate.dev/problems/config-invalid","title":"Configuration invalid","status":409,"detail":"/etc/tollgate.yaml: yaml: line 14: mapping values are not allowed in this context"}');
  try {
    await assert.rejects(new Client({ baseURL: bad.base }).reload(), (e: unknown) => {
      assert.ok(e instanceof TollgateError);
      assert.equal(e.op, "reload");
      assert.equal(e.status, 409);
      assert.equal(e.type, "https://tollgate.dev/problems/config-invalid");
      assert.equal(e.requestId, "r7");
      assert.equal(e.message, "tollgate: reload: 409 config-invalid: /etc/tollgate.yaml: yaml: line 14: mapping values are not allowed in this context (request id r7)");
      return true;
    });
  } finally {
    await bad.close();
  }
  await assert.rejects(new Client({ baseURL: await closedPort() }).reload(), (e: unknown) => e instanceof UnavailableError && e.op === "reload");
});

test("deadLetters GETs /v1/admin/webhooks/dead-letters[?limit=N] and reads the list as Go does; replayWebhook posts {id, reason}", async () => {
  const one = '{"id":"msg_1","type":"account.under_attack","tenant":"default","endpoint":"security","last_error":"status 503","attempts":17,"time":"2026-03-01T12:00:00Z","dead_at":"2026-03-02T12:00:00Z","extra":1}';
  const srv = await standIn((req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(req.method === "GET" ? `{"dead_letters":[${one}]}` : '{"replayed":true}');
  });
  try {
    const c = new Client({ baseURL: srv.base + "/prefix", token: "tok-d", timeoutMs: 5000 });
    const want = {
      id: "msg_1",
      type: "account.under_attack",
      tenant: "default",
      endpoint: "security",
      last_error: "status 503",
      attempts: 17,
      time: "2026-03-01T12:00:00Z",
      dead_at: "2026-03-02T12:00:00Z",
    };
    assert.deepEqual(await c.deadLetters(), [want]);
    assert.deepEqual(await c.deadLetters(5), [want]);
    assert.deepEqual(await c.replayWebhook({ id: "msg_1", reason: "receiver fixed" }), { replayed: true });
    assert.deepEqual(
      srv.requests.map((r) => [r.method, r.path, r.body, r.headers["authorization"]]),
      [
        ["GET", "/prefix/v1/admin/webhooks/dead-letters", "", "Bearer tok-d"],
        ["GET", "/prefix/v1/admin/webhooks/dead-letters?limit=5", "", "Bearer tok-d"],
        ["POST", "/prefix/v1/admin/webhooks/replay", '{"id":"msg_1","reason":"receiver fixed"}', "Bearer tok-d"],
      ],
    );
  } finally {
    await srv.close();
  }
  // null (Go's nil) is the empty list; a count that is not an integer is no answer.
  const nulls = await answering(200, { "content-type": "application/json" }, '{"dead_letters":null}');
  try {
    assert.deepEqual(await new Client({ baseURL: nulls.base, timeoutMs: 5000 }).deadLetters(), []);
  } finally {
    await nulls.close();
  }
  const wrong = await answering(200, { "content-type": "application/json" }, '{"dead_letters":[{"id":"msg_1","attempts":1.5}]}');
  try {
    await assert.rejects(new Client({ baseURL: wrong.base, timeoutMs: 5000 }).deadLetters(), (e: unknown) => e instanceof UnavailableError && e.op === "dead-letters" && /not the JSON/.test(e.message));
  } finally {
    await wrong.close();
  }
  // A limit from untyped code cannot add a query parameter of its own.
  const echo = await answering(200, { "content-type": "application/json" }, '{"dead_letters":[]}');
  try {
    await new Client({ baseURL: echo.base, timeoutMs: 5000 }).deadLetters("5&tenant=other" as unknown as number);
    assert.equal(echo.requests[0]?.path, "/v1/admin/webhooks/dead-letters?limit=5%26tenant%3Dother");
  } finally {
    await echo.close();
  }
  await assert.rejects(new Client({ baseURL: await closedPort() }).replayWebhook({ id: "x", reason: "r" }), (e: unknown) => e instanceof UnavailableError && e.op === "replay");
});

test("no error message, cause or inspection repeats a request value", async () => {
  const secrets = {
    account: "secret-account-7f3a@example.com",
    ip: "not-an-ip-secret-91",
    device_token: "secret-device-token-55",
    password_fingerprint: "secret-fingerprint-13",
    destination: "+99 secret 4242",
    attempt: "secret-attempt-88",
  };
  const leak = (v: Verdict, where: string): void => {
    assert.ok(v.error !== undefined, where);
    const text = [v.error.message, String(v.error), inspect(v.error, { depth: 8, showHidden: true }), JSON.stringify(v)].join("\n");
    for (const [k, s] of Object.entries(secrets)) assert.ok(!text.includes(s), `${where}: the error shows ${k}:\n${text}`);
  };
  const servers: Array<[string, () => Promise<StandIn | string>]> = [
    ["down", () => closedPort()],
    ["slow", () => standIn(() => undefined)],
    ["400", () => answering(400, { "content-type": "application/problem+json" }, '{"type":"https://tollgate.dev/problems/invalid-field","title":"Invalid field","status":400,"detail":"ip must be an IP address","field":"ip"}')],
    ["500 html", () => answering(500, { "content-type": "text/html" }, `<p>${secrets.account}</p>`)],
    ["bad JSON", () => answering(200, { "content-type": "application/json" }, `{"action": ${JSON.stringify(secrets.account)}`)],
    ["unknown action", () => answering(200, { "content-type": "application/json" }, `{"action":${JSON.stringify(secrets.account)}}`)],
  ];
  for (const [name, make] of servers) {
    const s = await make();
    const base = typeof s === "string" ? s : s.base;
    try {
      const c = new Client({ baseURL: base, timeoutMs: 100 });
      leak(await c.check({ flow: "login", account: secrets.account, ip: secrets.ip, device_token: secrets.device_token, password_fingerprint: secrets.password_fingerprint }, failOpen), `${name} check`);
      leak(await c.report({ flow: "login", account: secrets.account, ip: secrets.ip, outcome: "failure", attempt: secrets.attempt, device_token: secrets.device_token }, failOpen), `${name} report`);
      leak(await c.send({ destination: secrets.destination, channel: "sms", ip: secrets.ip, account: secrets.account }, failOpen), `${name} send`);
    } finally {
      if (typeof s !== "string") await s.close();
    }
  }
});

test("failOpen's allowance: GCRA buckets that refill evenly, a refusal spends nothing", async () => {
  let now = 1_700_000_000_000;
  const c = new Client({ baseURL: await closedPort(), failOpenPerAccount: 2, failOpenPerAddress: 3, failOpenWindowMs: 60_000, now: () => now });
  const check = (account: string, ip: string): Promise<Verdict> => c.check({ flow: "login", account, ip }, failOpen);
  assert.equal((await check("a", "192.0.2.1")).action, "proceed");
  assert.equal((await check("a", "192.0.2.2")).action, "proceed");
  const refused = await check("a", "192.0.2.3");
  assert.equal(refused.action, "delay");
  assert.deepEqual(refused.reasons, [reasonFallback, reasonFallbackAllowance]);
  assert.equal(refused.delay_ms, 1000);
  now += 29_999;
  assert.equal((await check("a", "192.0.2.4")).action, "delay", "one comes back every 30 s, not sooner");
  now += 1;
  assert.equal((await check("a", "192.0.2.5")).action, "proceed");
  // Address 192.0.2.9: three at once, then refused, without spending the accounts.
  for (const acct of ["b", "c", "d"]) assert.equal((await check(acct, "192.0.2.9")).action, "proceed");
  assert.equal((await check("e", "192.0.2.9")).action, "delay");
  assert.equal((await check("e", "192.0.2.10")).action, "proceed");
  assert.equal((await check("e", "192.0.2.11")).action, "proceed", "the refusal spent nothing of e");
  const st = c.stats();
  assert.equal(st.failOpenProceeds, 8);
  assert.equal(st.failOpenRefusedAccount, 2);
  assert.equal(st.failOpenRefusedAddress, 1);
  // A full window later every bucket has refilled and is dropped.
  now += 120_000;
  assert.equal((await check("z", "198.51.100.1")).action, "proceed");
  assert.equal(c.stats().trackedAccounts, 1);
  assert.equal(c.stats().trackedAddresses, 1);
  // Reports are neither held nor counted; failDelay and failCaptcha keep no allowance.
  for (let i = 0; i < 5; i++) {
    assert.equal((await c.report({ flow: "login", account: "z", ip: "198.51.100.1", outcome: "failure" }, failOpen)).action, "proceed");
    assert.equal((await c.check({ flow: "login", account: "z", ip: "198.51.100.1", captcha_solved: true }, failCaptcha)).action, "proceed");
  }
  assert.equal(c.stats().failOpenProceeds, 9);
});

test("failOpen's allowance: a full table evicts the subject closest to full, and holds no identifier", async () => {
  let now = 1_700_000_000_000;
  const c = new Client({ baseURL: await closedPort(), failOpenPerAccount: 1, failOpenPerAddress: -1, failOpenSubjects: 2, failOpenWindowMs: 60_000, now: () => now });
  const check = (account: string): Promise<Verdict> => c.check({ flow: "login", account, ip: "192.0.2.1" }, failOpen);
  assert.equal((await check("first-account@example.com")).action, "proceed");
  now += 10;
  assert.equal((await check("second-account@example.com")).action, "proceed");
  assert.equal((await check("second-account@example.com")).action, "delay");
  now += 10;
  assert.equal((await check("third-account@example.com")).action, "proceed", "a new subject takes a place");
  let st = c.stats();
  assert.equal(st.trackedAccounts, 2);
  assert.equal(st.evicted, 1);
  assert.equal((await check("first-account@example.com")).action, "proceed", "the evicted one (closest to full) got its allowance back");
  assert.equal((await check("third-account@example.com")).action, "delay", "the others were kept");
  st = c.stats();
  assert.equal(st.evicted, 2);
  assert.equal(st.trackedAccounts, 2);
  const seen = inspect(c, { depth: 10, showHidden: true });
  assert.ok(!seen.includes("account@example.com"), "the client holds no raw identifier");
  // Accounts fold for case and white space, and are per flow.
  const d = new Client({ baseURL: await closedPort(), failOpenPerAccount: 1, failOpenPerAddress: -1, now: () => now });
  assert.equal((await d.check({ flow: "login", account: "  Ünïcode  Name " }, failOpen)).action, "proceed");
  assert.equal((await d.check({ flow: "login", account: "ünïcode name" }, failOpen)).action, "delay");
  assert.equal((await d.check({ flow: "otp_verify", account: "ünïcode name" }, failOpen)).action, "proceed");
});

// One account written five ways that tollgate counts as one (full-width
// letters, a zero-width joiner, a zero-width non-joiner, İ, a full-width
// capital): during an outage they share one allowance of 5 proceeds, where
// a fold of case and white space alone gave each its own 5 (25).
test("TestFailOpen_FiveSpellingsOfOneAccountShareOneAllowance", async () => {
  const spellings = [
    "\uff41\uff4c\uff49\uff43\uff45@example.com",
    "al\u200dice@example.com",
    "al\u200cice@example.com",
    "al\u0130ce@example.com",
    "\uff21lice@example.com",
  ];
  const c = new Client({ baseURL: await closedPort(), failOpenPerAddress: -1, now: () => 1_700_000_000_000 });
  let n = 0;
  for (const account of spellings) {
    for (let i = 0; i < 5; i++) {
      const v = await c.check({ flow: "login", account, ip: `10.0.0.${i}` }, failOpen);
      assert.equal(v.fallback, true);
      if (v.action === "proceed") n++;
    }
  }
  assert.equal(n, 5, "the five spellings share one allowance");
});

test("check, report and send never reject, even on a missing request from untyped code", async () => {
  const c = new Client({ baseURL: await closedPort() });
  const noReq = undefined as never;
  assert.equal((await c.check(noReq, failOpen)).fallback, true);
  assert.equal((await c.report(noReq, failOpen)).action, "proceed");
  assert.equal((await c.send(noReq, "bogus" as never)).action, "delay", "an unknown mode answers as failDelay");
});
