/**
 * The held-subjects admin calls against a stand-in: what they send (the
 * query, the body in Go's wire order) and what they decode.
 */
import assert from "node:assert/strict";
import { test } from "node:test";

import { Client, TollgateError, isUnavailable } from "../src/index.js";
import { standIn } from "./helpers.js";

const heldJSON = JSON.stringify({
  subjects: [
    { subject: "alice@example.com", flow: "login", kind: "account", rule: "account_backoff", reason: "account_backoff", wait_ms: 1000, over: false, since: "2026-12-06T03:00:00Z", expires_in_ms: 86400000 },
  ],
  next: "bG9naW46YWNjb3VudDpo",
  counts: { "login:account": 1 },
});

test("held sends the query it is given and decodes a page of held subjects", async () => {
  const srv = await standIn((req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(req.url?.includes("reset-held") === true ? '{"matched":2,"reset":0,"deleted":0,"dry_run":true}' : heldJSON);
  });
  try {
    const c = new Client({ baseURL: srv.base, timeoutMs: 5000 });
    const l = await c.held({ flow: "login", kind: "account", limit: 50, cursor: "a/b" });
    assert.equal(l.subjects.length, 1);
    assert.equal(l.subjects[0]?.subject, "alice@example.com");
    assert.equal(l.subjects[0]?.wait_ms, 1000);
    assert.equal(l.next, "bG9naW46YWNjb3VudDpo");
    assert.deepEqual(l.counts, { "login:account": 1 });
    await c.held();
    const r = await c.resetHeld({ dry_run: true, reason: "incident 3", subjects: ["alice@example.com", "bob@example.com"], flow: "login" });
    assert.deepEqual(r, { matched: 2, reset: 0, deleted: 0, dry_run: true });
    await c.resetHeld({ flow: "login", reason: "incident 3" });
    const [list, bare, dry, all] = srv.requests;
    assert.equal(list?.method, "GET");
    assert.equal(list?.path, "/v1/admin/held?flow=login&kind=account&cursor=a%2Fb&limit=50");
    assert.equal(bare?.path, "/v1/admin/held");
    assert.equal(dry?.method, "POST");
    assert.equal(dry?.path, "/v1/admin/reset-held");
    assert.equal(dry?.body, '{"flow":"login","subjects":["alice@example.com","bob@example.com"],"reason":"incident 3","dry_run":true}');
    assert.equal(all?.body, '{"flow":"login","reason":"incident 3"}');
  } finally {
    await srv.close();
  }
});

test("held rejects with tollgate's 404 while the index is off", async () => {
  const srv = await standIn((_req, res) => {
    res.writeHead(404, { "content-type": "application/problem+json" });
    res.end('{"type":"https://tollgate.dev/problems/not-found","title":"Not found","status":404,"detail":"the held-subjects index is off on this server: set held_index_bytes to turn it on"}');
  });
  try {
    const c = new Client({ baseURL: srv.base, timeoutMs: 5000 });
    await assert.rejects(c.held({ flow: "login" }), (e: unknown) => e instanceof TollgateError && e.status === 404);
  } finally {
    await srv.close();
  }
});

test("held decodes counts as Go decodes a map[string]int: null and absent are {}, any key is data, a wrong value fails", async () => {
  const answers = [
    '{"subjects":[],"counts":null}',
    '{"subjects":[]}',
    '{"subjects":[],"counts":{"__proto__":2,"login:ip":3,"Login:IP":null}}',
    '{"subjects":[],"counts":{"login:account":"1"}}',
    '{"subjects":[],"counts":{"login:account":1.5}}',
    '{"subjects":[],"counts":[1]}',
  ];
  let i = 0;
  const srv = await standIn((_req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(answers[i++]);
  });
  try {
    const c = new Client({ baseURL: srv.base, timeoutMs: 5000 });
    assert.deepEqual((await c.held()).counts, {});
    assert.deepEqual((await c.held()).counts, {});
    const odd = (await c.held()).counts;
    assert.deepEqual(Object.entries(odd), [["__proto__", 2], ["login:ip", 3], ["Login:IP", 0]]);
    assert.equal(Object.getPrototypeOf(odd), Object.prototype, "a key from the wire never sets the prototype");
    for (let n = 0; n < 3; n++) await assert.rejects(c.held(), (e: unknown) => isUnavailable(e));
  } finally {
    await srv.close();
  }
});
