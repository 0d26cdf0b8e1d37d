// Hand-written checks on the generated types, compiled with the README's
// bodies (tsc --strict). Each @ts-expect-error is a negative control: if the
// generated types stopped rejecting what it shows, the directive would be
// unused and tsc would fail.
import type { components, paths } from "../generated/openapi";

type CheckRequest = components["schemas"]["CheckRequest"];
type ReportRequest = components["schemas"]["ReportRequest"];
type SendRequest = components["schemas"]["SendRequest"];
type ResetRequest = paths["/v1/admin/reset"]["post"]["requestBody"]["content"]["application/json"];

// Optional request fields are optional: a check with only flow, account and
// ip, a send with only destination, channel and ip.
export const check: CheckRequest = { flow: "login", account: "alice@example.com", ip: "203.0.113.7" };
export const send: SendRequest = { destination: "+44 7400 123456", channel: "sms", ip: "203.0.113.7" };
// null for an optional field means absent (openapi.yaml's "Strict input").
export const nulls: CheckRequest = { flow: "login", account: null, ip: null, device_token: null, captcha_solved: null };
// The route's type is the schema's.
export const viaPath: paths["/v1/check"]["post"]["requestBody"]["content"]["application/json"] = check;

// A misspelt field.
// @ts-expect-error 'acount' does not exist in type CheckRequest
export const misspelt: CheckRequest = { flow: "login", acount: "alice@example.com", ip: "203.0.113.7" };
// A field of the wrong type.
// @ts-expect-error captcha_solved is a boolean
export const wrongType: CheckRequest = { flow: "login", account: "alice@example.com", ip: "203.0.113.7", captcha_solved: "yes" };
// A required field left out.
// @ts-expect-error flow is required
export const noFlow: CheckRequest = { account: "alice@example.com", ip: "203.0.113.7" };
// @ts-expect-error outcome is required
export const noOutcome: ReportRequest = { flow: "login", account: "alice@example.com", ip: "203.0.113.7" };
// @ts-expect-error reason is required (an inline request schema)
export const noReason: ResetRequest = { flow: "login", account: "alice@example.com" };
// A value outside an enum.
// @ts-expect-error channel is one of sms, voice, whatsapp, email
export const badChannel: SendRequest = { destination: "+44 7400 123456", channel: "pigeon", ip: "203.0.113.7" };
// A route openapi.yaml does not have.
// @ts-expect-error no such path
export type NoRoute = paths["/v1/nope"];

// POST /v1/admin/reload: the clients send {} and read { flows, restart_needed }
// (the TypeScript client's ReloadResult, the Python client's, Go's
// wire.ReloadResult).
type ReloadRequest = NonNullable<paths["/v1/admin/reload"]["post"]["requestBody"]>["content"]["application/json"];
type ReloadAnswer = paths["/v1/admin/reload"]["post"]["responses"][200]["content"]["application/json"];
export const reloadBody: ReloadRequest = {};
// @ts-expect-error the reload body takes no field
export const reloadField: ReloadRequest = { force: true };
export const reloaded: ReloadAnswer = { flows: ["login", "otp_send", "otp_verify"], restart_needed: [] };
// @ts-expect-error restart_needed is always in the answer
export const reloadedPartly: ReloadAnswer = { flows: ["login"] };
