/**
 * The shared test vectors of clients/testdata, run as the Go client runs
 * them (api/client/vectors_test.go): every case of every file, unknown
 * fields in a vector refused, stand-in servers for fail_modes.json.
 */

import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import {
  Client,
  DeviceCookie,
  passwordRange,
  rangeHas,
  Proxies,
  Responder,
  TimeoutError,
  TollgateError,
  isUnavailable,
  verifyWebhook,
  WebhookVerificationError,
  type CheckRequest,
  type FailMode,
  type Page,
  type ReportRequest,
  type SendRequest,
  type Verdict,
} from "../src/index.js";
import { foldAccount } from "../src/fold.js";
import { unicodeVersion } from "../src/foldtable.js";
import { requestFields } from "../src/wire.js";
import { closedPort, standIn, vectorsDir, type StandIn } from "./helpers.js";

/** The files this test reads, as Go's TestVectors_CoverEveryFile lists them. */
const covered = ["account_fold.json", "breached.json", "client_ip.json", "device_cookie.json", "fail_modes.json", "respond.json", "webhooks.json"];
const read = new Set<string>();

type Json = Record<string, unknown>;

/** Fails when o has a key not in allowed: a misspelt vector must fail rather than test nothing. */
function strict(o: unknown, allowed: readonly string[], where: string): Json {
  assert.ok(o !== null && typeof o === "object" && !Array.isArray(o), `${where}: not an object`);
  for (const k of Object.keys(o)) assert.ok(allowed.includes(k), `${where}: unknown field ${JSON.stringify(k)}`);
  return o as Json;
}

/** Reads clients/testdata/name, checking its top-level fields and its about. */
function readVectors(name: string, fields: readonly string[]): Json {
  assert.ok(covered.includes(name), `${name} is not in the covered list`);
  read.add(name);
  const doc = strict(JSON.parse(readFileSync(join(vectorsDir, name), "utf8")), ["about", ...fields], name);
  assert.equal(typeof doc["about"], "string", `${name}: no about`);
  return doc;
}

const arr = (v: unknown): unknown[] => (v === undefined || v === null ? [] : (v as unknown[]));
const s = (v: unknown): string => (v === undefined || v === null ? "" : (v as string));

function newVectorProxies(v: Json): Proxies {
  return new Proxies({ trusted: arr(v["trusted"]) as string[], header: s(v["header"]) });
}

test("vectors: client_ip.json", async (t) => {
  const doc = readVectors("client_ip.json", ["groups", "config_errors", "config_ok"]);
  let n = 0;
  for (const g0 of arr(doc["groups"])) {
    const g = strict(g0, ["name", "trusted", "header", "cases"], "group");
    const p = newVectorProxies(g);
    for (const c0 of arr(g["cases"])) {
      const c = strict(c0, ["name", "peer", "lines", "want"], `${s(g["name"])} case`);
      n++;
      await t.test(`${s(g["name"])}/${s(c["name"])}`, () => {
        const lines = arr(c["lines"]) as Array<[string, string]>;
        const got = p.resolve(s(c["peer"]), lines);
        assert.equal(got, s(c["want"]), `resolve(peer ${JSON.stringify(c["peer"])}, ${JSON.stringify(lines)})`);
        // The same through clientIP, from a request's socket and raw header lines.
        const req = { socket: { remoteAddress: s(c["peer"]) }, rawHeaders: lines.flat() } as unknown as Parameters<Proxies["clientIP"]>[0];
        assert.equal(p.clientIP(req), s(c["want"]), "clientIP");
      });
    }
  }
  for (const c0 of arr(doc["config_errors"])) {
    const c = strict(c0, ["name", "trusted", "header"], "config error");
    assert.throws(() => newVectorProxies(c), Error, `config error ${s(c["name"])}: accepted`);
  }
  for (const c0 of arr(doc["config_ok"])) {
    const c = strict(c0, ["name", "trusted", "header"], "config ok");
    assert.doesNotThrow(() => newVectorProxies(c), `config ${s(c["name"])}`);
  }
  assert.ok(n >= 60 && arr(doc["config_errors"]).length > 0, `only ${n} cases: the vectors did not load`);
});

function newVectorResponder(c: Json): Responder {
  const cfg = strict(c, ["policy", "problem_type", "title", "step_up_page"], "responder config");
  let stepUp: (() => Page) | undefined;
  if (cfg["step_up_page"] !== undefined) {
    // The operator's page: exactly this status, these fields and this body.
    const p = strict(cfg["step_up_page"], ["status", "headers", "body"], "step_up_page");
    stepUp = () => ({ status: p["status"] as number, headers: { ...(p["headers"] as Record<string, string>) }, body: s(p["body"]) });
  }
  return new Responder({ policy: s(cfg["policy"]), problemType: s(cfg["problem_type"]), title: s(cfg["title"]), stepUp });
}

test("vectors: respond.json", async (t) => {
  const doc = readVectors("respond.json", ["cases", "config_errors"]);
  const cases = arr(doc["cases"]);
  for (const c0 of cases) {
    const c = strict(c0, ["name", "config", "verdict", "want"], "respond case");
    await t.test(s(c["name"]), () => {
      const rs = newVectorResponder((c["config"] ?? {}) as Json);
      const verdict = strict(c["verdict"], ["action", "delay_ms", "retry_after", "reasons", "attempt", "device_token"], "verdict");
      const want = strict(c["want"], ["status", "headers", "body", "proceed", "step_up", "hold_ms"], "want");
      const a = rs.respond(verdict);
      assert.equal(a.proceed, want["proceed"] ?? false, "proceed");
      assert.equal(a.stepUp ?? false, want["step_up"] ?? false, "step_up");
      assert.equal(a.holdMs, want["hold_ms"] ?? 0, "hold_ms");
      assert.equal(a.status, want["status"] ?? 0, "status");
      assert.deepEqual(a.headers, want["headers"] ?? {}, "headers");
      assert.equal(a.body, want["body"] ?? "", "body");
    });
  }
  for (const c0 of arr(doc["config_errors"])) {
    const c = strict(c0, ["name", "config"], "config error");
    assert.throws(() => newVectorResponder((c["config"] ?? {}) as Json), Error, `config error ${s(c["name"])}: accepted`);
  }
  assert.ok(cases.length >= 10 && arr(doc["config_errors"]).length > 0, "the vectors did not load");
  assert.ok(cases.some((c) => (c as { want: Json }).want["step_up"] === true), "no step_up case");
});

function newVectorCookie(c: unknown): DeviceCookie {
  const cfg = strict(c ?? {}, ["name", "max_age_s"], "cookie config");
  return new DeviceCookie({ name: s(cfg["name"]), maxAgeSeconds: (cfg["max_age_s"] as number | undefined) ?? 0 });
}

test("vectors: device_cookie.json", async (t) => {
  const doc = readVectors("device_cookie.json", ["set", "clear", "token", "config_errors"]);
  for (const c0 of arr(doc["set"])) {
    const c = strict(c0, ["name", "config", "token", "want", "error"], "set case");
    await t.test(`set/${s(c["name"])}`, () => {
      const dc = newVectorCookie(c["config"]);
      let got: string | undefined;
      let threw = false;
      try {
        got = dc.setCookie(s(c["token"]));
      } catch {
        threw = true;
      }
      assert.equal(threw, c["error"] === true, "error");
      assert.equal(got, c["want"] ?? undefined, "Set-Cookie");
      // The node:http helper appends exactly that one field, or none.
      const fields: string[] = [];
      const res = { getHeader: () => (fields.length ? [...fields] : undefined), setHeader: (_: string, v: string[]) => fields.splice(0, fields.length, ...v) };
      try {
        dc.set(res as unknown as Parameters<DeviceCookie["set"]>[0], s(c["token"]));
      } catch {
        // checked above
      }
      assert.deepEqual(fields, c["want"] === undefined || c["want"] === null ? [] : [c["want"]]);
    });
  }
  for (const c0 of arr(doc["clear"])) {
    const c = strict(c0, ["name", "config", "want"], "clear case");
    await t.test(`clear/${s(c["name"])}`, () => assert.equal(newVectorCookie(c["config"]).clearCookie(), s(c["want"])));
  }
  for (const c0 of arr(doc["token"])) {
    const c = strict(c0, ["name", "config", "cookie", "want"], "token case");
    await t.test(`token/${s(c["name"])}`, () => {
      const header = c["cookie"] === null || c["cookie"] === undefined ? undefined : s(c["cookie"]);
      const dc = newVectorCookie(c["config"]);
      assert.equal(dc.token(header), s(c["want"]));
      const headers = header === undefined ? {} : { cookie: header };
      assert.equal(dc.fromRequest({ headers } as Parameters<DeviceCookie["fromRequest"]>[0]), s(c["want"]), "fromRequest");
    });
  }
  for (const c0 of arr(doc["config_errors"])) {
    const c = strict(c0, ["name", "config"], "config error");
    assert.throws(() => newVectorCookie(c["config"]), Error, `config error ${s(c["name"])}: accepted`);
  }
  assert.ok(arr(doc["set"]).length > 0 && arr(doc["token"]).length > 0 && arr(doc["config_errors"]).length > 0, "the vectors did not load");
});

/** The kind of a call's error as the vectors name it: none, timeout, unavailable or refused. */
function errorKind(err: unknown): string {
  if (err === undefined) return "none";
  if (err instanceof TimeoutError) return "timeout";
  if (isUnavailable(err)) return "unavailable";
  if (err instanceof TollgateError) return "refused";
  return "other: " + String(err);
}

/** The stand-in a fail-mode case describes. */
async function vectorServer(server: Json): Promise<{ base: string; srv: StandIn | undefined }> {
  const sv = strict(server, ["down", "delay_ms", "status", "headers", "body"], "server");
  if (sv["down"] === true) return { base: await closedPort(), srv: undefined };
  const srv = await standIn((req, res) => {
    const answer = (): void => {
      for (const [k, v] of Object.entries((sv["headers"] ?? {}) as Record<string, string>)) res.setHeader(k, v);
      res.writeHead(sv["status"] as number);
      res.end(s(sv["body"]));
    };
    const delay = (sv["delay_ms"] as number | undefined) ?? 0;
    if (delay > 0) {
      const timer = setTimeout(answer, delay);
      req.socket.once("close", () => clearTimeout(timer));
    } else {
      answer();
    }
  });
  return { base: srv.base, srv };
}

test("vectors: fail_modes.json", async (t) => {
  const doc = readVectors("fail_modes.json", ["cases"]);
  // Warm fetch's HTTP stack up first: the cases use the default 250 ms timeout, and a cold first call on a loaded
  // machine is slow for reasons no client controls.
  const warm = await standIn((_req, res) => res.end("{}"));
  await (await fetch(warm.base)).text();
  await warm.close();
  const modes: Record<string, FailMode> = { open: "open", delay: "delay", captcha: "captcha" };
  let steps = 0;
  for (const c0 of arr(doc["cases"])) {
    const c = strict(c0, ["name", "client", "server", "steps", "want_request"], "fail-mode case");
    await t.test(s(c["name"]), async () => {
      const cl = strict(c["client"] ?? {}, ["timeout_ms", "fail_open_per_account", "fail_open_per_address"], "client");
      const { base, srv } = await vectorServer(c["server"] as Json);
      try {
        // A case without timeout_ms runs with 5 s, not the client's 250 ms default: a stand-in's answer on a loaded
        // machine must not turn into a timeout (CI saw 358 ms once). "the default timeout is 250 ms" holds the default.
        const timeout = (cl["timeout_ms"] as number | undefined) ?? 5000;
        const client = new Client({
          baseURL: base,
          failOpenPerAccount: (cl["fail_open_per_account"] as number | undefined) ?? 0,
          failOpenPerAddress: (cl["fail_open_per_address"] as number | undefined) ?? 0,
          timeoutMs: timeout,
        });
        const wr = c["want_request"] === undefined || c["want_request"] === null ? undefined : strict(c["want_request"], ["method", "path", "content_type"], "want_request");
        for (const [i, st0] of arr(c["steps"]).entries()) {
          steps++;
          const st = strict(st0, ["call", "mode", "request", "want"], "step");
          const mode = modes[s(st["mode"])];
          assert.ok(mode !== undefined, `step ${i}: mode ${String(st["mode"])}`);
          const call = s(st["call"]);
          const fields = { check: requestFields.check, report: requestFields.report, send: requestFields.send }[call];
          assert.ok(fields !== undefined, `step ${i}: call ${call}`);
          const req = strict(st["request"], fields.map(([name]) => name), `step ${i} ${call} request`);
          let v: Verdict;
          if (call === "check") v = await client.check(req as unknown as CheckRequest, mode);
          else if (call === "report") v = await client.report(req as unknown as ReportRequest, mode);
          else v = await client.send(req as unknown as SendRequest, mode);
          const w = strict(st["want"], ["action", "delay_ms", "retry_after", "reasons", "fallback", "error"], "want");
          const where = `step ${i} (${call} ${s(st["mode"])})`;
          assert.deepEqual(
            { action: v.action, delay_ms: v.delay_ms, retry_after: v.retry_after, reasons: v.reasons, fallback: v.fallback },
            { action: w["action"], delay_ms: w["delay_ms"] ?? 0, retry_after: w["retry_after"] ?? 0, reasons: w["reasons"] ?? [], fallback: w["fallback"] ?? false },
            `${where}: verdict`,
          );
          const we = w["error"] === undefined || w["error"] === null ? undefined : strict(w["error"], ["kind", "status", "type", "field"], "want error");
          assert.equal(errorKind(v.error), we === undefined ? "none" : we["kind"], `${where}: error ${String(v.error)}`);
          if (we !== undefined && (we["status"] !== undefined || we["type"] !== undefined || we["field"] !== undefined)) {
            assert.ok(v.error instanceof TollgateError, `${where}: not a TollgateError: ${String(v.error)}`);
            if (we["status"] !== undefined) assert.equal(v.error.status, we["status"], `${where}: status`);
            if (we["type"] !== undefined) assert.equal(v.error.type, we["type"], `${where}: type`);
            if (we["field"] !== undefined) assert.equal(v.error.field, we["field"], `${where}: field`);
          }
          if (wr !== undefined) {
            const last = srv?.requests.at(-1);
            assert.ok(last !== undefined, `${where}: the server got nothing`);
            assert.deepEqual(
              { method: last.method, path: last.path.split("?")[0], content_type: last.contentType },
              { method: wr["method"], path: wr["path"], content_type: wr["content_type"] },
              `${where}: the request`,
            );
          }
        }
      } finally {
        await srv?.close();
      }
    });
  }
  assert.ok(steps >= 50, `only ${steps} steps: the vectors did not load`);
});

test("vectors: webhooks.json", async (t) => {
  const doc = readVectors("webhooks.json", ["tolerance_seconds", "cases"]);
  assert.equal(doc["tolerance_seconds"], 300);
  let n = 0;
  for (const c0 of arr(doc["cases"])) {
    const c = strict(c0, ["name", "secret", "headers", "body", "now", "want", "event"], "webhooks case");
    n++;
    await t.test(s(c["name"]), () => {
      const headers = c["headers"] as Record<string, string>;
      const now = new Date((c["now"] as number) * 1000);
      // The body as a string and as the bytes a server reads: the same answer.
      for (const body of [s(c["body"]), new Uint8Array(Buffer.from(s(c["body"]), "utf8"))]) {
        let got: string;
        let event: unknown;
        try {
          event = verifyWebhook(s(c["secret"]), headers, body, { now });
          got = "ok";
        } catch (e) {
          assert.ok(e instanceof WebhookVerificationError, `not a WebhookVerificationError: ${String(e)}`);
          got = e.kind;
        }
        assert.equal(got, s(c["want"]), `verifyWebhook of a ${typeof body}`);
        if (got === "ok") assert.deepEqual(event, c["event"]);
      }
      // Headers as fetch's Headers, which folds the names' case: the same answer.
      const fetchHeaders = new Headers(headers);
      let got2 = "ok";
      try {
        verifyWebhook(s(c["secret"]), fetchHeaders, s(c["body"]), { now: (c["now"] as number) * 1000 });
      } catch (e) {
        got2 = (e as WebhookVerificationError).kind;
      }
      assert.equal(got2, s(c["want"]), "verifyWebhook with fetch Headers");
    });
  }
  assert.ok(n >= 40, `only ${n} cases: the vectors did not load`);
});

test("vectors: account_fold.json", () => {
  const doc = readVectors("account_fold.json", ["unicode_version", "cases", "chars", "marks"]);
  assert.equal(doc["unicode_version"], unicodeVersion, "src/foldtable.ts is of another Unicode version than the vectors: go run ./gen/foldtable");
  const pairs: [string, string, string][] = [];
  for (const c of arr(doc["cases"])) {
    const v = strict(c, ["name", "in", "key"], "account_fold.json case");
    pairs.push([s(v["name"]), s(v["in"]), s(v["key"])]);
  }
  for (const list of ["chars", "marks"]) for (const [i, k] of arr(doc[list]) as [string, string][]) pairs.push([list, i, k]);
  // NFD and NFC are the engine's: one on older Unicode data than tollgate's
  // does not know some characters, and a vector holding one is skipped.
  let ran = 0;
  let skipped = 0;
  for (const [name, input, key] of pairs) {
    if (/\p{Cn}/u.test(input)) {
      skipped++;
      continue;
    }
    ran++;
    assert.equal(foldAccount(input), key, `${name}: foldAccount(${JSON.stringify(input)})`);
  }
  assert.ok(ran >= 3000 && skipped < 100, `${ran} ran, ${skipped} skipped: the vectors did not load`);
});

// Last (tests of a file run in order): every vector file is read by a test above, and no other exists.
test("vectors: breached.json", async (t) => {
  const doc = readVectors("breached.json", ["cases"]);
  const cases = arr(doc["cases"]);
  assert.ok(cases.length >= 4, "breached.json: cases are read");
  for (const c0 of cases) {
    const c = strict(c0, ["password", "sha1", "prefix", "suffix", "range", "count", "breached"], "breached case");
    await t.test(s(c["sha1"]), async () => {
      const r = passwordRange(s(c["password"]));
      assert.equal(r.prefix + r.suffix, s(c["sha1"]), "sha1");
      assert.equal(r.prefix, s(c["prefix"]), "prefix");
      assert.equal(r.suffix, s(c["suffix"]), "suffix");
      assert.equal(rangeHas(s(c["range"]), r.suffix), c["breached"] === true, "match in the range");
      assert.equal(rangeHas(s(c["range"]), r.suffix.toLowerCase()), c["breached"] === true, "suffixes compare case-insensitively");
      // Through the client, from a stand-in that serves the range for the prefix alone.
      const srv = await standIn((req, res) => {
        const ok = req.url === "/v1/breached/" + s(c["prefix"]);
        res.writeHead(ok ? 200 : 404, { "content-type": "text/plain; charset=utf-8" });
        res.end(ok ? s(c["range"]) : "");
      });
      try {
        assert.equal(await new Client({ baseURL: srv.base, breachedTimeoutMs: 5000 }).breached(s(c["password"])), c["breached"] === true, "breached()");
      } finally {
        await srv.close();
      }
    });
  }
});

test("vectors: every file in clients/testdata is run", () => {
  const names = readdirSync(vectorsDir).filter((f) => f.endsWith(".json")).sort();
  assert.deepEqual(names, [...covered].sort(), "vector files: give a new file a test in every client");
  assert.deepEqual([...read].sort(), [...covered].sort(), "a covered file was not read");
});
