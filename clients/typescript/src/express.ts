/**
 * `@tollgate/client/express`: tollgate in front of an Express (or any
 * node:http) login route, as the Go client's Guard (`api/client`
 * middleware.go). No dependency on Express: it takes node's request and
 * response, with Express's `req.body`, `req.originalUrl` and `res.locals`
 * when they are there.
 *
 * ```ts
 * const guard = tollgate({ client, accountField: "username", proxies, fingerprintKey,
 *   stepUp: { sendCode: (account, code, user) => mailer.send(user.email, code), signIn: (req, res, d) => ... } });
 * app.use(express.urlencoded({ extended: false }), guard.stepUpRoutes()); // the code page, /login/step-up
 * app.post("/login", express.urlencoded({ extended: false }), guard.before(), async (req, res) => {
 *   const user = await users.verify(req.body.username, req.body.password);
 *   const a = attemptOf(req)!;
 *   const v = await a.report(user ? "success" : "failure"); // says breached; sets the device cookie on success
 *   if (v.action === "step_up") return a.stepUp(user); // no session yet: the code page answers
 *   ...
 * });
 * ```
 *
 * @packageDocumentation
 */

import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { parse as parseQuery } from "node:querystring";

import type { CallOptions, Client } from "./client.js";
import { Proxies } from "./clientip.js";
import { DeviceCookie } from "./cookie.js";
import { TollgateError } from "./errors.js";
import { failDelay, type FailMode, type Verdict } from "./failmode.js";
import { MemoryHolds, Sealer, holdKey, newHandle, wellFormedHandle, type HoldStore } from "./hold.js";
import { mediaType } from "./http.js";
import { Responder, writeAnswer, type Answer } from "./respond.js";
import { MemoryStepUps, codeFactor, type SecondFactor, type StepUpRecord, type StepUpStore } from "./stepup.js";
import { stepUpFlow, type Challenge, type ChallengeKind, type ChallengeSolution, type Outcome } from "./wire.js";

export { MemoryHolds, type HoldStore, type MemoryHoldsOptions } from "./hold.js";
export {
  MemoryStepUps,
  codeFactor,
  codeField,
  type CodeFactorOptions,
  type MemoryStepUpsOptions,
  type SecondFactor,
  type StepUpRecord,
  type StepUpStore,
} from "./stepup.js";

/** What signIn gets once a login's second factor passed. */
export interface StepUpDone {
  /** What the route (or Passport's verify callback) gave for the user when it started the step-up. */
  user: unknown;
  /** The route's reference for the user (Attempt.ref). */
  ref: string;
  /** The account as the end user typed it. */
  account: string;
  /** The device token the step_up_passed report returned ("" when none): the guard has set the cookie with it unless deferDeviceCookie. */
  deviceToken: string;
  /** Why tollgate asked for the second factor, for your logs; never for the end user. */
  reasons: string[];
}

/**
 * The second factor a login gets when its success report is answered
 * step_up (a breached password, an account or address under attack, a new
 * device while one is): no session until it passes.
 */
export interface StepUpOptions {
  /**
   * The default factor's sender: a 6-digit code to the account's owner
   * (your mailer, SMS). Give this or factor. Without either, a step_up is
   * answered with a page saying signing in cannot be finished now, and no
   * session.
   */
  sendCode?: ((account: string, code: string, user: unknown) => void | Promise<void>) | undefined;
  /** Your own second factor instead of the code (see {@link SecondFactor}). Default: {@link codeFactor} with sendCode. */
  factor?: SecondFactor | undefined;
  /**
   * Creates the session and answers, once the factor passed (the guard has
   * set the device cookie already unless deferDeviceCookie). Default: with
   * Passport (req.logIn there), req.logIn(user) and a redirect to
   * successRedirect; without it, a 500: a plain route must give signIn.
   */
  signIn?: ((req: GuardRequest, res: GuardResponse, done: StepUpDone) => void | Promise<void>) | undefined;
  /** The path of the code page that {@link Guard.stepUpRoutes} serves (GET and POST). Default "/login/step-up". */
  path?: string | undefined;
  /** Where a browser without a waiting login is sent back to. Default "/login". */
  loginPath?: string | undefined;
  /** Where the default signIn redirects to. Default "/". */
  successRedirect?: string | undefined;
  /**
   * Where logins wait: default a {@link MemoryStepUps} (10,000 at most,
   * one instance). Several instances need a shared store and one key.
   */
  store?: StepUpStore | undefined;
  /** Signs the cookie that names a waiting login: at least 32 bytes, the same on every instance sharing store. Default: random, which only the default store may use. */
  key?: Uint8Array | undefined;
  /** How long a login waits on its factor, in ms; keep it within the step-up ticket's life (step_up.ttl). Default 10 minutes. */
  ttlMs?: number | undefined;
  /** Wrong answers after which the login is dropped (sign in again), on top of tollgate's step_up counters. Default 5. */
  maxTries?: number | undefined;
  /** The page around the form: gets a message (plain text) and the form (trusted HTML), returns the HTML document. Default: a small built-in page. */
  page?: ((message: string, form: string) => string) | undefined;
}

/** The cookie that names a waiting login: a random id and its HMAC, HttpOnly, never the login's state. */
export const stepUpCookieName = "__Host-tollgate-step-up";

/** A request as the middleware reads it: node's, with Express's parsed body and original URL when they are there. */
export type GuardRequest = IncomingMessage & { body?: unknown; originalUrl?: string };

/** A response as the middleware writes it: node's, with Express's locals when they are there. */
export type GuardResponse = ServerResponse & { locals?: Record<string, unknown> };

/** Express's next. */
export type NextFunction = (err?: unknown) => void;

/** The options of {@link tollgate}. Nothing in them may depend on the end user. */
export interface GuardOptions {
  /** The client the middleware asks. Required. */
  client: Client;
  /** The flow each attempt is checked and reported on. Default "login". */
  flow?: string | undefined;
  /** The form field (or top-level JSON member) that holds the account as the end user typed it. Required. */
  accountField: string;
  /** The field of the password, read only to compute the fingerprint, and only with fingerprintKey. Default "password". */
  passwordField?: string | undefined;
  /**
   * Keys the password fingerprint sent with each check and report:
   * HMAC-SHA-256 of the password under this key, in hex, never the
   * password. It lets tollgate count one password failing on many
   * accounts (password_spray) and a repeated wrong password once
   * (same_password_window). At least 32 bytes: 32 random bytes, kept as
   * secret as a session key (with it, an eavesdropper on the calls to
   * tollgate could test guesses against a fingerprint offline), the same
   * on every instance. tollgate never sees the key and verifies nothing
   * with it: a new key simply starts new fingerprints. Default: none, no
   * fingerprint is sent, and those rules skip these attempts.
   */
  fingerprintKey?: Uint8Array | undefined;
  /** Resolves the end user's address. Default: the connection's peer, no forwarding header read. */
  proxies?: Proxies | undefined;
  /** Keeps the device token. Default: "__Host-tollgate-device", 90 days. */
  deviceCookie?: DeviceCookie | undefined;
  /**
   * true leaves setting the device cookie to the route (the attempt's
   * deviceToken after a success), for a login with a second step. Default
   * false: a success report sets it.
   */
  deferDeviceCookie?: boolean | undefined;
  /** Answers the check when tollgate gives none. Default failDelay. */
  failMode?: FailMode | undefined;
  /**
   * Answers browsers (every request whose body is not JSON) that may not
   * go ahead: its delay hook is your "try again in N seconds" page, its
   * captcha hook your page for when no challenge can be shown. Default: a
   * Responder with policy = flow and small built-in HTML pages. JSON
   * requests get RFC 9457 problem documents.
   */
  pages?: Responder | undefined;
  /**
   * What a captcha verdict is answered with: "pow" (tollgate's proof of
   * work), a provider tollgate is configured with, or "none" for the
   * pages' captcha answer alone. Default "pow".
   */
  challenge?: ChallengeKind | "none" | undefined;
  /**
   * Keeps browsers' form submissions, sealed, while they solve a
   * challenge. Default: a {@link MemoryHolds}, right for one instance;
   * several instances behind one address need a shared store (or sticky
   * sessions) and one holdKey.
   */
  holds?: HoldStore | undefined;
  /** Seals held submissions: at least 32 bytes, the same on every instance sharing holds. Default: random, which only the default holds may use. */
  holdKey?: Uint8Array | undefined;
  /** Bounds a body the middleware reads itself (when nothing parsed it before). Default 64 KiB. */
  maxBodyBytes?: number | undefined;
  /**
   * Answers a request tollgate refused for its account field (an
   * identifier it will not count, or none): answer it as you answer a
   * wrong password, without checking the password. Default: 400.
   */
  refused?: ((req: GuardRequest, res: GuardResponse) => void) | undefined;
  /** Gets a line for each call tollgate did not answer; no line holds an identifier. Default: none. */
  warn?: ((line: string) => void) | undefined;
  /**
   * Whether each success and failure report says if the password typed is
   * breached ({@link Client.breached}, a k-anonymous range query to
   * tollgate, made after the password was checked; best-effort: any error
   * is "not breached"). Failures feed tollgate's credential-stuffing rule;
   * a breached right password is answered step_up. Default true.
   */
  checkBreached?: boolean | undefined;
  /** The second factor a step_up verdict asks for. Default: none configured (see {@link StepUpOptions.sendCode}). */
  stepUp?: StepUpOptions | undefined;
}

/** The header fields a JSON request carries its challenge's solution in (lower case, as node gives them). */
export const headerChallengeToken = "tollgate-challenge-token";
export const headerChallengeNonce = "tollgate-challenge-nonce";
export const headerChallengeResponse = "tollgate-challenge-response";

/** The form fields a provider's widget fills itself. */
const widgetFields: Readonly<Record<string, string>> = {
  turnstile: "cf-turnstile-response",
  hcaptcha: "h-captcha-response",
  recaptcha: "g-recaptcha-response",
};

/** The attempt of each request the middleware let through. */
const attempts = new WeakMap<object, Attempt>();

/**
 * The attempt the middleware let through for this request (or its
 * response), or undefined when it did not pass through before().
 */
export function attemptOf(reqOrRes: object): Attempt | undefined {
  return attempts.get(reqOrRes);
}

/**
 * Passport's done callback. Its info is whatever the verify callback
 * passed (passport-local types it IVerifyOptions), handed on untouched.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type PassportDone<U> = (err: unknown, user?: U | false, info?: any) => void;

/** What an attempt reports besides its outcome. */
interface AttemptFields {
  account: string;
  ip: string;
  device: string;
  fp: string;
  /** The password, kept only until the report computed breached. */
  password: string;
  /** The login was posted as JSON: its step-up is answered with problem documents. */
  json: boolean;
}

/** One credential check the middleware let through: report how it ended, once. */
export class Attempt {
  /** The check's verdict: a proceed, maybe the fail mode's (fallback set). */
  readonly verdict: Verdict;
  /** true when the attempt came with a challenge tollgate verified. */
  readonly captchaSolved: boolean;
  /** Sent with a success report as your own reference for the end user (your user id); tollgate passes it only to the webhooks the report causes. */
  ref = "";
  readonly #g: Guard;
  readonly #res: GuardResponse;
  readonly #fields: AttemptFields;
  #result: Promise<Verdict> | undefined;
  #deviceToken = "";

  /** @internal */
  constructor(g: Guard, res: GuardResponse, verdict: Verdict, solved: boolean, fields: AttemptFields) {
    this.#g = g;
    this.#res = res;
    this.verdict = verdict;
    this.captchaSolved = solved;
    this.#fields = fields;
  }

  /**
   * Tells tollgate how the attempt ended: report an unknown account's
   * failure exactly as a known one's. A success sets the device cookie
   * from the token the report returned (unless deferDeviceCookie), so call
   * it before writing the response. Reported once: later calls get the
   * first one's verdict. Never rejects because tollgate failed, and is not
   * canceled when the end user goes away: an attempt must settle.
   */
  report(outcome: Outcome): Promise<Verdict> {
    this.#result ??= this.#report(outcome);
    return this.#result;
  }

  /** The device token a success report returned, "" before one: set the cookie with it when deferDeviceCookie is set. */
  get deviceToken(): string {
    return this.#deviceToken;
  }

  /**
   * Starts the second factor of a login whose success report was answered
   * step_up, and answers the request (a redirect to the code page, or a
   * page saying it cannot be done now): create no session, write nothing
   * else. user is handed to signIn once the factor passed. Rejects when
   * the report was not answered step_up.
   */
  async stepUp(user?: unknown): Promise<void> {
    const v = this.#result === undefined ? undefined : await this.#result;
    if (v === undefined || v.action !== "step_up") throw new Error("tollgate: stepUp: the success report was not answered step_up");
    const f = this.#fields;
    await this.#g.startStepUp(this.#res, f.json, {
      account: f.account, ip: f.ip, device: f.device, ticket: v.attempt, ref: this.ref, reasons: [...v.reasons],
      user, expiresAt: 0, tries: 0, factor: {},
    });
  }

  async #report(outcome: Outcome): Promise<Verdict> {
    const g = this.#g;
    const f = this.#fields;
    // After the password was checked and before the report, for a success
    // and a failure alike: failures feed the credential-stuffing rule.
    let breached = false;
    if (g.checkBreached && f.password !== "" && (outcome === "success" || outcome === "failure")) {
      breached = await g.client.breached(f.password);
    }
    f.password = "";
    const v = await g.client.report({
      flow: g.flow, account: f.account, ip: f.ip, outcome, attempt: this.verdict.attempt,
      device_token: f.device, password_fingerprint: f.fp, ref: outcome === "success" ? this.ref : "", breached,
    }, g.failMode);
    if (v.error !== undefined) g.warn(`tollgate guard: no answer: call=report err=${String(v.error)}`);
    if (outcome === "success" && v.action !== "step_up") {
      this.#deviceToken = v.device_token;
      if (!g.deferDeviceCookie && v.device_token !== "" && !this.#res.headersSent) {
        try {
          g.deviceCookie.set(this.#res, v.device_token);
        } catch {
          g.warn("tollgate guard: the device token cannot be a cookie; not set");
        }
      }
    }
    return v;
  }
}

/** What the middleware read of a request. */
interface Submission {
  json: boolean;
  body: Record<string, unknown>;
}

/**
 * The middleware of a login route: check each POST with tollgate before
 * the route sees it ({@link Guard.before}), and report the outcome
 * ({@link Guard.report}, or {@link Guard.passport} around a Passport
 * verify callback). It answers what may not go ahead itself:
 *
 * - delay: 429 with Retry-After and RateLimit: the pages' page for a
 *   browser, a problem document for a JSON body;
 * - captcha: for a browser's form post, a challenge page that runs
 *   tollgate's proof of work (or a provider's widget) and posts the
 *   solution back to the same URL; the form's fields wait on the server,
 *   sealed, and once tollgate has verified the solution the request goes
 *   on as the original submission, its check told the challenge was
 *   solved. For a JSON body, a 429 problem document with the challenge,
 *   whose solution comes back in the Tollgate-Challenge-Token and
 *   Tollgate-Challenge-Nonce (or -Response) header fields of the same
 *   request sent again.
 *
 * After the password was checked, each success and failure report says
 * whether the password is breached (checkBreached). A success answered
 * step_up is not a login: the route calls {@link Attempt.stepUp} (the
 * Passport wrapper does it itself) and creates no session; the second
 * factor (stepUp: by default a 6-digit code sent through sendCode, entered
 * on the page {@link Guard.stepUpRoutes} serves, checked on the step_up
 * flow, reported step_up_passed / step_up_failed) comes first, and signIn
 * runs only once it passed, with the device cookie set. The waiting login
 * is held on the server (stepUp.store: in process by default, bounded;
 * several instances pass a shared one), named by a random id in a signed,
 * HttpOnly cookie.
 *
 * Every answer depends on the verdict alone, never on the account: an
 * unknown account's answers are a known one's. Requests other than POST
 * pass through unchecked.
 */
export class Guard {
  /** @internal */ readonly client: Client;
  /** @internal */ readonly flow: string;
  /** @internal */ readonly failMode: FailMode;
  /** @internal */ readonly deviceCookie: DeviceCookie;
  /** @internal */ readonly deferDeviceCookie: boolean;
  /** @internal */ readonly warn: (line: string) => void;
  /** @internal */ readonly checkBreached: boolean;
  readonly #account: string;
  readonly #password: string;
  readonly #fpKey: Buffer | undefined;
  readonly #proxies: Proxies;
  readonly #pages: Responder;
  readonly #problems: Responder;
  readonly #challenge: ChallengeKind | "none";
  readonly #holds: HoldStore;
  readonly #seal: Sealer;
  readonly #maxBody: number;
  readonly #refused: (req: GuardRequest, res: GuardResponse) => void;
  #solver: string | undefined;
  #solverNext = 0;
  readonly #su: {
    factor: SecondFactor | undefined;
    signIn: ((req: GuardRequest, res: GuardResponse, done: StepUpDone) => void | Promise<void>) | undefined;
    path: string;
    loginPath: string;
    successRedirect: string;
    store: StepUpStore;
    key: Buffer;
    ttlMs: number;
    maxTries: number;
    page: (message: string, form: string) => string;
    cookie: DeviceCookie;
    pages: Responder;
    problems: Responder;
  };

  /** Checks options; throws naming what is unusable. */
  constructor(o: GuardOptions) {
    if (o === null || typeof o !== "object" || o.client === undefined || o.client === null) {
      throw new Error("tollgate: guard: client is required");
    }
    if (typeof o.accountField !== "string" || o.accountField === "") throw new Error("tollgate: guard: accountField is required");
    this.client = o.client;
    this.flow = o.flow !== undefined && o.flow !== "" ? o.flow : "login";
    this.failMode = o.failMode ?? failDelay;
    this.deviceCookie = o.deviceCookie ?? new DeviceCookie();
    this.deferDeviceCookie = o.deferDeviceCookie === true;
    this.warn = o.warn ?? (() => undefined);
    this.#account = o.accountField;
    this.#password = o.passwordField !== undefined && o.passwordField !== "" ? o.passwordField : "password";
    if (o.fingerprintKey !== undefined) {
      if (o.fingerprintKey.byteLength < 32) throw new Error("tollgate: guard: fingerprintKey must have at least 32 bytes");
      this.#fpKey = Buffer.from(o.fingerprintKey);
    }
    this.#proxies = o.proxies ?? new Proxies();
    const policy = /^[\x20-\x7e]{1,64}$/.test(this.flow) ? this.flow : "login";
    this.#problems = new Responder({ policy });
    this.#pages = o.pages ?? new Responder({ policy, delay: delayPage, captcha: captchaPage });
    const ch = o.challenge ?? "pow";
    if (!["pow", "turnstile", "hcaptcha", "recaptcha", "none"].includes(ch)) {
      throw new Error("tollgate: guard: challenge must be pow, turnstile, hcaptcha, recaptcha or none");
    }
    this.#challenge = ch;
    let key = o.holdKey;
    if (key === undefined) {
      if (o.holds !== undefined) throw new Error("tollgate: guard: holds needs a holdKey shared by the instances that share it");
      key = randomBytes(32);
    } else if (key.byteLength < 32) {
      throw new Error("tollgate: guard: holdKey must have at least 32 bytes");
    }
    this.#holds = o.holds ?? new MemoryHolds();
    this.#seal = new Sealer(key);
    this.#maxBody = o.maxBodyBytes !== undefined && o.maxBodyBytes > 0 ? o.maxBodyBytes : 64 << 10;
    this.#refused = o.refused ?? ((req, res) => badRequest(req, res));
    this.checkBreached = o.checkBreached !== false;
    const su = o.stepUp ?? {};
    if (su.factor !== undefined && (typeof su.factor !== "object" || typeof su.factor.start !== "function" || typeof su.factor.verify !== "function")) {
      throw new Error("tollgate: guard: stepUp.factor must have start and verify");
    }
    const path = su.path ?? "/login/step-up";
    if (!/^\/[\x21-\x7e]*$/.test(path) || path.includes("?") || path.includes("#")) throw new Error("tollgate: guard: stepUp.path must be a path");
    let suKey = su.key;
    if (suKey === undefined) {
      if (su.store !== undefined) throw new Error("tollgate: guard: stepUp.store needs a stepUp.key shared by the instances that share it");
      suKey = randomBytes(32);
    } else if (suKey.byteLength < 32) {
      throw new Error("tollgate: guard: stepUp.key must have at least 32 bytes");
    }
    const ttlMs = su.ttlMs !== undefined && su.ttlMs > 0 ? su.ttlMs : 10 * 60_000;
    const pageOf = su.page ?? stepUpDocument;
    const form = (message: string): { status: number; headers: Record<string, string>; body: string } => ({
      status: 429, headers: { "content-type": html, "cache-control": "no-store" }, body: pageOf(message, this.#stepUpForm()),
    });
    this.#su = {
      problems: new Responder({ policy: stepUpFlow }),
      factor: su.factor ?? (su.sendCode !== undefined ? codeFactor({ sendCode: su.sendCode, ttlMs }) : undefined),
      signIn: su.signIn,
      path,
      loginPath: su.loginPath ?? "/login",
      successRedirect: su.successRedirect ?? "/",
      store: su.store ?? new MemoryStepUps(),
      key: Buffer.from(suKey),
      ttlMs,
      maxTries: su.maxTries !== undefined && su.maxTries > 0 ? Math.floor(su.maxTries) : 5,
      page: pageOf,
      cookie: new DeviceCookie({ name: stepUpCookieName, maxAgeSeconds: Math.max(1, Math.ceil(ttlMs / 1000)) }),
      pages: new Responder({
        policy: stepUpFlow,
        delay: (seconds) => form(`Too many attempts. Try again in ${seconds} ${seconds === 1 ? "second" : "seconds"}.`),
        captcha: () => form("Too many attempts from here. Please try again later."),
      }),
    };
  }

  /**
   * The middleware that runs before the password check: next() only for
   * an attempt that may go ahead, whose {@link Attempt} is then
   * `res.locals.tollgate` (and {@link attemptOf}(req)). It reads the body
   * Express parsed (express.urlencoded or express.json before it), or
   * parses a form or JSON body itself.
   */
  before(): (req: GuardRequest, res: GuardResponse, next: NextFunction) => void {
    return (req, res, next) => {
      this.#before(req, res).then((go) => {
        if (go) next();
      }, next);
    };
  }

  /**
   * Reports how the request's attempt ended (see {@link Attempt.report}).
   * Rejects when the request did not pass through before(): a route that
   * reports nothing would leave every attempt unsettled.
   */
  report(req: object, _res: object | undefined, outcome: Outcome): Promise<Verdict> {
    const a = attemptOf(req);
    if (a === undefined) return Promise.reject(new Error("tollgate: no attempt to report: put guard.before() in front of this route"));
    return a.report(outcome);
  }

  /**
   * Reports that account's password was just changed or reset, from req's
   * end user ({@link Client.reportPasswordChanged} on the guard's flow):
   * the address is the one the guard's checks use (its `proxies`), never
   * a header the client sets. Call it from the route that changed the
   * password, once the change has taken effect, with the account as your
   * login form posts it; the route needs no before(). Rejects with an
   * error for your log, never the end user: log it and go on. A request
   * whose address the guard cannot resolve rejects and sends nothing.
   *
   * ```ts
   * app.post("/account/password", async (req, res) => {
   *   await changePassword(req.user, req.body.password);
   *   guard.passwordChanged(req, req.user.username).catch((e) => log.warn(String(e)));
   *   res.redirect("/account");
   * });
   * ```
   */
  passwordChanged(req: GuardRequest, account: string, options?: CallOptions): Promise<void> {
    const ip = this.#proxies.clientIP(req);
    if (ip === "") return Promise.reject(new Error("tollgate: report: the request has no client address the guard can use"));
    return this.client.reportPasswordChanged({ flow: this.flow, account, ip }, options);
  }

  /**
   * Wraps a passport-local verify callback so that its outcome is reported
   * without the app writing it: a user is a success (with `ref` from
   * refOf, if given), false a failure, an error nothing (the outcome is
   * unknown). Use it with `passReqToCallback: true`, behind before():
   *
   * ```ts
   * passport.use(new LocalStrategy({ passReqToCallback: true }, guard.passport(verify)));
   * app.post("/login", express.urlencoded({ extended: false }), guard.before(),
   *   passport.authenticate("local", { successRedirect: "/", failureRedirect: "/login?failed=1" }));
   * ```
   *
   * verify is `(username, password, done)` or `async (username, password)
   * => user | false`. Without an attempt (before() missing) the wrapper
   * fails the authentication with an error instead of checking anything.
   */
  passport<U>(
    verify:
      | ((username: string, password: string, done: (err: unknown, user?: U | false | null, info?: unknown) => void) => void)
      | ((username: string, password: string) => Promise<U | false | null | undefined>),
    refOf?: (user: U) => string,
  ): (req: object, username: string, password: string, done: PassportDone<U>) => void {
    return (req, username, password, done) => {
      const a = attemptOf(req);
      if (a === undefined) {
        done(new Error("tollgate: no attempt: put guard.before() in front of passport.authenticate"));
        return;
      }
      const settle = (err: unknown, user: U | false | null | undefined, info?: unknown): void => {
        if (err !== null && err !== undefined) {
          done(err);
          return;
        }
        const ok = user !== false && user !== null && user !== undefined;
        if (ok && refOf !== undefined) a.ref = refOf(user);
        a.report(ok ? "success" : "failure").then(
          (v) => {
            // Not a login yet: the wrapper answers with the code page itself
            // and Passport's callback is never called, so Passport creates
            // no session and redirects nowhere.
            if (ok && v.action === "step_up") a.stepUp(user).catch((e: unknown) => done(e));
            else done(null, ok ? user : false, info);
          },
          (e: unknown) => done(e),
        );
      };
      if (verify.length >= 3) {
        (verify as (u: string, p: string, d: typeof settle) => void)(username, password, settle);
        return;
      }
      (verify as (u: string, p: string) => Promise<U | false | null | undefined>)(username, password).then(
        (user) => settle(null, user),
        (e: unknown) => settle(e, undefined),
      );
    };
  }

  /**
   * Serves tollgate's solver script (fetched once) from your origin, for a
   * page of your own that solves a JSON request's challenge with
   * `tollgateSolve(token, difficulty)`: `app.get("/tollgate/solver.js",
   * guard.solverHandler())`.
   */
  solverHandler(): (req: IncomingMessage, res: ServerResponse) => void {
    return (_req, res) => {
      this.#solverScript().then((js) => {
        if (js === undefined) {
          res.statusCode = 503;
          res.end("Service Unavailable");
          return;
        }
        res.setHeader("content-type", "text/javascript; charset=utf-8");
        res.setHeader("x-content-type-options", "nosniff");
        res.setHeader("cache-control", "public, max-age=3600");
        res.end(js);
      }, () => {
        res.statusCode = 500;
        res.end();
      });
    };
  }

  /**
   * The code page of a login waiting on its second factor, at
   * stepUp.path: GET shows it, POST checks on the step_up flow (a delay
   * is a 429 with Retry-After), verifies the factor, reports
   * step_up_passed or step_up_failed, and once it passed sets the device
   * cookie and calls signIn. Other requests go to next. Mount it before
   * your routes: `app.use(guard.stepUpRoutes())`.
   */
  stepUpRoutes(): (req: GuardRequest, res: GuardResponse, next: NextFunction) => void {
    return (req, res, next) => {
      const url = req.originalUrl ?? req.url ?? "/";
      const path = url.split("?", 1)[0];
      if (path !== this.#su.path || (req.method !== "GET" && req.method !== "POST")) {
        next();
        return;
      }
      this.#stepUpRequest(req, res).catch(next);
    };
  }

  /** @internal Starts the second factor of r and answers res. */
  async startStepUp(res: GuardResponse, json: boolean, r: StepUpRecord): Promise<void> {
    const su = this.#su;
    if (su.factor === undefined) {
      this.warn("tollgate guard: a login was answered step_up and no second factor is configured (stepUp.sendCode or stepUp.factor); no session");
      this.#stepUpAnswer(res, 503, "Signing in needs a second check that cannot be done now. Please try again later.", false, json);
      return;
    }
    r.expiresAt = Date.now() + su.ttlMs;
    try {
      await su.factor.start(r);
    } catch (e) {
      this.warn(`tollgate guard: the second factor could not start: ${String(e)}`);
      this.#stepUpAnswer(res, 503, "We could not send you a code. Please sign in again later.", false, json);
      return;
    }
    const id = randomBytes(24).toString("base64url");
    let kept = false;
    try {
      kept = await su.store.put(id, r, su.ttlMs);
    } catch (e) {
      this.warn(`tollgate guard: the step-up store did not answer: ${String(e)}`);
    }
    if (!kept) {
      this.#stepUpAnswer(res, 503, "Signing in cannot be finished now. Please try again later.", false, json);
      return;
    }
    su.cookie.set(res, id + "." + this.#stepUpMAC(id));
    if (json) {
      this.#stepUpAnswer(res, 403, "Confirm it is you: post the code we sent you as code to the step_up path.", true, true);
      return;
    }
    res.statusCode = 303;
    res.setHeader("location", su.path);
    res.setHeader("cache-control", "no-store");
    res.end();
  }

  /** The HMAC that signs a waiting login's id in its cookie. */
  #stepUpMAC(id: string): string {
    return createHmac("sha256", this.#su.key).update("tollgate step-up\0" + id, "utf8").digest("base64url");
  }

  /** The waiting login's id from the request's cookie, when its signature holds; else undefined. */
  #stepUpID(req: GuardRequest): string | undefined {
    const v = this.#su.cookie.fromRequest(req);
    const dot = v.indexOf(".");
    if (dot <= 0) return undefined;
    const id = v.slice(0, dot);
    const got = Buffer.from(v.slice(dot + 1), "utf8");
    const want = Buffer.from(this.#stepUpMAC(id), "utf8");
    return got.length === want.length && timingSafeEqual(got, want) ? id : undefined;
  }

  /** Writes the code page with message: with the form when withForm, else a link back to the login. */
  #stepUpAnswer(res: GuardResponse, status: number, message: string, withForm: boolean, json = false): void {
    const su = this.#su;
    if (json) {
      // A JSON login's answers: problem documents; step_up says where the
      // code goes while one is expected.
      const doc: Record<string, unknown> = { type: "about:blank", title: statusTitle(status), status, detail: message };
      if (withForm) doc["step_up"] = { path: su.path, field: "code" };
      const body = JSON.stringify(doc) + "\n";
      writeAnswer(res, {
        proceed: false, holdMs: 0, status, body,
        headers: { "content-type": "application/problem+json", "content-length": String(Buffer.byteLength(body, "utf8")), "cache-control": "no-store" },
      });
      return;
    }
    const form = withForm ? this.#stepUpForm() : `<p><a href="${esc(su.loginPath)}">Sign in again</a></p>`;
    const body = su.page(message, form);
    writeAnswer(res, {
      proceed: false, holdMs: 0, status, body,
      headers: {
        "content-type": html, "content-length": String(Buffer.byteLength(body, "utf8")), "cache-control": "no-store",
        "x-frame-options": "DENY", "referrer-policy": "no-referrer",
      },
    });
  }

  /** The code page's form: the factor's fields, posted back to the page. */
  #stepUpForm(): string {
    const su = this.#su;
    return `<form method="post" action="${esc(su.path)}" id="tollgate-step-up">\n${(su.factor?.fields ?? defaultFields)()}\n<button id="tollgate-step-up-submit" type="submit">Continue</button>\n</form>`;
  }

  /** Sends the browser back to the login, forgetting its step-up cookie. */
  #stepUpRestart(res: GuardResponse, json: boolean): void {
    this.#su.cookie.clear(res);
    if (json) {
      this.#stepUpAnswer(res, 403, "No sign-in is waiting for a code here. Please sign in again.", false, true);
      return;
    }
    res.statusCode = 303;
    res.setHeader("location", this.#su.loginPath);
    res.setHeader("cache-control", "no-store");
    res.end();
  }

  async #stepUpGet(id: string | undefined): Promise<StepUpRecord | undefined> {
    if (id === undefined) return undefined;
    try {
      const r = await this.#su.store.get(id);
      return r !== undefined && r.expiresAt > Date.now() ? r : undefined;
    } catch (e) {
      this.warn(`tollgate guard: the step-up store did not answer: ${String(e)}`);
      return undefined;
    }
  }

  async #stepUpForget(id: string): Promise<void> {
    try {
      await this.#su.store.delete(id);
    } catch (e) {
      this.warn(`tollgate guard: the step-up store did not answer: ${String(e)}`);
    }
  }

  async #stepUpRequest(req: GuardRequest, res: GuardResponse): Promise<void> {
    const su = this.#su;
    const json = req.method === "POST" && isJSON(header(req, "content-type"));
    const id = this.#stepUpID(req);
    const r = await this.#stepUpGet(id);
    if (id === undefined || r === undefined || su.factor === undefined) {
      this.#stepUpRestart(res, json);
      return;
    }
    if (req.method === "GET") {
      this.#stepUpAnswer(res, 200, "We sent you a code. Enter it to finish signing in.", true);
      return;
    }
    const sub = await this.#read(req);
    const ip = this.#proxies.clientIP(req);
    if (sub === undefined || ip === "") {
      badRequest(req, res);
      return;
    }
    // The step_up flow's own counters bound guessing, per account and per
    // address, apart from the login's: a wrong code never locks the password.
    const call = callOptions(res);
    const cv = await this.client.check({ flow: stepUpFlow, account: r.account, ip }, this.failMode, call);
    if (cv.error !== undefined) this.warn(`tollgate guard: no answer: call=check err=${String(cv.error)}`);
    if (cv.action !== "proceed") {
      writeAnswer(res, (json ? su.problems : su.pages).respond(cv));
      return;
    }
    if (cv.delay_ms > 0 && !(await hold(res, cv.delay_ms))) return;
    let ok = false;
    try {
      ok = await su.factor.verify(r, sub.body);
    } catch (e) {
      this.warn(`tollgate guard: the second factor's verify failed: ${String(e)}`);
    }
    if (ok) await this.#stepUpForget(id); // single-use: gone before anything else can read it
    const rv = await this.client.reportStepUp({ account: r.account, ip, ticket: r.ticket, attempt: cv.attempt, passed: ok, device_token: r.device, ref: r.ref }, this.failMode);
    if (rv.error !== undefined) this.warn(`tollgate guard: no answer: call=report err=${String(rv.error)}`);
    if (!ok) {
      r.tries++;
      if (r.tries >= su.maxTries) {
        await this.#stepUpForget(id);
        su.cookie.clear(res);
        this.#stepUpAnswer(res, 403, "Too many wrong codes. Please sign in again.", false, json);
        return;
      }
      try {
        await su.store.put(id, r, Math.max(1, r.expiresAt - Date.now()));
      } catch (e) {
        this.warn(`tollgate guard: the step-up store did not answer: ${String(e)}`);
      }
      if (rv.action === "delay") {
        writeAnswer(res, (json ? su.problems : su.pages).respond(rv));
        return;
      }
      this.#stepUpAnswer(res, json ? 403 : 200, "That code is not right. Try again.", true, json);
      return;
    }
    su.cookie.clear(res);
    if (rv.action !== "proceed") {
      // tollgate refused the ticket (expired, for another account) or gave
      // no verdict and the fail mode is closed: no session; sign in again.
      this.#stepUpAnswer(res, rv.error instanceof TollgateError && rv.error.status === 400 ? 400 : 503,
        "Signing in could not be finished. Please sign in again.", false, json);
      return;
    }
    if (!this.deferDeviceCookie && rv.device_token !== "") {
      try {
        this.deviceCookie.set(res, rv.device_token);
      } catch {
        this.warn("tollgate guard: the device token cannot be a cookie; not set");
      }
    }
    const done: StepUpDone = { user: r.user, ref: r.ref, account: r.account, deviceToken: rv.device_token, reasons: r.reasons };
    if (su.signIn !== undefined) {
      await su.signIn(req, res, done);
      return;
    }
    const logIn = (req as { logIn?: unknown }).logIn;
    if (typeof logIn !== "function") {
      this.warn("tollgate guard: a second factor passed and no stepUp.signIn is configured; no session");
      this.#stepUpAnswer(res, 500, "Signing in could not be finished. Please sign in again.", false, json);
      return;
    }
    await new Promise<void>((resolve, reject) => {
      (logIn as (u: unknown, cb: (err?: unknown) => void) => void).call(req, r.user, (err?: unknown) => {
        if (err !== undefined && err !== null) {
          reject(err instanceof Error ? err : new Error(String(err)));
          return;
        }
        res.statusCode = 303;
        res.setHeader("location", su.successRedirect);
        res.setHeader("cache-control", "no-store");
        res.end();
        resolve();
      });
    });
  }

  /** Checks a request; true to go on (next), false once it answered. */
  async #before(req: GuardRequest, res: GuardResponse): Promise<boolean> {
    if (req.method !== "POST") return true;
    const sub = await this.#read(req);
    if (sub === undefined) {
      badRequest(req, res);
      return false;
    }
    const ip = this.#proxies.clientIP(req);
    if (ip === "") {
      badRequest(req, res);
      return false;
    }
    let solved = false;
    if (!sub.json && Object.hasOwn(sub.body, "tollgate_handle")) {
      // A challenge page's post: the original submission, if its solution holds.
      const held = await this.#resume(req, res, sub.body, ip);
      if (held === undefined) return false;
      sub.body = held;
      req.body = held;
      solved = true;
    } else if (sub.json && (header(req, headerChallengeToken) !== "" || header(req, headerChallengeResponse) !== "")) {
      if (!(await this.#verifyJSON(req, res, ip))) return false;
      solved = true;
    }
    const account = str(sub.body[this.#account]);
    const password = str(sub.body[this.#password]);
    const fp = this.#fpKey === undefined ? "" : createHmac("sha256", this.#fpKey).update(password, "utf8").digest("hex");
    const device = this.deviceCookie.fromRequest(req);
    const call = callOptions(res);
    const v = await this.client.check({
      flow: this.flow, account, ip, device_token: device, captcha_solved: solved, password_fingerprint: fp,
    }, this.failMode, call);
    if (v.error !== undefined) {
      this.warn(`tollgate guard: no answer: call=check err=${String(v.error)}`);
      if (v.error instanceof TollgateError && v.error.field === "account") {
        this.#refused(req, res);
        return false;
      }
    }
    switch (v.action) {
      case "proceed": {
        if (v.delay_ms > 0 && !(await hold(res, v.delay_ms))) return false;
        const a = new Attempt(this, res, v, solved, { account, ip, device, fp, password: this.checkBreached ? password : "", json: sub.json });
        attempts.set(req, a);
        attempts.set(res, a);
        if (res.locals !== undefined && res.locals !== null) res.locals["tollgate"] = a;
        return true;
      }
      case "captcha":
        await this.#answerCaptcha(req, res, sub);
        return false;
      default:
        writeAnswer(res, (sub.json ? this.#problems : this.#pages).respond(v));
        return false;
    }
  }

  /** The request's body: Express's req.body when it parsed one, or a form or JSON body read here; undefined when unreadable. */
  async #read(req: GuardRequest): Promise<Submission | undefined> {
    const json = isJSON(header(req, "content-type"));
    const parsed = req.body;
    const object = parsed !== null && typeof parsed === "object" && !Array.isArray(parsed) && !Buffer.isBuffer(parsed);
    if (object && (Object.keys(parsed).length > 0 || req.readableEnded)) {
      return { json, body: parsed as Record<string, unknown> };
    }
    if (parsed !== undefined && !object) return undefined; // parsed as something else: a string, a Buffer, an array
    if (req.readableEnded) return undefined; // read by a parser that kept nothing
    let raw: Buffer;
    try {
      raw = await readBody(req, this.#maxBody);
    } catch {
      return undefined;
    }
    let body: unknown;
    if (json) {
      try {
        body = JSON.parse(raw.toString("utf8"));
      } catch {
        return undefined;
      }
      if (body === null || typeof body !== "object" || Array.isArray(body)) return undefined;
    } else if (mediaType(header(req, "content-type")) === "application/x-www-form-urlencoded") {
      body = { ...parseQuery(raw.toString("utf8")) };
    } else {
      body = {};
    }
    req.body = body;
    return { json, body: body as Record<string, unknown> };
  }

  /** Verifies a challenge page's post and returns the submission it held, taken; undefined once it answered instead. */
  async #resume(req: GuardRequest, res: GuardResponse, post: Record<string, unknown>, ip: string): Promise<Record<string, unknown> | undefined> {
    const handle = str(post["tollgate_handle"]);
    const token = str(post["tollgate_token"]);
    const held = await this.#peek(handle, binding(req, token));
    if (held === undefined) {
      // Expired, taken, or held for another route or challenge: the form
      // again, to be filled in anew.
      res.statusCode = 303;
      res.setHeader("location", requestURI(req));
      res.setHeader("cache-control", "no-store");
      res.end();
      return undefined;
    }
    let s: ChallengeSolution = { token, nonce: str(post["tollgate_nonce"]) };
    const field = widgetFields[this.#challenge];
    if (field !== undefined) {
      const response = str(post["tollgate_response"]) || str(post[field]);
      s = { token, provider: this.#challenge as "turnstile", response, remote_ip: ip };
    }
    let ok = false;
    try {
      ok = (await this.client.verifyChallenge(s)).solved;
    } catch (e) {
      this.warn(`tollgate guard: no answer: call=challenge-verify err=${String(e)}`);
    }
    await this.#forget(handle);
    if (!ok) {
      // A fresh challenge for the same submission: each is solved once, so
      // a wrong solution costs another.
      if (!(await this.#challengePage(req, res, held))) writeAnswer(res, this.#pages.respond({ action: "captcha" }));
      return undefined;
    }
    return held;
  }

  /** The submission held under handle for binding, left in the store. */
  async #peek(handle: string, bind: string): Promise<Record<string, unknown> | undefined> {
    if (!wellFormedHandle(handle)) return undefined;
    let blob: Uint8Array | undefined;
    try {
      blob = await this.#holds.get(holdKey(handle));
    } catch (e) {
      this.warn(`tollgate guard: the hold store did not answer: ${String(e)}`);
      return undefined;
    }
    if (blob === undefined) return undefined;
    const plain = this.#seal.open(handle, bind, blob);
    if (plain === undefined) return undefined;
    try {
      const v: unknown = JSON.parse(plain.toString("utf8"));
      return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
    } catch {
      return undefined;
    }
  }

  async #forget(handle: string): Promise<void> {
    try {
      await this.#holds.delete(holdKey(handle));
    } catch (e) {
      this.warn(`tollgate guard: the hold store did not answer: ${String(e)}`);
    }
  }

  /** Verifies a JSON request's solution headers; false once it answered a fresh challenge instead. */
  async #verifyJSON(req: GuardRequest, res: GuardResponse, ip: string): Promise<boolean> {
    let s: ChallengeSolution = { token: header(req, headerChallengeToken), nonce: header(req, headerChallengeNonce) };
    if (widgetFields[this.#challenge] !== undefined) {
      s = { token: s.token, provider: this.#challenge as "turnstile", response: header(req, headerChallengeResponse), remote_ip: ip };
    }
    try {
      if ((await this.client.verifyChallenge(s)).solved) return true;
    } catch (e) {
      this.warn(`tollgate guard: no answer: call=challenge-verify err=${String(e)}`);
    }
    await this.#answerCaptcha(req, res, { json: true, body: {} });
    return false;
  }

  /** A captcha verdict's answer: a challenge, or the pages' (problems') captcha answer when none can be issued. */
  async #answerCaptcha(req: GuardRequest, res: GuardResponse, sub: Submission): Promise<void> {
    if (this.#challenge !== "none") {
      if (sub.json ? await this.#challengeProblem(res) : await this.#challengePage(req, res, sub.body)) return;
    }
    writeAnswer(res, (sub.json ? this.#problems : this.#pages).respond({ action: "captcha" }));
  }

  async #issue(): Promise<Challenge | undefined> {
    try {
      return await this.client.issueChallenge(this.#challenge === "none" ? undefined : this.#challenge);
    } catch (e) {
      this.warn(`tollgate guard: no answer: call=challenge err=${String(e)}`);
      return undefined;
    }
  }

  /** Holds body and writes the challenge page; false, having written nothing, when it cannot. */
  async #challengePage(req: GuardRequest, res: GuardResponse, body: Record<string, unknown>): Promise<boolean> {
    const ch = await this.#issue();
    if (ch === undefined) return false;
    let solver = "";
    if (ch.kind === "pow") {
      const js = await this.#solverScript();
      if (js === undefined) return false;
      solver = js;
    }
    const keep: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(body)) if (!k.startsWith("tollgate_")) keep[k] = v;
    const handle = newHandle();
    let ttl = Date.parse(ch.expires_at) - Date.now();
    if (!(ttl > 0 && ttl <= 15 * 60_000)) ttl = 5 * 60_000;
    const blob = this.#seal.seal(handle, binding(req, ch.token), Buffer.from(JSON.stringify(keep), "utf8"));
    let held = false;
    try {
      held = await this.#holds.put(holdKey(handle), blob, ttl);
    } catch (e) {
      this.warn(`tollgate guard: the hold store did not answer: ${String(e)}`);
    }
    if (!held) {
      this.warn("tollgate guard: the submission could not be held; answering without a challenge page");
      return false;
    }
    writeAnswer(res, challengePage(ch, handle, solver));
    return true;
  }

  /** Writes a 429 problem document with a challenge; false, having written nothing, when none could be issued. */
  async #challengeProblem(res: GuardResponse): Promise<boolean> {
    const ch = await this.#issue();
    if (ch === undefined) return false;
    const c: Record<string, unknown> = { token: ch.token, kind: ch.kind, difficulty: ch.difficulty, expires_at: ch.expires_at };
    if (ch.site_key !== "") c["site_key"] = ch.site_key;
    const body = JSON.stringify({
      type: "about:blank", title: "Too Many Requests", status: 429,
      detail: "Solve the challenge, then send the request again with its solution in the Tollgate-Challenge-Token and Tollgate-Challenge-Nonce (or Tollgate-Challenge-Response) header fields.",
      challenge: c,
    }) + "\n";
    writeAnswer(res, {
      proceed: false, holdMs: 0, status: 429, body,
      headers: { "content-type": "application/problem+json", "content-length": String(Buffer.byteLength(body)), "cache-control": "no-store" },
    });
    return true;
  }

  /** tollgate's solver script, fetched once; undefined while it cannot be had (asked again 10 s after a failure). */
  async #solverScript(): Promise<string | undefined> {
    if (this.#solver !== undefined) return this.#solver;
    if (Date.now() < this.#solverNext) return undefined;
    try {
      this.#solver = await this.client.challengeSolver();
      return this.#solver;
    } catch (e) {
      this.warn(`tollgate guard: no answer: call=challenge-solver err=${String(e)}`);
      this.#solverNext = Date.now() + 10_000;
      return undefined;
    }
  }
}

/** The middleware of a login route: see {@link Guard}. */
export function tollgate(options: GuardOptions): Guard {
  return new Guard(options);
}

/** A header field's first value, or "". */
function header(req: IncomingMessage, name: string): string {
  const v = req.headers[name];
  return typeof v === "string" ? v : Array.isArray(v) ? (v[0] ?? "") : "";
}

/** A field's value as a string: the first of a list, "" for anything else. */
function str(v: unknown): string {
  if (typeof v === "string") return v;
  if (Array.isArray(v) && typeof v[0] === "string") return v[0];
  return "";
}

/** Whether a Content-Type is JSON (application/json or a +json type). */
function isJSON(ct: string): boolean {
  const mt = mediaType(ct);
  return mt === "application/json" || (mt !== undefined && mt.endsWith("+json"));
}

/** The request's path and query as the browser sent it. */
function requestURI(req: GuardRequest): string {
  return req.originalUrl ?? req.url ?? "/";
}

/** What a held submission is bound to: the route it was posted to and the challenge issued for it. */
function binding(req: GuardRequest, token: string): string {
  return `${req.method ?? ""}\0${requestURI(req)}\0${token}`;
}

/** Reads a body of at most max bytes; rejects past it. */
function readBody(req: IncomingMessage, max: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let n = 0;
    req.on("data", (c: Buffer) => {
      n += c.length;
      if (n > max) {
        req.removeAllListeners("data");
        req.resume();
        reject(new Error("tollgate: body too large"));
        return;
      }
      chunks.push(c);
    });
    req.once("end", () => resolve(Buffer.concat(chunks)));
    req.once("error", reject);
  });
}

/** Ties tollgate's calls to the request: canceled when the end user goes away first. */
function callOptions(res: ServerResponse): CallOptions {
  const ac = new AbortController();
  res.once("close", () => {
    if (!res.writableFinished) ac.abort();
  });
  return { signal: ac.signal };
}

/** Holds a queued proceed for ms; false when the end user went away first. */
function hold(res: ServerResponse, ms: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const onClose = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      res.off("close", onClose);
      resolve(true);
    }, ms);
    res.once("close", onClose);
  });
}

/** Escapes s for HTML text and quoted attribute values. */
function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&#34;", "'": "&#39;" })[c] ?? c);
}

/** A small page: a title and trusted HTML. */
function page(title: string, html: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${esc(title)}</title>
</head>
<body>
<main>
<h1>${esc(title)}</h1>
${html}
</main>
</body>
</html>
`;
}

const html = "text/html; charset=utf-8";

/** The reason phrase of the statuses the step-up answers with. */
function statusTitle(status: number): string {
  return ({ 400: "Bad Request", 403: "Forbidden", 500: "Internal Server Error", 503: "Service Unavailable" } as Record<number, string>)[status] ?? "Error";
}

/** The default factor's form fields, for a factor that gives none. */
function defaultFields(): string {
  return `<label for="tollgate-code">Code</label>\n<input id="tollgate-code" name="code" inputmode="numeric" autocomplete="one-time-code" required autofocus>`;
}

/** The default code page: message (text) and form (trusted HTML). */
function stepUpDocument(message: string, form: string): string {
  return page("Confirm it is you", `<p id="tollgate-step-up-message">${esc(message)}</p>\n${form}`);
}

/** The default pages' delay answer. */
function delayPage(seconds: number): { status: number; headers: Record<string, string>; body: string } {
  return { status: 429, headers: { "content-type": html }, body: page("Too many attempts", `<p>Too many attempts, try again in ${seconds} ${seconds === 1 ? "second" : "seconds"}.</p>`) };
}

/** The default pages' captcha answer, for when no challenge can be shown: waiting does not lift it, so no Retry-After. */
function captchaPage(): { status: number; headers: Record<string, string>; body: string } {
  return {
    status: 429,
    headers: { "content-type": html, "cache-control": "no-store" },
    body: page("Too many attempts from here", "<p>Signing in needs a check this page cannot show. Please try again later.</p>"),
  };
}

/** A request the middleware cannot check: 400, a problem document for JSON, else a small page. */
function badRequest(req: IncomingMessage, res: ServerResponse): void {
  const json = isJSON(header(req, "content-type"));
  const body = json
    ? `{"type":"about:blank","title":"Bad Request","status":400,"detail":"The request could not be read."}\n`
    : page("Bad request", "<p>This request could not be read. Please go back and try again.</p>");
  writeAnswer(res, {
    proceed: false, holdMs: 0, status: 400, body,
    headers: { "content-type": json ? "application/problem+json" : html, "content-length": String(Buffer.byteLength(body)), "cache-control": "no-store" },
  });
}

/** A provider's widget: its script, the element it renders into, and the origins it loads from (as tollgate's challenge/page.go). */
const widgets: Readonly<Record<string, { script: string; cls: string; origins: string }>> = {
  turnstile: { script: "https://challenges.cloudflare.com/turnstile/v0/api.js", cls: "cf-turnstile", origins: "https://challenges.cloudflare.com" },
  hcaptcha: { script: "https://js.hcaptcha.com/1/api.js", cls: "h-captcha", origins: "https://hcaptcha.com https://*.hcaptcha.com" },
  recaptcha: {
    script: "https://www.google.com/recaptcha/api.js",
    cls: "g-recaptcha",
    origins: "https://www.google.com/recaptcha/ https://www.gstatic.com/recaptcha/ https://recaptcha.google.com/recaptcha/",
  },
};

/**
 * The challenge page: a form without an action, so that it posts back to
 * the URL the browser posted its login to, with the handle, the token and,
 * once the solver or the widget is done, the solution. It holds nothing of
 * the submission; 429, not cached, not framed, under a CSP of its own that
 * runs only its nonce-carrying script and style (and a provider's widget).
 * No form-action: browsers apply it to the redirects after the post, and
 * the login it resumes may redirect anywhere.
 */
function challengePage(ch: Challenge, handle: string, solver: string): Answer {
  const nonce = randomBytes(16).toString("base64");
  const pow = ch.kind === "pow";
  const w = widgets[ch.kind];
  const fields = pow
    ? `<input type="hidden" name="tollgate_nonce" value="">
<p id="tollgate-status">Your browser is working on a short puzzle; this takes a second or two and then continues on its own.</p>`
    : `<input type="hidden" name="tollgate_response" value="">
<p id="tollgate-status">Please complete the check below; you will then continue on your own.</p>
<div class="${esc(w?.cls ?? "")}" data-sitekey="${esc(ch.site_key)}" data-callback="tollgateProviderDone"></div>`;
  const script = pow
    ? solver.replace(/<\//g, "<\\/")
    : `window.tollgateProviderDone=function(r){var f=document.getElementById("tollgate-challenge");f.elements.tollgate_response.value=r;f.submit();};`;
  const body = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>One moment…</title>
<style nonce="${nonce}">body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#222}h1{font-size:1.3rem}#tollgate-status{color:#555}</style>
</head>
<body>
<main>
<h1>Checking that this request is not automated</h1>
<form id="tollgate-challenge" method="post" data-tollgate-challenge data-kind="${esc(ch.kind)}"${pow ? ` data-token="${esc(ch.token)}" data-difficulty="${ch.difficulty}"` : ""}>
<input type="hidden" name="tollgate_handle" value="${esc(handle)}">
<input type="hidden" name="tollgate_token" value="${esc(ch.token)}">
${fields}
</form>
<noscript><p>This check needs JavaScript. Please turn it on and reload the page.</p></noscript>
</main>
<script nonce="${nonce}">${script}</script>
${w !== undefined && !pow ? `<script nonce="${nonce}" src="${esc(w.script)}" async defer></script>\n` : ""}</body>
</html>
`;
  const extra = w !== undefined && !pow ? " " + w.origins : "";
  const frames = w !== undefined && !pow ? `; frame-src ${w.origins}; connect-src ${w.origins}` : "";
  return {
    proceed: false,
    holdMs: 0,
    status: 429,
    headers: {
      "content-type": html,
      "content-length": String(Buffer.byteLength(body, "utf8")),
      "content-security-policy": `default-src 'none'; script-src 'nonce-${nonce}'${extra}; style-src 'nonce-${nonce}'${extra}${frames}; img-src 'self'; base-uri 'none'; frame-ancestors 'none'`,
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
      "x-frame-options": "DENY",
    },
    body,
  };
}
