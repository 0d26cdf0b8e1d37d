/**
 * `@tollgate/client`: the TypeScript client of tollgate, which protects
 * logins and one-time-code sends. It behaves as the Go client
 * (`api/client`), held to the same shared test vectors: a {@link Client}
 * with fail modes and the FailOpen allowance, the end user's answer
 * ({@link Responder}), the client address behind proxies ({@link Proxies})
 * the device cookie ({@link DeviceCookie}) and the verification of the
 * events tollgate posts ({@link verifyWebhook}). No runtime dependencies;
 * Node >= 18.
 *
 * @packageDocumentation
 */

export {
  Client,
  defaultTimeoutMs,
  defaultBreachedTimeoutMs,
  defaultUserAgent,
  passwordRange,
  rangeHas,
  type ClientOptions,
  type CallOptions,
  type StepUpReport,
  type PasswordChange,
} from "./client.js";
export {
  failOpen,
  failDelay,
  failCaptcha,
  reasonFallback,
  reasonFallbackAllowance,
  fallbackDelayMs,
  maxFallbackDelayMs,
  type FailMode,
  type Verdict,
  type CallError,
} from "./failmode.js";
export {
  defaultFailOpenPerAccount,
  defaultFailOpenPerAddress,
  defaultFailOpenWindowMs,
  defaultFailOpenSubjects,
  type Stats,
} from "./allowance.js";
export { Responder, writeAnswer, type Answer, type Page, type ResponderOptions, type VerdictLike } from "./respond.js";
export { Proxies, type ProxiesOptions, type ProxyHeader, type RequestLike } from "./clientip.js";
export {
  DeviceCookie,
  defaultDeviceCookieName,
  type DeviceCookieOptions,
  type ResponseLike,
  type CookieRequestLike,
} from "./cookie.js";
export {
  TollgateError,
  UnavailableError,
  TimeoutError,
  CanceledError,
  isUnavailable,
  problemBase,
  type Op,
  type TollgateErrorFields,
} from "./errors.js";
export {
  verifyWebhook,
  WebhookVerificationError,
  webhookEventTypes,
  defaultWebhookToleranceSeconds,
  type WebhookEvent,
  type WebhookEventOf,
  type WebhookEventType,
  type UnknownWebhookEvent,
  type WebhookData,
  type WebhookErrorKind,
  type WebhookHeaders,
  type VerifyWebhookOptions,
} from "./webhook.js";
export {
  defaultSendFlow,
  stepUpFlow,
  type Action,
  type Channel,
  type Outcome,
  type CheckRequest,
  type ReportRequest,
  type SendRequest,
  type WireVerdict,
  type ExplainRequest,
  type Explanation,
  type RuleState,
  type ResetRequest,
  type ResetResult,
  type EntryRequest,
  type Entry,
  type RemoveRequest,
  type Removed,
  type ReloadResult,
  type DeadLetter,
  type ReplayRequest,
  type Replayed,
  type Challenge,
  type ChallengeKind,
  type ChallengeSolution,
  type ChallengeResult,
} from "./wire.js";
export type { HeldQuery, HeldSubject, HeldList, HeldResetRequest, HeldReset } from "./held.js";
