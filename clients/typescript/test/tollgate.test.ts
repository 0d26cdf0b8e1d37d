/**
 * Against a real tollgate: $TOLLGATE_BIN, or one built from this
 * repository, started on 127.0.0.1 and a free port with the memory store
 * and the built-in policy (and, for each group of tests that needs one, a
 * server reading a configuration file: reload, webhooks, a breached
 * corpus, the held-subjects index with auth), and killed by PID at the end.
 */

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";

import {
  Client,
  DeviceCookie,
  Responder,
  TollgateError,
  failCaptcha,
  problemBase,
  failDelay,
  failOpen,
  passwordRange,
  type Answer,
  type Verdict,
} from "../src/index.js";
import { standIn, startTollgate, tollgateBinary, type StandIn, type Tollgate } from "./helpers.js";

let tg: Tollgate | undefined;
let binPath = "";
let cleanup: () => void = () => undefined;
let client: Client;
const responder = new Responder();

/**
 * The built-in policy's flows, sorted as reload names them, from
 * `tollgate validate-config -json` without a file: the policy says which
 * flows it has, so a flow added to it needs no edit here.
 */
function builtInFlows(): string[] {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("TOLLGATE_")));
  const out = execFileSync(binPath, ["validate-config", "-json"], { env, timeout: 60_000 });
  const flows = (JSON.parse(out.toString("utf8")) as { flows: { name: string }[] }).flows.map((f) => f.name).sort();
  assert.ok(flows.includes("login"), flows.join(","));
  return flows;
}

/** A generous per-call timeout: the test machine may be slow; the default stays 250 ms elsewhere. */
const timeoutMs = 5000;

before(async () => {
  const bin = tollgateBinary();
  cleanup = bin.cleanup;
  binPath = bin.path;
  tg = await startTollgate(bin.path);
  client = new Client({ baseURL: tg.base, timeoutMs });
});

after(async () => {
  await tg?.stop();
  cleanup();
});

/** check, then report a failure with the check's attempt token; the check's verdict. */
async function failOnce(account: string, ip: string): Promise<Verdict> {
  const v = await client.check({ flow: "login", account, ip }, failDelay);
  assert.equal(v.error, undefined, String(v.error));
  if (v.action === "proceed") {
    const r = await client.report({ flow: "login", account, ip, outcome: "failure", attempt: v.attempt }, failDelay);
    assert.equal(r.error, undefined, String(r.error));
  }
  return v;
}

/** Fails account from ip until a check is delayed (at most 10 tries); that check's verdict. */
async function failUntilDelayed(account: string, ip: string): Promise<Verdict> {
  for (let i = 0; i < 10; i++) {
    const v = await failOnce(account, ip);
    if (v.action !== "proceed") return v;
  }
  assert.fail("no delay after 10 failures");
}

/** Waits until the check of account from ip proceeds again (at most 20 s); that verdict. */
async function waitForProceed(account: string, ip: string): Promise<Verdict> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const v = await client.check({ flow: "login", account, ip }, failDelay);
    if (v.action === "proceed" || Date.now() > deadline) return v;
    await sleep(Math.min(Math.max(v.delay_ms, 50), 5000));
  }
}

describe("a real tollgate", () => {
  test("check, then report a failure with the attempt token", async () => {
    const v = await client.check({ flow: "login", account: "roundtrip@example.com", ip: "203.0.113.10" }, failDelay);
    assert.equal(v.error, undefined);
    assert.equal(v.fallback, false);
    assert.equal(v.action, "proceed");
    assert.ok(v.attempt.length > 0, "a proceed carries an attempt token");
    assert.deepEqual(v.reasons, []);
    const r = await client.report(
      { flow: "login", account: "roundtrip@example.com", ip: "203.0.113.10", outcome: "failure", attempt: v.attempt },
      failDelay,
    );
    assert.equal(r.error, undefined);
    assert.equal(r.fallback, false);
    assert.equal(r.action, "proceed");
    assert.equal(r.attempt, "");
    assert.equal(r.device_token, "");
  });

  test("repeated failures give a delay, answered 429 with a Retry-After that grows", async () => {
    const account = "grows@example.com";
    const ip = "203.0.113.11";
    const waits: number[] = [];
    for (let round = 0; round < 3; round++) {
      const v = round === 0 ? await failUntilDelayed(account, ip) : await failOnceAfterWait(account, ip);
      assert.equal(v.action, "delay");
      assert.ok(v.reasons.includes("account_backoff"), v.reasons.join());
      const a = responder.respond(v);
      assert.equal(a.proceed, false);
      assert.equal(a.status, 429);
      assert.equal(a.headers["ratelimit"], `"login";r=0;t=${a.headers["retry-after"]}`);
      assert.equal(a.headers["cache-control"], "no-store");
      waits.push(Number(a.headers["retry-after"]));
    }
    assert.ok(waits[0]! >= 1 && waits[1]! > waits[0]! && waits[2]! > waits[1]!, `Retry-After ${waits.join(", ")} does not grow`);
  });

  /** Waits out the delay, fails once more, and answers the next check (a delay again). */
  async function failOnceAfterWait(account: string, ip: string): Promise<Verdict> {
    const v = await waitForProceed(account, ip);
    assert.equal(v.action, "proceed");
    await client.report({ flow: "login", account, ip, outcome: "failure", attempt: v.attempt }, failDelay);
    return client.check({ flow: "login", account, ip }, failDelay);
  }

  test("a success returns a device token; the cookie carries it and a check with it proceeds while the account is delayed", async () => {
    const account = "device@example.com";
    const ip = "203.0.113.12";
    const cookie = new DeviceCookie();
    const v = await client.check({ flow: "login", account, ip }, failOpen);
    assert.equal(v.action, "proceed");
    const ok = await client.report({ flow: "login", account, ip, outcome: "success", attempt: v.attempt }, failDelay);
    assert.equal(ok.error, undefined);
    assert.ok(ok.device_token.length > 0, "a success report carries a device token");
    // Round trip through the cookie: Set-Cookie, then the browser's Cookie field.
    const setCookie = cookie.setCookie(ok.device_token);
    assert.ok(setCookie !== undefined);
    assert.match(setCookie, /^__Host-tollgate-device=[^;]+; Path=\/; Max-Age=7776000; HttpOnly; Secure; SameSite=Lax$/);
    const sent = "theme=dark; " + setCookie.split(";")[0];
    const token = cookie.token(sent);
    assert.equal(token, ok.device_token);
    // An attacker without the device fails the account into a delay...
    const delayed = await failUntilDelayed(account, "198.51.100.77");
    assert.equal(delayed.action, "delay");
    // ...and the owner's device goes ahead at once.
    const mine = await client.check({ flow: "login", account, ip, device_token: token }, failDelay);
    assert.equal(mine.error, undefined);
    assert.equal(mine.action, "proceed");
    assert.equal(responder.respond(mine).proceed, true);
  });

  test("send returns a verdict", async () => {
    const v = await client.send({ destination: "+44 7400 123456", channel: "sms", ip: "203.0.113.13" }, failCaptcha);
    assert.equal(v.error, undefined, String(v.error));
    assert.equal(v.fallback, false);
    assert.ok(["proceed", "delay", "captcha", "deny"].includes(v.action));
    const again = await client.send({ flow: "otp_send", destination: "+44 7400 123456", channel: "sms", ip: "203.0.113.13" }, failCaptcha);
    assert.equal(again.error, undefined);
    assert.notEqual(again.action, "proceed", "a second code at once is not sent");
    const a = responder.respond(again);
    assert.equal(a.proceed, false);
  });

  test("a bad request is a TollgateError on its field, and every fail mode answers closed", async () => {
    for (const mode of [failOpen, failDelay, failCaptcha]) {
      const v = await client.check({ flow: "login", account: "secret-account@example.com", ip: "not-an-ip", captcha_solved: true }, mode);
      assert.equal(v.fallback, true);
      assert.ok(v.error instanceof TollgateError, String(v.error));
      assert.equal(v.error.status, 400);
      assert.equal(v.error.field, "ip");
      assert.equal(v.error.type, "https://tollgate.dev/problems/invalid-field");
      assert.ok(v.error.requestId !== "", "the request id is kept");
      assert.equal(v.error.unavailable, false);
      assert.equal(v.action, mode === failCaptcha ? "captcha" : "delay", mode);
      assert.doesNotMatch(v.error.message, /not-an-ip|secret-account/, "the message repeats no request value");
      assert.equal(responder.respond(v).proceed, false);
    }
    // The admin calls reject with it.
    await assert.rejects(client.explain({ flow: "login", ip: "not-an-ip" }), (e: unknown) => e instanceof TollgateError && e.field === "ip");
  });

  test("explain and reset", async () => {
    const account = "explained@example.com";
    const ip = "203.0.113.14";
    await failUntilDelayed(account, ip);
    const x = await client.explain({ flow: "login", account });
    assert.equal(x.flow, "login");
    assert.equal(x.verdict.action, "delay");
    const backoff = x.rules.find((r) => r.reason === "account_backoff");
    assert.ok(backoff !== undefined, JSON.stringify(x.rules));
    assert.ok(backoff.count >= 5);
    assert.equal(backoff.facet, "");
    const fromIP = await client.explain({ flow: "login", account, ip });
    const record = fromIP.rules.find((r) => r.facet === "known_network");
    assert.ok(record !== undefined, JSON.stringify(fromIP.rules));
    assert.equal(record.over, false, "a network the account never succeeded from is not known");
    assert.equal(record.subject, "account+network");
    assert.ok(Array.isArray(x.entries));
    const r = await client.reset({ flow: "login", account, reason: "client test", ref: "user-8c1f2e" });
    assert.ok(r.deleted >= 1, `deleted ${r.deleted}`);
    const v = await client.check({ flow: "login", account, ip }, failDelay);
    assert.equal(v.action, "proceed");
  });

  test("allow, deny, entries and remove", async () => {
    const e = await client.deny({ ip_range: "192.0.2.0/24", action: "captcha", expires_in: "1h", reason: "client test" });
    assert.equal(e.kind, "captcha");
    assert.equal(e.subject, "ip_range");
    assert.equal(e.length, 24);
    const v = await client.check({ flow: "login", account: "entry@example.com", ip: "192.0.2.9" }, failDelay);
    assert.equal(v.action, "captcha");
    const all = await client.entries("login");
    assert.ok(all.some((x) => x.id === e.id));
    const gone = await client.remove({ id: e.id, reason: "client test" });
    assert.equal(gone.removed, true);
    assert.equal((await client.remove({ id: e.id, reason: "client test" })).removed, false);
    const a = await client.allow({ ip_range: "198.18.0.0/15", expires_in: "1h", reason: "client test" });
    assert.equal(a.kind, "allow");
    await client.remove({ id: a.id, reason: "client test" });
  });

  test("an unknown account and a wrong password get the same answer", async () => {
    // tollgate never knows which accounts exist: the caller reports both alike, and the answers are the same bytes.
    const known = "alice-known@example.com";
    const unknown = "nobody-at-all@example.com";
    const answers = async (account: string, ip: string): Promise<Answer[]> => {
      const out: Answer[] = [];
      for (let i = 0; i < 6; i++) {
        const v = await client.check({ flow: "login", account, ip }, failDelay);
        const a = responder.respond(v);
        out.push(a);
        if (!a.proceed) continue;
        await client.report({ flow: "login", account, ip, outcome: "failure", attempt: v.attempt }, failDelay);
      }
      return out;
    };
    const [k, u] = await Promise.all([answers(known, "203.0.113.15"), answers(unknown, "203.0.113.16")]);
    assert.deepEqual(k, u);
    assert.equal(k.at(-1)?.status, 429);
  });

  test("reload re-reads the configuration (here none: the built-in policy) and answers its flows", async () => {
    const r = await client.reload();
    assert.deepEqual(r, { flows: builtInFlows(), restart_needed: [] });
    const v = await client.check({ flow: "login", account: "after-reload@example.com", ip: "203.0.113.18" }, failDelay);
    assert.equal(v.error, undefined, String(v.error));
    assert.equal(v.action, "proceed");
  });

  test("tollgate's default timeout is enough on loopback", async () => {
    const quick = new Client({ baseURL: tg!.base });
    const v = await quick.check({ flow: "login", account: "quick@example.com", ip: "203.0.113.17" }, failDelay);
    assert.equal(v.error, undefined, String(v.error));
  });
});

describe("reload of a real tollgate's configuration file (TOLLGATE_CONFIG)", () => {
  const before1 = ["flows:", "  login:", "    rules:", "      - name: account_backoff", "        free: 3", ""].join("\n");
  // A new flow, and a setting that only a restart applies.
  const after1 = [
    "log_level: debug",
    "flows:",
    "  login:",
    "    rules:",
    "      - name: account_backoff",
    "        free: 5",
    "  signup:",
    "    rules:",
    "      - name: ip_minute",
    "        subject: ip",
    "        algorithm: fixed_window",
    "        counts: check",
    "        limit: 2",
    "        window: 1m",
    "        past: delay",
    "",
  ].join("\n");
  // Line 16: a rule that does not validate (no subject, an unknown algorithm).
  const broken = after1 + "      - name: broken\n        algorithm: nonsense\n";

  let dir = "";
  let file = "";
  let server: Tollgate | undefined;
  let c: Client;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "tollgate-ts-reload-"));
    file = join(dir, "tollgate.yaml");
    writeFileSync(file, before1);
    server = await startTollgate(binPath, { TOLLGATE_CONFIG: file });
    c = new Client({ baseURL: server.base, timeoutMs });
  });

  after(async () => {
    await server?.stop();
    if (dir !== "") rmSync(dir, { recursive: true, force: true });
  });

  test("a changed file: its flows at once, and what needs a restart", async () => {
    const unknown = await c.check({ flow: "signup", ip: "192.0.2.50" }, failDelay);
    assert.ok(unknown.error instanceof TollgateError && unknown.error.field === "flow", String(unknown.error));
    const builtIn = builtInFlows(); // a file's flows come on top of the built-in ones
    assert.ok(!builtIn.includes("signup"), builtIn.join(","));
    assert.deepEqual(await c.reload(), { flows: builtIn, restart_needed: [] });
    writeFileSync(file, after1);
    assert.deepEqual(await c.reload(), { flows: [...builtIn, "signup"].sort(), restart_needed: ["log_level"] });
    const v = await c.check({ flow: "signup", ip: "192.0.2.50" }, failDelay);
    assert.equal(v.error, undefined, String(v.error));
    assert.equal(v.action, "proceed");
  });

  test("a file that does not validate: a 409 config-invalid TollgateError naming the line; the running policy stays", async () => {
    writeFileSync(file, after1);
    await c.reload();
    writeFileSync(file, broken);
    const err = await c.reload().then(
      (r) => assert.fail(`reload of a bad file answered ${JSON.stringify(r)}`),
      (e: unknown) => e,
    );
    assert.ok(err instanceof TollgateError, String(err));
    assert.equal(err.op, "reload");
    assert.equal(err.status, 409);
    assert.equal(err.type, problemBase + "config-invalid");
    assert.equal(err.unavailable, false);
    assert.match(err.detail, /\bline 16\b/);
    assert.ok(err.requestId !== "", "the request id is kept");
    assert.ok(err.message.startsWith("tollgate: reload: 409 config-invalid: "), err.message);
    // The policy of the last good file still runs: signup is a flow.
    const v = await c.check({ flow: "signup", ip: "192.0.2.51" }, failDelay);
    assert.equal(v.error, undefined, String(v.error));
    // Mended, the file reloads again.
    writeFileSync(file, after1);
    assert.deepEqual((await c.reload()).restart_needed, ["log_level"]);
  });
});

describe("the webhook dead letters of a real tollgate with a webhooks section (TOLLGATE_CONFIG)", () => {
  let dir = "";
  let receiver: StandIn | undefined;
  let server: Tollgate | undefined;
  let c: Client;

  before(async () => {
    // The endpoint: a receiver of this test on loopback (tollgate sends plain http to loopback only).
    receiver = await standIn((_req, res) => {
      res.writeHead(204);
      res.end();
    });
    dir = mkdtempSync(join(tmpdir(), "tollgate-ts-webhooks-"));
    const secret = join(dir, "webhook-secret");
    writeFileSync(secret, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n");
    const file = join(dir, "tollgate.yaml");
    writeFileSync(
      file,
      ["webhooks:", "  endpoints:", "    - name: security", `      url: ${receiver.base}/tollgate/events`, `      secret_file: ${secret}`, ""].join("\n"),
    );
    server = await startTollgate(binPath, { TOLLGATE_CONFIG: file });
    c = new Client({ baseURL: server.base, timeoutMs });
  });

  after(async () => {
    await server?.stop();
    await receiver?.close();
    if (dir !== "") rmSync(dir, { recursive: true, force: true });
  });

  test("no dead letters is an empty list, with or without a limit", async () => {
    assert.deepEqual(await c.deadLetters(), []);
    assert.deepEqual(await c.deadLetters(1000), []);
  });

  test("a replay of an id tollgate never gave up on replays nothing", async () => {
    assert.deepEqual(await c.replayWebhook({ id: "msg_never_was", reason: "client test" }), { replayed: false });
  });

  test("a limit out of 1 to 1000 is a TollgateError of type invalid-field on limit", async () => {
    for (const limit of [0, 1001, 1.5]) {
      const err = await c.deadLetters(limit).then(
        (l) => assert.fail(`deadLetters(${limit}) answered ${JSON.stringify(l)}`),
        (e: unknown) => e,
      );
      assert.ok(err instanceof TollgateError, String(err));
      assert.equal(err.op, "dead-letters");
      assert.equal(err.status, 400);
      assert.equal(err.type, problemBase + "invalid-field");
      assert.equal(err.field, "limit");
      assert.equal(err.unavailable, false);
    }
  });

  test("a replay without a reason is a TollgateError on reason", async () => {
    await assert.rejects(c.replayWebhook({ id: "msg_x", reason: "" }), (e: unknown) => e instanceof TollgateError && e.status === 400 && e.field === "reason" && e.op === "replay");
  });

  test("a server without a webhooks section answers not-found, not an empty list", async () => {
    for (const call of [() => client.deadLetters(), () => client.replayWebhook({ id: "msg_x", reason: "client test" })]) {
      const err = await call().then(
        (r) => assert.fail(`a server without webhooks answered ${JSON.stringify(r)}`),
        (e: unknown) => e,
      );
      assert.ok(err instanceof TollgateError, String(err));
      assert.equal(err.status, 404);
      assert.equal(err.type, problemBase + "not-found");
      assert.equal(err.unavailable, false);
    }
  });
});

describe("the README's login (examples/readme.ts) against a real tollgate", () => {
  test("five wrong passwords, then 429; the owner's device cookie still signs in", async () => {
    process.env["TOLLGATE_URL"] = tg!.base;
    const { server } = await import("../examples/readme.js");
    await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
    const { port } = server.address() as import("node:net").AddressInfo;
    const post = async (body: string, headers: Record<string, string> = {}): Promise<Response> =>
      fetch(`http://127.0.0.1:${port}/login`, { method: "POST", body, redirect: "manual", headers: { "content-type": "application/x-www-form-urlencoded", ...headers } });
    try {
      const first = await post("user=alice&password=correct+horse", { "x-forwarded-for": "203.0.113.20" });
      assert.equal(first.status, 303);
      const setCookie = first.headers.get("set-cookie") ?? "";
      assert.match(setCookie, /^__Host-tollgate-device=/);
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) {
        const r = await post("user=alice&password=wrong", { "x-forwarded-for": `198.51.100.${30 + i}` });
        statuses.push(r.status);
        if (r.status === 429) assert.equal(r.headers.get("retry-after"), "1");
      }
      assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429]);
      const stranger = await post("user=alice&password=correct+horse", { "x-forwarded-for": "198.51.100.99" });
      assert.equal(stranger.status, 429, "the right password without the device waits too");
      const owner = await post("user=alice&password=correct+horse", { "x-forwarded-for": "203.0.113.20", cookie: setCookie.split(";")[0]! });
      assert.equal(owner.status, 303, "the owner's device goes ahead at once");
    } finally {
      server.closeAllConnections();
      await new Promise<void>((ok) => server.close(() => ok()));
    }
  });
});

describe("breached passwords and step-up with a real tollgate that has a corpus (TOLLGATE_CONFIG breached.corpus)", () => {
  let dir = "";
  let server: Tollgate | undefined;
  let c: Client;
  const breached = "correct horse battery staple"; // in the corpus below
  const clean = "tollgate-never-breached-8f3a";

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "tollgate-ts-breached-"));
    const corpus = join(dir, "corpus.txt");
    const sha1 = (p: string) => { const r = passwordRange(p); return r.prefix + r.suffix; };
    writeFileSync(corpus, [`${sha1(breached)}:418`, `${sha1("password")}:9659365`].sort().join("\n") + "\n");
    const file = join(dir, "tollgate.yaml");
    writeFileSync(file, ["breached:", `  corpus: ${JSON.stringify(corpus)}`, ""].join("\n"));
    server = await startTollgate(binPath, { TOLLGATE_CONFIG: file });
    c = new Client({ baseURL: server.base, timeoutMs, breachedTimeoutMs: timeoutMs });
  });

  after(async () => {
    await server?.stop();
    if (dir !== "") rmSync(dir, { recursive: true, force: true });
  });

  test("breached asks the padded range and matches it here; tollgate without a corpus is not breached", async () => {
    assert.equal(await c.breached(breached), true);
    assert.equal(await c.breached("password"), true);
    assert.equal(await c.breached(clean), false);
    assert.equal(await client.breached(breached), false, "no corpus: 404 breached-off, not breached");
  });

  test("AStolenBreachedPasswordGetsNoSessionWithoutTheSecondFactor: step_up with a ticket; a wrong code is counted on step_up; the right one gives the device token", async () => {
    const ip = "203.0.113.150";
    const v = await c.check({ flow: "login", account: "stepper", ip }, failDelay);
    assert.equal(v.action, "proceed", String(v.error));
    const r = await c.report({ flow: "login", account: "stepper", ip, outcome: "success", attempt: v.attempt, breached: true }, failDelay);
    assert.equal(r.action, "step_up", String(r.error));
    assert.ok(r.reasons.includes("breached_password"), r.reasons.join(","));
    assert.equal(r.device_token, "", "no device token before the second factor");
    assert.notEqual(r.attempt, "", "the ticket");
    assert.equal(responder.respond(r).proceed, false, "not a login yet");

    const ck = await c.check({ flow: "step_up", account: "stepper", ip }, failDelay);
    assert.equal(ck.action, "proceed", String(ck.error));
    const failed = await c.reportStepUp({ account: "stepper", ip, ticket: r.attempt, passed: false }, failDelay);
    assert.equal(failed.error, undefined, String(failed.error));
    const forged = await c.reportStepUp({ account: "someone-else", ip, ticket: r.attempt, passed: true }, failOpen);
    assert.ok(forged.error instanceof TollgateError && forged.error.field === "attempt", `a ticket for another account: ${String(forged.error)}`);
    assert.equal(forged.action, "delay", "refused: closed whatever the mode");
    const passed = await c.reportStepUp({ account: "stepper", ip, ticket: r.attempt, passed: true }, failDelay);
    assert.equal(passed.action, "proceed", String(passed.error));
    assert.notEqual(passed.device_token, "", "the device token once the second factor passed");

    // TheOwnersKnownDeviceSignsInWithoutStepUp: the same password again, from that device.
    const v2 = await c.check({ flow: "login", account: "stepper", ip, device_token: passed.device_token }, failDelay);
    const r2 = await c.report({ flow: "login", account: "stepper", ip, outcome: "success", attempt: v2.attempt, device_token: passed.device_token, breached: true }, failDelay);
    assert.equal(r2.action, "proceed", `the known device: ${r2.action} ${r2.reasons.join(",")}`);
  });
});

describe("the held subjects of a real tollgate with the index on and auth (TOLLGATE_CONFIG store.held_index_bytes, HS256 tokens)", () => {
  let dir = "";
  let server: Tollgate | undefined;
  let admin: Client; // verdicts, admin:read and admin:write
  let reader: Client; // verdicts and admin:read
  let caller: Client; // verdicts only
  let anonymous: Client; // no token
  const reason = "test: incident 31 ended";

  /** A token from `tollgate token` for the tenant shop, signed with the HS256 secret the server's file trusts. */
  function token(file: string, key: string, scopes: string): string {
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("TOLLGATE_")));
    const args = ["token", "-key", key, "-alg", "HS256", "-kid", "local", "-config", file, "-tenant", "shop", "-scopes", scopes, "-ttl", "30m"];
    return execFileSync(binPath, args, { env, timeout: 60_000 }).toString("utf8").trim();
  }

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "tollgate-ts-held-"));
    const key = join(dir, "hs256.key");
    writeFileSync(key, "held-subjects-test-secret-of-more-than-32-bytes\n", { mode: 0o600 });
    const file = join(dir, "tollgate.yaml");
    writeFileSync(file, [
      "store:",
      "  held_index_bytes: 16MiB",
      "auth:",
      "  audience: tollgate",
      "  keys:",
      `    - {id: local, alg: HS256, secret_file: ${JSON.stringify(key)}}`,
      "  tenants:",
      '    - {name: shop, issuer: "https://auth.shop.example"}',
      "",
    ].join("\n"));
    server = await startTollgate(binPath, { TOLLGATE_CONFIG: file });
    admin = new Client({ baseURL: server.base, timeoutMs, token: token(file, key, "verdicts admin:read admin:write") });
    reader = new Client({ baseURL: server.base, timeoutMs, token: token(file, key, "verdicts admin:read") });
    caller = new Client({ baseURL: server.base, timeoutMs, token: token(file, key, "verdicts") });
    anonymous = new Client({ baseURL: server.base, timeoutMs });
  });

  after(async () => {
    await server?.stop();
    if (dir !== "") rmSync(dir, { recursive: true, force: true });
  });

  /**
   * Fails account from ip with real checks and reports until a check is
   * delayed, then reports three failures more: a wait of seconds, which a
   * slow machine cannot run out before the list is read.
   */
  async function hold(account: string, ip: string): Promise<void> {
    for (let i = 0; ; i++) {
      assert.ok(i < 10, `${account} not delayed after 10 failures`);
      const v = await admin.check({ flow: "login", account, ip }, failDelay);
      assert.equal(v.error, undefined, String(v.error));
      if (v.action !== "proceed") break;
      const r = await admin.report({ flow: "login", account, ip, outcome: "failure", attempt: v.attempt }, failDelay);
      assert.equal(r.error, undefined, String(r.error));
    }
    for (let i = 0; i < 3; i++) {
      const r = await admin.report({ flow: "login", account, ip, outcome: "failure" }, failDelay);
      assert.equal(r.error, undefined, String(r.error));
    }
  }

  /** The action of a check of account from ip now. */
  async function actionOf(account: string, ip: string): Promise<string> {
    const v = await admin.check({ flow: "login", account, ip }, failDelay);
    assert.equal(v.error, undefined, String(v.error));
    return v.action;
  }

  test("an operator lists the accounts a guesser holds, page by page with the counts, dry-runs the reset, then frees them in one call", async () => {
    const held = { "held-one@example.com": "203.0.113.160", "held-two@example.com": "203.0.113.161" };
    for (const [account, ip] of Object.entries(held)) await hold(account, ip);

    const l = await admin.held({ flow: "login", kind: "account" });
    assert.deepEqual(l.subjects.map((s) => s.subject).sort(), Object.keys(held));
    for (const s of l.subjects) {
      assert.deepEqual([s.flow, s.kind, s.rule, s.reason, s.over], ["login", "account", "account_backoff", "account_backoff", false], s.subject);
      assert.ok(s.wait_ms > 0, `${s.subject}: wait_ms ${s.wait_ms}`);
      assert.ok(s.expires_in_ms >= s.wait_ms, `${s.subject}: expires_in_ms ${s.expires_in_ms} < wait_ms ${s.wait_ms}`);
      assert.ok(!Number.isNaN(Date.parse(s.since)), `since ${s.since}`);
    }
    assert.equal(l.next, "");
    assert.deepEqual(l.counts, { "login:account": 2 });

    const p1 = await reader.held({ flow: "login", kind: "account", limit: 1 });
    assert.equal(p1.subjects.length, 1);
    assert.notEqual(p1.next, "", "a next page");
    const p2 = await reader.held({ flow: "login", kind: "account", limit: 1, cursor: p1.next });
    assert.equal(p2.next, "", "the last page");
    assert.deepEqual([...p1.subjects, ...p2.subjects].map((s) => s.subject).sort(), Object.keys(held));
    assert.deepEqual(p2.counts, { "login:account": 2 }, "every page's counts");
    assert.deepEqual((await admin.held({ flow: "login", kind: "ip" })).subjects, []);

    const dry = await admin.resetHeld({ flow: "login", kind: "account", reason, dry_run: true });
    assert.deepEqual(dry, { matched: 2, reset: 0, deleted: 0, dry_run: true });
    assert.equal((await admin.held({ flow: "login", kind: "account" })).subjects.length, 2, "a dry run frees nobody");
    for (const [account, ip] of Object.entries(held)) assert.equal(await actionOf(account, ip), "delay", account);

    const done = await admin.resetHeld({ flow: "login", kind: "account", reason });
    assert.deepEqual([done.matched, done.reset, done.dry_run], [2, 2, false]);
    assert.ok(done.deleted > 0, `deleted ${done.deleted}`);
    const after = await admin.held({ flow: "login" });
    assert.deepEqual(after.subjects, []);
    assert.equal(after.counts["login:account"] ?? 0, 0, JSON.stringify(after.counts));
    for (const [account, ip] of Object.entries(held)) assert.equal(await actionOf(account, ip), "proceed", account);
  });

  test("a held call refused (no reason, a scope short, no token) changes nothing and names nobody; one reset naming the account frees it", async () => {
    const account = "held-three@example.com";
    const ip = "203.0.113.162";
    await hold(account, ip);
    const refused = async (call: Promise<unknown>, status: number, type: string): Promise<void> => {
      await assert.rejects(call, (e: unknown) => {
        assert.ok(e instanceof TollgateError, String(e));
        assert.deepEqual([e.status, e.type], [status, problemBase + type]);
        assert.ok(!String(e).includes(account) && !e.detail.includes(account), "the error names nobody");
        return true;
      });
    };
    await refused(admin.resetHeld({ flow: "login", subjects: [account], reason: "" }), 400, "missing-field");
    await refused(reader.resetHeld({ flow: "login", subjects: [account], reason }), 403, "forbidden");
    await refused(caller.held({ flow: "login" }), 403, "forbidden");
    await refused(anonymous.held({ flow: "login" }), 401, "unauthenticated");
    const l = await reader.held({ flow: "login", kind: "account" });
    assert.deepEqual(l.subjects.map((s) => s.subject), [account], "still held");
    assert.equal(await actionOf(account, ip), "delay");

    const r = await admin.resetHeld({ flow: "login", subjects: [account], reason });
    assert.deepEqual([r.matched, r.reset, r.dry_run], [1, 1, false]);
    assert.deepEqual((await admin.held({ flow: "login", kind: "account" })).subjects, []);
    assert.equal(await actionOf(account, ip), "proceed");
  });
});
