/**
 * Fail modes: what a call site answers when tollgate gives no verdict, as
 * the Go client's `api/client/failmode.go`.
 *
 * @packageDocumentation
 */

import { CanceledError, TimeoutError, TollgateError, UnavailableError, isUnavailable } from "./errors.js";
import type { WireVerdict } from "./wire.js";

/**
 * What a call site answers when tollgate gives no verdict. Each call site
 * picks its own: a login form may fail open while a password reset or an
 * SMS send fails closed.
 *
 * The answer is a {@link Verdict} with `fallback` set and the reason
 * {@link reasonFallback}, with the call's error in `error`. Which answer:
 *
 * - When tollgate is unavailable ({@link isUnavailable}: down, slow,
 *   shedding with 503 overloaded, failing with a 5xx, a proxy's 429), the
 *   mode's own: {@link failOpen} proceeds within a local allowance per
 *   account (a send's destination) and per address, and past it answers
 *   as {@link failDelay}, with {@link reasonFallbackAllowance} after
 *   {@link reasonFallback}; `failDelay` delays by a second, or by the
 *   Retry-After a 503 asked for, up to a minute; {@link failCaptcha} asks
 *   for a CAPTCHA, and proceeds when the request says the end user solved
 *   one (`captcha_solved`), so that a CAPTCHA stands in for tollgate while
 *   it is down (no allowance: the CAPTCHA is the limit).
 * - Otherwise (tollgate refused the request or the token with a 4xx, or
 *   the caller's signal canceled the call) the answer is closed whatever
 *   the mode: `failCaptcha` asks for a CAPTCHA even when one was solved,
 *   and `failOpen` and `failDelay` delay. A broken request must show up in
 *   the caller's log, not turn protection off.
 *
 * A fallback proceed carries no attempt token (report without one: it is
 * counted on its own) and a fallback report no device token. A value that
 * is none of the three (from untyped code) answers as `failDelay`.
 */
export type FailMode = "open" | "delay" | "captcha";

/**
 * Answers proceed while tollgate is unavailable, so logins go on, held to
 * a safety net: each account (a send's destination) and each client
 * address gets a small allowance of such proceeds (the client's
 * `failOpenPerAccount`, `failOpenPerAddress`, `failOpenWindowMs`), and past
 * it the call is answered as {@link failDelay} would. Reports are never
 * held nor counted.
 */
export const failOpen: FailMode & "open" = "open";

/** Answers delay: the end user gets 429 and tries again shortly. It fails closed. The default. */
export const failDelay: FailMode & "delay" = "delay";

/** Answers captcha, or proceed for a solved one while tollgate is unavailable. It fails closed behind a CAPTCHA. */
export const failCaptcha: FailMode & "captcha" = "captcha";

/** The reason of every fallback verdict, for the caller's logs; tollgate itself never answers it. */
export const reasonFallback = "client_fallback";

/**
 * Follows {@link reasonFallback} in the reasons of a {@link failOpen} call
 * answered with a delay because its account, destination or address had
 * spent its allowance of fallback proceeds; tollgate itself never answers it.
 */
export const reasonFallbackAllowance = "client_fallback_allowance";

/** failDelay's delay when tollgate asked for none, in milliseconds. */
export const fallbackDelayMs = 1000;

/** The longest Retry-After that failDelay follows, in milliseconds. */
export const maxFallbackDelayMs = 60_000;

/** Why a call gave no verdict of tollgate's. */
export type CallError = TollgateError | UnavailableError | TimeoutError | CanceledError;

/**
 * tollgate's verdict, or a call site's fail-mode answer when tollgate gave
 * none. Answer it with {@link Responder.respond} either way.
 */
export interface Verdict extends WireVerdict {
  /**
   * true when tollgate gave no verdict and this is the fail mode's answer;
   * `error` then says why. A {@link failOpen} call past its allowance is a
   * fallback delay whose reasons are {@link reasonFallback} and
   * {@link reasonFallbackAllowance}: answer it as any delay.
   */
  fallback: boolean;
  /** undefined for tollgate's own verdict; else why there was none, for the caller's log. */
  error?: CallError;
}

/**
 * mode's answer to a call that failed with err; captchaSolved is the
 * request's. The allowance of failOpen is applied by the client, not here.
 */
export function fallback(mode: FailMode, captchaSolved: boolean, err: CallError): Verdict {
  let m: FailMode = mode === failOpen || mode === failCaptcha ? mode : failDelay;
  if (!isUnavailable(err)) {
    // Refused or canceled: closed whatever the mode.
    captchaSolved = false;
    if (m !== failCaptcha) m = failDelay;
  }
  const v: Verdict = {
    action: "delay",
    delay_ms: 0,
    retry_after: 0,
    reasons: [reasonFallback],
    attempt: "",
    device_token: "",
    fallback: true,
    error: err,
  };
  if (m === failOpen || (m === failCaptcha && captchaSolved)) {
    v.action = "proceed";
  } else if (m === failCaptcha) {
    v.action = "captcha";
  } else {
    let d = fallbackDelayMs;
    if (err instanceof TollgateError && err.retryAfterMs > d) d = Math.min(err.retryAfterMs, maxFallbackDelayMs);
    v.delay_ms = d;
    v.retry_after = Math.ceil(d / 1000);
  }
  return v;
}
