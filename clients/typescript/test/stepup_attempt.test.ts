/**
 * A step-up report carries its try's own step_up check's attempt token
 * after the ticket, so that tollgate settles the failure that check
 * charged: a wrong code counts once, a pass not at all.
 */

import assert from "node:assert/strict";
import { test } from "node:test";

import { Client, failDelay } from "../src/index.js";
import { standIn } from "./helpers.js";

test("reportStepUp sends the try's attempt after the ticket, and the ticket alone without one", async () => {
  const srv = await standIn((_req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end('{"action":"proceed","delay_ms":0,"retry_after":0,"reasons":[],"attempt":"","device_token":""}');
  });
  try {
    const c = new Client({ baseURL: srv.base, timeoutMs: 5000 });
    await c.reportStepUp({ account: "a", ip: "203.0.113.9", ticket: "ticket.1", attempt: "at.9", passed: false }, failDelay);
    await c.reportStepUp({ account: "a", ip: "203.0.113.9", ticket: "ticket.1", attempt: "", passed: false }, failDelay);
    assert.equal(srv.requests[0]?.body, '{"flow":"step_up","account":"a","ip":"203.0.113.9","outcome":"step_up_failed","attempt":"ticket.1,at.9"}');
    assert.equal(srv.requests[1]?.body, '{"flow":"step_up","account":"a","ip":"203.0.113.9","outcome":"step_up_failed","attempt":"ticket.1"}');
  } finally {
    await srv.close();
  }
});
