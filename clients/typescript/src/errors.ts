/**
 * The errors of a call, as the Go client's: an {@link UnavailableError}
 * when tollgate could not answer (a {@link TimeoutError} when it did not in
 * time), a {@link TollgateError} for an answer other than 200 or 201, and a
 * {@link CanceledError} when the caller's signal ended the call.
 *
 * No message ever holds a request field's value (account, address,
 * destination, tokens): identifiers travel only in request bodies, and
 * only the call's name, tollgate's problem details (which never repeat
 * input) and transport causes (which name tollgate's address) go into
 * messages.
 *
 * @packageDocumentation
 */

/** The prefix of every problem type URI tollgate answers with. */
export const problemBase = "https://tollgate.dev/problems/";

/**
 * The call an error is about: "check", "report", "send", "challenge"
 * (issueChallenge), "challenge-verify" (verifyChallenge),
 * "challenge-solver" (challengeSolver), "explain", "reset", "allow",
 * "deny", "entries", "remove", "reload", "dead-letters" (deadLetters),
 * "replay" (replayWebhook) or "breached" (its errors are never seen:
 * {@link Client.breached} answers false instead).
 */
export type Op =
  | "check"
  | "report"
  | "send"
  | "challenge"
  | "challenge-verify"
  | "challenge-solver"
  | "explain"
  | "reset"
  | "allow"
  | "deny"
  | "entries"
  | "remove"
  | "held"
  | "reset-held"
  | "reload"
  | "dead-letters"
  | "replay"
  | "breached";

/**
 * tollgate could not answer the call: it is unreachable (connection refused
 * or reset, no such host), it did not answer in time ({@link TimeoutError}),
 * it or a proxy in front of it failed or shed the call (a 5xx or a 429,
 * which come as a {@link TollgateError}; see {@link isUnavailable}), its
 * answer was not what the call expects (not JSON, too large, an unknown
 * action), or the token source gave no token. The call site's fail mode
 * answers these.
 */
export class UnavailableError extends Error {
  /** The call. */
  readonly op: Op;

  /**
   * @param op - the call
   * @param message - what happened, without any request value
   * @param cause - the underlying error, if any (it names tollgate's address, never a request field)
   */
  constructor(op: Op, message: string, cause?: unknown) {
    super(`tollgate: ${op}: ${message}${causeText(cause)}`, cause === undefined ? undefined : { cause });
    this.op = op;
  }

  override readonly name: string = "UnavailableError";
}

/**
 * The call ran out of time: past the client's `timeoutMs` (or the caller's
 * signal timed out), whether connecting, waiting for the answer or reading
 * it. Every TimeoutError is an {@link UnavailableError}.
 */
export class TimeoutError extends UnavailableError {
  /**
   * @param op - the call
   * @param cause - the underlying error, if any
   */
  constructor(op: Op, cause?: unknown) {
    super(op, "tollgate did not answer in time", cause);
  }

  override readonly name: string = "TimeoutError";
}

/**
 * The caller's signal aborted the call (for a reason other than a timeout).
 * It is not an unavailability: every fail mode answers it closed.
 */
export class CanceledError extends Error {
  /** The call. */
  readonly op: Op;

  /**
   * @param op - the call
   * @param cause - the signal's reason, if any
   */
  constructor(op: Op, cause?: unknown) {
    super(`tollgate: ${op}: the call was canceled`, cause === undefined ? undefined : { cause });
    this.op = op;
  }

  override readonly name: string = "CanceledError";
}

/** The fields of a {@link TollgateError}. */
export interface TollgateErrorFields {
  /** The call. */
  op: Op;
  /** The HTTP status code. */
  status: number;
  /** The problem type URI; "" when the answer was not problem+json. */
  type: string;
  /** The problem's title, or the status text when the answer was not problem+json. */
  title: string;
  /** The problem's detail, for the caller's developer. */
  detail: string;
  /** On a 400, the request field at fault, such as "ip"; else "". */
  field: string;
  /** The request's id in tollgate's log (X-Request-Id, or the problem's request_id); else "". */
  requestId: string;
  /** The delay the Retry-After header asked for, in milliseconds (a 503 overloaded carries one), or 0. */
  retryAfterMs: number;
}

/**
 * An answer other than 200 or 201 from tollgate (or from whatever answers
 * at its address): an RFC 9457 problem+json document, whose members it
 * carries, or another body, which it ignores.
 *
 * A 5xx (such as 503 overloaded) or a 429 is an unavailability
 * ({@link TollgateError.unavailable}, {@link isUnavailable}); any other
 * status means the request or its token was refused, and no fail mode
 * waves it through. On a 400 of type `invalid-field` for the field
 * "account", do not check the credential: answer the end user as for a
 * wrong password.
 *
 * Its message holds the call, the status, the problem type's last segment
 * and tollgate's detail; a detail from anything but tollgate is left out.
 */
export class TollgateError extends Error implements TollgateErrorFields {
  /** The call. */
  readonly op: Op;
  /** The HTTP status code. */
  readonly status: number;
  /** The problem type URI (one of tollgate's under {@link problemBase}); "" when the answer was not problem+json. */
  readonly type: string;
  /** The problem's title, or Go's status text when the answer was not problem+json. */
  readonly title: string;
  /** The problem's detail, for the caller's developer; tollgate never repeats a submitted value in it. */
  readonly detail: string;
  /** On a 400, the request field at fault, such as "ip"; else "". */
  readonly field: string;
  /** The request's id in tollgate's log; else "". */
  readonly requestId: string;
  /** The delay Retry-After asked for, in ms (a 503 overloaded carries one), or 0. */
  readonly retryAfterMs: number;

  /** @param f - the error's fields */
  constructor(f: TollgateErrorFields) {
    super(problemMessage(f));
    this.op = f.op;
    this.status = f.status;
    this.type = f.type;
    this.title = f.title;
    this.detail = f.detail;
    this.field = f.field;
    this.requestId = f.requestId;
    this.retryAfterMs = f.retryAfterMs;
  }

  override readonly name: string = "TollgateError";

  /** Whether this answer means tollgate is unavailable: a 5xx or a 429. */
  get unavailable(): boolean {
    return this.status >= 500 || this.status === 429;
  }
}

/**
 * Whether err means tollgate could not answer, so that a fail mode's own
 * answer applies: an {@link UnavailableError} (a {@link TimeoutError}
 * included) or a {@link TollgateError} with a 5xx or 429 status.
 */
export function isUnavailable(err: unknown): boolean {
  return err instanceof UnavailableError || (err instanceof TollgateError && err.unavailable);
}

/** The message of a TollgateError, as the Go client's Error.Error. */
function problemMessage(f: TollgateErrorFields): string {
  let s = `tollgate: ${f.op}: ${f.status}`;
  if (f.type.startsWith(problemBase)) {
    s += " " + f.type.slice(problemBase.length);
    if (f.detail !== "") s += ": " + f.detail;
  } else {
    s += " " + f.title;
  }
  if (f.requestId !== "") s += ` (request id ${f.requestId})`;
  return s;
}

/** ": " and the cause's message, or "". */
function causeText(cause: unknown): string {
  if (cause === undefined || cause === null) return "";
  let msg = cause instanceof Error ? cause.message : String(cause);
  // fetch's "fetch failed" hides the useful part in its own cause.
  if (cause instanceof Error && cause.cause instanceof Error && cause.cause.message !== "") {
    msg += ": " + cause.cause.message;
  }
  return msg === "" ? "" : ": " + msg;
}
