/**
 * The receiver on a real node:http server on 127.0.0.1, posted to as
 * tollgate posts: signed here with node:crypto, not with the client's code,
 * so that a bug there cannot hide itself.
 */

import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";

import type { WebhookEvent } from "@tollgate/client";
import { createReceiver } from "../src/receiver.js";

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const event = JSON.stringify({
  type: "login.new_device",
  timestamp: "2026-01-01T00:00:00Z",
  tenant: "default",
  data: { flow: "login", rule: "new_device", reason: "new_device", subject: "alice@example.com", ref: "user-42", details: {} },
});

async function start(handle: (e: WebhookEvent) => Promise<void>): Promise<{ url: string; server: Server }> {
  const server = createServer(createReceiver(secret, handle));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/tollgate-events`, server };
}

function stop(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

/** Posts sent with the headers of body signed under sec, id and a timestamp ageSeconds old. */
async function post(url: string, id: string, body: string, opts: { sec?: string; sent?: string; ageSeconds?: number } = {}): Promise<number> {
  const ts = String(Math.floor(Date.now() / 1000) - (opts.ageSeconds ?? 0));
  const key = Buffer.from((opts.sec ?? secret).replace(/^whsec_/, ""), "base64");
  const sig = createHmac("sha256", key).update(`${id}.${ts}.${body}`).digest("base64");
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", "webhook-id": id, "webhook-timestamp": ts, "webhook-signature": `v1,${sig}` },
    body: opts.sent ?? body,
    signal: AbortSignal.timeout(10_000),
  });
  await res.arrayBuffer();
  return res.status;
}

test("a signed event is handled once and answered 204", async () => {
  const handled: WebhookEvent[] = [];
  const { url, server } = await start(async (e) => void handled.push(e));
  try {
    assert.equal(await post(url, "msg_1", event), 204);
    assert.equal(handled.length, 1);
    const e = handled[0]!;
    assert.deepEqual([e.id, e.type, e.data.ref, e.data.subject], ["msg_1", "login.new_device", "user-42", "alice@example.com"]);
  } finally {
    await stop(server);
  }
});

test("a redelivery (the same webhook-id) is answered 204 and not handled twice", async () => {
  const handled: string[] = [];
  const { url, server } = await start(async (e) => void handled.push(e.id));
  try {
    for (let i = 0; i < 3; i++) assert.equal(await post(url, "msg_1", event), 204, `delivery ${i + 1}`);
    assert.equal(await post(url, "msg_2", event), 204);
    assert.deepEqual(handled, ["msg_1", "msg_2"]);
  } finally {
    await stop(server);
  }
});

test("a forged, tampered or replayed event is answered 400 and not handled", async () => {
  const handled: string[] = [];
  const { url, server } = await start(async (e) => void handled.push(e.id));
  try {
    const forger = "whsec_" + Buffer.from("the attacker's guess of a secret").toString("base64");
    assert.equal(await post(url, "msg_f1", event, { sec: forger }), 400, "another secret");
    assert.equal(await post(url, "msg_f2", event, { sent: event.replace("user-42", "user-1") }), 400, "body changed after signing");
    assert.equal(await post(url, "msg_f3", event, { ageSeconds: 3600 }), 400, "an hour-old replay");
    assert.deepEqual(handled, []);
    // A forgery under a real event's id does not mark it as seen.
    assert.equal(await post(url, "msg_f1", event), 204);
    assert.deepEqual(handled, ["msg_f1"]);
  } finally {
    await stop(server);
  }
});

test("a handler failure answers 500 and the retry is handled", async () => {
  let fail = true;
  const handled: string[] = [];
  const { url, server } = await start(async (e) => {
    if (fail) {
      fail = false;
      throw new Error("database down");
    }
    handled.push(e.id);
  });
  try {
    assert.equal(await post(url, "msg_1", event), 500);
    assert.equal(await post(url, "msg_1", event), 204);
    assert.deepEqual(handled, ["msg_1"]);
  } finally {
    await stop(server);
  }
});

test("a secret that is not whsec_ and base64 is refused at start", () => {
  for (const s of ["", "whsec_", "whsec_not base64!", "my-password"]) assert.throws(() => createReceiver(s, async () => {}), /whsec_/, s);
});
