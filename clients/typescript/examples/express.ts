import express from "express";
import { Client, Proxies } from "@tollgate/client";
import { attemptOf, tollgate } from "@tollgate/client/express";

/** Your own users, password check, mailer, session and login page. */
interface User { id: string; email: string }
declare function verifyPassword(user: string, password: string): Promise<User | undefined>; // unknown users fail like wrong passwords
declare function sendMail(to: string, text: string): Promise<void>;
declare function startSession(req: express.Request, user: User): void;
declare function loginPage(message: string): string;

const guard = tollgate({
  client: new Client({ baseURL: process.env["TOLLGATE_URL"] ?? "http://127.0.0.1:8080" }),
  accountField: "username", // the form field (or JSON member) with the account
  proxies: new Proxies({ trusted: ["10.0.0.0/8"], header: "x-forwarded-for" }), // your proxies
  // 32 random bytes (openssl rand -hex 32), kept like your session key,
  // the same on every instance: tollgate gets HMAC(key, password), never
  // the password. Fewer than 32 bytes throw, so a missing key stops here.
  fingerprintKey: Buffer.from(process.env["TOLLGATE_FP_KEY"] ?? "", "hex"),
  // A right password tollgate wants a second factor for (step_up: it is
  // breached, or the account is under attack) gets a 6-digit code by mail,
  // entered on the page stepUpRoutes() serves; signIn runs once it passed.
  stepUp: {
    sendCode: (_account, code, user) => sendMail((user as User).email, `Your sign-in code: ${code}`),
    signIn: (req, res, done) => {
      startSession(req as express.Request, done.user as User);
      res.statusCode = 303;
      res.setHeader("location", "/");
      res.end();
    },
  },
});

export const app = express();
app.use(express.urlencoded({ extended: false }), guard.stepUpRoutes()); // GET and POST /login/step-up
app.post("/login", guard.before(), async (req, res) => {
  // Only attempts tollgate let through get here: a delay was answered 429
  // with Retry-After, a captcha with the challenge page, which comes back
  // here with the same form once solved.
  const { username, password } = req.body as { username: string; password: string };
  const user = await verifyPassword(username, password);
  // Says whether the password is breached; sets the device cookie on success.
  const v = await guard.report(req, res, user ? "success" : "failure");
  if (!user) return void res.status(200).type("html").send(loginPage("Wrong username or password."));
  if (v.action === "step_up") return attemptOf(req)?.stepUp(user); // no session yet: the code page
  startSession(req, user);
  res.redirect(303, "/");
});
