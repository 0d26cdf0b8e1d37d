/**
 * README.md's main snippet is examples/readme.ts, byte for byte: the file
 * is compiled with the tests (and run against a real tollgate in
 * tollgate.test.ts), so the README cannot drift.
 */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { packageDir } from "./helpers.js";

test("README's main snippet is examples/readme.ts", () => {
  const readme = readFileSync(join(packageDir, "README.md"), "utf8");
  const m = /<!-- examples\/readme\.ts -->\n```ts\n([\s\S]*?)```\n/.exec(readme);
  assert.ok(m !== null, "README.md has no block marked <!-- examples/readme.ts -->");
  assert.equal(m[1], readFileSync(join(packageDir, "examples", "readme.ts"), "utf8"));
});

test("README's Express snippet is examples/express.ts", () => {
  const readme = readFileSync(join(packageDir, "README.md"), "utf8");
  const m = /<!-- examples\/express\.ts -->\n```ts\n([\s\S]*?)```\n/.exec(readme);
  assert.ok(m !== null, "README.md has no block marked <!-- examples/express.ts -->");
  assert.equal(m[1], readFileSync(join(packageDir, "examples", "express.ts"), "utf8"));
});

test("the express subpath resolves to the built dist (self-reference by name)", async () => {
  const pkg = await import("@tollgate/client/express");
  for (const name of ["tollgate", "Guard", "Attempt", "attemptOf", "MemoryHolds", "MemoryStepUps", "codeFactor"]) {
    assert.equal(typeof (pkg as Record<string, unknown>)[name], "function", name);
  }
});

test("the package exports resolve to the built dist (self-reference by name)", async () => {
  const pkg = await import("@tollgate/client");
  for (const name of ["Client", "Responder", "writeAnswer", "Proxies", "DeviceCookie", "TollgateError", "UnavailableError", "TimeoutError", "isUnavailable", "verifyWebhook", "WebhookVerificationError", "passwordRange", "rangeHas"]) {
    assert.equal(typeof (pkg as Record<string, unknown>)[name], "function", name);
  }
  assert.deepEqual([pkg.failOpen, pkg.failDelay, pkg.failCaptcha], ["open", "delay", "captcha"]);
  assert.deepEqual([pkg.reasonFallback, pkg.reasonFallbackAllowance], ["client_fallback", "client_fallback_allowance"]);
});
