// The demo's web app: a login with a second step by SMS code that asks
// tollgate before every password check and every code send and check, and
// tells it how each attempt ended. The same app as examples/demo-login's
// (Go), with @tollgate/client:
//
//   - the password step behind the Express middleware of
//     @tollgate/client/express: guard.before() checks before the password
//     (the account from the form's username, the address through the
//     proxies, the device cookie, the password's fingerprint) and answers
//     a delay with HTTP 429, Retry-After and the login page saying how
//     many seconds to wait, and a CAPTCHA verdict with tollgate's
//     proof-of-work challenge, after which the form the user had filled
//     in goes on by itself; the route checks the password and reports,
//     for unknown accounts exactly as for wrong passwords, with one answer
//     for both;
//   - a Responder for the code step's answers that are not "go ahead": a
//     delay is HTTP 429 with Retry-After and a page that says how many
//     seconds to wait, a CAPTCHA verdict serves the CAPTCHA page
//     (writeAnswer writes either);
//   - the device cookie (DeviceCookie), set once a login has passed both
//     steps, and sent as device_token with the next checks, so that an
//     attack on the account or from the owner's address does not slow the
//     owner's browser;
//   - tollgate.send before sending a code, with the same message whatever
//     the verdict, and the otp_verify flow (with the destination and
//     channel) when the code is checked;
//   - breached passwords and step-up: the guard asks tollgate whether the
//     password typed is in its breached-password corpus (five hex digits
//     of its SHA-1 leave the app, nothing more) and says so in the report;
//     a right password answered step_up (breached, or the account or
//     address under attack) gets no session: the guard's code page first,
//     its code sent by the demo's sender (a file or the log), checked and
//     reported on tollgate's step_up flow; once it passed, the code step
//     as for any login.

import { randomBytes, randomInt, timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";
import type { ServerResponse } from "node:http";
import express, { type NextFunction, type Request, type Response } from "express";
import {
  Client, DeviceCookie, Proxies, Responder, failDelay, writeAnswer,
  type CallOptions, type Page as AnswerPage, type Verdict,
} from "@tollgate/client";
import { attemptOf, tollgate as guardOf } from "@tollgate/client/express";
import {
  type Page, msgBadCode, msgCheckUnavailable, msgCodeCaptcha, msgOnItsWay, msgUnavailable, msgWrong,
  renderPage, resendWait, tooManyAttempts,
} from "./pages.js";
import {
  type Session, Sessions, clearSessionCookie, codeTTL, maxSMS, setSessionCookie,
} from "./sessions.js";
import { UserStore, demoUsers } from "./users.js";

/** The flows of tollgate's built-in policy that the demo calls. */
const flowLogin = "login";
const flowVerify = "otp_verify";
const flowSend = "otp_send";

/**
 * The cookie that keeps otp_verify's device token. otp_verify does not
 * trust login's tokens (an attacker who knows the password must not buy
 * fresh code guesses by signing in again), so each flow's token has a
 * cookie of its own.
 */
export const otpDeviceCookieName = "__Host-tollgate-otp-device";

/** bounds a form body */
const maxFormBytes = 4 << 10;

/** Config configures the app. */
export interface AppConfig {
  /** the client the app asks */
  tollgate: Client;
  /** resolves each request's client IP */
  proxies: Proxies;
  /** the PBKDF2-HMAC-SHA256 iteration count of the password hashes */
  hashIterations: number;
  /** keys the password fingerprints (at least 32 bytes); default: random at every start */
  fingerprintKey?: Buffer | undefined;
  /** gets a line for each call tollgate did not answer (no identifier in it) */
  warn?: (line: string) => void;
  /**
   * the demo's sender of step-up codes (a real login mails or texts them):
   * gets the account's name and the code. Default: a line on stderr.
   */
  sendStepUpCode?: (user: string, code: string) => void | Promise<void>;
}

// The Go demo's own stylesheet (dist/app.js is two levels below examples/),
// so that the two demos look alike without a copy to drift.
const styleCSS = readFileSync(new URL("../../demo-login/demo/templates/style.css", import.meta.url));

/** html is a Responder page: the document of p, with status. */
function html(status: number, p: Page): AnswerPage {
  return {
    status,
    headers: { "content-type": "text/html; charset=utf-8" },
    body: renderPage(withUsers(p)),
  };
}

function withUsers(p: Page): Page {
  return p.page === "login" ? { ...p, users: demoUsers } : p;
}

function loginPage(message = ""): Page {
  return { page: "login", title: "Sign in", message, alert: message !== "" };
}

function otpPageFor(s: Session, message: string, alert: boolean): Page {
  const end = s.phone.length > 4 ? s.phone.slice(-4) : s.phone;
  return { page: "otp", title: "Enter your code", message, alert, user: s.user, phoneEnd: end, sms: s.sms };
}

/** render writes p with status, all at once. */
function render(res: ServerResponse, status: number, p: Page): void {
  const body = Buffer.from(renderPage(withUsers(p)));
  res.statusCode = status;
  res.setHeader("content-type", "text/html; charset=utf-8");
  res.setHeader("content-length", body.length);
  if (!res.hasHeader("cache-control")) res.setHeader("cache-control", "no-store");
  res.end(body);
}

function badRequest(res: ServerResponse): void {
  render(res, 400, { page: "error", title: "Bad request", message: "The demo could not read this request.", alert: true });
}

/** redirect answers 303 See Other to path. */
function redirect(res: Response, path: string): void {
  res.setHeader("cache-control", "no-store");
  res.redirect(303, path);
}

/** field is a form field's first value, or "". */
function field(req: Request, name: string): string {
  const body: unknown = req.body;
  if (typeof body !== "object" || body === null) return "";
  const v: unknown = (body as Record<string, unknown>)[name];
  if (typeof v === "string") return v;
  if (Array.isArray(v) && typeof v[0] === "string") return v[0];
  return "";
}

/**
 * respond answers v through rs (its hooks make the pages) and says whether
 * to go ahead, after holding a queued proceed for its holdMs.
 */
async function respond(res: Response, rs: Responder, v: Verdict): Promise<boolean> {
  const answer = rs.respond(v);
  if (!answer.proceed) {
    writeAnswer(res, answer);
    return false;
  }
  if (answer.holdMs > 0) {
    const gone = await new Promise<boolean>((resolve) => {
      const onClose = () => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        res.off("close", onClose);
        resolve(false);
      }, answer.holdMs);
      res.once("close", onClose);
    });
    if (gone) return false;
  }
  return true;
}

/**
 * callOptions ties tollgate's calls to the request, as the Go demo's
 * r.Context(): they are canceled when the end user goes away first (every
 * fail mode answers that closed).
 */
function callOptions(res: Response): CallOptions {
  const ac = new AbortController();
  res.once("close", () => {
    if (!res.writableFinished) ac.abort();
  });
  return { signal: ac.signal };
}

/** newCode is a random 6-digit code. */
function newCode(): string {
  return String(randomInt(0, 1_000_000)).padStart(6, "0");
}

/** createApp builds the demo's Express app. */
export async function createApp(cfg: AppConfig): Promise<express.Express> {
  const tollgate = cfg.tollgate;
  const proxies = cfg.proxies;
  const warn = cfg.warn ?? (() => {});
  const users = await UserStore.create(demoUsers, cfg.hashIterations);
  const sessions = new Sessions();
  // Keys the password fingerprints sent to tollgate (an HMAC of the
  // password, never the password). A new key at every start, which a demo
  // may do: a real login reads 32 random bytes from its secrets, the same
  // on every instance and across restarts (a new key starts the counts of
  // sprayed and repeated passwords anew).
  const fpKey = cfg.fingerprintKey ?? randomBytes(32);
  const sendStepUpCode = cfg.sendStepUpCode ??
    ((user: string, code: string) => void process.stderr.write(`express-login: step-up code for ${user}: ${code} (the demo's sender)\n`));

  const loginDevice = new DeviceCookie(); // __Host-tollgate-device, 90 days
  const otpDevice = new DeviceCookie({ name: otpDeviceCookieName });

  /** logErr logs a call tollgate did not answer; the client's errors hold no identifier. */
  const logErr = (call: string, err: unknown) => {
    if (err !== undefined) warn(`express-login: tollgate gave no verdict: call=${call} err=${String(err)}`);
  };

  /** clientIP is the request's client address as tollgate wants it, or "". */
  const clientIP = (req: Request) => proxies.clientIP(req);

  // The password step's guard. Its delay page is the login page with the
  // wait (the same for everyone the flow delays as long); a CAPTCHA
  // verdict gets tollgate's challenge page, and the login page below only
  // when none can be shown. Waiting does not lift a CAPTCHA, so that page
  // has no Retry-After. The device cookie is set once the code step has
  // passed too (deferDeviceCookie).
  const loginRS = new Responder({
    policy: flowLogin,
    captcha: () => html(429, loginPage(msgCheckUnavailable)),
    delay: (seconds) => html(429, loginPage(tooManyAttempts(seconds))),
  });
  const guard = guardOf({
    client: tollgate, flow: flowLogin, accountField: "username", passwordField: "password",
    proxies, fingerprintKey: fpKey, deviceCookie: loginDevice, deferDeviceCookie: true,
    failMode: failDelay, pages: loginRS, maxBodyBytes: maxFormBytes, warn,
    // An account tollgate will not count is answered as a wrong password,
    // without checking it.
    refused: (_req, res) => render(res, 200, loginPage(msgWrong)),
    // A right password answered step_up gets the guard's code page at
    // /login/step-up before any session; once the code passed, the login
    // goes on to the code step as any other (the device cookie still waits
    // for both: deferDeviceCookie). The waiting logins are in the guard's
    // memory, a bounded map named by a signed HttpOnly cookie: one
    // instance; several would pass a shared stepUp.store and key.
    stepUp: {
      sendCode: (_account, code, user) => sendStepUpCode((user as { name: string }).name, code),
      page: (message, form) => renderPage({ page: "stepup", title: "Confirm it is you", message, alert: !message.startsWith("We sent"), form }),
      signIn: (_req, res, done) => {
        const acct = done.user as { name: string; phone: string };
        const s = sessions.create(acct.name, acct.phone, done.deviceToken);
        if (s === undefined) return render(res, 503, loginPage(msgUnavailable));
        setSessionCookie(res, s.id);
        res.statusCode = 303;
        res.setHeader("location", "/otp");
        res.setHeader("cache-control", "no-store");
        res.end();
      },
    },
  });
  // The code step's pages show the session's code page: a Responder for
  // each request, whose hooks know the session.
  const sendRS = (s: Session) =>
    new Responder({
      policy: flowSend,
      captcha: () => html(429, { ...otpPageFor(s, msgCodeCaptcha, true), captchaFor: "send" }),
      // The same answer for a code sent and one refused (a deny): back to
      // the code page, which says a code may be on its way.
      accepted: () => ({ status: 303, headers: { location: "/otp?sent=1", "cache-control": "no-store" }, body: "" }),
      delay: (seconds) => html(429, otpPageFor(s, resendWait(seconds), true)),
    });
  const verifyRS = (s: Session) =>
    new Responder({
      policy: flowVerify,
      captcha: () => html(429, { ...otpPageFor(s, msgCodeCaptcha, true), captchaFor: "verify" }),
      delay: (seconds) => html(429, otpPageFor(s, tooManyAttempts(seconds), true)),
    });

  /** pending is the request's session between the two steps, or it redirects and answers undefined. */
  const pending = (req: Request, res: Response): Session | undefined => {
    const s = sessions.get(req);
    if (s === undefined) redirect(res, "/login");
    else if (s.signedIn) redirect(res, "/");
    else return s;
    return undefined;
  };

  /** pendingPost is a code step's POST: its pending session and client address, or undefined once answered. */
  const pendingPost = (req: Request, res: Response): { s: Session; ip: string } | undefined => {
    const s = pending(req, res);
    if (s === undefined) return undefined;
    const ip = clientIP(req);
    if (ip === "") {
      badRequest(res);
      return undefined;
    }
    return { s, ip };
  };

  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.use((_req, res, next) => {
    res.setHeader("content-security-policy",
      "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'");
    res.setHeader("x-content-type-options", "nosniff");
    res.setHeader("referrer-policy", "no-referrer");
    next();
  });
  const form = express.urlencoded({ extended: false, limit: maxFormBytes, parameterLimit: 20 });
  // The step-up code page (GET and POST /login/step-up), served by the guard.
  app.use("/login/step-up", form);
  app.use(guard.stepUpRoutes());

  app.get("/style.css", (_req, res) => {
    res.setHeader("content-type", "text/css; charset=utf-8");
    res.end(styleCSS);
  });

  app.get("/", (req, res) => {
    const s = sessions.get(req);
    if (s === undefined || !s.signedIn) return redirect(res, "/login");
    render(res, 200, { page: "home", title: "Welcome", user: s.user });
  });

  app.get("/login", (req, res) => {
    if (sessions.get(req)?.signedIn) return redirect(res, "/");
    render(res, 200, loginPage());
  });

  // The password step: the guard checked (and answered anything but a
  // proceed); the password, then the report.
  app.post("/login", form, guard.before(), async (req, res) => {
    const attempt = attemptOf(req);
    if (attempt === undefined) return badRequest(res);
    const acct = await users.verify(field(req, "username"), field(req, "password"));
    // A failure for an unknown name is reported exactly like a wrong
    // password for a known one. A success names the account by the app's
    // own user name (ref), which tollgate's events carry back.
    if (acct !== undefined) attempt.ref = acct.name;
    const rv = await attempt.report(acct ? "success" : "failure");
    if (acct === undefined) return render(res, 200, loginPage(msgWrong));
    // A right password tollgate wants a second factor for: no session yet,
    // the guard's code page answers.
    if (rv.action === "step_up") return attempt.stepUp(acct);
    const s = sessions.create(acct.name, acct.phone, rv.device_token);
    if (s === undefined) return render(res, 503, loginPage(msgUnavailable));
    setSessionCookie(res, s.id);
    redirect(res, "/otp");
  });

  app.get("/otp", (req, res) => {
    const s = pending(req, res);
    if (s === undefined) return;
    render(res, 200, otpPageFor(s, req.query["sent"] === "1" ? msgOnItsWay : "", false));
  });

  // Asks tollgate whether a code may go to the account's phone, and
  // "sends" it to the page's phone panel.
  app.post("/otp/send", form, async (req, res) => {
    const p = pendingPost(req, res);
    if (p === undefined) return;
    const { s, ip } = p;
    const v = await tollgate.send({
      flow: flowSend, destination: s.phone, channel: "sms", ip,
      account: s.user, device_token: loginDevice.fromRequest(req),
      captcha_solved: field(req, "captcha") === "yes",
    }, failDelay, callOptions(res));
    logErr("send", v.error);
    const rs = sendRS(s);
    if (!(await respond(res, rs, v))) return;
    const code = newCode();
    const now = Date.now();
    sessions.update(s.id, (x) => {
      x.code = code;
      x.codeExpires = now + codeTTL;
      x.sms.push({ at: new Date(now), to: x.phone, code });
      if (x.sms.length > maxSMS) x.sms.splice(0, x.sms.length - maxSMS);
    });
    writeAnswer(res, rs.accept());
  });

  // The code step: check on otp_verify, compare, report, and on success
  // sign in and set the device cookies.
  app.post("/otp/verify", form, async (req, res) => {
    const p = pendingPost(req, res);
    if (p === undefined) return;
    const { s, ip } = p;
    const token = otpDevice.fromRequest(req);
    const call = callOptions(res);
    const v = await tollgate.check({
      flow: flowVerify, account: s.user, ip, device_token: token,
      captcha_solved: field(req, "captcha") === "yes",
      destination: s.phone, channel: "sms",
    }, failDelay, call);
    logErr("check", v.error);
    if (!(await respond(res, verifyRS(s), v))) return;
    const got = Buffer.from(field(req, "code").trim());
    const want = Buffer.from(s.code);
    const right = s.code !== "" && Date.now() < s.codeExpires &&
      got.length === want.length && timingSafeEqual(got, want);
    const rv = await tollgate.report({
      flow: flowVerify, account: s.user, ip, outcome: right ? "success" : "failure",
      attempt: v.attempt, device_token: token, destination: s.phone, channel: "sms",
    }, failDelay, call);
    logErr("report", rv.error);
    if (!right) return render(res, 200, otpPageFor(s, msgBadCode, true));
    const signed = sessions.signIn(s.id);
    if (signed === undefined) return redirect(res, "/login");
    // Both steps passed: this browser is now a known device of the
    // account, for login (the password step's token) and for otp_verify.
    try {
      loginDevice.set(res, s.loginToken);
    } catch (err) {
      warn(`express-login: setting the device cookie: ${String(err)}`);
    }
    try {
      otpDevice.set(res, rv.device_token);
    } catch (err) {
      warn(`express-login: setting the code step's device cookie: ${String(err)}`);
    }
    setSessionCookie(res, signed.id);
    redirect(res, "/");
  });

  // Ends the session; the device cookies stay, as they should.
  app.post("/logout", (req, res) => {
    const id = sessions.idOf(req);
    if (id !== undefined) sessions.end(id);
    clearSessionCookie(res);
    redirect(res, "/login");
  });

  app.use((_req, res) => {
    render(res, 404, { page: "error", title: "Not found", message: "There is no such page in this demo.", alert: true });
  });
  // A body the form parser refused (too large, badly encoded) is a bad
  // request; anything else is the demo's own fault.
  app.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    const status = (err as { status?: unknown; type?: unknown } | null)?.status;
    if (res.headersSent) {
      res.destroy();
      return;
    }
    if (typeof status === "number" && status >= 400 && status < 500) return badRequest(res);
    warn(`express-login: ${String(err)}`);
    render(res, 500, { page: "error", title: "Something went wrong", message: msgUnavailable, alert: true });
  });
  return app;
}
