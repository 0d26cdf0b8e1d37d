/**
 * Verifying the events tollgate posts to webhook endpoints, as the Go
 * client's `VerifyWebhook` (api/client/webhook.go), held to the same
 * vectors (clients/testdata/webhooks.json).
 *
 * @packageDocumentation
 */

import { createHmac, timingSafeEqual } from "node:crypto";

/** The event types tollgate posts. A later tollgate may post others: handle the ones you know and answer 2xx to the rest. */
export type WebhookEventType =
  | "login.new_device"
  | "account.under_attack"
  | "account.reset"
  | "ip.escalated"
  | "otp.pumping_hold"
  | "otp.budget"
  | "store.degraded"
  | "store.recovered"
  | "login.step_up"
  | "login.breached_password";

/** The event types this client knows, in a list. */
export const webhookEventTypes: readonly WebhookEventType[] = [
  "login.new_device",
  "account.under_attack",
  "account.reset",
  "ip.escalated",
  "otp.pumping_hold",
  "otp.budget",
  "store.degraded",
  "store.recovered",
  // A success report answered step_up (details.reasons: why), and a report
  // that said the password is breached (details.outcome), so that the
  // owner can be told to change it; each coalesced per account and window.
  "login.step_up",
  "login.breached_password",
];

/** What an event is about. Fields tollgate left out are "" ({} for details). */
export interface WebhookData {
  /** The flow of the call, such as "login". */
  flow: string;
  /** The policy rule that fired. */
  rule: string;
  /** The verdict's reason. */
  reason: string;
  /** The account or destination as the caller sent it in that call. It identifies an end user: do not log it. */
  subject: string;
  /** The caller's own opaque ref (a user id) given to check, report or send, or "". */
  ref: string;
  /** The event's other facts. */
  details: Record<string, unknown>;
}

/** An event of one type. */
export interface WebhookEventOf<T extends string> {
  /** The webhook-id header: the same for every delivery of one event. Delivery is at least once: deduplicate by it. */
  id: string;
  /** The event's type. */
  type: T;
  /** When tollgate saw the event, in RFC 3339 as tollgate wrote it (the signed webhook-timestamp header is what the tolerance applies to). */
  timestamp: string;
  /** The tenant of the call that caused the event. */
  tenant: string;
  /** What the event is about. */
  data: WebhookData;
}

/** An event of a type this client does not know yet (a later tollgate's). */
export type UnknownWebhookEvent = WebhookEventOf<string & { readonly unknownWebhookEvent?: never }>;

/**
 * A verified event: switch on `type` (keep a default branch for
 * {@link UnknownWebhookEvent}, a later tollgate's types).
 */
export type WebhookEvent = { [T in WebhookEventType]: WebhookEventOf<T> }[WebhookEventType] | UnknownWebhookEvent;

/**
 * Why {@link verifyWebhook} refused a request, checked in this order:
 *
 * - "secret": the secret, less its optional "whsec_" prefix, is empty or not standard, padded base64 (your configuration);
 * - "headers": webhook-id, webhook-timestamp or webhook-signature is missing or empty, or the timestamp is not a decimal Unix time of at most 18 digits;
 * - "timestamp": the timestamp is further from now than the tolerance (a replay, or a clock far off);
 * - "signature": no v1 signature of the header matches (forged, tampered with, or signed with another secret);
 * - "payload": correctly signed, but not an event (a JSON object with string type, timestamp and tenant, and an object data).
 */
export type WebhookErrorKind = "secret" | "headers" | "timestamp" | "signature" | "payload";

/** A webhook that is not to be acted on: answer it 400. Its message never holds the body or a header's value. */
export class WebhookVerificationError extends Error {
  /** Why. */
  readonly kind: WebhookErrorKind;

  /** @param kind - why */
  constructor(kind: WebhookErrorKind) {
    super(`tollgate: webhook: ${kindText[kind]}`);
    this.kind = kind;
  }

  override readonly name: string = "WebhookVerificationError";
}

const kindText: Record<WebhookErrorKind, string> = {
  secret: "the secret is not whsec_ and base64",
  headers: "missing or malformed webhook headers",
  timestamp: "timestamp outside the tolerance",
  signature: "no matching signature",
  payload: "the body is not an event",
};

/** The default tolerance: 300 s (5 minutes) either way, as Standard Webhooks recommends. */
export const defaultWebhookToleranceSeconds = 300;

/** The options of {@link verifyWebhook}. */
export interface VerifyWebhookOptions {
  /** Now, as a Date or in milliseconds since the epoch. Default: Date.now(). */
  now?: Date | number | undefined;
  /** How far the timestamp may be from now, either way, in seconds. 0 or undefined is the default (300). */
  toleranceSeconds?: number | undefined;
}

/**
 * The request headers: Node's `req.headers` (names in lower case, values
 * strings or arrays), a fetch `Headers`, or any record; names are matched
 * in any case.
 */
export type WebhookHeaders =
  | { get(name: string): string | null }
  | Readonly<Record<string, string | readonly string[] | undefined>>;

const base64Re = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const timestampRe = /^[0-9]{1,18}$/;

/**
 * Checks that rawBody, with the webhook-id, webhook-timestamp and
 * webhook-signature headers, was signed by tollgate under secret (Standard
 * Webhooks: "v1," and the base64 HMAC-SHA256 of `id.timestamp.body` under
 * the base64-decoded key after "whsec_") and sent within the tolerance of
 * now, and returns the event it holds.
 *
 * rawBody must be the request's bytes exactly as they arrived (with
 * Express, `express.raw({ type: "application/json" })`): a body parsed and
 * stringified again is not what was signed. A string is taken as UTF-8.
 * Any one of the space-separated signatures may match, so that a secret can
 * be rotated; versions other than v1 are skipped. Signatures are compared
 * with `timingSafeEqual`.
 *
 * @throws {@link WebhookVerificationError} with the reason's kind; a
 * TypeError when rawBody is neither a string nor bytes (a parsed body)
 */
export function verifyWebhook(
  secret: string,
  headers: WebhookHeaders,
  rawBody: string | Uint8Array,
  options: VerifyWebhookOptions = {},
): WebhookEvent {
  if (typeof rawBody !== "string" && !(rawBody instanceof Uint8Array)) {
    // A parsed body (express.json()) cannot be verified: its bytes are gone.
    throw new TypeError("tollgate: verifyWebhook: rawBody must be the raw body, a string or a Buffer (use express.raw(), not express.json())");
  }
  const b64 = typeof secret === "string" ? (secret.startsWith("whsec_") ? secret.slice(6) : secret) : "";
  if (b64 === "" || !base64Re.test(b64)) throw new WebhookVerificationError("secret");
  const key = Buffer.from(b64, "base64");

  const id = header(headers, "webhook-id")[0] ?? "";
  const ts = header(headers, "webhook-timestamp")[0] ?? "";
  const sigs = header(headers, "webhook-signature").join(" ");
  if (id === "" || ts === "" || sigs === "") throw new WebhookVerificationError("headers");
  if (!timestampRe.test(ts)) throw new WebhookVerificationError("headers");

  const nowMs = options.now === undefined ? Date.now() : typeof options.now === "number" ? options.now : options.now.getTime();
  if (!Number.isFinite(nowMs)) throw new WebhookVerificationError("timestamp"); // an Invalid Date: no time is within the tolerance
  const t = options.toleranceSeconds;
  const tolerance = t === undefined || !(t > 0) ? defaultWebhookToleranceSeconds : Number.isFinite(t) ? Math.floor(t) : Number.MAX_SAFE_INTEGER;
  // In whole seconds, as the Go client: BigInt, since 18 digits pass a double's precision.
  const d = BigInt(Math.floor(nowMs / 1000)) - BigInt(ts);
  if (d > BigInt(tolerance) || -d > BigInt(tolerance)) throw new WebhookVerificationError("timestamp");

  const body = typeof rawBody === "string" ? Buffer.from(rawBody, "utf8") : Buffer.from(rawBody.buffer, rawBody.byteOffset, rawBody.byteLength);
  const want = Buffer.from(createHmac("sha256", key).update(`${id}.${ts}.`).update(body).digest("base64"), "utf8");
  let found = false;
  for (const sig of sigs.split(" ")) {
    const comma = sig.indexOf(",");
    if (comma < 0 || sig.slice(0, comma) !== "v1") continue;
    const got = Buffer.from(sig.slice(comma + 1), "utf8");
    // timingSafeEqual needs equal lengths; a length differs only for a malformed signature.
    if (got.length === want.length && timingSafeEqual(got, want)) found = true; // no early exit
  }
  if (!found) throw new WebhookVerificationError("signature");

  const e = parseEvent(body);
  if (e === undefined) throw new WebhookVerificationError("payload");
  return { ...e, id } as WebhookEvent;
}

/** The values of the header name, whatever the case of its name in h. */
function header(h: WebhookHeaders, name: string): string[] {
  if (h === null || typeof h !== "object") return [];
  if (typeof (h as { get?: unknown }).get === "function") {
    const v = (h as { get(name: string): string | null }).get(name);
    return typeof v === "string" ? [v] : [];
  }
  const out: string[] = [];
  const rec = h as Readonly<Record<string, unknown>>;
  for (const k of Object.keys(rec).sort()) {
    if (k.toLowerCase() !== name) continue;
    const v = rec[k];
    if (typeof v === "string") out.push(v);
    else if (Array.isArray(v)) for (const x of v) if (typeof x === "string") out.push(x);
  }
  return out;
}

/** The event in body, without its id, or undefined when it is not one. */
function parseEvent(body: Buffer): Omit<WebhookEventOf<string>, "id"> | undefined {
  let v: unknown;
  try {
    v = JSON.parse(body.toString("utf8"));
  } catch {
    return undefined;
  }
  if (!isObject(v)) return undefined;
  const data = v["data"] ?? {};
  if (!isObject(data)) return undefined;
  const details = data["details"] ?? {};
  if (!isObject(details)) return undefined;
  const str = (o: Record<string, unknown>, k: string): string | undefined => {
    const x = o[k] ?? "";
    return typeof x === "string" ? x : undefined;
  };
  const fields = {
    type: str(v, "type"),
    timestamp: str(v, "timestamp"),
    tenant: str(v, "tenant"),
    flow: str(data, "flow"),
    rule: str(data, "rule"),
    reason: str(data, "reason"),
    subject: str(data, "subject"),
    ref: str(data, "ref"),
  };
  for (const x of Object.values(fields)) if (x === undefined) return undefined;
  const f = fields as Record<keyof typeof fields, string>;
  return {
    type: f.type,
    timestamp: f.timestamp,
    tenant: f.tenant,
    data: { flow: f.flow, rule: f.rule, reason: f.reason, subject: f.subject, ref: f.ref, details },
  };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}
