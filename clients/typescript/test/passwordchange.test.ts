/**
 * Client.reportPasswordChanged and the Express guard's passwordChanged:
 * against a real tollgate ($TOLLGATE_BIN, or one built from this
 * repository) a stuffer's delay goes with the owner's password change;
 * against stand-ins, the exact body, and the errors a caller logs.
 */

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { Client, TollgateError, UnavailableError, failDelay, failOpen, type Verdict } from "../src/index.js";
import { tollgate, type GuardRequest } from "../src/express.js";
import { closedPort, standIn, startTollgate, tollgateBinary, type Tollgate } from "./helpers.js";

let tg: Tollgate | undefined;
let cleanup: () => void = () => undefined;
let client: Client;

before(async () => {
  const bin = tollgateBinary();
  cleanup = bin.cleanup;
  tg = await startTollgate(bin.path);
  client = new Client({ baseURL: tg.base, timeoutMs: 5000 });
});

after(async () => {
  await tg?.stop();
  cleanup();
});

/** Reports wrong passwords for account from ip until a check is delayed (at most 10); that check's verdict. */
async function stuff(account: string, ip: string): Promise<Verdict> {
  for (let i = 0; i < 10; i++) {
    const v = await client.check({ flow: "login", account, ip }, failDelay);
    assert.equal(v.error, undefined, String(v.error));
    if (v.action !== "proceed") return v;
    const r = await client.report({ flow: "login", account, ip, outcome: "failure", attempt: v.attempt }, failDelay);
    assert.equal(r.error, undefined, String(r.error));
  }
  assert.fail("no delay after 10 failures");
}

/**
 * Asserts that account's failures are gone (explain counts nothing, so
 * the delay cannot simply have run out on a slow machine) and that its
 * next login from ip goes ahead at once.
 */
async function ownerGetsIn(account: string, ip: string): Promise<void> {
  const x = await client.explain({ flow: "login", account });
  assert.equal(x.rules.find((r) => r.reason === "account_backoff")?.count ?? 0, 0, JSON.stringify(x.rules));
  const v = await client.check({ flow: "login", account, ip }, failDelay);
  assert.equal(v.error, undefined, String(v.error));
  assert.equal(v.fallback, false);
  assert.equal(v.action, "proceed", `after the password change: ${JSON.stringify(v)}`);
  assert.equal(v.delay_ms, 0);
}

/** A request as Node gives it, from the connection's address, with a forwarded header a client set. */
function request(remoteAddress: string): GuardRequest {
  return {
    socket: { remoteAddress },
    rawHeaders: ["X-Forwarded-For", "198.51.100.1"],
    headers: { "x-forwarded-for": "198.51.100.1" },
  } as unknown as GuardRequest;
}

describe("a real tollgate", () => {
  test("APasswordChangeAfterStuffingLetsTheOwnerInAtOnce: one call clears the stuffer's delay, no admin reset", async () => {
    const account = "stuffed@example.com";
    const ip = "203.0.113.40";
    const v = await stuff(account, ip);
    assert.equal(v.action, "delay");
    assert.ok(v.reasons.includes("account_backoff"), v.reasons.join());
    await client.reportPasswordChanged({ account, ip });
    await ownerGetsIn(account, ip);
  });

  test("APasswordChangeAfterStuffingLetsTheOwnerInAtOnce through the Express guard, from the connection's address", async () => {
    const account = "stuffed-express@example.com";
    const ip = "203.0.113.41";
    const guard = tollgate({ client, accountField: "username" });
    const v = await stuff(account, ip);
    assert.equal(v.action, "delay");
    await guard.passwordChanged(request(ip), account);
    await ownerGetsIn(account, ip);
  });

  test("a password change on the step-up flow is a TollgateError on outcome", async () => {
    await assert.rejects(client.reportPasswordChanged({ flow: "step_up", account: "x@example.com", ip: "203.0.113.42" }), (e: unknown) => {
      assert.ok(e instanceof TollgateError, String(e));
      assert.equal(e.status, 400);
      assert.equal(e.field, "outcome");
      return true;
    });
  });
});

describe("stand-ins", () => {
  test("the body is the wire's: flow, account as given, ip, outcome, and no attempt", async () => {
    const s = await standIn((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(`{"action":"proceed","delay_ms":0,"retry_after":0,"reasons":[]}`);
    });
    try {
      const c = new Client({ baseURL: s.base });
      await c.reportPasswordChanged({ account: "Alice@Example.com", ip: "203.0.113.7" });
      await c.reportPasswordChanged({ account: "alice@example.com", ip: "203.0.113.7", flow: "admin_login", ref: "u-1" });
      const guard = tollgate({ client: c, accountField: "username", flow: "shop_login" });
      await guard.passwordChanged(request("203.0.113.8"), "alice@example.com");
      await assert.rejects(guard.passwordChanged(request(""), "alice@example.com"), /no client address/);
      assert.deepEqual(s.requests.map((r) => [r.method, r.path, r.contentType, r.body]), [
        ["POST", "/v1/report", "application/json", `{"flow":"login","account":"Alice@Example.com","ip":"203.0.113.7","outcome":"password_changed"}`],
        ["POST", "/v1/report", "application/json", `{"flow":"admin_login","account":"alice@example.com","ip":"203.0.113.7","outcome":"password_changed","ref":"u-1"}`],
        ["POST", "/v1/report", "application/json", `{"flow":"shop_login","account":"alice@example.com","ip":"203.0.113.8","outcome":"password_changed"}`],
      ]);
    } finally {
      await s.close();
    }
  });

  test("tollgate down: an UnavailableError to log, naming no one; the client goes on", async () => {
    const c = new Client({ baseURL: await closedPort() });
    await assert.rejects(c.reportPasswordChanged({ account: "alice@example.com", ip: "203.0.113.7" }), (e: unknown) => {
      assert.ok(e instanceof UnavailableError, String(e));
      assert.ok(!String(e).includes("alice") && !String(e).includes("203.0.113.7"), String(e));
      return true;
    });
    const v = await c.check({ flow: "login", account: "alice@example.com", ip: "203.0.113.7" }, failOpen);
    assert.equal(v.fallback, true);
    assert.equal(v.action, "proceed");
  });
});
