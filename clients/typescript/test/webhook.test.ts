/**
 * verifyWebhook beyond the shared vectors (which test/vectors.test.ts runs):
 * Node's header shapes, the options, and what its errors may hold.
 */

import assert from "node:assert/strict";
import { createHmac, randomBytes } from "node:crypto";
import { test } from "node:test";

import { verifyWebhook, WebhookVerificationError, type WebhookEvent } from "../src/index.js";

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const body = JSON.stringify({
  type: "account.under_attack",
  timestamp: "2026-01-01T00:00:00Z",
  tenant: "default",
  data: { flow: "login", rule: "account_backoff", reason: "account_backoff", subject: "alice@example.com", ref: "user-42", details: { failures: 120 } },
});
const now = 1767225600;

function sign(sec: string, id: string, ts: number, b: string): string {
  const key = Buffer.from(sec.replace(/^whsec_/, ""), "base64");
  return "v1," + createHmac("sha256", key).update(`${id}.${ts}.${b}`).digest("base64");
}

function kind(f: () => unknown): string {
  try {
    f();
    return "ok";
  } catch (e) {
    if (e instanceof WebhookVerificationError) return e.kind;
    throw e;
  }
}

test("webhook: a rotated secret's signature on a second header line (Node's string[]) is accepted", () => {
  const old = "whsec_" + randomBytes(32).toString("base64");
  const headers = { "webhook-id": "msg_1", "webhook-timestamp": String(now), "webhook-signature": [sign(old, "msg_1", now, body), sign(secret, "msg_1", now, body)] };
  const e: WebhookEvent = verifyWebhook(secret, headers, Buffer.from(body), { now: now * 1000 });
  assert.equal(e.id, "msg_1");
  assert.equal(e.data.ref, "user-42");
  if (e.type === "account.under_attack") assert.equal(e.data.details["failures"], 120);
  else assert.fail(`type ${e.type}`);
});

test("webhook: a replay an hour later is refused unless the tolerance allows it", () => {
  const headers = { "webhook-id": "msg_1", "webhook-timestamp": String(now), "webhook-signature": sign(secret, "msg_1", now, body) };
  const later = new Date((now + 3600) * 1000);
  assert.equal(kind(() => verifyWebhook(secret, headers, body, { now: later })), "timestamp");
  assert.equal(kind(() => verifyWebhook(secret, headers, body, { now: later, toleranceSeconds: 7200 })), "ok");
  assert.equal(kind(() => verifyWebhook(secret, headers, body, { now: (now + 301) * 1000, toleranceSeconds: 0 })), "timestamp");
  assert.equal(kind(() => verifyWebhook(secret, headers, body, { now: Number.NaN })), "timestamp");
});

test("webhook: errors never hold the body, a header's value or the secret", () => {
  const b = '{"type":7,"data":{"subject":"victim@example.com"}}';
  const cases = [
    { "webhook-id": "msg_secretid", "webhook-timestamp": String(now), "webhook-signature": sign(secret, "msg_secretid", now, b) },
    { "webhook-id": "msg_secretid", "webhook-timestamp": String(now), "webhook-signature": "v1,forgedforged" },
    { "webhook-id": "msg_secretid", "webhook-timestamp": "forgedforged", "webhook-signature": "v1,x" },
  ];
  for (const h of cases) {
    try {
      verifyWebhook(secret, h, b, { now: now * 1000 });
      assert.fail("accepted");
    } catch (e) {
      assert.ok(e instanceof WebhookVerificationError);
      for (const x of ["victim", "secretid", "forged", "MfKQ"]) assert.ok(!e.message.includes(x), `${e.message} holds ${x}`);
    }
  }
});

// A fuzz loop over mutated requests: nothing throws but a
// WebhookVerificationError, and nothing mutated is accepted.
test("webhook: mutated requests are refused and never throw anything else", () => {
  const id = "msg_1";
  const sig = sign(secret, id, now, body);
  const rnd = (n: number): number => randomBytes(4).readUInt32LE() % n;
  const mutate = (s: string): string => {
    const i = rnd(s.length + 1);
    switch (rnd(3)) {
      case 0:
        return s.slice(0, i) + s.slice(i + 1);
      case 1:
        return s.slice(0, i) + String.fromCharCode(rnd(0x3000)) + s.slice(i);
      default:
        return s.slice(0, i) + s.slice(i).split("").reverse().join("");
    }
  };
  for (let n = 0; n < 2000; n++) {
    const parts = [id, String(now), sig, body];
    const k = rnd(4);
    parts[k] = mutate(parts[k] as string);
    const [mid, mts, msig, mbody] = parts as [string, string, string, string];
    const got = kind(() => verifyWebhook(secret, { "webhook-id": mid, "webhook-timestamp": mts, "webhook-signature": msig }, mbody, { now: now * 1000 }));
    const same = mid === id && mts === String(now) && mbody === body && msig.split(" ").includes(sig);
    if (!same) assert.notEqual(got, "ok", `accepted ${JSON.stringify(parts)}`);
  }
});

test("webhook: a parsed body (express.json()) is a TypeError that says to use the raw body", () => {
  const headers = { "webhook-id": "msg_1", "webhook-timestamp": String(now), "webhook-signature": sign(secret, "msg_1", now, body) };
  for (const parsed of [JSON.parse(body) as unknown, undefined, null, 42]) {
    assert.throws(() => verifyWebhook(secret, headers, parsed as string, { now: now * 1000 }), (e: unknown) => e instanceof TypeError && /express\.raw\(\)/.test(e.message));
  }
});
