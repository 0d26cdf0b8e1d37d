/**
 * DeviceCookie's node:http helpers on a real server, and the Cookie field
 * edge cases Go's net/http has.
 */

import assert from "node:assert/strict";
import { request } from "node:http";
import { test } from "node:test";

import { DeviceCookie } from "../src/index.js";
import { standIn } from "./helpers.js";

test("DeviceCookie on node:http: set and clear append, the request's cookie is read", async () => {
  const cookie = new DeviceCookie();
  const srv = await standIn((req, res) => {
    res.setHeader("set-cookie", "session=s1; Path=/; HttpOnly");
    cookie.set(res, "dt.new");
    cookie.set(res, "");
    cookie.clear(res);
    res.end(cookie.fromRequest(req));
  });
  try {
    const got = await new Promise<{ body: string; setCookie: string[] }>((ok, fail) => {
      const req = request(srv.base, { headers: { cookie: "theme=dark; __Host-tollgate-device=dt.old" } }, (res) => {
        let body = "";
        res.on("data", (c: Buffer) => (body += c.toString()));
        res.on("end", () => ok({ body, setCookie: res.headers["set-cookie"] ?? [] }));
      });
      req.on("error", fail);
      req.end();
    });
    assert.equal(got.body, "dt.old");
    assert.deepEqual(got.setCookie, [
      "session=s1; Path=/; HttpOnly",
      "__Host-tollgate-device=dt.new; Path=/; Max-Age=7776000; HttpOnly; Secure; SameSite=Lax",
      "__Host-tollgate-device=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=Lax",
    ]);
  } finally {
    await srv.close();
  }
  assert.throws(() => cookie.setCookie("a;Domain=evil.example"), /not cookie-safe/);
  assert.equal(cookie.token(["a=1", "__Host-tollgate-device=two-lines"]), "two-lines");
  assert.equal(cookie.token("x=1;".repeat(3000) + "__Host-tollgate-device=t"), "", "over Go's 3000 cookies, none is read");
  assert.equal(new DeviceCookie({ maxAgeSeconds: 3600.9 }).setCookie("t"), "__Host-tollgate-device=t; Path=/; Max-Age=3600; HttpOnly; Secure; SameSite=Lax");
});
