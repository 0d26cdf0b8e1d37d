/**
 * The ports of Go's net/netip and encoding/json (string escaping) against
 * what Go answers: the fixtures
 * in test/testdata/go_fixtures.json, written by gen_go_fixtures.go.
 */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { addressKey } from "../src/allowance.js";
import { parseAddr, parseAddrPort, parsePrefix } from "../src/netip.js";
import { goJSONString } from "../src/respond.js";
import { packageDir } from "./helpers.js";

interface Fixtures {
  addrs: Array<{ in: string; ok: boolean; string?: string; is4?: boolean; is4in6?: boolean; unmapped?: string; prefix64?: string; port_ok: boolean; port_addr?: string }>;
  prefixes: Array<{ in: string; ok: boolean; string?: string; masked?: string; contains?: Record<string, boolean> }>;
  json: Array<{ in: string; out: string }>;
}

const fx = JSON.parse(readFileSync(join(packageDir, "test", "testdata", "go_fixtures.json"), "utf8")) as Fixtures;

test("netip: parseAddr, String, Unmap and Prefix(64) match Go on every fixture", () => {
  assert.ok(fx.addrs.length > 2000);
  let bad = 0;
  for (const c of fx.addrs) {
    const a = parseAddr(c.in);
    const got = a === undefined ? { ok: false } : { ok: true, string: a.toString(), is4: a.is4(), is4in6: a.is4In6() };
    const want = c.ok ? { ok: true, string: c.string, is4: c.is4 ?? false, is4in6: c.is4in6 ?? false } : { ok: false };
    if (JSON.stringify(got) !== JSON.stringify(want)) {
      bad++;
      assert.deepEqual(got, want, `parseAddr(${JSON.stringify(c.in)})`);
    }
    if (a !== undefined) {
      const u = a.unmap().withZone("");
      assert.equal(u.toString(), c.unmapped, `unmap(${JSON.stringify(c.in)})`);
      if (!u.is4()) assert.equal(String(u.prefix(64)), c.prefix64, `prefix64(${JSON.stringify(c.in)})`);
    }
    const ap = parseAddrPort(c.in);
    assert.equal(ap !== undefined, c.port_ok, `parseAddrPort(${JSON.stringify(c.in)})`);
    if (ap !== undefined) assert.equal(ap.toString(), c.port_addr);
  }
  assert.equal(bad, 0);
});

test("netip: parsePrefix, Masked and Contains match Go on every fixture", () => {
  for (const c of fx.prefixes) {
    const p = parsePrefix(c.in);
    assert.equal(p !== undefined, c.ok, `parsePrefix(${JSON.stringify(c.in)})`);
    if (p === undefined) continue;
    assert.equal(p.toString(), c.string);
    assert.equal(p.masked().toString(), c.masked);
    for (const [probe, want] of Object.entries(c.contains ?? {})) {
      const a = parseAddr(probe);
      assert.ok(a !== undefined);
      assert.equal(p.masked().contains(a), want, `${c.in} contains ${probe}`);
    }
  }
});

test("netip: the allowance's address key is an IPv4 address whole, an IPv6 /64, else marked", () => {
  assert.equal(addressKey("192.0.2.1"), "192.0.2.1");
  assert.equal(addressKey("::ffff:192.0.2.1"), "192.0.2.1");
  assert.equal(addressKey("2001:db8:1:2:ffff::9"), "2001:db8:1:2::/64");
  assert.equal(addressKey("fe80::1%eth0"), "fe80::/64");
  assert.equal(addressKey("not-an-ip"), "?not-an-ip");
});

test("goJSONString matches Go's json.Marshal of a string", () => {
  for (const c of fx.json) assert.equal(goJSONString(c.in), c.out, JSON.stringify(c.in));
});
