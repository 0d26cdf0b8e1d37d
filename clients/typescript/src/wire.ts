/**
 * The JSON shapes of tollgate's HTTP API (openapi.yaml), as the Go
 * client's `api/wire`. Request fields that are optional are omitted when
 * empty (undefined, "" or false), as Go's `omitempty` does; the server
 * treats an absent key, null and the empty value alike.
 *
 * @packageDocumentation
 */

/**
 * The actions of a verdict. step_up is answered only by a success report,
 * after the password was verified: the login is not done yet, a second
 * factor (or a password reset) must pass first; the verdict's attempt is
 * then the step-up ticket and its device_token is "".
 */
export type Action = "proceed" | "delay" | "captcha" | "deny" | "step_up";

/** The channels of the requests that name a destination. */
export type Channel = "sms" | "voice" | "whatsapp" | "email";

/**
 * The outcomes of a report: success or failure on a login (attempts) flow;
 * step_up_passed or step_up_failed on the step_up flow, with the ticket;
 * password_changed on a login flow, with the account and no attempt, once
 * the caller changed or reset the account's password (it clears the
 * account's counters of the password, never an address's).
 */
export type Outcome = "success" | "failure" | "step_up_passed" | "step_up_failed" | "password_changed";

/** The built-in flow a second factor asked for by a step_up verdict is checked and reported on. */
export const stepUpFlow = "step_up";

/** The flow of a send that names none. */
export const defaultSendFlow = "otp_send";

/** The body of POST /v1/check: may this attempt go ahead now? */
export interface CheckRequest {
  /** A flow of the policy, such as "login". Required. */
  flow: string;
  /** The account identifier as the end user typed it; tollgate hashes it and never stores or logs it. */
  account?: string | undefined;
  /** The end user's address as the caller saw it (see {@link Proxies}). */
  ip?: string | undefined;
  /** The device token a previous success returned for this end user, if any; an invalid one is ignored. */
  device_token?: string | undefined;
  /** The end user just solved a CAPTCHA that the caller verified. */
  captcha_solved?: boolean | undefined;
  /** An HMAC of the password under the caller's own key (never the password), or empty. */
  password_fingerprint?: string | undefined;
  /** On a flow that verifies one-time codes (otp_verify): where the code was sent; with channel. */
  destination?: string | undefined;
  /** The channel the code went by; with destination. */
  channel?: Channel | (string & {}) | undefined;
  /**
   * The caller's own opaque reference for the end user (its user id), at
   * most 128 bytes, no control characters: tollgate never counts it, and
   * hands it back in the events this call causes ({@link verifyWebhook}),
   * so that the receiver need not look the subject up. Sent as "ref".
   */
  ref?: string | undefined;
}

/** The body of POST /v1/report: how did the attempt end? */
export interface ReportRequest {
  /** The check's flow. Required. */
  flow: string;
  /** The check's account. */
  account?: string | undefined;
  /** The check's address. */
  ip?: string | undefined;
  /** "failure" or "success". Required. Report a failure for an unknown account exactly as for a known one. */
  outcome: Outcome | (string & {});
  /** The attempt token the check returned, unchanged; a report without one is counted on its own, and one that is not this call's check's is refused (400 invalid-field). */
  attempt?: string | undefined;
  /** The device token the check carried, if any. */
  device_token?: string | undefined;
  /** The check's password fingerprint, if any. */
  password_fingerprint?: string | undefined;
  /** On a flow that verifies one-time codes: where the verified code was sent; with channel. */
  destination?: string | undefined;
  /** The channel the verified code went by; with destination. */
  channel?: Channel | (string & {}) | undefined;
  /**
   * The caller's own opaque reference for the end user (its user id), at
   * most 128 bytes, no control characters: tollgate never counts it, and
   * hands it back in the events this call causes ({@link verifyWebhook}),
   * so that the receiver need not look the subject up. Sent as "ref".
   */
  ref?: string | undefined;
  /**
   * The password the end user typed was found in a breached-password
   * corpus ({@link Client.breached}, a k-anonymous range query: tollgate
   * never receives the password, its hash or a prefix of it here). Only a
   * boolean: a count would narrow which password it is. On reports of
   * attempts flows (login) only, success and failure alike.
   */
  breached?: boolean | undefined;
}

/** The body of POST /v1/otp/send: may a one-time code be sent to this destination now? */
export interface SendRequest {
  /** A send flow of the policy; empty means "otp_send". */
  flow?: string | undefined;
  /** The phone number in international format, or the e-mail address for "email". Required. */
  destination: string;
  /** The channel. Required. */
  channel: Channel | (string & {});
  /** The end user's address. */
  ip?: string | undefined;
  /** The account the code is for, when the caller knows one. */
  account?: string | undefined;
  /** With account: the device token a login success returned for this end user. */
  device_token?: string | undefined;
  /** The end user just solved a CAPTCHA that the caller verified. */
  captcha_solved?: boolean | undefined;
  /**
   * The caller's own opaque reference for the end user (its user id), at
   * most 128 bytes, no control characters: tollgate never counts it, and
   * hands it back in the events this call causes ({@link verifyWebhook}),
   * so that the receiver need not look the subject up. Sent as "ref".
   */
  ref?: string | undefined;
}

/** tollgate's answer to a check, report or send: always these six fields. */
export interface WireVerdict {
  /** proceed, delay, captcha, deny or (a success report's) step_up. */
  action: Action;
  /** With delay, how long to wait before checking again; with proceed, a queued call's place in its queue; else 0. */
  delay_ms: number;
  /** delay_ms in whole seconds, rounded up: a Retry-After value. */
  retry_after: number;
  /** Stable codes of the rules that shaped the verdict, for the caller's logs; never for the end user. */
  reasons: string[];
  /** On a check's proceed, the token to send with the report; with step_up, the step-up ticket; else "". */
  attempt: string;
  /** On a success report, a fresh device token for a long-lived cookie; else "". */
  device_token: string;
}

/** The body of POST /v1/admin/explain: why is this subject delayed? */
export interface ExplainRequest {
  /** The flow to explain. Required. */
  flow: string;
  /** The account identifier, as for a check. */
  account?: string | undefined;
  /** The end user's address, as for a check. */
  ip?: string | undefined;
  /** A one-time code's destination; with channel. */
  destination?: string | undefined;
  /** The destination's channel; with destination. */
  channel?: Channel | (string & {}) | undefined;
}

/** One rule of an {@link Explanation}. */
export interface RuleState {
  /** The rule's name in the policy. */
  rule: string;
  /** The reason code the rule answers with. */
  reason: string;
  /** What the rule counts, such as "account" or "ip/56". */
  subject: string;
  /** The rule's algorithm, such as "backoff". */
  algorithm: string;
  /**
   * "" for the rule's own state; else the part the row shows: "known_network" (over: the
   * network is known), "network_allowance", "network_slot" (rows of the device rule), or on a
   * send flow "verified_destination", "verified_network", "owner_codes", "owner_resend" (the
   * owner's allowance, which no rule names: rule and reason are then "").
   */
  facet: string;
  /** A backoff's failures, or a log's members in its longest window. */
  count: number;
  /** A rate rule's units left. */
  remaining: number;
  /** How long the next call would wait, in milliseconds. */
  wait_ms: number;
  /** Whether the next call would be past the rule's limit. */
  over: boolean;
  /** A rate rule's time until its state is forgotten, in milliseconds. */
  reset_ms: number;
}

/** An administrators' entry as tollgate keeps it: never the range or the prefix, only its length. */
export interface Entry {
  /** The entry's id, for remove. */
  id: string;
  /** "allow", "block" or "captcha". */
  kind: string;
  /** The flow it applies to; "" for every flow. */
  flow: string;
  /** "ip_range", "destination_prefix" or "country". */
  subject: string;
  /** An IP range's family, "ipv4" or "ipv6"; else "". */
  family: string;
  /** An IP range's prefix length or a destination prefix's number of digits; 0 for a country. */
  length: number;
  /** A country entry's region; else "". */
  country: string;
  /** Why, for the audit log. */
  reason: string;
  /** Who (the token's subject). */
  by: string;
  /** When it was made, RFC 3339 in UTC. */
  created_at: string;
  /** When it expires, RFC 3339 in UTC. */
  expires_at: string;
}

/** The answer to explain: every rule of the flow that counts the subject, and the verdict a check would get now. */
export interface Explanation {
  /** The explained flow. */
  flow: string;
  /** What a check would answer now; it carries no tokens. */
  verdict: WireVerdict;
  /** The states of the rules that count the subject, in the flow's order. */
  rules: RuleState[];
  /** The administrators' entries that decide for the subject in this flow. */
  entries: Entry[];
}

/** The body of POST /v1/admin/reset: clear one subject's state in a flow (exactly one of account, ip, destination). */
export interface ResetRequest {
  /** The flow. Required. */
  flow: string;
  /** Clears the account's counters in the flow, its devices' included. */
  account?: string | undefined;
  /** Clears the address's own logs and buckets. */
  ip?: string | undefined;
  /** Clears a destination's quotas; with channel. */
  destination?: string | undefined;
  /** The destination's channel; with destination. */
  channel?: Channel | (string & {}) | undefined;
  /** Goes to the audit log line; 1 to 200 bytes, no identifier. Required by tollgate. */
  reason: string;
  /** With account: your own opaque reference for its owner (as in a check), passed only to the account.reset notice; never stored or logged. */
  ref?: string | undefined;
}

/** The answer to reset. */
export interface ResetResult {
  /** How many store keys the reset deleted. */
  deleted: number;
}

/** The body of POST /v1/admin/allow and /v1/admin/deny: a temporary entry on one IP range, destination prefix or country. */
export interface EntryRequest {
  /** The flow the entry applies to; empty for every flow. */
  flow?: string | undefined;
  /** A CIDR range or one address. */
  ip_range?: string | undefined;
  /** An E.164 prefix: "+" and 1 to 15 digits. */
  destination_prefix?: string | undefined;
  /** A region, such as "FR". */
  country?: string | undefined;
  /** For deny only: "block" (the default) or "captcha". */
  action?: "block" | "captcha" | (string & {}) | undefined;
  /** How long the entry lasts, 1m to 30d: "90m", "12h", "7d". Required. */
  expires_in: string;
  /** Why, for the audit log; no identifier. Required. */
  reason: string;
}

/** The body of POST /v1/admin/remove. */
export interface RemoveRequest {
  /** The entry's id. */
  id: string;
  /** Why, for the audit log. */
  reason?: string | undefined;
}

/** The answer to remove. */
export interface Removed {
  /** false when no such entry was there (removed or expired). */
  removed: boolean;
}

/** The answer to reload: the policy now in force. */
export interface ReloadResult {
  /** The default tenant's flows after the reload, sorted. */
  flows: string[];
  /**
   * The settings the file changes that only a restart applies (listen,
   * redis, secret, auth, tls, ...), sorted; empty when none. The running
   * process keeps their old values.
   */
  restart_needed: string[];
}

/**
 * A webhook delivery tollgate gave up on: its endpoint did not answer 2xx
 * before the event's age limit (webhooks.max_age). It holds no event data
 * (no account, destination or ref), only what names it.
 */
export interface DeadLetter {
  /** The event's webhook-id, the same in every delivery of it; what {@link Client.replayWebhook} takes. */
  id: string;
  /** The event type, such as "login.new_device". */
  type: string;
  /** The tenant whose event it is. */
  tenant: string;
  /** The endpoint's name in tollgate's configuration. */
  endpoint: string;
  /** Why the last attempt failed, such as "status 503" or "timeout". */
  last_error: string;
  /** How many deliveries were tried. */
  attempts: number;
  /** When the event happened, RFC 3339 in UTC. */
  time: string;
  /** When it was given up on, RFC 3339 in UTC. */
  dead_at: string;
}

/** The body of POST /v1/admin/webhooks/replay. */
export interface ReplayRequest {
  /** The dead letter's id ({@link DeadLetter.id}). Required. */
  id: string;
  /** Why, for the audit log: at most 200 bytes, no identifier. Required. */
  reason: string;
}

/** The answer to replayWebhook. */
export interface Replayed {
  /** false when the tenant has no dead letter by that id (never was, or already replayed). */
  replayed: boolean;
}

/** The kinds of challenge tollgate issues: its proof of work, or a provider CAPTCHA it verifies. */
export type ChallengeKind = "pow" | "turnstile" | "hcaptcha" | "recaptcha";

/** A challenge tollgate issued (POST /v1/challenge). */
export interface Challenge {
  /** The signed challenge, opaque, single-use: send it back with the solution. */
  token: string;
  /** "pow" or a provider's kind. */
  kind: string;
  /** The leading zero bits a proof-of-work solution needs (SHA-256 of the token's characters and the nonce as 8 bytes big-endian); 0 for a provider. */
  difficulty: number;
  /** When the token stops being accepted (RFC 3339). */
  expires_at: string;
  /** The path of tollgate's solver script. */
  solver_url: string;
  /** A provider's site key for its widget; "" for proof of work. */
  site_key: string;
}

/** A solution to verify: a proof-of-work token and nonce, or a provider's widget response (with the token if one was issued, and the end user's address if known). */
export interface ChallengeSolution {
  token?: string | undefined;
  nonce?: string | undefined;
  provider?: "turnstile" | "hcaptcha" | "recaptcha" | undefined;
  response?: string | undefined;
  remote_ip?: string | undefined;
}

/** tollgate's verdict on a solution. */
export interface ChallengeResult {
  /** true at most once per token (or provider response), on every instance sharing the store: the solution is spent. */
  solved: boolean;
  /** "solved", or why not: invalid, expired, replayed, insufficient_work, malformed, not_configured, provider_rejected, provider_unavailable. */
  reason: string;
}

/** The shape of an issued challenge. */
export const challengeShape = {
  token: "string",
  kind: "string",
  difficulty: "int",
  expires_at: "string",
  solver_url: "string",
  site_key: "string",
} as const satisfies Shape;

/** The shape of a verification. */
export const challengeResultShape = { solved: "bool", reason: "string" } as const satisfies Shape;

/** A field of a request body: its JSON name and whether it is sent when empty. */
type FieldSpec = readonly [name: string, always: boolean];

/** The fields of each request body, in Go's struct (wire) order. */
export const requestFields = {
  check: [
    ["flow", true],
    ["account", false],
    ["ip", false],
    ["device_token", false],
    ["captcha_solved", false],
    ["password_fingerprint", false],
    ["destination", false],
    ["channel", false],
    ["ref", false],
  ],
  report: [
    ["flow", true],
    ["account", false],
    ["ip", false],
    ["outcome", true],
    ["attempt", false],
    ["device_token", false],
    ["password_fingerprint", false],
    ["destination", false],
    ["channel", false],
    ["ref", false],
    ["breached", false],
  ],
  send: [
    ["flow", false],
    ["destination", true],
    ["channel", true],
    ["ip", false],
    ["account", false],
    ["device_token", false],
    ["captcha_solved", false],
    ["ref", false],
  ],
  explain: [
    ["flow", true],
    ["account", false],
    ["ip", false],
    ["destination", false],
    ["channel", false],
  ],
  reset: [
    ["flow", true],
    ["account", false],
    ["ip", false],
    ["destination", false],
    ["channel", false],
    ["reason", true],
    ["ref", false],
  ],
  entry: [
    ["flow", false],
    ["ip_range", false],
    ["destination_prefix", false],
    ["country", false],
    ["action", false],
    ["expires_in", true],
    ["reason", true],
  ],
  remove: [
    ["id", true],
    ["reason", true],
  ],

  replay: [
    ["id", true],
    ["reason", true],
  ],
  challenge: [["kind", false]],
  challengeVerify: [
    ["token", false],
    ["nonce", false],
    ["provider", false],
    ["response", false],
    ["remote_ip", false],
  ],
} as const satisfies Record<string, readonly FieldSpec[]>;

/** The kind of a string or boolean field: the zero value Go sends for an absent required one. */
const zeroOf = (name: string): string | boolean => (name === "captcha_solved" || name === "breached" ? false : "");

/**
 * The JSON body of req with the given fields, in their order: a field that
 * is always sent gets its zero value when absent; any other is left out
 * when undefined, null, "" or false (Go's omitempty). Keys not in fields
 * are never sent.
 */
export function encodeRequest(req: object, fields: readonly FieldSpec[]): string {
  const out: Record<string, unknown> = {};
  const r = req as Record<string, unknown>;
  for (const [name, always] of fields) {
    const v = r[name];
    const empty = v === undefined || v === null || v === "" || v === false;
    if (!empty) out[name] = v;
    else if (always) out[name] = zeroOf(name);
  }
  return JSON.stringify(out);
}

/**
 * The shape of a JSON value a call decodes, for {@link decodeAs}: a string,
 * an integer, a boolean, an array of one shape (`[shape]`), an object of
 * any keys whose values are all of one shape (`["map", shape]`, Go's
 * `map[string]T`) or an object of named fields.
 */
export type Shape =
  | "string"
  | "int"
  | "bool"
  | readonly [Shape]
  | readonly ["map", Shape]
  | { readonly [field: string]: Shape };

/** The shape of a verdict. */
export const verdictShape = {
  action: "string",
  delay_ms: "int",
  retry_after: "int",
  reasons: ["string"],
  attempt: "string",
  device_token: "string",
} as const satisfies Shape;

/** The shape of an RFC 9457 problem document as tollgate writes it. */
export const problemShape = {
  type: "string",
  title: "string",
  status: "int",
  detail: "string",
  field: "string",
  request_id: "string",
} as const satisfies Shape;

const entryShape = {
  id: "string",
  kind: "string",
  flow: "string",
  subject: "string",
  family: "string",
  length: "int",
  country: "string",
  reason: "string",
  by: "string",
  created_at: "string",
  expires_at: "string",
} as const satisfies Shape;

/** The shapes of the admin answers. */
export const adminShapes = {
  explanation: {
    flow: "string",
    verdict: verdictShape,
    rules: [
      {
        rule: "string",
        reason: "string",
        subject: "string",
        algorithm: "string",
        facet: "string",
        count: "int",
        remaining: "int",
        wait_ms: "int",
        over: "bool",
        reset_ms: "int",
      },
    ],
    entries: [entryShape],
  },
  reset: { deleted: "int" },
  entry: entryShape,
  entries: { entries: [entryShape] },
  removed: { removed: "bool" },
  reload: { flows: ["string"], restart_needed: ["string"] },
  deadLetters: {
    dead_letters: [
      {
        id: "string",
        type: "string",
        tenant: "string",
        endpoint: "string",
        last_error: "string",
        attempts: "int",
        time: "string",
        dead_at: "string",
      },
    ],
  },
  replayed: { replayed: "bool" },
} as const satisfies Record<string, Shape>;

/** The zero value of shape, as Go's: "", 0, false, [] (Go's nil slice), {} (Go's nil map) or an object of zeros. */
function zero(shape: Shape): unknown {
  if (shape === "string") return "";
  if (shape === "int") return 0;
  if (shape === "bool") return false;
  if (Array.isArray(shape)) return shape.length === 2 ? {} : [];
  const out: Record<string, unknown> = {};
  for (const [k, s] of Object.entries(shape as Record<string, Shape>)) out[k] = zero(s);
  return out;
}

/** Go's case-insensitive key match (encoding/json's fold: ASCII case, the Kelvin sign and the long s). */
function foldKey(s: string): string {
  return s.replace(/[A-Z\u212a\u017f]/g, (c) => (c === "\u212a" ? "k" : c === "\u017f" ? "s" : c.toLowerCase()));
}

/**
 * Decodes v (parsed JSON) as Go's encoding/json decodes it into a value of
 * shape: null leaves the zero value, unknown keys are ignored, keys match
 * fields exactly or else case-insensitively (a map's keys are kept as
 * sent, the last of a repeated key winning), and a value of the wrong type
 * (a fraction or an out-of-range number for an integer) fails the whole
 * decoding. Returns undefined on failure.
 */
export function decodeAs(shape: Shape, v: unknown): unknown {
  const bad = Symbol("bad");
  const walk = (s: Shape, x: unknown): unknown => {
    if (x === null) return zero(s);
    if (s === "string") return typeof x === "string" ? x : bad;
    if (s === "bool") return typeof x === "boolean" ? x : bad;
    if (s === "int") {
      return typeof x === "number" && Number.isInteger(x) && Math.abs(x) <= 9223372036854775807 ? x : bad;
    }
    if (Array.isArray(s) && s.length === 2) {
      if (typeof x !== "object" || Array.isArray(x)) return bad;
      const item = s[1] as Shape;
      const out: Record<string, unknown> = {};
      for (const [k, val] of Object.entries(x as Record<string, unknown>)) {
        const d = walk(item, val);
        if (d === bad) return bad;
        // Defined, not assigned: a key "__proto__" from the wire is a key
        // like any other, never the object's prototype.
        Object.defineProperty(out, k, { value: d, enumerable: true, writable: true, configurable: true });
      }
      return out;
    }
    if (Array.isArray(s)) {
      if (!Array.isArray(x)) return bad;
      const item = s[0] as Shape;
      const out: unknown[] = [];
      for (const e of x) {
        const d = walk(item, e);
        if (d === bad) return bad;
        out.push(d);
      }
      return out;
    }
    if (typeof x !== "object" || Array.isArray(x)) return bad;
    const fields = s as Record<string, Shape>;
    const out = zero(s) as Record<string, unknown>;
    const folded = new Map<string, string>();
    for (const k of Object.keys(fields)) folded.set(foldKey(k), k);
    for (const [k, val] of Object.entries(x as Record<string, unknown>)) {
      const name = Object.hasOwn(fields, k) ? k : folded.get(foldKey(k));
      if (name === undefined) continue;
      const d = walk(fields[name] as Shape, val);
      if (d === bad) return bad;
      out[name] = d;
    }
    return out;
  };
  const d = walk(shape, v);
  return d === bad ? undefined : d;
}
