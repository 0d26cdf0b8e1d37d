/**
 * Proxies.clientIP on real node:http requests, and the configurations it
 * refuses.
 */

import assert from "node:assert/strict";
import { connect } from "node:net";
import { test } from "node:test";

import { Proxies } from "../src/index.js";
import { standIn } from "./helpers.js";

/** Sends a raw HTTP/1.1 GET to base with header lines (each its own line, as written) and answers the body. */
function send(base: string, lines: Array<[string, string]>): Promise<string> {
  const { hostname, port } = new URL(base);
  return new Promise((ok, fail) => {
    const sock = connect(Number(port), hostname, () => {
      const head = lines.map(([k, v]) => `${k}: ${v}\r\n`).join("");
      sock.write(`GET / HTTP/1.1\r\nHost: ${hostname}\r\nConnection: close\r\n${head}\r\n`);
    });
    let raw = "";
    sock.on("data", (c: Buffer) => (raw += c.toString("latin1")));
    sock.on("error", fail);
    sock.on("end", () => {
      const [status = "", ...rest] = raw.split("\r\n\r\n");
      if (!status.startsWith("HTTP/1.1 200")) fail(new Error("answer: " + status));
      else ok(rest.join("\r\n\r\n"));
    });
  });
}

test("clientIP reads the socket's peer and each header line apart", async () => {
  const xff = new Proxies({ trusted: ["127.0.0.0/8", "::1/128"], header: "x-forwarded-for" });
  const fwd = new Proxies({ trusted: ["127.0.0.0/8", "::1/128"], header: "Forwarded" });
  const none = new Proxies();
  const srv = await standIn((req, res) => res.end(JSON.stringify([xff.clientIP(req), fwd.clientIP(req), none.clientIP(req)])));
  try {
    const got = async (lines: Array<[string, string]>): Promise<string[]> => JSON.parse(await send(srv.base, lines)) as string[];
    assert.deepEqual(await got([]), ["127.0.0.1", "127.0.0.1", "127.0.0.1"]);
    assert.deepEqual(await got([["X-Forwarded-For", "1.1.1.1, 127.0.0.9"], ["X-Forwarded-For", "203.0.113.9"]]), ["203.0.113.9", "127.0.0.1", "127.0.0.1"]);
    // Node joins Forwarded lines into one value in req.headers; clientIP must not, or the attacker's broken
    // line would swallow the proxy's and the answer would be the proxy's own address.
    assert.deepEqual(await got([["Forwarded", 'for="unterminated'], ["Forwarded", "for=203.0.113.9"]]), ["127.0.0.1", "203.0.113.9", "127.0.0.1"]);
    assert.deepEqual(await got([["Forwarded", 'for="[2001:db8:1::9]:4711"']]), ["127.0.0.1", "2001:db8:1::9", "127.0.0.1"]);
  } finally {
    await srv.close();
  }
});

test("clientIP with only req.headers (no rawHeaders) and an IPv4-mapped peer", () => {
  const p = new Proxies({ trusted: ["10.0.0.0/8"], header: "x-forwarded-for" });
  const req = { socket: { remoteAddress: "::ffff:10.0.0.1" }, headers: { "x-forwarded-for": "203.0.113.9" } } as unknown as Parameters<Proxies["clientIP"]>[0];
  assert.equal(p.clientIP(req), "203.0.113.9");
  const noPeer = { socket: {}, rawHeaders: [] } as unknown as Parameters<Proxies["clientIP"]>[0];
  assert.equal(p.clientIP(noPeer), "");
});

test("Proxies refuses configurations that let any client choose its address", () => {
  for (const trusted of [["0.0.0.0/0"], ["::/0"], ["::ffff:0.0.0.0/96"], ["10.0.0.0/8", "::/0"]]) {
    assert.throws(() => new Proxies({ trusted, header: "x-forwarded-for" }), /trusts every address/, trusted.join());
  }
  assert.throws(() => new Proxies({ trusted: ["::ffff:0.0.0.0/95"], header: "forwarded" }), /mixes/);
  assert.throws(() => new Proxies({ trusted: ["10.0.0.0/8"] }), /needs the header/);
  assert.throws(() => new Proxies({ trusted: ["10.0.0.0/8"], header: "x-real-ip" }), /unknown header/);
  assert.throws(() => new Proxies({ trusted: ["10.0.0.1"], header: "forwarded" }), /invalid trusted prefix/);
  assert.throws(() => new Proxies({ trusted: [10 as never], header: "forwarded" }), /invalid trusted prefix/);
  // A host-bits prefix is masked, as Go's Masked.
  assert.equal(new Proxies({ trusted: ["10.1.2.3/8"], header: "x-forwarded-for" }).resolve("10.200.0.1:5000", [["x-forwarded-for", "192.0.2.1"]]), "192.0.2.1");
});
