/**
 * The tollgate client, as the Go client's `api/client/client.go`: check,
 * report and send with a fail mode per call site, and the admin calls.
 *
 * @packageDocumentation
 */

import { Allowance, checkSubject, sendSubject, type Stats, type Subject } from "./allowance.js";
import { CanceledError, TimeoutError, TollgateError, UnavailableError, type Op } from "./errors.js";
import { fallback, failDelay, failOpen, reasonFallbackAllowance, type CallError, type FailMode, type Verdict } from "./failmode.js";
import { createHash } from "node:crypto";

import { heldResetFields, heldShapes, type HeldList, type HeldQuery, type HeldReset, type HeldResetRequest } from "./held.js";
import { mediaType, queryEscape, readUpTo, statusText } from "./http.js";
import {
  adminShapes,
  challengeResultShape,
  challengeShape,
  decodeAs,
  encodeRequest,
  problemShape,
  requestFields,
  verdictShape,
  type Challenge,
  type ChallengeKind,
  type ChallengeResult,
  type ChallengeSolution,
  type CheckRequest,
  type DeadLetter,
  type Entry,
  type EntryRequest,
  type Explanation,
  type RemoveRequest,
  type ReloadResult,
  type Removed,
  type ReplayRequest,
  type Replayed,
  type ReportRequest,
  type ResetRequest,
  type ResetResult,
  type SendRequest,
  type Shape,
  type WireVerdict,
  type ExplainRequest,
  stepUpFlow,
} from "./wire.js";

/** Each call's time limit unless `timeoutMs` says otherwise: 250 ms, as the Go client's DefaultTimeout. */
export const defaultTimeoutMs = 250;

/** The time limit of a {@link Client.breached} call unless `breachedTimeoutMs` says otherwise: 1 s. */
export const defaultBreachedTimeoutMs = 1000;

/** The User-Agent header unless `userAgent` says otherwise. */
export const defaultUserAgent = "tollgate-typescript-client/1";

/** The most read of an answer: 1 MiB. */
const maxResponseBytes = 1 << 20;

/** The most read of an error answer: 64 KiB. */
const maxProblemBytes = 64 << 10;

/** The options of a {@link Client}. */
export interface ClientOptions {
  /**
   * Where tollgate listens, such as "http://127.0.0.1:8080" or
   * "https://tollgate.internal/prefix": http or https, with a host and no
   * user info, query or fragment. Required.
   */
  baseURL: string;
  /**
   * A bearer token sent with every call, for a tollgate with auth
   * configured (scope verdicts; admin:read or admin:write for the admin
   * calls). Set token or tokenSource, not both. Default: none.
   */
  token?: string | undefined;
  /**
   * Asked for the bearer token of every call, with the call's signal, so it
   * runs within the call's timeout: hand out a cached token and refresh it
   * ahead of expiry. A rejection fails the call as unavailable; "" sends no
   * Authorization header.
   */
  tokenSource?: ((signal: AbortSignal) => Promise<string>) | undefined;
  /**
   * Bounds each call, token source included, in milliseconds: past it the
   * call fails with a {@link TimeoutError}. 0 or undefined is the default
   * (250); a negative value sets no limit of the client's own (the
   * caller's signal may still bound calls).
   */
  timeoutMs?: number | undefined;
  /**
   * Bounds each {@link Client.breached} call, in milliseconds: past it the
   * password is taken as not known to be breached. 0 or undefined is the
   * default (1000); a negative value sets no limit of the client's own.
   */
  breachedTimeoutMs?: number | undefined;
  /** The User-Agent header. Default: "tollgate-typescript-client/1". */
  userAgent?: string | undefined;
  /**
   * failOpen's allowance per account (a send's destination): this many
   * fallback proceeds at once, coming back evenly over failOpenWindowMs;
   * past them the call is answered as failDelay would, with
   * {@link reasonFallbackAllowance}. Counted whatever address a call comes
   * from; device tokens are not honoured (the client cannot verify them).
   * 0 or undefined is the default (5); negative turns the limit off.
   */
  failOpenPerAccount?: number | undefined;
  /**
   * The same allowance per client address (an IPv4 address, an IPv6 /64).
   * Users behind one NAT address share it. 0 or undefined is the default
   * (50); negative turns the limit off. With both limits off, failOpen
   * proceeds on every call.
   */
  failOpenPerAddress?: number | undefined;
  /** How long a spent allowance takes to come back whole, in ms. 0 or undefined is the default (30 minutes). */
  failOpenWindowMs?: number | undefined;
  /**
   * How many accounts (with destinations) and, separately, how many
   * addresses the allowance tracks, as 128-bit HMACs under a random key
   * made by the constructor, never as identifiers. A subject whose
   * allowance has refilled is dropped; when a table is full, a new subject
   * takes the place of the one closest to a full allowance. 0 or undefined
   * is the default (10,000).
   */
  failOpenSubjects?: number | undefined;
  /** The allowance's clock, in ms since the epoch. Default: Date.now. */
  now?: (() => number) | undefined;
  /**
   * The fetch that sends the calls. Default: the global fetch (Node >= 18).
   * Redirects are never followed (a 3xx is a refusal).
   */
  fetch?: typeof fetch | undefined;
}

/** Per-call options. */
export interface CallOptions {
  /**
   * Aborts the call. An abort whose reason is a timeout (as
   * `AbortSignal.timeout` gives) fails it as a {@link TimeoutError}; any
   * other as a {@link CanceledError}, which every fail mode answers closed.
   */
  signal?: AbortSignal | undefined;
}

/**
 * Calls one tollgate. Make one and share it: the FailOpen allowance lives
 * in it.
 *
 * check, report and send never reject because tollgate failed: the
 * verdict is always usable, and when tollgate gave none it is the call
 * site's {@link FailMode} answer, with `fallback` set and `error` saying
 * why. The admin calls reject with the error.
 */
export class Client {
  readonly #base: string;
  readonly #token: string;
  readonly #source: ((signal: AbortSignal) => Promise<string>) | undefined;
  readonly #timeoutMs: number;
  readonly #breachedTimeoutMs: number;
  readonly #agent: string;
  readonly #now: () => number;
  readonly #fetch: typeof fetch;
  readonly #allow: Allowance;

  /** Checks options and makes the client; throws on unusable options. */
  constructor(options: ClientOptions) {
    if (options === null || typeof options !== "object") throw new Error("tollgate: options are required");
    this.#base = baseURL(options.baseURL);
    if (options.token !== undefined && options.token !== "" && options.tokenSource !== undefined) {
      throw new Error("tollgate: set token or tokenSource, not both");
    }
    this.#token = options.token ?? "";
    this.#source = options.tokenSource;
    const t = options.timeoutMs ?? 0;
    if (typeof t !== "number" || Number.isNaN(t)) throw new Error("tollgate: timeoutMs must be a number");
    this.#timeoutMs = t === 0 ? defaultTimeoutMs : t < 0 ? 0 : t;
    const bt = options.breachedTimeoutMs ?? 0;
    if (typeof bt !== "number" || Number.isNaN(bt)) throw new Error("tollgate: breachedTimeoutMs must be a number");
    this.#breachedTimeoutMs = bt === 0 ? defaultBreachedTimeoutMs : bt < 0 ? 0 : bt;
    this.#agent = options.userAgent !== undefined && options.userAgent !== "" ? options.userAgent : defaultUserAgent;
    this.#now = options.now ?? Date.now;
    const f = options.fetch ?? globalThis.fetch;
    if (typeof f !== "function") throw new Error("tollgate: no fetch: use Node >= 18 or pass options.fetch");
    this.#fetch = f;
    // Node loads fetch's HTTP stack (undici) on first use, which can take
    // tens of milliseconds, or more on a loaded machine: load it now, so
    // that it does not eat into the first call's timeout.
    if (options.fetch === undefined && typeof Headers === "function") new Headers();
    this.#allow = new Allowance({
      perAccount: options.failOpenPerAccount,
      perAddress: options.failOpenPerAddress,
      windowMs: options.failOpenWindowMs,
      subjects: options.failOpenSubjects,
    });
  }

  /**
   * Asks whether an attempt may go ahead now: call it before looking at
   * the credential, and keep the attempt token of a proceed for the
   * report. Never rejects because tollgate failed (see {@link FailMode}).
   * On a {@link TollgateError} of type invalid-field for the field
   * "account", do not check the credential: answer the end user as for a
   * wrong password.
   *
   * @param req - the check
   * @param mode - the call site's fail mode; default failDelay
   */
  async check(req: CheckRequest, mode: FailMode = failDelay, options?: CallOptions): Promise<Verdict> {
    req = req ?? ({} as CheckRequest); // from untyped code: answered, never a rejection
    return this.#verdictCall("check", "/v1/check", encodeRequest(req, requestFields.check), mode, checkSubject(req), options);
  }

  /**
   * Tells tollgate how an attempt ended, with the attempt token the check
   * returned; report failures of unknown accounts exactly as known ones.
   * The verdict is the one for the next attempt of the same account from
   * the same client; a success carries a fresh device token. A report may
   * be sent again after an error: an attempt settles once. failOpen's
   * allowance neither holds nor counts reports: its fallback report always
   * proceeds; failCaptcha's asks for a CAPTCHA.
   */
  async report(req: ReportRequest, mode: FailMode = failDelay, options?: CallOptions): Promise<Verdict> {
    req = req ?? ({} as ReportRequest); // from untyped code: answered, never a rejection
    return this.#verdictCall("report", "/v1/report", encodeRequest(req, requestFields.report), mode, undefined, options);
  }

  /**
   * Reports how the second factor that a login's step_up verdict asked for
   * ended, on the step_up flow: `step_up_passed` (answered proceed with the
   * device token for the login flow named in the ticket: set the device
   * cookie with it and sign the end user in now) or `step_up_failed`
   * (counted on the step_up flow's own counters, never the login's;
   * answered with the verdict for the next code). Check
   * `{flow: "step_up", account, ip}` before verifying each code, and answer
   * a delay as any other. A ticket tollgate refuses (expired, forged, for
   * another account) comes back as the fail mode's closed answer, its
   * error a {@link TollgateError} of type invalid-field for "attempt":
   * the end user signs in again.
   */
  async reportStepUp(req: StepUpReport, mode: FailMode = failDelay, options?: CallOptions): Promise<Verdict> {
    req = req ?? ({} as StepUpReport);
    return this.report({
      flow: req.flow !== undefined && req.flow !== "" ? req.flow : stepUpFlow,
      account: req.account,
      ip: req.ip,
      outcome: req.passed === true ? "step_up_passed" : "step_up_failed",
      // The try's check's attempt token after the ticket: tollgate settles
      // the failure that check charged (a wrong code counts once).
      attempt: req.attempt !== undefined && req.attempt !== "" ? `${req.ticket},${req.attempt}` : req.ticket,
      device_token: req.device_token,
      ref: req.ref,
    }, mode, options);
  }

  /**
   * Tells tollgate that req.account's password was changed or reset, once
   * the change has taken effect (after whatever your change asks for: the
   * old password, a link, a second factor): a report of outcome
   * `password_changed` with no attempt token. tollgate clears the
   * account's counters in the flow and in every flow sharing its device
   * trust (never an address's), emits account.reset, and with the flow's
   * `revoke_devices_on_password_change` makes every device token issued
   * before now count as none. Report only a change you made: tollgate
   * trusts it as it trusts a success.
   *
   * Rejects with the client's usual {@link CallError} when tollgate does
   * not answer ({@link UnavailableError}, {@link TimeoutError}) or refuses
   * the report ({@link TollgateError}: a flow that counts no account, or
   * a step-up flow, is invalid-field on "outcome"). That error is for
   * your log, never the end user: the change has been made, so log it and
   * go on (the owner's counters then clear as they decay). There is no
   * fail mode: nothing is let in or kept out by the answer.
   */
  async reportPasswordChanged(req: PasswordChange, options?: CallOptions): Promise<void> {
    req = req ?? ({} as PasswordChange); // from untyped code: tollgate refuses it, as any report
    const body = encodeRequest({
      flow: req.flow !== undefined && req.flow !== "" ? req.flow : "login",
      account: req.account,
      ip: req.ip,
      outcome: "password_changed",
      ref: req.ref,
    }, requestFields.report);
    const v = (await this.#call("report", "/v1/report", body, verdictShape, options)) as WireVerdict;
    if (!["proceed", "delay", "captcha", "deny", "step_up"].includes(v.action)) {
      throw new UnavailableError("report", "the answer is not a verdict (unknown action)");
    }
  }

  /**
   * Whether password is in the breached-password corpus tollgate serves
   * (GET /v1/breached/{prefix}), asked by k-anonymity: only the first five
   * hex digits of the SHA-1 of its UTF-8 bytes leave this process; the
   * range of suffixes that comes back is matched here. Best-effort: it
   * never rejects, and an error, a timeout (breachedTimeoutMs, 1 s by
   * default), any answer but 200 (no corpus configured: 404) or a body it
   * cannot read answers false, "not known to be breached": never fail a
   * login for it. Ask it after the password was checked, for a success and
   * a failure alike, and send the answer as the report's `breached`.
   */
  async breached(password: string, options?: CallOptions): Promise<boolean> {
    if (typeof password !== "string") return false;
    const { prefix, suffix } = passwordRange(password);
    try {
      const body = (await this.#call("breached", "/v1/breached/" + prefix, undefined, "range", options, this.#breachedTimeoutMs)) as string;
      return rangeHas(body, suffix);
    } catch {
      return false;
    }
  }

  /**
   * Asks whether a one-time code may be sent to req's destination now:
   * send it on proceed only, and show the end user the same message
   * whatever the verdict ({@link Responder.accept}). failOpen sends codes
   * while tollgate is down within the allowance of the destination (by its
   * digits, or an e-mail folded) and of the address; failCaptcha asks for a
   * CAPTCHA first.
   */
  async send(req: SendRequest, mode: FailMode = failDelay, options?: CallOptions): Promise<Verdict> {
    req = req ?? ({} as SendRequest); // from untyped code: answered, never a rejection
    return this.#verdictCall("send", "/v1/otp/send", encodeRequest(req, requestFields.send), mode, sendSubject(req), options);
  }

  /**
   * Asks tollgate for a challenge of kind ("pow", its proof of work, when
   * undefined), for a page that answers a captcha verdict. A server that
   * issues no challenges rejects with a {@link TollgateError} of status
   * 404; a provider it is not configured with, with one of type
   * invalid-field for "kind". Rejects on error.
   */
  async issueChallenge(kind?: ChallengeKind, options?: CallOptions): Promise<Challenge> {
    const body = encodeRequest({ kind: kind === "pow" ? undefined : kind }, requestFields.challenge);
    return (await this.#call("challenge", "/v1/challenge", body, challengeShape, options)) as Challenge;
  }

  /**
   * Asks tollgate whether s solves its challenge, and spends it: `solved`
   * is true at most once for a token. Send captcha_solved with the next
   * check only when it is. Rejects on error.
   */
  async verifyChallenge(s: ChallengeSolution, options?: CallOptions): Promise<ChallengeResult> {
    const body = encodeRequest(s ?? {}, requestFields.challengeVerify);
    return (await this.#call("challenge-verify", "/v1/challenge/verify", body, challengeResultShape, options)) as ChallengeResult;
  }

  /**
   * tollgate's proof-of-work solver script (GET /v1/challenge/solver.js):
   * self-contained JavaScript for a page to run under its own CSP. The
   * same for every call of one tollgate version: fetch it once. Rejects on
   * error.
   */
  async challengeSolver(options?: CallOptions): Promise<string> {
    return (await this.#call("challenge-solver", "/v1/challenge/solver.js", undefined, "text", options)) as string;
  }

  /** Why a subject is delayed: every rule of the flow that counts it, and the verdict a check would get now. Nothing is counted. Needs admin:read. Rejects on error. */
  async explain(req: ExplainRequest, options?: CallOptions): Promise<Explanation> {
    return (await this.#call("explain", "/v1/admin/explain", encodeRequest(req, requestFields.explain), adminShapes.explanation, options)) as Explanation;
  }

  /** Clears one subject's state in a flow and answers how many keys went; tollgate logs req.reason. Needs admin:write. Rejects on error. */
  async reset(req: ResetRequest, options?: CallOptions): Promise<ResetResult> {
    return (await this.#call("reset", "/v1/admin/reset", encodeRequest(req, requestFields.reset), adminShapes.reset, options)) as ResetResult;
  }

  /** Adds a temporary allow entry on an IP range, destination prefix or country. Needs admin:write. Rejects on error. */
  async allow(req: EntryRequest, options?: CallOptions): Promise<Entry> {
    return (await this.#call("allow", "/v1/admin/allow", encodeRequest(req, requestFields.entry), adminShapes.entry, options)) as Entry;
  }

  /** Adds a temporary block (action "block" or empty) or captcha entry. Needs admin:write. Rejects on error. */
  async deny(req: EntryRequest, options?: CallOptions): Promise<Entry> {
    return (await this.#call("deny", "/v1/admin/deny", encodeRequest(req, requestFields.entry), adminShapes.entry, options)) as Entry;
  }

  /** The tenant's unexpired entries, oldest first; with flow, those that apply to it. Needs admin:read. Rejects on error. */
  async entries(flow?: string, options?: CallOptions): Promise<Entry[]> {
    let path = "/v1/admin/entries";
    if (flow !== undefined && flow !== "") path += "?flow=" + queryEscape(flow);
    const l = (await this.#call("entries", path, undefined, adminShapes.entries, options)) as { entries: Entry[] };
    return l.entries;
  }

  /**
   * A page of the subjects held back now (accounts in backoff, addresses over
   * a limit), with their identifiers, from tollgate's held-subjects index;
   * a TollgateError of status 404 while the index is off. Its counts are
   * the tenant's held subjects by "flow:kind", every page's: a total needs
   * no paging. Needs admin:read. Rejects on error.
   */
  async held(q: HeldQuery = {}, options?: CallOptions): Promise<HeldList> {
    const params: string[] = [];
    for (const k of ["flow", "kind", "cursor"] as const) {
      const v = q[k];
      if (v !== undefined && v !== "") params.push(k + "=" + queryEscape(v));
    }
    if (q.limit !== undefined && q.limit !== 0) params.push("limit=" + String(q.limit));
    const path = "/v1/admin/held" + (params.length > 0 ? "?" + params.join("&") : "");
    return (await this.#call("held", path, undefined, heldShapes.held, options)) as HeldList;
  }

  /** Frees the held subjects of a flow in one call: those named in req.subjects, or all the index lists (of req.kind); req.dry_run only counts them. tollgate logs req.reason. Needs admin:write. Rejects on error. */
  async resetHeld(req: HeldResetRequest, options?: CallOptions): Promise<HeldReset> {
    return (await this.#call("reset-held", "/v1/admin/reset-held", encodeRequest(req, heldResetFields), heldShapes.heldReset, options)) as HeldReset;
  }

  /** Deletes an entry by id; `removed` is false when there was none. Needs admin:write. Rejects on error. */
  async remove(req: RemoveRequest, options?: CallOptions): Promise<Removed> {
    return (await this.#call("remove", "/v1/admin/remove", encodeRequest(req, requestFields.remove), adminShapes.removed, options)) as Removed;
  }

  /**
   * Asks tollgate to re-read its configuration file and swap its policy at
   * once, as SIGHUP does: answers the flows in force and the settings the
   * file changed that only a restart applies. A file that does not
   * validate rejects with a {@link TollgateError} of status 409 and type
   * `config-invalid` whose `detail` names the line; the running policy
   * stays. Needs admin:write of the default tenant. Rejects on error.
   */
  async reload(options?: CallOptions): Promise<ReloadResult> {
    return (await this.#call("reload", "/v1/admin/reload", "{}", adminShapes.reload, options)) as ReloadResult;
  }

  /**
   * The tenant's webhook dead letters, newest first: the deliveries
   * tollgate gave up on, each naming its event and holding none of its
   * data. limit is how many at most, 1 to 1000; undefined asks for the
   * server's default (100), and any other value rejects with a
   * {@link TollgateError} of status 400, type `invalid-field` and field
   * "limit". A server that sends no webhooks (no `webhooks` section in its
   * configuration) rejects with a {@link TollgateError} of status 404 and
   * type `not-found`. Needs admin:read. Rejects on error.
   */
  async deadLetters(limit?: number, options?: CallOptions): Promise<DeadLetter[]> {
    let path = "/v1/admin/webhooks/dead-letters";
    if (limit !== undefined && limit !== null) path += "?limit=" + queryEscape(String(limit));
    const l = (await this.#call("dead-letters", path, undefined, adminShapes.deadLetters, options)) as { dead_letters: DeadLetter[] };
    return l.dead_letters;
  }

  /**
   * Puts the tenant's dead letter req.id back for delivery to its endpoint,
   * with the same webhook-id (a receiver that handled it already drops it)
   * and a new age limit; tollgate logs req.reason. `replayed` is false when
   * the tenant has no dead letter by that id. As {@link Client.deadLetters},
   * a server that sends no webhooks rejects with a 404 `not-found`. Needs
   * admin:write. Rejects on error.
   */
  async replayWebhook(req: ReplayRequest, options?: CallOptions): Promise<Replayed> {
    return (await this.#call("replay", "/v1/admin/webhooks/replay", encodeRequest(req, requestFields.replay), adminShapes.replayed, options)) as Replayed;
  }

  /** The counts of the FailOpen allowance since the client was made. */
  stats(): Stats {
    return this.#allow.stats();
  }

  /** A verdict call, and its fail mode's answer when it gives no verdict. */
  async #verdictCall(op: Op, path: string, body: string, mode: FailMode, s: Subject | undefined, options: CallOptions | undefined): Promise<Verdict> {
    try {
      const v = (await this.#call(op, path, body, verdictShape, options)) as WireVerdict;
      switch (v.action) {
        case "proceed":
        case "delay":
        case "captcha":
        case "deny":
          return { ...v, fallback: false };
        case "step_up":
          // Only a success report is answered step_up: from a check or a
          // send it would be a proceed in disguise, so it fails closed.
          if (op === "report") return { ...v, fallback: false };
      }
      throw new UnavailableError(op, "the answer is not a verdict (unknown action)");
    } catch (e) {
      const err = asCallError(op, e);
      return s === undefined ? fallback(mode, false, err) : this.#fallbackFor(mode, s, err);
    }
  }

  /** mode's answer to a call that failed with err, with failOpen's proceeds held to the allowance of s. */
  #fallbackFor(mode: FailMode, s: Subject, err: CallError): Verdict {
    const v = fallback(mode, s.captchaOK, err);
    if (mode !== failOpen || v.action !== "proceed") return v;
    if (this.#allow.take(this.#now(), s)) return v;
    const d = fallback(failDelay, false, err);
    d.reasons.push(reasonFallbackAllowance);
    return d;
  }

  /**
   * Posts body (GET without one) to path and decodes a 200 or 201 answer
   * as shape; throws a {@link CallError} otherwise. No error holds a
   * request field's value.
   */
  async #call(
    op: Op, path: string, body: string | undefined, shape: Shape | "text" | "range", options: CallOptions | undefined,
    timeoutMs: number = this.#timeoutMs,
  ): Promise<unknown> {
    const ac = new AbortController();
    let timedOut = false;
    const timer = timeoutMs > 0 ? setTimeout(() => ((timedOut = true), ac.abort()), timeoutMs) : undefined;
    const parent = options?.signal;
    const onAbort = (): void => ac.abort();
    if (parent !== undefined) {
      if (parent.aborted) ac.abort();
      else parent.addEventListener("abort", onAbort, { once: true });
    }
    // transport classifies an error met before an answer: a timeout, the caller's cancellation, or unavailability.
    const transport = (msg: string, err: unknown): CallError => {
      if (timedOut || isTimeoutReason(parent?.reason) || isTimeoutCause(err)) return new TimeoutError(op, err);
      if (parent?.aborted === true) return new CanceledError(op, parent.reason);
      return new UnavailableError(op, msg, err);
    };
    try {
      let token = this.#token;
      if (this.#source !== undefined) {
        try {
          token = await untilAborted(this.#source(ac.signal), ac.signal);
        } catch (e) {
          throw transport("no bearer token from the token source", e);
        }
        if (typeof token !== "string") throw transport("no bearer token from the token source", undefined);
      }
      const headers: Record<string, string> = {
        accept: shape === "text" ? "text/javascript" : shape === "range" ? "text/plain" : "application/json, application/problem+json",
        "user-agent": this.#agent,
      };
      if (body !== undefined) headers["content-type"] = "application/json";
      if (token !== "") headers["authorization"] = "Bearer " + token;
      let res: Response;
      try {
        const init: RequestInit = { method: body === undefined ? "GET" : "POST", headers, redirect: "manual", signal: ac.signal };
        if (body !== undefined) init.body = body;
        res = await this.#fetch(this.#base + path, init);
      } catch (e) {
        throw transport("tollgate does not answer", e);
      }
      if (res.status !== 200 && res.status !== 201) throw await problemError(op, res);
      let b: Uint8Array;
      try {
        b = await readUpTo(res.body, maxResponseBytes + 1);
      } catch (e) {
        throw transport("reading the answer", e);
      }
      if (b.byteLength > maxResponseBytes) throw new UnavailableError(op, "the answer is too large");
      if (shape === "range") return new TextDecoder("utf-8").decode(b);
      if (shape === "text") {
        if (b.byteLength === 0) throw new UnavailableError(op, "the answer is empty");
        return new TextDecoder("utf-8").decode(b);
      }
      // The parser's message is not repeated: it may quote the body.
      let parsed: unknown;
      try {
        parsed = JSON.parse(new TextDecoder("utf-8", { ignoreBOM: true }).decode(b));
      } catch {
        throw new UnavailableError(op, "the answer is not the JSON this call expects");
      }
      const out = decodeAs(shape, parsed);
      if (out === undefined) throw new UnavailableError(op, "the answer is not the JSON this call expects");
      return out;
    } catch (e) {
      throw asCallError(op, e);
    } finally {
      if (timer !== undefined) clearTimeout(timer);
      parent?.removeEventListener("abort", onAbort);
    }
  }
}

/** The second-factor outcome of a login that was answered step_up, for {@link Client.reportStepUp}. */
export interface StepUpReport {
  /** The login's account, as checked. */
  account: string;
  /** The end user's address. */
  ip?: string | undefined;
  /** The step-up ticket: the step_up verdict's `attempt`, unchanged. Required. */
  ticket: string;
  /**
   * The `attempt` of this try's own check on the step_up flow, if its proceed
   * carried one: the report then settles the failure that check charged, so a
   * wrong code counts once and a pass not at all. Without it the report is
   * counted on its own, on top of the check's charge.
   */
  attempt?: string | undefined;
  /** true when the second factor passed. */
  passed: boolean;
  /** The device token the login's check carried, if any. */
  device_token?: string | undefined;
  /** As in a report: your own reference for the end user, passed only to the webhooks. */
  ref?: string | undefined;
  /** The step-up flow. Default "step_up". */
  flow?: string | undefined;
}

/** An account whose password the caller just changed or reset, for {@link Client.reportPasswordChanged}. */
export interface PasswordChange {
  /** The account as the login checks it (as the end user types it: tollgate folds it as it folds a check's). Required. */
  account: string;
  /** The address the change was made from; required by every flow whose rules count addresses (the built-in login does). */
  ip?: string | undefined;
  /** The login flow whose password changed. Default "login". */
  flow?: string | undefined;
  /** As in a report: your own reference for the end user, passed only to the account.reset webhook. */
  ref?: string | undefined;
}

/**
 * The range query of password: the first five hex digits (upper case) of
 * the SHA-1 of its UTF-8 bytes, as typed (no folding, no trimming), and
 * the other 35, which never leave the process.
 */
export function passwordRange(password: string): { prefix: string; suffix: string } {
  const h = createHash("sha1").update(password, "utf8").digest("hex").toUpperCase();
  return { prefix: h.slice(0, 5), suffix: h.slice(5) };
}

/**
 * Whether a range body (lines `SUFFIX:COUNT`, HIBP's format) lists suffix
 * with a count above 0: lines split on LF, CR and spaces trimmed, suffixes
 * compared case-insensitively, the count a decimal integer (leading zeros
 * allowed). A count of 0 is padding, never a match; a malformed line is
 * skipped.
 */
export function rangeHas(body: string, suffix: string): boolean {
  if (typeof body !== "string" || typeof suffix !== "string" || suffix === "") return false;
  const want = suffix.toUpperCase();
  for (const raw of body.split("\n")) {
    const line = raw.replace(/^[\r ]+|[\r ]+$/g, "");
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    const count = line.slice(colon + 1);
    if (!/^[0-9]+$/.test(count) || !/[1-9]/.test(count)) continue;
    if (line.slice(0, colon).toUpperCase() === want) return true;
  }
  return false;
}

/** e as a CallError: the errors the client makes pass as they are; anything else (a bug) is an unavailability. */
function asCallError(op: Op, e: unknown): CallError {
  if (e instanceof TollgateError || e instanceof UnavailableError || e instanceof CanceledError) return e;
  return new UnavailableError(op, "unexpected error", e);
}

/** Reads an answer other than 200 or 201 into a {@link TollgateError}; a problem body that cannot be read or parsed is ignored. */
async function problemError(op: Op, res: Response): Promise<TollgateError> {
  const f = {
    op,
    status: res.status,
    type: "",
    title: "",
    detail: "",
    field: "",
    requestId: res.headers.get("x-request-id") ?? "",
    retryAfterMs: retryAfterMs(res.headers.get("retry-after") ?? ""),
  };
  if (mediaType(res.headers.get("content-type") ?? "") === "application/problem+json") {
    let b: Uint8Array = new Uint8Array(0);
    try {
      b = await readUpTo(res.body, maxProblemBytes);
    } catch {
      // Go ignores the read error and parses what it has; so does this.
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(new TextDecoder("utf-8", { ignoreBOM: true }).decode(b));
    } catch {
      parsed = undefined;
    }
    const p = parsed === undefined ? undefined : (decodeAs(problemShape, parsed) as Record<keyof typeof problemShape, string> | undefined);
    if (p !== undefined) {
      f.type = p.type;
      f.title = p.title;
      f.detail = p.detail;
      f.field = p.field;
      if (p.request_id !== "") f.requestId = p.request_id;
    }
  } else {
    res.body?.cancel().catch(() => undefined);
  }
  if (f.title === "") f.title = statusText(res.status);
  return new TollgateError(f);
}

/** A Retry-After value in seconds (the form tollgate sends), in ms; anything else is 0. */
export function retryAfterMs(v: string): number {
  if (v === "" || v.length > 6 || !/^[0-9]+$/.test(v)) return 0;
  return Number(v) * 1000;
}

/** Checks a base URL as the Go client does and returns it without a trailing slash. */
function baseURL(raw: unknown): string {
  if (typeof raw !== "string" || raw === "") throw new Error("tollgate: a baseURL is required");
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new Error("tollgate: baseURL is not a URL");
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error("tollgate: baseURL must be an http or https URL");
  if (u.host === "") throw new Error("tollgate: baseURL has no host");
  const authority = raw.replace(/^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//, "").split(/[/?#]/, 1)[0] ?? "";
  if (authority.includes("@") || u.username !== "" || u.password !== "") {
    throw new Error("tollgate: baseURL must not hold user info; use token");
  }
  if (raw.includes("?") || raw.includes("#")) throw new Error("tollgate: baseURL must not have a query or fragment");
  return (u.origin + u.pathname).replace(/\/+$/, "");
}

/** Whether an abort reason is a timeout (AbortSignal.timeout's DOMException). */
function isTimeoutReason(reason: unknown): boolean {
  return typeof reason === "object" && reason !== null && (reason as { name?: unknown }).name === "TimeoutError";
}

/** Whether a transport error is itself a timeout (Go's net.Error with Timeout()): undici's connect, headers or body timeouts. */
function isTimeoutCause(err: unknown): boolean {
  for (let e = err, i = 0; e !== null && typeof e === "object" && i < 5; e = (e as { cause?: unknown }).cause, i++) {
    const code = (e as { code?: unknown }).code;
    if (code === "UND_ERR_CONNECT_TIMEOUT" || code === "UND_ERR_HEADERS_TIMEOUT" || code === "UND_ERR_BODY_TIMEOUT" || code === "ETIMEDOUT") return true;
    if ((e as { name?: unknown }).name === "TimeoutError") return true;
  }
  return false;
}

/** p, or a rejection as soon as signal aborts (a token source that ignores its signal cannot outlast the call). */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(
      (v) => (signal.removeEventListener("abort", onAbort), resolve(v)),
      (e: unknown) => (signal.removeEventListener("abort", onAbort), reject(e)),
    );
  });
}
