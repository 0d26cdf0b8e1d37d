/**
 * The end user's answer to a verdict, as the Go client's
 * `api/client/respond.go`: built from the action, delay_ms and
 * retry_after alone, so two end users with the same verdict get the same
 * bytes and an answer never tells an unknown account from a wrong password.
 *
 * @packageDocumentation
 */

import type { ServerResponse } from "node:http";

import { statusText } from "./http.js";

/** A page a hook returns: the status (a default per hook), header fields and body. */
export interface Page {
  /** The status code; default 429 for captcha and delay, 202 for accepted. */
  status?: number | undefined;
  /** Header fields; names are taken case-insensitively. Without content-type a non-empty body is text/plain. */
  headers?: Record<string, string> | undefined;
  /** The body. */
  body: string;
}

/** The options of a {@link Responder}. Nothing in them may depend on the end user or on why a verdict was given. */
export interface ResponderOptions {
  /**
   * The quota policy named in the RateLimit field of a delay: use the
   * flow's name. 1 to 64 printable ASCII characters. Default "login".
   */
  policy?: string | undefined;
  /**
   * The type URI of the problem documents, an absolute URI. Default
   * "about:blank", which RFC 9457 pairs with the status phrase as title:
   * set both or neither.
   */
  problemType?: string | undefined;
  /**
   * The title of the problem documents, the same for every answer. Default
   * the answer's status phrase, as about:blank asks: "Too Many Requests",
   * or "Forbidden" for a step_up's 403.
   */
  title?: string | undefined;
  /**
   * The answer to a captcha verdict: your page that shows a CAPTCHA and,
   * once your provider confirms it, lets the end user try again (the next
   * check says captcha_solved). It gets nothing of the verdict or the
   * request; it must return the same for every end user. Default: a 429
   * problem document asking for a CAPTCHA, without Retry-After.
   */
  captcha?: (() => Page) | undefined;
  /**
   * A send flow's answer once a code is on its way ("if this number can
   * receive codes, one is on its way"), with a 2xx status (default 202).
   * {@link Responder.respond} serves it for deny, and {@link Responder.accept}
   * after sending a code, so a refused send and a sent one look the same.
   * Default: 202 with an empty body and Cache-Control: no-store.
   */
  accepted?: (() => Page) | undefined;
  /**
   * The answer to a delay verdict: your page saying how long to wait. It
   * gets the wait in whole seconds (at least 1), and its answer carries
   * Retry-After, RateLimit and Cache-Control: no-store (its own headers
   * win). Default status 429. Default: an RFC 9457 problem document whose
   * detail says how many seconds to wait.
   */
  delay?: ((seconds: number) => Page) | undefined;
  /**
   * The answer to a step_up verdict (a success report's: the password was
   * right, a second factor must pass before the login is one): your page
   * that asks for it. Default status 403. Default: a 403 problem document
   * saying a second factor is needed. The Express middleware serves its
   * own code page instead (its stepUp option).
   */
  stepUp?: (() => Page) | undefined;
}

/**
 * What to answer the end user: either go ahead (`proceed`, after
 * `holdMs`), or write this status, these headers and this body (with
 * {@link writeAnswer}) and nothing more.
 */
export interface Answer {
  /** true: check the credential (send the code) after holdMs; nothing is to be written. */
  proceed: boolean;
  /** With proceed, how long to hold the call first (a queued proceed's delay_ms); else 0. */
  holdMs: number;
  /** The status code to write; 0 with proceed. */
  status: number;
  /** The header fields to write, names in lower case; {} with proceed. */
  headers: Record<string, string>;
  /** The body to write; "" with proceed. */
  body: string;
  /**
   * true for a step_up verdict: the password was right but this is not a
   * login yet; no session until the second factor passes. Absent otherwise.
   */
  stepUp?: boolean | undefined;
}

/** The parts of a verdict an answer is built from; anything else in it is never read. */
export interface VerdictLike {
  /** The action; anything but proceed, captcha and deny is answered as a delay. */
  action?: string | undefined;
  /** The delay in ms (with proceed, the hold). */
  delay_ms?: number | undefined;
  /** The delay in whole seconds. */
  retry_after?: number | undefined;
}

const defaultPolicy = "login";
const defaultProblemType = "about:blank";

/** The cap of Retry-After and the RateLimit field's t: 2^31 seconds (RFC 9111 §1.2.2). */
const maxDelaySeconds = 2 ** 31;

/** The longest hold, in ms: Go's math.MaxInt64 nanoseconds. */
const maxHoldMs = Math.floor(9223372036854775807 / 1e6);

/**
 * Turns verdicts into the HTTP answers end users get. It sees only a
 * verdict's action, delay_ms and retry_after, never its reasons, tokens or
 * the account.
 *
 * - proceed: `proceed: true` and nothing to write, with holdMs for a queued
 *   call (delay_ms > 0).
 * - delay: 429 with Retry-After in whole seconds (at least 1, the larger
 *   of retry_after and delay_ms rounded up, at most 2^31), a RateLimit
 *   field `"<policy>";r=0;t=<seconds>` (draft-ietf-httpapi-ratelimit-headers),
 *   Cache-Control: no-store and an application/problem+json body whose
 *   detail says only how many seconds to wait; or the delay hook's page.
 * - captcha: the captcha hook's page, or a 429 problem document.
 * - deny: {@link Responder.accept}, the answer a sent code gets.
 * - step_up (a success report's): never a proceed, for it is not a login
 *   yet: the stepUp hook's page, or a 403 problem document saying a second
 *   factor is needed; `stepUp` is set on the answer.
 * - anything else (an unknown or missing action, no verdict at all): a
 *   delay of retry_after (at least a second), never a proceed.
 */
export class Responder {
  readonly #policy: string;
  readonly #problemType: string;
  readonly #title: string | undefined;
  readonly #captcha: (() => Page) | undefined;
  readonly #accepted: (() => Page) | undefined;
  readonly #delay: ((seconds: number) => Page) | undefined;
  readonly #stepUp: (() => Page) | undefined;

  /** Checks options; throws naming the option that cannot be sent as configured. */
  constructor(options: ResponderOptions = {}) {
    const policy = options.policy ?? "";
    if (policy !== "" && (policy.length > 64 || !printableASCII(policy))) {
      throw new Error("tollgate: responder: policy must be 1 to 64 printable ASCII characters");
    }
    this.#policy = sfString(policy === "" ? defaultPolicy : policy);
    const pt = options.problemType ?? "";
    if (pt !== "" && (!printableASCII(pt) || /[ "<>\\^`{|}]/.test(pt) || !absoluteURI(pt))) {
      throw new Error("tollgate: responder: problemType must be an absolute URI");
    }
    this.#problemType = pt === "" ? defaultProblemType : pt;
    this.#title = options.title !== undefined && options.title !== "" ? options.title : undefined;
    for (const hook of ["captcha", "accepted", "delay", "stepUp"] as const) {
      if (options[hook] !== undefined && typeof options[hook] !== "function") {
        throw new Error(`tollgate: responder: ${hook} must be a function`);
      }
    }
    this.#captcha = options.captcha;
    this.#accepted = options.accepted;
    this.#delay = options.delay;
    this.#stepUp = options.stepUp;
  }

  /** The answer to verdict v (see {@link Responder}); never proceed unless v's action is exactly "proceed". */
  respond(v: VerdictLike | null | undefined): Answer {
    const action = v?.action;
    if (action === "proceed") {
      return { proceed: true, holdMs: holdOf(v?.delay_ms), status: 0, headers: {}, body: "" };
    }
    if (action === "captcha") {
      if (this.#captcha !== undefined) return page(this.#captcha(), 429, {});
      return this.#problem(429, "Complete a CAPTCHA to continue.", {});
    }
    if (action === "deny") return this.accept();
    if (action === "step_up") {
      const a = this.#stepUp !== undefined
        ? page(this.#stepUp(), 403, { "cache-control": "no-store" })
        : this.#problem(403, "Confirm it is you with a second factor to finish signing in.", {});
      return { ...a, stepUp: true };
    }
    // delay, and any action this client does not know: fail closed.
    const wait = retryAfterOf(v);
    const secs = String(wait);
    const limit = { "retry-after": secs, ratelimit: `${this.#policy};r=0;t=${secs}` };
    if (this.#delay !== undefined) {
      return page(this.#delay(Math.min(wait, 2 ** 31 - 1)), 429, { ...limit, "cache-control": "no-store" });
    }
    return this.#problem(429, `Try again in ${secs} ${secs === "1" ? "second" : "seconds"}.`, limit);
  }

  /**
   * The answer of a send flow once a code is on its way: the accepted
   * hook's page, or 202 with an empty body and Cache-Control: no-store.
   * respond gives it for deny, so both answers are the same bytes.
   */
  accept(): Answer {
    if (this.#accepted !== undefined) return page(this.#accepted(), 202, {});
    return { proceed: false, holdMs: 0, status: 202, headers: { "cache-control": "no-store", "content-length": "0" }, body: "" };
  }

  /**
   * A problem document with status and detail; extra headers come after
   * the content headers. Without a configured title the title is status's
   * phrase: RFC 9457 §4.2.1 has about:blank's title be the status phrase,
   * so a step_up's 403 must not say "Too Many Requests".
   */
  #problem(status: number, detail: string, extra: Record<string, string>): Answer {
    const title = this.#title ?? statusText(status);
    const body =
      `{"type":${goJSONString(this.#problemType)},"title":${goJSONString(title)},` +
      `"status":${status},"detail":${goJSONString(detail)}}\n`;
    return {
      proceed: false,
      holdMs: 0,
      status,
      headers: {
        "content-type": "application/problem+json",
        "content-length": String(Buffer.byteLength(body, "utf8")),
        "cache-control": "no-store",
        ...extra,
      },
      body,
    };
  }
}

/**
 * Writes a closed answer to a node:http ServerResponse (Express's res is
 * one): the status, the headers and the body, and ends it. Throws for a
 * proceed answer, which has nothing to write: the caller goes ahead
 * instead.
 */
export function writeAnswer(res: ServerResponse, answer: Answer): void {
  if (answer.proceed) throw new Error("tollgate: writeAnswer: a proceed answer has nothing to write; go ahead instead");
  for (const [name, value] of Object.entries(answer.headers)) res.setHeader(name, value);
  res.statusCode = answer.status;
  res.end(answer.body);
}

/** The answer of a hook's page p, with default status def and base headers that p's own override. */
function page(p: Page, def: number, base: Record<string, string>): Answer {
  if (p === null || typeof p !== "object" || typeof p.body !== "string") {
    throw new Error("tollgate: responder: a hook must return a page with a string body");
  }
  const status = p.status ?? def;
  if (!Number.isInteger(status) || status < 200 || status > 599) {
    throw new Error("tollgate: responder: a hook's status must be from 200 to 599");
  }
  const headers: Record<string, string> = { ...base };
  for (const [name, value] of Object.entries(p.headers ?? {})) {
    if (!/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(name) || typeof value !== "string" || /[\r\n\0]/.test(value)) {
      throw new Error("tollgate: responder: a hook's header field is malformed");
    }
    headers[name.toLowerCase()] = value;
  }
  if (p.body !== "" && headers["content-type"] === undefined) headers["content-type"] = "text/plain; charset=utf-8";
  if (headers["content-length"] === undefined) headers["content-length"] = String(Buffer.byteLength(p.body, "utf8"));
  return { proceed: false, holdMs: 0, status, headers, body: p.body };
}

/** v's delay in whole seconds, rounded up: the larger of retry_after and delay_ms, at least 1 and at most 2^31. */
function retryAfterOf(v: VerdictLike | null | undefined): number {
  let secs = num(v?.retry_after);
  const ms = num(v?.delay_ms);
  if (ms > 0) secs = Math.max(secs, Math.ceil(ms / 1000));
  return Math.min(Math.max(Math.ceil(secs), 1), maxDelaySeconds);
}

/** A proceed's delay_ms as a hold, 0 when not positive. */
function holdOf(ms: unknown): number {
  const n = num(ms);
  return n <= 0 ? 0 : Math.min(n, maxHoldMs);
}

/** x if a number (NaN is 0), else 0. */
function num(x: unknown): number {
  return typeof x === "number" && !Number.isNaN(x) ? x : 0;
}

/** Whether s is non-empty and only %x20-7E. */
function printableASCII(s: string): boolean {
  return s !== "" && /^[\x20-\x7e]+$/.test(s);
}

/**
 * Whether s parses as an absolute URI the way Go's url.Parse and IsAbs see
 * it: a scheme (a letter, then letters, digits, "+", "-", "."), and valid
 * percent escapes.
 */
function absoluteURI(s: string): boolean {
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:/.test(s)) return false;
  return !/%(?![0-9A-Fa-f]{2})/.test(s);
}

/** s, printable ASCII, as an RFC 9651 String. */
function sfString(s: string): string {
  return '"' + s.replace(/["\\]/g, "\\$&") + '"';
}

/**
 * s as a JSON string exactly as Go's json.Marshal writes it: `<`, `>`,
 * `&`, U+2028 and U+2029 escaped, \b \f \n \r \t short, other control
 * bytes as \u00XX, a lone surrogate (invalid UTF-8 to Go) as \ufffd.
 */
export function goJSONString(s: string): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        out += s.slice(i, i + 2);
        i++;
        continue;
      }
    }
    if (c >= 0xd800 && c <= 0xdfff) out += "\\ufffd";
    else if (c === 0x22) out += '\\"';
    else if (c === 0x5c) out += "\\\\";
    else if (c === 0x08) out += "\\b";
    else if (c === 0x0c) out += "\\f";
    else if (c === 0x0a) out += "\\n";
    else if (c === 0x0d) out += "\\r";
    else if (c === 0x09) out += "\\t";
    else if (c < 0x20 || c === 0x3c || c === 0x3e || c === 0x26 || c === 0x2028 || c === 0x2029) {
      out += "\\u" + c.toString(16).padStart(4, "0");
    } else out += s.charAt(i);
  }
  return out + '"';
}
