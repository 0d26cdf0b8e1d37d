import express from "express";
import { Client, Proxies } from "@tollgate/client";
import { tollgate } from "@tollgate/client/express";

const guard = tollgate({
  client: new Client({ baseURL: process.env["TOLLGATE_URL"] ?? "http://127.0.0.1:8080" }),
  accountField: "username", // the form field (or JSON member) with the account
  proxies: new Proxies({ trusted: ["10.0.0.0/8"], header: "x-forwarded-for" }), // your proxies
  // 32 random bytes (openssl rand -hex 32), kept like your session key,
  // the same on every instance: tollgate gets HMAC(key, password), never
  // the password. Fewer than 32 bytes throw, so a missing key stops here.
  fingerprintKey: Buffer.from(process.env["TOLLGATE_FP_KEY"] ?? "", "hex"),
});

/** Your own password check; unknown users fail exactly like wrong passwords. */
declare function verifyPassword(user: string, password: string): Promise<boolean>;
/** Your own login page. */
declare function loginPage(message: string): string;

export const app = express();
app.post("/login", express.urlencoded({ extended: false }), guard.before(), async (req, res) => {
  // Only attempts tollgate let through get here: a delay was answered 429
  // with Retry-After, a captcha with the challenge page, which comes back
  // here with the same form once solved.
  const { username, password } = req.body as { username: string; password: string };
  const ok = await verifyPassword(username, password);
  await guard.report(req, res, ok ? "success" : "failure"); // sets the device cookie on success
  if (!ok) res.status(200).type("html").send(loginPage("Wrong username or password."));
  else res.redirect(303, "/");
});
